"""Learning domains under DP: what is kept, what leaks, and what it costs."""

import numpy as np
import pandas as pd
import pytest

from synth.errors import BudgetError
from synth.methods import make
from synth.privacy.budget import Budget, Ledger
from synth.privacy.domains import (
    GRID,
    bounds_threshold,
    dp_bounds,
    keep_threshold,
    laplace_scale,
    learn_domains,
    noisy_categories,
)
from synth.privacy.events import Laplace, LaplaceThreshold
from synth.schema import OTHER, infer_schema, prepare


def event(eps: float, delta: float) -> LaplaceThreshold:
    return LaplaceThreshold(laplace_scale(eps), 2.0, keep_threshold(eps, delta))


def test_a_category_seen_once_is_released_with_probability_delta():
    # the threshold's whole privacy argument: count 1 clears τ with probability exactly δ,
    # with the Laplace scale 2/ε of a histogram under replacement (L1 sensitivity 2)
    eps, delta = 1.0, 0.01
    assert laplace_scale(eps) == 2.0 and event(eps, delta).delta == pytest.approx(delta)
    rng = np.random.default_rng(0)
    noisy = 1 + rng.laplace(0, laplace_scale(eps), 100_000)
    assert (noisy > keep_threshold(eps, delta)).mean() == pytest.approx(delta, rel=0.1)
    values = pd.Series(["rare"] + ["common"] * 500)
    released = sum("rare" in noisy_categories(values, event(eps, delta)) for _ in range(3000))
    assert released / 3000 < delta + 0.01


def test_common_categories_kept_and_other_always_present():
    values = pd.Series(["a"] * 1000 + ["b"] * 800 + ["c"] * 2)
    assert noisy_categories(values, event(1.0, 1e-6)) == ("a", "b", OTHER)
    # "other" is present even when nothing folded into it, so it reveals nothing
    assert noisy_categories(pd.Series(["a"] * 1000), event(1.0, 1e-6)) == ("a", OTHER)


def test_bounds_contain_the_bulk_within_a_factor_of_two():
    x = np.random.default_rng(2).uniform(17, 90, 20_000)
    lo, hi = dp_bounds(x, 0.5)
    assert 8 <= lo <= 17 and 64 <= hi <= 128
    assert lo in GRID and hi in GRID


def test_bounds_refuse_when_no_bin_can_clear_the_threshold():
    """20 rows cannot clear τ > 20 at ε = 0.01: the only way through is a spurious bin, which
    the threshold allows with probability at most β = 1% (the noise is fresh, so one call
    failed about 1 time in 130). Over 200 calls, 11 or more spurious passes has probability
    about 1e-6."""
    assert bounds_threshold(0.01) > 20
    refused = 0
    for _ in range(200):
        try:
            dp_bounds(np.arange(20.0), 0.01, "age")
        except BudgetError as exc:
            assert "column 'age': too few rows" in str(exc)
            refused += 1
    assert refused >= 190


def test_learn_domains_spends_the_domain_share_and_marks_columns_learned():
    rng = np.random.default_rng(4)
    table = pd.DataFrame({"age": rng.integers(20, 60, 5000).astype(str),
                          "colour": rng.choice(["red", "blue", "green"], 5000)})
    schema = infer_schema(table)
    ledger = Ledger(Budget(1.0, 1e-5, {"domain": 0.4, "measure": 0.6}))
    learned = learn_domains(prepare(table, schema), schema, ledger)
    assert learned.releasable and all(c.learned and not c.public for c in learned)
    assert learned["colour"].categories == ("blue", "green", "red", OTHER)
    assert learned["age"].lower <= 20 and learned["age"].upper >= 59
    assert ledger.spent("domain")[0] == pytest.approx(0.4)
    assert ledger.spent("measure") == (0, 0)
    assert {type(e.event) for e in ledger.entries} == {LaplaceThreshold, Laplace}
    assert {e.event.sensitivity for e in ledger.entries} == {2.0}  # histograms, replace-one


def test_learn_domains_needs_a_domain_share():
    table = pd.DataFrame({"a": ["x", "y"] * 50, "b": ["1", "2"] * 50})
    schema = infer_schema(table)
    ledger = Ledger(Budget(1.0, 1e-5, {"measure": 1.0}))
    with pytest.raises(BudgetError, match=r"columns \['a', 'b'\] have data-derived domains"):
        learn_domains(prepare(table, schema), schema, ledger)


def test_categories_without_delta_are_refused_before_any_column_is_charged():
    """Found by an audit: a numeric column's bounds were charged, then the next (categorical)
    column refused for δ = 0, a refusal that needed no data, after spending."""
    table = pd.DataFrame({"age": [str(20 + i % 40) for i in range(600)],
                          "job": ["a", "b", "c"] * 200})
    schema = infer_schema(table)
    assert [c.kind for c in schema] == ["numeric", "categorical"]  # bounds first
    ledger = Ledger(Budget(1.0, 0.0, {"domain": 0.5, "measure": 0.5}))
    with pytest.raises(BudgetError, match=r"columns \['job'\]: learning categories privately "
                                          "needs δ > 0"):
        learn_domains(prepare(table, schema), schema, ledger)
    assert ledger.entries == []


def test_public_columns_cost_nothing():
    table = pd.DataFrame({"a": ["x", "y"] * 50, "b": ["1", "2"] * 50})
    schema = infer_schema(table).declare_public()
    ledger = Ledger(Budget(1.0, 1e-5, {"domain": 0.1, "measure": 0.9}))
    assert learn_domains(prepare(table, schema), schema, ledger) is schema
    assert ledger.entries == []


@pytest.mark.parametrize("method", ["independent", "gsd"])
def test_a_plan_its_shares_cannot_pay_is_refused_before_the_domains_are_charged(method):
    """Found by an audit: the bounds of a column were learned (ε spent), then the method's
    own Gaussian refused δ = 0, a refusal that needed no data."""
    table = pd.DataFrame({"age": [str(20 + i % 40) for i in range(600)],
                          "job": ["a", "b", "c"] * 200})
    schema = infer_schema(table).confirm().declare_public(["job"])  # age: bounds to learn
    model = make(method)
    budget = Budget(1.0, 0.0, model.default_shares(schema))
    with pytest.raises(BudgetError, match="needs δ > 0"):
        model.fit(table, schema, budget)
    assert model.ledger_.entries == []
