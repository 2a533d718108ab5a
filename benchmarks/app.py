"""The app's responsiveness in a real headless Chromium against a real ``streamlit run``.

Measures, per repeat (median reported): seconds from the server answering its health check to
the Data page being ready for input in an already open browser; seconds from pressing Run on a
tiny DP-Select (the bundled sample, 3 epochs) to its release on screen; and how often the live
progress text changed while the GAN trained (updates per second, read every 50 ms).

Then what the live view costs: the same DP-GAN run (the sample, ``--epochs``) watched on the
Synthesize page and made while the Data page is open, alternately, each repeat; their run
seconds (the release's own figure) and their ratio, the target being at most 10 % slower when
watched. With the Data page open it also times the run's end being announced there (a toast):
seconds from pressing Spend to the toast, less the run's own seconds, an upper bound that
includes starting the run. Writes benchmarks/results/app.json.

    python benchmarks/app.py [--repeats 3] [--epochs 10]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import time
from pathlib import Path

from served import FLAGS, served

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "results"
TARGETS = {"ready_seconds": 5, "demo_run_seconds": 30, "updates_per_second": 0.9,
           "watched_over_unwatched": 1.1, "announced_within_seconds": 2}


def critic_steps(method: str, epochs: float) -> int:
    """DP-SGD steps the package plans for the rows the app gives a method on the sample (its
    preview shows them once the new epochs are in)."""
    from synth.data import load_sample
    from synth.methods import make
    from synth.privacy.budget import Budget
    from synth.runs import synthesized_rows

    table, schema = load_sample()
    from synth.methods import METHODS

    (gan,) = [s for s in make(method, {METHODS[method].own_name("epochs"): epochs}).preview(
        synthesized_rows(len(table), schema), schema, Budget(1.0, 1e-5)) if s.stage == "gan"]
    return gan.event.steps


def one_repeat(playwright) -> dict:
    browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=FLAGS)
    try:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})  # before the clock
        with served() as (url, _):
            up = time.perf_counter()
            page.goto(url)
            page.get_by_text("Download working schema (JSON)").wait_for(timeout=60_000)
            ready = time.perf_counter() - up

            page.get_by_role("link", name="Synthesize", exact=True).click()
            page.get_by_text("Planned split").wait_for(timeout=60_000)
            page.get_by_test_id("stMain").get_by_test_id("stSelectbox").first.click()
            page.get_by_role("option", name="DP-Select").click()
            page.get_by_text("ε per selection").wait_for(timeout=60_000)
            epochs = page.get_by_label("Training epochs", exact=True)
            epochs.fill("3")
            epochs.press("Enter")
            page.get_by_text(f"{critic_steps('dpselect', 3):,} critic steps").wait_for(
                timeout=60_000)
            started = time.perf_counter()
            page.get_by_role("button", name="Run", exact=True).click()
            page.get_by_role("button", name="Spend and run").click()  # the confirmation
            release = page.get_by_text("Release: census demo (bundled sample): DP-Select")
            changes, last, gan_first, gan_last = 0, None, None, None
            while not release.count():
                texts = page.get_by_test_id("stProgress").all_inner_texts()
                gan = next((t for t in texts if t.startswith("gan")), None)
                if gan is not None and gan != last:
                    now = time.perf_counter()
                    gan_first = gan_first or now
                    gan_last, changes, last = now, changes + 1, gan
                time.sleep(0.05)
            run = time.perf_counter() - started
            span = (gan_last or 0) - (gan_first or 0)
            return {"ready_seconds": ready, "demo_run_seconds": run,
                    "gan_updates": changes, "gan_seconds_watched": span,
                    "updates_per_second": (changes - 1) / span if span > 0 else float("nan")}
    finally:
        browser.close()


def run_seconds(page) -> float:
    """The newest release's own 'seconds' figure on the Synthesize page."""
    label = page.get_by_test_id("stMetricLabel").get_by_text("seconds", exact=True)
    metric = page.get_by_test_id("stMetric").filter(has=label)
    return float(metric.get_by_test_id("stMetricValue").inner_text())


def live_view_cost(playwright, repeats: int, epochs: int) -> list[dict]:
    """DP-GAN watched and unwatched, alternately, in one server and one tab."""
    browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=FLAGS)
    measured = []
    try:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(600_000)
        with served() as (url, _):
            page.goto(url)
            page.get_by_role("link", name="Synthesize", exact=True).click()
            page.get_by_test_id("stMain").get_by_test_id("stSelectbox").first.click()
            page.get_by_role("option", name="DP-GAN").click()
            field = page.get_by_label("Training epochs", exact=True)
            field.fill(str(epochs))
            field.press("Enter")
            page.get_by_text(f"{critic_steps('dpgan', epochs):,} critic steps").wait_for()
            order = [True] + [w for k in range(repeats)  # a first run warms up: not kept
                              for w in ((False, True) if k % 2 else (True, False))]
            for i, watched in enumerate(order):
                page.get_by_role("button", name="Run", exact=True).click()
                page.get_by_role("button", name="Spend and run").click()
                pressed = time.perf_counter()
                release = page.get_by_role("heading", name=re.compile(f"^Release: .* #{i + 1}$"))
                announced = None
                if not watched:
                    page.get_by_role("link", name="Data", exact=True).click()
                    page.get_by_test_id("stToast").filter(has_text=f"#{i + 1}").wait_for()
                    announced = time.perf_counter() - pressed
                    page.get_by_role("link", name="Synthesize", exact=True).click()
                release.wait_for()
                seconds = run_seconds(page)
                row = {"watched": watched, "run_seconds": seconds}
                if announced is not None:
                    row["announced_after_end_seconds"] = announced - seconds
                if i:
                    measured.append(row)
                print(row, flush=True)
    finally:
        browser.close()
    return measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=10)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    runs = []
    with sync_playwright() as p:
        for i in range(args.repeats):
            runs.append(one_repeat(p))
            print(f"[{i + 1}/{args.repeats}] " + ", ".join(
                f"{k} {v:.2f}" for k, v in runs[-1].items()), flush=True)
        live = live_view_cost(p, args.repeats, args.epochs)
    medians = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    watched = statistics.median(r["run_seconds"] for r in live if r["watched"])
    unwatched = statistics.median(r["run_seconds"] for r in live if not r["watched"])
    medians.update(watched_run_seconds=watched, unwatched_run_seconds=unwatched,
                   watched_over_unwatched=watched / unwatched,
                   announced_within_seconds=statistics.median(
                       r["announced_after_end_seconds"] for r in live if not r["watched"]))
    out = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
           "targets": TARGETS, "epochs": args.epochs, "medians": medians, "runs": runs,
           "live_view": live}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "app.json").write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(medians, indent=2))


if __name__ == "__main__":
    main()
