"""The peers' methods next to ours on Adult, by the measuring protocol of DESIGN.md (issue 35).

MST and AIM (on our marginal primitive, with private-pgm's estimation) beside Private-GSD and
DP-Select's measure engine: per run the wall time of the fit, peak RSS of its process, 1-way
and 2-way TVD against the train split, and the decision tree's and logistic regression's
accuracy on the test sixth; medians with min–max per (method, ε). Each run is its own
process, so peak memory is the run's own. Results merge into benchmarks/results/peers.json
(a rerun of some cells keeps the others).

    python benchmarks/peers.py --methods mst aim --epsilons 1 2 --seeds 1
    python benchmarks/peers.py                  # the issue's grid: 4 methods × 5 ε × 3 seeds
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "benchmarks/results/peers.json"
DELTA = 1e-5
METHODS = ("mst", "aim", "gsd", "dpselect")
EPSILONS = (0.5, 1.0, 2.0, 4.0, 8.0)
TARGETS = {"mst_tvd2_at_1": 0.059, "aim_tvd2_at_1": 0.051, "aim_seconds_at_1": 600}
ANCHORS = {"mst_tvd2": {"1": 0.054, "2": 0.050}, "aim_tvd2": {"1": 0.051, "2": 0.049},
           "aim_minutes_before": "18-30", "gsd_tvd2_at_1": "0.049-0.051",
           "dpselect_measure_tvd2": {"1": "0.047-0.050", "2": 0.037}}


def one(method: str, epsilon: float, seed: int) -> dict:
    """One run in this process: fit on the train split, score against train and test."""
    from synth.data import read_table
    from synth.evaluation import marginal_tvd, utility
    from synth.methods import FitContext, make
    from synth.privacy.budget import Budget
    from synth.protocol import adult_schema, protocol_split
    from synth.schema import prepare

    table = read_table(REPO.parent / "shared/data/adult.csv")
    schema = adult_schema(table)
    train, _, test = (prepare(t, schema) for t in protocol_split(table))
    started = time.perf_counter()
    model = make(method).fit(train, schema, Budget(epsilon, DELTA),
                             FitContext(postprocessing_seed=seed))
    seconds = time.perf_counter() - started
    synthetic = model.sample()
    fidelity = marginal_tvd(train, synthetic, schema)
    scores = utility(test, synthetic, schema)
    return {"method": method, "epsilon": epsilon, "seed": seed, "seconds": round(seconds, 1),
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
            "tvd1": round(fidelity.tvd1, 4), "tvd2": round(fidelity.tvd2, 4),
            "tree": round(scores["accuracy"], 4),
            "logistic": round(scores["logistic_accuracy"], 4),
            "epsilon_spent": round(model.ledger_.total_epsilon, 6),
            "rounds": getattr(model, "rounds_", None)}


def summarise(runs: list[dict]) -> dict:
    cells: dict[str, dict] = {}
    for key in sorted({(r["method"], r["epsilon"]) for r in runs}):
        mine = [r for r in runs if (r["method"], r["epsilon"]) == key]
        cells[f"{key[0]} at ε={key[1]:g}"] = {
            m: {"median": statistics.median(r[m] for r in mine),
                "min": min(r[m] for r in mine), "max": max(r[m] for r in mine)}
            for m in ("tvd2", "tvd1", "tree", "logistic", "seconds", "peak_rss_mb")}
        cells[f"{key[0]} at ε={key[1]:g}"]["seeds"] = len(mine)
    return cells


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--methods", nargs="+", default=list(METHODS))
    parser.add_argument("--epsilons", nargs="+", type=float, default=list(EPSILONS))
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--one", nargs=3, metavar=("METHOD", "EPSILON", "SEED"),
                        help=argparse.SUPPRESS)  # a child process's single run
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one[0], float(args.one[1]), int(args.one[2]))))
        return
    done = json.loads(OUT.read_text())["runs"] if OUT.exists() else []
    for method in args.methods:
        for epsilon in args.epsilons:
            for seed in range(args.seeds):
                child = subprocess.run([sys.executable, __file__, "--one", method,
                                        str(epsilon), str(seed)], capture_output=True,
                                       text=True, check=False)
                if child.returncode:
                    run = {"method": method, "epsilon": epsilon, "seed": seed,
                           "failed": child.stderr.strip().splitlines()[-1:]}
                else:
                    run = json.loads(child.stdout.strip().splitlines()[-1])
                done = [r for r in done if (r["method"], r["epsilon"], r["seed"]) != (
                    method, epsilon, seed)] + [run]
                print(json.dumps(run), flush=True)
                OUT.write_text(json.dumps({
                    "protocol": "Adult by DESIGN.md: train split (21,707 rows), δ = 1e-5, "
                                "method defaults, one process per run",
                    "machine": f"{platform.machine()}, {platform.processor() or 'cpu'}, "
                               "2 cores (this project's CI class)",
                    "targets": TARGETS, "anchors": ANCHORS,
                    "summary": summarise([r for r in done if "failed" not in r]),
                    "runs": done}, indent=1) + "\n")


if __name__ == "__main__":
    main()
