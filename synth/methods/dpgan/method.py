"""DP-GAN: a tabular GAN whose critic is trained with DP-SGD (Opacus); the generator only ever
sees the critic, so it and everything sampled from it are post-processing.

Model space (from the public schema only): every column becomes one softmax block, categories
as they are and numbers as shape-aware bins over their public bounds (see
:class:`~synth.encoding.Discretizer`), so point masses such as a capital gain of 0, a claim
amount of 0 or 40 hours a week come back exactly, and integers stay integers within their
bounds.

The networks are in :mod:`.networks` (a latent-class mixture generator, whose moving average is
released) and DP-SGD's set-up and loop in :mod:`.training`, imported only when a GAN is fitted
(torch and Opacus take seconds to import). Here: the method, its parameters and its plan, the
noise multiplier calibrated so that the planned steps cost the stage's (ε, δ) under the ``pld``
accountant for replace-one neighbours (:func:`synth.privacy.accounting.pld_epsilon`).
"""

from __future__ import annotations

import functools
import importlib
import math
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from synth.encoding import Discretizer, finalize, model_width
from synth.errors import BudgetError, Fix, ParameterError
from synth.methods.base import FitContext, Synthesizer
from synth.methods.dpgan.codes import PrivateCodes
from synth.plan import Recipe, Step
from synth.privacy.accounting import calibrate, gaussian_needs_delta, zcdp_rho
from synth.privacy.budget import Budget, Ledger
from synth.privacy.events import PoissonSampledGaussian
from synth.privacy.unit import Population
from synth.schema import Schema
from synth.source import Chunks
from synth.validation import Param, specs

GAN = "gan"
MAX_SGD_EPSILON = 1e3  # DP-Select at ε = 1e4 (its GAN share 2,000) ran in 21 s; 2e5 hung
# The plan's cost model, on 2 cores (benchmarks/estimates.py): 2,120 critic steps on Adult
# took 44 s on a quiet machine (1,700 took 44-75 s in benchmarks/results/dpselect_measure.json),
# 330 on the census sample 8.6 s, 100 on the panel sample 3.8 s: about 2 s besides the steps
# (preparing the table, importing torch), and a step's seconds set between the runs seen.
STEP_SECONDS = 0.024
START_SECONDS = 2.0


# past this the accountant's calibration of the noise alone takes minutes (10^12 hung the
# preview); the benchmarks' best runs use 10
MAX_EPOCHS = 10_000


class DPGAN(Synthesizer):
    """GAN with a DP-SGD critic and a latent-class mixture generator.

    Parameters
    ----------
    epochs : expected passes over the private table by the critic (steps = epochs / q).
    batch_size : expected Poisson batch size of real rows (q ≈ batch_size / n).
    components : latent classes of the generator.
    critic_hidden : hidden width of the critic; a small critic has fewer coordinates for the
        DP-SGD noise to drown.
    generator_batch : fake rows per generator step. Generator steps are free (post-processing),
        and a large batch tames the straight-through Gumbel noise in its gradient: 2,048
        against 128 took 2-way TVD at ε = 2 from 0.11–0.13 to 0.08–0.10 (3 seeds).
    lr_critic, lr_generator : Adam learning rates.
    max_grad_norm : per-sample clipping norm C (per-pair gradient norms are ~0.5 at the start,
        so 0.1 keeps clipping active and the noise σC small).
    bins, exact_integers : numeric model space (see :class:`~synth.encoding.Discretizer`).
    """

    name = "dpgan"
    title = "DP-GAN"
    summary = ("A GAN whose critic learns with DP-SGD (Opacus); the generator, a mixture of "
               "latent classes, only sees the critic. Learns joint structure.")
    paper = "Xie et al. 2018 (DPGAN), as used in Ebrahimianghazani 2023"
    when = ("Rarely on its own: on Adult at ε = 1 its 2-way TVD 0.096 and tree accuracy 0.785 "
            "(95 s) trail every marginal method; it is here as DP-Select's pool and to study "
            "DP-SGD.")
    streams = True  # DP-SGD keeps only the rows its Poisson batches draw (.codes)
    quick: ClassVar[Mapping[str, Any]] = {"epochs": 0.2}
    stages: ClassVar[Mapping[str, float]] = {GAN: 1.0}
    accountants: ClassVar[Mapping[str, str]] = {GAN: "pld"}
    params: ClassVar[Mapping[str, Param]] = specs(
        Param("epochs", float, low=0, high=MAX_EPOCHS, low_open=True, advanced=False,
              label="Training epochs",
              help="Expected passes of the critic over the private table: more epochs take "
                   "longer and need more noise per step for the same ε."),
        Param("batch_size", int, low=1, label="Batch size",
              help="Expected rows of a Poisson batch of real rows; smaller than the table."),
        Param("components", int, low=1, label="Latent classes",
              help="Components of the generator's mixture: more can capture more structure."),
        Param("critic_hidden", int, low=1, label="Critic width",
              help="Hidden units of the critic; a small critic gives the DP-SGD noise fewer "
                   "coordinates to drown."),
        Param("generator_batch", int, low=1, label="Generator batch",
              help="Fake rows per generator step (free post-processing); a large batch tames "
                   "the noise in the generator's gradient."),
        Param("lr_critic", float, low=0, low_open=True, label="Critic learning rate",
              help="Adam's learning rate for the critic."),
        Param("lr_generator", float, low=0, low_open=True, label="Generator learning rate",
              help="Adam's learning rate for the generator."),
        Param("max_grad_norm", float, low=0, low_open=True, label="Clipping norm", symbol="C",
              help="Per-sample gradients are clipped to this norm; the noise is scaled by it."),
        Param("bins", int, low=1, label="Bins per numeric column",
              help="Equal-width bins over each numeric column's bounds in the model."),
        Param("exact_integers", int, low=0, label="Exact integers up to",
              help="Integer columns with at most this many values get a cell per value, "
                   "wider ones a cell for each bound and a float whose range holds 0 a cell "
                   "for 0; 0 bins every numeric column equally."))

    def __init__(self, epochs: float = 10.0, batch_size: int = 128, components: int = 64,
                 critic_hidden: int = 32, generator_batch: int = 2048, lr_critic: float = 3e-3,
                 lr_generator: float = 1e-2, max_grad_norm: float = 0.1, bins: int = 16,
                 exact_integers: int = 128):
        self.epochs = epochs
        self.batch_size = batch_size
        self.components = components
        self.critic_hidden = critic_hidden
        self.generator_batch = generator_batch
        self.lr_critic = lr_critic
        self.lr_generator = lr_generator
        self.max_grad_norm = max_grad_norm
        self.bins = bins
        self.exact_integers = exact_integers

    def _check_rules(self, values: dict, population: Population | None,
                     schema: Schema | None) -> None:
        if population is not None and values["batch_size"] >= population.units:
            size = (f"{population.units} rows" if population.max_rows == 1 else
                    f"{population.units} units")
            fits = max(1, population.units // 4)  # four expected batches an epoch
            raise ParameterError(f"batch_size ({values['batch_size']}) must be smaller than "
                                 f"the table ({size})", fixes=(Fix(
                                     f"Use batch size {fits}", (("batch_size", fits),)),))

    def _memory(self, values: dict, population: Population | None, schema: Schema | None
                ) -> dict[str, int]:
        """Float32 bytes of the networks, their gradients and Adam's moments, Opacus's
        per-sample gradients of a Poisson batch (up to twice its mean) and the generator's
        activations. A table's one-hot width W counts each column once when unknown."""
        W = 1 if schema is None else max(model_width(schema, values["bins"],
                                                     values["exact_integers"]), 1)
        K, H, B = values["components"], values["critic_hidden"], values["batch_size"]
        critic = W * H + H * H + 2 * H + 1
        k = 1 if population is None else population.max_rows
        wide = f"bins (a one-hot width of {W:,})"
        return {f"components and {wide}": 16 * (K + K * W),
                f"critic_hidden, batch_size and {wide}": 4 * (4 + 2 * B) * critic,
                f"generator_batch, components and {wide}": 12 * values["generator_batch"] * (K + W),
                f"batch_size and {wide}": 16 * B * k * W}

    def _recipe(self, population: Population, schema: Schema, budget: Budget) -> Recipe:
        """The critic's DP-SGD over the units (public U; each unit's rows are one sample),
        one event whatever the rows: sampling rate q, steps and the smallest noise
        multiplier σ whose steps cost the stage's (ε, δ) under the ``pld`` accountant.

        Time: the critic's steps at the seconds one took on Adult, and the fit's other work.
        A step of larger parts takes longer: per-sample gradients grow with batch_size ×
        critic_hidden, the generator's with generator_batch × components (the defaults'
        work sets the floor)."""
        n = population.units
        epsilon, delta = budget.allowance(GAN)
        gaussian_needs_delta(GAN, "pld", delta)
        if epsilon > MAX_SGD_EPSILON:  # the PLD grid of so small a σ hangs or fills memory
            raise BudgetError(f"the {GAN!r} share's ε = {epsilon:g} is over {MAX_SGD_EPSILON:g}, "
                              "beyond which DP-SGD's noise cannot be calibrated; give a "
                              "smaller epsilon")
        q = 1 / math.ceil(n / self.batch_size)  # the rate Opacus's DPDataLoader uses
        event = _sgd_event(q, max(1, math.ceil(self.epochs / q)), epsilon, delta)
        sigma = event.noise_multiplier
        what = "rows" if population.max_rows == 1 else "units"
        one = "one row" if population.max_rows == 1 else (
            f"one unit (its up to {population.max_rows} rows' gradient summed, then clipped)")
        step = Step(
            GAN, event, mechanism="DP-SGD (Gaussian, Poisson batches)",
            meaning=f"{event.steps:,} critic steps on Poisson batches of ~{q * n:.0f} {what} "
                    f"(batch size {self.batch_size} sets the rate, as Opacus samples: 1 in "
                    f"{round(1 / q):,} of the {n:,}): each step's summed gradient, at most "
                    f"{q * n:.0f} C long (C: the bound each row's gradient is clipped to), "
                    f"gets noise of std {sigma:.2g} C in every coordinate, "
                    f"{sigma / (q * n):.1%} of that length; replacing {one} moves the sum by "
                    "at most 2C")
        work = max(1.0, self.batch_size * self.critic_hidden / (128 * 32),
                   self.generator_batch * self.components / (2048 * 64))
        return Recipe((step,), {"sgd": event},
                      seconds=START_SECONDS + STEP_SECONDS * event.steps * work)

    def _fit(self, data: Chunks, schema: Schema, recipe: Recipe, ctx: FitContext) -> None:
        discretizer = Discretizer(schema, bins=self.bins, exact_integers=self.exact_integers)
        codes = PrivateCodes.of_chunks(data, discretizer.codes, len(schema), ctx, ctx.check)
        self.train(codes, discretizer, recipe["sgd"], self.ledger_, self.rng_, ctx,
                   self._units)

    def train(self, codes: PrivateCodes, discretizer: Discretizer,
              event: PoissonSampledGaussian, ledger: Ledger, rng: np.random.Generator,
              ctx: FitContext, units: np.ndarray | None = None) -> DPGAN:
        """DP-SGD on ``codes`` (in ``discretizer``'s model space) as its recipe's ``event``
        says, charged to ``ledger``'s GAN share: a DP-GAN's own fit, and DP-Select's pool,
        which holds one."""
        # torch and Opacus take seconds to import: a cancel meanwhile lands at once
        training = ctx.wait(lambda: importlib.import_module("synth.methods.dpgan.training"))
        settings = training.GanSettings(self.components, self.critic_hidden,
                                        self.generator_batch, self.lr_critic,
                                        self.lr_generator)
        self.discretizer_ = discretizer
        self.prior_, self.table_ = training.train_gan(
            codes, discretizer.sizes, event, ledger, GAN, ctx, rng, units=units,
            batch_size=self.batch_size, max_grad_norm=self.max_grad_norm, settings=settings)
        return self

    def _sample(self, n: int, rng: np.random.Generator) -> pd.DataFrame:
        codes = self.sample_codes(n, rng)
        return finalize(self.discretizer_.decode(codes, rng), self.discretizer_.schema)

    def sample_codes(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """(n, d) codes from the mixture: components by the prior, then each column's softmax."""
        k = rng.choice(len(self.prior_), size=n, p=_softmax(self.prior_))
        out = np.empty((n, len(self.discretizer_.sizes)), dtype=np.int64)
        starts = np.concatenate([[0], np.cumsum(self.discretizer_.sizes)])
        for j in range(len(starts) - 1):
            probs = _softmax(self.table_[:, starts[j]:starts[j + 1]])  # (K, size_j)
            # inverse CDF per row: one uniform against its component's cumulative row
            cdf = np.cumsum(probs, axis=1)[k]
            u = rng.random(n)[:, None] * cdf[:, -1:]
            out[:, j] = np.minimum((cdf < u).sum(axis=1), probs.shape[1] - 1)
        return out


@functools.lru_cache(maxsize=64)
def _sgd_event(q: float, steps: int, epsilon: float, delta: float) -> PoissonSampledGaussian:
    """The smallest noise multiplier whose ``steps`` at rate ``q`` cost (ε, δ), calibrated
    once per setting: the plan, the page and the fit ask alike, and each search takes
    seconds. Enough noise without any amplification by sampling (T Gaussian steps of
    sensitivity 2, in units of C, are T·2/σ²-zCDP) is where the search starts."""
    start = math.sqrt(2 * steps / zcdp_rho(epsilon, delta, GAN))
    sigma = calibrate(lambda s: PoissonSampledGaussian(q, s, steps), "pld", epsilon, delta,
                      start, what="noise multiplier")
    return PoissonSampledGaussian(q, sigma, steps)


def _softmax(x: np.ndarray) -> np.ndarray:
    z = np.exp(x - x.max(axis=-1, keepdims=True))
    return z / z.sum(axis=-1, keepdims=True)
