"""The plan's time and memory estimates against measured fits (issue 34, item 1).

For every method at its defaults, on Adult (the protocol: its train and validation parts,
public schema), the census sample and the panel sample (person_id, k = 3, as the app opens
them; their test sixth held out as the app does), the plan's estimate (``Plan.seconds``,
``Plan.memory``) is set against a fit of the same run in a fresh interpreter (this script
with ``--job``): wall seconds of the fit and the process's peak RSS. A plan that refuses the
run (private sampling beyond 20 bits) is recorded as refused. Target: an estimate within
1.5× of the measured time, or within 5 s for a fit under 10 s.

Writes benchmarks/results/estimates.json.

    python benchmarks/estimates.py [--methods gsd dpgan] [--tables adult census panel]

A run of some methods or tables keeps the file's other runs (at the same ε).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ADULT = REPO.parent / "shared" / "data" / "adult.csv"
TABLES = ("adult", "census", "panel")
RATIO, SLACK, SHORT = 1.5, 5.0, 10.0


def _table(name: str):
    """(rows the method sees, schema, unit) as the protocol or the app gives them."""
    import pandas as pd

    from synth.data import load_sample, read_table
    from synth.privacy.unit import PrivacyUnit
    from synth.protocol import adult_schema, protocol_split
    from synth.runs import split

    if name == "adult":
        table = read_table(ADULT)
        train, validation, _ = protocol_split(table)
        return pd.concat([train, validation], ignore_index=True), adult_schema(table), \
            PrivacyUnit()
    table, schema = load_sample(name)
    unit = PrivacyUnit("person_id", 3) if name == "panel" else PrivacyUnit()
    return split(table, schema, unit=unit)[0], schema, unit


def job(method: str, table: str, epsilon: float) -> dict:
    """One fit, planned first: what a fresh interpreter reports back as JSON."""
    from synth.errors import SynthError
    from synth.privacy.budget import default_delta
    from synth.privacy.unit import population
    from synth.runs import Run

    data, schema, unit = _table(table)
    people = population(data, unit)
    out = {"method": method, "table": table, "rows": len(data), "units": people.units}
    try:
        run = Run(method, schema, epsilon, default_delta(people.units), rows=people,
                  unit=unit)
    except SynthError as exc:  # a unit the method cannot protect, say
        return {**out, "refused": str(exc)}
    plan = run.plan
    out.update(estimate_s=plan.seconds, estimate_bytes=plan.memory,
               refused=str(plan.refusals[0]) if plan.refusals else "")
    if plan.refusals:
        return out
    started = time.perf_counter()
    run(data, schema, measure=False)
    out["measured_s"] = time.perf_counter() - started
    out["peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return out


def verdict(row: dict) -> str:
    if row.get("refused"):
        return "refused by the plan"
    est, got = row["estimate_s"], row["measured_s"]
    if est is None:
        return "no estimate"
    if got < SHORT:
        return "within 5 s" if abs(est - got) <= SLACK else "off"
    return f"within {RATIO}×" if max(est / got, got / est) <= RATIO else "off"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--methods", nargs="+")
    parser.add_argument("--tables", nargs="+", default=list(TABLES), choices=TABLES)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--out", type=Path,
                        default=REPO / "benchmarks" / "results" / "estimates.json")
    parser.add_argument("--job", nargs=2, metavar=("METHOD", "TABLE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.job:
        print(json.dumps(job(*args.job, args.epsilon)))
        return
    from synth.methods import METHODS

    methods = args.methods or sorted(METHODS)
    # the runs not asked for again are kept from the file: one method may be rerun
    earlier = json.loads(args.out.read_text()) if args.out.exists() else {}
    rows = [r for r in earlier.get("runs", []) if earlier.get("epsilon") == args.epsilon
            and not (r["table"] in args.tables and r["method"] in methods)]
    for table in args.tables:
        for method in methods:
            done = subprocess.run([sys.executable, __file__, "--job", method, table,
                                   "--epsilon", str(args.epsilon)], capture_output=True,
                                  text=True, cwd=REPO, env={**os.environ, "PYTHONPATH":
                                                            str(REPO)})
            if done.returncode:
                raise SystemExit(f"{method} on {table} failed:\n{done.stderr[-2000:]}")
            row = json.loads(done.stdout.strip().splitlines()[-1])
            row["verdict"] = verdict(row)
            rows.append(row)
            print(f"{table:7} {method:17} estimate {row.get('estimate_s')} s, measured "
                  f"{row.get('measured_s', float('nan')):.1f} s: {row['verdict']}",
                  file=sys.stderr)
    rows.sort(key=lambda r: (TABLES.index(r["table"]), r["method"]))
    tmp = args.out.with_suffix(".json.tmp")
    tmp.write_text(json.dumps({
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                    "python": platform.python_version()},
        "epsilon": args.epsilon, "target": f"within {RATIO}×, or {SLACK:g} s under "
                                           f"{SHORT:g} s", "runs": rows}, indent=2) + "\n")
    tmp.replace(args.out)


if __name__ == "__main__":
    main()
