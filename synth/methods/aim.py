"""AIM (McKenna, Mullins, Sheldon, Miklau 2022): adaptive, iterative select–measure–estimate.

The workload is every ``degree``-way marginal; a candidate is any marginal inside a workload
marginal, weighted by how many workload columns it shares (w_r = Σ_s |r ∩ s|). Every
column's 1-way marginal is measured first. Each round then

1. picks, by the exponential mechanism, the candidate whose marginal the current model
   answers worst, net of the noise its measurement would add:
   q_r = w_r·(‖M_r(D) − M_r(p̂)‖₁ − √(2/π)·σ·n_r) for a marginal of n_r cells;
2. measures it with Gaussian noise σ;
3. refits the graphical model to every measurement (Private-PGM, :mod:`.pgm`, warm-started);
4. anneals: when the refit moved that marginal by less than the noise it expected, the next
   rounds measure with half the σ and select with twice the ε.

Only candidates that keep the model's junction tree under a limit growing with the budget
spent are eligible. The rounds stop when the budget is spent; the last one takes whatever is
left, so the total is exactly the stage's.

A number gets at most n/σ equal cells (at least 3; a float's 0 one of its own besides), σ
the 1-way noise: beyond that a cell holds fewer rows on average than its noise, the marginal
is noise and no round can afford to measure it again.
It is a rule of public facts (n, or k·U per person, and the budget), so the plan shows it.
On the person-month panel (k = 3, 1,250 people) at ε = 1, age's 75 and hours' 100 values
with a cell each gave a median 2-way TVD of 0.205, level with independent columns; in at
most n/σ = 30 cells, 0.169 (nine seeds each; MST 0.200, and 0.168 with its picks net of
noise; over twenty seeds since, 0.142 against MST's 0.155).

Privacy (zCDP, replace-one with n public): a replaced record moves two cells of a marginal by
1 (k for a unit of up to k rows): Δ₂ = k·√2 per marginal (k·√(2d) for the d stacked 1-way
marginals) and a quality moves by at most 2k·max w_r. With ρ from the stage's (ε, δ) and T =
``rounds`` per column × d at most, the 1-way marginals cost αρ·d/T, and each round ρ/T
(αρ/T measuring, (1 − α)ρ/T selecting, ε₀ = √(8(1 − α)ρ/T)), four times that after each
annealing. How many rounds run depends on the data, so the plan bounds the stage's total,
not its events; every event is charged before it runs.
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
from synth.errors import ParameterError
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
from synth.privacy.events import Exponential, describe, histogram_l1, histogram_l2
from synth.privacy.unit import Population
from synth.schema import Schema
from synth.source import Chunks
from synth.validation import Param, specs

MEASURE = "measure"
COUNT = "count"
ESTIMATE = "estimate"  # the final graphical model (post-processing)
ALPHA = 0.9  # the share of each round's ρ that measures; the rest selects
COLUMN_SECONDS = 0.5  # the rounds' time per column on 2 cores (AIM._recipe)


def candidates(d: int, degree: int) -> tuple[list[tuple[int, ...]], np.ndarray]:
    """Every marginal of up to ``degree`` columns inside a workload marginal (the workload is
    every ``degree``-way marginal), and its weight Σ_s |r ∩ s| over the workload."""
    degree = min(degree, d)
    workload = list(itertools.combinations(range(d), degree))
    chosen = [c for size in range(1, degree + 1) for c in itertools.combinations(range(d), size)]
    weights = np.array([sum(len(set(c) & set(s)) for s in workload) for c in chosen], float)
    return chosen, weights


class AIM(Synthesizer):
    """AIM: adaptive select–measure–estimate of a graphical model over a marginal workload.

    Parameters
    ----------
    degree : the workload: every marginal of this many columns (2 or 3).
    rounds : T/d, the most rounds per column (the paper's 16; 6 here, since each round
        compiles the part of the model it joined): each round's ρ is at least ρ/T.
    max_cells : the largest graphical model, in cells of its junction tree.
    round_iterations : mirror-descent steps after each measurement (warm-started).
    iterations : mirror-descent steps of the final model.
    bins, exact_integers : how numbers become codes (:data:`synth.encoding.BINS`); both at
        most n/σ, σ the 1-way noise.
    """

    name = "aim"
    title = "AIM"
    summary = ("Adaptively measures the marginals a graphical model answers worst, annealing "
               "its noise as the model improves (Private-PGM). The strongest published "
               "marginal method; how many rounds it runs depends on the data.")
    paper = "McKenna, Mullins, Sheldon, Miklau 2022 (PVLDB)"
    when = ("The closest on pairs of the methods at every ε measured (on Adult at ε = 1, "
            "2-way TVD 0.037 and tree accuracy 0.835 in 26 s), improving with ε; its rounds "
            "follow the data, so its plan bounds the spending rather than listing it.")
    streams = True
    counts = True
    quick: ClassVar[Mapping[str, Any]] = {"bins": 8, "rounds": 2, "round_iterations": 20,
                                          "iterations": 100}
    stages: ClassVar[Mapping[str, float]] = {MEASURE: 1.0}
    accountants: ClassVar[Mapping[str, str]] = {MEASURE: "zcdp"}
    params: ClassVar[Mapping[str, Param]] = specs(
        Param("degree", int, low=2, high=3, advanced=False, label="Workload degree",
              help="The marginals the release should answer: every pair (2) or every triple "
                   "(3) of columns."),
        Param("rounds", int, low=1, high=1_000, label="Rounds per column (at most)",
              help="T = this × columns bounds the rounds; each round gets at least ρ/T, and "
                   "annealing spends faster when the model stops improving."),
        Param("max_cells", int, low=1, label="Largest model (cells)",
              help="A marginal is only picked while the graphical model stays under this "
                   "many cells, a limit that grows as the budget is spent."),
        Param("round_iterations", int, low=1, high=10_000, label="Estimation steps per round",
              help="Mirror-descent steps after each measurement (post-processing)."),
        Param("iterations", int, low=1, high=100_000, label="Final estimation steps",
              help="Mirror-descent steps of the final model (post-processing)."),
        BINS,
        EXACT_INTEGERS)

    def __init__(self, degree: int = 2, rounds: int = 6, max_cells: int = 1_000_000,
                 round_iterations: int = 50, iterations: int = 1000, bins: int = 32,
                 exact_integers: int = 128):
        self.degree = degree
        self.rounds = rounds
        self.max_cells = max_cells
        self.round_iterations = round_iterations
        self.iterations = iterations
        self.bins = bins
        self.exact_integers = exact_integers

    def _check_rules(self, values: dict, population: Population | None,
                     schema: Schema | None) -> None:
        if schema is not None and len(schema) < 2:
            raise ParameterError("AIM needs at least 2 columns; use 'independent' for one")

    def _memory(self, values: dict, population: Population | None, schema: Schema | None
                ) -> dict[str, int]:
        """The model (float64 cells, a few copies while it is fitted) and every candidate
        marginal's true counts."""
        model = 32 * values["max_cells"]
        if schema is None:
            return {"max_cells": model}
        widths = column_widths(schema, values["bins"], values["exact_integers"])
        chosen, _ = candidates(len(widths), values["degree"])
        cells = sum(math.prod(widths[j] for j in c) for c in chosen)
        return {"max_cells": model, "candidates counted": 8 * cells}

    def _recipe(self, population: Population, schema: Schema, budget: Budget) -> Recipe:
        """The 1-way measurement, then rounds whose number waits for the data: the stage's
        share bounds them. Refused when the 1-way noise (in counts) exceeds the U units
        themselves (n with one row per unit; public at plan and fit alike): the rounds could
        not steer anything either. Its settings: ρ of the
        stage, the 1-way measurement, ρ of a round before annealing.

        Time: rounds of select, measure and a 50-step refit, about as many as the columns,
        then the final estimation and the draw. On 2 cores (benchmarks/progress.py), with
        the model fitted part by part (:class:`synth.methods.pgm.Model`: a round compiles
        only the part its pick joined), the rounds took 9.9 s on the census sample (13
        columns), 3.0 s on the panel (7), and 6.5 and 9.6 s on the flights over 20,000 and
        300,000 rows (16 columns, more in the model): 0.4–0.8 s a column, growing little
        with n, priced at 0.5 s (each whole run's estimate within 1.5×,
        benchmarks/estimates.py). The final estimation runs on the last refit's compiled
        programs, at the lowest optimisation: priced at 2.5 s a thousand steps, what a large
        model's take, so that a loop of many more is priced as what it would take."""
        d, n, k = len(schema), population.rows, population.max_rows
        rho = zcdp_rho(*budget.allowance(MEASURE), MEASURE)
        per_round = rho / (self.rounds * d)
        one_way = measurement_event(histogram_l2(d, k), ALPHA * per_round * d)
        check_audible(one_way.sigma / population.units, budget.allowance(MEASURE)[0])
        first = measurement_event(histogram_l2(1, k), ALPHA * per_round)
        cells = max(3, int(population.public().rows / one_way.sigma))  # for each number
        binds = column_widths(schema, self.bins, self.exact_integers) != column_widths(
            schema, min(self.bins, cells), min(self.exact_integers, cells))
        capped = (f"; a number in at most {cells} cells (and a float's 0 in one of its "
                  "own), as many as its noise leaves worth counting" if binds else "")
        return Recipe((
            Step(MEASURE, one_way, mechanism="Gaussian, zCDP",
                 meaning=f"every column's counts within ±{figure(one_way.sigma)} rows "
                         f"(1 σ){capped}"),
            Step(MEASURE, None, exact=False,
                 waits="AIM's annealing (how many rounds depends on the data)",
                 mechanism="exponential + Gaussian, zCDP, adaptive", scale=describe(first),
                 meaning=f"rounds measure marginals within ±{figure(first.sigma)} rows (1 σ) "
                         "at first, halving the noise whenever the model stops improving, "
                         f"until ρ = {rho:.3g} is spent (how many rounds depends on the "
                         "data)")),
            {"rho": rho, "one_way": one_way, "per_round": per_round, "cells": cells},
            seconds=1.0 + 2.5 * self.iterations / 1000 + 4e-7 * n * d
            + COLUMN_SECONDS * d * self.round_iterations / 50 + draw_seconds(n, d))

    # ---- the fit ----------------------------------------------------------------------

    def _fit(self, data: Chunks, schema: Schema, recipe: Recipe, ctx: FitContext) -> None:
        disc = Discretizer(schema, bins=min(self.bins, recipe["cells"]),
                           exact_integers=min(self.exact_integers, recipe["cells"]))
        sizes, d, k = disc.sizes, len(schema), self.population_.max_rows
        rho, one_way, per_round = recipe["rho"], recipe["one_way"], recipe["per_round"]
        chosen, weights = candidates(d, self.degree)

        def counter(frame: pd.DataFrame) -> list[np.ndarray]:
            codes = disc.codes(frame)
            return [marginal(codes, sizes, c) for c in chosen]

        true = count(data, counter, ctx, COUNT, "counting every candidate marginal (once)")
        cells = np.array([len(t) for t in true])
        ctx.stage(MEASURE, None, "1-way marginals, then rounds of select, measure, estimate")
        self.ledger_.charge(MEASURE, one_way, f"1-way marginals of {d} columns")
        ones = np.split(measure(np.concatenate(true[:d]), one_way), np.cumsum(sizes)[:-1])
        measured = [Measurement((j,), ones[j], one_way.sigma) for j in range(d)]
        model = ctx.wait(lambda: Model(sizes, self.population_.rows))  # imports JAX

        def refit() -> None:  # a round's refit: no bar of its own, the round's beating
            ctx.wait(lambda: model.estimate(measured, self.round_iterations,
                                            lambda done, steps: ctx.check()))

        refit()
        used, t = one_way.rho, 0
        rho_measure, rho_select = ALPHA * per_round, (1 - ALPHA) * per_round
        sensitivity = histogram_l1(1, k) * float(weights.max())
        self.picked_ = []
        while used < rho * (1 - 1e-12):
            t += 1
            left = rho - used
            if left <= 2 * (rho_measure + rho_select):  # the last round takes what is left
                rho_measure, rho_select = ALPHA * left, left - ALPHA * left
            limit = used / rho * self.max_cells
            cliques = [m.columns for m in measured]
            fits = [i for i, c in enumerate(chosen) if ctx.beat() or c in cliques
                    or model.size([*cliques, c]) <= limit]
            pick = Exponential(math.sqrt(8 * rho_select), sensitivity)
            gauge = measurement_event(histogram_l2(1, k), rho_measure)
            expected = noise_l1(gauge, cells)
            answers = {i: ctx.beat() or model.marginal(chosen[i]) for i in fits}
            scores = np.full(len(chosen), -np.inf)
            for i, answer in answers.items():
                scores[i] = weights[i] * (np.abs(true[i] - answer).sum() - expected[i])
            self.ledger_.charge(MEASURE, pick, f"round {t}: the worst-answered marginal")
            r = int(select(scores, pick)[0])
            self.ledger_.charge(MEASURE, gauge, f"round {t}: measure "
                                                f"{' × '.join(schema.names[j] for j in chosen[r])}")
            measured.append(Measurement(chosen[r], measure(true[r], gauge), gauge.sigma))
            used += pick.epsilon**2 / 8 + gauge.rho
            refit()
            self.picked_.append(chosen[r])
            if np.abs(model.marginal(chosen[r]) - answers[r]).sum() <= expected[r]:
                rho_measure, rho_select = 4 * rho_measure, 4 * rho_select  # σ/2, 2ε
            ctx.progress(MEASURE, t, None, budget_spent=min(used / rho, 1.0),
                         sigma=gauge.sigma)
        ctx.stage(ESTIMATE, self.iterations, "fitting the final graphical model "
                                                  "(post-processing)")
        ctx.wait(lambda: model.estimate(measured, self.iterations,
                                        partial(ctx.progress, ESTIMATE)))
        self.model_, self.discretizer_, self.rounds_ = model, disc, t

    def _sample(self, n: int, rng: np.random.Generator) -> pd.DataFrame:
        codes = self.model_.sample(n, rng)
        return finalize(self.discretizer_.decode(codes, rng), self.discretizer_.schema)
