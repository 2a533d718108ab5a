"""Seconds to make a run's HTML reports for a Bank-sized table (UCI Bank: 45,211 rows, 17
columns), as the Synthesize page does when a report's download button is pressed.

The table is Adult (../shared/data/adult.csv) resampled to 45,211 rows, plus a numeric and a
categorical column to reach 17; the run is ``independent`` at ε = 1 with the income target
held out. Median of the repeats; writes benchmarks/results/report.json.

    python benchmarks/report.py [--adult ../shared/data/adult.csv] [--repeats 3]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "results"
TARGETS = {"release_seconds": 5, "steward_seconds": 5}
MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")


def bank_sized(adult: Path):
    """Adult resampled to Bank's 45,211 rows, with a balance and a month column (17 in all)."""
    from synth.data import read_table

    rng = np.random.default_rng(0)
    table = read_table(adult).sample(45_211, replace=True, random_state=0)
    table = table.reset_index(drop=True)
    table["balance"] = rng.integers(-2_000, 20_000, len(table))
    table["month"] = rng.choice(MONTHS, len(table))
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--adult", type=Path, default=REPO.parent / "shared/data/adult.csv")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    os.environ.setdefault("SYNTH_HOME", tempfile.mkdtemp(prefix="synth-bench-"))
    from synth import runs
    from synth.report import release_report, steward_report
    from synth.schema import infer_schema

    table = bank_sized(args.adult)
    schema = dataclasses.replace(infer_schema(table).confirm(), target="income")
    private, test = runs.split(table, schema)
    record = runs.run(private, schema, "independent", 1.0, test=test)
    makers = {"release_seconds": lambda: release_report(record.release.ledger, record.synthetic),
              "steward_seconds": lambda: steward_report(record.release.ledger, record.synthetic,
                                                        private, schema)}
    repeats = []
    for i in range(args.repeats):
        times = {}
        for name, make in makers.items():
            started = time.perf_counter()
            make()
            times[name] = time.perf_counter() - started
        repeats.append(times)
        print(f"[{i + 1}/{args.repeats}] " + ", ".join(f"{k} {v:.2f}" for k, v in times.items()),
              flush=True)
    medians = {k: statistics.median(r[k] for r in repeats) for k in makers}
    out = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
           "table": {"rows": len(table), "columns": table.shape[1]},
           "targets": TARGETS, "medians": medians, "runs": repeats}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "report.json").write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(medians, indent=2))


if __name__ == "__main__":
    main()
