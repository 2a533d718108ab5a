"""DP-Select's engines: how the output's rows are chosen from the DP-GAN's pool.

Each engine owns the selection stage: its parameters, its accountant, its recipe (the
charges and their noise, the settings its choice reads, and a cost model where one exists)
and its part of the fit. The method
(:class:`~synth.methods.dpselect.method.DPSelect`) holds a DP-GAN for the pool and one engine,
chosen by the ``engine`` parameter. The algorithms live beside: :mod:`.measure` (with
:mod:`.weights`), :mod:`.rows` and :mod:`.ga`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from synth.data import figure
from synth.encoding import Discretizer, finalize
from synth.errors import Cancelled, ParameterError, check_int
from synth.marginals import check_fits, selection_event
from synth.methods.base import BYTES_PER_CELL, FitContext
from synth.methods.dpselect.ga import select_subset
from synth.methods.dpselect.measure import (
    ROUNDS,
    SUPPORT,
    candidate_count,
    measure_and_weight,
    measure_plan,
)
from synth.methods.dpselect.rows import DISTANCES, cells, select, top_pairs
from synth.methods.dpselect.weights import resample as draw
from synth.plan import Recipe, Step
from synth.privacy.budget import Ledger
from synth.privacy.composition import per_step_epsilon
from synth.privacy.dpsga import GA_PARAMS, check_settings, default_generations
from synth.privacy.events import Exponential, describe, normalised_marginals_l1
from synth.privacy.unit import Population, PrivacyUnit
from synth.schema import CATEGORICAL, Schema
from synth.validation import Param, specs

SELECT = "select"
SELECTION_BINS = 10  # equal-width bins over public bounds for numeric columns (note G4)
# The measure engine's least default pool. On the 4,166-row bundled sample at ε = 1 (six runs
# each), a pool of 2n gave tree accuracy 0.743 and 2-way TVD 0.081 (medians), 4n 0.781 and
# 0.075, in 11-16 s against 15-22 s.
MIN_POOL = 20_000
# The measure engine's cost in the plan, on 2 cores (benchmarks/estimates.py): drawing the pool
# and weighing it against the measured workloads grows faster than its size W (held rows ×
# slots weighed, in millions: more rows also take more fitting steps). Adult (W = 24.7) took
# 40 s, the census sample (7.6) 5 s, the panel sample (4.0) 1.2 s: c·W^1.9 fits all three.
MEASURE_SECONDS, MEASURE_POWER = 0.09, 1.9


@dataclass(frozen=True)
class Chosen:
    """An engine's result: the output's rows (model space) and how far their marginals are
    from the table's, per section."""

    rows: pd.DataFrame
    distance: np.ndarray


class Engine:
    """One way of choosing the output's rows from the pool, built from the method's checked
    parameter values (it keeps its own ``params`` and ``pool_multiplier``)."""

    name: ClassVar[str]
    accountant: ClassVar[str]  # the selection stage's (synth.privacy.accounting)
    params: ClassVar[Mapping[str, Param]] = {}
    held: ClassVar[str] = "pool_multiplier × rows"  # what the pool's memory bound names

    def __init__(self, values: Mapping[str, Any]):
        self.pool_multiplier = values["pool_multiplier"]
        for name in self.params:
            setattr(self, name, values[name])

    def check_unit(self, unit: PrivacyUnit) -> None:
        """Refuse, by name, a unit of protection the selection cannot calibrate for."""

    def check_rules(self, values: Mapping[str, Any], population: Population | None,
                    schema: Schema | None) -> None:
        """Rules between the engine's parameters (``values`` has the method's), the public
        population and the model-space schema, when given."""

    def memory(self, population: Population | None, schema: Schema | None) -> dict[str, int]:
        """The selection's working arrays, by the parameters that drive them: here the pool's
        rows in memory, at the bytes a cell of a drawn table takes."""
        rows = 1 if population is None else population.units * population.max_rows
        columns = 1 if schema is None else max(len(schema), 1)
        return {self.held: BYTES_PER_CELL * self.held_rows(rows) * columns}

    def pool_rows(self, n: int) -> int:
        """The rows the generator draws: ``pool_multiplier`` × n, else 20 n."""
        return 20 * n if self.pool_multiplier is None else max(
            n, math.ceil(self.pool_multiplier * n))

    def held_rows(self, n: int) -> int:
        """The pool's rows in memory."""
        return self.pool_rows(n)

    def selections(self, n: int, epsilon: float) -> int:
        """How many private selections share the selection's ``epsilon``."""
        raise NotImplementedError

    def recipe(self, population: Population, schema: Schema, epsilon: float, delta: float
               ) -> Recipe:
        """The selection's :class:`~synth.plan.Recipe` on the selection share's (ε, δ), from
        public facts only; a refusal of an impossible selection (before the GAN spends)."""
        raise NotImplementedError

    def choose(self, data: pd.DataFrame, schema: Schema, pool: pd.DataFrame, ledger: Ledger,
               population: Population, recipe: Recipe, rng: np.random.Generator,
               ctx: FitContext) -> Chosen:
        """The output's rows as ``recipe`` says, charging ``ledger``'s selection share as
        each mechanism runs; ``rng`` steers post-processing only."""
        raise NotImplementedError


class Measure(Engine):
    """Gaussian measurements of the table's marginals, then the pool weighted to fit them
    (:mod:`.measure`): zCDP over n̂, as GSD's, so it protects units of several rows."""

    name = "measure"
    accountant = "zcdp"
    held = "pool_multiplier × rows with as many support rows"
    params: ClassVar[Mapping[str, Param]] = specs(
        Param("rounds", int, low=1, optional=True, symbol="T", label="Rounds (measure)",
              help="The measure engine's rounds, each picking and measuring one marginal; "
                   f"empty takes {ROUNDS}, fewer on a small or narrow table."))

    def check_rules(self, values: Mapping[str, Any], population: Population | None,
                    schema: Schema | None) -> None:
        if values["sections"] is not None:
            raise ParameterError("sections (S) split the rows and ga engines' selections; "
                                 "the measure engine measures the whole table")
        if self.rounds is not None and schema is not None:
            check_fits(self.rounds, 1, candidate_count([c.kind == CATEGORICAL for c in schema],
                                                       schema.target))

    def pool_rows(self, n: int) -> int:
        """A small table's fit is quick, and gains from more rows: 2 n, at least 20,000."""
        return max(2 * n, MIN_POOL) if self.pool_multiplier is None else super().pool_rows(n)

    def held_rows(self, n: int) -> int:
        """The GAN's pool and the support rows drawn from the 1-way measurements."""
        return self.pool_rows(n) + math.ceil(SUPPORT * self.pool_rows(n))

    def selections(self, n: int, epsilon: float) -> int:
        """T rounds, each a pick followed by a measurement."""
        return ROUNDS if self.rounds is None else int(self.rounds)

    def recipe(self, population: Population, schema: Schema, epsilon: float, delta: float
               ) -> Recipe:
        """The fixed measurements, then a pick and a measurement per round (any picked
        marginal costs ρ, so the widest one's event bounds it); with domains still to learn,
        or n̂ to estimate, the events wait for them. Time: the pool (with the support rows)
        weighed against every workload it measures."""
        n, k = population.rows, population.max_rows
        planned = measure_plan(population, schema, epsilon, delta, self.rounds, SELECT)
        rounds, rho, widest = planned.rounds, planned.rho, planned.widest
        picked = selection_event(n, rho, 1, k)
        sigma, gumbel = widest.sigma, 2 * picked.sensitivity / picked.epsilon
        first = "every column's" + ("" if schema.target is None else
                                    f", every pair with {schema.target}")
        pick = Step(SELECT, picked, k == 1, mechanism="report-noisy-max (Gumbel), zCDP",
                    meaning=f"each of {rounds} rounds picks the marginal the weighted pool "
                            f"matches worst, with Gumbel noise of scale {gumbel:.2g} in max "
                            "error")
        said = dict(mechanism="Gaussian, zCDP", scale=f"ρ per call = {rho:.3g}; "
                    f"{describe(widest)}", meaning=(
                        f"{len(planned.fixed)} marginals measured first ({first}) and "
                        f"{rounds} picked ones: every cell is a fraction of rows measured "
                        f"within ±{sigma:.2g} (1 σ), i.e. ±{figure(sigma * n)} of the {n:,} "
                        "rows; the pool's weights are then fitted to them, which costs "
                        "nothing"))
        if not schema.releasable:
            steps = [Step(SELECT, None, exact=False, **said)]
        else:
            steps = [*(Step(SELECT, planned.event(w), k == 1, **said) for w in planned.fixed),
                     *[pick, Step(SELECT, widest, exact=False, **said)] * rounds]
        return Recipe(tuple(steps), {"planned": planned}, seconds=MEASURE_SECONDS * (
            self.held_rows(n) * planned.work / 1e6) ** MEASURE_POWER)

    def choose(self, data: pd.DataFrame, schema: Schema, pool: pd.DataFrame, ledger: Ledger,
               population: Population, recipe: Recipe, rng: np.random.Generator,
               ctx: FitContext) -> Chosen:
        """Measured marginals, pool weights fitted to them, n rows drawn by the weights."""
        rounds = recipe["planned"].rounds
        pairs = "" if schema.target is None else f" and every pair with {schema.target}"
        ctx.stage(SELECT, max(rounds, 1), (
            f"every column's marginal{pairs} measured; the pool of {len(pool):,} rows "
            f"joined by as many drawn from them; {rounds} rounds: pick the worst-matched "
            "pair, measure it, reweight the pool"))

        def progress(t: int, rounds: int, worst: float, distance: float) -> None:
            ctx.progress(SELECT, t if rounds else 1, max(rounds, 1), max_error=worst,
                         distance=distance)

        result = measure_and_weight(ledger, SELECT, schema, data, pool, population,
                                    recipe["planned"], rng, progress, ctx.beat, ctx.wait)
        self.measured_ = result.picked
        self.pool_weights_ = result.weights
        rows = draw(result.weights, population.rows, rng)
        return Chosen(finalize(result.pool.iloc[rows].reset_index(drop=True), schema),
                      np.array(result.distance[-1:]))


@dataclass(frozen=True)
class Problem:
    """One sectioned selection: per section the private cells, the pool's cells and codes;
    the budget."""

    reals: list[np.ndarray]
    pools: list[np.ndarray]
    pool_values: list[np.ndarray]
    cell_counts: np.ndarray
    marginals: list[tuple[int, ...]]
    weights: np.ndarray
    epsilon: float
    delta: float


class Sectioned(Engine):
    """The exponential-mechanism engines: the private table and the pool split into S
    disjoint sections, each a separate selection under parallel composition with the
    sensitivity of its own size, 2/n_s, over the pool's most dependent 2-way marginals
    (chosen on the pool, free); composed by bounded range."""

    accountant = "bounded_range"
    default_sections: ClassVar[int]
    mechanism: ClassVar[str]  # the picks' mechanism, for the preview
    params: ClassVar[Mapping[str, Param]] = specs(
        Param("sections", int, low=1, optional=True, symbol="S", label="Sections",
              help="Disjoint parts of the table and the pool, selected separately (parallel "
                   "composition); empty takes 5 for rows and 1 for ga."),
        Param("distance", str, choices=DISTANCES, label="Distance",
              help="How far the chosen rows' marginals are from the table's; the ga engine "
                   "uses l1 only."),
        Param("marginal_fraction", float, low=0, high=1, low_open=True,
              label="Share of column pairs",
              help="The 2-way marginals matched: this share of all column pairs, the most "
                   "dependent ones in the pool."))

    def check_unit(self, unit: PrivacyUnit) -> None:
        if unit.max_rows > 1:
            raise ParameterError(
                f"DP-Select's selection is calibrated for one row per unit (its sections' "
                f"sizes are public only then); it cannot protect units of up to "
                f"{unit.max_rows} rows. Keep one row per unit, choose the measure engine, or "
                "choose DP-GAN, Private-GSD or independent marginals")

    @property
    def section_count(self) -> int:
        """S: as given, else the engine's default."""
        return self.default_sections if self.sections is None else int(self.sections)

    def check_rules(self, values: Mapping[str, Any], population: Population | None,
                    schema: Schema | None) -> None:
        n = None if population is None else population.units * population.max_rows
        if n is not None and self.section_count > n:
            raise ParameterError(f"sections (S={self.section_count}) cannot exceed the "
                                 f"table's {n} rows")

    def select_event(self, n: int, epsilon: float, delta: float) -> Exponential:
        """The selections of a section (the largest has n_s = ⌈n/S⌉ rows; the smallest the
        largest sensitivity 2/⌊n/S⌋): each the ε_s-exponential mechanism, ε_s the largest whose
        bounded-range composition stays within (ε, δ). Sections are disjoint parts of the
        table, so they compose in parallel: the whole selection costs one section's."""
        count = self.selections(n, epsilon)
        eps_s = per_step_epsilon(epsilon, count, delta, "bounded_range")
        return Exponential(eps_s, normalised_marginals_l1(n // self.section_count), count)

    def recipe(self, population: Population, schema: Schema, epsilon: float, delta: float
               ) -> Recipe:
        """One event of all the picks (:meth:`select_event`) and what it does; no cost
        model."""
        event = self.select_event(population.rows, epsilon, delta)
        return Recipe((Step(SELECT, event, mechanism=self.mechanism,
                            meaning=self.meaning(event, population.rows)),), {"event": event})

    def meaning(self, event: Exponential, n: int) -> str:
        """What the selections do to the output, in words."""
        raise NotImplementedError

    def choose(self, data: pd.DataFrame, schema: Schema, pool: pd.DataFrame, ledger: Ledger,
               population: Population, recipe: Recipe, rng: np.random.Generator,
               ctx: FitContext) -> Chosen:
        """Charge the selection, then make it; a stop settles the ledger to what ran."""
        n, m, sections = population.rows, len(pool), self.section_count
        coarse = Discretizer(schema, bins=SELECTION_BINS)
        pool_codes, real_codes = coarse.codes(pool), coarse.codes(data)
        marginals, weights = top_pairs(pool_codes, coarse.sizes, self.marginal_fraction)
        self.marginals_ = [tuple(schema.names[c] for c in cols) for cols in marginals]
        self.weights_ = weights

        parts = np.array_split(rng.permutation(n), sections)
        pool_parts = np.array_split(rng.permutation(m), sections)
        real_cells = cells(real_codes, coarse.sizes, marginals)
        pool_cells = cells(pool_codes, coarse.sizes, marginals)
        problem = Problem([real_cells[p] for p in parts], [pool_cells[p] for p in pool_parts],
                          [pool_codes[p] for p in pool_parts],
                          np.array([np.prod(coarse.sizes[list(c)]) for c in marginals]),
                          marginals, weights, *ledger.budget.allowance(SELECT))
        event = recipe["event"]
        done = [0]  # selections made in the section furthest along: the ledger if it stops
        entry = None
        try:
            entry = ledger.charge(SELECT, event, (
                f"{n:,} rows chosen from a pool of {m:,} in {sections} disjoint "
                f"section(s) (parallel composition), {self.how}, over {len(marginals)} "
                "marginals: " + ", ".join("×".join(c) for c in self.marginals_)))
            chosen, distance = self._choose(problem, event, rng, ctx, done)
        except BaseException as exc:  # Ctrl-C included
            # a stop other than a cancel can come between two progress reports, after the
            # selections made since the last one: settle those too
            ran = done[0] if isinstance(exc, Cancelled) else done[0] + self.slack(n)
            if entry is not None and ran < event.count:
                ledger.settle(entry, replace(event, count=ran))
            raise
        picked = np.concatenate([p[c] for p, c in zip(pool_parts, chosen, strict=True)])
        return Chosen(finalize(pool.iloc[picked].reset_index(drop=True), schema), distance)

    @property
    def how(self) -> str:
        """The selection, in words, for the ledger."""
        raise NotImplementedError

    def slack(self, n: int) -> int:
        """Selections that may run between two progress reports."""
        raise NotImplementedError

    def _choose(self, problem: Problem, event: Exponential, rng: np.random.Generator,
                ctx: FitContext, done: list[int]) -> tuple[list[np.ndarray], np.ndarray]:
        raise NotImplementedError


class Rows(Sectioned):
    """The thesis's engine: one exponential-mechanism pick per output row."""

    name = "rows"
    default_sections = 5
    params: ClassVar[Mapping[str, Param]] = specs(
        Param("candidates", int, low=1, optional=True, symbol="T", label="Candidates per pick",
              help="Pool rows offered to each pick of the rows engine; empty takes the pool "
                   "multiplier."),
        *Sectioned.params.values())

    @property
    def candidates_per_pick(self) -> float:
        """T: as given, else the pool multiplier, else 20 (note G3)."""
        if self.candidates is not None:
            return self.candidates
        return 20 if self.pool_multiplier is None else self.pool_multiplier

    def check_rules(self, values: Mapping[str, Any], population: Population | None,
                    schema: Schema | None) -> None:
        check_int(self.candidates_per_pick, "candidates (T)")
        super().check_rules(values, population, schema)

    def memory(self, population: Population | None, schema: Schema | None) -> dict[str, int]:
        """T candidates scored in each of S sections per pick, a few float64 per candidate
        and column."""
        columns = 1 if schema is None else max(len(schema), 1)
        return {**super().memory(population, schema),
                "candidates and sections": 32 * self.section_count * (columns + 1)
                * math.ceil(self.candidates_per_pick)}

    def selections(self, n: int, epsilon: float) -> int:
        """One per output row of a section."""
        return math.ceil(n / self.section_count)

    @property
    def how(self) -> str:
        return f"one exponential-mechanism pick per row ({self.distance} distance)"

    def slack(self, n: int) -> int:
        return max(1, math.ceil(n / self.section_count) // 100)

    mechanism = "exponential mechanism, bounded-range composition"

    def meaning(self, event: Exponential, n: int) -> str:
        eps_s, n_s = event.epsilon, math.ceil(n / self.section_count)

        def favour(t: int) -> str:  # best/worst odds of the EM between candidates at pick t
            return f"×{math.exp(min(eps_s * n_s / (2 * t), 700)):.3g}"

        return (f"{n_s:,} picks per section: a candidate that is a whole row better can be "
                f"favoured at most {favour(1)} at the first pick, {favour(100)} at pick 100 "
                f"and {favour(n_s)} at the last, so late picks are close to uniform draws "
                "from the pool")

    def _choose(self, problem: Problem, event: Exponential, rng: np.random.Generator,
                ctx: FitContext, done: list[int]) -> tuple[list[np.ndarray], np.ndarray]:
        steps = max(len(r) for r in problem.reals)
        ctx.stage(SELECT, steps, f"{len(problem.reals)} sections × {steps:,} "
                                 f"exponential-mechanism picks, ε per pick {event.epsilon:.3g}")

        def progress(t: int, total: int, d: np.ndarray) -> None:
            done[0] = t
            ctx.progress(SELECT, t, total, distance=float(np.mean(d)),
                         **{f"distance_{s + 1}": float(x) for s, x in enumerate(d)})

        trace = select(problem.reals, problem.pools, problem.cell_counts, problem.weights,
                       event.epsilon, int(self.candidates_per_pick), self.distance, rng,
                       sensitivity=event.sensitivity, progress=progress,
                       every=max(1, steps // 100))
        return trace.chosen, trace.distance


class GA(Sectioned):
    """The DP simple GA chooses each section's whole output (:mod:`.ga`): N_g·N_s + 1 strong
    selections instead of n_s weak ones."""

    name = "ga"
    default_sections = 1
    params: ClassVar[Mapping[str, Param]] = specs(*Sectioned.params.values(),
                                                  *GA_PARAMS.values())

    def check_rules(self, values: Mapping[str, Any], population: Population | None,
                    schema: Schema | None) -> None:
        check_settings(*(values[k] for k in GA_PARAMS))  # and parents ≤ population
        super().check_rules(values, population, schema)
        if self.distance != "l1":
            raise ParameterError(f"the ga engine scores outputs by the l1 distance only, got "
                                 f"distance={self.distance!r}")

    def memory(self, population: Population | None, schema: Schema | None) -> dict[str, int]:
        """N_p chromosomes of the output's rows (int32, with offspring)."""
        rows = 1 if population is None else population.units * population.max_rows
        return {**super().memory(population, schema), "population": 12 * self.population * rows}

    def generation_count(self, epsilon: float) -> int:
        """N_g: as given, else the paper's table at the selection's ε."""
        return default_generations(epsilon) if self.generations is None else int(
            self.generations)

    def selections(self, n: int, epsilon: float) -> int:
        """N_g·N_s + 1 per section, whatever its size."""
        return self.generation_count(epsilon) * int(self.parents) + 1

    @property
    def how(self) -> str:
        return "as whole subsets by the DP simple GA"

    def slack(self, n: int) -> int:
        return int(self.parents) + 1

    mechanism = "DP simple GA: exponential mechanism, bounded-range composition"

    def meaning(self, event: Exponential, n: int) -> str:
        n_s = math.ceil(n / self.section_count)
        odds = math.exp(min(event.epsilon * 0.01 * n_s / 4, 700))
        return (f"{event.count:,} selections per section, whatever its size: an output whose "
                f"weighted L1 distance is 0.01 lower is favoured ×{odds:.3g} at each")

    def _choose(self, problem: Problem, event: Exponential, rng: np.random.Generator,
                ctx: FitContext, done: list[int]) -> tuple[list[np.ndarray], np.ndarray]:
        generations = self.generation_count(problem.epsilon)
        sections = len(problem.reals)
        total = generations * sections
        ctx.stage(SELECT, total, f"{sections} section(s) × {generations} generations of the DP "
                                 f"simple GA, population {self.population}")
        chosen, distance = [], []
        for s, (real, pool, values) in enumerate(zip(problem.reals, problem.pools,
                                                     problem.pool_values, strict=True)):
            def report(g: int, _total: int, best: float, s: int = s) -> None:
                done[0] = max(done[0], g * int(self.parents))
                ctx.progress(SELECT, s * generations + g, total, distance=-best)

            rows, gap, _ = select_subset(
                real, pool, values, problem.cell_counts, problem.marginals, problem.weights,
                problem.epsilon, problem.delta, rng, sensitivity=event.sensitivity,
                progress=report, generations=generations,
                population=self.population, parents=self.parents, p_c=self.p_c, p_m=self.p_m)
            done[0] = event.count  # the section's last selection has run
            chosen.append(rows)
            distance.append(gap)
        return chosen, np.array(distance)


ENGINES: dict[str, type[Engine]] = {e.name: e for e in (Measure, Rows, GA)}
