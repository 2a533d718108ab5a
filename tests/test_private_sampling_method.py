"""The private_sampling method: refused, or run with a ledger that says so, when Theorem 4.1
does not cover k; ε-DP and spent when it does."""

import json
import math

import numpy as np
import pandas as pd
import pytest

from synth.errors import BudgetError, ParameterError
from synth.methods import FitContext, make
from synth.plots import ledger_chart
from synth.privacy.budget import Budget, Ledger, epsilon_text
from synth.privacy.unit import Population
from synth.schema import CATEGORICAL, Column, Schema


@pytest.fixture
def small():
    rng = np.random.default_rng(0)
    n = 3000
    a = rng.choice(["x", "y"], n, p=[0.7, 0.3])
    b = np.where(a == "x", rng.choice(["u", "v", "w"], n, p=[0.6, 0.3, 0.1]),
                 rng.choice(["u", "v", "w"], n, p=[0.1, 0.3, 0.6]))
    c = rng.choice(["yes", "no"], n)
    table = pd.DataFrame({"a": a, "b": b, "c": c})
    schema = Schema(tuple(Column(name, CATEGORICAL, categories=tuple(sorted(set(table[name]))),
                                 public=True) for name in table))
    return table, schema


def fit(table, schema, epsilon=1.0, **params):
    model = make("private_sampling", params)
    model.fit(table, schema, Budget(epsilon, 0.0, model.default_shares(schema)),
              FitContext(postprocessing_seed=0))
    return model


def test_refuses_when_theorem_4_1_does_not_cover_k(small):
    table, schema = small
    with pytest.raises(BudgetError, match=r"Theorem 4.1 allows at most k = .* no DP guarantee"):
        fit(table, schema)
    model = make("private_sampling")  # the plan says so before anything is read
    planned = model.plan(Population(3000, 3000), schema,
                         model.budget_for(Budget(1.0, 0.0, {"sample": 1}), schema))
    assert "no DP guarantee" in str(planned.refusals[0])


def test_a_demonstration_run_says_no_guarantee(small):
    table, schema = small
    model = fit(table, schema, allow_no_guarantee=True)
    ledger = model.ledger_
    assert not ledger.guaranteed and ledger.total_epsilon == math.inf
    record = json.loads(json.dumps(ledger.to_dict()))  # valid JSON: no Infinity
    assert record["total_epsilon"] is None and record["guarantee"].startswith("no guarantee")
    assert record["entries"][0]["relation"].startswith("replace one")
    assert Ledger.from_dict(record).total_epsilon == math.inf
    assert epsilon_text(record["total_epsilon"]) == epsilon_text(math.inf) == "no guarantee"
    assert "no guarantee" in ledger_chart(record).layout.title.text  # what the app shows
    out = model.sample()
    assert len(out) == len(table) and set(out["b"]) <= {"u", "v", "w"}
    # the density matches the 2-way marginals: P(b = w | a = y) is far above P(b = w | a = x)
    shares = out.groupby("a")["b"].apply(lambda s: (s == "w").mean())
    assert shares["y"] > shares["x"] + 0.3  # real: 0.6 and 0.1
    assert model.density_.shrinkage < 0.1
    assert f"Δ = {4 * 2 ** 7 / 12:.3g}" in model.ledger_.entries[0].description


def test_within_the_bound_it_is_pure_dp_and_spends_epsilon(small):
    table, schema = small
    model = fit(table, schema, epsilon=1e8, d=1, k=10)  # absurd ε: the only way k ≥ 1 holds
    (entry,) = model.ledger_.entries
    assert entry.guarantee and entry.epsilon == 1e8 and entry.delta == 0
    assert model.ledger_.to_dict()["guarantee"].startswith("(1e+08, 0)-DP")
    assert len(model.release_) == 10 and len(model.sample(25)) == 25


@pytest.mark.parametrize(("params", "message"), [
    ({"accuracy_delta": 0.7}, "accuracy_delta"), ({"Delta": 1.005}, "Delta must be"),
    ({"d": 9}, "cannot exceed the 7 bits"), ({"m": 0}, "m must be"), ({"bins": 40}, None),
])
def test_bad_parameters_are_named(small, params, message):
    table, schema = small
    if message is None:  # numbers are binned, but this table has none: bins is harmless
        fit(table, schema, allow_no_guarantee=True, **params)
        return
    with pytest.raises(ParameterError, match=message):
        fit(table, schema, **params)


def test_too_many_bits_for_demo_scale(sample):
    table, schema = sample
    with pytest.raises(ParameterError, match=r"demo scale .* binarises to p = "):
        fit(table, schema)
