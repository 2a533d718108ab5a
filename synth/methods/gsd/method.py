"""Private-GSD (Liu, Tang, Vietri, Wu 2023): select, measure, project, in rounds.

Each of T rounds privately picks the S worst-answered workloads of the current synthetic table
(report-noisy-max with Gumbel noise, never a workload picked before), measures them with the
Gaussian mechanism, and re-projects: a genetic search (:mod:`.projection`) over N'-row
tables, warm-started from the last one, fits **all** workloads measured so far, each weighted
by its precision 1/σ² (the paper weighs them alike). The one-shot
mode measures every workload, and each number's own marginal, once and projects once; the
default takes it on a narrow table, where its rounds would pick half the workloads or more.

Privacy (zCDP, replace-one with n public): an answer is a fraction of the n rows, so one
replaced record moves it by at most 1/n, a workload's answers by Δ_w (√(2·partitions)/n,
:func:`~synth.privacy.events.fractions_l2`) and its max error by 1/n. With a unit of up to
k rows an answer is a count over n̂, the private estimate of the bounded row count
(:mod:`synth.privacy.unit`), and every sensitivity is k times as large. ρ comes from the run's
(ε, δ) by the tight conversion; each of the T·S selections and T·S measurements is
ρ' = ρ/(2TS)-zCDP (Gumbel scale 1/(n√(2ρ')), i.e. the exponential mechanism at ε₀ = √(8ρ'),
and Gaussian σ_w = Δ_w/√(2ρ')); in one-shot mode each of the W workloads gets ρ/W. Each
selection and each measurement is charged to the ledger before it runs, so a cancelled run's
ledger holds exactly what ran.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from synth.data import figure
from synth.encoding import EXACT_INTEGERS, Space
from synth.errors import ParameterError
from synth.marginals import (
    MARGINAL_CLASSES,
    Workloads,
    bounds_apart,
    check_audible,
    check_fits,
    count,
    draw_in_cell,
    interval_codes,
    measure,
    measurement_event,
    plan_rounds,
    select,
    selection_event,
)
from synth.methods.base import FitContext, Synthesizer, check_rows, resample
from synth.methods.gsd.projection import project
from synth.methods.gsd.queries import QUERY_CLASSES, build, narrowest, parse_classes, plan_size
from synth.plan import Recipe, Step
from synth.privacy.budget import Budget
from synth.privacy.events import describe
from synth.privacy.unit import Population
from synth.schema import CATEGORICAL, Schema
from synth.source import Chunks
from synth.validation import Param, specs

QUERIES = "queries"  # the budget stage: choosing and measuring workloads
PROJECT = "project"  # the event stage of the search (free post-processing)


ROWS = 2000  # N' by default: enough for Adult's marginals (benchmarks/gsd.py)
# the plan's cost model (benchmarks/progress.py, on 2 cores): seconds of a round's search
# over ROWS rows, per workload beyond a base the search costs whatever the workloads; the
# search runs longer as the answers' signal (rows × ε) grows (GSD._recipe); counting the
# answers costs per row and workload
ROUND_SECONDS, WORKLOAD_BASE, ANSWER_SECONDS = 0.00257, 1486, 1.6e-7
SIGNAL, SIGNAL_POWER, LEAST = 27_134, 0.18, 0.7
CANDIDATES = 100  # mutations and crossovers a generation makes by default (the calibration's)
# a one-shot search, from a random table to every answer at once, runs about as long as this
# many warm-started rounds: 3.5 to 8 on benchmarks/dates.py's three readings of its table
# (the date as a date: 11 s against 29 s for 10 rounds; as 1,826 categories: 36 against 43)
ONE_SHOT_ROUNDS = 5


def synthetic_rows(rows: int | None, n: int) -> int:
    """N': as given, or n up to :data:`ROWS`. A tiny table gets a search as small as itself
    (25 rows: 5 s, against 120 s over 2,000 rows that noise-dominated answers cannot steer);
    n is public under replace-one."""
    return min(ROWS, n) if rows is None else int(rows)


def default_rounds(epsilon: float) -> int:
    """T by ε, from benchmarks/gsd.py on Adult (2-way categorical + binary-tree marginals)."""
    return 20 if epsilon < 2 else 30


class GSD(Synthesizer):
    """Private-GSD: adaptive select–measure–project with a genetic projection.

    Parameters
    ----------
    queries : query classes joined by '+': ``num1`` (each numeric column's own marginal at
        its finest intervals), ``cat2``, ``cat3`` (categorical marginals), ``bt`` (2-way
        binary-tree range marginals of every pair with a numeric column), ``prefix``,
        ``halfspace``. A one-shot run adds ``num1`` (see :func:`with_own`).
    rounds : T, adaptive rounds (default: by ε, see :func:`default_rounds`, at most the
        workloads over S; where those would pick half the workloads or more, every workload
        is measured in one shot instead).
    per_round : S, workloads selected per round.
    one_shot : measure every workload once instead of selecting adaptively.
    rows : N', rows of the synthetic table (default: n up to :data:`ROWS`).
    mutations, crossovers : candidates per generation of each kind.
    elite : elite set size E.
    max_generations : generations per projection (early stop usually ends it sooner).
    levels : binary-tree levels (2 … 2^levels intervals per numeric column).
    random_queries : number of random prefixes or halfspaces.
    exact_integers : at the finest level, a whole-number column taking at most this many
        values gets an interval per value (0: 2^levels intervals for every number, and a
        cell for each bound where an interval holds several values).
    """

    name = "gsd"
    title = "Private-GSD"
    summary = ("Adaptively picks the worst-answered marginals, measures them with Gaussian noise "
               "and fits a synthetic table to all measurements by genetic search. Mixed types.")
    paper = "Liu, Tang, Vietri, Wu 2023 (ICML)"
    when = ("Mixed numeric and categorical tables with a target, in little memory: on Adult "
            "at ε = 1, 2-way TVD 0.049 and tree accuracy 0.819 in 127 s (505 MB) on a 2-core "
            "machine, second to AIM on pairs from ε = 2 up (0.027 at ε = 8, answers weighted "
            "alike); it counts the table where it lies, so it suits large files.")
    streams = True
    counts = True
    quick: ClassVar[Mapping[str, Any]] = {"rounds": 2, "rows": 200, "max_generations": 40}
    stages: ClassVar[Mapping[str, float]] = {QUERIES: 1.0}
    accountants: ClassVar[Mapping[str, str]] = {QUERIES: "zcdp"}
    params: ClassVar[Mapping[str, Param]] = specs(
        Param("queries", str, advanced=False, label="Query classes",
              help=f"Marginals to fit, classes joined by '+' from {', '.join(QUERY_CLASSES)}: "
                   "num1 is each number's own, cat2/cat3 categorical pairs and triples, bt "
                   "binary-tree ranges of pairs with a number. One shot adds num1."),
        Param("rounds", int, low=1, optional=True, symbol="T", advanced=False, label="Rounds",
              help="Adaptive rounds of select, measure, project; empty takes 20 below ε = 2 "
                   "and 30 above, or, where those would pick half the workloads or more, "
                   "measures every workload once (one shot)."),
        Param("per_round", int, low=1, symbol="S", label="Workloads per round",
              help="Worst-answered workloads selected and measured in each round."),
        Param("one_shot", bool, label="One shot",
              help="Measure every workload and each number's own marginal once and project "
                   "once, instead of adaptively (what the default rounds do on a narrow "
                   "table; giving rounds selects)."),
        Param("rows", int, low=1, optional=True, label="Synthetic rows",
              help=f"Rows of the table the genetic search fits; the release resamples them. "
                   f"Empty takes the table's row count, up to {ROWS:,}."),
        Param("mutations", int, low=0, high=100_000, label="Mutations per generation",
              help="Mutated candidates the search tries in each generation."),
        Param("crossovers", int, low=0, high=100_000, label="Crossovers per generation",
              help="Crossed-over candidates the search tries in each generation."),
        Param("elite", int, low=1, symbol="E", label="Elite",
              help="Best tables kept from one generation to the next."),
        Param("max_generations", int, low=1, label="Generations per projection (at most)",
              help="A projection usually stops earlier, when its loss stops improving."),
        Param("levels", int, low=1, high=16, label="Binary-tree levels",
              help="A numeric column is cut into 2 … 2^levels intervals for bt queries."),
        Param("random_queries", int, low=1, label="Random queries",
              help="How many random prefixes or halfspaces the prefix and halfspace classes "
                   "draw."),
        EXACT_INTEGERS)

    def __init__(self, queries: str = "cat2+bt", rounds: int | None = None, per_round: int = 1,
                 one_shot: bool = False, rows: int | None = None, mutations: int = 50,
                 crossovers: int = 50, elite: int = 2, max_generations: int = 200_000,
                 levels: int = 5, random_queries: int = 10_000, exact_integers: int = 128):
        self.queries = queries
        self.rounds = rounds
        self.per_round = per_round
        self.one_shot = one_shot
        self.rows = rows
        self.mutations = mutations
        self.crossovers = crossovers
        self.elite = elite
        self.max_generations = max_generations
        self.levels = levels
        self.random_queries = random_queries
        self.exact_integers = exact_integers

    # ---- parameters and the recipe -----------------------------------------------------

    def _check_rules(self, values: dict, population: Population | None,
                     schema: Schema | None) -> None:
        classes = parse_classes(values["queries"])
        if values["mutations"] + values["crossovers"] == 0:
            raise ParameterError("mutations + crossovers must be ≥ 1")
        if schema is None:
            return
        if values["rows"] is not None:
            check_rows(values["rows"], len(schema), "rows")  # its synthetic table is in memory
        workloads, _ = plan_size([c.kind == CATEGORICAL for c in schema], classes,
                                 values["levels"], values["random_queries"])
        if not workloads:
            raise ParameterError(f"queries {values['queries']!r} give no workload on this "
                                 "table's columns")
        if values["rounds"] is not None and not values["one_shot"]:
            check_fits(values["rounds"], values["per_round"], workloads)

    def _memory(self, values: dict, population: Population | None, schema: Schema | None
                ) -> dict[str, int]:
        """Bytes of the search's tables (the elite and a working copy of N' rows' codes), the
        candidates of a generation (an edited row each, with its loss change per column) and
        the random prefix or halfspace queries (a coefficient per column)."""
        columns = 1 if schema is None else max(len(schema), 1)
        rows = values["rows"] or ROWS  # N' at most (the public default caps it)
        candidates = values["mutations"] + values["crossovers"]
        return {"rows and elite": 8 * rows * columns * (values["elite"] + 2),
                "mutations and crossovers": 16 * candidates * columns,
                "random_queries": 16 * values["random_queries"] * columns}

    def _recipe(self, population: Population, schema: Schema, budget: Budget) -> Recipe:
        """Each round's selection (exact, but for n̂), then its S measurements: each costs ρ
        per call whichever workload is picked, so the widest one's event bounds them; in
        one-shot mode every workload's measurement. Refused when the quietest answer's noise
        could drown it, whatever n̂. Its settings: whether it measures in one shot, the
        query classes it builds, the rounds T, S per round and ρ per call. By default a
        table whose rounds would pick half its workloads or more (a narrow one) is measured
        in one shot: picking costs as much ρ as measuring, so each of the W measurements
        gets ρ/W ≥ ρ/(2TS) and none is left out; each number's own marginal is measured too,
        so with m numbers each call gets ρ/(W + m), below ρ/(2TS) where m > 2TS − W (many
        numbers). With units the fit's recipe is made again at n̂ (fewer rows, maybe fewer
        rounds), so it may select where the plan, at k·U rows, measured in one shot; it
        never spends more.

        Time: counting every workload's answers over the n rows, then each round's genetic
        search over N' rows, which costs about as much as WORKLOAD_BASE workloads plus one
        per workload and runs more generations before it stops improving the sharper the
        answers are: times (n·ε / SIGNAL)^0.18, at least 0.7; a generation costs as many
        candidates as it makes (mutations and crossovers). On 2 cores
        (benchmarks/progress.py, at ε = 1, kernel fc-v1045) the census sample's 78 workloads
        took 60 s in 20 rounds, the panel's 21 and its 3 numbers' own 15 s in one shot, and
        the flights' 325 took 88 s over 20,000 rows; over 300,000, 128 s (and 20 s counting)
        on an earlier host. Adult's 105 took 127 s (benchmarks/peers.py), where this model
        says 79: its wide categories cost more than their count. A one-shot
        search starts from a random table and runs about as long as ONE_SHOT_ROUNDS rounds."""
        categorical = [c.kind == CATEGORICAL for c in schema]
        asked = parse_classes(self.queries)
        eps, delta = budget.allowance(QUERIES)

        def rounds_at(people: Population) -> tuple[bool, list[str], int, int, float]:
            w, widest = plan_size(categorical, asked, self.levels, self.random_queries)
            if not self.one_shot:
                rounds, s, rho = plan_rounds(people, eps, delta, w, widest, self.rounds,
                                             default_rounds(eps), self.per_round,
                                             stage=QUERIES)
                if self.rounds is not None or 2 * rounds * s < w:
                    return False, asked, rounds, s, rho
            # one shot, asked for or because the default rounds would pick half the
            # workloads or more (choosing costs as much as measuring, so measuring every
            # one gives each as much ρ or more, before each number's own marginal, measured
            # too, takes its share)
            classes = with_own(asked, categorical)
            w, widest = plan_size(categorical, classes, self.levels, self.random_queries)
            return True, classes, *plan_rounds(people, eps, delta, w, widest, None, 1,
                                               one_shot=True, stage=QUERIES)

        one_shot, classes, rounds, s, rho = rounds_at(population)
        w, widest = plan_size(categorical, classes, self.levels, self.random_queries)
        n, k = population.rows, population.max_rows
        # judged where n̂ is worst (U rows: sensitivity k/U) with the rounds and classes of
        # the public k·U rows (the most, so the least ρ a call): the same at plan and fit,
        # so a plan that passes is not refused after the rows' estimate is spent
        _, judged, *_, least = rounds_at(population.public())
        quietest = narrowest(categorical, judged, self.levels)
        check_audible(measurement_event(quietest * k / population.units, least).sigma, eps,
                      _remedy(rounds))
        measured = measurement_event(widest * k / n, rho)  # the widest workload's σ
        what = f"all {w} workloads" if one_shot else f"{rounds} rounds × {s} of {w} workloads"
        measure = Step(
            QUERIES, measured, exact=False, mechanism="Gaussian, zCDP",
            scale=f"ρ per call = {rho:.3g}; {describe(measured)}",
            meaning=f"{what} measured: every answer is a fraction of rows measured within "
                    f"±{measured.sigma:.2g} (1 σ), i.e. ±{figure(measured.sigma * n)} of the "
                    f"{n:,} rows")
        if one_shot:
            steps = [measure] * w
        else:
            picked = selection_event(n, rho, s, k)
            pick = Step(QUERIES, picked, exact=k == 1,
                        mechanism="report-noisy-max (Gumbel), zCDP",
                        meaning=f"each round picks its worst-answered workloads with Gumbel "
                                f"noise of scale {2 * picked.sensitivity / picked.epsilon:.2g} "
                                "in max error")
            steps = [pick, *[measure] * s] * rounds
        rows = synthetic_rows(self.rows, n)
        signal = max(LEAST, (n * eps / SIGNAL) ** SIGNAL_POWER)
        candidates = max(self.mutations + self.crossovers, 1) / CANDIDATES
        return Recipe(tuple(steps), {"one_shot": one_shot, "queries": "+".join(classes),
                                     "rounds": rounds, "per_round": s, "rho": rho},
                      seconds=ANSWER_SECONDS * n * w + ROUND_SECONDS
                      * (ONE_SHOT_ROUNDS if one_shot else rounds)
                      * (WORKLOAD_BASE + w) * rows / ROWS * signal * candidates)

    # ---- the fit -------------------------------------------------------------------------

    def _fit(self, data: Chunks, schema: Schema, recipe: Recipe, ctx: FitContext) -> None:
        n = self.population_.rows
        space = Space(schema)
        self.queries_ = recipe["queries"]
        classes = build(space, parse_classes(self.queries_), self.rng_, levels=self.levels,
                        random_queries=self.random_queries, exact=self.exact_integers)
        run = self._start(classes, self.population_, recipe)
        self._answer(run, space, data, ctx)
        self.rows_ = synthetic_rows(self.rows, n)
        table = space.random(self.rows_, self.rng_)  # round 1 scores and starts from it
        ctx.stage(PROJECT, run.rounds, f"one genetic search over {self.rows_:,} rows to every "
                  "workload, measured at once" if recipe["one_shot"] else
                  f"{run.rounds} round(s) of select, measure and genetic search over "
                  f"{self.rows_:,} rows")
        if recipe["one_shot"]:
            self._measure(run, np.arange(run.first[-1]), 1)
        for t in range(1, run.rounds + 1):
            if not recipe["one_shot"]:
                self._measure(run, self._select(run, table, t), t)
            table = self._project(run, space, table, t, ctx)
        self.table_ = table
        self.space_ = space
        self.generations_ = run.generations
        self.measured_ = [run.label(w) for w in run.picked]

    @staticmethod
    def _start(classes: list[Workloads], population: Population, recipe: Recipe) -> _Rounds:
        """The rounds of ``recipe`` over ``classes`` on the population's n rows (n̂ for
        units of up to k rows): each workload's sensitivity as a fraction of them."""
        first = np.cumsum([0, *(len(q) for q in classes)])
        n, k = population.rows, population.max_rows
        sens = np.concatenate([q.sensitivity for q in classes]) * k / n
        return _Rounds(classes, first, n, k, recipe["rounds"], recipe["per_round"],
                       recipe["rho"], sens, targets=[np.zeros(q.size) for q in classes],
                       weights=[np.zeros(q.size) for q in classes])

    @staticmethod
    def _answer(run: _Rounds, space: Space, data: Chunks, ctx: FitContext) -> None:
        """Every query's answer on the private table, read once where it lies: counts over
        the public n (with units, n̂; with one row per unit, n itself)."""
        classes = run.classes

        def counter(frame: pd.DataFrame) -> list[np.ndarray]:
            private = space.encode(frame)
            return [q.counts(private) for q in classes]

        counts = count(data, counter, ctx, "answers",
                       "answering the queries on the private table (once)")
        run.true.extend(total / run.n for total in counts)

    def _select(self, run: _Rounds, table: np.ndarray, t: int) -> np.ndarray:
        """Round t's worst-answered workloads of ``table``, by report-noisy-max (charged)."""
        scores = np.concatenate([q.worst_errors(a, q.answers(table))
                                 for q, a in zip(run.classes, run.true, strict=True)])
        scores[run.picked] = -np.inf
        event = selection_event(run.n, run.rho, run.per_round, run.k)
        self.ledger_.charge(QUERIES, event, f"round {t}: {run.per_round} workload(s) "
                                            "selected by max error")
        return select(scores, event)

    def _measure(self, run: _Rounds, chosen: np.ndarray, t: int) -> None:
        """Gaussian measurements of the ``chosen`` workloads, each charged before it runs."""
        unit = run.quietest_sigma
        for w in chosen:
            k, local = _locate(run.first, w)
            event = measurement_event(run.sens[w], run.rho)
            self.ledger_.charge(QUERIES, event, f"round {t}: measure {run.label(w)}")
            lo, hi = run.classes[k].bounds[local:local + 2]
            # answers are fractions: clipping to [0, 1] is post-processing
            run.targets[k][lo:hi] = np.clip(measure(run.true[k][lo:hi], event), 0, 1)
            # the loss weighs a measurement by its precision 1/σ² (the quietest workload's
            # counting 1), as a Gaussian likelihood does: a binary-tree pair, √levels times
            # as noisy as a categorical one, pulls the search 1/levels as hard
            run.weights[k][lo:hi] = (unit / event.sigma) ** 2
            run.picked.append(int(w))

    def _project(self, run: _Rounds, space: Space, table: np.ndarray, t: int,
                 ctx: FitContext) -> np.ndarray:
        """Round t's genetic search from ``table`` toward every measurement so far."""
        result = project(space, run.classes, run.targets, run.weights, self.rows_,
                         self.rng_, init=table, mutations=self.mutations,
                         crossovers=self.crossovers, elite=self.elite,
                         max_generations=self.max_generations,
                         progress=partial(_search_progress, ctx, t, run.rounds,
                                          run.generations))
        run.generations += result.generations
        ctx.progress(PROJECT, t, run.rounds, loss=result.loss, max_error=result.max_error,
                     generation=run.generations)
        return result.table

    def _sample(self, n: int, rng: np.random.Generator) -> pd.DataFrame:
        """Rows of the projected table, each number spread within its finest interval when
        only marginals were fitted (post-processing)."""
        rows = self.table_[resample(len(self.table_), n, rng)]
        if all(name in MARGINAL_CLASSES for name in parse_classes(self.queries_)):
            # random prefixes and halfspaces cut inside the intervals: their numbers stay
            rows = spread(rows, self.space_, self.levels, self.exact_integers, rng)
        return self.space_.decode(rows)


@dataclass
class _Rounds:
    """What the rounds share: the query classes and the plan, the private answers, and the
    measurements so far (targets, with weight 1/σ² where measured, the quietest's 1)."""

    classes: list[Workloads]
    first: np.ndarray  # global workload id = first[k] + local id in class k
    n: int  # the public row count (n̂ for units of more than one row)
    k: int  # rows per unit at most
    rounds: int
    per_round: int
    rho: float  # per mechanism call
    sens: np.ndarray  # per global workload, Δ₂ of its answers as fractions
    targets: list[np.ndarray]
    weights: list[np.ndarray]
    true: list[np.ndarray] = field(default_factory=list)
    picked: list[int] = field(default_factory=list)
    generations: int = 0

    @property
    def quietest_sigma(self) -> float:
        """σ of the least noisy workload's measurement: the loss's unit of weight."""
        return measurement_event(float(self.sens.min()), self.rho).sigma

    def label(self, w: int) -> str:
        k, local = _locate(self.first, w)
        return f"{self.classes[k].kind}: {self.classes[k].labels[local]}"


def spread(x: np.ndarray, space: Space, levels: int, exact: int,
           rng: np.random.Generator) -> np.ndarray:
    """``x`` with each number redrawn uniformly within the finest interval the marginal
    queries see it through (a whole number among the whole numbers there), so none of their
    answers changes. Without it n rows drawn from N' stack copies of N' points inside those
    intervals: a date's 60 months from 2,000 points were 0.09 off in TVD with exact answers,
    0.07 spread (benchmarks/dates.py). A bound is a cell of its own and stays; a whole
    number whose bounds are not apart is seen about one value per interval and stays too."""
    x = x.copy()
    inner = 2**levels
    for j in space.numeric:
        steps = int(space.steps[j])
        if bounds_apart(steps, levels, exact):  # every interval holds a value to draw
            code = interval_codes(x[:, j], inner, True)
            x[:, j] = draw_in_cell(code, inner, True, steps, rng.random(len(x)))
    return x


def with_own(classes: list[str], categorical: list[bool]) -> list[str]:
    """The classes a one-shot run measures: ``classes`` and each number's own marginal at
    its finest intervals (``num1``). A pair sees a number through a binary tree (Δ₂ = √10 at
    5 levels) crossed with its partner; alone, through one partition (Δ₂ = √2). On
    benchmarks/dates.py (10 runs at ε = 1) a date's months were 0.089 off in TVD, 0.066
    with ``num1`` (independent columns: 0.070), the other columns' pairs 0.052 → 0.053; as a
    binary tree, with the categories' own too, 0.079 and 0.054, and the panel sample's pairs
    0.177 → 0.188 (5 runs) where ``num1`` keeps them. Rounds pick among pairs instead."""
    if "num1" in classes or all(categorical):
        return classes
    return ["num1", *classes]


def _remedy(rounds: int) -> str:
    return " or use fewer rounds" if rounds > 1 else ""


def _search_progress(ctx: FitContext, t: int, rounds: int, before: int, generation: int,
                     loss: float, worst: float) -> None:
    """The live view during round t's search; ``before``: generations of earlier rounds."""
    ctx.progress(PROJECT, t - 1, rounds, loss=loss, max_error=worst,
                 generation=before + generation)


def _locate(first: np.ndarray, w: int) -> tuple[int, int]:
    """(query class, workload within it) of a global workload id; ``first`` holds each
    class's first id."""
    k = int(np.searchsorted(first, w, side="right") - 1)
    return k, int(w - first[k])
