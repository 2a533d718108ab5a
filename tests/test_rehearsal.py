"""The rehearsal (issue 51): one paid stand-in, then every method tried on it for free."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from synth.account import TableAccount
from synth.data import sample_paths
from synth.errors import ParameterError
from synth.schema import infer_schema
from synth.store import RUN, SWEEP, RunStore
from synth.sweep import rehearse, stand_in_run, trial

from .conftest import REPO


def test_a_rehearsal_costs_its_stand_in_and_nothing_more(sample, tmp_path, monkeypatch):
    """However many methods and seeds are tried, the table's account is charged the stand-in's
    share of ε once; the sample's columns depend on each other, so MST beats independent on
    a stand-in that kept those dependences, and the rehearsal says so."""
    monkeypatch.setenv("SYNTH_HOME", str(tmp_path))
    table, schema = sample
    account, store = TableAccount.of(table, "census"), RunStore()
    found = rehearse(table, schema, trial(["independent", "mst"], 2.0, seeds=2), share=0.1,
                     account=account, store=store)
    usage = account.usage()
    assert usage.epsilon == pytest.approx(0.2) and usage.runs == 1
    paid, tried = store.list(account.key, RUN), store.list(account.key, SWEEP)
    assert len(paid) == 1 and paid[0].epsilon == pytest.approx(0.2)
    assert len(tried) == 1 and tried[0].epsilon == 0 and tried[0].delta == 0
    assert tried[0].configuration["stand_in"]["run"] == paid[0].id
    assert found.stand_in.ledger["total_epsilon"] == pytest.approx(0.2)
    assert len(found.stand_in.synthetic) == len(table)
    assert len(found.runs) == 4 and found.runs["error"].isna().all()
    assert all(found.runs["ledger_epsilon"] <= 2.0 + 1e-9)  # each at the rehearsed ε
    tvd = found.predicted.set_index("method")["tvd2"]
    assert found.recommended == "mst" and tvd["mst"] < tvd["independent"], tvd


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"share": 1.0}, "share must be between 0 and 1"),
    ({"share": 0.0}, "share must be between 0 and 1"),
    ({"epsilon": -1.0}, "epsilon must be positive"),
    ({"methods": ["nope"]}, "unknown method 'nope'"),
    ({"methods": []}, "at least one method"),
])
def test_a_bad_rehearsal_is_refused_before_anything_is_spent(sample, tmp_path, monkeypatch,
                                                             kwargs, message):
    monkeypatch.setenv("SYNTH_HOME", str(tmp_path))
    table, schema = sample
    account = TableAccount.of(table, "census")
    asked = {"epsilon": 1.0, "methods": ["independent"], "share": 0.1, **kwargs}
    with pytest.raises(ParameterError, match=message):
        rehearse(table, schema, trial(asked["methods"], asked["epsilon"]), asked["share"],
                 account=account)
    assert account.usage().epsilon == 0


def test_the_cli_prints_each_methods_prediction_and_its_pick(tmp_path):
    data, schema = sample_paths()
    out = subprocess.run(
        [sys.executable, "-m", "synth", "rehearse", str(data), "--schema", str(schema),
         "--epsilon", "1", "--share", "0.2", "--methods", "independent", "mst", "--json",
         "--quiet"], capture_output=True, text=True, cwd=REPO,
        env={**os.environ, "SYNTH_HOME": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    found = json.loads(out.stdout)
    assert found["stand_in"]["method"] == "aim"
    assert found["stand_in"]["epsilon"] == pytest.approx(0.2)
    assert set(found["predicted"]) == {"independent", "mst"}
    best = min(found["predicted"], key=lambda m: found["predicted"][m]["tvd2"])
    assert found["recommended"] == best
    assert "smoother than your table" in found["caveat"]


def test_a_rehearsal_for_people_or_no_workers_is_refused_before_anything_is_spent(
        sample, tmp_path, monkeypatch):
    """A stand-in protects rows: runs that claim to protect people are refused, as is a
    worker count joblib would refuse only after the stand-in was paid for."""
    from synth.privacy.unit import PrivacyUnit
    from synth.sweep import grid

    monkeypatch.setenv("SYNTH_HOME", str(tmp_path))
    table, schema = sample
    account = TableAccount.of(table, "census")
    people = grid(["independent"], [1.0], 1, unit=PrivacyUnit(schema.names[0], 2))
    with pytest.raises(ParameterError, match="protects rows, not people"):
        rehearse(table, schema, people, account=account)
    with pytest.raises(ParameterError, match="n_jobs must be"):
        rehearse(table, schema, trial(["independent"]), account=account, n_jobs=0)
    assert account.usage().epsilon == 0


def test_a_rehearsal_none_of_whose_runs_could_run_is_refused_unpaid(sample, tmp_path,
                                                                    monkeypatch):
    """Each tried run is planned on the stand-in's public facts before the stand-in is paid
    for: a grid that could only fail there costs nothing, and the refusal names the method."""
    monkeypatch.setenv("SYNTH_HOME", str(tmp_path))
    table, schema = sample
    account = TableAccount.of(table, "census")
    doomed = trial(["gsd"], 1.0, seeds=1, fixed={"gsd": {"rows": 10**9}})
    with pytest.raises(ParameterError, match="nothing was spent: gsd: rows = 1,000,000,000"):
        rehearse(table, schema, doomed, account=account)
    assert account.usage().epsilon == 0


def _heavy(rows: int) -> pd.DataFrame:
    """Ages, a heavy-tailed amount and a category list, every domain private (learned)."""
    rng = np.random.default_rng(0)
    return pd.DataFrame({"age": rng.integers(18, 90, rows),
                         "amount": np.round(rng.lognormal(5, 1.5, rows), 2),
                         "kind": rng.choice(["a", "b", "c"], rows)})


def test_a_small_stand_in_gives_its_learned_bounds_the_share_they_need(tmp_path, monkeypatch):
    """At a stand-in's small ε the default domain share would learn bounds that are noise (the
    plan refuses them): the stand-in takes the smallest domain share that clears the plan, out
    of the same ε, and its bounds hold the bulk of a heavy-tailed column."""
    from synth.privacy.budget import default_delta
    from synth.runs import Run

    monkeypatch.setenv("SYNTH_HOME", str(tmp_path))
    table = _heavy(5_000)
    schema = infer_schema(table).confirm()
    delta = default_delta(len(table))
    assert Run("aim", schema, 0.3, delta, rows=len(table)).plan.refusals  # the default share
    account = TableAccount.of(table, "heavy")
    found = rehearse(table, schema, trial(["independent"], 1.0), share=0.3, account=account)
    domain = found.stand_in.shares["domain"]
    assert 0.2 < domain <= 0.9
    assert not Run("aim", schema, 0.3, delta, shares={"domain": domain},
                   rows=len(table)).plan.refusals
    assert Run("aim", schema, 0.3, delta, shares={"domain": round(domain - 0.05, 2)},
               rows=len(table)).plan.refusals  # the smallest: a step less is refused
    other = table.assign(amount=table["amount"] * 3.7, age=table["age"] + 5)  # other values
    assert stand_in_run("aim", infer_schema(other).confirm(), 0.3, delta,
                        len(other)).budget.shares["domain"] == domain  # public facts decide
    assert account.usage().epsilon == pytest.approx(0.3)
    assert found.stand_in.ledger["total_epsilon"] == pytest.approx(0.3)
    released = found.stand_in.schema["amount"]
    inside = table["amount"].between(released.lower, released.upper).mean()
    assert inside >= 0.8, (released.lower, released.upper, inside)


def test_a_rehearsal_on_proposals_read_off_the_table_is_refused_unpaid(tmp_path, monkeypatch):
    """An unconfirmed schema's integer flags and missing policies are the table's: they may
    not steer the stand-in's plan, so the rehearsal is refused before anything is charged."""
    from synth.errors import SchemaError

    monkeypatch.setenv("SYNTH_HOME", str(tmp_path))
    table = _heavy(2_000)
    account = TableAccount.of(table, "heavy")
    with pytest.raises(SchemaError, match="proposals"):
        rehearse(table, infer_schema(table), trial(["independent"], 1.0), account=account)
    assert account.usage().runs == 0  # refused before the stand-in's charge was reserved


def test_a_stand_in_no_domain_share_can_clear_is_refused_unpaid(tmp_path, monkeypatch):
    """Where no domain share makes the stand-in's bounds more than noise, the rehearsal is
    refused by the stand-in's own plan, its ways out said in the stand-in's ε, before
    anything is read."""
    from synth.errors import BudgetError
    from synth.privacy.budget import default_delta
    from synth.runs import Run

    monkeypatch.setenv("SYNTH_HOME", str(tmp_path))
    table = _heavy(2_000)
    schema = infer_schema(table).confirm()
    account = TableAccount.of(table, "heavy")
    with pytest.raises(BudgetError, match="would be noise") as refused:
        rehearse(table, schema, trial(["independent"], 4.0), share=0.05, account=account)
    said = str(refused.value)
    assert "at ε = 0.2 (a share of 0.05 of ε = 4)" in said
    assert "any domain share up to 0.9" in said and "the stand-in's" in said
    assert Run("aim", schema, 0.2, default_delta(len(table)), shares={"domain": 0.9},
               rows=len(table)).plan.refusals  # every share was refused, the largest too
    assert account.usage().epsilon == 0
