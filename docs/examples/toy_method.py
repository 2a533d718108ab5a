"""A toy method, as the architecture page adds one: each column's histogram measured once
with Laplace noise, and the columns drawn independently from the noisy histograms.

Privacy (pure ε-DP, replace-one, n public): replacing a record moves two cells of a column's
histogram by 1 (2k for a unit of up to k rows), so each column's Laplace count at scale
2k·d/ε is (ε/d)-DP, and the d columns compose to ε by basic composition.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from synth.encoding import BINS, Discretizer, finalize
from synth.marginals import count, marginal
from synth.methods import FitContext, Synthesizer
from synth.plan import Recipe, Step
from synth.privacy.events import Laplace, histogram_l1
from synth.privacy.mechanisms import laplace
from synth.validation import specs

MEASURE = "measure"


class NoisyHistograms(Synthesizer):
    """Laplace histograms, one per column, sampled independently."""

    name = "toy"
    title = "Noisy histograms (a toy)"
    summary = "Each column's histogram measured with Laplace noise; columns drawn apart."
    when = "Never in earnest: it shows how a method is added."
    paper = "Dwork, McSherry, Nissim, Smith 2006"
    stages: ClassVar = {MEASURE: 1.0}
    accountants: ClassVar = {MEASURE: "basic"}  # Laplace counts compose by adding their ε
    pure_stages = frozenset({MEASURE})  # δ would go unused: it goes to no stage
    streams = True  # counts a file a chunk at a time
    quick: ClassVar = {"bins": 8}
    params = specs(BINS)

    def __init__(self, bins: int = 16):
        self.bins = bins

    def _recipe(self, population, schema, budget) -> Recipe:
        """One Laplace count per column at ε/d each: public facts only (d, k, ε)."""
        d, sensitivity = len(schema), histogram_l1(1, population.max_rows)
        event = Laplace(sensitivity * d / budget.allowance(MEASURE)[0], sensitivity)
        step = Step(MEASURE, event, mechanism="Laplace, basic composition",
                    meaning=f"each column's counts within ±{event.scale * math.sqrt(2):,.0f} "
                            f"rows (1 σ) of the {population.rows:,}")
        return Recipe((step,) * d, seconds=0.5 + 3e-7 * population.rows * d)

    def _fit(self, data, schema, recipe: Recipe, ctx: FitContext) -> None:
        disc = Discretizer(schema, bins=self.bins)
        columns = [(j,) for j in range(len(schema))]
        true = count(data, lambda frame: [marginal(disc.codes(frame), disc.sizes, c)
                                          for c in columns], ctx, "count", "counting columns")
        ctx.stage(MEASURE, len(columns), "one noisy histogram per column")
        self.marginals_ = []
        for j, (step, counts) in enumerate(zip(recipe.steps, true, strict=True)):
            self.ledger_.charge(MEASURE, step.event, f"histogram of {schema.names[j]}")
            noisy = np.clip(laplace(counts, step.event.scale), 0, None)
            self.marginals_.append(noisy / noisy.sum() if noisy.sum() > 0 else
                                   np.full(len(noisy), 1 / len(noisy)))
            ctx.progress(MEASURE, j + 1, len(columns))
        self.discretizer_ = disc

    def _sample(self, n, rng):
        codes = np.column_stack([rng.choice(len(p), size=n, p=p) for p in self.marginals_])
        return finalize(self.discretizer_.decode(codes, rng), self.discretizer_.schema)
