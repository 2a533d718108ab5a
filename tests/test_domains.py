"""Learning domains under DP: what is kept, what leaks, and what it costs."""

import numpy as np
import pandas as pd
import pytest

from synth.errors import BudgetError
from synth.privacy.budget import Budget, Ledger
from synth.privacy.domains import (
    GRID,
    bounds_threshold,
    dp_bounds,
    keep_threshold,
    learn_domains,
    noisy_categories,
)
from synth.schema import OTHER, infer_schema, prepare


def test_a_category_seen_once_is_released_with_probability_delta():
    # the threshold's whole privacy argument: count 1 clears τ with probability exactly δ
    eps, delta = 1.0, 0.01
    rng = np.random.default_rng(0)
    trials = 100_000
    noisy = 1 + rng.laplace(0, 1 / eps, trials)
    rate = (noisy > keep_threshold(eps, delta)).mean()
    assert rate == pytest.approx(delta, rel=0.1)
    values = pd.Series(["rare"] + ["common"] * 500)
    released = sum("rare" in noisy_categories(values, eps, delta, rng) for _ in range(3000))
    assert released / 3000 < delta + 0.01


def test_common_categories_kept_and_other_always_present():
    rng = np.random.default_rng(1)
    values = pd.Series(["a"] * 1000 + ["b"] * 800 + ["c"] * 2)
    cats = noisy_categories(values, 1.0, 1e-6, rng)
    assert cats == ("a", "b", OTHER)
    # "other" is present even when nothing folded into it, so it reveals nothing
    assert noisy_categories(pd.Series(["a"] * 1000), 1.0, 1e-6, rng) == ("a", OTHER)


def test_bounds_contain_the_bulk_within_a_factor_of_two():
    rng = np.random.default_rng(2)
    x = rng.uniform(17, 90, 20_000)
    lo, hi = dp_bounds(x, 0.5, rng)
    assert 8 <= lo <= 17 and 64 <= hi <= 128
    assert lo in GRID and hi in GRID


def test_bounds_refuse_when_no_bin_can_clear_the_threshold():
    rng = np.random.default_rng(3)
    with pytest.raises(BudgetError, match="column 'age': too few rows"):
        dp_bounds(np.arange(20.0), 0.01, rng, "age")
    assert bounds_threshold(0.01) > 20


def test_learn_domains_spends_the_domain_share_and_marks_columns_learned():
    rng = np.random.default_rng(4)
    table = pd.DataFrame({"age": rng.integers(20, 60, 5000).astype(str),
                          "colour": rng.choice(["red", "blue", "green"], 5000)})
    schema = infer_schema(table)
    ledger = Ledger(Budget(1.0, 1e-5, {"domain": 0.4, "measure": 0.6}))
    learned = learn_domains(prepare(table, schema), schema, ledger, rng)
    assert learned.releasable and all(c.learned and not c.public for c in learned)
    assert learned["colour"].categories == ("blue", "green", "red", OTHER)
    assert learned["age"].lower <= 20 and learned["age"].upper >= 59
    assert ledger.spent("domain")[0] == pytest.approx(0.4)
    assert ledger.spent("measure") == (0, 0)
    assert {e.mechanism for e in ledger.entries} == {"laplace-threshold",
                                                     "laplace-histogram-bounds"}


def test_learn_domains_needs_a_domain_share():
    table = pd.DataFrame({"a": ["x", "y"] * 50, "b": ["1", "2"] * 50})
    schema = infer_schema(table)
    ledger = Ledger(Budget(1.0, 1e-5, {"measure": 1.0}))
    with pytest.raises(BudgetError, match=r"columns \['a', 'b'\] have data-derived domains"):
        learn_domains(prepare(table, schema), schema, ledger, np.random.default_rng(0))


def test_public_columns_cost_nothing():
    table = pd.DataFrame({"a": ["x", "y"] * 50, "b": ["1", "2"] * 50})
    schema = infer_schema(table).declare_public()
    ledger = Ledger(Budget(1.0, 1e-5, {"domain": 0.1, "measure": 0.9}))
    assert learn_domains(prepare(table, schema), schema, ledger,
                         np.random.default_rng(0)) is schema
    assert ledger.entries == []
