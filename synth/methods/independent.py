"""Independent marginals: the floor every other method must beat.

Each column's 1-way histogram is measured once with the Gaussian mechanism, and synthetic rows
draw every column independently from its noisy histogram. One record adds 1 to one cell of
each of the d histograms, so the stacked vector has L2 sensitivity √d (add/remove); the
whole measurement is ρ-zCDP with ρ from the stage's (ε, δ) by the tight conversion.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import ClassVar

import numpy as np
import pandas as pd

from synth.encoding import Discretizer, finalize
from synth.errors import BudgetError, ParameterError
from synth.methods.base import FitContext, NoiseScale, Synthesizer
from synth.privacy.budget import Budget, LedgerEntry
from synth.privacy.composition import dp_to_zcdp, zcdp_to_dp
from synth.privacy.mechanisms import gaussian
from synth.schema import Schema

MEASURE = "measure"


class IndependentMarginals(Synthesizer):
    """Noisy 1-way histograms, sampled independently.

    Parameters
    ----------
    bins : equal-width bins per numeric column (over its public or learned bounds).
    exact_integers : integer columns whose range has at most this many values get one cell per
        value, so spikes such as 40 hours a week survive; 0 bins every numeric column.
    """

    name = "independent"
    title = "Independent marginals"
    summary = ("Measures each column's histogram once with Gaussian noise and samples columns "
               "independently. Fast and private, but keeps no relationships: the baseline.")
    paper = "baseline (no paper)"
    stages: ClassVar[Mapping[str, float]] = {MEASURE: 1.0}

    def __init__(self, bins: int = 32, exact_integers: int = 128):
        self.bins = bins
        self.exact_integers = exact_integers

    def _fit(self, data: pd.DataFrame, schema: Schema, ctx: FitContext) -> None:
        if int(self.bins) != self.bins or self.bins < 1:
            raise ParameterError(f"bins must be a positive integer, got {self.bins!r}")
        if int(self.exact_integers) != self.exact_integers or self.exact_integers < 0:
            raise ParameterError(f"exact_integers must be an integer ≥ 0, got "
                                 f"{self.exact_integers!r}")
        self.discretizer_ = Discretizer(schema, bins=int(self.bins),
                                        exact_integers=int(self.exact_integers))
        codes = self.discretizer_.codes(data)
        eps, delta = self.ledger_.remaining(MEASURE)
        if delta <= 0:
            raise BudgetError("the Gaussian mechanism needs δ > 0 in the 'measure' share")
        rho, sensitivity, sigma = _noise(eps, delta, len(schema))
        ctx.stage(MEASURE, len(schema), "noisy 1-way histograms")
        self.ledger_.spend(LedgerEntry(
            stage=MEASURE, mechanism="gaussian", epsilon=min(eps, zcdp_to_dp(rho, delta)),
            delta=delta,
            accounting="zCDP, tight conversion (Canonne–Kamath–Steinke 2020)",
            description=f"1-way histograms of {len(schema)} columns "
                        f"({int(self.discretizer_.sizes.sum())} cells)",
            params={"sigma": sigma, "l2_sensitivity": sensitivity, "rho": rho,
                    "cells": int(self.discretizer_.sizes.sum())}))
        self.marginals_ = []
        for j, size in enumerate(self.discretizer_.sizes):
            counts = np.bincount(codes[:, j], minlength=size)
            noisy = np.clip(gaussian(counts, rho, sensitivity, self.rng_), 0, None)
            total = noisy.sum()
            self.marginals_.append(noisy / total if total > 0 else np.full(size, 1 / size))
            ctx.progress(MEASURE, j + 1, len(schema))

    def _preview(self, n: int, schema: Schema, budget: Budget) -> list[NoiseScale]:
        eps, delta = budget.allowance(MEASURE)
        if delta <= 0:
            return [NoiseScale(MEASURE, "Gaussian", "impossible", "the Gaussian mechanism needs "
                               "δ > 0 in the 'measure' share")]
        sigma = _noise(eps, delta, len(schema))[2]
        return [NoiseScale(
            MEASURE, "Gaussian, zCDP", f"σ = {sigma:.3g} rows per cell",
            f"a category holding 1% of the {n:,} rows is measured within ±{sigma / n:.2%} of "
            f"the table (1 σ), i.e. ±{sigma / (0.01 * n):.0%} of its own size")]

    def _sample(self, n: int, rng: np.random.Generator) -> pd.DataFrame:
        codes = np.column_stack([rng.choice(len(p), size=n, p=p) for p in self.marginals_])
        return finalize(self.discretizer_.decode(codes, rng), self.schema_)


def _noise(epsilon: float, delta: float, columns: int) -> tuple[float, float, float]:
    """(ρ, L2 sensitivity, σ) of measuring ``columns`` histograms at once under (ε, δ)."""
    rho = dp_to_zcdp(epsilon, delta)  # checked: ρ-zCDP implies (ε, δ)-DP
    sensitivity = math.sqrt(columns)
    return rho, sensitivity, sensitivity / math.sqrt(2 * rho)
