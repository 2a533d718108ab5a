"""The Trade-offs page's "Accuracy vs ε for all methods" preset on Adult, run as a data steward
would: a real ``streamlit run`` and a headless Chromium that uploads adult.csv, loads Adult's
public schema (DESIGN.md's bounds and categories, target income), and runs the preset at demo
settings with 3 seeds.

Measures:

* wall seconds from pressing Run to all runs on screen (target ≤ 20 minutes on 2 cores);
* CPU utilisation, sampled each second: the whole machine per core, and the app's own
  processes (the server and its joblib workers) in cores busy;
* the page's responsiveness during the sweep: seconds from choosing another preset to the page
  showing it, every 20 s, and how often the live progress text changed (its clock ticks);
* the figures: per method and ε the mean and SD over seeds of the page's table (downloaded
  with its CSV button), next to the method benchmarks' runs (benchmarks/results/dpselect.json
  for independent, DP-GAN, DP-Select at full settings; gsd.json for Private-GSD).

Writes benchmarks/results/sweep.json and sweep.csv (the page's table).

    python benchmarks/sweep.py [--seeds 3]
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import os
import platform
import signal
import statistics
import tempfile
import threading
import time
from pathlib import Path

import pandas as pd
import psutil
from served import FLAGS, served, unfold

REPO = Path(__file__).resolve().parent.parent
ADULT = REPO.parent / "shared" / "data" / "adult.csv"
RESULTS = REPO / "benchmarks" / "results"
TARGETS = {"sweep_seconds": 1200, "preset_switch_seconds": 2.0}
METRICS = ("accuracy", "logistic_accuracy", "tvd1", "tvd2")


class CpuSampler(threading.Thread):
    """Per-core utilisation of the machine and cores busy in a process tree, once a second."""

    def __init__(self, root: int):
        super().__init__(daemon=True)
        self.root, self.samples, self.done = psutil.Process(root), [], threading.Event()
        self.seen: dict[int, float] = {}

    def _tree_seconds(self) -> float:
        total = 0.0
        for proc in [self.root, *self.root.children(recursive=True)]:
            try:
                times = proc.cpu_times()
            except psutil.Error:
                continue
            now = times.user + times.system
            total += now - self.seen.get(proc.pid, 0.0)  # a new worker: all its time
            self.seen[proc.pid] = now
        return total

    def run(self) -> None:
        psutil.cpu_percent(percpu=True)
        self._tree_seconds()
        last = time.perf_counter()
        while not self.done.wait(1.0):
            now = time.perf_counter()
            self.samples.append({"cores": psutil.cpu_percent(percpu=True),
                                 "app_cores": self._tree_seconds() / (now - last)})
            last = now

    def summary(self) -> dict:
        machine = [statistics.fmean(s["cores"]) for s in self.samples]
        app = [s["app_cores"] for s in self.samples]
        return {"samples": len(self.samples),
                "machine_percent_mean": statistics.fmean(machine),
                "machine_percent_median": statistics.median(machine),
                "per_core_percent_mean": [statistics.fmean(s["cores"][i] for s in self.samples)
                                          for i in range(len(self.samples[0]["cores"]))],
                "app_cores_busy_mean": statistics.fmean(app),
                "app_cores_busy_median": statistics.median(app),
                "share_of_seconds_both_cores_over_90": statistics.fmean(
                    min(s["cores"]) > 90 for s in self.samples)}


def adult_schema_file() -> Path:
    from dataclasses import replace

    from synth.data import read_table
    from synth.protocol import adult_schema

    schema = replace(adult_schema(read_table(ADULT)), target="income")
    path = Path(tempfile.mkdtemp()) / "adult.schema.json"
    path.write_text(json.dumps(schema.to_dict()))
    return path


def choose_preset(page, title: str) -> None:
    page.get_by_test_id("stMain").get_by_test_id("stSelectbox").first.click()
    page.get_by_role("option", name=title).click()


def run_in_browser(playwright, seeds: int) -> dict:
    browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=FLAGS)
    try:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        log_path = Path(tempfile.mkdtemp()) / "server.log"
        print(f"server log: {log_path}", flush=True)
        with log_path.open("w") as log, served(log) as (url, server):
            page.goto(url)
            page.get_by_text("Download working schema (JSON)").wait_for(timeout=60_000)
            page.get_by_test_id("stSidebarUserContent").locator("input[type=file]").set_input_files(
                str(ADULT))
            page.get_by_text("32,561 rows").first.wait_for(timeout=60_000)
            print("adult.csv uploaded", flush=True)
            unfold(page, "Edit a column, or load a schema file",
                   page.get_by_label("Column to edit", exact=True))
            page.get_by_test_id("stMain").locator("input[type=file]").set_input_files(
                str(adult_schema_file()))
            page.get_by_text("Target column for utility checks").wait_for(timeout=60_000)
            time.sleep(2)  # the schema file's rerun
            page.get_by_role("link", name="Trade-offs").click()
            page.get_by_role("button", name="Run the sweep").wait_for(timeout=60_000)
            seeds_box = page.get_by_label("Seeds")
            seeds_box.fill(str(seeds))
            seeds_box.press("Enter")
            time.sleep(1)

            print("starting the sweep", flush=True)
            sampler = CpuSampler(server)
            sampler.start()
            started = time.perf_counter()
            page.get_by_role("button", name="Run the sweep").click()
            page.get_by_role("button", name="Spend and run").click()  # the confirmation
            progress = page.get_by_test_id("stProgress")
            progress.first.wait_for(timeout=60_000)
            total = progress.first.inner_text().split(" of ")[1].split()[0]
            finished = page.get_by_text(f"{total} runs", exact=True)  # the results' heading
            switches, ticks, last, probe_at = [], 0, None, time.perf_counter() + 20
            others = ["Sections (DP-Select)", "Accuracy vs ε for all methods"]
            while not finished.count():
                texts = progress.all_inner_texts()  # empty for a moment while the page reruns
                if texts and texts[0] != last:
                    ticks, last = ticks + 1, texts[0]
                if time.perf_counter() >= probe_at:  # a user changing the grid mid-sweep
                    title = others[len(switches) % 2]
                    t0 = time.perf_counter()
                    choose_preset(page, title)
                    if title.startswith("Sections"):
                        page.get_by_text("Sweeping sections over").wait_for(timeout=60_000)
                    else:
                        page.get_by_text("Sweeping sections over").wait_for(state="detached",
                                                                            timeout=60_000)
                    switches.append(time.perf_counter() - t0)
                    print(f"{last}; preset switch {switches[-1]:.2f} s", flush=True)
                    probe_at = time.perf_counter() + 20
                time.sleep(0.05)
            seconds = time.perf_counter() - started
            print(f"done: {total} runs in {seconds:.0f} s", flush=True)
            sampler.done.set()
            sampler.join()
            if len(switches) % 2:  # back to the preset that was run
                choose_preset(page, others[1])
                time.sleep(2)
            page.get_by_role("tab", name="Runs").click()
            with page.expect_download() as csv_download:
                page.get_by_role("button", name="Sweep table (CSV)").click()
            table = pd.read_csv(csv_download.value.path())
            with page.expect_download(timeout=120_000) as html_download:
                page.get_by_role("button", name="Sweep report (HTML)").click()
            report = Path(html_download.value.path()).read_text()
            assert "Traceback" not in page.content()
            return {"sweep_seconds": seconds, "runs": len(table), "cpu": sampler.summary(),
                    "preset_switch_seconds": switches,
                    "progress_updates_per_second": ticks / seconds,
                    "report_bytes": len(report.encode()),
                    "report_has_figures": report.count("Plotly.newPlot") >= 4,
                    "table": table}
    finally:
        browser.close()


def benchmark_runs() -> pd.DataFrame:
    """The method issues' own runs (full settings, protocol train split)."""
    rows = [{"method": r["method"], "epsilon": float(r["epsilon"]),
             **{m: r[m] for m in METRICS}}
            for r in json.loads((RESULTS / "dpselect.json").read_text())["runs"]]
    rows += [{"method": "gsd", "epsilon": float(r["epsilon"]), **{m: r[m] for m in METRICS}}
             for r in json.loads((RESULTS / "gsd.json").read_text())["runs"]
             if r["tag"] == "default"]
    return pd.DataFrame(rows)


def compare(table: pd.DataFrame) -> list[dict]:
    """Per method, ε and metric: the sweep's mean ± SD over seeds, the benchmark's, and
    whether they agree within seed noise (|difference| ≤ 2 × the larger SD, with the SD of a
    one-seed benchmark taken as the sweep's)."""
    bench = benchmark_runs()
    out = []
    for (method, eps), mine in table.groupby(["method", "epsilon"]):
        theirs = bench[(bench["method"] == method) & (bench["epsilon"] == eps)]
        for metric in METRICS:
            a = mine[metric].dropna()
            b = theirs[metric].dropna() if len(theirs) else pd.Series(dtype=float)
            row = {"method": method, "epsilon": eps, "metric": metric,
                   "sweep_mean": a.mean(), "sweep_sd": a.std(ddof=1) if len(a) > 1 else 0.0,
                   "sweep_n": len(a)}
            if len(b):
                sd = max(row["sweep_sd"], b.std(ddof=1) if len(b) > 1 else 0.0)
                row.update(benchmark_mean=b.mean(), benchmark_n=len(b),
                           difference=a.mean() - b.mean(),
                           within_seed_noise=bool(abs(a.mean() - b.mean()) <= 2 * sd))
            out.append(row)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    faulthandler.register(signal.SIGUSR1)  # kill -USR1 PID: where is it stuck?
    from playwright.sync_api import sync_playwright

    from synth.sweep import DEMO, PRESETS

    with sync_playwright() as p:
        measured = run_in_browser(p, args.seeds)
    table = measured.pop("table")
    RESULTS.mkdir(parents=True, exist_ok=True)
    table.to_csv(RESULTS / "sweep.csv", index=False)
    seconds = table.groupby("method")["seconds"].agg(["median", "sum"]).to_dict("index")
    comparison = compare(table)
    agree = [c for c in comparison if "within_seed_noise" in c]
    out = {"preset": PRESETS["accuracy-vs-epsilon"].title, "demo_settings": DEMO,
           "seeds": args.seeds, "split": "DESIGN protocol: train 4/6 synthesized, test 1/6",
           "targets": TARGETS,
           "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                       "python": platform.python_version()},
           **measured,
           "preset_switch_median": statistics.median(measured["preset_switch_seconds"]),
           "run_seconds_by_method": seconds,
           "agreement": {"within_seed_noise": sum(c["within_seed_noise"] for c in agree),
                         "compared": len(agree)},
           "comparison": comparison}
    (RESULTS / "sweep.json").write_text(json.dumps(out, indent=2, default=float) + "\n")
    print(json.dumps({k: v for k, v in out.items() if k != "comparison"}, indent=2,
                     default=float))


if __name__ == "__main__":
    main()
