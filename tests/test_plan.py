"""The plan: refusals a run can know from public facts come before its first charge, and the
app's Run button reads the same plan (issue 33, items 2, 5 and 8)."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from synth.account import Store, TableAccount
from synth.errors import BudgetError, ParameterError
from synth.methods import make
from synth.privacy.budget import Budget
from synth.privacy.unit import Population, PrivacyUnit
from synth.runs import run, split
from synth.schema import infer_schema

from .conftest import REPO


def customers(n: int = 2000, seed: int = 0) -> pd.DataFrame:
    """A steward's table with no codebook: six numbers, three categories, a target."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "age": rng.integers(18, 90, n), "income": rng.gamma(2, 20_000, n).round(),
        "visits": rng.poisson(3, n), "tenure": rng.integers(0, 40, n),
        "balance": rng.normal(1_000, 3_000, n).round(), "score": rng.integers(300, 850, n),
        "city": rng.choice(list("ABCDEFGH"), n), "plan": rng.choice(["basic", "plus"], n),
        "churn": rng.choice(["yes", "no"], n)})


@pytest.fixture
def store(tmp_path):
    return Store(tmp_path / "account.sqlite")


def test_a_domain_run_that_cannot_succeed_is_refused_before_any_charge(store):
    """The steward's walk: with the defaults (ε = 1, domain share 0.1) on 2,000 rows with
    private domains, independent spent ε = 0.0333 and then failed ('a bin needs about 1601
    rows at ε = 0.0111'). The threshold and n are public: refuse first, spend nothing."""
    table = customers()
    schema = infer_schema(table, target="churn").confirm()  # every domain learned privately
    private, _ = split(table, schema)
    account = TableAccount.of(table, "customers.csv", store)
    with pytest.raises(BudgetError, match="the bounds would be noise") as refused:
        run(private, schema, "independent", 1.0, 1e-5, account=account, measure=False)
    assert "declare their bounds public" in str(refused.value)
    assert "'age'" in str(refused.value)  # names the columns
    assert store.usage(account.key) is None or store.usage(account.key).runs == 0
    model = make("independent")  # and a fit from a notebook: no entry either
    with pytest.raises(BudgetError, match="the bounds would be noise"):
        model.fit(private, schema, Budget(1.0, 1e-5))
    assert not model.ledger_.entries


def test_the_refusal_names_a_domain_share_that_would_do():
    """The advice is checked, not copied: the share it names gives a plan without refusal."""
    schema = infer_schema(customers(), target="churn").confirm()
    people = Population(5000, 5000)
    model = make("independent")
    budget = model.budget_for(Budget(1.0, 1e-5), schema)
    refused = model.plan(people, schema, budget)
    share = float(re.search(r"give the domain share ([\d.]+) of ε or more",
                            str(refused.refusals[0]))[1])
    advised = model.budget_for(Budget(1.0, 1e-5, {"domain": share, "measure": 1 - share}),
                               schema)
    assert share > budget.shares["domain"]
    assert not model.plan(people, schema, advised).refusals
    assert round(share / 0.05, 6).is_integer()  # a value the app's slider can hold
    public = schema.declare_public(schema.names)  # or public bounds: nothing to learn
    assert not model.plan(people, public, model.budget_for(Budget(1.0, 1e-5), public)).refusals


def test_the_advice_for_a_small_loss_succeeds_on_negatives_and_long_tails():
    """The steward's walk: at the share that only cleared the refusal (0.15), a balance
    column with negatives and a long tail failed after spending. The refusal's second
    advice (what keeps the loss under a tenth) runs on such a table, on every draw of fresh
    noise, and its bounds keep the balance's negative values."""
    table = customers()
    schema = infer_schema(table, target="churn").confirm()
    private, _ = split(table, schema)
    model = make("independent")
    refused = str(model.plan(Population(len(private), len(private)), schema,
                       model.budget_for(Budget(1.0, 1e-5), schema)).refusals[0])
    advice = re.search(r"\((raise ε to|give the domain share) ([\d.]+) .*the loss under",
                       refused)
    epsilon, share = ((float(advice[2]), 0.9) if advice[1] == "raise ε to"
                      else (1.0, float(advice[2])))
    for _ in range(3):
        record = run(private, schema, "independent", epsilon, 1e-5, shares={"domain": share},
                     measure=False)
        assert record.schema.releasable and len(record.synthetic) == len(private)
        assert record.schema["balance"].lower < 0 < record.schema["balance"].upper


def test_a_run_whose_success_depends_on_the_data_says_so_first():
    schema = infer_schema(customers(), target="churn").confirm()
    model = make("independent")
    budget = model.budget_for(Budget(1.0, 1e-5, {"domain": 0.5, "measure": 0.5}), schema)
    said = model.plan(Population(5000, 5000), schema, budget)
    assert not said.refusals and any("a bound may cut off up to" in d for d in said.doubts)


def test_units_bound_the_rows_a_plan_may_count():
    """Under a unit, the rows after bounding are private: the plan counts k·U, never them."""
    schema = infer_schema(customers(), target="churn").confirm()
    model = make("independent")
    unit = PrivacyUnit("person", 3)
    budget = model.budget_for(Budget(1.0, 1e-5, {"domain": 0.5, "rows": 0.05,
                                                 "measure": 0.45}, unit), schema)
    few = model.plan(Population(300, 300, 3), schema, budget)
    many = model.plan(Population(900, 300, 3), schema, budget)
    # the same U and k: the same plan, however many rows bounding kept
    assert list(map(str, few.refusals)) == list(map(str, many.refusals)) and few.refusals
    assert "of the 900 rows" in str(few.refusals[0])


def test_private_sampling_over_20_bits_is_refused_before_a_charge_when_categories_are_public():
    table = customers(500)
    schema = infer_schema(table).confirm()
    schema = schema.declare_public(schema.names)
    model = make("private_sampling")
    with pytest.raises(ParameterError, match="p ≤ 20 bits"):
        model.fit(table, schema, Budget(1.0, 0.0))
    assert not model.ledger_.entries


def test_a_gaussian_stage_with_delta_zero_is_refused_in_the_plan():
    schema = infer_schema(customers(200)).confirm()
    schema = schema.declare_public(schema.names)
    for method in ("independent", "gsd", "dpgan"):
        model = make(method)
        planned = model.plan(Population(200, 200), schema,
                       model.budget_for(Budget(1.0, 0.0), schema))
        assert any("needs δ > 0" in str(r) for r in planned.refusals), method


@pytest.mark.parametrize(("method", "params", "named"), [
    ("dpgan", {"components": 10**12}, "components"),
    ("dpgan", {"bins": 10**12}, "bins"),
    ("dpgan", {"generator_batch": 10**13}, "generator_batch"),
    ("private_sampling", {"m": 10**12}, "m"),
    ("private_sampling", {"k": 10**13}, "k"),
    ("independent", {"bins": 10**12}, "bins"),
    ("dpselect", {"gan__components": 10**12}, "gan__components"),
    ("dpselect", {"engine": "rows", "candidates": 10**12}, "candidates"),
    ("dpselect", {"engine": "ga", "population": 10**12}, "population"),
    ("gsd", {"random_queries": 10**12}, "random_queries"),
])
def test_parameters_that_drive_memory_are_refused_by_name_before_anything(method, params,
                                                                           named, store):
    """The audit's DP-GAN components=1e12 tried a 4 TB allocation after spending nothing
    only by luck: every memory-driving parameter is priced by the method's memory model."""
    table = customers(300)
    schema = infer_schema(table).confirm()
    schema = schema.declare_public(schema.names)
    account = TableAccount.of(table, "customers.csv", store)
    with pytest.raises(ParameterError, match=f"{named}.*of memory .* in all\\), over the"):
        run(table, schema, method, 1.0, 1e-5, params=params, account=account, measure=False)
    assert store.usage(account.key) is None or store.usage(account.key).runs == 0


def test_the_app_turns_run_off_with_the_plans_reason(tmp_path, monkeypatch):
    monkeypatch.setenv("SYNTH_HOME", str(tmp_path))
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=600)
    at.run()
    at.switch_page("app_pages/data.py").run()
    csv = customers().to_csv(index=False).encode()
    at.sidebar.file_uploader[0].set_value(("customers.csv", csv, "text/csv")).run()
    next(c for c in at.checkbox if c.label.startswith("I have checked each column")).check().run()
    at.switch_page("app_pages/synthesize.py").run()
    assert not at.exception
    run_button = next(b for b in at.button if b.label == "Run")
    assert run_button.disabled
    shown = "\n".join(str(e.value) for e in (*at.error, *at.caption))
    assert "would be noise" in shown and "Run is unavailable" in shown


def _synth(*args, home):
    import os
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "synth", *map(str, args)], capture_output=True,
                          text=True, cwd=REPO, timeout=1800,
                          env={**os.environ, "SYNTH_HOME": str(home)})


def _one_line_about_the_account(res) -> None:
    assert res.returncode == 2, res.stderr
    said = res.stderr.strip().splitlines()
    assert len(said) == 1 and "privacy account" in said[0] and "SYNTH_HOME" in said[0], said
    assert "internal error" not in res.stderr


def test_an_unusable_synth_home_is_one_line_before_anything_runs(tmp_path):
    """SYNTH_HOME under a file: the account cannot be opened; the run says so in one line."""
    from synth.data import sample_paths

    table, schema = sample_paths()
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    out = tmp_path / "o.csv"
    res = _synth("run", table, "--schema", schema, "--method", "independent", "--epsilon", 1,
                 "--out", out, "--ledger", tmp_path / "l.json", "--quiet",
                 home=blocker / "home")
    _one_line_about_the_account(res)
    assert not out.exists()
    _one_line_about_the_account(_synth("account", home=blocker / "home"))


def test_synth_home_on_a_full_disk_is_one_line(tmp_path):
    """A real full disk: a 64 KiB tmpfs, filled first (skipped where mounting is not
    allowed)."""
    import subprocess

    from synth.data import sample_paths

    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)],
                      capture_output=True).returncode != 0:
        pytest.skip("this machine does not let tests mount a small tmpfs")
    try:
        with pytest.raises(OSError), open(disk / "filler", "wb", buffering=0) as f:
            while True:  # fill it
                f.write(b"x" * 4096)
        table, schema = sample_paths()
        res = _synth("run", table, "--schema", schema, "--method", "independent",
                     "--epsilon", 1, "--out", tmp_path / "o.csv", "--ledger",
                     tmp_path / "l.json", "--quiet", home=disk / "home")
        _one_line_about_the_account(res)
    finally:
        subprocess.run(["umount", str(disk)], capture_output=True)


def test_rules_and_refusals_see_only_the_public_population():
    """The audit: at k > 1 the rows bounding keeps are private, yet fit handed them to the
    parameter rules (GSD's memory model read them: a neighbour with one more row flipped a
    refusal). Every rule, memory model and refusal now sees k·U in their place."""
    from synth.methods.independent import IndependentMarginals

    seen, made = [], []

    class Watched(IndependentMarginals):
        def _check_rules(self, values, population, schema):
            seen.append(population)

        def _memory(self, values, population, schema):
            seen.append(population)
            return super()._memory(values, population, schema)

        def _recipe(self, population, schema, budget):
            made.append(population)
            return super()._recipe(population, schema, budget)

    rng = np.random.default_rng(3)
    people = np.repeat(np.arange(200), rng.integers(1, 4, 200))  # 1 to 3 rows each
    table = pd.DataFrame({"person": people, "c": rng.choice(["a", "b"], len(people))})
    schema = infer_schema(table[["c"]]).confirm()
    schema = schema.declare_public(schema.names)
    unit = PrivacyUnit("person", 2)
    fitted = Watched().fit(table, schema, Budget(1.0, 1e-5, unit=unit))
    assert seen and all(p.rows == 200 * 2 and p.units == 200 for p in seen), seen
    # the plan's recipe at k·U; the fit's at n̂, the row count's DP estimate, and no rule
    assert made == [Population(400, 200, 2), fitted.population_], made
    gsd = make("gsd")  # neighbours that differ only in the rows kept plan alike
    budget = gsd.budget_for(Budget(1.0, 1e-5, unit=unit), schema)
    assert len({str(gsd.plan(Population(n, 200, 2), schema, budget))
                for n in (300, 301, 400)}) == 1


@pytest.mark.parametrize("method,params", [("mst", {}), ("aim", {}),
                                           ("gsd", {"rounds": 3}), ("gsd", {}),
                                           ("dpselect", {"rounds": 2, "gan__batch_size": 16}),
                                           ("dpselect", {"gan__batch_size": 16})])
def test_a_plan_that_passes_is_not_refused_at_any_row_estimate(method, params):
    """The audit: at k > 1 a fit makes its recipe again at n̂, the rows' DP estimate, after
    that estimate is charged; a noise check judged at n̂ could then refuse a run its plan
    passed. Whatever n̂ the estimate gives (U to k·U), the fit's recipe passes where the
    plan's did, at every ε from hopeless to ample."""
    rng = np.random.default_rng(0)
    table = pd.DataFrame({"a": rng.choice(list("abcdef"), 60), "b": rng.choice(list("xy"), 60),
                          "c": rng.choice(list("pqrs"), 60)})
    schema = infer_schema(table).confirm()
    schema = schema.declare_public(schema.names)
    units, k = 60, 3
    model = make(method, params)
    passed = 0
    for epsilon in np.geomspace(0.01, 10, 25):
        budget = model.budget_for(Budget(float(epsilon), 1e-5, unit=PrivacyUnit("id", k)),
                                  schema)
        try:
            model.recipe(Population(units * k, units, k), schema, budget)
        except BudgetError:
            continue
        passed += 1
        for rows in (units, 2 * units, units * k):
            model.recipe(Population(rows, units, k), schema, budget)  # refuses: a failure
    assert 0 < passed < 25, f"the grid must straddle {method}'s refusal: {passed} of 25 passed"
