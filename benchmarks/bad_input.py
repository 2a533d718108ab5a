"""``schema infer`` on the two shapes of table that were quadratic (issue 16, bad input).

A 50,000-category column (100,000 rows, each category twice, beside a numeric column) and a
20,000-column header (100 rows of small integers). Each is timed as a user runs it, the whole
``python -m synth schema infer`` in a subprocess (interpreter start and imports included), 3
times; the target is ≤ 5 s each. Writes benchmarks/results/bad_input.json.

    python benchmarks/bad_input.py [--runs 3] [--timeout 600]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TARGET_S = 5.0


def many_categories(path: Path, categories: int = 50_000) -> None:
    lines = ["category,value"] + [f"c{i % categories:06d},{i % 97}"
                                  for i in range(2 * categories)]
    path.write_text("\n".join(lines) + "\n")


def many_columns(path: Path, columns: int = 20_000, rows: int = 100) -> None:
    header = ",".join(f"col{j}" for j in range(columns))
    body = [",".join(str((i + j) % 7) for j in range(columns)) for i in range(rows)]
    path.write_text("\n".join([header, *body]) + "\n")


def infer_seconds(data: Path, timeout: float) -> float | None:
    """Wall seconds of one ``schema infer`` run, or None past ``timeout``."""
    started = time.perf_counter()
    try:
        res = subprocess.run([sys.executable, "-m", "synth", "schema", "infer", str(data),
                              "--out", str(data.with_suffix(".json"))], cwd=REPO,
                             capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    if res.returncode != 0:
        raise SystemExit(f"schema infer failed on {data.name}: {res.stderr.strip()}")
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="seconds before a run counts as over (recorded as null)")
    args = parser.parse_args()
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, make in (("50000_categories", many_categories),
                           ("20000_columns", many_columns)):
            data = Path(tmp) / f"{name}.csv"
            make(data)
            times = [infer_seconds(data, args.timeout) for _ in range(args.runs)]
            done = [t for t in times if t is not None]
            results[name] = {
                "file_mb": round(os.path.getsize(data) / 2**20, 2), "runs_s": times,
                "median_s": statistics.median(done) if len(done) == len(times) else None,
                "min_s": min(done, default=None), "max_s": max(done, default=None),
                "within_target": len(done) == len(times) and max(done) <= TARGET_S}
            print(name, results[name], file=sys.stderr)
    record = {"what": "python -m synth schema infer, wall seconds, subprocess",
              "target_s": TARGET_S, "runs": args.runs,
              "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                          "load_average_after": os.getloadavg()},
              "cases": results}
    out = REPO / "benchmarks" / "results" / "bad_input.json"
    out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
