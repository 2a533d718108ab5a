"""The unit of protection: what protecting a person (or household) with k rows kept costs.

For each dataset, method, k (rows kept per unit) and ε, over seeds, one run protects the
unit (``synth.runs.run(..., unit=PrivacyUnit(column, k))``) and is measured against the
rows synthesized (all of them, before bounding): TVD1/TVD2 (10 bins), tree accuracy on the
held-out units, the fit's and the whole run's seconds, the number of units U, the rows kept
by bounding (min(rows, k) summed over units: the steward's exact figure), the release's
size n̂ (the private estimate of that count), the ledger's ε for the ``rows`` stage and in
all. Per (dataset, k) it also records **bounding alone**: the TVDs of a bounded copy of the
rows, with no noise, against all of them (the bias of keeping at most k rows per unit).
Seeds are post-processing seeds; the noise is fresh (OS entropy), as in any release.

The tables:

* ``panel``: sample_data/panel_demo.csv (scripts/make_panel_data.py), person-months, unit
  ``person_id``, target ``employed``; its public schema is sample_data/panel_demo.schema.json.
* ``adult``: ../shared/data/adult.csv with the protocol's public schema
  (:func:`synth.protocol.adult_schema`), target ``income``, grouped into synthetic
  households by :data:`HOUSEHOLDS` (:func:`households`): rows sorted by native-country, then
  race, then a random order from ``default_rng(19)``; consecutive runs of 1–6 rows, sizes
  drawn i.i.d. from :data:`HOUSEHOLD_SIZES` with ``default_rng(19)`` (the last run cut to
  the rows left; a run may straddle two (country, race) groups), are households
  ``H00001`` …. Adult has no household structure: this only makes units of several
  similar-looking rows, so k and U mean what they would on a real household table.

The hold-out is by unit, so no unit has rows on both sides: the units are shuffled with
``default_rng(0)`` and the first ⌊5U/6⌋ are synthesized (the protocol's train and
validation share), the rest are the test rows (utility's).

    python benchmarks/units.py --quick [--datasets panel]   # 1 seed, small GSD and DP-GAN
    python benchmarks/units.py [--seeds 3] [--epsilons 1] [--ks 1 2 5 10]
    python benchmarks/units.py --methods independent --record-level   # + the record level

In benchmarks/results: units_panel.json and units_adult.json are the full runs (3 seeds,
one dataset each, ``--datasets X --out``), units_quick.json a ``--quick`` run.

``--record-level`` adds a reference run per method without a unit (every row its own unit,
all rows used: the weaker, record-level guarantee) as ``k = "record"``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from synth.data import read_table
from synth.evaluation import marginal_tvd
from synth.methods import FitContext
from synth.privacy.unit import ROWS, PrivacyUnit, bound, population
from synth.protocol import adult_schema, cut_points
from synth.runs import run
from synth.schema import Schema

REPO = Path(__file__).resolve().parent.parent
PANEL = REPO / "sample_data" / "panel_demo.csv"
PANEL_SCHEMA = REPO / "sample_data" / "panel_demo.schema.json"
HOUSEHOLD = "household_id"
HOUSEHOLD_SEED = 19
HOUSEHOLD_SIZES = {1: 0.28, 2: 0.34, 3: 0.15, 4: 0.13, 5: 0.07, 6: 0.03}  # about the US's
HOUSEHOLDS = (f"rows sorted by native-country, race, then a random order (default_rng("
              f"{HOUSEHOLD_SEED})); consecutive runs of 1-6 rows, sizes i.i.d. from "
              f"{HOUSEHOLD_SIZES} (default_rng({HOUSEHOLD_SEED}), the last run cut to the rows "
              "left), are households H00001 ...; a run may straddle two (country, race) groups")
SPLIT = ("by unit: units shuffled with default_rng(0), the first floor(5U/6) synthesized "
         "(the protocol's train + validation share), the rest held out for utility")
METHODS = ("independent", "gsd", "dpgan")
KS = (1, 2, 5, 10)
FULL = {"gsd": {"rows": 1000}, "dpgan": {}}  # GSD's rounds and DP-GAN's epochs: defaults
QUICK = {"gsd": {"rows": 500, "rounds": 5}, "dpgan": {"epochs": 2.0}}
FIGURES = ("tvd1", "tvd2", "accuracy", "seconds", "run_seconds", "units", "rows",
           "rows_kept", "rows_released", "rows_epsilon", "ledger_epsilon")


def summary(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def households(table: pd.DataFrame) -> pd.DataFrame:
    """Adult with a ``household_id`` column, by the rule of :data:`HOUSEHOLDS`; rows in
    their original order."""
    rng = np.random.default_rng(HOUSEHOLD_SEED)
    shuffle = rng.permutation(len(table))
    order = np.lexsort((shuffle, table["race"].astype(str).to_numpy(),
                        table["native-country"].astype(str).to_numpy()))
    sizes = rng.choice(list(HOUSEHOLD_SIZES), size=len(table),
                       p=list(HOUSEHOLD_SIZES.values()))  # more than enough draws
    ids = np.repeat(np.arange(len(table)), sizes)[:len(table)]
    household = np.empty(len(table), dtype=object)
    household[order] = [f"H{i + 1:05d}" for i in ids]
    return table.assign(**{HOUSEHOLD: household})


def unit_split(table: pd.DataFrame, column: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(rows to synthesize, test rows) by :data:`SPLIT`."""
    units = pd.unique(table[column])
    order = np.random.default_rng(0).permutation(len(units))
    kept = set(units[order[:cut_points(len(units))[1]]])
    mask = table[column].isin(kept).to_numpy()
    return (table[mask].reset_index(drop=True),
            table[~mask].drop(columns=column).reset_index(drop=True))


def load(name: str, adult_path: Path) -> tuple[pd.DataFrame, Schema, str]:
    """(table with its unit column, public schema without it, unit column)."""
    if name == "panel":
        return read_table(PANEL), Schema.load(PANEL_SCHEMA), "person_id"
    adult = read_table(adult_path)
    return households(adult), adult_schema(adult), HOUSEHOLD


def one_run(train, test, schema, column, method, k, eps, seed, params) -> dict:
    unit = None if k == "record" else PrivacyUnit(column, k)
    data = train.drop(columns=column) if unit is None else train
    started = time.perf_counter()
    record = run(data, schema, method, eps, params=params, postprocessing_seed=seed,
                 test=test, ctx=FitContext(postprocessing_seed=seed), unit=unit)
    seconds = time.perf_counter() - started
    people = population(data, unit or PrivacyUnit())
    figures = record.figures()
    return {"method": method, "k": k, "epsilon": eps, "seed": seed, "params": params,
            "tvd1": figures["tvd1"], "tvd2": figures["tvd2"],
            "accuracy": figures.get("accuracy"), "macro_f1": figures.get("macro_f1"),
            "logistic_accuracy": figures.get("logistic_accuracy"),
            "majority": figures.get("majority"), "real_accuracy": figures.get("real_accuracy"),
            "error": figures.get("error"),
            "seconds": record.fit_seconds, "run_seconds": seconds,
            "stage_seconds": record.timings,
            "units": people.units, "rows": len(data), "rows_kept": people.rows,
            "rows_released": len(record.synthetic),
            "rows_epsilon": record.ledger["stages"].get(ROWS, {}).get("epsilon", 0.0),
            "ledger_epsilon": record.ledger["total_epsilon"],
            "ledger_delta": record.ledger["total_delta"], "relation": record.ledger["relation"]}


def bounding_alone(train, schema, column, k) -> dict:
    """TVDs of a bounded copy (no noise) against every row: the bias of bounding alone."""
    if k == "record":
        return {"tvd1": 0.0, "tvd2": 0.0}
    kept, _ = bound(train, PrivacyUnit(column, k))
    fidelity = marginal_tvd(train.drop(columns=column), kept, schema)
    return {"tvd1": fidelity.tvd1, "tvd2": fidelity.tvd2}


def table_md(groups: dict) -> str:
    def fmt(fig, digits=3):
        if fig is None:
            return "–"
        m, lo, hi = fig["median"], fig["min"], fig["max"]
        if lo == hi:
            return f"{m:.{digits}f}"
        return f"{m:.{digits}f} ({lo:.{digits}f}–{hi:.{digits}f})"

    lines = ["| dataset | method | k | ε | TVD1 | TVD2 | tree acc. | bounding TVD2 | U | "
             "rows kept | n̂ | ε rows | fit s |", "|" + "---|" * 13]
    for g in groups.values():
        lines.append(
            f"| {g['dataset']} | {g['method']} | {g['k']} | {g['epsilon']:g} | "
            f"{fmt(g['tvd1'])} | {fmt(g['tvd2'])} | {fmt(g.get('accuracy'))} | "
            f"{fmt(g['bounding_alone']['tvd2'])} | {g['units']['median']:,} | "
            f"{g['rows_kept']['median']:,} | {fmt(g['rows_released'], 0)} | "
            f"{g['rows_epsilon']['median']:g} | {fmt(g['seconds'], 1)} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--adult", type=Path, default=REPO.parent / "shared/data/adult.csv")
    parser.add_argument("--datasets", nargs="+", choices=("panel", "adult"),
                        default=["panel", "adult"])
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    parser.add_argument("--ks", type=int, nargs="+", default=list(KS))
    parser.add_argument("--epsilons", type=float, nargs="+", default=[1.0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--quick", action="store_true",
                        help="1 seed; GSD rows=500 rounds=5, DP-GAN epochs=2")
    parser.add_argument("--record-level", action="store_true",
                        help="add a run per method without a unit (k = 'record')")
    parser.add_argument("--gsd-rows", type=int)
    parser.add_argument("--gsd-rounds", type=int)
    parser.add_argument("--dpgan-epochs", type=float)
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks/results/units.json")
    args = parser.parse_args()

    settings = {m: dict(p) for m, p in (QUICK if args.quick else FULL).items()}
    settings["independent"] = {}
    for method, key, value in (("gsd", "rows", args.gsd_rows), ("gsd", "rounds", args.gsd_rounds),
                               ("dpgan", "epochs", args.dpgan_epochs)):
        if value is not None:
            settings[method][key] = value
    seeds = 1 if args.quick else args.seeds
    ks: list = list(args.ks) + (["record"] if args.record_level else [])

    runs, bounding, datasets = [], [], {}
    started = time.perf_counter()
    for name in args.datasets:
        table, schema, column = load(name, args.adult)
        train, test = unit_split(table, column)
        datasets[name] = {
            "rows": len(table), "units": int(table[column].nunique()), "unit": column,
            "target": schema.target, "rows_synthesized": len(train), "test_rows": len(test),
            "rows_per_unit": summary(train[column].value_counts().tolist()),
            **({"grouping": HOUSEHOLDS} if name == "adult" else {"source": str(
                PANEL.relative_to(REPO))})}
        for k in ks:
            for seed in range(seeds):
                bounding.append({"dataset": name, "k": k, "seed": seed,
                                 **bounding_alone(train, schema, column, k)})
            for method in args.methods:
                for eps in args.epsilons:
                    for seed in range(seeds):
                        r = {"dataset": name, **one_run(train, test, schema, column, method,
                                                        k, eps, seed, settings[method])}
                        runs.append(r)
                        acc = "–" if r["accuracy"] is None else f"{r['accuracy']:.3f}"
                        print(f"{name} {method} k={k} ε={eps:g} seed={seed}: "
                              f"tvd2={r['tvd2']:.4f} acc={acc} n̂={r['rows_released']} "
                              f"(kept {r['rows_kept']}) {r['seconds']:.1f}s", file=sys.stderr)

    groups: dict[str, dict] = {}
    for r in runs:
        key = f"{r['dataset']} {r['method']} k={r['k']} ε={r['epsilon']:g}"
        groups.setdefault(key, []).append(r)
    summaries = {}
    for key, rs in groups.items():
        first = rs[0]
        bias = [b for b in bounding if (b["dataset"], b["k"]) == (first["dataset"], first["k"])]
        summaries[key] = {
            "dataset": first["dataset"], "method": first["method"], "k": first["k"],
            "epsilon": first["epsilon"], "params": first["params"], "seeds": len(rs),
            **{f: summary([r[f] for r in rs]) for f in FIGURES
               if all(r[f] is not None for r in rs)},
            "bounding_alone": {f: summary([b[f] for b in bias]) for f in ("tvd1", "tvd2")}}
    report = {
        "what": __doc__.splitlines()[0],
        "datasets": datasets, "split": SPLIT,
        "fidelity": "10-bin TVD1/TVD2 against every row synthesized (before bounding)",
        "utility": "depth-10 tree trained on the release, scored on the held-out units' rows",
        "noise": "fresh (OS entropy); seeds are post-processing seeds",
        "mode": "quick" if args.quick else "full", "settings": settings,
        "ks": ks, "epsilons": args.epsilons, "seeds": seeds,
        "total_seconds": time.perf_counter() - started,
        "machine": {"python": platform.python_version(), "processor": platform.processor(),
                    "cpus": os.cpu_count()},
        "summary": summaries, "bounding_alone": bounding, "runs": runs}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(table_md(summaries))
    print(f"wrote {args.out} in {report['total_seconds']:.0f}s", file=sys.stderr)


if __name__ == "__main__":
    main()
