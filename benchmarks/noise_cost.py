"""What float-safe noise costs: the same fits with OpenDP's samplers and with numpy's.

The privacy noise comes from OpenDP (exact on floats, OS-seeded CSPRNG); numpy's textbook
samplers are what the code used before issue 15 and what the test-only switch
(:func:`synth.privacy.mechanisms.replayable_noise`) still uses. This times the stages that
draw noise on Adult (protocol train split, ε = 1) both ways, medians of ``--repeats`` runs,
and writes benchmarks/results/noise_cost.json:

* independent: the whole fit (one Gaussian draw over all cells);
* Private-GSD with a 100-generation search a round, so the selections and measurements
  dominate;
* DP-Select's selection stage (rows engine: one exponential-mechanism call per pick and
  section; GA engine: top-k and one final pick per generation), after a 1-epoch DP-GAN;
* the samplers alone: 1,000 Laplace / Gaussian values and one pick among 20 candidates.

    python benchmarks/noise_cost.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import platform
import statistics
import time
from pathlib import Path

import numpy as np

from synth.data import read_table
from synth.methods import FitContext, make
from synth.privacy import mechanisms
from synth.privacy.budget import Budget
from synth.protocol import adult_schema, protocol_split

REPO = Path(__file__).resolve().parent.parent
DELTA = 1e-5
CASES = {
    "independent": ("independent", {}, None),
    "gsd (100 generations a round)": ("gsd", {"max_generations": 100}, None),
    "dpselect rows: selection stage": ("dpselect", {"gan__epochs": 1}, "select"),
    "dpselect ga: selection stage": ("dpselect", {"gan__epochs": 1, "engine": "ga"}, "select"),
}


def timed(fit) -> float:
    started = time.perf_counter()
    fit()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--adult", default=str(REPO.parent / "shared/data/adult.csv"))
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    table = read_table(args.adult)
    train, _, _ = protocol_split(table)
    schema = adult_schema(table)
    results: dict = {}
    for name, (method, params, stage) in CASES.items():
        for source in ("opendp", "numpy"):
            seconds = []
            for seed in range(args.repeats):
                model = make(method, params)
                noise = (mechanisms.replayable_noise(seed) if source == "numpy"
                         else contextlib.nullcontext())
                with noise:
                    wall = timed(lambda model=model, seed=seed: model.fit(
                        train, schema, Budget(1.0, DELTA, model.default_shares(schema)),
                        FitContext(postprocessing_seed=seed)))
                seconds.append(model.timings_[stage] if stage else wall)
            results.setdefault(name, {})[source] = {
                "median_seconds": statistics.median(seconds), "min": min(seconds),
                "max": max(seconds)}
        print(name, results[name], flush=True)

    samplers = {"laplace, 1,000 values": lambda: mechanisms.laplace(np.zeros(1000), 2.0),
                "gaussian, 1,000 values": lambda: mechanisms.gaussian(np.zeros(1000), 41.0),
                "exponential, 20 candidates": lambda: mechanisms.exponential(np.zeros(20), 1.0,
                                                                              1.0)}
    for name, draw in samplers.items():
        for source in ("opendp", "numpy"):
            with (mechanisms.replayable_noise(0) if source == "numpy"
                  else contextlib.nullcontext()):
                draw()  # warm: build the measurement once
                times = [timed(draw) for _ in range(200)]
            results.setdefault(name, {})[source] = {"median_seconds": statistics.median(times)}
        print(name, results[name], flush=True)
    out = REPO / "benchmarks/results/noise_cost.json"
    out.write_text(json.dumps({"protocol": "Adult train split, ε = 1, δ = 1e-5",
                               "machine": {"python": platform.python_version(),
                                           "cpus": __import__("os").cpu_count()},
                               "repeats": args.repeats, "results": results}, indent=2) + "\n")


if __name__ == "__main__":
    main()
