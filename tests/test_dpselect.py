"""DP-GAN and DP-Select behind the method interface: privacy, behaviour and bad parameters.

Runs are tiny (a fraction of an epoch, small pools) so the whole file takes seconds per test.
"""

import math
import threading
import time

import numpy as np
import pandas as pd
import pytest

from synth.encoding import Discretizer
from synth.errors import Cancelled, ParameterError
from synth.methods import FitContext, Progress, Spent, make
from synth.privacy.accounting import pld_epsilon
from synth.privacy.budget import STOPPED, Budget
from synth.privacy.composition import bounded_range
from synth.privacy.events import Exponential, PoissonSampledGaussian
from synth.privacy.mechanisms import replayable_noise
from synth.schema import prepare

TINY = {"epochs": 0.5, "batch_size": 256}
SELECT = {**TINY, "pool_multiplier": 3}


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


def test_dpgan_spends_its_budget_with_the_least_noise_that_fits(sample):
    table, schema = sample
    model, events = fit("dpgan", table, schema, eps=2.0)
    (entry,) = model.ledger_.entries
    event = entry.event
    assert isinstance(event, PoissonSampledGaussian)
    assert event.steps == math.ceil(0.5 * math.ceil(len(table) / 256))
    assert model.ledger_.total_epsilon <= 2.0 and model.ledger_.total_delta == 1e-5
    assert model.ledger_.total_epsilon == pytest.approx(2.0, rel=1e-3)
    # the calibrated σ is the least that fits: 0.5 % less noise would overspend
    less = PoissonSampledGaussian(event.sampling_rate, event.noise_multiplier * 0.995,
                                  event.steps)
    assert pld_epsilon([less], 1e-5) > 2.0
    check_output(model.sample(700), schema, 700)
    progress = [e for e in events if isinstance(e, Progress) and e.stage == "gan"]
    assert progress[-1].step == progress[-1].total == event.steps
    assert {"critic_loss", "generator_loss", "epsilon"} <= set(progress[-1].metrics)
    assert progress[-1].metrics["epsilon"] == pytest.approx(model.ledger_.total_epsilon)
    # charged before the first step: the Spent event comes before any progress of the stage
    kinds = [type(e) for e in events]
    assert kinds.index(Spent) < kinds.index(Progress)


def test_empty_poisson_batches_take_their_noise_only_step(sample):
    table, schema = sample
    model, _ = fit("dpgan", table.head(40), schema, epochs=2, batch_size=1)
    (entry,) = model.ledger_.entries
    assert entry.event.steps == 80  # with q = 1/40, many of the batches are empty
    assert model.ledger_.total_epsilon == pytest.approx(1.0, rel=1e-3)
    check_output(model.sample(50), schema, 50)


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
    loss = criterion(private(torch.rand(8, 2, 6)))
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
    model, events = fit("dpselect", table, schema, eps=2.0, distance=distance,
                        sections=sections)
    gan, sel = model.ledger_.entries
    assert model.ledger_.total_epsilon == pytest.approx(2.0, rel=1e-3)
    assert model.ledger_.total_epsilon <= 2.0
    assert math.isclose(model.ledger_.total_delta, 1e-5, rel_tol=1e-12)
    assert gan.epsilon <= 0.4 and gan.epsilon == pytest.approx(0.4, rel=1e-3)
    steps = math.ceil(len(table) / sections)
    assert isinstance(sel.event, Exponential) and sel.event.count == steps
    # replace-one with public section sizes: 2/n_s for the smallest section
    assert sel.event.sensitivity == pytest.approx(2 / (len(table) // sections))
    assert bounded_range(sel.event.epsilon, steps, 0.8e-5) <= 1.6 * (1 + 1e-12)
    assert bounded_range(sel.event.epsilon * 1.001, steps, 0.8e-5) > 1.6  # the largest that fits
    check_output(model.sample(), schema, len(table))
    picks = [e for e in events if isinstance(e, Progress) and e.stage == "select"]
    assert picks[-1].step == picks[-1].total == steps
    assert {f"distance_{s + 1}" for s in range(sections)} <= set(picks[-1].metrics)


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
def test_cancel_mid_stage_within_a_second(sample, stage, engine):
    table, schema = sample
    stop = threading.Event()
    seen = []

    def on_event(event):
        if isinstance(event, Progress) and event.stage == stage and not stop.is_set():
            stop.set()
            seen.append(time.monotonic())

    model = make("dpselect", {**SELECT, "epochs": 3, "pool_multiplier": 20, **engine})
    with pytest.raises(Cancelled):
        model.fit(table, schema, Budget(1.0, 1e-5, model.default_shares(schema)),
                  FitContext(postprocessing_seed=0, on_event=on_event, should_stop=stop.is_set))
    assert seen and time.monotonic() - seen[0] < 1.0
    with pytest.raises(Exception, match="not fitted"):
        model.sample(5)
    # the ledger keeps what ran: the stopped stage is settled below what was planned
    stopped = model.ledger_.entries[-1]
    assert stopped.stage == stage and stopped.status == STOPPED
    planned = (model.plan(len(table), *model.ledger_.budget.allowance("gan")) if stage == "gan"
               else model.select_event(len(table), *model.ledger_.budget.allowance("select")))
    ran = stopped.event.steps if stage == "gan" else stopped.event.count
    assert ran < (planned.steps if stage == "gan" else planned.count)
    assert model.ledger_.spent(stage)[0] < model.ledger_.budget.allowance(stage)[0]


# one parameter out of its range: tests/test_validation.py, for every parameter of every method
@pytest.mark.parametrize(("params", "message"), [
    ({"sections": 10**6}, "sections"), ({"batch_size": 10**6}, "batch_size"),
])
def test_bad_parameters_are_refused_by_name(sample, params, message):
    table, schema = sample
    model = make("dpselect", {**SELECT, **params})
    with pytest.raises(ParameterError, match=message):
        model.fit(table, schema, Budget(1.0, 1e-5))
