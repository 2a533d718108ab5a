"""δ's split: a pure ε-DP stage (the rows stage's Laplace count, private sampling's Theorem
4.1) takes no δ, so the stages that use δ share all of it; ledgers written before δ could be
split apart from ε still re-account to what they state."""

import json
import math
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from synth.methods import make
from synth.privacy.budget import Budget, Ledger
from synth.privacy.composition import zcdp_to_dp
from synth.privacy.unit import ROWS, PrivacyUnit
from synth.runs import Run
from synth.schema import Column, Schema

from .conftest import REPO

K = 3
UNIT = PrivacyUnit("person", K)
SCHEMA = Schema((
    Column("colour", "categorical", categories=("red", "green", "blue"), public=True),
    Column("age", "numeric", lower=18, upper=80, integer=True, public=True)))


@pytest.fixture(scope="module")
def panel() -> pd.DataFrame:
    """200 people with 1 … 5 rows each."""
    rng = np.random.default_rng(7)
    counts = rng.integers(1, 6, 200)
    n = int(counts.sum())
    return pd.DataFrame({"person": np.repeat([f"p{i}" for i in range(200)], counts),
                         "colour": rng.choice(["red", "green", "blue"], n),
                         "age": rng.integers(18, 81, n)})


def _split_is_sound(budget: Budget) -> None:
    """ε as the shares say; the rows stage has no δ; the other stages share all of δ in the
    proportions of their ε shares."""
    allowances = {s: budget.allowance(s) for s in budget.shares}
    for stage, (eps, _) in allowances.items():
        assert eps == pytest.approx(budget.epsilon * budget.shares[stage])
    assert allowances[ROWS][1] == 0
    assert math.fsum(d for _, d in allowances.values()) == pytest.approx(budget.delta)
    others = {s: a for s, a in allowances.items() if s != ROWS}
    eps_rest = math.fsum(e for e, _ in others.values())
    for eps, delta in others.values():
        assert delta == pytest.approx(budget.delta * eps / eps_rest)


@pytest.mark.parametrize("method", ["independent", "gsd", "dpgan", "dpselect"])
def test_under_a_unit_of_k_rows_the_rows_stage_takes_no_delta(method):
    """Every method that takes units of k > 1 rows: its own split (with the rows stage, and a
    domain stage for a learned domain) gives the rows stage ε but no δ."""
    for schema in (SCHEMA, SCHEMA.declare_public(["age"])):
        budget = make(method).budget_for(Budget(1.0, 1e-5, unit=UNIT), schema)
        assert ROWS in budget.shares
        _split_is_sound(budget)


def test_shares_set_by_hand_keep_the_rows_stage_free_of_delta():
    """`--set share.STAGE=…` and the app's share sliders give shares of ε and δ together (a
    Run, as the CLI and the app make it): the δ split follows, with the rows stage zeroed."""
    schema = SCHEMA.declare_public(["age"])  # colour's categories learned: a domain stage
    for shares in ({"rows": 0.2}, {"domain": 0.3}, {"rows": 0.1, "domain": 0.1}):
        budget = Run("independent", schema, 2.0, 1e-6, shares=shares, unit=UNIT).budget
        assert {k: budget.shares[k] for k in shares} == pytest.approx(shares)
        _split_is_sound(budget)


def test_a_fit_under_a_unit_spends_all_of_delta_where_it_is_used(panel):
    """The rows entry spends no δ, and the zCDP stage converts at all of δ, so the run's
    ledger states the whole δ; written and read back, it re-accounts to the same."""
    budget = Budget(1.0, 1e-5, unit=UNIT)
    ledger = make("independent").fit(panel, SCHEMA, budget).ledger_
    rows = [e for e in ledger.entries if e.stage == ROWS]
    assert len(rows) == 1 and rows[0].delta == 0
    data = json.loads(json.dumps(ledger.to_dict()))
    assert data["total_delta"] == pytest.approx(budget.delta)
    again = Ledger.from_dict(data)
    assert again.budget == ledger.budget and again.to_dict() == ledger.to_dict()


def test_private_samplings_pure_stage_leaves_delta_to_the_domain():
    """Private sampling's stage is ε-DP by Theorem 4.1 (a PureDP event, or none at all):
    with a learned domain, the thresholded domain histogram gets all of δ."""
    schema = SCHEMA.declare_public(["age"])
    budget = make("private_sampling").budget_for(Budget(1.0, 1e-5), schema)
    assert budget.allowance("domain")[1] == pytest.approx(budget.delta)
    assert budget.allowance("sample") == (pytest.approx(budget.epsilon * 0.9), 0.0)


def _ledger(budget: dict, measure_delta: float) -> dict:
    """A ledger as `synth run --ledger` writes it for an independent run under a unit of 3
    rows: the rows stage's Laplace count and one Gaussian measurement (ρ = 1/72), its ε
    converted at the measure stage's δ ``measure_delta``; ``budget`` as written."""
    rows_eps, rho = 2 / 40.0, 2.0**2 / (2 * 12.0**2)
    measure_eps = zcdp_to_dp(rho, measure_delta)
    relation = UNIT.relation
    return {
        "total_epsilon": rows_eps + measure_eps, "total_delta": measure_delta,
        "guarantee": f"({rows_eps + measure_eps:.6g}, {measure_delta:.3g})-DP",
        "relation": relation, "noise": "fresh OS entropy", "budget": budget,
        "composition": "basic composition across stages; within a stage, its accountant",
        "stages": {"rows": {"accountant": "basic", "epsilon": rows_eps, "delta": 0.0},
                   "measure": {"accountant": "zcdp", "epsilon": measure_eps,
                               "delta": measure_delta}},
        "entries": [
            {"stage": "rows", "event": {"type": "laplace", "scale": 40.0, "sensitivity": 2.0},
             "relation": relation, "description": "row count", "epsilon": rows_eps,
             "delta": 0.0, "status": "charged"},
            {"stage": "measure", "event": {"type": "gaussian", "sigma": 12.0,
                                           "sensitivity": 2.0},
             "relation": relation, "description": "marginals", "epsilon": measure_eps,
             "delta": measure_delta, "status": "charged"}],
    }


def test_ledgers_old_and_new_re_account_to_what_they_state():
    """A ledger written before δ had a split of its own (no ``delta_shares``: δ split as ε,
    so the measure stage converted at 0.95 δ) and one written now (the rows stage's δ with
    the measure stage) each re-account to the totals they state, and are written back in
    their own format."""
    shares, unit = {"rows": 0.05, "measure": 0.95}, UNIT.to_dict()
    old = _ledger({"epsilon": 1.0, "delta": 1e-5, "shares": shares, "unit": unit}, 0.95e-5)
    new = _ledger({"epsilon": 1.0, "delta": 1e-5, "shares": shares, "unit": unit,
                   "delta_shares": {"rows": 0.0, "measure": 1.0}}, 1e-5)
    assert new["total_epsilon"] < old["total_epsilon"]  # the formats differ: so must ε
    for data in (old, new):
        again = Ledger.from_dict(json.loads(json.dumps(data))).to_dict()
        assert again["total_epsilon"] == pytest.approx(data["total_epsilon"], rel=1e-9)
        assert again["total_delta"] == pytest.approx(data["total_delta"], rel=1e-9)
        for stage, stated in data["stages"].items():
            assert again["stages"][stage]["epsilon"] == pytest.approx(stated["epsilon"])
            assert again["stages"][stage]["delta"] == pytest.approx(stated["delta"])
        assert again["budget"] == data["budget"]


def test_the_cli_splits_delta_the_same_way(panel, tmp_path):
    """`synth run --set share.rows=…` under a unit: the written ledger's rows stage spent no
    δ, the run's δ is whole, and the ledger says how δ was split."""
    panel.to_csv(tmp_path / "t.csv", index=False)
    SCHEMA.save(tmp_path / "s.json")
    res = subprocess.run(
        [sys.executable, "-m", "synth", "run", tmp_path / "t.csv", "--schema", tmp_path / "s.json",
         "--method", "independent", "--epsilon", "1", "--delta", "1e-6", "--privacy-unit",
         "person", "--max-rows-per-unit", str(K), "--set", "share.rows=0.1", "--out",
         tmp_path / "o.csv", "--ledger", tmp_path / "l.json", "--quiet"],
        capture_output=True, text=True, cwd=REPO, timeout=600)
    assert res.returncode == 0, res.stderr
    record = json.loads((tmp_path / "l.json").read_text())
    assert record["budget"]["shares"]["rows"] == pytest.approx(0.1)
    assert record["stages"]["rows"]["delta"] == 0
    assert record["total_delta"] == pytest.approx(1e-6)
    assert record["budget"]["delta_shares"] == {"rows": 0.0, "measure": 1.0}
    assert Ledger.from_dict(record).total_epsilon == pytest.approx(record["total_epsilon"])


def test_learning_only_numeric_bounds_takes_no_delta():
    """The audit: with only numeric bounds learned, the domain stage is Laplace alone (pure
    ε), yet it kept its share of δ and the Gaussian measurement was calibrated at 0.9 δ."""
    from synth.schema import infer_schema

    rng = np.random.default_rng(0)
    table = pd.DataFrame({"v": rng.integers(0, 100, 3000), "c": rng.choice(["a", "b"], 3000)})
    confirmed = infer_schema(table).confirm()
    numbers = confirmed.declare_public(["c"])  # only v's bounds are learned
    model = make("independent").fit(table, numbers, Budget(1.0, 1e-5))
    ledger = model.ledger_.to_dict()
    assert ledger["stages"]["domain"]["delta"] == 0
    assert ledger["total_delta"] == pytest.approx(1e-5)  # all of δ where it is used
    categories = confirmed.declare_public(["v"])  # c's categories are learned
    assert make("independent").budget_for(Budget(1.0, 1e-5), categories).allowance(
        "domain")[1] > 0  # thresholded categories use δ
