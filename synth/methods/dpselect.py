"""DP-Select: a DP-GAN pool, then private selection of the output rows from it.

A share of the budget trains a :class:`~synth.methods.dpgan.DPGAN`; its generator draws a pool
of ``pool_multiplier`` × n rows (post-processing, free). The output's n rows are then chosen
from the pool by the exponential mechanism so that the chosen 2-way marginals approach the
private table's (see :mod:`synth.selection`). Corrections to the thesis, after its notes:

* the marginals and their weights come from mutual information **on the pool** (free), not on
  the private table, whose use was unaccounted (G1);
* per-step ε inverts the bounded-range composition with ln(1/δ) inside the square root (G2);
* with S sections the private table and the pool are split into S disjoint parts and each
  section is a separate selection under parallel composition, with the sensitivity of its own
  size, 2/n_s (G6); T candidates are distinct rows not chosen before (G5).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from synth.encoding import Discretizer, finalize
from synth.errors import ParameterError, check_int
from synth.methods.base import FitContext, NoiseScale, resample
from synth.methods.dpgan import DPGAN, GAN, train_gan
from synth.privacy.budget import Budget, LedgerEntry
from synth.privacy.composition import bounded_range, per_step_epsilon
from synth.schema import Schema
from synth.selection import DISTANCES, cells, select, top_pairs

SELECT = "select"
SELECTION_BINS = 10  # equal-width bins over public bounds for numeric columns (note G4)


class DPSelect(DPGAN):
    """DP-GAN pool + exponential-mechanism selection of rows.

    Parameters
    ----------
    gan_share : fraction of the method's budget spent on the DP-GAN (the rest on selection).
    pool_multiplier : pool size as a multiple of the private table's row count.
    candidates : T, candidates per step (default: ``pool_multiplier``, note G3).
    sections : S, disjoint sections of the table and the pool (parallel composition).
    distance : "l1" (default), "l2" or "kolmogorov".
    marginal_fraction : share of all column pairs used, the top ones by mutual information.
    The remaining parameters configure the DP-GAN (see :class:`DPGAN`).
    """

    name = "dpselect"
    title = "DP-Select"
    summary = ("Trains a DP-GAN on a small share of the budget, draws a large pool from it, then "
               "picks output rows with the exponential mechanism to match 2-way marginals.")
    paper = "Ebrahimianghazani 2023 (MMath thesis, Waterloo)"
    share_param = "gan_share"

    def __init__(self, gan_share: float = 0.2, pool_multiplier: float = 20,
                 candidates: int | None = None, sections: int = 5, distance: str = "l1",
                 marginal_fraction: float = 0.1, epochs: float = 10.0, batch_size: int = 128,
                 components: int = 64, critic_hidden: int = 32, generator_batch: int = 2048,
                 lr_critic: float = 3e-3, lr_generator: float = 1e-2, max_grad_norm: float = 0.1,
                 bins: int = 16, exact_integers: int = 128):
        super().__init__(epochs=epochs, batch_size=batch_size, components=components,
                         critic_hidden=critic_hidden, generator_batch=generator_batch,
                         lr_critic=lr_critic, lr_generator=lr_generator,
                         max_grad_norm=max_grad_norm, bins=bins, exact_integers=exact_integers)
        self.gan_share = gan_share
        self.pool_multiplier = pool_multiplier
        self.candidates = candidates
        self.sections = sections
        self.distance = distance
        self.marginal_fraction = marginal_fraction

    @property
    def stages(self) -> dict[str, float]:  # type: ignore[override]
        share = _share(self.gan_share)
        return {GAN: share, SELECT: 1 - share}

    def _check(self, n: int) -> None:
        super()._check(n)
        _share(self.gan_share)
        if isinstance(self.pool_multiplier, bool) or not (
                isinstance(self.pool_multiplier, int | float) and self.pool_multiplier >= 1):
            raise ParameterError(f"pool_multiplier must be a number ≥ 1, got "
                                 f"{self.pool_multiplier!r}")
        check_int(self._candidates, "candidates (T)")
        sections = check_int(self.sections, "sections (S)")
        if sections > n:
            raise ParameterError(f"sections (S={sections}) cannot exceed the table's {n} rows")
        if self.distance not in DISTANCES:
            raise ParameterError(f"distance must be one of {DISTANCES}, got {self.distance!r}")
        if isinstance(self.marginal_fraction, bool) or not (
                isinstance(self.marginal_fraction, int | float)
                and 0 < self.marginal_fraction <= 1):
            raise ParameterError(f"marginal_fraction must lie in (0, 1], got "
                                 f"{self.marginal_fraction!r}")

    @property
    def _candidates(self):
        return self.pool_multiplier if self.candidates is None else self.candidates

    def _preview(self, n: int, schema: Schema, budget: Budget) -> list[NoiseScale]:
        eps, delta = budget.allowance(SELECT)
        n_s = math.ceil(n / self.sections)
        eps_step = per_step_epsilon(eps, n_s, delta, "bounded_range")

        def favour(t: int) -> str:  # best/worst odds of the EM between candidates at pick t
            return f"×{math.exp(min(eps_step * n_s / (2 * t), 700)):.3g}"

        return [*super()._preview(n, schema, budget), NoiseScale(
            SELECT, "exponential mechanism, bounded-range composition",
            f"ε per pick = {eps_step:.3g}, sensitivity 2/{n_s:,}",
            f"{n_s:,} picks per section: a candidate that is a whole row better can be favoured "
            f"at most {favour(1)} at the first pick, {favour(100)} at pick 100 and "
            f"{favour(n_s)} at the last, so late picks are close to uniform draws from the pool")]

    def _fit(self, data: pd.DataFrame, schema: Schema, ctx: FitContext) -> None:
        n = len(data)
        self._check(n)
        self.discretizer_ = Discretizer(schema, bins=self.bins, exact_integers=self.exact_integers)
        self.prior_, self.table_ = train_gan(self, self.discretizer_.codes(data), ctx, GAN)

        m = max(n, math.ceil(self.pool_multiplier * n))
        ctx.stage("pool", 1, f"drawing a pool of {m:,} rows from the generator")
        pool = self.discretizer_.decode(self.sample_codes(m, self.rng_), self.rng_)
        ctx.progress("pool", 1, 1)
        coarse = Discretizer(schema, bins=SELECTION_BINS)
        pool_codes, real_codes = coarse.codes(pool), coarse.codes(data)
        marginals, weights = top_pairs(pool_codes, coarse.sizes, self.marginal_fraction)
        cell_counts = np.array([np.prod(coarse.sizes[list(c)]) for c in marginals])
        self.marginals_ = [tuple(schema.names[c] for c in cols) for cols in marginals]
        self.weights_ = weights

        parts = np.array_split(self.rng_.permutation(n), self.sections)
        pool_parts = np.array_split(self.rng_.permutation(m), self.sections)
        eps, delta = self.ledger_.remaining(SELECT)
        steps = max(len(p) for p in parts)
        eps_step = per_step_epsilon(eps, steps, delta, "bounded_range")
        ctx.stage(SELECT, steps, f"{self.sections} sections × {steps:,} exponential-mechanism "
                                 f"picks, ε per pick {eps_step:.3g}")
        real_cells = cells(real_codes, coarse.sizes, marginals)
        pool_cells = cells(pool_codes, coarse.sizes, marginals)
        trace = select(
            [real_cells[p] for p in parts], [pool_cells[p] for p in pool_parts], cell_counts,
            weights, eps_step, int(self._candidates), self.distance, self.rng_,
            progress=lambda t, total, d: ctx.progress(
                SELECT, t, total, distance=float(np.mean(d)),
                **{f"distance_{s + 1}": float(x) for s, x in enumerate(d)}),
            every=max(1, steps // 100))
        self.ledger_.spend(LedgerEntry(
            stage=SELECT, mechanism="exponential mechanism (Gumbel-max)",
            epsilon=min(eps, bounded_range(eps_step, steps, delta)), delta=delta,
            accounting="bounded-range composition (Dong–Durfee–Rogers 2020) over the picks "
                       "of a section; parallel composition over disjoint sections",
            description=f"{n:,} rows picked from a pool of {m:,} in {self.sections} sections, "
                        f"{self.distance} distance over {len(marginals)} marginals",
            params={"epsilon_per_pick": eps_step, "picks_per_section": steps,
                    "sections": self.sections, "candidates": int(self._candidates),
                    "sensitivity": f"2/n_s, n_s = {min(len(p) for p in parts)}…{steps}",
                    "marginals": [list(c) for c in self.marginals_]}))
        picked = np.concatenate([p[c] for p, c in zip(pool_parts, trace.chosen, strict=True)])
        self.selection_distance_ = trace.distance
        self.synthetic_ = finalize(pool.iloc[picked].reset_index(drop=True), schema)

    def _sample(self, n: int, rng: np.random.Generator) -> pd.DataFrame:
        """Rows of the selected table (post-processing)."""
        order = resample(len(self.synthetic_), n, rng)
        return self.synthetic_.iloc[order].reset_index(drop=True)


def _share(value) -> float:
    if isinstance(value, bool) or not (isinstance(value, int | float) and 0 < value < 1):
        raise ParameterError(f"gan_share must lie strictly between 0 and 1, got {value!r}")
    return float(value)
