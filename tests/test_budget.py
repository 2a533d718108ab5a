"""Budget, shares and the ledger that refuses to overspend."""

import json
import math

import pytest

from synth.errors import BudgetError
from synth.privacy.budget import Budget, Ledger, LedgerEntry, default_delta, merge_shares


def entry(stage="all", eps=0.1, delta=0.0, mechanism="laplace"):
    return LedgerEntry(stage=stage, mechanism=mechanism, epsilon=eps, delta=delta,
                       accounting="pure DP")


@pytest.mark.parametrize("eps", [0, -1, float("nan"), float("inf"), "abc", None])
def test_budget_refuses_bad_epsilon(eps):
    with pytest.raises(BudgetError, match="epsilon"):
        Budget(eps, 1e-5)


@pytest.mark.parametrize("delta", [1, 1.5, -1e-9, float("nan"), "x"])
def test_budget_refuses_bad_delta(delta):
    with pytest.raises(BudgetError, match="delta"):
        Budget(1.0, delta)


def test_shares_must_sum_to_one_and_name_themselves():
    with pytest.raises(BudgetError, match=r"sum to 1, got 1.1 \(gan=0.5, select=0.6\)"):
        Budget(1.0, 1e-5, {"gan": 0.5, "select": 0.6})
    with pytest.raises(BudgetError, match="share 'gan' must lie in"):
        Budget(1.0, 1e-5, {"gan": -0.5, "select": 1.5})


def test_allowance_splits_epsilon_and_delta():
    b = Budget(2.0, 1e-5, {"domain": 0.25, "measure": 0.75})
    assert b.allowance("measure") == pytest.approx((1.5, 7.5e-6))
    with pytest.raises(BudgetError, match="no budget share named 'gan'"):
        b.allowance("gan")


def test_ledger_refuses_an_entry_over_its_share_and_keeps_earlier_ones():
    ledger = Ledger(Budget(1.0, 1e-5, {"a": 0.5, "b": 0.5}))
    ledger.spend(entry("a", 0.3))
    with pytest.raises(BudgetError, match=r"would spend ε=0\.3.*only ε=0\.2"):
        ledger.spend(entry("a", 0.3))
    ledger.spend(entry("a", 0.2))
    with pytest.raises(BudgetError, match="δ"):
        ledger.spend(entry("b", 0.1, delta=1e-5))
    assert ledger.total_epsilon == pytest.approx(0.5)
    assert len(ledger.entries) == 2


def test_ledger_total_never_exceeds_budget_over_many_small_entries():
    ledger = Ledger(Budget(1.0, 1e-5))
    k = 37
    for _ in range(k):
        ledger.spend(entry("all", 1.0 / k, 1e-5 / k))
    assert ledger.total_epsilon <= 1.0 * (1 + 1e-9)
    assert ledger.total_delta <= 1e-5 * (1 + 1e-9)
    with pytest.raises(BudgetError):
        ledger.spend(entry("all", 1e-6))


def test_ledger_events_and_json_round_trip():
    seen = []
    ledger = Ledger(Budget(1.0, 1e-5, {"x": 1.0}), on_spend=seen.append)
    e = LedgerEntry("x", "gaussian", 0.5, 5e-6, "zCDP", "histograms",
                    params={"sigma": 3.0, "rho": 0.01})
    ledger.spend(e)
    assert seen == [e]
    data = json.loads(json.dumps(ledger.to_dict()))
    assert data["total_epsilon"] == 0.5 and data["entries"][0]["params"]["sigma"] == 3.0
    again = Ledger.from_dict(data)
    assert again.entries == [e] and again.budget == ledger.budget


def test_merge_shares_fills_the_rest_in_proportion():
    defaults = {"domain": 0.1, "gan": 0.45, "select": 0.45}
    assert merge_shares(defaults, {}) == defaults
    merged = merge_shares(defaults, {"domain": 0.2})
    assert merged == pytest.approx({"domain": 0.2, "gan": 0.4, "select": 0.4})
    assert math.fsum(merged.values()) == pytest.approx(1)
    with pytest.raises(BudgetError, match="unknown budget share 'gpu'"):
        merge_shares(defaults, {"gpu": 0.5})
    with pytest.raises(BudgetError, match="leave nothing"):
        merge_shares(defaults, {"domain": 0.6, "gan": 0.4})


def test_default_delta_is_below_one_over_n():
    for n in (10, 4000, 32561, 10**7):
        assert 0 < default_delta(n) < 1 / n
