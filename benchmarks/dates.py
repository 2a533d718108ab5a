"""Dates as a column kind: a date read as a date against the same date read as a category.

A generated customer table (5,000 rows): a sign-up date over five years (2019-2023, more
sign-ups each year and in spring), a plan that depends on when a customer signed up, an age,
a region and a monthly spend that depends on the plan. Each method fits it at ε = 1 three
ways: the date as a ``datetime`` column (day granularity, public range), the date as a
categorical column (every day of the five years declared public: how a date was read before
the kind existed), and without the date. Per run: the date's 1-way TVD by month (released
dates grouped by month against the real ones) and the other columns' 2-way TVD. Beside them,
what a perfect model of the table would release: its own rows resampled with replacement, with
no privacy at all, scored the same way (5,000 rows over 60 months differ by sampling alone).
Medians with min-max over seeds go to benchmarks/results/dates.json (written atomically).

    python benchmarks/dates.py [--seeds 3] [--methods independent gsd dpselect]

A rerun of some methods keeps the others' runs.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from datetime import date
from pathlib import Path

import numpy as np
import pandas as pd

OUT = Path(__file__).resolve().parent / "results" / "dates.json"
FIRST, LAST = "2019-01-01", "2023-12-31"
READINGS = ("datetime", "categorical", "without")
RESAMPLED = "the table resampled, no privacy"


def table(n: int = 5000, seed: int = 0) -> pd.DataFrame:
    """The customer table; a fixed seed, so every run fits the same rows."""
    rng = np.random.default_rng(seed)
    days = pd.date_range(FIRST, LAST, freq="D")
    weight = (1 + 0.4 * np.arange(len(days)) / len(days)) * (
        1 + 0.5 * np.isin(days.month, [3, 4, 5]))
    when = days[rng.choice(len(days), n, p=weight / weight.sum())]
    recent = np.asarray(when.year >= 2022)
    plan = np.where(recent, rng.choice(["basic", "plus", "pro"], n, p=[0.3, 0.3, 0.4]),
                    rng.choice(["basic", "plus", "pro"], n, p=[0.6, 0.3, 0.1]))
    spend = np.round(np.select([plan == "basic", plan == "plus"], [10, 25], 60)
                     * rng.lognormal(0, 0.3, n), 2)
    return pd.DataFrame({"signup_date": when.strftime("%Y-%m-%d"), "plan": plan,
                         "age": rng.integers(18, 80, n),
                         "region": rng.choice(["north", "south", "east", "west"], n),
                         "spend": np.clip(spend, 0, 500)})


def schema(reading: str):
    from synth.schema import Schema

    columns = [
        {"name": "plan", "kind": "categorical", "categories": ["basic", "plus", "pro"],
         "public": True},
        {"name": "age", "kind": "numeric", "lower": 18, "upper": 80, "integer": True,
         "public": True},
        {"name": "region", "kind": "categorical",
         "categories": ["north", "south", "east", "west"], "public": True},
        {"name": "spend", "kind": "numeric", "lower": 0, "upper": 500, "public": True}]
    if reading == "datetime":
        columns.insert(0, {"name": "signup_date", "kind": "datetime", "lower": FIRST,
                           "upper": LAST, "granularity": "day", "public": True})
    elif reading == "categorical":
        days = pd.date_range(FIRST, LAST, freq="D").strftime("%Y-%m-%d")
        columns.insert(0, {"name": "signup_date", "kind": "categorical",
                           "categories": list(days), "public": True})
    return Schema.from_dict({"target": "plan", "columns": columns})


def by_month(values: pd.Series) -> pd.Series:
    months = pd.to_datetime(values, format="%Y-%m-%d").dt.to_period("M")
    span = pd.period_range(FIRST, LAST, freq="M")
    return months.value_counts(normalize=True).reindex(span, fill_value=0.0)


def scored(real: pd.DataFrame, released: pd.DataFrame, reading: str) -> dict:
    """A release against the table: the other columns' 2-way TVD and, where the date was
    kept, its TVD by month."""
    from synth.evaluation import marginal_tvd

    rest = schema("without")
    out = {"others_tvd2": round(marginal_tvd(real[rest.names], released[rest.names],
                                             rest).tvd2, 4)}
    if reading != "without":
        gap = by_month(real["signup_date"]) - by_month(released["signup_date"])
        out["month_tvd"] = round(0.5 * float(gap.abs().sum()), 4)
    return out


def one(method: str, reading: str, seed: int, frame: pd.DataFrame) -> dict:
    from synth.methods import FitContext, make
    from synth.privacy.budget import Budget

    s = schema(reading)
    real = frame[s.names]
    started = time.perf_counter()
    model = make(method).fit(real, s, Budget(1.0, 1e-5), FitContext(postprocessing_seed=seed))
    seconds = time.perf_counter() - started
    synthetic = model.sample()
    out = {"method": method, "reading": reading, "seed": seed, "seconds": round(seconds, 1),
           **scored(real, synthetic, reading),
           "epsilon_spent": round(model.ledger_.total_epsilon, 6)}
    if reading != "without":
        out["outside_range"] = int((~synthetic["signup_date"].between(FIRST, LAST)).sum())
    return out


def resampled(seed: int, frame: pd.DataFrame) -> dict:
    """The table's own rows drawn again, scored as a release: what drawing n rows costs a
    model that knew the table exactly."""
    draw = frame.sample(len(frame), replace=True, random_state=seed)
    return {"method": RESAMPLED, "reading": "datetime", "seed": seed,
            **scored(frame, draw, "datetime")}


def summarise(runs: list[dict]) -> dict:
    cells = {}
    for key in sorted({(r["method"], r["reading"]) for r in runs}):
        mine = [r for r in runs if (r["method"], r["reading"]) == key]
        cell = {m: {"median": statistics.median(r[m] for r in mine),
                    "min": min(r[m] for r in mine), "max": max(r[m] for r in mine)}
                for m in ("month_tvd", "others_tvd2", "seconds") if m in mine[0]}
        cell["seeds"] = len(mine)
        cells[f"{key[0]} / date as {key[1]}" if key[1] != "without" else
              f"{key[0]} / without the date"] = cell
    return cells


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--methods", nargs="+", default=["independent", "gsd", "dpselect"])
    args = parser.parse_args()
    frame = table()
    results = {"protocol": "a generated 5,000-row customer table (benchmarks/dates.py), "
                           "ε = 1, δ = 1e-5, method defaults, fitted on every row",
               "machine": f"{platform.machine()}, 2 cores (this project's CI class)",
               "date": date.today().isoformat(), "seeds": args.seeds, "runs": [
                   r for r in (json.loads(OUT.read_text())["runs"] if OUT.exists() else [])
                   if r["method"] not in (*args.methods, RESAMPLED)]}
    results["runs"] += [resampled(seed, frame) for seed in range(args.seeds)]
    for method in args.methods:
        for reading in READINGS:
            for seed in range(args.seeds):
                results["runs"].append(one(method, reading, seed, frame))
                print(json.dumps(results["runs"][-1]), flush=True)
                results["summary"] = summarise(results["runs"])
                tmp = OUT.with_suffix(".json.tmp")
                tmp.write_text(json.dumps(results, indent=1) + "\n")
                tmp.replace(OUT)


if __name__ == "__main__":
    main()
