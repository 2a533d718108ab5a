"""Private-GSD: query sensitivities, the incremental loss, the genetic search, the budget."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from synth.encoding import BOUND_ATOM, Space
from synth.errors import BudgetError, Cancelled, ParameterError
from synth.methods import FitContext, Progress, make
from synth.methods.gsd.method import GSD, QUERIES, ROWS
from synth.methods.gsd.projection import loss_of, project
from synth.methods.gsd.queries import QUERY_CLASSES, Prefixes, build, narrowest, plan_size, track
from synth.privacy.budget import Budget, Ledger
from synth.privacy.events import Exponential, Gaussian
from synth.privacy.unit import Population
from synth.schema import Column, Schema, infer_schema


@pytest.fixture(scope="module")
def small():
    """A mixed table with dependence: 3 categorical and 2 numeric columns."""
    rng = np.random.default_rng(7)
    n = 400
    a = rng.choice(["x", "y", "z"], n, p=[0.5, 0.3, 0.2])
    frame = pd.DataFrame({
        "a": a, "b": np.where(a == "x", "p", rng.choice(["p", "q"], n)),
        "c": rng.choice(["u", "v"], n),
        "age": np.clip(rng.normal(40, 12, n), 17, 90),
        "hours": np.where(a == "z", 20.0, rng.uniform(1, 99, n))})
    schema = Schema((
        Column("a", "categorical", categories=("x", "y", "z"), public=True),
        Column("b", "categorical", categories=("p", "q"), public=True),
        Column("c", "categorical", categories=("u", "v"), public=True),
        Column("age", "numeric", lower=17, upper=90, public=True),
        Column("hours", "numeric", lower=1, upper=99, public=True)))
    return frame, schema


def _all_classes(space, rng):
    return build(space, list(QUERY_CLASSES), rng, random_queries=200)


def test_sensitivities_are_the_papers_and_hold_for_replaced_rows(small):
    frame, schema = small
    space = Space(schema)
    rng = np.random.default_rng(0)
    classes = {q.kind: q for q in _all_classes(space, rng)}
    assert set(classes["cat2"].sensitivity) == {math.sqrt(2)}
    assert set(classes["cat3"].sensitivity) == {math.sqrt(2)}
    assert set(classes["bt"].sensitivity) == {math.sqrt(10)}  # 5 levels
    assert set(classes["num1"].sensitivity) == {math.sqrt(2)}  # the finest level alone
    assert [sl.bins for sl in classes["num1"].slots] == [(34,), (34,)]  # 32 and the bounds
    assert set(classes["prefix"].sensitivity) == {math.sqrt(2)}
    assert set(classes["halfspace"].sensitivity) == {1.0}
    assert len(classes["cat2"]) == 3 and len(classes["cat3"]) == 1
    assert len(classes["bt"]) == 3 * 2 + 1  # every pair with a numeric column
    x = space.encode(frame)
    n = len(x)
    for q in classes.values():
        worst = np.zeros(len(q))
        for _ in range(30):  # replace one row by a random one
            y = x.copy()
            y[rng.integers(n)] = space.random(1, rng)[0]
            diff = (q.answers(x) - q.answers(y)) ** 2
            norms = np.sqrt(np.add.reduceat(diff, q.bounds[:-1])) * n
            worst = np.maximum(worst, norms)
        assert np.all(worst <= q.sensitivity + 1e-9), q.kind
        if q.kind in ("cat2", "bt", "num1"):  # the bound is attained
            assert worst.max() == pytest.approx(q.sensitivity.max())


def test_mutations_propose_whole_numbers_and_the_bounds():
    schema = Schema((Column("n", "numeric", lower=0, upper=4, integer=True, public=True),
                     Column("x", "numeric", lower=0, upper=1, public=True),
                     Column("c", "categorical", categories=("a", "b", "c"), public=True)))
    space = Space(schema)
    values = space.random(20_000, np.random.default_rng(0))
    assert set(np.unique(values[:, 0] * 4)) == {0, 1, 2, 3, 4}
    assert set(np.unique(values[:, 2])) == {0, 1, 2}
    at_bounds = np.isin(values[:, 1], [0.0, 1.0]).mean()
    assert at_bounds == pytest.approx(BOUND_ATOM, abs=0.01)  # a continuous U[0, 1] never is
    assert space.decode(values)["n"].between(0, 4).all()


def test_spreading_a_release_keeps_every_answer_atom_and_exact_value():
    """Numbers are redrawn within the finest interval the queries see: every marginal the
    search fits answers the same, whole numbers stay whole, the bounds (atoms) and columns
    seen one value per interval stay, and the copies of one point no longer stack."""
    from synth.marginals import workloads
    from synth.methods.gsd.method import spread

    schema = Schema((Column("x", "numeric", lower=0, upper=1, public=True),
                     Column("amount", "numeric", lower=0, upper=1000, integer=True,
                            public=True),
                     Column("hours", "numeric", lower=1, upper=99, integer=True, public=True),
                     Column("day", "numeric", lower=1, upper=31, integer=True, public=True),
                     Column("c", "categorical", categories=("a", "b"), public=True)))
    space = Space(schema)
    rng = np.random.default_rng(3)
    x = np.repeat(space.random(50, rng), 40, axis=0)  # 50 points, each copied 40 times
    out = spread(x, space, 5, 128, rng)
    for q in (*build(space, ["bt"], rng, levels=5, exact=128),
              workloads(space, "1-way", levels=5, exact=128)):
        np.testing.assert_array_equal(q.counts(out), q.counts(x))
    # hours (99 values) has an interval per value, day (31) fewer values than intervals
    np.testing.assert_array_equal(out[:, 2:], x[:, 2:])
    whole = out[:, 1] * 1000
    np.testing.assert_allclose(whole, np.round(whole), atol=1e-9)
    for j in (0, 1):
        atoms = np.isin(x[:, j], [0.0, 1.0])
        assert atoms.any() and np.array_equal(out[atoms, j], x[atoms, j])
        assert len(np.unique(out[~atoms, j])) > 10 * len(np.unique(x[~atoms, j]))
    released = space.decode(out)
    assert released["amount"].between(0, 1000).all()


def test_random_queries_keep_their_numbers_where_the_search_put_them(sample):
    """Prefix and halfspace thresholds cut inside the intervals: spreading would change
    their answers, so a fit with them samples the search's numbers as they are."""
    table, schema = sample
    model = make("gsd", {"queries": "cat2+prefix", "rounds": 2, "rows": 60,
                         "max_generations": 50, "random_queries": 50})
    model.fit(table, schema, Budget(1.0, 1e-6), FitContext(postprocessing_seed=0))
    drawn = model.space_.decode(model.table_)
    numbers = [c.name for c in schema if c.kind == "numeric"]
    released = model.sample(500)
    for name in numbers:
        assert set(released[name].dropna()) <= set(drawn[name].dropna()), name


def test_plan_size_counts_what_build_makes(small):
    space = Space(small[1])
    kinds = [c.kind == "categorical" for c in small[1]]
    for name in QUERY_CLASSES:
        (q,) = build(space, [name], np.random.default_rng(0), levels=3, random_queries=50)
        assert plan_size(kinds, [name], 3, 50) == (len(q), q.sensitivity.max()), name


def test_narrowest_bounds_what_build_makes_from_below(small):
    """The plan refuses drowned noise from the column kinds alone: its Δ₂ must never be
    above the quietest workload's, or it would refuse a run that could measure something."""
    space = Space(small[1])
    kinds = [c.kind == "categorical" for c in small[1]]
    for levels in (1, 3, 5):
        for name in QUERY_CLASSES:
            for seed in range(3):
                (q,) = build(space, [name], np.random.default_rng(seed), levels=levels,
                             random_queries=50)
                assert narrowest(kinds, [name], levels) <= q.sensitivity.min() + 1e-12, name


def test_with_units_a_plan_that_passes_is_not_refused_by_the_fit():
    """The fit plans again at n̂, the private estimate of the rows kept, and may select
    rounds where the plan, at the public k·U, measured in one shot (with each number's own
    marginal, Δ₂ = √2, where the rounds' pairs have √10): the drowned-noise check must judge
    both on the public plan's classes, or a plan that passed would be refused after n̂ was
    paid for (3 numbers, of which no categorical pair, 32 people of 2 rows, ε = 1.5)."""
    from synth.privacy.unit import PrivacyUnit

    rng = np.random.default_rng(0)
    schema = Schema(tuple(Column(c, "numeric", lower=0, upper=1, public=True) for c in "abc"))
    frame = pd.DataFrame(rng.random((64, 3)), columns=list("abc"))
    frame["person"] = np.repeat([f"P-{i:06d}" for i in range(32)], 2)
    budget = Budget(1.5, 1e-6, unit=PrivacyUnit("person", 2))
    model = make("gsd", {"max_generations": 50})
    split = model.budget_for(budget, schema)
    planned = model.plan(Population(64, 32, 2), schema, split)
    assert not planned.refusals and planned.recipe["one_shot"]
    for rows in range(32, 65):  # wherever n̂ falls, the fit's own recipe is not refused
        model.recipe(Population(rows, 32, 2), schema, split)
    model.fit(frame, schema, budget, FitContext(postprocessing_seed=0))  # cat2 left out
    assert model.ledger_.total_epsilon <= 1.5 + 1e-9


@pytest.mark.parametrize("queries", ["num1", "cat3", "bt"])
def test_queries_that_give_no_workload_are_refused_by_name(queries):
    """Two categories give no number's own, no triple and no pair with a number: refused
    before anything is spent, not a division by zero workloads."""
    schema = Schema((Column("a", "categorical", categories=("x", "y"), public=True),
                     Column("b", "categorical", categories=("u", "v"), public=True)))
    frame = pd.DataFrame({"a": ["x", "y"] * 20, "b": ["u", "v", "v", "u"] * 10})
    model = make("gsd", {"queries": queries, "one_shot": True})
    with pytest.raises(ParameterError, match=f"queries '{queries}' give no workload"):
        model.fit(frame, schema, Budget(1.0, 1e-6))
    assert not hasattr(model, "ledger_") or model.ledger_.total_epsilon == 0


def test_the_plan_refuses_noise_over_every_answers_range_as_the_fit_does(small):
    """Issue 34: a GSD run whose quietest measurement's σ exceeds [0, 1] is refused by the
    plan, from the public row count, before Run; the fit refuses it in the same words."""
    from synth.privacy.unit import Population, PrivacyUnit

    frame, schema = small
    tiny = frame.head(40)
    model = make("gsd", {"max_generations": 50})
    for eps in (0.01, 0.05, 1.0):
        budget = model.budget_for(Budget(eps, 1e-5), schema)
        planned = model.plan(Population.of(len(tiny), PrivacyUnit()), schema, budget)
        try:
            make("gsd", {"max_generations": 50}).fit(tiny, schema, Budget(eps, 1e-5))
            refused = ""
        except BudgetError as exc:
            refused = str(exc)
        assert [str(r) for r in planned.refusals] == ([refused] if refused else []), eps
        assert ("too small to measure anything" in refused) == (eps < 0.1)


def test_preview_needs_no_domains(small):
    """Before domains are learned there are no categories; the plan needs only kinds."""
    frame, _ = small
    schema = infer_schema(frame)
    assert not schema.releasable
    budget = Budget(1.0, 1e-6, {"domain": 0.1, QUERIES: 0.9})
    scales = make("gsd", {"rounds": 3}).preview(len(frame), schema, budget)
    assert scales[-1].stage == QUERIES and "3 rounds × 1 of" in scales[-1].meaning


def _measured(q, rng, workloads: int) -> np.ndarray:
    """Weight 1 on ``workloads`` random workloads of ``q``, as an adaptive search has."""
    weight = np.zeros(q.size)
    for w in rng.choice(len(q), min(workloads, len(q)), replace=False):
        weight[q.bounds[w]:q.bounds[w + 1]] = 1.0
    return weight


@pytest.mark.parametrize("measured", ["half the queries", "a few workloads, none in one class"])
def test_incremental_loss_equals_a_full_recompute(small, measured):
    """Trackers price edits from the measured queries alone; the loss they give must be the
    loss over every query, whether many are weighted or (adaptively) a few or none."""
    frame, schema = small
    space = Space(schema)
    rng = np.random.default_rng(1)
    classes = _all_classes(space, rng)
    x = space.encode(frame)
    targets = [np.clip(q.answers(x) + rng.normal(0, 0.01, q.size), 0, 1) for q in classes]
    if measured == "half the queries":
        weights = [(rng.random(q.size) < 0.5).astype(float) for q in classes]
    else:
        weights = [_measured(q, rng, 2 * (i > 0)) for i, q in enumerate(classes)]
    d = space.random(150, rng)
    trackers = [track(q, d, t, w) for q, t, w in zip(classes, targets, weights, strict=True)]
    base = loss_of(d, classes, targets, weights)
    assert sum(t.loss for t in trackers) == pytest.approx(base, abs=1e-12)
    rows = rng.integers(len(d), size=60)
    cols = rng.integers(space.d, size=60)
    values = space.random_values(cols, rng)
    values[:10] = d[rows[:10], cols[:10]]  # no-op edits cost nothing
    change = sum(t.delta(d, rows, cols, values) for t in trackers)
    assert np.all(change[:10] == 0)
    for i in range(60):
        e = d.copy()
        e[rows[i], cols[i]] = values[i]
        assert base + change[i] == pytest.approx(loss_of(e, classes, targets, weights),
                                                 abs=1e-9)
    for i in range(20):  # accepting edits keeps the residual exact
        for t in trackers:
            t.accept(d, rows[i], cols[i], values[i])
        d[rows[i], cols[i]] = values[i]
    assert sum(t.loss for t in trackers) == pytest.approx(loss_of(d, classes, targets, weights),
                                                          abs=1e-9)


def test_figure_1_toy_is_reproduced_exactly():
    """Real values all 0.5; prefixes at 0.49, 0.50, 0.51 (strict <, note D24): the answers
    are (0, 0, 1), which RAP++'s relaxation cannot reach and GSD must match exactly."""
    schema = Schema((Column("x", "numeric", lower=0, upper=1, public=True),))
    space = Space(schema)
    t = np.array([0.49, 0.50, 0.51])
    q = Prefixes(space, [-1] * 3, [0] * 3, [0] * 3, t, [0] * 3, t, [0, 1, 2])
    real = np.full((100, 1), 0.5)
    target = q.answers(real)
    assert list(target) == [0, 0, 1]
    result = project(space, [q], [target], [np.ones(3)], 100, np.random.default_rng(0),
                     tol=0.0, max_generations=50_000)
    assert result.loss == 0 and result.max_error == 0
    assert np.all((result.table >= 0.50) & (result.table < 0.51))
    assert list(q.answers(result.table)) == [0, 0, 1]


@pytest.mark.parametrize("classes, levels, bound", [(["cat2"], 5, 0.0), (["cat2", "bt"], 2, 1)])
def test_noise_free_two_way_marginals_reach_one_row_of_error(small, classes, levels, bound):
    """ρ → ∞: the search fits a 200-row table's 2-way marginals to within one row (exactly,
    for categorical marginals). With all 5 binary-tree levels on so small a table it stalls
    at two rows: a local optimum of single-cell moves, so the test uses 2 levels."""
    frame, schema = small
    space = Space(schema)
    classes = build(space, classes, np.random.default_rng(0), levels=levels)
    x = space.encode(frame.iloc[:200])
    targets = [q.answers(x) for q in classes]
    weights = [np.ones(q.size) for q in classes]
    rows = 200
    result = project(space, classes, targets, weights, rows, np.random.default_rng(0),
                     max_generations=100_000)
    worst = max(np.abs(t - q.answers(result.table)).max()
                for q, t in zip(classes, targets, strict=True))
    assert worst <= bound / rows + 1e-12
    assert result.max_error == pytest.approx(worst)


def test_early_stop_and_warm_start(small):
    frame, schema = small
    space = Space(schema)
    classes = build(space, ["cat2"], np.random.default_rng(0))
    targets = [classes[0].answers(space.encode(frame))]
    weights = [np.ones(classes[0].size)]
    first = project(space, classes, targets, weights, 100, np.random.default_rng(0),
                    max_generations=100_000)
    assert first.generations < 100_000  # stopped early: no progress over a window
    again = project(space, classes, targets, weights, 100, np.random.default_rng(1),
                    init=first.table, max_generations=0)
    assert again.loss == pytest.approx(first.loss)  # the warm start is the best elite
    with pytest.raises(ParameterError, match="warm start must have shape"):
        project(space, classes, targets, weights, 50, np.random.default_rng(0), init=first.table)


@pytest.fixture(scope="module")
def fitted(small):
    frame, schema = small
    events = []
    model = make("gsd", {"rounds": 3, "per_round": 2, "rows": 100, "max_generations": 3000})
    model.fit(frame, schema, Budget(1.0, 1e-6, {QUERIES: 1.0}),
              FitContext(postprocessing_seed=0, on_event=events.append))
    return model, events


def zcdp_events_epsilon(events, delta: float) -> float:
    """ε at δ of ``events`` by dp-accounting's RDP accountant: Gaussians by their noise
    multiplier σ/Δ₂, each exponential-mechanism pick as ε²/8-zCDP (Cesar–Rogers 2021); not the
    package's own zCDP bookkeeping and conversion."""
    from dp_accounting import dp_event, rdp

    accountant = rdp.RdpAccountant(orders=list(np.linspace(1.01, 400, 40_000)))
    for e in events:
        if isinstance(e, Gaussian):
            accountant.compose(dp_event.GaussianDpEvent(e.sigma / e.sensitivity))
        else:
            accountant.compose(dp_event.ZCDpEvent(rho=e.epsilon**2 / 8), e.count)
    return accountant.get_epsilon(delta)


def test_budget_split_and_ledger(fitted, small):
    model, events = fitted
    frame = small[0]
    n = len(frame)
    entries = model.ledger_.entries
    # per round: one selection of 2 workloads, then one Gaussian per measured workload
    assert [type(e.event) for e in entries] == [Exponential, Gaussian, Gaussian] * 3
    picks = [e.event for e in entries if isinstance(e.event, Exponential)]
    gaussians = [e.event for e in entries if isinstance(e.event, Gaussian)]
    assert all(p.count == 2 and p.sensitivity == pytest.approx(1 / n) for p in picks)
    # every call (a pick or a measurement) gets the same share of ρ
    rho_call = gaussians[0].rho
    assert all(p.epsilon ** 2 / 8 == pytest.approx(rho_call) for p in picks)
    assert all(g.rho == pytest.approx(rho_call) for g in gaussians)
    # accounted independently, the run costs its whole (1, 1e-6) and no more: 1 % more ρ per
    # call would overspend
    assert zcdp_events_epsilon([e.event for e in entries], 1e-6) == pytest.approx(1.0, abs=1e-4)
    louder = [Gaussian(g.sigma / math.sqrt(1.01), g.sensitivity) for g in gaussians] + [
        Exponential(p.epsilon * math.sqrt(1.01), p.sensitivity, p.count) for p in picks]
    assert zcdp_events_epsilon(louder, 1e-6) > 1.0
    assert model.ledger_.total_epsilon == pytest.approx(1.0, abs=1e-9)
    assert model.ledger_.total_epsilon <= 1.0 + 1e-9 and model.ledger_.total_delta == 1e-6
    # the ledger's running total after each entry is what those entries cost together
    for i in range(len(entries)):
        so_far = sum(x.epsilon for x in entries[:i + 1])
        assert so_far == pytest.approx(
            zcdp_events_epsilon([x.event for x in entries[:i + 1]], 1e-6), abs=1e-4)
    for e in entries:
        if isinstance(e.event, Gaussian):  # Δ₂ = √(2·partitions)/n under replacement
            sens = math.sqrt(2) if "cat2" in e.description else math.sqrt(10)
            assert e.event.sensitivity == pytest.approx(sens / n)
    assert len(set(model.measured_)) == 6  # no workload measured twice
    rounds = [e.step for e in events if isinstance(e, Progress) and e.stage == "project"]
    assert rounds[-1] == 3 and {"loss", "max_error", "generation"} <= set(
        next(e for e in events if isinstance(e, Progress) and e.stage == "project").metrics)


def test_each_measurement_weighs_in_the_loss_by_its_precision(small):
    """As in a Gaussian likelihood, an answer weighs 1/σ² (the quietest workload's 1): at one
    ρ per call a binary-tree pair, Δ₂ = √(2·levels), weighs 1/levels of a categorical pair."""
    frame, schema = small
    space = Space(schema)
    classes = build(space, ["cat2", "bt"], np.random.default_rng(0), levels=5)
    run = GSD._start(classes, Population(len(frame), len(frame)),
                     {"rounds": 1, "per_round": 1, "rho": 0.01})
    run.true.extend(q.answers(space.encode(frame)) for q in classes)
    model = GSD()
    model.ledger_ = Ledger(Budget(10.0, 1e-6, {QUERIES: 1.0}), {QUERIES: "zcdp"})
    model._measure(run, np.arange(run.first[-1]), 1)
    cat, bt = (np.unique(w) for w in run.weights)
    assert cat == pytest.approx([1.0]) and bt == pytest.approx([1 / 5])


def test_sample_has_the_schemas_columns_and_bounds(fitted, small):
    model, _ = fitted
    out = model.sample(250)
    assert list(out.columns) == small[1].names and len(out) == 250
    assert out["age"].between(17, 90).all() and set(out["a"]) <= {"x", "y", "z"}


def test_one_shot_measures_every_workload_once(small):
    frame, schema = small
    model = make("gsd", {"one_shot": True, "queries": "cat2+bt", "rows": 50,
                         "max_generations": 500})
    model.fit(frame, schema, Budget(2.0, 1e-6, {QUERIES: 1.0}), FitContext(postprocessing_seed=1))
    entries = model.ledger_.entries
    # each of the 2 numbers' own marginal, then the 3 categorical pairs and 7 with a number
    assert len(entries) == len(model.measured_) == 2 + 3 + 7
    assert [m.split(":")[0] for m in model.measured_] == ["num1"] * 2 + ["cat2"] * 3 + ["bt"] * 7
    numbers = {c.name for c in schema if c.kind == "numeric"}
    assert {m.split(": ")[1] for m in model.measured_[:2]} == numbers
    rhos = [e.event.rho for e in entries]
    assert rhos == pytest.approx([rhos[0]] * 12)  # the same share for each
    assert zcdp_events_epsilon([e.event for e in entries], 1e-6) == pytest.approx(2.0, abs=1e-4)


@pytest.mark.parametrize("queries", QUERY_CLASSES)
def test_every_query_class_runs_on_the_sample(sample, queries):
    table, schema = sample
    model = make("gsd", {"queries": queries, "rounds": 2, "per_round": 2, "rows": 80,
                         "max_generations": 400, "random_queries": 300})
    model.fit(table, schema, Budget(1.0, 1e-6, {QUERIES: 1.0}), FitContext(postprocessing_seed=0))
    out = model.sample(100)
    assert list(out.columns) == schema.names and out.notna().any().all()
    assert model.ledger_.total_epsilon <= 1.0 + 1e-9


def test_cancel_stops_within_a_round_and_keeps_a_true_ledger(small):
    frame, schema = small
    model = make("gsd", {"rounds": 3, "rows": 100, "max_generations": 100_000})
    seen = []

    def stop():
        return len(seen) > 5

    with pytest.raises(Cancelled):
        model.fit(frame, schema, Budget(1.0, 1e-6, {QUERIES: 1.0}),
                  FitContext(postprocessing_seed=0, on_event=seen.append, should_stop=stop,
                             min_interval=0))
    assert not hasattr(model, "schema_")
    assert 0 < model.ledger_.total_epsilon < 1.0


@pytest.mark.parametrize("params, budget, error, message", [
    ({"rounds": 0}, 1.0, ParameterError, "rounds \\(T\\) must be an integer ≥ 1, got 0"),
    ({"rounds": "many"}, 1.0, ParameterError,
     "rounds \\(T\\) must be an integer or null, got 'many'"),
    ({"rows": 0}, 1.0, ParameterError, "rows must be an integer ≥ 1"),
    ({"rows": float("inf")}, 1.0, ParameterError, "rows must be an integer or null, got inf"),
    ({"per_round": 0}, 1.0, ParameterError, "per_round \\(S\\) must be an integer ≥ 1"),
    ({"queries": "cat4"}, 1.0, ParameterError, "queries must be classes joined by"),
    ({"queries": "cat2+cat2"}, 1.0, ParameterError, "lists a class twice"),
    ({"rounds": 20, "per_round": 1}, 1.0, ParameterError, "exceeds the 10 workloads"),
    ({"mutations": 0, "crossovers": 0}, 1.0, ParameterError, "mutations \\+ crossovers"),
    ({}, 1e-7, BudgetError, "too small to measure anything"),
])
def test_bad_parameters_are_named(small, params, budget, error, message):
    frame, schema = small
    model = make("gsd", {"rounds": 2, **params})
    with pytest.raises(error, match=message):
        model.fit(frame, schema, Budget(budget, 1e-6, {QUERIES: 1.0}),
                  FitContext(postprocessing_seed=0))
    assert model.ledger_.total_epsilon == 0  # refused before anything was spent


def test_preview_matches_what_the_fit_records(fitted, small):
    model, _ = fitted
    frame, schema = small
    pick, measure = model.preview(len(frame), schema, Budget(1.0, 1e-6, {QUERIES: 1.0}))
    # the fit's measurements: 3 rounds × 2 workloads, each at the ρ per call it charged
    rho_call = next(e.event.rho for e in model.ledger_.entries if isinstance(e.event, Gaussian))
    assert f"{rho_call:.3g}" in measure.scale
    assert "3 rounds × 2 of 10 workloads" in measure.meaning
    # the preview's events are the events the fit charges: its selection, and a measurement
    # at the same ρ (its σ is the widest workload's)
    assert pick.event in {e.event for e in model.ledger_.entries}
    assert measure.event.rho == pytest.approx(rho_call)
    with pytest.raises(ParameterError, match="rounds × per_round = 50 exceeds the 10"):
        make("gsd", {"rounds": 50}).preview(len(frame), schema,  # refused as the fit would
                                            Budget(1.0, 1e-6, {QUERIES: 1.0}))


@pytest.mark.parametrize("n", [25, 400])
def test_the_search_is_no_larger_than_the_table_by_default(small, n):
    """A tiny table gets a search over as many rows as it has (n is public under replace-one),
    not 2,000 rows that its noise-dominated answers cannot steer."""
    frame, schema = small
    model = make("gsd", {"rounds": 2, "max_generations": 500})
    model.fit(frame.head(n), schema, Budget(1.0, 1e-3), FitContext(postprocessing_seed=0))
    assert model.table_.shape[0] == min(n, ROWS) and len(model.sample()) == n
    assert make("gsd", {"rows": 30, "rounds": 1, "max_generations": 50}).fit(
        frame.head(n), schema, Budget(1.0, 1e-3), FitContext(postprocessing_seed=0)
    ).table_.shape[0] == 30  # as given


def test_a_narrow_table_is_measured_in_one_shot_by_default(small):
    """20 rounds by default at ε = 1, but the 5-column table offers 10 workloads: picking
    half of them or more costs as much ρ as measuring, so the default picks none and measures
    all 10 and the 2 numbers' own once, each with ρ/12, less noise than 10 rounds' ρ/20. A
    given T still selects among the pairs (each at most once: 11 rounds are refused)."""
    frame, schema = small

    def fit(params: dict) -> GSD:
        return make("gsd", {"max_generations": 200, **params}).fit(
            frame, schema, Budget(1.0, 1e-6), FitContext(postprocessing_seed=0))

    def events(model: GSD, kind: type) -> list:
        return [e.event for e in model.ledger_.entries if isinstance(e.event, kind)]

    default, adaptive = fit({}), fit({"rounds": 10})
    assert not events(default, Exponential) and len(default.measured_) == 12
    planned = default.plan_.recipe
    assert planned["one_shot"] and len(planned.steps) == 12
    assert not any(isinstance(step.event, Exponential) for step in planned.steps)
    assert len(events(adaptive, Exponential)) == 10 and len(adaptive.measured_) == 10
    assert not any(m.startswith("num1") for m in adaptive.measured_)
    # σ per unit of Δ₂ is 1/√(2ρ'): ρ' = ρ/12 in one shot, ρ/20 in 10 rounds
    per_unit = [np.array([e.sigma / e.sensitivity for e in events(m, Gaussian)])
                for m in (default, adaptive)]
    assert per_unit[0] == pytest.approx(per_unit[1][0] * math.sqrt(12 / 20), rel=1e-9)
    assert per_unit[1] == pytest.approx(per_unit[1][0], rel=1e-9)
    assert len(events(fit({"rounds": 5, "per_round": 2}), Exponential)) == 5
    with pytest.raises(ParameterError, match="exceeds the 10 workloads"):
        fit({"rounds": 11})


def test_default_rounds_keep_the_noise_within_an_answers_range_on_a_tiny_table(small):
    """25 rows at ε = 1 cannot afford 10 rounds (σ would exceed 1, the range of an answer):
    the default measures fewer workloads with more budget each, and runs."""
    frame, schema = small
    model = make("gsd", {"max_generations": 200})
    model.fit(frame.head(25), schema, Budget(1.0, 1e-3), FitContext(postprocessing_seed=0))
    measured = [e.event for e in model.ledger_.entries if isinstance(e.event, Gaussian)]
    assert 1 <= len(measured) < 10 and all(e.sigma <= 1 for e in measured)
    with pytest.raises(BudgetError, match=r"Raise ε$"):  # one round is already too many
        make("gsd").fit(frame.head(25), schema, Budget(0.01, 1e-3),
                        FitContext(postprocessing_seed=0))
