"""DP-GAN's fit time on Adult against torch's thread count (issue 21, item 3).

torch takes one thread per core by default; on a 16-core machine a DP-GAN fit with 16 threads
took 147 s against ~90 s with 2 (the issue's figures), because its steps are small and the
threads mostly wait on each other; a fit now caps them (``training.MAX_THREADS``), which this
script lifts. Each run here is a fresh process with
``torch.set_num_threads(t)`` before anything else, the protocol of DESIGN.md, ε = 1. The JSON
records the machine's core count beside each time, since what pays depends on it. Writes
benchmarks/results/threads.json.

    python benchmarks/threads.py [--threads 1 2 4 16] [--seeds 1]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DELTA = 1e-5


def one_run(adult: str, threads: int, seed: int) -> dict:
    """One DP-GAN fit with ``threads`` torch threads (in a child process)."""
    import torch

    from synth.methods.dpgan import training

    torch.set_num_threads(threads)
    training.MAX_THREADS = threads  # lift the fit's own cap to measure what it guards against
    from synth.data import read_table
    from synth.protocol import adult_schema, protocol_split
    from synth.runs import run

    table = read_table(adult)
    train, _, test = protocol_split(table)
    schema = adult_schema(table)
    record = run(train, schema, "dpgan", 1.0, DELTA, {}, postprocessing_seed=seed, test=test)
    return {"threads": threads, "seed": seed, "fit_seconds": record.fit_seconds,
            "gan_seconds": record.timings["gan"], "tvd2": record.figures()["tvd2"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--adult", default=str(REPO.parent / "shared/data/adult.csv"))
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2, 4, 16])
    parser.add_argument("--seeds", type=int, default=1)
    args = parser.parse_args()

    runs = []
    with ProcessPoolExecutor(max_workers=1, max_tasks_per_child=1) as pool:
        for threads in args.threads:
            for seed in range(args.seeds):
                runs.append(pool.submit(one_run, args.adult, threads, seed).result())
                print(f"{threads} threads, seed {seed}: {runs[-1]['gan_seconds']:.1f} s "
                      f"training, {runs[-1]['fit_seconds']:.1f} s fit", flush=True)
    summary = {}
    for threads in args.threads:
        times = [r["gan_seconds"] for r in runs if r["threads"] == threads]
        summary[str(threads)] = {"gan_seconds_median": statistics.median(times),
                                 "min": min(times), "max": max(times)}
    out = REPO / "benchmarks" / "results" / "threads.json"
    out.write_text(json.dumps({
        "machine": {"platform": platform.platform(), "cores": os.cpu_count(),
                    "python": platform.python_version()},
        "protocol": "DESIGN.md's Adult split, DP-GAN defaults, ε = 1, δ = 1e-5",
        "summary": summary, "runs": runs}, indent=2) + "\n")
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
