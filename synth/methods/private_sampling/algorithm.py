"""Private sampling's algorithm (Boedihardjo–Strohmer–Vershynin, Algorithm 1) on the cube
{−1, 1}^p, at demo scale.

Draw m points S uniformly; check that the Walsh matrix of S is well conditioned
(σ_min ≥ √m/(2e^d)); find by LP (SciPy's HiGHS) the least shrinkage λ toward the uniform
density on S for which a density on S with the data's degree-≤d Walsh coefficients fits the
box [2δ/m, (Δ−δ)/m]; then take by QP the density closest to uniform with those coefficients in
[δ/m, Δ/m], solved through its l-dimensional dual (L-BFGS-B); release k draws from it. The
cube is never enumerated: coefficients are means of products of columns. The bounds that make
this DP or accurate are in :mod:`.bounds`; see the note on private sampling for the
paper's typos fixed here (the LP's λ column and right-hand side).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from synth.encoding import Discretizer
from synth.errors import SynthError
from synth.missing import model_frame, model_schema
from synth.schema import Schema

CHUNK = 4096  # rows per block when forming Walsh features


class SamplingFailure(SynthError):
    """Algorithm 1 stopped: S was ill-conditioned, or a solver failed."""


def subsets(p: int, d: int) -> list[tuple[int, ...]]:
    """Every J ⊆ [p] with |J| ≤ d, the empty set first, then by size."""
    return [J for size in range(d + 1) for J in itertools.combinations(range(p), size)]


def walsh(points: np.ndarray, sets: list[tuple[int, ...]]) -> np.ndarray:
    """(N, l) values w_J(x) = Π_{j∈J} x_j of ±1 points, one column per set."""
    out = np.empty((len(points), len(sets)))
    by_size: dict[int, list[int]] = {}
    for i, J in enumerate(sets):
        by_size.setdefault(len(J), []).append(i)
    x = points.astype(np.float64)
    for size, cols in by_size.items():
        if size == 0:
            out[:, cols] = 1.0
            continue
        idx = np.array([sets[c] for c in cols])
        for start in range(0, len(x), CHUNK):
            block = x[start:start + CHUNK]
            out[start:start + CHUNK, cols] = np.prod(block[:, idx], axis=2)
    return out


@dataclass(frozen=True)
class Density:
    """What Algorithm 1 found: a density on the reduced space S, and how it got there."""

    support: np.ndarray  # (m, p) the points of S
    h: np.ndarray  # (m,) the density h* on S (sums to 1)
    shrinkage: float  # λ of step 4
    sigma_min: float  # smallest singular value of the Walsh matrix of S
    sigma_bound: float  # step 2's threshold √m/(2e^d)
    residual: float  # max |coefficient of h* − target|

    def sample(self, k: int, rng: np.random.Generator) -> np.ndarray:
        return self.support[rng.choice(len(self.h), size=k, p=self.h)]


def fit_density(data: np.ndarray, d: int, m: int, delta: float, Delta: float,
                rng: np.random.Generator) -> Density:
    """Steps 1–5 of Algorithm 1 for ±1 data of shape (n, p)."""
    if not 0 < delta < Delta:
        raise SynthError(f"Algorithm 1 needs 0 < δ < Δ, got δ={delta!r}, Δ={Delta!r}")
    if not (delta <= 0.5 and Delta >= 1 + delta):  # else λ = 1 may not fit the box
        raise SynthError(f"the shrinkage LP needs δ ≤ 1/2 and Δ ≥ 1 + δ, got δ={delta!r}, "
                         f"Δ={Delta!r}")
    p = data.shape[1]
    sets = subsets(p, d)
    target = walsh(data, sets).mean(axis=0)  # f̂, with f̂(∅) = 1
    support = rng.choice(np.array([-1, 1], dtype=np.int8), size=(m, p))
    W = walsh(support, sets).T  # (l, m)
    sigma = math.sqrt(max(np.linalg.eigvalsh(W @ W.T)[0], 0.0)) if m >= len(sets) else 0.0
    bound = math.sqrt(m) / (2 * math.exp(d))
    if sigma < bound:
        raise SamplingFailure(f"S is ill-conditioned: σ_min = {sigma:.3g} < √m/(2e^d) = "
                              f"{bound:.3g} (Algorithm 1 fails; try a larger m)")
    uniform = W.mean(axis=1)  # û
    A = W / m  # on g = m·h, so that the box is [2δ, Δ − δ] rather than 1e-9-sized
    from scipy.optimize import linprog  # deferred: 0.4 s that other commands skip

    lp = linprog(np.r_[1.0, np.zeros(m)], A_eq=np.hstack([(target - uniform)[:, None], A]),
                 b_eq=target, bounds=[(0, 1)] + [(2 * delta, Delta - delta)] * m,
                 method="highs")
    if lp.status != 0:
        raise SamplingFailure(f"the shrinkage LP failed: {lp.message}")
    lam = float(lp.x[0])
    b = (1 - lam) * target + lam * uniform

    def dual(nu: np.ndarray) -> tuple[float, np.ndarray]:
        g = np.clip(1 + A.T @ nu, delta, Delta)
        gap = A @ g - b
        return -(0.5 * np.sum((g - 1) ** 2) - nu @ gap), gap

    from scipy.optimize import minimize  # deferred, as above

    nu = minimize(dual, np.zeros(len(b)), jac=True, method="L-BFGS-B",
                  options={"maxiter": 5000, "ftol": 1e-15, "gtol": 1e-12}).x
    g = np.clip(1 + A.T @ nu, delta, Delta)
    h = g / g.sum()
    return Density(support, h, lam, sigma, bound, float(np.abs(W @ h - b).max()))


def profile(table: pd.DataFrame, schema: Schema, bins: int = 10) -> tuple[int, float]:
    """(p, ‖f_n‖∞) of a table one-hot encoded on its schema (numbers in ``bins`` bins): the
    Feasibility page's "current table" preset. It reads the private table, unprotected."""
    coder = Discretizer(model_schema(schema), bins=bins)
    codes = coder.codes(model_frame(table, schema))
    _, counts = np.unique(codes, axis=0, return_counts=True)
    return int(coder.sizes.sum()), float(counts.max() / len(codes))
