"""Learned bounds on a steward's small table: how often they land far from the data.

A steward's browser walk on a 2,000-row table (an age, a balance spread both ways, a sign-up
date and a last-seen timestamp counted from public origins, a region and a plan, ε = 1, the
default domain share 0.2) saw intervals such as age [-215, 3,234,251]. This script learns
that table's domains many times through the run's own path (``learn_domains`` with the
plan's events) and counts, per column: intervals wider than 10 times the real 1st-99th
percentile range ("far"), the share of real values clipped (median and 90th percentile),
and lower bounds below 0 for a column without negative values. The plan's stated loss and
the chance that a scale misses the data are recorded next to them. No method runs: bounds
only, so a few hundred draws take seconds.

Writes benchmarks/results/small_bounds.json (atomically).

    python benchmarks/small_bounds.py [--draws 200] [--rows 2000 5000] [--epsilons 1 4]
"""

from __future__ import annotations

import argparse
import json
import platform
from datetime import date
from pathlib import Path

import numpy as np
import pandas as pd

OUT = Path(__file__).resolve().parent / "results" / "small_bounds.json"
SHARE, DELTA = 0.2, 1e-5
FAR = 10.0  # an interval this many times the real 1st-99th percentile range is "far"


def table(n: int, seed: int = 0) -> pd.DataFrame:
    """The walk's kind of table: fixed seed, so every draw learns from the same rows."""
    rng = np.random.default_rng(seed)
    signup = pd.Timestamp("2019-01-01") + pd.to_timedelta(rng.integers(0, 5 * 365, n), "D")
    seen = signup + pd.to_timedelta(rng.integers(0, 400 * 86_400, n), "s")
    return pd.DataFrame({
        "age": rng.integers(18, 90, n).astype(str),
        "balance": np.round(rng.standard_t(2, n) * 1500 + 500).astype(int).astype(str),
        "signup": signup.strftime("%Y-%m-%d"),
        "last_seen": seen.strftime("%Y-%m-%dT%H:%M:%S"),
        "region": rng.choice(["north", "south", "east", "west"], n),
        "plan": rng.choice(["basic", "plus", "pro"], n, p=[0.5, 0.3, 0.2])})


def schema_for(frame: pd.DataFrame):
    """Categories public, numbers and dates learned (dates from public origins), as the walk
    declared them; blanks allowed, as inference proposes."""
    from dataclasses import replace

    from synth.schema import infer_schema

    schema = infer_schema(frame).confirm().declare_public(["region", "plan"])
    for name, origin in (("signup", "2019-01-01"), ("last_seen", "2019-01-01T00:00:00")):
        schema = schema.replace_column(replace(schema[name], origin=origin))
    return schema


def real_values(frame: pd.DataFrame, schema) -> dict[str, np.ndarray]:
    """Each learned column's values as the mechanism counts them (units for a date)."""
    from synth.schema import prepare

    prepared = prepare(frame, schema)
    return {c.name: prepared[c.name].to_numpy(dtype=float) for c in schema.to_learn
            if c.kind != "categorical"}


def measure(n: int, epsilon: float, draws: int) -> dict:
    from synth.privacy.budget import Budget, Ledger
    from synth.privacy.domains import bounds_loss, column_events, learn_domains, scale_miss
    from synth.schema import prepare

    frame = table(n)
    schema = schema_for(frame)
    prepared = prepare(frame, schema)
    values = real_values(frame, schema)
    figures = {name: {"far": 0, "clipped": [], "below_zero": 0} for name in values}
    budget = Budget(epsilon, DELTA, {"domain": SHARE, "rest": 1 - SHARE})
    plans = column_events(schema, *budget.allowance("domain"), n)
    for _ in range(draws):
        ledger = Ledger(budget)
        learned = learn_domains(prepared, schema, ledger, n)
        for name, x in values.items():
            col = learned[name]
            lo, hi = col.lower, col.upper
            p1, p99 = np.percentile(x, [1, 99])
            got = figures[name]
            got["far"] += (hi - lo) > FAR * max(p99 - p1, 1.0)
            got["clipped"].append(float(((x < lo) | (x > hi)).mean()))
            got["below_zero"] += bool(x.min() >= 0 and lo < 0)
    return {"rows": n, "epsilon": epsilon, "draws": draws, "columns": {
        name: {"stated_loss": round(bounds_loss(plans[name].bounds, n, True), 4),
               "stated_scale_miss": round(scale_miss(plans[name].bounds[0], n, True), 4),
               "far": got["far"] / draws,
               "clipped_median": round(float(np.median(got["clipped"])), 4),
               "clipped_p90": round(float(np.quantile(got["clipped"], 0.9)), 4),
               "negative_lower_bound": got["below_zero"] / draws}
        for name, got in figures.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=200)
    parser.add_argument("--rows", nargs="+", type=int, default=[2000, 5000])
    parser.add_argument("--epsilons", nargs="+", type=float, default=[1.0, 4.0])
    args = parser.parse_args()
    cells = []
    for n in args.rows:
        for epsilon in args.epsilons:
            cells.append(measure(n, epsilon, args.draws))
            print(json.dumps(cells[-1]), flush=True)
    out = {"protocol": f"a generated table (age, a balance both ways, two dates from public "
                       f"origins learned; region and plan public), the default domain share "
                       f"{SHARE}, δ = {DELTA}; domains learned {args.draws} times per cell; "
                       f"'far': an interval wider than {FAR:g}× the real p1–p99 range; "
                       f"one generated table (seed 0), the mechanisms' noise drawn anew",
           "machine": f"{platform.machine()}, 2 cores (this project's CI class)",
           "date": date.today().isoformat(), "seeds": 1, "draws": args.draws,
           "summary": {f"{c['rows']:,} rows, ε {c['epsilon']:g}: {name}": figures
                       for c in cells for name, figures in c["columns"].items()},
           "cells": cells}
    tmp = OUT.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(out, indent=1) + "\n")
    tmp.replace(OUT)


if __name__ == "__main__":
    main()
