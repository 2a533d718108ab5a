"""DP-GAN training: the critic learns with DP-SGD (Opacus); the generator only sees the critic.

Each DP-SGD step draws a Poisson batch of units of protection (Opacus's ``DPDataLoader``; a
unit is a record unless the run declares one) and pairs every real row of a unit with a fresh
fake row; a sample is a unit, (B, k rows + k fakes, width), and its loss the sum of its pairs'
discriminator losses (:class:`~.networks.PairLoss`), so per-sample clipping bounds each
unit's summed gradient, its whole influence on a step. This is user-level DP-SGD (McMahan et
al. 2018: sample users, clip each user's update), which costs no more noise as k grows;
k-fold group privacy through the accountant would multiply the sensitivity by k instead.
Ghost clipping computes the per-sample norms without materialising per-sample gradients
(10× faster here), and takes the unit's rows as a sequence. Under replacement one unit's
clipped gradient is swapped for another's, so a step's sum moves by at most 2C; the noise
multiplier of the planned event is calibrated for exactly that
(:meth:`~.method.DPGAN._recipe`).

The planned event is charged before the first step, the loop never takes a step beyond it,
and a run that stops early settles the ledger to the steps it took. The Poisson batches and
the DP-SGD noise come from :func:`~synth.privacy.mechanisms.torch_generator`. The generator's
steps, and the moving average of its iterates that is released, are post-processing.
"""

from __future__ import annotations

import contextlib
import itertools
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

import numpy as np
import torch
from opacus import PrivacyEngine
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from synth.methods.base import FitContext
from synth.methods.dpgan.codes import PrivateCodes
from synth.methods.dpgan.networks import Mixture, PairLoss, critic
from synth.privacy.accounting import pld_epsilon
from synth.privacy.budget import Ledger
from synth.privacy.events import PoissonSampledGaussian
from synth.privacy.mechanisms import torch_generator

# the released generator is a moving average of its iterates (post-processing: free) over a
# window of 60 % of the steps, at most 1,000. On Adult (~1,700 steps, so 1,000) at ε = 2 it
# lifted median tree accuracy from 0.715 to 0.789 and cut 2-way TVD from 0.171 to 0.133
# (window 100: 0.760 and 0.140; 510: tree 0.781, TVD2 0.103 against 0.780 and 0.096 with the
# larger generator batch). A fixed window of 1,000 kept the untrained early iterates on the
# 4,166-row sample (330 steps at ε = 1: 2-way TVD 0.49; 198 steps' window: 0.23; 100: 0.15).
EMA_WINDOW, EMA_SHARE = 1000, 0.6
# torch's intra-op threads during a fit, at most: its steps are small, and more threads wait
# on each other. On Adult (benchmarks/results/threads.json, 2 cores) a fit trained in 60 s on
# 1 thread, 47 s on 2, 82 s on 4 and 104 s on 16; on a 16-core machine 16 threads took 147 s
# against ~90 s on 2 (issue 21). 4 against 2 on a many-core machine is not measured yet.
MAX_THREADS = 2
LIVE_EPSILON_EVERY = 5.0  # seconds between the live view's PLD accountings (0.1 s each)
# Opacus and torch warnings that say nothing about this use: Opacus's secure_mode needs
# torchcsprng, which has no build for our torch, so the noise and batch generators are seeded
# from os.urandom instead (torch_generator); the critic's inputs need no gradient.
_BENIGN = ("Secure RNG turned off", "Full backward hook is firing")


@dataclass(frozen=True)
class GanSettings:
    """The GAN's non-private knobs (see :class:`~.method.DPGAN`)."""

    components: int
    critic_hidden: int
    generator_batch: int
    lr_critic: float
    lr_generator: float


def private_critic(critic: nn.Module, optimizer: torch.optim.Optimizer, rows: int,
                   event: PoissonSampledGaussian, max_grad_norm: float, batch_size: int,
                   device: torch.device):
    """DP-SGD for ``critic`` by Opacus's ``make_private``: Poisson batches of ``rows`` unit
    indices,
    ghost clipping at ``max_grad_norm``, the event's noise multiplier, noise and batches from
    :func:`torch_generator`.

    Returns Opacus's (critic, optimizer, criterion, batches): the criterion is a
    :class:`~.networks.PairLoss` whose result's ``backward()`` runs ghost clipping's two passes.
    Opacus's own accountant (add/remove neighbours) is not ours and is never read.
    """
    loader = DataLoader(TensorDataset(torch.arange(rows)), batch_size=batch_size,
                        generator=torch_generator())  # Poisson draws
    if len(loader) != round(1 / event.sampling_rate):
        raise RuntimeError("the plan's sampling rate is not the loader's")
    return PrivacyEngine(accountant="rdp").make_private(
        module=critic, optimizer=optimizer, data_loader=loader,
        noise_multiplier=event.noise_multiplier, max_grad_norm=max_grad_norm,
        poisson_sampling=True, grad_sample_mode="ghost", criterion=PairLoss(),
        noise_generator=torch_generator(str(device)))


def train_gan(codes: PrivateCodes, sizes: np.ndarray, event: PoissonSampledGaussian,
              ledger: Ledger, stage: str, ctx: FitContext, rng: np.random.Generator, *,
              units: np.ndarray | None, batch_size: int, max_grad_norm: float,
              settings: GanSettings) -> tuple[np.ndarray, np.ndarray]:
    """Train on the private integer ``codes`` (columns of ``sizes`` codes; row i belongs to
    unit ``units[i]``, at most ``ledger``'s k rows each, or is its own unit when ``units`` is
    None) by DP-SGD as planned in ``event``, charged to ``ledger``'s ``stage``; ``rng`` seeds
    the networks' initialisation and fake rows only.
    Returns the averaged generator's (prior logits, per-component column logits) as numpy
    arrays."""
    with warnings.catch_warnings(), threads(MAX_THREADS):
        for message in _BENIGN:
            warnings.filterwarnings("ignore", message=message)
        members, mask = ((np.arange(codes.rows)[:, None], np.ones((codes.rows, 1), bool))
                         if units is None else unit_rows(units, ledger.budget.unit.max_rows))
        gan = _Training(codes, sizes, members, mask, event,
                        torch.device(ctx.resolve_device()), rng, batch_size, max_grad_norm,
                        settings)
        entry = None
        try:
            per = (" per unit (its rows' gradients summed, then clipped)"
                   if mask.shape[1] > 1 else "")
            entry = ledger.charge(stage, event, f"GAN critic, {event.steps:,} DP-SGD steps of "
                                                f"expected batch {batch_size}, clipping norm "
                                                f"{max_grad_norm:g}{per}")
            ctx.stage(stage, event.steps, f"DP-SGD critic: {event.steps} steps, noise "
                                          f"multiplier {event.noise_multiplier:.3g}")
            gan.run(ctx, stage, _LiveEpsilon(ledger, stage, event))
        except BaseException:  # Ctrl-C included
            if entry is not None and gan.step < event.steps:  # the ledger keeps what ran
                ledger.settle(entry, replace(event, steps=gan.step))
            raise
    return gan.released()


@contextlib.contextmanager
def threads(limit: int) -> Iterator[None]:
    """torch's thread count capped at ``limit`` (never raised) for the block, then restored:
    the caller's own setting is theirs."""
    before = torch.get_num_threads()
    torch.set_num_threads(max(1, min(before, limit)))
    try:
        yield
    finally:
        torch.set_num_threads(before)


def unit_rows(units: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(U, k) positions of each unit's rows (padded with row 0) and the (U, k) mask of the
    rows it holds, for units numbered 0 … U − 1 holding at most k rows each."""
    order = np.argsort(units, kind="stable")
    grouped = units[order]
    count = int(grouped[-1]) + 1 if len(grouped) else 0
    rank = np.arange(len(units)) - np.searchsorted(grouped, grouped)
    if len(rank) and rank.max() >= k:
        raise ValueError(f"a unit holds more than k = {k} rows: bound the table first")
    members, mask = np.zeros((count, k), dtype=np.int64), np.zeros((count, k), dtype=bool)
    members[grouped, rank], mask[grouped, rank] = order, True
    return members, mask


class _Training:
    """The networks, their optimizers and the private critic's batches, and the steps."""

    def __init__(self, codes: PrivateCodes, sizes: np.ndarray, members: np.ndarray,
                 mask: np.ndarray, event: PoissonSampledGaussian, device: torch.device,
                 rng: np.random.Generator, batch_size: int, max_grad_norm: float,
                 settings: GanSettings):
        torch.manual_seed(int(rng.integers(2**63 - 1)))  # initialisation, generator steps
        # the critic's fakes, one per real row of a Poisson batch, have their own stream: the
        # batch sizes are the mechanism's secret, and must not shift the generator steps'
        # draws (which the post-processing seed would then replay into the release)
        self.fake_rng = torch.Generator(device=device)
        self.fake_rng.manual_seed(int(rng.integers(2**63 - 1)))
        self.device, self.steps, self.fakes_per_step = device, event.steps, settings.generator_batch
        self.width = int(sizes.sum())
        self.generator = Mixture([int(s) for s in sizes], settings.components).to(device)
        net = critic(self.width, settings.critic_hidden).to(device)
        self.offsets = torch.as_tensor(np.concatenate([[0], np.cumsum(sizes)[:-1]]),
                                       device=device)  # codes → one-hot positions
        self.codes, self.members, self.mask = codes, members, mask  # a unit's rows, padded
        self.per_window = codes.steps_per_window(batch_size * mask.shape[1])
        self.opt_g = torch.optim.Adam(self.generator.parameters(), lr=settings.lr_generator,
                                      betas=(0.5, 0.9))
        opt_c = torch.optim.Adam(net.parameters(), lr=settings.lr_critic, betas=(0.5, 0.9))
        self.critic, self.opt_c, self.criterion, self.batches = private_critic(
            net, opt_c, len(members), event, max_grad_norm, batch_size, device)
        self.average = [p.detach().clone() for p in self.generator.parameters()]
        self.decay = 1 - 1 / max(1.0, min(EMA_WINDOW, EMA_SHARE * self.steps))
        self.step, self.critic_loss = 0, float("nan")

    def run(self, ctx: FitContext, stage: str, live: _LiveEpsilon) -> None:
        """Steps until the plan's last (never one beyond the plan's noise): one critic step,
        one generator step, the average."""
        for real, batches in self.windows(ctx.beat):
            for rows, mask in batches:
                ctx.check()
                self.critic_step(real, rows, mask)
                generator_loss = self.generator_step()
                self.update_average()
                ctx.progress(stage, self.step, self.steps, critic_loss=self.critic_loss,
                             generator_loss=generator_loss, epsilon=live(self.step))

    def windows(self, beat: Callable[[], None] = lambda: None
                ) -> Iterator[tuple[torch.Tensor, list]]:
        """The plan's Poisson batches of units, a window of steps at a time: the one-hot
        positions of the rows the window's batches hold, and per step its units' rows (as
        positions among those) and mask. The batches are drawn before their rows are read;
        ``beat`` runs between draws (a window of a large table takes seconds to draw)."""
        # copied: a batch's tensor is a view that keeps a large storage alive (1,700 batches
        # of a 2M-row table held 9.5 GB, against 0.5 GB copied)
        draws = (beat() or idx.numpy().copy() for _ in itertools.count()
                 for (idx,) in self.batches)
        left = self.steps - self.step
        while left > 0:
            units = list(itertools.islice(draws, min(left, self.per_window)))
            left -= len(units)
            drawn = np.concatenate(units)
            held = np.unique(self.members[drawn][self.mask[drawn]])
            real = torch.as_tensor(self.codes.take(held), device=self.device) + self.offsets
            last = max(len(held) - 1, 0)  # a padding row may lie past the held rows
            yield real, [(torch.as_tensor(np.minimum(np.searchsorted(held, self.members[u]),
                                                     last), device=self.device),
                          torch.as_tensor(self.mask[u], dtype=torch.float32,
                                          device=self.device)) for u in units]

    def critic_step(self, real: torch.Tensor, rows: torch.Tensor, mask: torch.Tensor) -> None:
        """One DP-SGD step on a Poisson batch of units (``rows``: (B, k) positions in
        ``real``), each real row paired with a fake row (padding rows too, masked out of the
        loss: the draws do not depend on the data)."""
        self.opt_c.zero_grad(set_to_none=True)
        if len(rows):
            b, k = rows.shape
            reals = torch.zeros(b, k, self.width, device=self.device).scatter_(
                2, real[rows], 1.0)
            with torch.no_grad():
                fakes = self.generator(b * k, self.fake_rng).view(b, k, self.width)
            loss = self.criterion(self.critic(torch.cat([reals, fakes], dim=1)), mask)
            loss.backward()
            self.critic_loss = loss.item()
        else:  # an empty Poisson batch still takes its step: noise only, as accounted
            for p in self.critic.parameters():
                p.grad = torch.zeros_like(p)
        self.step += 1  # counted before its noise is drawn: a stop inside still pays it
        self.opt_c.step()

    def generator_step(self) -> float:
        """One generator update through the critic; it never sees real rows, so it is free."""
        with _frozen(self.critic):
            self.opt_g.zero_grad(set_to_none=True)
            fakes = self.generator(self.fakes_per_step)
            loss = nn.functional.softplus(-self.critic(fakes)).mean()
            loss.backward()
            self.opt_g.step()
        return float(loss.detach())

    @torch.no_grad()
    def update_average(self) -> None:
        """The released generator: a moving average of the iterates (post-processing)."""
        for avg, p in zip(self.average, self.generator.parameters(), strict=True):
            avg.lerp_(p, 1 - self.decay if self.step > 1 else 1.0)

    def released(self) -> tuple[np.ndarray, np.ndarray]:
        prior, table = (a.cpu().numpy().astype(float) for a in self.average)
        return prior, table


@contextlib.contextmanager
def _frozen(private: nn.Module) -> Iterator[None]:
    """The private critic as a fixed function: no gradients for its parameters, and Opacus's
    per-sample hooks off (``disable_hooks``), since a generator step is no DP-SGD step."""
    private.disable_hooks()
    for p in private.parameters():
        p.requires_grad_(False)
    try:
        yield
    finally:
        for p in private.parameters():
            p.requires_grad_(True)
        private.enable_hooks()


class _LiveEpsilon:
    """ε spent after a step, for the live view: the ledger's at the last step, otherwise a
    PLD accounting of the steps so far at most every ``LIVE_EPSILON_EVERY`` seconds."""

    def __init__(self, ledger: Ledger, stage: str, event: PoissonSampledGaussian):
        self.ledger, self.stage, self.event = ledger, stage, event
        self.delta = ledger.budget.allowance(stage)[1]
        self.value, self.at = 0.0, time.monotonic()

    def __call__(self, step: int) -> float:
        if step == self.event.steps:
            self.value = self.ledger.spent(self.stage)[0]
        elif time.monotonic() - self.at >= LIVE_EPSILON_EVERY:
            self.value = pld_epsilon([replace(self.event, steps=step)], self.delta)
            self.at = time.monotonic()
        return self.value
