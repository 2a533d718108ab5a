"""DP-Select's measure engine: its ledger, what its fit recovers, and an audit of its release.

The ledger is checked against dp-accounting's RDP accountant (not the package's zCDP
bookkeeping), the fit against SciPy's optimum of the same problem, and the release by a
Clopper–Pearson audit on neighbouring tables (:mod:`synth.privacy.audit`).
"""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import optimize

from synth.encoding import Space
from synth.errors import BudgetError, Cancelled
from synth.methods import FitContext, Progress, make
from synth.methods.dpselect import measure
from synth.methods.dpselect.measure import Measured, measure_and_weight, measure_plan
from synth.privacy.audit import epsilon_lower_bound, event_counts
from synth.privacy.budget import Budget, Ledger
from synth.privacy.composition import zcdp_to_dp
from synth.privacy.events import Exponential, Gaussian
from synth.privacy.mechanisms import gaussian, replayable_noise
from synth.privacy.unit import Population, PrivacyUnit
from synth.runs import Run
from synth.schema import Column, Schema
from tests.test_gsd import zcdp_events_epsilon

from .conftest import changes

MEASURE = {"engine": "measure", "gan__epochs": 0.5, "gan__batch_size": 256, "pool_multiplier": 2}


def test_the_ledger_holds_exactly_the_planned_events(sample):
    """One Gaussian per column and per pair with the target, then per round one
    report-noisy-max pick and one Gaussian, each charged before it runs, all with the same ρ;
    together they cost the selection's whole share, by an accountant the package does not use
    for it, and the preview showed the same σ the fit charged."""
    table, schema = sample
    n, d = len(table), len(schema)
    up = 2 * d - 1  # every column's own marginal, and every pair with the target
    model = make("dpselect", {**MEASURE, "rounds": 4})
    budget = Budget(2.0, 1e-5, model.default_shares(schema))
    preview = [s for s in model.preview(n, schema, budget) if s.stage == "select"]
    events = []
    model.fit(table, schema, budget, FitContext(postprocessing_seed=0, on_event=events.append,
                                                min_interval=0))
    entries = [e for e in model.ledger_.entries if e.stage == "select"]
    assert [type(e.event) for e in entries] == [Gaussian] * up + [Exponential, Gaussian] * 4
    picks = [e.event for e in entries[up::2]]
    gaussians = [e.event for e in entries[:up] + entries[up + 1::2]]
    rho = gaussians[0].rho
    assert all(p.epsilon ** 2 / 8 == pytest.approx(rho) for p in picks)
    assert all(g.rho == pytest.approx(rho) for g in gaussians)
    assert all(p.count == 1 and p.sensitivity == pytest.approx(1 / n) for p in picks)
    for e in entries[:up] + entries[up + 1::2]:  # Δ₂ = √(2·partitions)/n: 5 levels if numeric
        names = e.description.split(": ")[-1]
        numeric = any(schema[c].kind == "numeric" for c in names.split(" × "))
        assert e.event.sensitivity == pytest.approx(math.sqrt(10 if numeric else 2) / n)
    eps, delta = budget.allowance("select")
    assert zcdp_events_epsilon([e.event for e in entries], delta) == pytest.approx(eps, abs=1e-4)
    louder = [Gaussian(g.sigma / math.sqrt(1.01), g.sensitivity) for g in gaussians]
    assert zcdp_events_epsilon(picks + louder, delta) > eps  # 1 % more ρ would overspend
    assert model.ledger_.total_epsilon <= 2.0 + 1e-9
    # what the steward read, in the order charged: σ of the widest workload (5 levels), and
    # each pick's event
    assert [type(s.event) for s in preview] == [Gaussian, Exponential]
    assert all(p == preview[1].event for p in picks)
    assert preview[0].event.sigma == pytest.approx(
        math.sqrt(10) / n / math.sqrt(2 * rho))
    assert all(g.sigma <= preview[0].event.sigma * (1 + 1e-12) for g in gaussians)
    assert model.selector_.measured_[:d] == [f"1-way: {c}" for c in schema.names]
    assert all(schema.target in label for label in model.selector_.measured_[d:up])
    assert len(set(model.selector_.measured_)) == up + 4  # no marginal measured twice
    rounds = [e for e in events if isinstance(e, Progress) and e.stage == "select"]
    assert changes([e.step for e in rounds]) == [0, 1, 2, 3, 4]
    assert {"max_error", "distance"} <= set(rounds[-1].metrics)
    out = model.sample()
    assert list(out.columns) == schema.names and len(out) == n


def test_support_rows_follow_the_measured_one_way_marginals():
    """Rows drawn from measured 1-way answers have those marginals (up to sampling), keep the
    GAN's exact values inside an interval, fill intervals it never drew uniformly, and give a
    bound's own cell exactly the bound."""
    _, schema = small_table()
    space = Space(schema)
    one_way = measure.workloads(space)[0]
    pool = pd.DataFrame({"a": ["p"] * 4, "b": ["p"] * 4, "c": ["no"] * 4,
                         "x": [3.0, 3.0, 3.0, 59.0]})
    answers = np.zeros(one_way.size)
    answers[one_way.bounds[0]:one_way.bounds[0] + 3] = [0.2, 0.3, 0.5]  # a
    answers[one_way.bounds[1]:one_way.bounds[1] + 3] = [-0.1, 1.1, 0.0]  # b: noise below 0
    answers[one_way.bounds[2]:one_way.bounds[2] + 2] = [0.0, 0.0]  # c: nothing left: uniform
    finest = [s for s in one_way.slots if s.cols == (3,)][-1]
    assert finest.bins == (34,) and finest.apart == (True,)  # 32 intervals and the bounds
    answers[finest.offset] = 0.2  # x = 0, the lower bound's own cell
    answers[finest.offset + 2] = 0.4  # the 2nd interval, [1.9, 3.75): the pool's 3s
    answers[finest.offset + 17] = 0.4  # the 17th, [30, 31.9): no pool value there
    rows = measure.support_rows(space, one_way, answers, space.encode(pool), 20_000,
                                np.random.default_rng(0))
    def share(column: str) -> list[float]:
        return rows[column].value_counts(normalize=True).sort_index().tolist()

    assert share("a") == pytest.approx([0.2, 0.3, 0.5], abs=0.02)
    assert set(rows["b"]) == {"q"}
    assert share("c") == pytest.approx([0.5, 0.5], abs=0.02)
    x = rows["x"]
    assert (x == 0).mean() == pytest.approx(0.2, abs=0.02)
    assert (x == 3).mean() == pytest.approx(0.4, abs=0.02)  # the GAN's atom, not 2 or 3
    assert set(x) == {0.0, 3.0, 30.0, 31.0}  # uniform whole numbers where it drew none


def test_the_default_rounds_keep_every_candidates_noise_within_an_answers_range(sample):
    """Rounds share ρ with the up-front measurements: on a small table the default plan
    takes fewer, so that no candidate's σ exceeds an answer's whole range [0, 1]."""
    _, schema = sample
    for rows in (150, 600, 4_000):
        planned = measure.measure_plan(Population(rows, rows), schema, 0.7, 1e-5, None, "select")
        rest = np.delete(planned.sensitivity, planned.fixed)
        assert planned.rounds == 1 or rest.max() / math.sqrt(2 * planned.rho) < 1, rows
    assert planned.rounds == measure.ROUNDS  # a table of thousands keeps them all


def test_the_rounds_candidates_are_counted_from_the_kinds_alone(sample):
    """Every column's own marginal and every pair with the target are measured up front;
    the rounds pick among the other pairs, counted without the categories."""
    _, schema = sample
    for keep in (schema.names, schema.names[:1], schema.names[:4], [*schema.names[:4],
                                                                     schema.target]):
        sub = schema.drop([c for c in schema.names if c not in keep])
        classes = measure.workloads(Space(sub))
        fixed = measure.upfront(sub, classes)
        target = None if sub.target is None else sub.names.index(sub.target)
        pairs = len(keep) * (len(keep) - 1) // 2
        assert len(fixed) == len(keep) + (len(keep) - 1 if target is not None else 0)
        assert sum(len(q) for q in classes) == len(keep) + pairs
        assert measure.candidate_count([c.kind == "categorical" for c in sub],
                                       target) == len(keep) + pairs - len(fixed)


def test_the_duration_shown_before_a_run_grows_with_the_work(sample):
    """From public facts only: more rows, epochs, rounds or a larger pool take longer;
    DP-Select trains the same GAN as DP-GAN and then selects; no estimate where there is no
    model (benchmarks/estimates.py sets them against measured fits)."""
    _, schema = sample

    def seconds(method: str, rows: int = 4_000, **params) -> float | None:
        return Run(method, schema, 1.0, 1e-7, params, rows=rows).plan.seconds

    assert 0 < seconds("dpselect") < seconds("dpselect", 40_000)
    assert seconds("dpselect", gan__epochs=20) > seconds("dpselect")
    assert seconds("dpselect", pool_multiplier=20) > seconds("dpselect")
    assert seconds("dpgan") < seconds("dpselect")
    assert seconds("dpgan", epochs=20) > seconds("dpgan")
    assert seconds("gsd", rounds=10) < seconds("gsd", rounds=30)
    assert seconds("independent") < seconds("independent", 400_000)
    assert seconds("dpselect", engine="rows") is None  # no cost model for this engine


def test_a_cancel_leaves_only_what_ran_on_the_ledger(sample):
    table, schema = sample
    model = make("dpselect", {**MEASURE, "rounds": 6})
    seen = []

    def stop() -> bool:  # after round 2's report
        return any(isinstance(e, Progress) and e.stage == "select" and e.step == 2
                   for e in seen)

    with pytest.raises(Cancelled):
        model.fit(table, schema, Budget(2.0, 1e-5, model.default_shares(schema)),
                  FitContext(postprocessing_seed=0, on_event=seen.append, should_stop=stop,
                             min_interval=0))
    selected = [e for e in model.ledger_.entries if e.stage == "select"]
    up = 2 * len(schema) - 1  # every column, and every pair with the target
    rounds = (len(selected) - up) // 2  # every charge is a call that ran, never a plan
    assert 2 <= rounds < 6
    assert [type(e.event) for e in selected] == [Gaussian] * up + [Exponential, Gaussian] * rounds
    assert model.ledger_.spent("select")[0] < model.ledger_.budget.allowance("select")[0]


def small_table(rows: int = 400, seed: int = 0) -> tuple[pd.DataFrame, Schema]:
    """Three categorical columns and one numeric, with dependence between them."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, rows)
    b = (a + rng.integers(0, 2, rows)) % 3
    c = np.where(rng.random(rows) < 0.8, a % 2, 1 - a % 2)
    x = np.clip(20 + 15 * a + rng.normal(0, 5, rows), 0, 60).round()
    frame = pd.DataFrame({"a": np.array(list("pqr"))[a], "b": np.array(list("pqr"))[b],
                          "c": np.array(["no", "yes"])[c], "x": x})
    schema = Schema((Column("a", "categorical", categories=("p", "q", "r")),
                     Column("b", "categorical", categories=("p", "q", "r")),
                     Column("c", "categorical", categories=("no", "yes")),
                     Column("x", "numeric", lower=0, upper=60, integer=True)))
    return frame, schema


def best_fit_loss(schema: Schema, private: pd.DataFrame, pool: pd.DataFrame
                  ) -> tuple[float, float]:
    """SciPy's least Σ_w Σ_cells (pool share − true share)²/Δ_w² over weights on the pool,
    every workload measured, and the uniform pool's: the weighting a noiseless fit uses."""
    space = Space(schema)
    classes = measure.workloads(space)
    x, p = space.encode(private), space.encode(pool)
    blocks, targets, scale = [], [], []
    for q in classes:
        cells = q.cells(p)
        onehot = np.zeros((len(pool), q.size))
        for s in range(cells.shape[1]):
            onehot[np.arange(len(pool)), cells[:, s]] = 1
        blocks.append(onehot)
        targets.append(q.answers(x))
        owner = np.searchsorted(q.bounds, np.arange(q.size), side="right") - 1
        scale.append(1 / q.sensitivity[owner] ** 2)
    a, t, s = np.hstack(blocks), np.concatenate(targets), np.concatenate(scale)

    def loss(w):
        r = a.T @ w - t
        return float(r @ (s * r))

    m = len(pool)
    best = optimize.minimize(loss, np.full(m, 1 / m), jac=lambda w: 2 * a @ (s * (a.T @ w - t)),
                             bounds=[(0, 1)] * m, method="SLSQP", options={"maxiter": 500},
                             constraints=[{"type": "eq", "fun": lambda w: w.sum() - 1}])
    return best.fun, loss(np.full(m, 1 / m)), loss


def weigh(ledger: Ledger, schema: Schema, private: pd.DataFrame, pool: pd.DataFrame,
          population: Population, rounds: int | None, rng: np.random.Generator) -> Measured:
    """The engine on the ledger's whole selection share, planned as its recipe plans it."""
    planned = measure_plan(population, schema, *ledger.budget.allowance("select"), rounds,
                           "select")
    return measure_and_weight(ledger, "select", schema, private, pool, population, planned,
                              rng)


def test_at_huge_epsilon_the_weights_reach_the_pools_best_fit(monkeypatch):
    """With noise near zero and every marginal measured, the weighted pool (the GAN's rows
    and the support rows) fits the true marginals as well as any weighting of that pool can
    (SciPy's optimum)."""
    private, schema = small_table()
    pool, _ = small_table(150, seed=1)  # a different draw: it cannot match exactly
    ledger = Ledger(Budget(1e4, 1e-5, {"select": 1.0}), {"select": "zcdp"})
    n = len(private)
    monkeypatch.setattr(measure, "FINAL_STEPS", 3000)  # run the last fit to convergence
    result = weigh(ledger, schema, private, pool,
                                Population(n, n), rounds=6, rng=np.random.default_rng(0))
    assert len(result.picked) == 10  # 4 columns, 3 categorical pairs and 3 pairs with x
    assert len(result.pool) == 2 * len(pool)
    best, uniform, loss = best_fit_loss(schema, private, result.pool)
    assert best < 0.5 * uniform  # the pool leaves room for weighting to matter
    assert loss(result.weights) <= best * 1.03  # ε = 10⁴ is not noiseless (1.013 seen once)
    assert result.distance[-1] < result.distance[0]


def test_units_scale_the_noise_by_k_and_count_over_n_hat():
    private, schema = small_table()
    ledger = Ledger(Budget(1.0, 1e-5, {"select": 1.0}), {"select": "zcdp"})
    population = Population(400, 150, 3)  # n̂ = 400 rows from 150 units of ≤ 3 rows
    weigh(ledger, schema, private, private.iloc[:50], population,
                       rounds=2, rng=np.random.default_rng(0))
    picks = [e.event for e in ledger.entries if isinstance(e.event, Exponential)]
    gaussians = [e.event for e in ledger.entries if isinstance(e.event, Gaussian)]
    assert all(p.sensitivity == pytest.approx(3 / 400) for p in picks)
    assert all(g.sensitivity in (pytest.approx(3 * math.sqrt(2) / 400),
                                 pytest.approx(3 * math.sqrt(10) / 400)) for g in gaussians)


def test_dpselect_accepts_units_only_with_the_measure_engine():
    make("dpselect", MEASURE).check_unit(PrivacyUnit("id", 3))
    with pytest.raises(Exception, match="measure engine"):
        make("dpselect", {"engine": "rows"}).check_unit(PrivacyUnit("id", 3))


def test_too_small_a_budget_is_refused_before_anything_is_spent():
    private, schema = small_table(20)
    ledger = Ledger(Budget(1e-3, 1e-9, {"select": 1.0}), {"select": "zcdp"})
    with pytest.raises(BudgetError, match="too small"):
        weigh(ledger, schema, private, private, Population(20, 20),
                           rounds=2, rng=np.random.default_rng(0))
    assert ledger.entries == []


def two_column_table(first: int) -> tuple[pd.DataFrame, Schema]:
    """Ten rows over two binary columns; ``first`` rows are (0, 0), the rest (1, 1)."""
    values = np.array(["0"] * first + ["1"] * (10 - first))
    schema = Schema((Column("u", "categorical", categories=("0", "1")),
                     Column("v", "categorical", categories=("0", "1"))))
    return pd.DataFrame({"u": values, "v": values}), schema


def audit(trials: int) -> tuple[float, float]:
    """ε found by a Clopper–Pearson audit of the engine's measurement (the first cell of u's
    marginal, measured first) on neighbouring tables that differ in one row, against the ε
    its ρ-zCDP allows at δ. The three workloads (u, v, then u × v in the one round) all have
    Δ₂ = √2/n; the weights and support rows are post-processing of the measurements. The
    audit catches about three times too little noise, not a missing √2: the exact
    sensitivities are the next test's."""
    d, schema = two_column_table(5)
    d2, _ = two_column_table(6)  # one row moved from cell (1, 1) to (0, 0)
    pool = pd.DataFrame({"u": ["0", "1"], "v": ["0", "1"]})
    delta = 0.05  # a large δ lets few trials show ε: the measurement allows ≈ 2.3 there
    budget = zcdp_to_dp(2.0, 1e-5)  # ρ = 2: 1/2 for each of u, v, the pick and u × v

    def release(table):
        ledger = Ledger(Budget(budget, 1e-5, {"select": 1.0}), {"select": "zcdp"})
        result = weigh(ledger, schema, table, pool, Population(10, 10),
                                    rounds=1, rng=np.random.default_rng(0))
        return result.answers[0][0], ledger.entries[0].event

    outputs, event = [], None
    for table in (d, d2):
        runs = [release(table) for _ in range(trials)]
        outputs.append(np.array([w for w, _ in runs]))
        event = runs[0][1]
    assert event.rho == pytest.approx(0.5)
    thresholds = np.linspace(0.4, 1.0, 13)
    found = epsilon_lower_bound(event_counts(outputs[1], thresholds),
                                event_counts(outputs[0], thresholds), trials, delta=delta)
    return found, zcdp_to_dp(event.rho, delta)


def test_declared_sensitivities_bound_every_neighbour_and_are_reached():
    """Brute force over random neighbours (one unit of ≤ k rows replaced, answers over a
    public n̂ that is not the table's row count): no workload's answers move by more than its
    declared Δ₂, nor any max error by more than k/n̂; the worst neighbours reach both."""
    private, schema = small_table(60)
    space = Space(schema)
    classes = measure.workloads(space)
    for k in (1, 3):
        n_hat = 70
        # ε = 4: 30 units of ≤ 3 rows could be 30 rows, whose answers ε = 1 cannot hear
        plan = measure.measure_plan(Population(n_hat, 70 if k == 1 else 30, k), schema, 4.0,
                                    1e-5, None, "select")
        rng = np.random.default_rng(k)
        worst_l2, worst_linf = 0.0, 0.0
        base = [q.answers(space.encode(private)) * len(private) / n_hat for q in classes]
        for _ in range(400):
            other = private.copy()
            rows = rng.choice(len(private), size=rng.integers(1, k + 1), replace=False)
            donor = small_table(len(rows), seed=int(rng.integers(10**6)))[0]
            if rng.random() < 0.5:  # an extreme unit: every value at one corner
                donor = donor.iloc[[0] * len(rows)].assign(a="p", b="p", c="no", x=0.0)
            other.iloc[rows] = donor.to_numpy()
            moved = [q.answers(space.encode(other)) * len(other) / n_hat for q in classes]
            first = 0
            for q, a, b in zip(classes, base, moved, strict=True):
                for w in range(len(q)):
                    lo, hi = q.bounds[w:w + 2]
                    gap = b[lo:hi] - a[lo:hi]
                    worst_l2 = max(worst_l2, np.linalg.norm(gap) / plan.sensitivity[first + w])
                    worst_linf = max(worst_linf, np.abs(gap).max() / (k / n_hat))
                first += len(q)
        assert worst_l2 <= 1 + 1e-9 and worst_linf <= 1 + 1e-9
        assert worst_l2 > 0.99 and worst_linf > 0.99  # the bounds are tight, not loose


def test_impossible_plans_are_refused_before_the_gan_spends(sample):
    table, schema = sample
    for params, error in (({"rounds": 10**4}, "exceeds the"),
                          ({"gan_share": 0.99}, "too small to measure")):
        model = make("dpselect", {**MEASURE, **params})
        with pytest.raises((BudgetError, ValueError), match=error):
            model.fit(table, schema, Budget(0.05, 1e-9, model.default_shares(schema)))
        assert [e.stage for e in model.ledger_.entries] == []


def test_an_audit_of_the_release_on_neighbouring_tables(monkeypatch):
    found, allowed = audit(1500)
    assert found <= allowed
    # the audit's power: the same charges with a quarter of the noise are caught
    monkeypatch.setattr(measure, "measure", lambda answers, event: gaussian(answers,
                                                                            event.sigma / 4))
    with replayable_noise(5):
        assert audit(1500)[0] > allowed


def test_only_numeric_only_categorical_or_one_column(sample):
    """The measured workloads follow the kinds: categorical pairs, pairs with a number, a
    lone column's own marginal."""
    table, schema = sample
    for kind in ("numeric", "categorical"):
        keep = [c.name for c in schema if c.kind == kind][:3]
        sub = schema.drop([c for c in schema.names if c not in keep])
        model = make("dpselect", {**MEASURE, "rounds": 2})
        model.fit(table[keep], sub, Budget(2.0, 1e-5, model.default_shares(sub)))
        kinds = {label.split(":")[0] for label in model.selector_.measured_}
        assert kinds <= ({"1-way", "bt"} if kind == "numeric" else {"1-way", "cat2"})
        assert len(model.sample(200)) == 200
    one = schema.drop([c for c in schema.names if c != "age"])
    model = make("dpselect", MEASURE)
    model.fit(table[["age"]], one, Budget(2.0, 1e-5, model.default_shares(one)))
    assert model.selector_.measured_ == ["1-way: age"]
