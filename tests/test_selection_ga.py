"""DP-Select's GA engine: exact cached counts, distinct rows, a toy it must solve, and the
method behind the interface (ledger, events, bad settings; cancelling is in
test_dpselect)."""

import time

import numpy as np
import pytest

from synth.errors import ParameterError
from synth.methods import FitContext, Progress, make
from synth.methods.dpselect.ga import Subsets, select_subset
from synth.methods.dpselect.rows import cells
from synth.privacy.budget import Budget
from synth.privacy.composition import bounded_range

GA = {"gan__epochs": 0.5, "gan__batch_size": 256, "pool_multiplier": 3, "engine": "ga",
      "generations": 5, "population": 20, "parents": 4}


def toy(k=300, options=6, seed=0):
    """A pool of k·options rows over two columns (sizes 4 and 3) and its one 2-way marginal."""
    rng = np.random.default_rng(seed)
    codes = np.stack([rng.integers(4, size=k * options), rng.integers(3, size=k * options)], 1)
    sizes = np.array([4, 3])
    return codes, sizes, [(0, 1)]


def subsets(codes, sizes, marginals, k, rng):
    pool_cells = cells(codes, sizes, marginals)
    slots = rng.permutation(len(codes))[: k * (len(codes) // k)].reshape(k, -1)
    return Subsets(pool_cells[slots].astype(np.int32), codes.T[:, slots].astype(np.int16),
                   12, marginals, np.ones(1)), slots, pool_cells


def test_breeding_keeps_counts_exact_and_rows_distinct():
    rng = np.random.default_rng(1)
    codes, sizes, marginals = toy()
    genes, slots, pool_cells = subsets(codes, sizes, marginals, 300, rng)
    pop = genes.random(30, rng)
    for _ in range(5):
        pop = genes.breed(pop[:6], 24, 0.5, 0.05, rng)
        assert pop.shape == (30, 300 + 12)
        for chromosome in pop:
            rows = slots[np.arange(300), chromosome[:300]]
            assert len(np.unique(rows)) == 300
            assert np.array_equal(np.bincount(pool_cells[rows, 0], minlength=12),
                                  chromosome[300:])
    assert len({tuple(c[:300]) for c in pop}) > 20  # tilts and mutation make them differ


def test_huge_epsilon_matches_a_marginal_the_pool_can_match():
    """The private section is 300 rows all in cells 0–5: with ε → ∞ the GA moves most of a
    uniform pool's mass there, far beyond a random subset."""
    rng = np.random.default_rng(2)
    codes, sizes, marginals = toy()
    real = cells(np.stack([rng.integers(2, size=300), rng.integers(3, size=300)], 1), sizes,
                 marginals)
    pool = cells(codes, sizes, marginals)
    rows, distance, result = select_subset(real, pool, codes, np.array([12]), marginals,
                                           np.ones(1), 1e6, 1e-5, rng, sensitivity=2 / 300,
                                           generations=40)
    assert len(np.unique(rows)) == 300
    chosen = np.bincount(pool[rows, 0], minlength=12) / 300
    reference = np.bincount(real[:, 0], minlength=12) / 300
    assert distance == pytest.approx(np.abs(chosen - reference).sum())
    assert distance < 0.3 < 1.0  # a random subset is ≈ 1.0 away (half its mass is elsewhere)
    assert result.history[-1] > result.history[0]


def fit(table, schema, eps=1.0, **params):
    model = make("dpselect", {**GA, **params})
    events = []
    model.fit(table, schema, Budget(eps, 1e-5, model.default_shares(schema)),
              FitContext(postprocessing_seed=0, on_event=events.append))
    return model, events


@pytest.mark.parametrize("sections", [None, 2])
def test_ga_engine_ledger_events_and_output(sample, sections):
    table, schema = sample
    model, events = fit(table, schema, eps=2.0, sections=sections)
    _, sel = model.ledger_.entries
    assert model.ledger_.total_epsilon == pytest.approx(2.0, rel=1e-3)
    n = 5 * 4 + 1
    assert sel.event.count == n  # N_g·N_s + 1 selections, in each section (parallel)
    assert f"{sections or 1} disjoint section(s)" in sel.description
    assert sel.event.sensitivity == pytest.approx(2 / (len(table) // (sections or 1)))
    assert bounded_range(sel.event.epsilon, n, 0.8e-5) <= 1.6 * (1 + 1e-12)
    assert bounded_range(sel.event.epsilon * 1.001, n, 0.8e-5) > 1.6
    assert "DP simple GA" in sel.description
    out = model.sample()
    assert len(out) == len(table) and list(out.columns) == schema.names
    steps = [e for e in events if isinstance(e, Progress) and e.stage == "select"]
    assert steps[-1].step == steps[-1].total == 5 * (sections or 1)
    assert "distance" in steps[-1].metrics and len(model.selection_distance_) == (sections or 1)


# one setting out of its range: tests/test_validation.py; here the rules between settings
@pytest.mark.parametrize(("params", "message"), [
    ({"parents": 300}, "cannot exceed the population"), ({"distance": "l2"}, "l1 distance only"),
])
def test_bad_ga_settings_are_refused_before_training(sample, params, message):
    table, schema = sample
    model = make("dpselect", {**GA, "gan__epochs": 50, **params})
    started = time.monotonic()
    with pytest.raises(ParameterError, match=message):
        model.fit(table, schema, Budget(1.0, 1e-5, model.default_shares(schema)))
    assert time.monotonic() - started < 1.0  # refused before 50 epochs of training
