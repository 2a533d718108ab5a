"""DP-Select's two engines on Adult at the same budget: row-by-row picks against the DP
simple GA choosing the whole output, by the protocol of DESIGN.md.

With the same seed both engines train the very same DP-GAN and draw the very same pool, so a
seed's two runs differ only in how the rows are chosen. Each run is a fresh process. Per GA
run the script also records every generation's wall time (progress events are not throttled
here) and the selection stage's seconds. With ``--workers 2`` two runs share the machine (each
with one torch thread), so the timings are pessimistic. Writes
benchmarks/results/dpselect_ga.json.

    python benchmarks/dpselect_ga.py [--epsilons 0.5 1 2 4 8] [--seeds 3] [--workers 2]
"""

from __future__ import annotations

import argparse
import itertools
import json
import platform
import statistics
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DELTA = 1e-5
TARGETS = {"ga_wins_tvd2_at_eps_le": 2.0, "generation_ms": 50, "selection_seconds": 60}


def one_run(adult: str, threads: int, engine: str, epsilon: float, seed: int) -> dict:
    from synth.data import read_table
    from synth.methods import FitContext, Progress
    from synth.protocol import adult_schema, protocol_split
    from synth.runs import Run

    if threads:
        import torch

        torch.set_num_threads(threads)
    table = read_table(adult)
    train, _, test = protocol_split(table)
    schema = adult_schema(table)
    planned = Run("dpselect", schema, epsilon, DELTA, {"engine": engine},
                  postprocessing_seed=seed)
    ticks: list[float] = []

    def on_event(event) -> None:
        if isinstance(event, Progress) and event.stage == "select":
            ticks.append(time.perf_counter())

    record = planned(train, schema, test, FitContext(postprocessing_seed=seed,
                                                     on_event=on_event, min_interval=0.0))
    gaps = [b - a for a, b in itertools.pairwise(ticks)]
    model = planned.model
    return {"engine": engine, "epsilon": epsilon, "seed": seed,
            "stage_seconds": record.timings, "ledger_epsilon": record.ledger["total_epsilon"],
            "selection_params": {k: v for k, v in model.ledger_.entries[-1].params.items()
                                 if k != "marginals"},
            "selection_distance": [float(d) for d in model.selection_distance_],
            "generation_ms_median": 1000 * statistics.median(gaps) if engine == "ga" and gaps
            else None, **record.figures()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--adult", default=str(REPO.parent / "shared/data/adult.csv"))
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.5, 1, 2, 4, 8])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()

    jobs = [(e, eps, s) for eps in args.epsilons for s in range(args.seeds)
            for e in ("rows", "ga")]
    runs = []
    with ProcessPoolExecutor(max_workers=args.workers, max_tasks_per_child=1) as pool:
        threads = 1 if args.workers > 1 else 0  # torch's threads must not oversubscribe
        futures = [pool.submit(one_run, args.adult, threads, *job) for job in jobs]
        for i, future in enumerate(futures, 1):
            run = future.result()
            runs.append(run)
            print(f"[{i}/{len(jobs)}] {run['engine']} ε={run['epsilon']:g} seed={run['seed']}: "
                  f"TVD2 {run['tvd2']:.4f}, tree {run['accuracy']:.4f}, logistic "
                  f"{run['logistic_accuracy']:.4f}, select {run['stage_seconds']['select']:.1f}"
                  f" s", flush=True)

    summary: dict = {}
    for eps in args.epsilons:
        row = {}
        for engine in ("rows", "ga"):
            group = [r for r in runs if r["engine"] == engine and r["epsilon"] == eps]
            row[engine] = {k: statistics.mean(r[k] for r in group) for k in (
                "tvd1", "tvd2", "accuracy", "logistic_accuracy")}
            row[engine]["select_seconds_median"] = statistics.median(
                r["stage_seconds"]["select"] for r in group)
            if engine == "ga":
                row[engine]["generation_ms_median"] = statistics.median(
                    r["generation_ms_median"] for r in group)
        row["ga_wins_tvd2"] = row["ga"]["tvd2"] < row["rows"]["tvd2"]
        summary[str(eps)] = row
    record = {"protocol": "DESIGN.md: Adult split default_rng(0), δ = 1e-5, TVD over 10 "
                          "equal-width bins; means over seeds", "delta": DELTA,
              "workers": args.workers,
              "machine": {"platform": platform.platform(), "cpus": __import__("os").cpu_count()},
              "targets": TARGETS, "summary": summary, "runs": runs}
    out = REPO / "benchmarks" / "results" / "dpselect_ga.json"
    out.write_text(json.dumps(record, indent=2) + "\n")
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
