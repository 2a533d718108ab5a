"""HTML reports of a run and of a sweep: figures, ledger, environment, the real-data label;
and the report opened in a real headless Chromium."""

import html
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from synth.data import sample_paths
from synth.report import REAL_DATA

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def synth(*args, cwd):
    return subprocess.run([sys.executable, "-m", "synth", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, timeout=1800)  # a hang, not a slow run


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    table, schema = sample_paths()
    assert synth("run", table, "--schema", schema, "--method", "independent", "--epsilon", 1,
                 "--out", "o.csv", "--ledger", "l.json", "--quiet", cwd=out).returncode == 0
    assert synth("report", "l.json", "--synthetic", "o.csv", "--out", "plain.html",
                 cwd=out).returncode == 0
    res = synth("report", "l.json", "--synthetic", "o.csv", "--real", table, "--out",
                "full.html", cwd=out)
    assert res.returncode == 0, res.stderr
    assert synth("sweep", table, "--schema", schema, "--methods", "independent", "--epsilons",
                 "0.5", "2", "--seeds", "2", "--jobs", "1", "--out", "sweep.csv", "--quiet",
                 cwd=out).returncode == 0
    assert synth("report", "sweep.csv", "--out", "sweep.html", cwd=out).returncode == 0
    return out


def test_release_and_steward_reports_are_split_and_named(reports):
    plain = (reports / "plain.html").read_text()
    full = (reports / "full.html").read_text()
    ledger = json.loads((reports / "l.json").read_text())
    assert "Release report: Independent marginals, ε = " in plain and "Privacy ledger" in plain
    assert "(1, " in ledger["guarantee"]
    assert ledger["entries"][0]["event"]["type"] in plain and "scikit-learn" in plain
    assert "synthetic" in plain and "real (not releasable)" not in plain  # synthetic-only bars
    label = html.escape(REAL_DATA)
    assert label not in plain  # nothing from the real table without --real
    assert "Steward-only report (not for release)" in full
    assert label in full and full.count("plotly-graph-div") > plain.count("plotly-graph-div")
    assert "<script>" in plain and "<script src=" not in plain  # self-contained


def test_reports_chart_every_column_target_first(reports):
    """A report drew only the schema's first six columns, silently, and left out the
    census sample's target: every column now has a chart, listed at the top, target first."""
    schema = json.loads(Path(sample_paths()[1]).read_text())
    names = [c["name"] for c in schema["columns"]]
    first = [schema["target"], *(n for n in names if n != schema["target"])]
    for page in ((reports / name).read_text() for name in ("plain.html", "full.html")):
        contents = page[page.index(f"Columns ({len(names)}):"):]
        listed = [contents.index(f">{n}</a>") for n in first]
        assert listed == sorted(listed)  # in that order
        assert all(f"id='column-{i}'" in page for i in range(len(names)))
    full = (reports / "full.html").read_text()
    assert html.escape("quality (SDMetrics' Quality Report)") in full


def test_sweep_report_charts_every_metric_and_lists_the_runs(reports):
    page = (reports / "sweep.html").read_text()
    rows = pd.read_csv(reports / "sweep.csv")
    assert page.count("plotly-graph-div") >= 4 and len(rows) == 4
    assert "2-way TVD against" in page and page.count("<tr>") >= len(rows) + 1
    assert "against the real one" in page and "stand-in" not in page


def test_a_rehearsals_report_says_it_measures_the_stand_in(reports):
    from synth.report import sweep_report

    page = sweep_report(pd.read_csv(reports / "sweep.csv"), rehearsal=True)
    assert "scored against the stand-in" in page and "against the real one" not in page
    assert "stand-in test" in page and "real test" not in page


def test_report_needs_the_synthetic_table_to_compare(tmp_path, reports):
    res = synth("report", reports / "l.json", "--real", "x.csv", "--out", "r.html",
                cwd=tmp_path)
    assert res.returncode == 2 and "--real needs --synthetic" in res.stderr


@pytest.mark.browser
def test_report_opens_in_the_browser(reports):
    playwright = pytest.importorskip("playwright.sync_api")
    assert Path(CHROMIUM).exists()
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM,
                                    args=["--headless=new", "--no-sandbox", "--disable-gpu"])
        page = browser.new_page()
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto((reports / "full.html").as_uri())
        page.locator(".js-plotly-plot").first.wait_for(timeout=300_000)  # generous: a loaded CI
        assert page.locator(".js-plotly-plot").count() >= 3
        assert page.get_by_text("Real against synthetic").count() == 1
        browser.close()
    assert not errors, errors


def test_the_release_report_reads_its_ledger_as_a_table_in_plotlys_colours(monkeypatch):
    """Issue 49: the ledger is a table of what each entry measured and cost (the file's JSON
    folded beneath it), and the charts keep Plotly's colours when the report is made inside
    Streamlit, whose default template a page outside it lacks (the ledger bar came out
    black)."""
    import plotly.io as pio

    from synth.data import load_sample
    from synth.runs import run

    table, schema = load_sample()
    record = run(table, schema, "mst", 1.0, 1e-6, measure=False)
    monkeypatch.setattr(pio.templates, "default", "none")  # no colourway, as outside its app
    page = record.release.report()
    for entry in record.ledger["entries"]:
        assert f"<td>{html.escape(entry['description'])}</td>" in page
    assert "<details><summary>The ledger file as written (JSON)</summary>" in page
    assert '"colorway":["#636efa"' in page  # every chart in Plotly's own colours
