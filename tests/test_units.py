"""The unit of protection: contribution bounding, the unit-level sensitivities and threshold,
the unit relation in released files, DP-SGD over units, and an audit of the row count.

Under "replace one unit" every row of one person (at most k after bounding) may change. Each
test checks one consequence against a brute force, a hand computation or a statistical bound,
never against a copy of the package's formula.
"""

import copy
import itertools
import json
import math
import pickle
import re

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binom

from synth.errors import BudgetError, ParameterError, SchemaError
from synth.methods import FitContext, make
from synth.privacy import mechanisms as m
from synth.privacy.audit import epsilon_lower_bound, event_counts
from synth.privacy.budget import Budget, Ledger
from synth.privacy.domains import keep_threshold, laplace_scale
from synth.privacy.events import (
    LaplaceThreshold,
    PoissonSampledGaussian,
    fraction_linf,
    fractions_l2,
    histogram_l1,
    histogram_l2,
    row_count_l1,
)
from synth.privacy.unit import ROWS_SHARE, Population, PrivacyUnit, bound, rows_event
from synth.schema import Column, Schema

K = 3  # rows kept per unit in the fits below
PEOPLE = 300
SCHEMA = Schema((
    Column("colour", "categorical", categories=("red", "green", "blue"), public=True),
    Column("size", "categorical", categories=("S", "L"), public=True),
    Column("age", "numeric", lower=18, upper=80, integer=True, public=True)))
TINY = {
    "independent": {},
    "gsd": {"rounds": 2, "rows": 50, "max_generations": 50},
    "dpgan": {"epochs": 1, "batch_size": 16, "components": 4, "critic_hidden": 8,
              "generator_batch": 64},
}
ID = re.compile(r"P-\d{6}")  # the unit IDs: no synthetic value or ledger text can look like one


def unit_id(i: int) -> str:
    return f"P-{i:06d}"


@pytest.fixture(scope="module")
def panel():
    """300 people with 1 … 6 rows each, shuffled so that a unit's rows are not adjacent."""
    rng = np.random.default_rng(19)
    counts = rng.integers(1, 7, PEOPLE)
    n = int(counts.sum())
    table = pd.DataFrame({
        "person": np.repeat([unit_id(i) for i in range(PEOPLE)], counts),
        "colour": rng.choice(["red", "green", "blue"], n),
        "size": rng.choice(["S", "L"], n),
        "age": rng.integers(18, 81, n)})
    return table.sample(frac=1, random_state=1).reset_index(drop=True), counts


# ---- bounding ----------------------------------------------------------------------------


def test_bound_keeps_min_of_count_and_k_rows_of_every_unit_without_the_column(panel):
    """Every unit keeps exactly min(c_u, k) of its own rows, so Σ min(c_u, k) rows in all; the
    unit column is gone, and the returned ids number the units 0 … U − 1, row by row."""
    table, counts = panel
    table = table.assign(owner=table["person"], row=np.arange(len(table)))
    for k in (1, 2, 3, 6):
        kept, ids = bound(table, PrivacyUnit("person", k))
        assert "person" not in kept.columns
        assert len(kept) == len(ids) == np.minimum(counts, k).sum()
        assert kept["row"].is_unique  # no row twice
        original = table.set_index("row").loc[kept["row"]]
        assert (original["owner"].to_numpy() == kept["owner"].to_numpy()).all()  # real rows
        per_unit = kept.groupby("owner").size()
        want = pd.Series(np.minimum(counts, k), index=[unit_id(i) for i in range(PEOPLE)])
        pd.testing.assert_series_equal(per_unit.sort_index(), want.sort_index(),
                                       check_names=False)
        assert sorted(set(ids.tolist())) == list(range(PEOPLE))
        pairs = set(zip(ids.tolist(), kept["owner"], strict=True))
        assert len(pairs) == PEOPLE  # one id per owner and one owner per id: aligned


def test_the_checklist_counts_the_rows_a_cap_leaves_out(panel):
    """Issue 49: the steward's checklist says how many rows the cap left out of the fit,
    Σ max(c_u − k, 0), beside the rows the table has (the synthetic count alone hid it)."""
    from synth.checklist import release_checklist

    table, counts = panel
    synthetic = table.drop(columns=["person"]).iloc[:10]
    for k in (2, 6):
        rows = release_checklist(table, synthetic, SCHEMA, PrivacyUnit("person", k))[0].text
        dropped = int(np.maximum(counts - k, 0).sum())
        assert rows.startswith(f"10 synthetic rows from {len(table):,} private rows")
        assert (f"{dropped:,} of them left out of the fit as rows beyond {k} of one "
                "'person'" in rows) == (dropped > 0), rows


def test_bound_chooses_uniformly_within_a_unit():
    """A unit of 10 rows with k = 2: each row is kept with probability 2/10. 200 such units
    bounded 20 times give 4,000 independent draws per position within a unit; each
    position's count must lie in its Binomial(4000, 0.2) interval at 99.9 % confidence
    (Bonferroni over the 10 positions). Keeping the first rows, or favouring any, fails."""
    units, size, k, calls = 200, 10, 2, 20
    table = pd.DataFrame({"person": np.repeat([unit_id(i) for i in range(units)], size),
                          "position": np.tile(np.arange(size), units)})
    hits = np.zeros(size, dtype=int)
    for _ in range(calls):
        kept, ids = bound(table, PrivacyUnit("person", k))
        assert (np.bincount(ids) == k).all()
        hits += np.bincount(kept["position"], minlength=size)
    trials, p, alpha = units * calls, k / size, 0.001 / size
    low, high = binom.ppf(alpha / 2, trials, p), binom.isf(alpha / 2, trials, p)
    assert ((low <= hits) & (hits <= high)).all(), (hits, low, high)


def test_bound_draws_from_the_os_not_from_a_seed():
    """Bounding is part of the mechanism (OS entropy, as the noise): numpy's global seed must
    not replay it. Two calls after np.random.seed(0) choose differently (200 units of
    10 rows: the same choice twice has probability 45^-200); only the test switch replays."""
    table = pd.DataFrame({"person": np.repeat([unit_id(i) for i in range(200)], 10),
                          "row": np.arange(2000)})
    unit = PrivacyUnit("person", 2)
    np.random.seed(0)
    first = bound(table, unit)[0]["row"].to_numpy()
    np.random.seed(0)
    second = bound(table, unit)[0]["row"].to_numpy()
    assert not np.array_equal(first, second)
    with m.replayable_noise(3):
        a = bound(table, unit)[0]["row"].to_numpy()
    with m.replayable_noise(3):
        b = bound(table, unit)[0]["row"].to_numpy()
    assert np.array_equal(a, b)


def test_one_row_per_undeclared_unit_is_the_table_itself(panel):
    """Without a unit column every row is its own unit: the table passes unchanged."""
    table, _ = panel
    kept, ids = bound(table, PrivacyUnit())
    assert kept is table and np.array_equal(ids, np.arange(len(table)))


# ---- bad unit columns --------------------------------------------------------------------


@pytest.mark.parametrize("values, says", [
    (["a", None, "b", "b"], "no value on 1 row"),
    (["a", "a", "a", "a"], "one value for every row"),
    (["a", "b", "c", "d"], "different value on every row"),
])
def test_unusable_unit_columns_are_refused_by_name(values, says):
    """A column with missing values, one unit or one unit per row cannot bound a person's
    rows: each is refused, naming the column and why."""
    table = pd.DataFrame({"who": values, "x": [1, 2, 3, 4]})
    with pytest.raises(SchemaError, match=f"'who'.*{says}"):
        bound(table, PrivacyUnit("who", 2))


def test_missing_unit_column_is_refused_before_anything_is_spent(panel):
    """A unit column the table lacks is refused by name, by bound and by fit, whose ledger
    then holds nothing."""
    table, _ = panel
    with pytest.raises(SchemaError, match="'household' is not in the table"):
        bound(table, PrivacyUnit("household", 2))
    model = make("independent")
    with pytest.raises(SchemaError, match="'household'"):
        model.fit(table, SCHEMA, Budget(1.0, 1e-5, unit=PrivacyUnit("household", 2)))
    assert model.ledger_.entries == []


def test_unit_column_in_the_schema_is_refused_by_fit(panel):
    """The unit column is never released: a schema that would synthesise it is refused."""
    table, _ = panel
    schema = Schema((*SCHEMA.columns, Column("person", "categorical",
                                             categories=tuple(table["person"].unique()),
                                             public=True)))
    model = make("independent")
    with pytest.raises(SchemaError, match="'person' is the privacy unit"):
        model.fit(table, schema, Budget(1.0, 1e-5, unit=PrivacyUnit("person", 2)))
    assert model.ledger_.entries == []


def test_privacy_unit_declarations_are_checked():
    """k > 1 needs a column to group by; k must be a whole number ≥ 1; a name must be one."""
    with pytest.raises(ParameterError, match="needs a privacy-unit column"):
        PrivacyUnit(None, 3)
    with pytest.raises(ParameterError, match="max_rows_per_unit must be an integer ≥ 1"):
        PrivacyUnit("person", 0)
    with pytest.raises(ParameterError, match="max_rows_per_unit"):
        PrivacyUnit("person", 1.5)
    with pytest.raises(ParameterError, match="column name"):
        PrivacyUnit("  ", 2)
    assert PrivacyUnit("person", 2.0).max_rows == 2


@pytest.mark.parametrize(("name", "params"), [
    ("dpselect", {"engine": "rows"}), ("dpselect", {"engine": "ga"}), ("private_sampling", {})])
def test_methods_without_a_unit_calibration_refuse_k_above_one(name, params):
    """DP-Select's exponential-mechanism engines and private sampling are calibrated for one
    row per unit only; DP-Select's measure engine counts over n̂ as GSD does."""
    with pytest.raises(ParameterError, match="2 rows"):
        make(name, params).budget_for(Budget(1.0, 1e-5, unit=PrivacyUnit("person", 2)), SCHEMA)
    make(name, params).budget_for(Budget(1.0, 1e-5, unit=PrivacyUnit("person", 1)), SCHEMA)
    make("dpselect").budget_for(Budget(1.0, 1e-5, unit=PrivacyUnit("person", 2)), SCHEMA)


# ---- sensitivities -----------------------------------------------------------------------


def test_sensitivities_are_k_times_the_records():
    """Closed forms under replace-one-unit of up to k rows: a record's figure times k, and
    the bounded row count moves by k − 1 (1 row becomes k)."""
    for k in (1, 2, 5):
        for h in (1, 3, 7):
            assert histogram_l1(h, k) == 2 * h * k
            assert histogram_l2(h, k) == pytest.approx(k * math.sqrt(2 * h))
            assert fractions_l2(h, 500, k) == pytest.approx(k * math.sqrt(2 * h) / 500)
        assert fraction_linf(250, k) == pytest.approx(k / 250)
        assert row_count_l1(k) == k - 1
    assert histogram_l1() == 2 and histogram_l2() == pytest.approx(math.sqrt(2))


def stacked_histograms(rows: np.ndarray, sizes: tuple[int, ...]) -> np.ndarray:
    return np.concatenate([np.bincount(rows[:, j], minlength=s) for j, s in enumerate(sizes)])


def test_histogram_sensitivity_by_brute_force_over_units():
    """On a small table of two columns (3 and 2 cells), replace one unit's 1 … k rows by any
    other 1 … k rows: the stacked histograms' L1, L2 and L∞ change never exceeds
    histogram_l1(d, k), histogram_l2(d, k) and k, and each is reached (all k rows of a unit
    leaving the same cells for the same other cells)."""
    sizes = (3, 2)
    cells = np.array(list(itertools.product(*(range(s) for s in sizes))))
    others = np.array([[0, 1], [2, 0], [1, 1], [2, 1]])  # the rest of the table
    for k in (1, 2, 3):
        groups = [np.array(g) for size in range(1, k + 1)
                  for g in itertools.combinations_with_replacement(range(len(cells)), size)]
        tables = np.array([stacked_histograms(np.vstack([others, cells[g]]), sizes)
                           for g in groups])
        l1 = l2 = linf = 0.0
        for t in tables:
            change = np.abs(tables - t)
            l1 = max(l1, change.sum(axis=1).max())
            l2 = max(l2, np.sqrt((change**2).sum(axis=1)).max())
            linf = max(linf, change.max())
        assert l1 == pytest.approx(histogram_l1(len(sizes), k))
        assert l2 == pytest.approx(histogram_l2(len(sizes), k))
        assert linf == pytest.approx(fraction_linf(1, k))


# ---- the thresholded histogram's δ -------------------------------------------------------


def partitions(total: int, largest: int | None = None):
    """Every multiset of positive integers summing to ``total`` (largest part first)."""
    largest = total if largest is None else largest
    if total == 0:
        yield ()
        return
    for part in range(min(total, largest), 0, -1):
        for rest in partitions(total - part, part):
            yield (part, *rest)


def unit_delta(k: int, scale: float, threshold: float) -> float:
    """max over a unit's keys (counts c_j ≥ 1 summing to ≤ k, held by no other unit) of the
    union bound Σ_j Pr[c_j + Lap(b) > τ] = Σ_j ½·exp(−(τ − c_j)/b), by enumeration."""
    return max(sum(0.5 * math.exp(-(threshold - c) / scale) for c in keys)
               for total in range(1, k + 1) for keys in partitions(total))


def test_partitions_enumerate_every_split():
    """The enumeration the δ checks rely on: 5 splits of 4, 22 of 8 (the partition numbers)."""
    assert sorted(partitions(4)) == sorted([(4,), (3, 1), (2, 2), (2, 1, 1), (1, 1, 1, 1)])
    assert sum(1 for _ in partitions(8)) == 22


@pytest.mark.parametrize("scale", [0.3, 1.0, 4.0, 40.0])
def test_laplace_threshold_delta_is_the_worst_split_of_a_units_rows(scale):
    """The event's δ for k rows per unit is the largest union bound over all splits of ≤ k
    rows into keys (small b: one key of k rows; large b: k keys of one row)."""
    for k in range(1, 8):
        for threshold in (k + 0.5, k + 3.0, 2.5 * k + 10):
            event = LaplaceThreshold(scale, histogram_l1(1, k), threshold, k)
            assert event.delta == pytest.approx(unit_delta(k, scale, threshold), rel=1e-12)


@pytest.mark.parametrize("epsilon, delta", [(0.1, 1e-6), (1.0, 1e-5), (8.0, 1e-3)])
def test_keep_threshold_meets_delta_for_k_rows(epsilon, delta):
    """keep_threshold(ε, δ, k) is the smallest threshold of the event's form whose δ, by
    enumeration of a unit's splits, is within δ (and equal to it: no slack is wasted); for
    k = 1 it is the record-level τ = 1 + b·ln(1/(2δ))."""
    for k in range(1, 7):
        tau = keep_threshold(epsilon, delta, k)
        b = laplace_scale(epsilon, k)
        assert b == pytest.approx(2 * k / epsilon)
        assert unit_delta(k, b, tau) <= delta * (1 + 1e-9)
        assert unit_delta(k, b, tau) == pytest.approx(delta, rel=1e-9)
        assert LaplaceThreshold(b, histogram_l1(1, k), tau, k).delta <= delta * (1 + 1e-9)
    assert keep_threshold(epsilon, delta, 1) == pytest.approx(
        1 + 2 / epsilon * math.log(1 / (2 * delta)))


def test_laplace_threshold_refuses_a_threshold_a_unit_can_reach():
    """τ ≤ k: a unit's own key would clear it without noise, and no δ bounds that."""
    with pytest.raises(BudgetError, match="threshold"):
        LaplaceThreshold(1.0, 6.0, 3.0, 3)


# ---- DP-SGD over units -------------------------------------------------------------------


def unit_gradients(net, x, mask):
    """Each unit's gradient of its summed pair loss (softplus(−real) + softplus(fake) over
    the pairs it holds), by plain autograd on the critic as it starts."""
    import torch

    k = mask.shape[1]
    grads = []
    for u in range(len(x)):
        scores = net(x[u]).squeeze(-1)
        loss = ((torch.nn.functional.softplus(-scores[:k])
                 + torch.nn.functional.softplus(scores[k:])) * mask[u]).sum()
        grads.append(torch.autograd.grad(loss, list(net.parameters())))
    return grads


def clipped_mean(grads, clip: float, expected_batch: int):
    """Σ_u g_u·min(1, C/(‖g_u‖ + 1e-6)) / expected batch size: Opacus's clipping factor and
    its 'mean' reduction, which divides by the expected (not the drawn) batch size."""
    import torch

    total = [torch.zeros_like(g) for g in grads[0]]
    for g in grads:
        norm = torch.sqrt(sum((p**2).sum() for p in g))
        factor = min(1.0, clip / (float(norm) + 1e-6))
        total = [t + factor * p for t, p in zip(total, g, strict=True)]
    return [t / expected_batch for t in total]


def dp_sgd_update(start, x, mask, clip: float):
    """One step of the package's private critic (SGD, lr 1, noise multiplier 1e-12: the noise
    is negligible) from the critic ``start``: the change of each parameter."""
    import torch

    from synth.methods.dpgan.training import private_critic

    net = copy.deepcopy(start)
    before = [p.detach().clone() for p in net.parameters()]
    event = PoissonSampledGaussian(1 / 5, 1e-12, 1)
    private, optimizer, criterion, _ = private_critic(
        net, torch.optim.SGD(net.parameters(), lr=1.0), 40, event, clip, 8, torch.device("cpu"))
    assert optimizer.expected_batch_size == 8  # 40 units at rate 1/5
    loss = criterion(private(x), mask)
    loss.backward()
    optimizer.step()
    return [p.detach() - b for p, b in zip(private.parameters(), before, strict=True)]


@pytest.mark.filterwarnings("ignore:Secure RNG", "ignore:Full backward hook")
def test_dp_sgd_clips_each_units_summed_gradient():
    """A step on 6 units of up to k = 3 rows (x is (B, 2k, width): k real rows, then a fake
    for each; the mask marks the rows a unit holds) equals, by hand, the sum over units of
    each unit's summed pair-loss gradient clipped to C, over the expected batch size 8 (the
    drawn batch is 6). C is the median unit norm, so half the units are clipped; clipping
    each pair instead of each unit, or ignoring the mask, gives another update."""
    import torch

    from synth.methods.dpgan.networks import critic

    torch.manual_seed(0)
    k, width = 3, 5
    start = critic(width, 4)
    x = torch.randn(6, 2 * k, width)
    mask = torch.tensor([[1, 1, 1], [1, 1, 0], [1, 0, 0], [1, 1, 1], [1, 0, 0], [1, 1, 0]],
                        dtype=torch.float32)
    grads = unit_gradients(start, x, mask)
    norms = [float(torch.sqrt(sum((p**2).sum() for p in g))) for g in grads]
    clip = float(np.median(norms))
    assert sum(n > clip for n in norms) >= 2  # some units are clipped, some not
    expected = clipped_mean(grads, clip, 8)
    got = dp_sgd_update(start, x, mask, clip)
    for e, g in zip(expected, got, strict=True):
        torch.testing.assert_close(g, -e, rtol=1e-4, atol=1e-6)

    pairs = [unit_gradients(start, x[u:u + 1], torch.eye(k)[j:j + 1] * mask[u])[0]
             for u in range(len(x)) for j in range(k) if mask[u, j]]
    per_pair = clipped_mean(pairs, clip, 8)
    assert not all(torch.allclose(a, b, atol=1e-5) for a, b in zip(per_pair, expected,
                                                                       strict=True))
    unmasked = clipped_mean(unit_gradients(start, x, torch.ones_like(mask)), clip, 8)
    assert not all(torch.allclose(a, b, atol=1e-5) for a, b in zip(unmasked, expected,
                                                                       strict=True))


@pytest.mark.filterwarnings("ignore:Secure RNG", "ignore:Full backward hook")
def test_dp_sgd_ignores_padded_rows():
    """A unit of fewer than k rows is padded (with row 0's data in training); whatever the
    padded real and fake rows hold, the step is the same. Changing a held row is seen."""
    import torch

    from synth.methods.dpgan.networks import critic

    torch.manual_seed(1)
    k, width = 3, 5
    start = critic(width, 4)
    x = torch.randn(4, 2 * k, width)
    mask = torch.tensor([[1, 0, 0], [1, 1, 0], [1, 1, 1], [1, 0, 0]], dtype=torch.float32)
    clip = 100.0  # nothing clipped: any influence of a padded row would show in full
    base = dp_sgd_update(start, x, mask, clip)
    padded = x.clone()
    for u, j in zip(*np.nonzero(mask.numpy() == 0), strict=True):
        padded[u, j] = 50 * torch.randn(width)  # the padded real row
        padded[u, k + j] = 50 * torch.randn(width)  # and its fake
    for a, b in zip(base, dp_sgd_update(start, padded, mask, clip), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-7)
    held = x.clone()
    held[1, 1] = 50 * torch.randn(width)
    changed = dp_sgd_update(start, held, mask, clip)
    assert not all(torch.allclose(a, b, atol=1e-5) for a, b in zip(base, changed, strict=True))


def test_unit_rows_groups_each_units_rows_and_refuses_more_than_k():
    """The (U, k) member positions and mask that DP-SGD batches by: every row once, under
    its own unit, padding masked out."""
    pytest.importorskip("torch")
    from synth.methods.dpgan.training import unit_rows

    units = np.array([2, 0, 1, 2, 0, 2])
    members, mask = unit_rows(units, 3)
    assert mask.tolist() == [[True, True, False], [True, False, False], [True, True, True]]
    assert sorted(members[mask].tolist()) == list(range(len(units)))
    assert all((units[members[u][mask[u]]] == u).all() for u in range(3))
    with pytest.raises(ValueError, match="more than k = 2"):
        unit_rows(units, 2)


# ---- the unit relation in released files -------------------------------------------------


@pytest.mark.filterwarnings("ignore:Secure RNG", "ignore:Full backward hook")
@pytest.mark.parametrize("name", ["independent", "gsd", "dpgan"])
def test_release_states_the_unit_and_never_shows_its_ids(panel, name):
    """A fit protecting people (≤ 3 rows each): the sample has only the schema's columns and
    n̂ ∈ [U, 3U] rows; no person ID appears in the sample's CSV or the ledger's JSON; the
    ledger states the unit relation, charges the 'rows' stage (Laplace, sensitivity k − 1 = 2)
    before the method's entries, stays within the budget and round-trips. The fitted model
    keeps no ID either."""
    table, _ = panel
    budget = Budget(1.0, 1e-5, unit=PrivacyUnit("person", K))
    model = make(name, TINY[name]).fit(table, SCHEMA, budget, FitContext(postprocessing_seed=0))
    out = model.sample()
    assert list(out.columns) == SCHEMA.names
    assert PEOPLE <= len(out) <= K * PEOPLE
    assert model.population_ == Population(len(out), PEOPLE, K)
    csv, text = out.to_csv(index=False), json.dumps(model.ledger_.to_dict())
    assert not ID.search(csv) and not ID.search(text)
    assert not hasattr(model, "_units")  # each row's unit, needed only during the fit
    state = pickle.dumps({k: v for k, v in vars(model).items() if k != "ledger_"})
    assert not ID.search(state.decode("latin-1"))  # nor does the fitted model keep any ID
    ledger = json.loads(text)
    assert "'person'" in ledger["relation"] and "≤ 3 rows" in ledger["relation"]
    assert all(e["relation"] == ledger["relation"] for e in ledger["entries"])
    first, *rest = ledger["entries"]
    assert first["stage"] == "rows" and rest and all(e["stage"] != "rows" for e in rest)
    assert first["event"] == {"type": "laplace", "sensitivity": 2.0,
                              "scale": pytest.approx(2 / (ROWS_SHARE * budget.epsilon))}
    assert first["epsilon"] == pytest.approx(ROWS_SHARE * budget.epsilon)
    # the ledger may round up by its relative tolerance (1e-9), never more
    assert ledger["total_epsilon"] <= budget.epsilon * (1 + 1e-9)
    assert ledger["total_delta"] <= budget.delta * (1 + 1e-9)
    again = Ledger.from_dict(ledger)
    assert again.budget.unit == PrivacyUnit("person", K)
    assert again.to_dict()["relation"] == ledger["relation"]
    assert again.total_epsilon == pytest.approx(ledger["total_epsilon"])


def test_learned_categories_use_the_units_threshold(panel):
    """A data-derived category domain under a unit of 3 rows: the domain entry is the
    thresholded histogram for k = 3 (sensitivity 2k, b = 2k/ε_c), whose δ is within the
    domain share's."""
    table, _ = panel
    schema = SCHEMA.declare_public(["size", "age"])
    budget = Budget(2.0, 1e-5, unit=PrivacyUnit("person", K))
    model = make("independent").fit(table, schema, budget, FitContext(postprocessing_seed=0))
    domain = [e for e in model.ledger_.entries if e.stage == "domain"]
    assert len(domain) == 1
    event = domain[0].event
    assert isinstance(event, LaplaceThreshold) and event.rows_per_unit == K
    eps, delta = model.ledger_.budget.allowance("domain")
    assert event.sensitivity == 2 * K and event.scale == pytest.approx(2 * K / eps)
    assert unit_delta(K, event.scale, event.threshold) <= delta * (1 + 1e-9)
    assert model.ledger_.to_dict()["entries"][1]["event"]["rows_per_unit"] == K


# ---- an audit of the row count -----------------------------------------------------------


AUDIT_TRIALS = 20_000  # per table: OpenDP's exact Laplace takes ~25 µs a draw


def test_row_count_audit_on_neighbouring_unit_tables(panel):
    """Two tables that differ in one whole unit (a person with 1 row replaced by one with 5,
    of whom bounding keeps k = 3): their bounded row counts differ by k − 1 = 2, the number
    of units does not. The 'rows' stage's Laplace, run 20,000 times on each with fresh
    OpenDP noise, proves no ε above the event's at 99.9 % confidence (Clopper–Pearson,
    Bonferroni over the events 'noisy > t'); the same audit with the record-level scale
    1/ε (sensitivity 1 instead of k − 1) proves a violation."""
    table, _ = panel
    unit = PrivacyUnit("person", K)
    single = table["person"].map(table["person"].value_counts()) == 1
    person = table.loc[single, "person"].iloc[0]
    other = table[table["person"] != person]
    newcomer = table.iloc[:5].assign(person="P-999999")
    d, d2 = pd.concat([other, table[table["person"] == person]]), pd.concat([other, newcomer])
    (kept, ids), (kept2, ids2) = bound(d, unit), bound(d2, unit)
    assert ids.max() == ids2.max() == PEOPLE - 1  # U is the same: public
    assert len(kept2) - len(kept) == row_count_l1(K) == 2

    epsilon = 1.0
    event = rows_event(epsilon, K)
    assert event.epsilon == pytest.approx(epsilon)
    thresholds = len(kept) + np.linspace(-1.0, 8.0, 10)

    def audit(scale: float) -> float:
        a = m.laplace(np.full(AUDIT_TRIALS, float(len(kept))), scale)
        b = m.laplace(np.full(AUDIT_TRIALS, float(len(kept2))), scale)
        return epsilon_lower_bound(event_counts(b, thresholds), event_counts(a, thresholds),
                                   AUDIT_TRIALS)

    assert audit(event.scale) <= epsilon
    assert audit(1 / epsilon) > 1.5 * epsilon  # its true ε is 2
