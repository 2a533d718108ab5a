"""Weights over pool rows fitted to noisy answers (synth/methods/dpselect/weights.py), against
an independent solver, and the resampling's counts."""

import numpy as np
import pytest
from scipy.optimize import minimize

from synth.errors import ParameterError
from synth.methods.dpselect.weights import fit_weights, incidence, resample


def small_problem(seed: int, m: int = 40, marginals: int = 3, size: int = 4):
    rng = np.random.default_rng(seed)
    cells = rng.integers(size, size=(m, marginals)) + size * np.arange(marginals)
    a = incidence(cells, size * marginals)
    target = rng.dirichlet(np.ones(size), size=marginals).ravel()  # rarely reachable
    return a, target


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_mirror_descent_reaches_the_optimum_an_independent_solver_finds(seed):
    a, target = small_problem(seed)
    sigma = np.linspace(0.5, 2.0, a.shape[1])
    fit = fit_weights(a, target, sigma, iterations=20_000, tol=1e-14)
    dense = a.toarray()

    def loss(w):
        r = dense.T @ w - target
        return float(r @ (r / sigma**2))

    m = a.shape[0]
    best = minimize(loss, np.full(m, 1 / m), method="SLSQP", bounds=[(0, 1)] * m,
                    constraints=[{"type": "eq", "fun": lambda w: w.sum() - 1}],
                    options={"ftol": 1e-14, "maxiter": 2000})
    assert best.success
    assert fit.weights.min() >= 0 and fit.weights.sum() == pytest.approx(1)
    assert fit.loss == pytest.approx(loss(fit.weights))
    assert fit.loss <= best.fun + 1e-5 and fit.loss < fit.start_loss


def test_answers_the_pool_can_meet_are_met():
    rng = np.random.default_rng(5)
    a, _ = small_problem(7, m=60)
    hidden = rng.dirichlet(np.ones(60))
    fit = fit_weights(a, a.T @ hidden, iterations=20_000, tol=1e-15)
    assert fit.loss < 1e-8 * fit.start_loss


def test_the_prior_is_kept_when_it_already_fits():
    a, _ = small_problem(3)
    prior = np.random.default_rng(0).dirichlet(np.ones(a.shape[0]))
    fit = fit_weights(a, a.T @ prior, prior=prior)
    assert fit.loss == 0 and np.array_equal(fit.weights, prior)


@pytest.mark.parametrize("n", [1, 7, 1000])
def test_resampling_gives_each_row_floor_or_ceil_of_its_share(n):
    weights = np.random.default_rng(n).dirichlet(np.full(13, 0.5))
    counts = np.bincount(resample(weights, n, np.random.default_rng(1)), minlength=13)
    assert counts.sum() == n
    assert (counts >= np.floor(n * weights - 1e-9)).all()
    assert (counts <= np.ceil(n * weights + 1e-9)).all()


def test_bad_shapes_are_named():
    a, target = small_problem(0)
    with pytest.raises(ParameterError, match="answers"):
        fit_weights(a, target[:-1])
    with pytest.raises(ParameterError, match="prior"):
        fit_weights(a, target, prior=np.ones(a.shape[0]))
    with pytest.raises(ParameterError, match="cell ids"):
        incidence(np.array([[0, 9]]), 4)
