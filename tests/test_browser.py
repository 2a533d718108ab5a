"""The app in a real headless Chromium, served by a real ``streamlit run`` on loopback.

Only what a browser alone can show is tested here: moving between pages by their links and
by a deep link, real widgets (a file input, a select box, buttons), downloads made on a
click, live progress while a run trains, a cancel, and a failure drawn without a traceback.
Everything a page computes is tested through AppTest in test_app.py.

Every wait ends on an event (an element appears or goes, the progress text changes) with a
generous limit; a long run is waited for as long as its progress keeps moving.
"""

import contextlib
import json
import os
import re
import shlex
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from benchmarks.served import command, free_port, unfold
from synth.data import load_sample, sample_paths
from synth.methods import make
from synth.privacy.budget import Budget

from .conftest import REPO, given

SAMPLE = "census demo (bundled sample)"

pytestmark = pytest.mark.browser
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
         "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]
SHOTS = Path(os.environ.get("SYNTH_SCREENSHOTS", REPO / ".screenshots"))
WAIT_MS = 300_000  # any one element to appear: five minutes, for a loaded machine
STALL = 300  # a long run is waited for until its progress has not moved for this many seconds


@contextlib.contextmanager
def app_server(env: dict | None = None):
    """(URL, process) of ``make app``'s server on a free port, once its health check answers
    (a server that died is reported at once)."""
    port = free_port()
    proc = subprocess.Popen(command(port), cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + WAIT_MS / 1000
    while True:  # the event: the health check answers
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=5) as r:
                if r.read() == b"ok":
                    break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"streamlit did not answer its health check within "
                            f"{WAIT_MS // 1000} s: {proc.stdout.read()}")
            time.sleep(0.3)
    try:
        yield url, proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:  # a slow shutdown on a loaded machine is no failure
            proc.kill()
            proc.wait()


@contextlib.contextmanager
def browsing(url: str, request=None):
    """A page of a fresh headless Chromium at ``url``; a failed test leaves a screenshot, and
    a script error in the page fails the test."""
    playwright = pytest.importorskip("playwright.sync_api")
    assert Path(CHROMIUM).exists(), "Debian's chromium is needed: the README's test command " \
                                    "installs it (apt-get install chromium)"
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        context.set_default_timeout(WAIT_MS)  # every wait_for, click and download
        context.set_default_navigation_timeout(WAIT_MS)
        pg = context.new_page()
        errors = []
        pg.on("pageerror", lambda e: errors.append(str(e)))
        pg.goto(url)
        yield pg
        report = getattr(request.node, "rep_call", None) if request else None
        if report is not None and report.failed:  # the artifact CI keeps for a failed test
            SHOTS.mkdir(parents=True, exist_ok=True)
            pg.screenshot(path=str(SHOTS / f"FAILED-{request.node.name}.png"), full_page=True)
        browser.close()
        assert not errors, errors


@pytest.fixture
def serving(tmp_path):  # a fresh server per test (some behaviour depends on the first
    # request), with a SYNTH_HOME of its own: the run store lists every run of a table
    with app_server({**os.environ, "SYNTH_HOME": str(tmp_path / "home")}) as served:
        yield served


@pytest.fixture
def server(serving):
    return serving[0]


@pytest.fixture
def page(server, request):
    with browsing(server + getattr(request, "param", "/"), request) as pg:
        yield pg


def shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / name), full_page=True)


def progress_texts(page) -> list[str]:
    """One snapshot of what the page says about a run's progress (bars come and go), less
    the elapsed seconds a sweep's bar shows: a clock ticking is not progress."""
    texts = page.get_by_test_id("stProgress").all_inner_texts()
    return [re.sub(r"\(\d+ s\)", "", t) for t in texts]


def wait_while_progressing(page, done, what: str, on_change=None) -> list[list[str]]:
    """Wait until ``done`` (a locator) is on the page, for as long as the run's progress keeps
    changing: fail only after ``STALL`` seconds in which it did not move. Returns the distinct
    progress snapshots seen; ``on_change(seen)`` is called on each new one."""
    seen: list[list[str]] = []
    moved = time.monotonic()
    while not done.count():
        texts = progress_texts(page)
        if texts and (not seen or texts != seen[-1]):
            seen.append(texts)
            moved = time.monotonic()
            if on_change is not None:
                on_change(seen)
        assert time.monotonic() - moved < STALL, (
            f"{what}: the progress has not moved for {STALL} s; last seen: {seen[-3:]}")
        page.wait_for_timeout(100)
    return seen


def test_the_tests_start_the_server_as_make_app_does():
    """The browser tests and benchmarks run ``make app``'s command, adding only where to
    listen: the same settings, from the same config file."""
    dry = subprocess.run(["make", "-n", "--no-print-directory", "app"], cwd=REPO,
                         capture_output=True, text=True, check=True)
    recipe = shlex.split(dry.stdout.splitlines()[-1])  # after any install it would need
    served = command(free_port())
    assert served[1:len(recipe)] == recipe[1:]
    assert all(a.startswith(("--server.port=", "--server.address="))
               for a in served[len(recipe):])


def inotify_watches(pid: int) -> int:
    """Files and folders a process watches through inotify (Linux's /proc)."""
    watches = 0
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            if os.readlink(fd) == "anon_inode:inotify":
                text = Path(f"/proc/{pid}/fdinfo/{fd.name}").read_text()
                watches += text.count("inotify wd:")
    return watches


def test_the_server_watches_no_files(serving, page):
    """Streamlit's default watcher placed thousands of inotify watches on this repository, the
    virtual environment's folders among them; as ``make app`` serves it, none."""
    page.get_by_text("Download working schema (JSON)").wait_for()  # a session ran the app
    assert inotify_watches(serving[1].pid) == 0


def wait_for_downloads(page, arrived: dict, count: int) -> None:
    """Wait until ``count`` downloads have arrived; fail at once if a download button says
    it failed (Streamlit shows its error under the button for five seconds)."""
    failed = page.get_by_test_id("stDownloadButtonError")
    while len(arrived) < count:
        assert not failed.count(), f"{failed.all_inner_texts()}; arrived: {sorted(arrived)}"
        page.wait_for_timeout(100)


def test_starts_on_the_sample_and_runs(page):
    page.get_by_text("census demo (bundled sample): 5,000 rows", exact=True).wait_for()
    page.get_by_text("Download working schema (JSON)").wait_for()
    shot(page, "data.png")
    page.get_by_role("link", name="Synthesize").click()  # the sidebar's navigation
    seed = page.get_by_label("Post-processing seed (optional)", exact=True)
    seed.fill("1099511627776")  # a long run name, for the Compare page's width below
    seed.press("Enter")
    page.get_by_role("button", name="Run", exact=True).click()
    page.get_by_role("button", name="Spend and run").click()  # the confirmation
    wait_while_progressing(page, page.get_by_text(
        f"Release: {SAMPLE}: Independent marginals ε=1 seed=1099511627776 #1"),
        "the first release")
    page.get_by_text("1 finished run of this table").wait_for()
    page.get_by_test_id("stMetricLabel").get_by_text("ε spent", exact=True).wait_for()
    page.get_by_role("button", name="Privacy ledger (JSON)").wait_for()
    page.locator(".js-plotly-plot:visible").first.wait_for()  # the ledger's chart
    shot(page, "synthesize.png")

    # every download once, clicked one after the other as a steward does: a click used to
    # rerun the page, the next click interrupted that rerun, and the reports' deferred files
    # were swept away ("Deferred file … not found": the first report click did nothing)
    arrived = {}
    page.on("download", lambda d: arrived.setdefault(d.suggested_filename, d))
    names = {"Synthetic table (CSV)": "synth.csv", "Privacy ledger (JSON)": "ledger.json",
             "Release report (HTML)": "release_report.html",
             "Run configuration (JSON)": "run.json",
             "Steward-only report (HTML)": "steward_only_report.html"}
    for label in names:
        page.get_by_role("button", name=label).click()
    wait_for_downloads(page, arrived, len(names))
    # named after the table, the method and the run's number: two runs never overwrite
    run = "census-demo-bundled-sample-independent-1-"
    assert set(arrived) == {run + name for name in names.values()}
    files = {name.removeprefix(run): Path(d.path()).read_text() for name, d in arrived.items()}
    schema = load_sample()[1]
    assert files["synth.csv"].splitlines()[0].split(",") == schema.names
    ledger = json.loads(files["ledger.json"])
    assert ledger["total_epsilon"] <= 1 and ledger["entries"]
    assert json.loads(files["run.json"])["command"].startswith("python -m synth run")
    report = files["release_report.html"]
    assert "Release report: Independent marginals, ε = 1" in report and "Plotly.newPlot" in report
    assert "Privacy: (1, " in report and "Uses the real data" not in report  # releasable
    report = files["steward_only_report.html"]
    assert "Steward-only report (not for release)" in report and "Uses the real data" in report
    assert "Privacy risk" in report and "ABOVE ITS BOUND" not in report  # the held-out sixth
    assert "Traceback" not in page.content()

    # the Compare summary fits a 1440 px screen: its last column is on screen, whole
    from playwright.sync_api import expect

    page.set_viewport_size({"width": 1440, "height": 1000})
    page.get_by_test_id("stSidebarNav").get_by_role("link", name="Compare").click()
    page.get_by_text("Summary", exact=True).wait_for()
    last = page.get_by_role("table").first.get_by_role("columnheader").last  # the summary
    expect(last).to_have_text("seconds")
    expect(last).to_be_in_viewport(ratio=1, timeout=WAIT_MS)
    shot(page, "compare.png")

    other_context = page.context.browser.new_context()  # a second tab is its own session
    other_context.set_default_timeout(WAIT_MS)
    other = other_context.new_page()
    other.goto(page.url)  # the table's runs are in the store: it finds the release too
    other.get_by_text("1 finished run of this table").wait_for()
    other.close()


def critic_steps(epochs: float) -> int:
    """DP-SGD steps the package plans for the rows the app gives DP-Select: the bundled
    sample less its held-out test sixth (steps do not depend on ε or δ)."""
    table, schema = load_sample()
    model = make("dpselect", {"gan__epochs": epochs})
    (gan,) = [s for s in model.preview(given(table), schema, Budget(1.0, 1e-5))
              if s.stage == "gan"]
    return gan.event.steps


def test_a_live_dp_select_run_then_a_cancelled_one(page):
    page.get_by_text("census demo (bundled sample)").first.wait_for()
    page.get_by_role("link", name="Synthesize").click()
    page.get_by_text("What this run will do", exact=False).wait_for()  # the plan, in words
    page.get_by_test_id("stMain").get_by_test_id("stSelectbox").first.click()
    page.get_by_role("option", name="DP-Select").click()
    page.get_by_text("(DP-Select, ε = 1)", exact=False).wait_for()  # the page has rerun
    unfold(page, "How the budget is spent",  # the mechanisms, folded; the selection's preview
           page.locator("code").get_by_text("ε per selection"))

    def set_epochs(value: int) -> None:
        epochs = page.get_by_label("Training epochs", exact=True)
        epochs.fill(str(value))
        epochs.press("Enter")
        page.get_by_text(f"{critic_steps(value):,} critic steps").wait_for()  # the preview

    set_epochs(10)  # long enough for the curves, redrawn every 5 s, to be seen
    page.get_by_role("button", name="Run", exact=True).click()
    page.get_by_role("button", name="Spend and run").click()  # the confirmation
    release = page.get_by_text(f"Release: {SAMPLE}: DP-Select ε=1 gan_share=0.2 #1")

    def on_change(seen: list[list[str]]) -> None:
        if len(seen) == 3:
            page.locator(".js-plotly-plot").filter(has_text="critic loss").first.wait_for()
            shot(page, "live.png")  # the live loss curves

    seen = wait_while_progressing(page, release, "the DP-Select release", on_change)
    assert len(seen) >= 3, seen  # the progress bars moved while it ran
    assert any("gan" in " ".join(t) for t in seen)
    page.get_by_test_id("stMetricLabel").get_by_text("ε spent", exact=True).wait_for()
    with page.expect_download() as download:
        page.get_by_role("button", name="Synthetic table (CSV)").click()
    lines = Path(download.value.path()).read_text().splitlines()
    table, schema = load_sample()
    assert lines[0].split(",") == schema.names  # the schema's columns, in order
    assert len(lines) - 1 == given(table)  # as many rows as the method was given
    shot(page, "release.png")

    set_epochs(1000)
    page.get_by_role("button", name="Run", exact=True).click()
    page.get_by_role("button", name="Spend and run").click()  # the confirmation
    page.get_by_role("button", name="Cancel").click()
    page.get_by_text("was cancelled: nothing was released").wait_for()
    # DP-SGD was charged before its first step: the page says what the stopped run spent
    assert page.get_by_text("before stopping it had spent ε =", exact=False).count() == 1
    page.get_by_text("Ledger of the stopped run").wait_for()
    assert page.get_by_text("1 finished run of this table").count() == 1
    assert release.count() == 1  # the first release is still shown
    shot(page, "cancelled.png")
    assert "Traceback" not in page.content()


def test_the_panel_sample_protects_each_person_through_to_the_ledger(page):
    """The unit step in a real browser: the panel sample protects each person by default,
    k is typed in (a k above everyone's row count is called out), and the run's ledger
    states the person relation while no person ID reaches the downloaded files."""
    page.get_by_text("census demo (bundled sample): 5,000 rows", exact=True).wait_for()
    page.get_by_role("button", name="Use the panel sample (person-months)").click()
    page.get_by_text("1,500 people; at most 3 rows each", exact=False).wait_for()
    k = page.get_by_label("At most k rows per person", exact=True)
    k.fill("30")
    k.press("Enter")
    page.get_by_text("No one has more than 24 rows here", exact=False).wait_for()
    k.fill("2")
    k.press("Enter")
    page.get_by_text("1,500 people; at most 2 rows each", exact=False).wait_for()
    shot(page, "unit.png")
    page.get_by_role("link", name="Synthesize").click()
    unfold(page, "How the budget is spent",  # the mechanisms, folded
           page.get_by_text("Laplace count", exact=False).first)
    page.get_by_role("button", name="Run", exact=True).click()
    page.get_by_role("button", name="Spend and run").click()
    wait_while_progressing(page, page.get_by_text("1 finished run of this table"),
                           "the person-level release")
    page.get_by_text("by whom the runs protected: one 'person_id', ε = ",  # the session's
                     exact=False).wait_for()  # account: AppTest may have charged the panel too
    arrived = {}
    page.on("download", lambda d: arrived.setdefault(d.suggested_filename, d))
    for label in ("Synthetic table (CSV)", "Privacy ledger (JSON)"):
        page.get_by_role("button", name=label).click()
    wait_for_downloads(page, arrived, 2)
    run = "panel-demo-person-months-bundled-sample-independent-1-"
    ledger = json.loads(Path(arrived[run + "ledger.json"].path()).read_text())
    assert "'person_id' (≤ 2 rows kept per unit" in ledger["relation"]
    assert ledger["entries"][0]["stage"] == "rows"
    released = Path(arrived[run + "synth.csv"].path()).read_text() + json.dumps(ledger)
    assert "person_id" not in released.splitlines()[0]
    assert not re.search(r"P\d{5}", released)  # the panel's IDs: P00001 …
    assert "Traceback" not in page.content()


def test_bad_upload_shows_a_clear_message(page):
    page.get_by_text("census demo (bundled sample)").first.wait_for()
    page.get_by_test_id("stSidebarUserContent").locator("input[type=file]").set_input_files(
        files=[{"name": "broken.csv", "mimeType": "text/csv", "buffer": b"a,b\n1\n"}])
    page.get_by_text("Reading broken.csv failed").wait_for()
    assert page.get_by_text("row 2 has 1 fields but the header has 2").count() == 1
    assert page.get_by_text("census demo (bundled sample): 5,000 rows", exact=True).count() == 1
    shot(page, "bad_upload.png")
    assert "Traceback" not in page.content()


def test_the_synthesize_page_of_a_table_without_a_codebook_fits_two_screens(page):
    """Issue 49: the page a steward first sees for a table of their own (the walk's customer
    table, refused at its defaults) reads top-down in two screens of 900 pixels: the plan in
    a few words with its ways out, the figures folded."""
    from tests.test_fixes import customers

    page.get_by_text(f"{SAMPLE}: 5,000 rows", exact=False).first.wait_for()
    page.get_by_test_id("stSidebarUserContent").locator("input[type=file]").set_input_files(
        files=[{"name": "customers.csv", "mimeType": "text/csv", "buffer": customers(2_000)}])
    page.get_by_text("customers.csv: 2,000 rows", exact=False).first.wait_for()
    page.get_by_role("link", name="Synthesize").click()
    page.get_by_text("would be refused before spending anything", exact=False).first.wait_for()
    page.get_by_role("button", name=re.compile("^Raise ε to")).wait_for()
    page.get_by_text("No runs of customers.csv yet", exact=False).wait_for()  # the page's end
    height = page.evaluate("() => document.querySelector('[data-testid=stMain]').scrollHeight")
    shot(page, "synthesize_customers.png")
    assert height <= 2 * 900, f"the Synthesize page is {height} px high"
    assert "Traceback" not in page.content()


def test_a_new_table_starts_from_its_own_choices(page):
    """The sample's choices (every domain public) must not come back for an upload with a
    column of the same name: the browser keeps a widget's value unless the widget is new."""
    page.get_by_text("Download working schema (JSON)").wait_for()
    rows = "\n".join(f"{20 + i % 50},{'abc'[i % 3]},{'yn'[i % 2]}" for i in range(600))
    page.get_by_test_id("stSidebarUserContent").locator("input[type=file]").set_input_files(
        files=[{"name": "mine.csv", "mimeType": "text/csv",
                "buffer": f"age,group,answer\n{rows}\n".encode()}])
    page.get_by_text("mine.csv: 600 rows", exact=True).wait_for()
    page.get_by_text("3 column domains are data-derived", exact=False).wait_for()
    # a rerun once the value is sent: every proposal goes
    page.get_by_text("I have checked each column", exact=False).click()
    page.get_by_text(re.compile("proposals? read from the table")).wait_for(state="detached")
    assert page.get_by_text("3 column domains are data-derived", exact=False).count() == 1
    assert "Traceback" not in page.content()


def test_an_uploaded_date_column_is_released_as_dates(page):
    """A CSV with day-first dates: proposed as a date column, declared public and confirmed
    with the real widgets, run, and the downloaded release holds ISO dates within the
    public bounds the ledger states."""
    page.get_by_text("Download working schema (JSON)").wait_for()
    rows = "\n".join(f"{1 + i % 28:02d}/{1 + i % 12:02d}/{2020 + i % 3},{'ab'[i % 2]},"
                     f"{20 + i % 40}" for i in range(600))  # 2020-01-01 to 2022-12-28
    page.get_by_test_id("stSidebarUserContent").locator("input[type=file]").set_input_files(
        files=[{"name": "signups.csv", "mimeType": "text/csv",
                "buffer": f"signup,plan,age\n{rows}\n".encode()}])
    page.get_by_text("signups.csv: 600 rows", exact=True).wait_for()
    page.get_by_text("datetime by day", exact=True).first.wait_for(state="attached")  # a grid cell
    public = page.get_by_test_id("stMultiSelect").filter(
        has_text="Columns whose domain").locator("input")
    for name in ("signup", "plan", "age"):
        public.click()
        public.fill(name)
        public.press("Enter")
    page.keyboard.press("Escape")
    page.get_by_text("dates by day in [2020-01-01, 2022-12-28]", exact=False).wait_for()
    page.get_by_text("I have checked each column", exact=False).click()
    page.get_by_text(re.compile("proposals? read from the table")).wait_for(state="detached")
    page.get_by_role("link", name="Synthesize").click()
    page.get_by_role("button", name="Run", exact=True).click()
    page.get_by_role("button", name="Spend and run").click()  # the confirmation
    wait_while_progressing(page, page.get_by_text("Release: signups.csv: Independent "
                                                  "marginals ε=1 #1"), "the release")
    arrived = {}
    page.on("download", lambda d: arrived.setdefault(d.suggested_filename, d))
    for label in ("Synthetic table (CSV)", "Privacy ledger (JSON)"):
        page.get_by_role("button", name=label).click()
    wait_for_downloads(page, arrived, 2)
    lines = Path(arrived["signups-independent-1-synth.csv"].path()).read_text().splitlines()
    assert lines[0] == "signup,plan,age" and len(lines) > 1
    released = [line.split(",")[0] for line in lines[1:]]
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\d", d) for d in released), released[:5]
    assert min(released) >= "2020-01-01" and max(released) <= "2022-12-28"
    ledger = json.loads(Path(arrived["signups-independent-1-ledger.json"].path()).read_text())
    signup = next(c for c in ledger["schema"]["columns"] if c["name"] == "signup")
    assert (signup["kind"], signup["lower"], signup["upper"], signup["input_format"]) == (
        "datetime", "2020-01-01", "2022-12-28", None)  # how the private file writes them: kept
    assert "Traceback" not in page.content()


@pytest.mark.parametrize("page", ["/synthesize"], indirect=True)
def test_a_deep_link_as_first_request_still_runs_the_app(page):
    page.get_by_role("button", name="Run").wait_for()
    page.get_by_text("Dataset", exact=True).wait_for()
    assert page.title() == "Private synthetic data workbench"
    nav = page.get_by_test_id("stSidebarNav").inner_text()
    assert "Data" in nav and "Synthesize" in nav and "app" not in nav.split()


@pytest.mark.parametrize("page", ["/tradeoffs"], indirect=True)
def test_tradeoffs_page_sweeps_and_downloads_its_report(page):
    page.get_by_role("button", name="Run the sweep").wait_for()
    methods = page.get_by_test_id("stMultiSelect").first.locator("input")
    methods.click()
    for _ in range(5):  # the preset's methods follow independent: keep it alone
        methods.press("Backspace")
    page.keyboard.press("Escape")
    seeds = page.get_by_label("Seeds")
    seeds.fill("1")
    seeds.press("Enter")
    page.get_by_role("button", name="Run the sweep").click()
    page.get_by_role("button", name="Spend and run").click()  # the confirmation
    wait_while_progressing(page, page.get_by_text("5 runs", exact=True), "the sweep")
    page.get_by_text("of 5 runs done").wait_for(state="detached")  # the live view is gone
    page.locator(".js-plotly-plot").filter(has_text="tree accuracy").first.wait_for()
    assert page.get_by_text("majority class").count() >= 1  # the baselines are drawn
    shot(page, "tradeoffs.png")
    page.get_by_role("tab", name="Runs").click()
    with page.expect_download() as download:
        page.get_by_role("button", name="Sweep report (HTML)").click()
    report = Path(download.value.path()).read_text()
    assert "Sweep report: 5 runs of Independent marginals" in report  # as Synthesize names it
    assert report.count("Plotly.newPlot") >= 4 and "Uses the real data" in report
    assert "Traceback" not in page.content()


def test_a_server_file_is_read_by_path_and_a_bad_path_keeps_the_data(tmp_path):
    """The sidebar's path input: a path outside the data root is refused in one line with
    the sample kept; a Parquet folder under it is read and synthesized from."""
    table, _ = load_sample()
    (tmp_path / "parts").mkdir()
    table.iloc[:2500].to_parquet(tmp_path / "parts" / "a.parquet", index=False)
    table.iloc[2500:].to_parquet(tmp_path / "parts" / "b.parquet", index=False)
    env = {**os.environ, "SYNTH_HOME": str(tmp_path / "home"),
           "SYNTH_DATA_ROOT": str(tmp_path)}
    with app_server(env) as (url, _), browsing(url) as page:
        sidebar = page.get_by_test_id("stSidebar")
        path = page.get_by_label("Path on this server", exact=True)
        unfold(sidebar, "A larger file on this server", path)
        path.fill("/etc/passwd")
        path.press("Enter")
        page.get_by_role("button", name="Read it").click()
        page.get_by_text("is outside", exact=False).wait_for()
        sidebar.get_by_text("census demo (bundled sample)", exact=False).first.wait_for()
        path.fill("parts")
        path.press("Enter")
        page.get_by_role("button", name="Read it").click()
        page.get_by_text("parts: 5,000 rows", exact=False).first.wait_for()
        sidebar.get_by_text(str(tmp_path / "parts"), exact=False).wait_for()
        unfold(page, "Edit a column, or load a schema file",  # the public schema
               page.get_by_label("Column to edit", exact=True))
        page.get_by_test_id("stMain").locator("input[type=file]").set_input_files(
            str(sample_paths()[1]))
        page.get_by_text(re.compile("proposals? read from the table")).wait_for(state="detached")
        page.get_by_role("link", name="Synthesize").click()
        from playwright.sync_api import expect

        run = page.get_by_role("button", name="Run", exact=True)
        expect(run).to_be_enabled(timeout=WAIT_MS)
        run.click()
        page.get_by_role("button", name="Spend and run").click()
        wait_while_progressing(page, page.get_by_text(
            "Release: parts: Independent marginals ε=1 #1"), "a release from a server file")
        assert "Traceback" not in page.content()


def test_the_account_outlives_the_server_and_choices_outlive_navigation(tmp_path):
    """A run's charge and a lifetime limit set in the sidebar are still there for a new session
    on a restarted server; within a session, a choice survives moving between pages."""
    env = {**os.environ, "SYNTH_HOME": str(tmp_path)}
    with app_server(env) as (url, _), browsing(url) as page:
        page.get_by_text("(no limit set)", exact=False).wait_for()
        limit = page.get_by_label("Most ε all runs on this table may spend", exact=True)
        unfold(page.get_by_test_id("stSidebar"), "Lifetime limit", limit)
        limit.fill("3")
        limit.press("Enter")
        page.get_by_role("button", name="Set the limit").click()
        page.get_by_text("of its limit 3 remains", exact=False).wait_for()
        page.get_by_role("link", name="Synthesize").click()
        seed = page.get_by_label("Post-processing seed (optional)", exact=True)
        seed.fill("5")
        seed.press("Enter")
        page.get_by_role("button", name="Run", exact=True).click()
        page.get_by_text("This run spends at most ε = 1", exact=False).wait_for()
        page.get_by_role("button", name="Spend and run").click()
        page.get_by_text(f"Release: {SAMPLE}: Independent marginals ε=1 seed=5 #1").wait_for()
        spent = page.get_by_text("Privacy spent on this table, all runs:", exact=False)
        page.wait_for_function("() => !document.body.innerText.includes("
                               "'ε = 3 of its limit 3 remains')")  # the run's charge is in
        after_run = spent.inner_text()
        for link in ("Data", "Compare", "Synthesize"):  # a round trip: the seed stays
            page.get_by_role("link", name=link, exact=True).click()
            page.get_by_role("heading", name=link, exact=True, level=1).wait_for()
        from playwright.sync_api import expect

        # the page's widgets come after its heading: wait for the kept value, not a blank
        expect(seed).to_have_value("5", timeout=WAIT_MS)
    with app_server(env) as (url, _), browsing(url) as page:  # a new server, a new session
        page.get_by_text("1 finished run of this table").wait_for()  # the run store's
        shown = page.get_by_text("Privacy spent on this table, all runs:", exact=False)
        shown.wait_for()
        assert shown.inner_text() == after_run
        assert re.search(r"ε = [\d.]+ of its limit 3 remains", after_run), after_run


def choose(page, method: str) -> None:
    """Pick ``method`` in the Synthesize page's first select box. A page that reruns (a run
    just ended) may close the open list before the click lands: open it again until the
    option is taken, for as long as a wait may take."""
    from playwright.sync_api import TimeoutError as Slow

    deadline = time.monotonic() + WAIT_MS / 1000
    while True:
        page.get_by_test_id("stMain").get_by_test_id("stSelectbox").first.click()
        try:
            page.get_by_role("option", name=method).click(timeout=5_000)
            return
        except Slow:
            assert time.monotonic() < deadline, f"the option {method!r} never opened"


def test_a_run_outlives_a_reload_and_runs_and_sweeps_a_server_restart(tmp_path, request):
    """Issue 34's walk: a DP-GAN run keeps training through a reload of its page, which finds
    it live and watches it finish; after a server restart every run and the sweep are there,
    and Compare draws two stored runs against the table, read anew."""
    env = {**os.environ, "SYNTH_HOME": str(tmp_path / "home")}
    with app_server(env) as (url, _), browsing(url, request) as page:
        page.get_by_text("census demo (bundled sample): 5,000 rows", exact=True).wait_for()
        page.get_by_role("link", name="Synthesize").click()
        page.get_by_role("button", name="Run", exact=True).click()
        page.get_by_role("button", name="Spend and run").click()
        wait_while_progressing(page, page.get_by_text(
            f"Release: {SAMPLE}: Independent marginals ε=1 #1"), "the first release")
        choose(page, "DP-GAN")
        epochs = page.get_by_label("Training epochs", exact=True)
        epochs.fill("30")  # long enough to be running still when the reloaded page asks
        epochs.press("Enter")
        page.get_by_role("button", name="Run", exact=True).click()
        page.get_by_role("button", name="Spend and run").click()
        running = page.get_by_role("heading", name=re.compile(
            rf"^Running: {re.escape(SAMPLE)}: DP-GAN ε=1"))
        running.wait_for()
        page.get_by_test_id("stProgress").first.wait_for()  # its progress is drawn
        page.reload()  # the session is gone; the run is the server's
        running.wait_for()
        page.get_by_role("button", name="Cancel").wait_for()  # the live view, re-attached
        wait_while_progressing(page, page.get_by_text(
            f"Release: {SAMPLE}: DP-GAN ε=1 #2"), "the DP-GAN release after the reload")
        page.get_by_text("2 finished runs of this table").wait_for()
        page.get_by_role("link", name="Trade-offs").click()
        methods = page.get_by_test_id("stMultiSelect").first.locator("input")
        methods.click()
        for _ in range(5):  # the preset's methods follow independent: keep it alone
            methods.press("Backspace")
        page.keyboard.press("Escape")
        seeds = page.get_by_label("Seeds", exact=True)
        seeds.fill("1")
        seeds.press("Enter")
        page.get_by_role("button", name="Run the sweep").click()
        page.get_by_role("button", name="Spend and run").click()
        wait_while_progressing(page, page.get_by_text("5 runs", exact=True), "the sweep")
    with app_server(env) as (url, _), browsing(url, request) as page:  # the server restarted
        page.get_by_text("2 finished runs of this table").wait_for()
        page.get_by_role("link", name="Synthesize").click()
        page.get_by_text(f"Release: {SAMPLE}: DP-GAN ε=1 #2").wait_for()
        page.get_by_text(f"Every run of {SAMPLE} (2)", exact=False).wait_for()
        page.get_by_role("link", name="Trade-offs").click()
        page.get_by_text("5 runs", exact=True).wait_for()  # the sweep, from the run store
        page.get_by_role("link", name="Compare").click()
        page.get_by_text("Summary", exact=True).wait_for()
        from playwright.sync_api import expect

        summary = page.get_by_role("table").first  # later tables list columns, not runs
        expect(summary.get_by_role("row")).to_have_count(3, timeout=WAIT_MS)  # a header, 2 runs
        for name in ("Independent marginals ε=1 #1", "DP-GAN ε=1 #2"):
            page.get_by_role("cell", name=f"{SAMPLE}: {name}").wait_for()
        page.locator(".js-plotly-plot").filter(has_text="share of rows").first.wait_for()
        shot(page, "compare-after-restart.png")
        assert "Traceback" not in page.content()



def test_declarations_outlive_a_reload_and_a_restart(tmp_path, request):
    """Issue 49's walk: a steward reads amounts as numbers, leaves a column out, declares
    domains public, confirms and runs. After a reload and after a server restart, the same
    file opened again is as they left it: the declarations, Compare's figures for the run and
    its steward-only report (which failed when the amounts were read as text again)."""
    from tests.test_decisions import shaped

    data = shaped(3_000).drop(columns=["customer"]).to_csv(index=False).encode()
    env = {**os.environ, "SYNTH_HOME": str(tmp_path / "home")}

    def open_table(page) -> None:
        """Upload the file, and open the Data page."""
        sidebar = page.get_by_test_id("stSidebar")
        sidebar.get_by_text(f"{SAMPLE}: 5,000 rows", exact=False).wait_for()
        sidebar.locator("input[type=file]").set_input_files(
            files=[{"name": "shaped.csv", "mimeType": "text/csv", "buffer": data}])
        sidebar.get_by_text("shaped.csv: 3,000 rows", exact=False).wait_for()  # it is read
        sidebar.get_by_role("link", name="Data").click()
        page.get_by_text("shaped.csv: 3,000 rows", exact=True).wait_for()

    def figures(page) -> tuple[str, str]:
        """Compare's 2-way TVD for the run, and its steward-only report's quality score
        (the report is made on a click: one that fails arrives as an error, not a file)."""
        nav = page.get_by_test_id("stSidebarNav")
        nav.get_by_role("link", name="Compare").click()
        page.get_by_role("columnheader", name="2-way TVD").wait_for()
        tvd = page.get_by_role("table").first.get_by_role("row").nth(1).get_by_role(
            "cell").nth(5).inner_text()
        nav.get_by_role("link", name="Synthesize").click()
        page.get_by_text("Release: shaped.csv: Independent marginals ε=1 #1").wait_for()
        arrived = {}
        page.on("download", lambda d: arrived.setdefault(d.suggested_filename, d))
        page.get_by_role("button", name="Steward-only report (HTML)").click()
        wait_for_downloads(page, arrived, 1)
        made = Path(arrived["shaped-independent-1-steward_only_report.html"].path()).read_text()
        return tvd, re.search(r"Quality Report\)</th><td>([0-9.]+)<", made)[1]

    def as_left(page) -> None:
        open_table(page)
        page.get_by_text("are restored", exact=False).wait_for()
        assert not page.get_by_role("button", name="Read amount as numbers").count()
        assert not page.get_by_text("I have checked each column", exact=False).count()
        left_out = page.get_by_test_id("stMultiSelect").filter(has_text="Columns to leave out")
        assert "ticket" in left_out.inner_text()
        assert figures(page) == measured
        assert "Traceback" not in page.content()

    with app_server(env) as (url, _), browsing(url, request) as page:
        open_table(page)
        page.get_by_role("button", name="Read amount as numbers").click()
        page.get_by_role("button", name="Read amount as numbers").wait_for(state="detached")
        for label, names in (("Columns to leave out", ["ticket"]),
                             ("Columns whose domain", ["amount", "delay", "month", "segment",
                                                       "joined"])):
            box = page.get_by_test_id("stMultiSelect").filter(has_text=label).locator("input")
            for name in names:
                box.click()
                box.fill(name)
                box.press("Enter")
            page.keyboard.press("Escape")
        page.get_by_text("I have checked each column", exact=False).click()
        page.get_by_text(re.compile("proposals? read from the table")).wait_for(
            state="detached")
        page.get_by_role("link", name="Synthesize").click()
        page.get_by_role("button", name="Run", exact=True).click()
        page.get_by_role("button", name="Spend and run").click()
        wait_while_progressing(page, page.get_by_text(
            "Release: shaped.csv: Independent marginals ε=1 #1"), "the release")
        measured = figures(page)
        assert re.fullmatch(r"0\.\d{3}", measured[0]), measured[0]
        assert float(measured[1]) > 0.5, measured  # the real data against the release
        page.reload()  # a new session: the uploaded file is gone, and opened again
        as_left(page)
    with app_server(env) as (url, _), browsing(url, request) as page:  # a restarted server
        as_left(page)
