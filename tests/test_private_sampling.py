"""Private sampling's Algorithm 1 on small cubes: exact coefficients, convergent samples,
and the failures it must report."""

import numpy as np
import pytest

from synth.errors import SynthError
from synth.methods.private_sampling.algorithm import SamplingFailure, fit_density, subsets, walsh


def correlated(n=20000, p=8, seed=0):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, 1))
    return np.where(rng.normal(size=(n, p)) + 1.2 * z > 0.3, 1, -1).astype(np.int8)


def test_walsh_coefficients_give_the_marginals():
    """P(x_i = a, x_j = b) = ¼ (1 + a f̂(i) + b f̂(j) + ab f̂(ij)) for ±1 data."""
    x = correlated(2000, 4)
    sets = subsets(4, 2)
    assert sets[0] == () and len(sets) == 1 + 4 + 6
    f = dict(zip(sets, walsh(x, sets).mean(axis=0), strict=True))
    for a in (-1, 1):
        for b in (-1, 1):
            direct = np.mean((x[:, 0] == a) & (x[:, 2] == b))
            assert direct == pytest.approx(
                (1 + a * f[(0,)] + b * f[(2,)] + a * b * f[(0, 2)]) / 4, abs=1e-12)


def test_matches_low_order_coefficients_and_samples_converge():
    x = correlated()
    _, counts = np.unique(x, axis=0, return_counts=True)
    Delta = 1.05 * 2 ** 8 * counts.max() / len(x)  # ‖f_n‖∞ ≤ Δ/2^p holds
    rng = np.random.default_rng(1)
    fit = fit_density(x, 2, 256, 0.01, Delta, rng)
    sets = subsets(8, 2)
    target = walsh(x, sets).mean(axis=0)
    assert fit.shrinkage == pytest.approx(0, abs=1e-9) and fit.sigma_min >= fit.sigma_bound
    assert np.abs(walsh(fit.support, sets).T @ fit.h - target).max() < 1e-6
    assert fit.h.sum() == pytest.approx(1) and fit.h.min() >= 0
    errors = [np.abs(walsh(fit.sample(k, rng), sets).mean(axis=0) - target).max()
              for k in (500, 200_000)]
    assert errors[1] < 0.02 < errors[0] or errors[1] < errors[0] / 3


def test_a_tight_box_shrinks_toward_uniform():
    x = correlated(p=6)
    rng = np.random.default_rng(2)
    loose = fit_density(x, 2, 256, 0.01, 40.0, rng).shrinkage
    tight = fit_density(x, 2, 256, 0.01, 1.2, rng).shrinkage
    assert loose < tight <= 1


def test_failures_are_reported_not_hidden():
    x = correlated(500, 8)
    with pytest.raises(SamplingFailure, match="ill-conditioned"):
        fit_density(x, 2, 20, 0.01, 50.0, np.random.default_rng(0))  # m < C(8, ≤2) = 37
    with pytest.raises(SynthError, match="0 < δ < Δ"):
        fit_density(x, 2, 256, 0.5, 0.4, np.random.default_rng(0))
    with pytest.raises(SynthError, match="Δ ≥ 1 \\+ δ"):
        fit_density(x, 2, 256, 0.1, 1.05, np.random.default_rng(0))
