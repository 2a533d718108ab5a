"""The app's responsiveness in a real headless Chromium against a real ``streamlit run``.

Measures, per repeat (median reported): seconds from the server answering its health check to
the Data page being ready for input in an already open browser; seconds from pressing Run on a
tiny DP-Select (the bundled sample, 3 epochs) to its release on screen; and how often the live
progress text changed while the GAN trained (updates per second, read every 50 ms). Writes
benchmarks/results/app.json.

    python benchmarks/app.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

from served import FLAGS, served

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "results"
TARGETS = {"ready_seconds": 5, "demo_run_seconds": 30, "updates_per_second": 2}


def one_repeat(playwright) -> dict:
    browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=FLAGS)
    try:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})  # before the clock
        with served() as (url, _):
            up = time.perf_counter()
            page.goto(url)
            page.get_by_text("Download working schema (JSON)").wait_for(timeout=60_000)
            ready = time.perf_counter() - up

            page.get_by_role("link", name="Synthesize").click()
            page.get_by_text("Planned split").wait_for(timeout=60_000)
            page.get_by_test_id("stSelectbox").first.click()
            page.get_by_role("option", name="DP-Select").click()
            page.get_by_text("ε per pick").wait_for(timeout=60_000)
            epochs = page.get_by_label("Training epochs", exact=True)
            epochs.fill("3")
            epochs.press("Enter")
            page.get_by_text("99 critic steps").wait_for(timeout=60_000)
            started = time.perf_counter()
            page.get_by_role("button", name="Run", exact=True).click()
            release = page.get_by_text("Release: DP-Select")
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    runs = []
    with sync_playwright() as p:
        for i in range(args.repeats):
            runs.append(one_repeat(p))
            print(f"[{i + 1}/{args.repeats}] " + ", ".join(
                f"{k} {v:.2f}" for k, v in runs[-1].items()), flush=True)
    medians = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    out = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
           "targets": TARGETS, "medians": medians, "runs": runs}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "app.json").write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(medians, indent=2))


if __name__ == "__main__":
    main()
