"""DP-GAN and DP-Select behind the method interface: privacy, behaviour and bad parameters.

Runs are tiny (a fraction of an epoch, small pools) so the whole file takes seconds per test.
What a run charges is checked against accountants the package does not use for it
(dp-accounting's PLD built by hand from the replace-one model, its RDP accountant on the
exponential mechanism's zCDP bound) and against the meaning of the parameters and the DP
simple GA paper's published defaults (../shared/notes/dp-simple-ga.md §3), never against a
copy of the package's own formulas.
"""

import math
import threading

import numpy as np
import pandas as pd
import pytest

from synth.encoding import Discretizer
from synth.errors import Cancelled, ParameterError
from synth.methods import FitContext, Progress, Spent, StageStarted, make
from synth.privacy.budget import STOPPED, Budget
from synth.privacy.composition import bounded_range
from synth.privacy.events import Exponential, PoissonSampledGaussian
from synth.privacy.mechanisms import replayable_noise
from synth.schema import prepare

TINY = {"epochs": 0.5, "batch_size": 256}
# DP-Select's pool: the same GAN (its parameters as gan__epochs); the measure engine has its
# own file
SELECT = {**{f"gan__{k}": v for k, v in TINY.items()}, "pool_multiplier": 3, "engine": "rows"}
# the DP simple GA's default generations N_g at each tabulated ε (Humphries & Kerschbaum 2023,
# §5; ../shared/notes/dp-simple-ga.md §3), and its default N_s = 10 parents
PAPER_GENERATIONS = {10**-2: 10, 10**-1.5: 10, 10**-1: 20, 10**-0.5: 50, 1.0: 75,
                     10**0.5: 100, 10.0: 120, 10**1.5: 120}
PAPER_PARENTS = 10


def dpsgd_epsilon(event: PoissonSampledGaussian, delta: float, pessimistic: bool) -> float:
    """ε of DP-SGD's steps under replace-one, by dp-accounting's PLD built directly: each step
    is (1−q)N(0, σ²) + qN(1, σ²) against (1−q)N(0, σ²) + qN(−1, σ²) in units of the clipping
    norm (a replaced record's clipped gradient swaps for another's). The pessimistic estimate
    bounds the true ε from above, the optimistic one from below."""
    from dp_accounting.pld import privacy_loss_distribution as pld
    from dp_accounting.privacy_accountant import NeighboringRelation

    step = pld.from_gaussian_mechanism(
        event.noise_multiplier, sensitivity=1, sampling_prob=event.sampling_rate,
        neighboring_relation=NeighboringRelation.REPLACE_ONE, pessimistic_estimate=pessimistic,
        use_connect_dots=pessimistic, value_discretization_interval=1e-4)
    return step.self_compose(event.steps).get_epsilon_for_delta(delta)


def selections_epsilon(event: Exponential, delta: float) -> float:
    """ε of ``event.count`` ε_s-exponential mechanisms by dp-accounting's RDP accountant on
    their zCDP bound: an ε-bounded-range mechanism is ε²/8-zCDP (Cesar–Rogers 2021), a route
    independent of the bounded-range composition the package plans with."""
    from dp_accounting import dp_event, rdp

    accountant = rdp.RdpAccountant(orders=list(np.linspace(1.01, 400, 4000)))
    accountant.compose(dp_event.ZCDpEvent(rho=event.epsilon**2 / 8), event.count)
    return accountant.get_epsilon(delta)


def fit(name, table, schema, eps=1.0, delta=1e-5, seed=0, **params):
    model = make(name, {**(TINY if name == "dpgan" else SELECT), **params})
    events = []
    model.fit(table, schema, Budget(eps, delta, model.default_shares(schema)),
              FitContext(postprocessing_seed=seed, on_event=events.append))
    return model, events


def check_output(out, schema, rows):
    assert list(out.columns) == schema.names and len(out) == rows
    for col in schema:
        values = out[col.name]
        if col.kind == "numeric":
            assert values.dtype == np.int64 and values.between(col.lower, col.upper).all()
        else:
            assert set(values.fillna("<missing>")) <= set(col.categories)


def check_dpsgd_plan(event, n: int, batch_size: int, epochs: float) -> None:
    """The plan means what its parameters say: Poisson batches of ~batch_size rows, and the
    fewest steps whose expected passes over the table reach ``epochs``."""
    assert isinstance(event, PoissonSampledGaussian)
    q = event.sampling_rate
    assert batch_size * n / (n + batch_size) < q * n <= batch_size
    assert event.steps * q >= epochs * (1 - 1e-12) and (event.steps - 1) * q < epochs


def check_least_noise(event, epsilon: float, delta: float) -> None:
    """The planned steps cost at most (ε, δ), and 1 % less noise would cost more."""
    assert dpsgd_epsilon(event, delta, pessimistic=True) <= epsilon * (1 + 1e-4)
    less = PoissonSampledGaussian(event.sampling_rate, event.noise_multiplier * 0.99,
                                  event.steps)
    assert dpsgd_epsilon(less, delta, pessimistic=False) > epsilon


def test_dpgan_spends_its_budget_with_the_least_noise_that_fits(sample):
    table, schema = sample
    model, events = fit("dpgan", table, schema, eps=2.0)
    (entry,) = model.ledger_.entries
    event = entry.event
    check_dpsgd_plan(event, len(table), 256, 0.5)
    check_least_noise(event, 2.0, 1e-5)
    assert model.ledger_.total_epsilon <= 2.0 and model.ledger_.total_delta == 1e-5
    check_output(model.sample(700), schema, 700)
    progress = [e for e in events if isinstance(e, Progress) and e.stage == "gan"]
    assert progress[-1].step == progress[-1].total == event.steps  # every planned step ran
    assert {"critic_loss", "generator_loss", "epsilon"} <= set(progress[-1].metrics)
    assert progress[-1].metrics["epsilon"] == pytest.approx(model.ledger_.total_epsilon)
    # charged before the first step: the Spent event comes before any progress of the stage
    kinds = [type(e) for e in events]
    assert kinds.index(Spent) < events.index(progress[0])


def test_empty_poisson_batches_take_their_noise_only_step(sample):
    table, schema = sample
    model, events = fit("dpgan", table.head(40), schema, epochs=2, batch_size=1)
    (entry,) = model.ledger_.entries
    # batches of one row from 40: q = 1/40, and two passes are 80 steps, most of them empty
    assert entry.event.sampling_rate == pytest.approx(1 / 40) and entry.event.steps == 80
    progress = [e for e in events if isinstance(e, Progress) and e.stage == "gan"]
    assert progress[-1].step == 80  # the empty batches took their steps too
    check_least_noise(entry.event, 1.0, 1e-5)
    check_output(model.sample(50), schema, 50)


def test_training_caps_torch_threads_and_gives_back_the_callers(sample):
    """A fit trains on at most MAX_THREADS torch threads (more wait on each other), and the
    caller's own setting is back once it ends, or fails."""
    import torch

    from synth.methods.dpgan.training import MAX_THREADS, threads

    table, schema = sample
    before = torch.get_num_threads()
    seen = []
    model = make("dpgan", TINY)
    try:
        torch.set_num_threads(MAX_THREADS + 1)
        model.fit(table.head(600), schema, Budget(1.0, 1e-5, model.default_shares(schema)),
                  FitContext(min_interval=0, on_event=lambda e: seen.append(
                      torch.get_num_threads()) if isinstance(e, Progress) and e.stage == "gan"
                      else None))
        assert seen and max(seen) <= MAX_THREADS
        assert torch.get_num_threads() == MAX_THREADS + 1
        with pytest.raises(RuntimeError), threads(1):
            assert torch.get_num_threads() == 1
            raise RuntimeError("a fit that fails")
        assert torch.get_num_threads() == MAX_THREADS + 1
    finally:
        torch.set_num_threads(before)


def test_dpgan_noise_is_fresh_but_the_test_switch_replays_it(sample):
    table, schema = sample
    a = fit("dpgan", table, schema, seed=3)[0].sample(300, seed=1)
    b = fit("dpgan", table, schema, seed=3)[0].sample(300, seed=1)
    assert not a.equals(b)  # the same seed twice: two releases
    with replayable_noise(5):
        c, _ = fit("dpgan", table, schema, seed=3)
    with replayable_noise(5):
        d, _ = fit("dpgan", table, schema, seed=3)
    pd.testing.assert_frame_equal(c.sample(300, seed=1), d.sample(300, seed=1))
    record = c.ledger_.to_dict()
    assert record["entries"][0]["replayable_noise"] and "not a private release" in record["noise"]


@pytest.mark.filterwarnings("ignore:Secure RNG", "ignore:Full backward hook")
def test_private_critic_is_dp_sgd_as_planned():
    """The one DP-SGD seam: Opacus's Poisson batches at the plan's rate, its noise multiplier
    and clipping norm, and a criterion whose backward clips per pair."""
    import torch

    from synth.methods.dpgan.networks import critic
    from synth.methods.dpgan.training import private_critic

    event = PoissonSampledGaussian(1 / 10, 1.7, 5)
    net = critic(6, 4)
    private, optimizer, criterion, batches = private_critic(
        net, torch.optim.SGD(net.parameters(), lr=0.1), 100, event, 0.3, 10,
        torch.device("cpu"))
    assert len(batches) == 10 and batches.sample_rate == pytest.approx(0.1)
    assert optimizer.noise_multiplier == 1.7 and optimizer.max_grad_norm == 0.3
    loss = criterion(private(torch.rand(8, 2, 6)), torch.ones(8, 1))
    loss.backward()
    assert all(p.grad is not None for p in private.parameters())
    with pytest.raises(RuntimeError, match="sampling rate"):
        private_critic(net, torch.optim.SGD(net.parameters(), lr=0.1), 100,
                       PoissonSampledGaussian(1 / 7, 1.7, 5), 0.3, 10, torch.device("cpu"))


def test_torch_is_imported_only_when_a_gan_is_fitted():
    import subprocess
    import sys

    code = "import sys, synth.methods; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


def test_model_space_keeps_point_masses_and_integers(adult_parts, adult_public):
    train = prepare(adult_parts[0], adult_public)
    disc = Discretizer(adult_public, bins=16, exact_integers=128)
    back = disc.decode(disc.codes(train), np.random.default_rng(0))
    for name in ("capital-gain", "capital-loss", "hours-per-week", "age"):
        assert (back[name] == np.round(back[name])).all()
        np.testing.assert_array_equal(back[name] == 0, train[name] == 0)
    np.testing.assert_array_equal(back["hours-per-week"] == 40, train["hours-per-week"] == 40)
    assert (back["capital-gain"] == 99_999).sum() == (train["capital-gain"] == 99_999).sum()


@pytest.mark.parametrize("distance", ["l1", "l2", "kolmogorov"])
@pytest.mark.parametrize("sections", [1, 3])
def test_dpselect_ledger_and_per_step_epsilon(sample, distance, sections):
    table, schema = sample
    n = len(table)
    model, events = fit("dpselect", table, schema, eps=2.0, distance=distance,
                        sections=sections)
    gan, sel = model.ledger_.entries
    # gan_share 0.2 of (2, 1e-5): (0.4, 2e-6) for the GAN, (1.6, 8e-6) for the selection
    assert model.ledger_.budget.allowance("gan") == pytest.approx((0.4, 0.2e-5))
    assert model.ledger_.budget.allowance("select") == pytest.approx((1.6, 0.8e-5))
    assert model.ledger_.total_epsilon <= 2.0
    assert math.isclose(model.ledger_.total_delta, 1e-5, rel_tol=1e-12)
    check_dpsgd_plan(gan.event, n, 256, 0.5)
    check_least_noise(gan.event, 0.4, 0.2e-5)
    # one exponential-mechanism pick per output row of a section; the sections split the n
    # rows as evenly as they can, so the largest has ⌈n/S⌉ rows
    picks = [e for e in events if isinstance(e, Progress) and e.stage == "select"]
    count = sel.event.count
    assert isinstance(sel.event, Exponential)
    assert picks[-1].step == picks[-1].total == count
    assert count * sections >= n > (count - 1) * sections
    # replace-one changes a normalised marginal of a section of n_s rows by 2/n_s in L1 (notes
    # G6, G15): the smallest section, ⌊n/S⌋ rows, sets the sensitivity
    assert sel.event.sensitivity == pytest.approx(2 / (n // sections))
    # an independent accountant: the picks cost at most the selection's share
    assert selections_epsilon(sel.event, 0.8e-5) <= 1.6
    # and ε per pick is the largest the planned bounded-range composition allows (that
    # theorem is checked against the paper's numbers in test_composition.py)
    assert bounded_range(sel.event.epsilon, count, 0.8e-5) <= 1.6 * (1 + 1e-12)
    assert bounded_range(sel.event.epsilon * 1.001, count, 0.8e-5) > 1.6
    assert model.ledger_.total_epsilon == pytest.approx(2.0, rel=1e-3)  # nothing left over
    check_output(model.sample(), schema, n)
    assert {f"distance_{s + 1}" for s in range(sections)} <= set(picks[-1].metrics)


@pytest.mark.parametrize("selection_epsilon", sorted(PAPER_GENERATIONS))
def test_ga_selections_follow_the_papers_generations(sample, selection_epsilon):
    """The DP simple GA makes N_g·N_s + 1 selections (Algorithm 4.1), with the paper's N_g at
    the selection's ε and N_s parents, whatever the section's size; ``generations`` and
    ``parents`` override them. Planned, not run: the preview shows the event the fit charges."""
    table, schema = sample
    budget = Budget(selection_epsilon / 0.8, 1e-5)  # gan_share 0.2 leaves 0.8 to selection

    def count(**params) -> int:
        model = make("dpselect", {**SELECT, "engine": "ga", **params})
        (scale,) = [s for s in model.preview(len(table), schema, budget) if s.stage == "select"]
        assert scale.event.epsilon < selection_epsilon  # a share of it per selection
        return scale.event.count

    generations = PAPER_GENERATIONS[selection_epsilon]
    assert count() == generations * PAPER_PARENTS + 1
    assert count(parents=4) == generations * 4 + 1
    assert count(generations=3) == 3 * PAPER_PARENTS + 1
    assert count(sections=4) == count()  # the GA's cost does not grow with a section's size


def test_pool_no_bigger_than_the_table_still_works(sample):
    table, schema = sample
    model, _ = fit("dpselect", table, schema, pool_multiplier=1, candidates=5, sections=2)
    out = model.sample()
    assert len(out) == len(table)


def test_only_numeric_or_only_categorical_columns(sample):
    table, schema = sample
    for kind in ("numeric", "categorical"):
        keep = [c.name for c in schema if c.kind == kind][:3]
        sub = schema.drop([c for c in schema.names if c not in keep])
        model, _ = fit("dpselect", table[keep], sub)
        check_output(model.sample(200), sub, 200)
    one = schema.drop([c for c in schema.names if c != "age"])
    check_output(fit("dpselect", table[["age"]], one)[0].sample(50), one, 50)


@pytest.mark.parametrize(("stage", "engine"), [
    ("gan", {}), ("select", {}),
    ("select", {"engine": "ga", "generations": 500, "population": 200, "parents": 4})])
def test_cancel_mid_stage_stops_at_the_next_step(sample, stage, engine):
    table, schema = sample
    stop = threading.Event()
    at_stop, after = [], []

    def on_event(event):
        if stop.is_set():
            after.append(event)
        elif isinstance(event, Progress) and event.stage == stage:
            stop.set()
            at_stop.append(event.step)

    model = make("dpselect", {**SELECT, "gan__epochs": 3, "pool_multiplier": 20, **engine})
    with pytest.raises(Cancelled):
        model.fit(table, schema, Budget(1.0, 1e-5, model.default_shares(schema)),
                  FitContext(postprocessing_seed=0, on_event=on_event, should_stop=stop.is_set))
    # stopped at its next check: no progress and no new stage once the stop was asked for
    assert at_stop and not [e for e in after if isinstance(e, Progress | StageStarted)], after
    with pytest.raises(Exception, match="not fitted"):
        model.sample(5)
    # the ledger keeps what ran: the stopped stage is settled below what was planned, and at
    # least to what had run when the stop was asked for
    stopped = model.ledger_.entries[-1]
    assert stopped.stage == stage and stopped.status == STOPPED
    (planned,) = [c.event for c in model.plan_.steps if c.stage == stage]  # what it planned
    ran = stopped.event.steps if stage == "gan" else stopped.event.count
    if stage == "gan" or not engine:  # the ga engine reports generations, not selections
        assert ran >= at_stop[0]
    assert 0 < ran < (planned.steps if stage == "gan" else planned.count)
    assert model.ledger_.spent(stage)[0] < model.ledger_.budget.allowance(stage)[0]


# one parameter out of its range: tests/test_validation.py, for every parameter of every method
@pytest.mark.parametrize(("params", "message"), [
    ({"sections": 10**6}, "sections"), ({"gan__batch_size": 10**6}, "gan__batch_size"),
])
def test_bad_parameters_are_refused_by_name(sample, params, message):
    table, schema = sample
    model = make("dpselect", {**SELECT, **params})
    with pytest.raises(ParameterError, match=message):
        model.fit(table, schema, Budget(1.0, 1e-5))
