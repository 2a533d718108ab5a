"""Real tables with private domains (issue 36): what learning bounds privately costs.

Three tables: the census sample and the person-month panel (sample_data/), and a table shaped
like UCI Bank (scripts/make_bank_data.py: negative and heavy-tailed balances, ages to 95,
blanks in pdays, a rare target). Each at ε ∈ {1, 4}, once with every domain public and once
with only the categories public (every numeric bound learned privately at the default domain
share), by ``independent`` and GSD. Per run: the share of real rows each learned interval
clips, its width against the real 1st–99th percentile range, whether a column with values on
both sides of zero keeps both, blank cells in the release (and in the real rows), 2-way TVD
scored on the all-public schema's bins for both runs, SDMetrics' quality (our
implementation of its published definitions), balanced accuracy, seconds. Medians with
min–max over seeds go to benchmarks/results/private_domains.json (written atomically).

    python benchmarks/private_domains.py [--seeds 3] [--epsilons 1 4] [--methods independent gsd]
        [--tables census panel bank] [--domains all categories]

A run of some tables, methods or ε keeps the file's other cells.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import platform
import statistics
import time
from datetime import date
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "benchmarks/results/private_domains.json"
DELTA = 1e-5
TARGETS = {"clipped_at_most": 0.02, "width_at_most_times_p1_p99": 2.0,
           "tvd2_within_of_all_public": 0.01, "domain_share_at_most": 0.2}


def _bank() -> tuple[pd.DataFrame, dict]:
    spec = importlib.util.spec_from_file_location("bank", REPO / "scripts/make_bank_data.py")
    bank = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bank)
    return bank.generate(45_000, 0), bank.public_schema()


def tables() -> dict[str, tuple[pd.DataFrame, dict]]:
    from synth.data import read_table

    found = {name: (read_table(REPO / f"sample_data/{name}_demo.csv"),
                    json.loads((REPO / f"sample_data/{name}_demo.schema.json").read_text()))
             for name in ("census", "panel")}
    return {**found, "bank": _bank()}


def categories_only(schema):
    """The steward without a codebook: categories public, every numeric bound private."""
    from dataclasses import replace

    from synth.schema import CATEGORICAL

    return replace(schema, columns=tuple(c if c.kind == CATEGORICAL else replace(c, public=False)
                                         for c in schema))


def bounds_figures(real: pd.DataFrame, learned, public) -> dict[str, dict]:
    """Per numeric column: clipped share of the real present values, width over the real
    1st–99th percentile range, and (where the real column has both) whether both signs
    are kept."""
    out = {}
    for col in learned:
        if col.kind == "categorical":
            continue
        x = pd.to_numeric(real[col.name], errors="coerce").dropna().to_numpy(dtype=float)
        p1, p99 = np.percentile(x, [1, 99])
        both = bool(x.min() < 0 < x.max())
        out[col.name] = {
            "lower": col.lower, "upper": col.upper,
            "clipped": round(float(((x < col.lower) | (x > col.upper)).mean()), 4),
            "width_over_p1_p99": round((col.upper - col.lower) / max(p99 - p1, 1e-9), 3),
            **({"both_signs_kept": bool(col.lower < 0 < col.upper)} if both else {}),
            **({"public": [public[col.name].lower, public[col.name].upper]}
               if not col.learned else {})}
    return out


def one(name: str, table: pd.DataFrame, schema, method: str, epsilon: float, private: bool,
        seed: int) -> dict:
    from synth.evaluation import marginal_tvd
    from synth.quality import quality
    from synth.runs import run, split

    public = schema
    working = categories_only(schema) if private else schema
    train, test = split(table, working)
    started = time.perf_counter()
    record = run(train, working, method, epsilon, DELTA, postprocessing_seed=seed, test=test)
    seconds = time.perf_counter() - started
    synthetic = record.synthetic
    return {
        "table": name, "method": method, "epsilon": epsilon, "seed": seed,
        "domains": "categories public" if private else "all public",
        "domain_share": record.shares.get("domain", 0.0),
        "rows": len(train), "seconds": round(seconds, 1),
        "bounds": bounds_figures(train, record.schema, public),
        "blank_cells": {c: int(synthetic[c].isna().sum()) for c in synthetic.columns
                        if synthetic[c].isna().any()},
        "real_blank_cells": {c: int(train[c].isna().sum()) for c in train.columns
                             if c in synthetic.columns and train[c].isna().any()},
        "tvd2": round(marginal_tvd(train, synthetic, public).tvd2, 4),
        "quality": round(quality(train, synthetic, public).overall, 4),
        "balanced_accuracy": round(record.scores.get("balanced_accuracy", float("nan")), 4),
        "accuracy": round(record.scores.get("accuracy", float("nan")), 4),
        "majority": round(record.scores.get("majority", float("nan")), 4),
        "epsilon_spent": record.ledger["total_epsilon"]}


def spread(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def summarise(runs: list[dict]) -> dict:
    cells: dict[str, dict] = {}
    keys = sorted({(r["table"], r["method"], r["epsilon"], r["domains"]) for r in runs})
    for key in keys:
        mine = [r for r in runs if (r["table"], r["method"], r["epsilon"], r["domains"]) == key]
        cell = {m: spread([r[m] for r in mine])
                for m in ("tvd2", "quality", "balanced_accuracy", "seconds")}
        cell["blank_cells"] = spread([sum(r["blank_cells"].values()) for r in mine])
        cell["worst_clipped"] = spread([max([b["clipped"] for b in r["bounds"].values()],
                                            default=0.0) for r in mine])
        cell["worst_width"] = spread([max([b["width_over_p1_p99"] for b in r["bounds"].values()],
                                          default=0.0) for r in mine])
        cell["seeds"] = len(mine)
        cells[" / ".join(map(str, key))] = cell
    return cells


def save(results: dict) -> None:
    results["summary"] = summarise(results["runs"])
    tmp = OUT.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(results, indent=1, default=float) + "\n")
    tmp.replace(OUT)


def main() -> None:
    from synth.schema import Schema

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--epsilons", nargs="+", type=float, default=[1.0, 4.0])
    parser.add_argument("--methods", nargs="+", default=["independent", "gsd"])
    parser.add_argument("--tables", nargs="+", default=["census", "panel", "bank"])
    parser.add_argument("--domains", nargs="+", default=["all", "categories"],
                        choices=["all", "categories"],
                        help="rerun the runs with every domain public, with only the "
                             "categories public, or both")
    args = parser.parse_args()
    found = tables()
    results = {"protocol": "each table split by the protocol (a sixth held out for utility); "
                           "δ = 1e-5; method defaults; default domain share",
               "machine": f"{platform.machine()}, 2 cores (this project's CI class)",
               "date": date.today().isoformat(), "targets": TARGETS}  # seeds: per cell
    # the cells not asked for again are kept from the file: one table or method may be rerun
    earlier = json.loads(OUT.read_text())["runs"] if OUT.exists() else []
    labels = {"all": "all public", "categories": "categories public"}
    rerun = {labels[d] for d in args.domains}
    results["runs"] = [r for r in earlier if not (
        r["table"] in args.tables and r["method"] in args.methods
        and r["epsilon"] in args.epsilons and r["domains"] in rerun)]
    for name in args.tables:
        table, raw = found[name]
        schema = Schema.from_dict(raw)
        for method in args.methods:
            for epsilon in args.epsilons:
                for private in [d == "categories" for d in args.domains]:
                    for seed in range(args.seeds):
                        got = one(name, table, schema, method, epsilon, private, seed)
                        results["runs"].append(got)
                        print(json.dumps({k: got[k] for k in (
                            "table", "method", "epsilon", "domains", "tvd2", "quality",
                            "balanced_accuracy", "seconds")}), flush=True)
                        save(results)


if __name__ == "__main__":
    main()
