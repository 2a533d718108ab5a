"""Private sampling: how fast the Feasibility page recomputes, and Algorithm 1 at demo scale.

* page: an AppTest rerun of the Feasibility page after changing p (bounds, conditions and all
  four charts), median of 7;
* algorithm: Walsh features, conditioning, LP (HiGHS) and dual QP on a correlated ±1 table of
  20,000 rows, d = 2, m = 8·C(p, ≤2), for p = 8, 12, 16, 20 (median of 3 each).

Writes benchmarks/results/private_sampling.json.

    python benchmarks/private_sampling.py
"""

from __future__ import annotations

import json
import platform
import statistics
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
TARGETS = {"page_rerun_seconds": 1.0}


def page_seconds(repeats: int = 7) -> list[float]:
    from streamlit.testing.v1 import AppTest

    app = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    app.run()
    app.switch_page("app_pages/feasibility.py").run()
    times = []
    for i in range(repeats):
        box = app.number_input(key="fz:p")
        started = time.perf_counter()
        box.set_value(20 + i).run()
        times.append(time.perf_counter() - started)
        assert not app.exception
    return times


def algorithm_seconds(p: int, rng: np.random.Generator) -> dict:
    from synth.methods.private_sampling.algorithm import fit_density
    from synth.methods.private_sampling.bounds import walsh_count

    latent = rng.normal(size=(20_000, 1))
    cube = np.where(rng.normal(size=(20_000, p)) + 1.2 * latent > 0.3, 1, -1).astype(np.int8)
    _, counts = np.unique(cube, axis=0, return_counts=True)
    Delta = max(1.01, 1.05 * 2 ** p * counts.max() / len(cube))
    m = 8 * walsh_count(p, 2)
    runs = []
    for _ in range(3):
        started = time.perf_counter()
        fit = fit_density(cube, 2, m, 0.01, Delta, rng)
        runs.append(time.perf_counter() - started)
    return {"p": p, "m": m, "seconds": runs, "median_seconds": statistics.median(runs),
            "shrinkage": fit.shrinkage, "residual": fit.residual}


def main() -> None:
    page = page_seconds()
    rng = np.random.default_rng(0)
    algorithm = [algorithm_seconds(p, rng) for p in (8, 12, 16, 20)]
    record = {"machine": {"platform": platform.platform(), "python": platform.python_version()},
              "targets": TARGETS, "page_rerun_seconds": page,
              "page_rerun_median": statistics.median(page), "algorithm": algorithm}
    out = REPO / "benchmarks" / "results" / "private_sampling.json"
    out.write_text(json.dumps(record, indent=2) + "\n")
    print(json.dumps({k: v for k, v in record.items() if k != "machine"}, indent=2))


if __name__ == "__main__":
    main()
