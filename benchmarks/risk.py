"""The privacy risk report on real releases: each attack's figure beside its bound.

On Adult and the census sample, split by the measuring protocol: a method's default release
at each ε is made from the train split and attacked with the validation and test splits as
the hold-out (synth.risk). Beside them the two controls, made without privacy: the train
split itself as the release, and a bootstrap of it, both read against ε = 1's bound. Per run
the seconds of the report alone (the benchmark of its speed: ≤ 20 s on Adult) and of the
fit. Results merge into benchmarks/results/risk.json run by run (written atomically).

    python benchmarks/risk.py [--tables adult census] [--methods independent mst aim]
                              [--epsilons 1 4 16]
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from datetime import date
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "benchmarks" / "results" / "risk.json"
ADULT = REPO.parent / "shared" / "data" / "adult.csv"
DELTA = 1e-5
CONTROLS = {"the train split itself": None, "a bootstrap of the train split": 0}


def parts(name: str):
    """(train, hold-out, schema) of a table by the measuring protocol."""
    from synth.data import load_sample, read_table
    from synth.protocol import adult_schema, protocol_split

    if name == "adult":
        table = read_table(ADULT)
        schema = adult_schema(table)
    else:
        table, schema = load_sample()
    train, validation, test = protocol_split(table)
    return train, pd.concat([validation, test], ignore_index=True), schema


def attacked(table: str, method: str, epsilon: float, release: pd.DataFrame, fit_s: float,
             train: pd.DataFrame, holdout: pd.DataFrame, schema) -> dict:
    from synth.risk import risk

    started = time.perf_counter()
    attacks = risk(train, release, holdout, schema, epsilon, DELTA)
    return {"table": table, "method": method, "epsilon": epsilon,
            "fit_seconds": round(fit_s, 1),
            "risk_seconds": round(time.perf_counter() - started, 1),
            "attacks": [a.as_dict() for a in attacks]}


SHORT = {"closest record": "closest", "density ratio": "density", "exact copies": "copies",
         "near copies": "near", "rare rows reproduced": "rare"}


def summarise(runs: list[dict]) -> dict:
    """One row per (table, release, ε): each attack's advantage, the membership bound, the
    attribute attack's own, whether anything was flagged, and the report's seconds."""
    rows = {}
    for run in runs:
        row = {"bound": None, "attribute_bound": None}
        for a in run["attacks"]:
            if a["kind"] == "attribute":
                row["attribute"], row["attribute_bound"] = a["advantage"], a["bound"]
            else:
                row[SHORT[a["name"]]], row["bound"] = a["advantage"], a["bound"]
        row["flagged"] = ", ".join(SHORT.get(a["name"], "attribute") for a in run["attacks"]
                                   if a["above_bound"]) or "none"
        row["risk_seconds"] = run["risk_seconds"]
        rows[f"{run['table']}: {run['method']} at ε={run['epsilon']:g}"] = {
            k: round(v, 3) if isinstance(v, float) else v for k, v in row.items()}
    return rows


def main() -> None:
    from synth.methods import FitContext, make
    from synth.privacy.budget import Budget

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", nargs="+", default=["adult", "census"],
                        choices=["adult", "census"])
    parser.add_argument("--methods", nargs="+", default=["independent", "mst", "aim", "gsd",
                                                         "dpselect", "dpgan"])
    parser.add_argument("--epsilons", nargs="+", type=float, default=[1.0, 4.0, 16.0])
    parser.add_argument("--controls", action="store_true", help="the controls only")
    args = parser.parse_args()
    old = json.loads(OUT.read_text())["runs"] if OUT.exists() else []
    results = {"protocol": "the protocol's train split released by each method's defaults "
                           "(δ = 1e-5), attacked with its validation and test splits as the "
                           "hold-out; controls without privacy, read against ε = 1",
               "machine": f"{platform.machine()}, kernel {platform.release()}",
               "date": date.today().isoformat(), "runs": old}
    for table in args.tables:
        train, holdout, schema = parts(table)
        cells = [(name, 1.0, None) for name in CONTROLS] + (
            [] if args.controls else
            [(m, e, m) for m in args.methods for e in args.epsilons])
        for name, epsilon, method in cells:
            started = time.perf_counter()
            if method is None:
                seed = CONTROLS[name]
                release = train if seed is None else train.sample(
                    len(train), replace=True, random_state=seed)
            else:
                model = make(method).fit(train, schema, Budget(epsilon, DELTA),
                                         FitContext(postprocessing_seed=0))
                release = model.sample(len(train))
            run = attacked(table, name, epsilon, release, time.perf_counter() - started,
                           train, holdout, schema)
            results["runs"] = [r for r in results["runs"] if (
                r["table"], r["method"], r["epsilon"]) != (table, name, epsilon)] + [run]
            print(json.dumps({k: run[k] for k in ("table", "method", "epsilon",
                                                  "risk_seconds")} | {
                a["name"]: (round(a["advantage"], 3) if a["advantage"] is not None
                            else None, round(a["bound"], 3)) for a in run["attacks"]}),
                  flush=True)
            results["summary"] = summarise(results["runs"])
            tmp = OUT.with_suffix(".json.tmp")
            tmp.write_text(json.dumps(results, indent=1) + "\n")
            tmp.replace(OUT)


if __name__ == "__main__":
    main()
