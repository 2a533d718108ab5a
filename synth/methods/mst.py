"""MST (McKenna, Miklau, Sheldon 2021): the winner of the 2018 NIST challenge, generalised.

A third of the zCDP budget measures every column's 1-way marginal; a third picks a maximum
spanning tree of column pairs, one edge at a time by the exponential mechanism (Kruskal's
algorithm, each pick among the pairs joining two parts of the forest so far), scored by how
badly the 1-way measurements alone (columns independent) answer the pair's 2-way marginal, net
of the noise its measurement would add (AIM's rule); the last third measures the d − 1 tree
edges' 2-way marginals. Private-PGM fits a graphical model to every measurement (:mod:`.pgm`),
and the release samples n rows from it.

Privacy (zCDP, replace-one with n public): replacing a record moves two cells of each
marginal by 1 (k for a unit of up to k rows), so the stacked 1-way histograms have
Δ₂ = k·√(2d), a 2-way marginal k·√2, and a pair's score (an L1 distance in counts) moves by
at most 2k. With ρ from the stage's (ε, δ): the 1-way measurement is ρ/3-zCDP, each of the
d − 1 picks the exponential mechanism at ε₀ = √(8ρ/(3(d−1))), and each edge's measurement
ρ/(3(d−1))-zCDP. None of it needs the row count, so the plan is exact even under units. The
noise a score is net of is public (σ and the pair's cells), so the sensitivity is unchanged.
MST's domain compression (merging rare values) is left out: the encoding's bins are public,
and the net score is what keeps a wide pair from being picked for its width. Scored by error
alone, a wide pair's many small deviations add up to a high score however noisy its
measurement, so on a timetable with three columns of a hundred categories the tree joined one
of them to 19 of 31 columns, measured pairs of up to 3,400 cells whose noise (σ ≈ 67 counts a
cell) drowned their 20,000 rows, and came out further from the table's pairs than independent
columns (2-way TVD 0.096–0.102 against 0.083 at ε = 1).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from functools import partial
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from synth.data import figure
from synth.encoding import BINS, EXACT_INTEGERS, Discretizer, column_widths, finalize
from synth.marginals import (
    check_audible,
    count,
    marginal,
    measure,
    measurement_event,
    noise_l1,
    select,
)
from synth.methods.base import FitContext, Synthesizer
from synth.methods.pgm import Measurement, Model, draw_seconds
from synth.plan import Recipe, Step
from synth.privacy.accounting import zcdp_rho
from synth.privacy.budget import Budget
from synth.privacy.events import Exponential, Gaussian, histogram_l1, histogram_l2
from synth.privacy.unit import Population
from synth.schema import Schema
from synth.source import Chunks
from synth.validation import Param, specs

MEASURE = "measure"
COUNT = "count"
ESTIMATE = "estimate"  # the graphical model (post-processing)


def mst_events(epsilon: float, delta: float, d: int, k: int = 1
               ) -> tuple[Gaussian, Exponential | None, Gaussian | None]:
    """(the 1-way measurement, each tree pick, each edge's measurement) for d columns and
    units of up to k rows, from the stage's (ε, δ): thirds of ρ (all of it to the 1-way
    measurement when there is a single column)."""
    rho = zcdp_rho(epsilon, delta, MEASURE)
    if d == 1:
        return measurement_event(histogram_l2(1, k), rho), None, None
    per_edge = rho / (3 * (d - 1))
    return (measurement_event(histogram_l2(d, k), rho / 3),
            Exponential(math.sqrt(8 * per_edge), histogram_l1(1, k)),
            measurement_event(histogram_l2(1, k), per_edge))


class MST(Synthesizer):
    """MST: 1-way marginals, a private maximum spanning tree of pairs, a graphical model.

    Parameters
    ----------
    bins, exact_integers : how numbers become codes (:data:`synth.encoding.BINS`); one code per
        value of a small integer range keeps spikes such as 40 hours a week, and a float's 0
        its zeros.
    iterations : mirror-descent steps of the graphical model's estimation.
    """

    name = "mst"
    title = "MST"
    summary = ("Measures every column, privately picks a tree of the most dependent column "
               "pairs and measures them, then fits a graphical model (Private-PGM). Fast and "
               "strong on categorical tables.")
    paper = "McKenna, Miklau, Sheldon 2021 (J. Privacy and Confidentiality)"
    when = ("The quick choice for pairs of columns: on Adult at ε = 1, 2-way TVD 0.048 in "
            "4 s, level with DP-Select and ahead of GSD in a fraction of their time, behind "
            "AIM (0.037); tree accuracy 0.826. It gains little past ε = 4.")
    streams = True
    counts = True
    quick: ClassVar[Mapping[str, Any]] = {"bins": 8, "iterations": 100}
    stages: ClassVar[Mapping[str, float]] = {MEASURE: 1.0}
    accountants: ClassVar[Mapping[str, str]] = {MEASURE: "zcdp"}
    params: ClassVar[Mapping[str, Param]] = specs(
        BINS,
        EXACT_INTEGERS,
        Param("iterations", int, low=1, high=100_000, label="Estimation steps",
              help="Mirror-descent steps fitting the graphical model to the measurements "
                   "(post-processing: more steps cost time, not privacy)."))

    def __init__(self, bins: int = 32, exact_integers: int = 128, iterations: int = 1000):
        self.bins = bins
        self.exact_integers = exact_integers
        self.iterations = iterations

    def _memory(self, values: dict, population: Population | None, schema: Schema | None
                ) -> dict[str, int]:
        """Float64 counts of every pair's 2-way marginal (all are counted in one pass)."""
        if schema is None:
            return {"bins": 8 * (values["bins"] + 2) ** 2}
        widths = column_widths(schema, values["bins"], values["exact_integers"])
        return {"pairs counted": 16 * sum(a * b for a, b in itertools.combinations(widths, 2))}

    def _recipe(self, population: Population, schema: Schema, budget: Budget) -> Recipe:
        """The 1-way measurement, d − 1 tree picks and d − 1 edge measurements: exact, for no
        event depends on the data or the row count. Refused when even the quietest
        measurement's noise (in counts) exceeds the U units themselves (n with one row per
        unit: the same public count at plan and fit, so a plan that passes never fails at n̂).

        Time: a pass counting every pair, the tree's measurements, the estimation and the
        draw: on 2 cores (benchmarks/progress.py) the measurements took 0.12 s a column and
        1,000 estimation steps 0.5 s a column (census 13 columns: 1.8 s and 7.2 s; 26
        model-space columns of flights: 2.6–3.0 s and 11.6–13 s, at 20,000 and 300,000
        rows), counting 0.4 s a million cells. The estimation's program now compiles once,
        in about half the time, and runs its steps at the lowest optimisation
        (:func:`synth.methods.pgm._descent`): 0.28 of its time before on the census sample,
        A/B on one machine, about 0.14 s a column. It is priced, erring high, as a compile
        of 0.1 s a column once (with the measurements' 0.12: 0.22) and steps of 0.1 s a
        column a thousand, so that a long fit is priced at the slower steps."""
        n, d = population.rows, len(schema)
        one_way, pick, edge = mst_events(*budget.allowance(MEASURE), d, population.max_rows)
        check_audible(min(one_way.sigma, (edge or one_way).sigma) / population.units,
                      budget.allowance(MEASURE)[0])
        steps = [Step(MEASURE, one_way, mechanism="Gaussian, zCDP",
                      meaning=f"every column's counts within ±{figure(one_way.sigma)} rows "
                              f"(1 σ) of the {n:,}")]
        if edge is not None:
            steps += [Step(MEASURE, pick, mechanism="exponential (tree), zCDP",
                           meaning=f"{d - 1} pairs picked by how badly independence answers "
                                   "them, net of the noise measuring them adds")] * (d - 1)
            steps += [Step(MEASURE, edge, mechanism="Gaussian, zCDP",
                           meaning=f"each tree pair's counts within ±{figure(edge.sigma)} rows "
                                   "(1 σ)")] * (d - 1)
        return Recipe(tuple(steps), {"one_way": one_way, "pick": pick, "edge": edge},
                      seconds=0.5 + 4e-7 * n * d + 0.22 * d + 0.1 * d * self.iterations / 1000
                      + draw_seconds(n, d))

    def _fit(self, data: Chunks, schema: Schema, recipe: Recipe, ctx: FitContext) -> None:
        disc = Discretizer(schema, bins=self.bins, exact_integers=self.exact_integers)
        sizes, d = disc.sizes, len(schema)
        one_way, pick, edge = recipe["one_way"], recipe["pick"], recipe["edge"]
        pairs = list(itertools.combinations(range(d), 2))

        def counter(frame: pd.DataFrame) -> list[np.ndarray]:
            codes = disc.codes(frame)
            return [marginal(codes, sizes, c) for c in [*((j,) for j in range(d)), *pairs]]

        counts = count(data, counter, ctx, COUNT, "counting every column and pair (once)")
        true = dict(zip([*((j,) for j in range(d)), *pairs], counts, strict=True))
        ctx.stage(MEASURE, 1 + 2 * (d - 1), "1-way marginals, a spanning tree of pairs, its "
                                            "2-way marginals")
        self.ledger_.charge(MEASURE, one_way, f"1-way marginals of {d} columns")
        noisy = measure(np.concatenate(counts[:d]), one_way)
        ones = np.split(noisy, np.cumsum(sizes)[:-1])
        measured = [Measurement((j,), ones[j], one_way.sigma) for j in range(d)]
        ctx.progress(MEASURE, 1, 1 + 2 * (d - 1))
        tree = self._tree(pairs, true, ones, edge, pick, ctx, d) if d > 1 else []
        for t, pair in enumerate(tree):
            self.ledger_.charge(MEASURE, edge, f"2-way marginal of {_label(schema, pair)}")
            measured.append(Measurement(pair, measure(true[pair], edge), edge.sigma))
            ctx.progress(MEASURE, d + t + 1, 1 + 2 * (d - 1))
        self.model_ = ctx.wait(lambda: Model(sizes, self.population_.rows))  # imports JAX
        ctx.stage(ESTIMATE, self.iterations,  # JAX compiles before the first block
                  "fitting a graphical model (post-processing; its first steps wait while "
                  "JAX compiles it)")
        ctx.wait(lambda: self.model_.estimate(measured, self.iterations,
                                              partial(ctx.progress, ESTIMATE)))
        self.discretizer_, self.tree_ = disc, [_label(schema, p) for p in tree]

    def _tree(self, pairs, true, ones, edge, pick, ctx, d) -> list[tuple[int, int]]:
        """Kruskal's algorithm with private picks: each of d − 1 rounds picks, by the
        exponential mechanism, among the pairs that join two parts of the forest, the one
        the independent model answers worst (L1 distance in counts) net of the L1 that its
        measurement by ``edge`` would add (public: σ and the pair's cells)."""
        noise = noise_l1(edge, np.array([len(ones[a]) * len(ones[b]) for a, b in pairs]))
        p = [np.clip(o, 0, None) for o in ones]
        p = [o / o.sum() if o.sum() > 0 else np.full(len(o), 1 / len(o)) for o in p]
        n = self.population_.rows
        scores = np.array([ctx.beat() or np.abs(true[(a, b)] - n * np.outer(p[a], p[b])
                                                .ravel()).sum() for a, b in pairs]) - noise
        part = list(range(d))
        tree: list[tuple[int, int]] = []
        for t in range(d - 1):
            joins = np.array([part[a] != part[b] for a, b in pairs])
            self.ledger_.charge(MEASURE, pick, f"tree edge {t + 1} of {d - 1}")
            a, b = pairs[int(select(np.where(joins, scores, -np.inf), pick)[0])]
            old, new = part[b], part[a]
            part = [new if x == old else x for x in part]
            tree.append((a, b))
            ctx.progress(MEASURE, 2 + t, 1 + 2 * (d - 1))
        return tree

    def _sample(self, n: int, rng: np.random.Generator) -> pd.DataFrame:
        codes = self.model_.sample(n, rng)
        return finalize(self.discretizer_.decode(codes, rng), self.discretizer_.schema)


def _label(schema: Schema, columns: tuple[int, ...]) -> str:
    return " × ".join(schema.names[j] for j in columns)
