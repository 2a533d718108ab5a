"""The app in a real headless Chromium, served by a real ``streamlit run`` on loopback."""

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from .conftest import REPO

pytestmark = pytest.mark.browser
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
         "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]
SHOTS = Path(os.environ.get("SYNTH_SCREENSHOTS", REPO / ".screenshots"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def server():  # a fresh server per test: some behaviour depends on the first request
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(REPO / "app.py"),
         "--server.headless=true", f"--server.port={port}", "--server.address=127.0.0.1",
         "--browser.gatherUsageStats=false", "--server.fileWatcherType=none"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.read() == b"ok":
                    break
        except OSError:
            time.sleep(0.3)
    else:
        proc.kill()
        pytest.fail(f"streamlit did not start: {proc.stdout.read()}")
    yield url
    proc.terminate()
    proc.wait(timeout=20)


@pytest.fixture
def page(server, request):
    playwright = pytest.importorskip("playwright.sync_api")
    assert Path(CHROMIUM).exists(), "Debian's chromium is needed: the README's test command " \
                                    "installs it (apt-get install chromium)"
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        pg = browser.new_page(viewport={"width": 1400, "height": 1000})
        errors = []
        pg.on("pageerror", lambda e: errors.append(str(e)))
        pg.goto(server + getattr(request, "param", "/"))
        yield pg
        report = getattr(request.node, "rep_call", None)
        if report is not None and report.failed:  # the artifact CI keeps for a failed test
            SHOTS.mkdir(parents=True, exist_ok=True)
            pg.screenshot(path=str(SHOTS / f"FAILED-{request.node.name}.png"), full_page=True)
        browser.close()
        assert not errors, errors


def shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / name), full_page=True)


def test_starts_on_the_sample_and_runs(page):
    heading = page.get_by_text("census demo (bundled sample): 5,000 rows", exact=True)
    heading.wait_for(timeout=60_000)
    page.get_by_text("Download working schema (JSON)").wait_for(timeout=30_000)
    shot(page, "data.png")
    page.get_by_role("link", name="Synthesize").click()
    page.get_by_role("button", name="Run", exact=True).click()
    page.get_by_text("Release: Independent marginals ε=1").wait_for(timeout=60_000)
    page.get_by_text("1 finished run this session").wait_for(timeout=10_000)
    page.get_by_test_id("stMetricLabel").get_by_text("ε spent", exact=True).wait_for(
        timeout=20_000)
    page.get_by_role("button", name="Privacy ledger (JSON)").wait_for(timeout=20_000)
    page.locator(".js-plotly-plot").first.wait_for(timeout=20_000)
    shot(page, "synthesize.png")
    with page.expect_download(timeout=60_000) as download:  # made on the click
        page.get_by_role("button", name="Release report (HTML)").click()
    report = Path(download.value.path()).read_text()
    assert "Release report: independent" in report and "Plotly.newPlot" in report
    assert "Privacy: (1, " in report and "Uses the real data" not in report  # releasable
    with page.expect_download(timeout=60_000) as download:
        page.get_by_role("button", name="Steward-only report (HTML)").click()
    report = Path(download.value.path()).read_text()
    assert download.value.suggested_filename == "steward_only_report.html"
    assert "Steward-only report (not for release)" in report and "Uses the real data" in report
    assert "Traceback" not in page.content()
    other = page.context.browser.new_context().new_page()  # a second tab is its own session
    other.goto(page.url)
    other.get_by_text("0 finished runs this session").wait_for(timeout=30_000)
    other.close()


def progress_texts(page) -> list[str]:
    return page.get_by_test_id("stProgress").all_inner_texts()  # one snapshot: bars come and go


def test_a_live_dp_select_run_then_a_cancelled_one(page):
    page.get_by_text("census demo (bundled sample)").first.wait_for(timeout=30_000)
    page.get_by_role("link", name="Synthesize").click()
    page.get_by_text("Planned split").wait_for(timeout=30_000)
    page.get_by_test_id("stMain").get_by_test_id("stSelectbox").first.click()
    page.get_by_role("option", name="DP-Select").click()
    page.get_by_text("ε per selection").wait_for(timeout=30_000)  # the selection's preview

    def set_epochs(value: str) -> None:
        epochs = page.get_by_label("Training epochs", exact=True)
        epochs.fill(value)
        epochs.press("Enter")
        steps = int(value) * 33  # 4,166 rows in batches of ~128: 33 steps an epoch
        page.get_by_text(f"{steps:,} critic steps").wait_for(timeout=30_000)

    set_epochs("3")
    page.get_by_role("button", name="Run", exact=True).click()
    seen: list[list[str]] = []
    deadline = time.monotonic() + 120
    release = page.get_by_text("Release: DP-Select ε=1 gan_share=0.2 #1")
    while not release.count():
        assert time.monotonic() < deadline, f"no release; progress seen: {seen[-3:]}"
        texts = progress_texts(page)
        if texts and (not seen or texts != seen[-1]):
            seen.append(texts)
            if len(seen) == 3:
                page.locator(".js-plotly-plot").filter(has_text="critic loss").first.wait_for(
                    timeout=10_000)  # the live loss curves
                shot(page, "live.png")
        time.sleep(0.1)
    assert len(seen) >= 3, seen  # the progress bars moved while it ran
    assert any("gan" in " ".join(t) for t in seen)
    page.get_by_test_id("stMetricLabel").get_by_text("ε spent", exact=True).wait_for()
    with page.expect_download() as download:
        page.get_by_role("button", name="Synthetic table (CSV)").click()
    header = Path(download.value.path()).read_text().splitlines()[0]
    assert header.startswith("age,")
    shot(page, "release.png")

    set_epochs("1000")
    page.get_by_role("button", name="Run", exact=True).click()
    page.get_by_role("button", name="Cancel").click(timeout=60_000)
    page.get_by_text("was cancelled: nothing was released").wait_for(timeout=10_000)
    # DP-SGD was charged before its first step: the page says what the stopped run spent
    assert page.get_by_text("before stopping it had spent ε =", exact=False).count() == 1
    page.get_by_text("Ledger of the stopped run").wait_for(timeout=10_000)
    assert page.get_by_text("1 finished run this session").count() == 1
    assert release.count() == 1  # the first release is still shown
    shot(page, "cancelled.png")
    assert "Traceback" not in page.content()


def test_bad_upload_shows_a_clear_message(page):
    page.get_by_text("census demo (bundled sample)").first.wait_for(timeout=30_000)
    page.get_by_test_id("stSidebarUserContent").locator("input[type=file]").set_input_files(
        files=[{"name": "broken.csv", "mimeType": "text/csv", "buffer": b"a,b\n1\n"}])
    page.get_by_text("Reading broken.csv failed").wait_for(timeout=20_000)
    assert page.get_by_text("row 2 has 1 fields but the header has 2").count() == 1
    assert page.get_by_text("census demo (bundled sample): 5,000 rows", exact=True).count() == 1
    page.screenshot(path=str(SHOTS / "bad_upload.png"), full_page=True)
    assert "Traceback" not in page.content()


def test_an_upload_must_be_confirmed_before_it_runs(page):
    page.get_by_text("census demo (bundled sample)").first.wait_for(timeout=30_000)
    rows = "\n".join(f"{20 + i % 50},{'abc'[i % 3]},{'' if i % 7 == 0 else 30 + i % 20}"
                     for i in range(5000))
    page.get_by_test_id("stSidebarUserContent").locator("input[type=file]").set_input_files(
        files=[{"name": "mine.csv", "mimeType": "text/csv",
                "buffer": f"age,group,hours\n{rows}\n".encode()}])
    page.get_by_text("mine.csv: 5,000 rows", exact=True).wait_for(timeout=30_000)
    page.get_by_text("3 columns are proposals read from the table").wait_for(timeout=20_000)
    page.get_by_role("link", name="Synthesize").click()
    page.get_by_text("still proposals read from the table").wait_for(timeout=30_000)
    assert page.get_by_role("button", name="Run", exact=True).is_disabled()
    page.get_by_role("link", name="Review and confirm the schema").click()  # back to Data
    page.get_by_text("I have checked each column's kind").click()
    page.get_by_text("proposals read from the table").wait_for(state="detached", timeout=20_000)
    page.get_by_role("link", name="Synthesize").click()
    page.get_by_text("Share of ε for learning data-derived domains").wait_for(timeout=30_000)
    run = page.get_by_role("button", name="Run", exact=True)
    run.wait_for(timeout=20_000)
    assert run.is_enabled()
    run.click()
    page.get_by_text("Release checklist").wait_for(timeout=120_000)
    page.get_by_text("5,000 synthetic rows from 5,000 private rows").wait_for(timeout=20_000)
    page.get_by_text("For you only, not for release").wait_for(timeout=20_000)
    shot(page, "confirmed_upload.png")
    assert "Traceback" not in page.content()


@pytest.mark.parametrize("page", ["/synthesize"], indirect=True)
def test_a_deep_link_as_first_request_still_runs_the_app(page):
    page.get_by_role("button", name="Run").wait_for(timeout=30_000)
    page.get_by_text("Dataset", exact=True).wait_for(timeout=30_000)
    assert page.title() == "Private synthetic data workbench"
    nav = page.get_by_test_id("stSidebarNav").inner_text()
    assert "Data" in nav and "Synthesize" in nav and "app" not in nav.split()


@pytest.mark.parametrize("page", ["/feasibility"], indirect=True)
def test_feasibility_page_redraws_a_preset_in_the_browser(page):
    page.get_by_text("Private sampling: can its bounds be met?").wait_for(timeout=30_000)
    page.get_by_test_id("stMain").get_by_test_id("stSelectbox").first.click()
    page.get_by_role("option", name="Mushroom").click()
    page.get_by_text("5.3e72", exact=True).wait_for(timeout=20_000)  # m_lo, Table 2
    assert page.get_by_text("Not feasible", exact=False).count() >= 1
    page.get_by_text("Figure 1: k against p").wait_for()
    assert page.locator(".js-plotly-plot").count() >= 1
    page.screenshot(path=str(SHOTS / "feasibility.png"), full_page=True)
    assert "Traceback" not in page.content()


@pytest.mark.parametrize("page", ["/tradeoffs"], indirect=True)
def test_tradeoffs_page_sweeps_and_downloads_its_report(page):
    page.get_by_role("button", name="Run the sweep").wait_for(timeout=30_000)
    methods = page.get_by_test_id("stMultiSelect").first.locator("input")
    methods.click()
    for _ in range(3):  # the preset's methods end with gsd, dpselect, dpgan: keep independent
        methods.press("Backspace")
    page.keyboard.press("Escape")
    seeds = page.get_by_label("Seeds")
    seeds.fill("1")
    seeds.press("Enter")
    page.get_by_role("button", name="Run the sweep").click()
    page.get_by_text("5 runs", exact=True).wait_for(timeout=180_000)
    page.get_by_text("of 5 runs done").wait_for(state="detached", timeout=20_000)  # live view
    page.locator(".js-plotly-plot").filter(has_text="tree accuracy").first.wait_for(
        timeout=20_000)
    assert page.get_by_text("majority class").count() >= 1  # the baselines are drawn
    shot(page, "tradeoffs.png")
    page.get_by_role("tab", name="Runs").click()
    with page.expect_download(timeout=60_000) as download:
        page.get_by_role("button", name="Sweep report (HTML)").click()
    report = Path(download.value.path()).read_text()
    assert "Sweep report: 5 runs of independent" in report
    assert report.count("Plotly.newPlot") >= 4 and "Uses the real data" in report
    assert "Traceback" not in page.content()
