"""DP mechanisms as pure functions of (data-derived values, privacy parameter, rng).

They do not touch the ledger: the caller spends first (so a refused entry means the mechanism
never runs), then calls the mechanism. Arguments always come in the order: data-derived
values, privacy parameter (ε or ρ), sensitivity, rng. Selection mechanisms work on the last
axis of ``scores``, so a batch of independent selections is one call.
"""

from __future__ import annotations

import math

import numpy as np

from synth.errors import ParameterError
from synth.privacy.budget import check_positive

__all__ = [
    "exponential",
    "exponential_top_k",
    "gaussian",
    "gaussian_sigma",
    "laplace",
    "permute_and_flip",
    "report_noisy_max",
]


def _positive(value: float, name: str) -> float:
    return check_positive(value, name, ParameterError)


def _scores(scores: np.ndarray) -> np.ndarray:
    s = np.asarray(scores, dtype=float)
    if s.ndim == 0 or s.shape[-1] == 0:
        raise ParameterError("a selection needs at least one candidate score")
    if np.isnan(s).any() or np.isposinf(s).any():
        raise ParameterError("candidate scores must be finite (−inf marks an excluded candidate)")
    if np.isneginf(s).all(axis=-1).any():
        raise ParameterError("every candidate is excluded (all scores are −inf)")
    return s


def exponential(scores, epsilon: float, sensitivity: float, rng: np.random.Generator):
    """Exponential mechanism, Pr[i] ∝ exp(ε·s_i / (2Δ)), by the Gumbel-max trick.

    Adding Gumbel noise to the scaled scores and taking the argmax draws exactly from the
    softmax without ever exponentiating, so huge score ranges cannot overflow. ε-DP and ε-BR.
    """
    s = _scores(scores)
    scale = _positive(epsilon, "epsilon") / (2 * _positive(sensitivity, "sensitivity"))
    return np.argmax(s * scale + rng.gumbel(size=s.shape), axis=-1)


def exponential_top_k(scores, k: int, epsilon: float, sensitivity: float,
                      rng: np.random.Generator) -> np.ndarray:
    """k picks without replacement, each an ε-exponential mechanism (peeling).

    One-shot Gumbel top-k equals k sequential peels in distribution (Durfee–Rogers), so the
    cost is k ε-BR selections. Returns indices in pick order.
    """
    s = _scores(scores)
    if s.ndim != 1:
        raise ParameterError("exponential_top_k takes a 1-D score vector")
    if not 1 <= k <= np.isfinite(s).sum():
        raise ParameterError(f"k must be between 1 and the number of candidates, got {k}")
    scale = _positive(epsilon, "epsilon") / (2 * _positive(sensitivity, "sensitivity"))
    noisy = s * scale + rng.gumbel(size=s.shape)
    top = np.argpartition(-noisy, k - 1)[:k]
    return top[np.argsort(-noisy[top], kind="stable")]


def permute_and_flip(scores, epsilon: float, sensitivity: float, rng: np.random.Generator):
    """Permute-and-flip (McKenna–Sheldon), as report-noisy-max with Exponential(2Δ/ε) noise.

    ε-DP and never worse than the exponential mechanism in expected score (it is not ε-BR).
    """
    s = _scores(scores)
    scale = 2 * _positive(sensitivity, "sensitivity") / _positive(epsilon, "epsilon")
    return np.argmax(s + rng.exponential(scale, size=s.shape), axis=-1)


def report_noisy_max(scores, epsilon: float, sensitivity: float, rng: np.random.Generator):
    """Report-noisy-max with Laplace(2Δ/ε) noise: ε-DP for any scores of sensitivity Δ."""
    s = _scores(scores)
    scale = 2 * _positive(sensitivity, "sensitivity") / _positive(epsilon, "epsilon")
    return np.argmax(s + rng.laplace(0.0, scale, size=s.shape), axis=-1)


def laplace(values, epsilon: float, sensitivity: float, rng: np.random.Generator) -> np.ndarray:
    """values + Laplace(Δ₁/ε): ε-DP for a vector of L1 sensitivity Δ₁."""
    v = np.asarray(values, dtype=float)
    scale = _positive(sensitivity, "sensitivity") / _positive(epsilon, "epsilon")
    return v + rng.laplace(0.0, scale, size=v.shape)


def gaussian_sigma(rho: float, sensitivity: float) -> float:
    """σ = Δ₂/√(2ρ): the Gaussian mechanism with this σ is ρ-zCDP."""
    return _positive(sensitivity, "sensitivity") / math.sqrt(2 * _positive(rho, "rho"))


def gaussian(values, rho: float, sensitivity: float, rng: np.random.Generator) -> np.ndarray:
    """values + N(0, σ²), σ = Δ₂/√(2ρ): ρ-zCDP for a vector of L2 sensitivity Δ₂."""
    v = np.asarray(values, dtype=float)
    return v + rng.normal(0.0, gaussian_sigma(rho, sensitivity), size=v.shape)
