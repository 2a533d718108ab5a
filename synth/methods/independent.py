"""Independent marginals: the floor every other method must beat.

Each column's 1-way histogram is measured once with the Gaussian mechanism, and synthetic rows
draw every column independently from its noisy histogram. Replacing one record takes 1 from
one cell and adds 1 to another in each of the d histograms, so the stacked vector has L2
sensitivity √(2d) (:func:`~synth.privacy.events.histogram_l2`; k·√(2d) for a unit of up to k
rows, whose rows can all move between the same two cells); the whole measurement is ρ-zCDP
with ρ from the stage's (ε, δ) by the tight conversion. Each histogram is normalised by its
own noisy total, so no row count is needed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from synth.encoding import BINS, EXACT_INTEGERS, Discretizer, finalize, model_width
from synth.marginals import count, marginal, measure, measurement_event
from synth.methods.base import FitContext, Synthesizer
from synth.plan import Recipe, Step
from synth.privacy.accounting import zcdp_rho
from synth.privacy.budget import Budget
from synth.privacy.events import histogram_l2
from synth.privacy.unit import Population
from synth.schema import Schema
from synth.source import Chunks
from synth.validation import Param, specs

MEASURE = "measure"
COUNT = "count"


class IndependentMarginals(Synthesizer):
    """Noisy 1-way histograms, sampled independently.

    Parameters
    ----------
    bins : equal-width bins per numeric column (over its public or learned bounds).
    exact_integers : integer columns whose range has at most this many values get one cell per
        value, so spikes such as 40 hours a week survive (wider ones a cell for each bound,
        a float whose range holds 0 a cell for 0: no claim); 0 bins every numeric column
        equally.
    """

    name = "independent"
    title = "Independent marginals"
    summary = ("Measures each column's histogram once with Gaussian noise and samples columns "
               "independently. Fast and private, but keeps no relationships: the baseline.")
    paper = "baseline (no paper)"
    when = ("A yardstick, or for one column at a time: on Adult at ε = 1 it is the fastest "
            "(0.2 s) and matches single columns best (1-way TVD 0.009), but keeps no "
            "relationships (2-way TVD 0.080; its trees score the majority class, 0.755).")
    streams = True
    counts = True
    quick: ClassVar[Mapping[str, Any]] = {"bins": 8}
    stages: ClassVar[Mapping[str, float]] = {MEASURE: 1.0}
    accountants: ClassVar[Mapping[str, str]] = {MEASURE: "zcdp"}
    params: ClassVar[Mapping[str, Param]] = specs(BINS, EXACT_INTEGERS)

    def __init__(self, bins: int = 32, exact_integers: int = 128):
        self.bins = bins
        self.exact_integers = exact_integers

    def _memory(self, values: dict, population: Population | None, schema: Schema | None
                ) -> dict[str, int]:
        """Float64 bytes of each column's bin edges and its noisy 1-way marginal (a few
        copies): ``bins`` drives them."""
        width = values["bins"] + 2 if schema is None else model_width(
            schema, values["bins"], values["exact_integers"])
        return {"bins": 32 * width}

    def _recipe(self, population: Population, schema: Schema, budget: Budget) -> Recipe:
        """One Gaussian measurement of every column's stacked histogram, costing the stage's
        (ε, δ); one pass over the table: 0.5 s, and 0.3 s a million cells on 2 cores
        (benchmarks/progress.py: 300,000 rows × 26 model-space columns in 2 s)."""
        n = population.rows
        event = measurement_event(histogram_l2(len(schema), population.max_rows),
                                  zcdp_rho(*budget.allowance(MEASURE), MEASURE))
        ratio = event.sigma / (0.01 * n)  # the noise against the category's own count
        size = (f"±{ratio:.0%} of its own size" if ratio < 1 else
                f"{ratio:,.0f} times its own size: so small a category is lost in the noise")
        return Recipe((Step(
            MEASURE, event, mechanism="Gaussian, zCDP",
            meaning=f"a category holding 1% of the {n:,} rows is measured within "
                    f"±{event.sigma / n:.2%} of the table (1 σ), i.e. {size}"),),
            seconds=0.5 + 3e-7 * n * len(schema))

    def _fit(self, data: Chunks, schema: Schema, recipe: Recipe, ctx: FitContext) -> None:
        self.discretizer_ = Discretizer(schema, bins=self.bins,
                                        exact_integers=self.exact_integers)
        sizes = self.discretizer_.sizes
        (step,) = recipe.steps
        counts = self.histograms(data, ctx)  # the whole table is read before any charge
        ctx.stage(MEASURE, 1, "noisy 1-way histograms")
        self.ledger_.charge(MEASURE, step.event, f"1-way histograms of {len(schema)} columns "
                                                 f"({int(sizes.sum())} cells)")
        noisy = np.clip(measure(counts, step.event), 0, None)  # one draw for all cells
        self.marginals_ = []
        for block in np.split(noisy, np.cumsum(self.discretizer_.sizes)[:-1]):
            total = block.sum()
            self.marginals_.append(block / total if total > 0 else
                                   np.full(len(block), 1 / len(block)))
        ctx.progress(MEASURE, 1, 1)

    def histograms(self, data: Chunks, ctx: FitContext) -> np.ndarray:
        """Every column's histogram, stacked: counts summed over the table's chunks."""
        disc = self.discretizer_  # the counter holds it alone: a cluster's workers get it
        sizes = disc.sizes

        def counter(frame: pd.DataFrame) -> list[np.ndarray]:
            codes = disc.codes(frame)
            return [np.concatenate([marginal(codes, sizes, (j,)) for j in range(len(sizes))])]

        return count(data, counter, ctx, COUNT, "counting each column's histogram")[0]

    def _sample(self, n: int, rng: np.random.Generator) -> pd.DataFrame:
        codes = np.column_stack([rng.choice(len(p), size=n, p=p) for p in self.marginals_])
        return finalize(self.discretizer_.decode(codes, rng), self.discretizer_.schema)
