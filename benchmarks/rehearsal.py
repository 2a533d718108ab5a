"""Does a rehearsal pick the right method? (issue 51) Predicted against real 2-way TVD.

For each table: a rehearsal (a stand-in at ``share`` × ε, then every method on the stand-in at
ε, scored against it) and the same methods run on the real table at ε, scored against its
rows as a sweep scores them. Per seed, each run records the Spearman correlation of the
predicted ranking with that seed's real runs, and how far the recommended method's real TVD is
from the best one's. Per table and share, ``by_table`` ranks the methods by the medians of
all its seeds' real runs (one real run a method is noisy where methods are close) and scores
each rehearsal against that ranking. The real runs charge nothing here (no account: a
benchmark, not a steward's table). Results go to benchmarks/results/rehearsal.json (a rerun
of some tables at a share keeps the others).

    python benchmarks/rehearsal.py --tables census --seeds 1
    python benchmarks/rehearsal.py                 # census, adult, bank, churn × 3 seeds
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
OUT = REPO / "benchmarks/results/rehearsal.json"
TABLES = ("census", "adult", "bank", "churn")  # of benchmarks/tables.py


def one(name: str, epsilon: float, share: float, seed: int, methods: list[str],
        stand_in: str) -> dict:
    from scipy.stats import spearmanr

    from benchmarks.tables import table
    from synth.privacy.budget import default_delta
    from synth.runs import split
    from synth.sweep import DEMO, grid, rehearse, summary, sweep, trial

    rows, schema = table(name)
    delta = default_delta(len(rows))
    started = time.perf_counter()
    found = rehearse(rows, schema, trial(methods, epsilon), share, delta, stand_in)
    rehearsal_seconds = time.perf_counter() - started
    train, test = split(rows, schema)
    real = summary(sweep(grid(methods, [epsilon], 1, fixed=DEMO), train, test, schema, delta,
                         n_jobs=1), methods).set_index("method")
    predicted = found.predicted.set_index("method")
    both = [m for m in methods if _known(predicted.at[m, "tvd2"]) and _known(real.at[m, "tvd2"])]
    rho = spearmanr([predicted.at[m, "tvd2"] for m in both],
                    [real.at[m, "tvd2"] for m in both]).statistic
    best = min(both, key=lambda m: real.at[m, "tvd2"])
    return {"table": name, "epsilon": epsilon, "share": share, "seed": seed,
            "stand_in": stand_in,
            "stand_in_epsilon": found.stand_in.ledger["total_epsilon"],
            "predicted": {m: _round(predicted.at[m, "tvd2"]) for m in methods},
            "real": {m: _round(real.at[m, "tvd2"]) for m in methods},
            "recommended": found.recommended, "best": best,
            "regret": round(real.at[found.recommended, "tvd2"] / real.at[best, "tvd2"] - 1, 4),
            "spearman": round(float(rho), 3), "rehearsal_seconds": round(rehearsal_seconds, 1)}


def scored(runs: list[dict], real_runs: list[dict] | None = None) -> dict:
    """One table's rehearsals at one share against the real ranking: the median of each
    method's real runs (of ``real_runs``, by default the rehearsals' own) over the seeds, every
    rehearsal's Spearman correlation with it, and the recommended method's real median
    against the best one's."""
    from scipy.stats import spearmanr

    real_runs = runs if real_runs is None else real_runs
    real = {m: statistics.median(r["real"][m] for r in real_runs) for m in real_runs[0]["real"]
            if all(r["real"][m] is not None for r in real_runs)}  # the best ran on every seed
    methods = [m for m in real if all(r["predicted"][m] is not None for r in runs)]
    if len(methods) < 2:
        return {"real_median": real, "best": None, "runs": len(runs)}
    best = min(real, key=real.get)
    rhos = [round(float(spearmanr([r["predicted"][m] for m in methods],
                                  [real[m] for m in methods]).statistic), 3) for r in runs]
    regrets = [round(real[r["recommended"]] / real[best] - 1, 4)
               for r in runs if r["recommended"] in real]
    return {"real_median": real, "best": best, "spearman": rhos,
            "spearman_median": statistics.median(rhos), "regret": regrets,
            "regret_median": statistics.median(regrets) if regrets else None,
            "runs": len(runs)}


def _known(value) -> bool:
    """A figure that was measured (a method that failed has None, or NaN in a frame)."""
    return value is not None and value == value


def _round(value):
    return round(float(value), 4) if _known(value) else None


def _key(run: dict) -> tuple:
    return run["table"], run["share"], run["stand_in"]


def _heading(table: str, share: float, stand_in: str) -> str:
    """A by_table entry's name; the default stand-in's keeps the short form."""
    from synth.sweep import STAND_IN

    return f"{table} at share {share:g}" + ("" if stand_in == STAND_IN else f" by {stand_in}")


def paired(first: list[dict], second: list[dict]) -> dict:
    """Two stand-ins of different kinds (each at the share: twice it in all), one pair per
    seed and ε: each method's predicted TVD over its stand-in's lowest, added over the two,
    so that neither stand-in's scale (a smoother one predicts lower) outweighs the other;
    scored as :func:`scored` scores one stand-in, against the medians of all the pairs' real
    runs (both stand-ins' batches ran the real methods)."""
    by_seed = {(r["seed"], r["epsilon"]): r for r in second}
    combined, real_runs = [], []
    for run in first:
        other = by_seed.get((run["seed"], run["epsilon"]))
        if other is None:
            continue
        methods = [m for m in run["predicted"]
                   if _known(run["predicted"][m]) and _known(other["predicted"].get(m))]
        lows = [min((r["predicted"][m] for m in methods), default=0) for r in (run, other)]
        if len(methods) < 2 or min(lows) <= 0:
            continue
        predicted = {m: run["predicted"][m] / lows[0] + other["predicted"][m] / lows[1]
                     if m in methods else None for m in run["predicted"]}
        combined.append({"predicted": predicted,
                         "recommended": min(methods, key=predicted.get)})
        real_runs += [run, other]
    return scored(combined, real_runs) if combined else {"runs": 0}


def main() -> None:
    from synth.sweep import REHEARSED, STAND_IN

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", nargs="+", default=list(TABLES), choices=TABLES)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--share", type=float, default=0.1)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--methods", nargs="+", default=list(REHEARSED))
    parser.add_argument("--stand-in", default=STAND_IN)
    args = parser.parse_args()
    results = json.loads(OUT.read_text()) if OUT.exists() else {"runs": []}
    kept = [r for r in results["runs"] if r["table"] not in args.tables
            or (r["share"], r["stand_in"]) != (args.share, args.stand_in)]
    fresh = []
    for name in args.tables:
        for seed in range(args.seeds):
            fresh.append(one(name, args.epsilon, args.share, seed, args.methods,
                             args.stand_in))
            print(json.dumps(fresh[-1]), flush=True)
    runs = kept + fresh
    by_table = {_heading(*key): scored([r for r in runs if _key(r) == key])
                for key in sorted({_key(r) for r in runs})}
    for table, share, stand_in in sorted({_key(r) for r in runs}):
        other = [r for r in runs if _key(r) == (table, share, "gsd")]
        if stand_in == STAND_IN and other:
            by_table[f"{table} at share {share:g} each by {STAND_IN} and gsd"] = paired(
                [r for r in runs if _key(r) == (table, share, stand_in)], other)
    results = {"about": __doc__.splitlines()[0], "targets": {"spearman": 0.7, "regret": 0.10},
               "by_table": by_table, "runs": runs}
    tmp = OUT.with_suffix(".json.tmp")  # atomically: an interrupted run keeps the last file
    tmp.write_text(json.dumps(results, indent=1) + "\n")
    tmp.replace(OUT)


if __name__ == "__main__":
    main()
