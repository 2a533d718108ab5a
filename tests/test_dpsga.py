"""The DP simple GA: its budget, its operators, and one of the paper's own problems."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from synth.errors import BudgetError, ParameterError
from synth.privacy.composition import bounded_range, per_step_epsilon
from synth.privacy.dpsga import RealGenes, default_generations, dpsga
from synth.privacy.mechanisms import exponential
from synth.schema import CATEGORICAL


def test_budget_is_n_bounded_range_selections():
    genes = RealGenes(3)
    result = dpsga(lambda pop: -np.abs(pop).sum(1), 0.01, genes, 1.0, 1e-5,
                   np.random.default_rng(0), generations=20, parents=5)
    assert result.selections == 20 * 5 + 1
    assert result.epsilon_per_selection == per_step_epsilon(1.0, 101, 1e-5, "bounded_range")
    assert result.epsilon == bounded_range(result.epsilon_per_selection, 101, 1e-5) <= 1.0


def test_paper_defaults_by_epsilon():
    assert [default_generations(e) for e in (0.01, 0.1, 1.0, 10.0, 100.0)] == [
        10, 20, 75, 120, 120]


def test_huge_epsilon_finds_the_optimum_of_a_toy():
    """Maximise −‖x − t‖₁ over [−1, 1]^5: with ε → ∞ the selections are exact."""
    target = np.array([0.5, -0.25, 0.0, 0.75, -1.0])
    result = dpsga(lambda pop: -np.abs(pop - target).sum(1), 1.0, RealGenes(5), 1e6, 1e-5,
                   np.random.default_rng(1), generations=150)
    assert np.abs(result.best - target).sum() < 0.1
    assert result.history[-1] >= result.history[0]


@pytest.mark.parametrize("kwargs, error, message", [
    ({"generations": -1}, ParameterError, "generations \\(N_g\\) must be an integer ≥ 0"),
    ({"parents": 300}, ParameterError, "cannot exceed the population"),
    ({"p_c": 1.5}, ParameterError, "p_c must lie in"),
    ({"epsilon": 0}, BudgetError, "epsilon must be a finite number > 0"),
])
def test_bad_parameters_are_named(kwargs, error, message):
    args = {"epsilon": 1.0, **kwargs}
    eps = args.pop("epsilon")
    with pytest.raises(error, match=message):
        dpsga(lambda p: p.sum(1), 1.0, RealGenes(2), eps, 1e-5, np.random.default_rng(0),
              **args)


def _design(frame: pd.DataFrame, schema) -> tuple[np.ndarray, np.ndarray]:
    """One-hot categoricals and numbers scaled by their public bounds; y = income > 50K."""
    parts = []
    for col in schema:
        if col.name == "income":
            continue
        values = frame[col.name]
        if col.kind == CATEGORICAL:
            parts.append(pd.get_dummies(pd.Categorical(values, categories=col.categories))
                         .to_numpy(float))
        else:
            parts.append(((values.to_numpy(float) - col.lower) / (col.upper - col.lower))[:, None])
    return np.hstack(parts), (frame["income"].astype(str).str.contains(">")).to_numpy()


def test_private_logistic_regression_beats_the_subsampled_em(adult_parts, adult_public):
    """The paper's problem (§2): zero-one loss, Δ = 1/n, weights in [−1, 1]^(d+1). For
    ε ≥ 1 the GA beats the exponential mechanism over 1,000 random models, as reported, and
    stays below the non-private model."""
    from sklearn.linear_model import LogisticRegression

    train, _, test = adult_parts
    x, y = _design(train, adult_public)
    xt, yt = _design(test, adult_public)

    def accuracy(w, features, labels):
        return ((features @ w[..., :-1].T + w[..., -1] > 0) == labels[:, None]).mean(0)

    def utility(pop):
        return accuracy(pop, x, y)  # −(zero-one loss) + 1: same sensitivity 1/n

    genes = RealGenes(x.shape[1] + 1)
    plain = LogisticRegression(max_iter=2000).fit(x, y).score(xt, yt)
    for eps in (1.0, 4.0):
        ga, em = [], []
        for seed in range(3):
            rng = np.random.default_rng(seed)
            init = np.zeros((10, genes.length))  # the paper seeds 10 zero vectors
            result = dpsga(utility, 1 / len(x), genes, eps, 1e-5, rng, init=init)
            ga.append(accuracy(result.best[None], xt, yt)[0])
            candidates = genes.random(1000, rng)
            em.append(accuracy(candidates[exponential(utility(candidates), eps, 1 / len(x))][None],
                               xt, yt)[0])
        assert np.mean(ga) > np.mean(em) + 0.01, (eps, ga, em)
        assert np.mean(ga) < plain
