"""What DP-Select's row-by-row selection adds over its own pool, on Adult.

DP-Select at (ε, δ) trains its DP-GAN on the GAN share (gan_share·ε, gan_share·δ); with the
same seed, a plain DP-GAN fitted at exactly that budget trains the very same generator. So
"DP-GAN at the GAN share" is DP-Select with the selection replaced by a uniform draw from the
pool, and the difference between the two is the selection's gain (it costs the rest of ε).

Writes benchmarks/results/selection_gain.json.

    python benchmarks/selection_gain.py [--epsilons 2 8] [--seeds 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import numpy as np

from synth.data import read_table
from synth.methods import make
from synth.protocol import adult_schema, protocol_split
from synth.runs import Run

REPO = Path(__file__).resolve().parent.parent
DELTA = 1e-5


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--adult", default=str(REPO.parent / "shared/data/adult.csv"))
    parser.add_argument("--epsilons", type=float, nargs="+", default=[2.0, 8.0])
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()

    table = read_table(args.adult)
    train, _, test = protocol_split(table)
    schema = adult_schema(table)
    rows = []
    for eps in args.epsilons:
        for seed in range(args.seeds):
            select = Run("dpselect", schema, eps, DELTA, postprocessing_seed=seed)
            share = select.model.gan_share
            pool = Run("dpgan", schema, share * eps, share * DELTA, shares={"gan": 1.0},
                       postprocessing_seed=seed)
            records = {"dpselect": select(train, schema, test),
                       "pool, uniform": pool(train, schema, test)}
            same = np.array_equal(pool.model.table_, select.model.gan_.table_)
            for name, record in records.items():
                figures = record.figures()
                rows.append({"epsilon": eps, "seed": seed, "method": name,
                             "same_generator": same, **figures})
                print(f"ε={eps:g} seed={seed} {name}: tree {figures['accuracy']:.4f}, "
                      f"logistic {figures['logistic_accuracy']:.4f}, "
                      f"TVD2 {figures['tvd2']:.4f}", flush=True)
    summary = {}
    for eps in args.epsilons:
        for name in ("dpselect", "pool, uniform"):
            group = [r for r in rows if r["epsilon"] == eps and r["method"] == name]
            summary.setdefault(str(eps), {})[name] = {
                k: statistics.median(r[k] for r in group)
                for k in ("accuracy", "logistic_accuracy", "tvd1", "tvd2")}
        # issue 20's target: ≥ 30 % lower 2-way TVD than the uniform draw at the same seed
        gains = []
        for seed in range(args.seeds):
            tvd = {r["method"]: r["tvd2"] for r in rows
                   if r["epsilon"] == eps and r["seed"] == seed}
            gains.append(1 - tvd["dpselect"] / tvd["pool, uniform"])
        summary[str(eps)]["tvd2_reduction"] = {
            "median": statistics.median(gains), "min": min(gains), "max": max(gains),
            "target": 0.30}
    out = REPO / "benchmarks" / "results" / "selection_gain.json"
    out.write_text(json.dumps({"engine": make("dpselect").engine, "summary": summary,
                               "runs": rows}, indent=2) + "\n")
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
