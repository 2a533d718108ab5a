"""DP-Select: a DP-GAN pool, then private selection of the output rows from it.

A share of the budget trains a :class:`~synth.methods.dpgan.DPGAN`; its generator draws a pool
of ``pool_multiplier`` × n rows (post-processing, free). The output's n rows are then chosen
from the pool so that their marginals approach the private table's. The thesis chooses them
by the exponential mechanism (the ``rows`` engine, :mod:`.rows`); corrections to it, after
its notes:

* the marginals and their weights come from mutual information **on the pool** (free), not on
  the private table, whose use was unaccounted (G1);
* per-step ε inverts the bounded-range composition with ln(1/δ) inside the square root (G2);
* with S sections the private table and the pool are split into S disjoint parts and each
  section is a separate selection under parallel composition, with the sensitivity of its own
  size, 2/n_s (G6); T candidates are distinct rows not chosen before (G5).

Three engines choose the rows: ``measure`` (the default) spends the selection share on
Gaussian measurements of the private table's marginals, chosen adaptively, and then weights
the pool to fit them, which is post-processing (:mod:`synth.methods.dpselect.measure`); ``rows``
picks the rows one at a time (the thesis); ``ga`` chooses a section's whole output at once with
the DP simple GA (:mod:`synth.methods.dpselect.ga`), N_g·N_s + 1 strong selections instead of
n_s weak ones.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from synth.encoding import Discretizer, finalize
from synth.errors import BudgetError, Cancelled, ParameterError, check_int
from synth.marginals import check_fits, measurement_event, selection_event
from synth.methods.base import FitContext, NoiseScale, check_rows, resample
from synth.methods.dpgan.codes import PrivateCodes
from synth.methods.dpgan.method import DPGAN, GAN
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
from synth.plan import Charge
from synth.privacy.budget import Budget
from synth.privacy.composition import per_step_epsilon
from synth.privacy.dpsga import GA_PARAMS, check_settings, default_generations
from synth.privacy.events import Exponential, describe, normalised_marginals_l1
from synth.privacy.unit import Population, PrivacyUnit
from synth.schema import CATEGORICAL, Schema
from synth.validation import Param, specs

SELECT = "select"
SELECTION_BINS = 10  # equal-width bins over public bounds for numeric columns (note G4)
ENGINES = ("measure", "rows", "ga")
# The measure engine's least default pool. On the 4,166-row bundled sample at ε = 1 (six runs
# each), a pool of 2n gave tree accuracy 0.743 and 2-way TVD 0.081 (medians), 4n 0.781 and
# 0.075, in 11-16 s against 15-22 s.
MIN_POOL = 20_000
# The measure engine's cost in the plan, on 2 cores (benchmarks/estimates.py): drawing the pool
# and weighing it against the measured workloads grows faster than its size W (held rows ×
# slots weighed, in millions: more rows also take more fitting steps). Adult (W = 24.7) took
# 40 s, the census sample (7.6) 5 s, the panel sample (4.0) 1.2 s: c·W^1.9 fits all three.
MEASURE_SECONDS, MEASURE_POWER = 0.09, 1.9


def candidates_per_pick(candidates: int | None, pool_multiplier: float | None) -> float:
    """T, the candidates of each pick: as given, else the pool multiplier, else 20."""
    if candidates is not None:
        return candidates
    return 20 if pool_multiplier is None else pool_multiplier


def section_count(engine: str, sections: int | None) -> int:
    """S, the sections the selection splits into: one for the measure engine (it measures
    the whole table), else as given, else 5 for rows and 1 for ga."""
    if engine == "measure":
        return 1
    return (5 if engine == "rows" else 1) if sections is None else sections


class DPSelect(DPGAN):
    """DP-GAN pool + private selection of rows: by measured marginals, or picks.

    Parameters
    ----------
    gan_share : fraction of the method's budget spent on the DP-GAN (the rest on selection).
    pool_multiplier : pool size as a multiple of the private table's row count (default 20,
        and for ``measure`` 2, or 20,000 rows if more: it weighs every pool row in every
        round, and adds as many rows drawn from its measured 1-way marginals).
    candidates : T, candidates per step of the ``rows`` engine (default: ``pool_multiplier``,
        note G3).
    sections : S, disjoint sections of the table and the pool (parallel composition); default
        5 for ``rows`` and 1 for ``ga``, whose cost does not grow with a section's size.
    distance : "l1" (default), "l2" or "kolmogorov" (the ``ga`` engine: "l1" only).
    marginal_fraction : share of all column pairs used, the top ones by mutual information.
    engine : "measure" (Gaussian measurements of marginals, then weights over the pool),
        "rows" (one exponential-mechanism pick per output row) or "ga" (the DP simple GA
        chooses a section's whole output).
    rounds : T, the ``measure`` engine's rounds of select and measure (default 40, fewer on
        a small table, as Private-GSD's plan allows).
    generations, population, parents, p_c, p_m : the ``ga`` engine's N_g (default: the
        paper's table at the selection ε), N_p, N_s, crossover and per-gene mutation
        probabilities (p_m default 1/(n_s + 1)).
    The remaining parameters configure the DP-GAN (see :class:`DPGAN`).
    """

    name = "dpselect"
    streams = False  # selection weighs the pool against the private rows in memory
    title = "DP-Select"
    summary = ("Trains a DP-GAN on a small share of the budget, draws a large pool from it, then "
               "chooses output rows from the pool to match privately measured marginals.")
    paper = "Ebrahimianghazani 2023 (MMath thesis, Waterloo)"
    share_param = "gan_share"
    quick: ClassVar[Mapping[str, Any]] = {"epochs": 0.2, "rounds": 2}
    params: ClassVar[Mapping[str, Param]] = specs(
        Param("engine", str, choices=ENGINES, advanced=False, label="Selection engine",
              help="measure: Gaussian measurements of every column's marginal, every pair "
                   "with the target and the worst-matched other pairs, then the pool's rows "
                   "(and rows drawn from the 1-way measurements) weighted to fit them (free "
                   "post-processing); "
                   "rows: one exponential-mechanism pick per output row (the thesis); ga: "
                   "the DP simple GA chooses a section's whole output at once."),
        Param("gan_share", float, low=0, high=1, low_open=True, high_open=True,
              label="GAN share", help="Fraction of the method's budget spent on training "
                                      "the DP-GAN; the rest pays for the selection."),
        Param("pool_multiplier", float, low=1, optional=True, advanced=False,
              label="Pool size (× rows)",
              help="The generator draws this many times the table's rows; the output is "
                   "chosen from them. Empty takes 20 for rows and ga, and for measure 2 or "
                   "20,000 rows if more (it adds as many rows drawn from its measured 1-way "
                   "marginals). A "
                   "smaller pool makes a quicker trial."),
        Param("rounds", int, low=1, optional=True, symbol="T", label="Rounds (measure)",
              help="The measure engine's rounds, each picking and measuring one marginal; "
                   f"empty takes {ROUNDS}, fewer on a small or narrow table."),
        Param("candidates", int, low=1, optional=True, symbol="T", label="Candidates per pick",
              help="Pool rows offered to each pick of the rows engine; empty takes the pool "
                   "multiplier."),
        Param("sections", int, low=1, optional=True, symbol="S", label="Sections",
              help="Disjoint parts of the table and the pool, selected separately (parallel "
                   "composition); empty takes 5 for rows and 1 for ga."),
        Param("distance", str, choices=DISTANCES, label="Distance",
              help="How far the chosen rows' marginals are from the table's; the ga engine "
                   "uses l1 only."),
        Param("marginal_fraction", float, low=0, high=1, low_open=True,
              label="Share of column pairs",
              help="The 2-way marginals matched: this share of all column pairs, the most "
                   "dependent ones in the pool."),
        *GA_PARAMS.values(),
        *DPGAN.params.values())

    def __init__(self, gan_share: float = 0.2, pool_multiplier: float | None = None,
                 rounds: int | None = None, candidates: int | None = None,
                 sections: int | None = None,
                 distance: str = "l1", marginal_fraction: float = 0.1, engine: str = "measure",
                 generations: int | None = None, population: int = 200, parents: int = 10,
                 p_c: float = 0.5, p_m: float | None = None, epochs: float = 10.0,
                 batch_size: int = 128,
                 components: int = 64, critic_hidden: int = 32, generator_batch: int = 2048,
                 lr_critic: float = 3e-3, lr_generator: float = 1e-2, max_grad_norm: float = 0.1,
                 bins: int = 16, exact_integers: int = 128):
        super().__init__(epochs=epochs, batch_size=batch_size, components=components,
                         critic_hidden=critic_hidden, generator_batch=generator_batch,
                         lr_critic=lr_critic, lr_generator=lr_generator,
                         max_grad_norm=max_grad_norm, bins=bins, exact_integers=exact_integers)
        self.gan_share = gan_share
        self.pool_multiplier = pool_multiplier
        self.rounds = rounds
        self.candidates = candidates
        self.sections = sections
        self.distance = distance
        self.marginal_fraction = marginal_fraction
        self.engine = engine
        self.generations = generations
        self.population = population
        self.parents = parents
        self.p_c = p_c
        self.p_m = p_m

    @property
    def stages(self) -> dict[str, float]:  # type: ignore[override]
        share = self.params["gan_share"].check(self.gan_share)
        return {GAN: share, SELECT: 1 - share}

    @property
    def accountants(self) -> dict[str, str]:  # type: ignore[override]
        """The selection's accountant: zCDP for Gaussian measurements and their picks,
        bounded range for the exponential-mechanism engines."""
        return {GAN: "pld", SELECT: "zcdp" if self.engine == "measure" else "bounded_range"}

    def check_unit(self, unit: PrivacyUnit) -> None:
        if unit.max_rows > 1 and self.engine != "measure":
            raise ParameterError(
                f"DP-Select's selection is calibrated for one row per unit (its sections' "
                f"sizes are public only then); it cannot protect units of up to "
                f"{unit.max_rows} rows. Keep one row per unit, choose the measure engine, or "
                "choose DP-GAN, Private-GSD or independent marginals")

    def _check_rules(self, values: dict, population: Population | None,
                     schema: Schema | None) -> None:
        super()._check_rules(values, population, schema)
        # the pool's memory bound from public facts: n, or k·U for units (n̂ comes later)
        n = None if population is None else population.units * population.max_rows
        check_settings(*(values[k] for k in GA_PARAMS))  # and parents ≤ population
        if values["engine"] == "measure":
            if values["sections"] is not None:
                raise ParameterError("sections (S) split the rows and ga engines' selections; "
                                     "the measure engine measures the whole table")
            if values["rounds"] is not None and schema is not None:
                check_fits(values["rounds"], 1,
                           candidate_count([c.kind == CATEGORICAL for c in schema],
                                           schema.target))
        else:  # the default T is the pool multiplier
            check_int(self._candidates, "candidates (T)")
        if n is not None and self._sections > n:
            raise ParameterError(f"sections (S={self._sections}) cannot exceed the table's "
                                 f"{n} rows")
        if n is not None and schema is not None:  # the pool is held in memory
            check_rows(self._held_rows(n), len(schema), "pool_multiplier × rows" + (
                " with as many support rows" if values["engine"] == "measure" else ""))
        if values["engine"] == "ga" and values["distance"] != "l1":
            raise ParameterError(f"the ga engine scores outputs by the l1 distance only, got "
                                 f"distance={values['distance']!r}")

    def _memory(self, values: dict, population: Population | None, schema: Schema | None
                ) -> dict[str, int]:
        """DP-GAN's networks, plus the selection's working arrays: the rows engine scores T
        candidates in each of S sections per pick (a few float64 per candidate and column),
        the ga engine holds N_p chromosomes of the output's rows (int32, with offspring)."""
        parts = super()._memory(values, population, schema)
        columns = 1 if schema is None else max(len(schema), 1)
        rows = 1 if population is None else population.units * population.max_rows
        if values["engine"] == "rows":
            parts["candidates and sections"] = (
                32 * section_count("rows", values["sections"]) * (columns + 1)
                * math.ceil(candidates_per_pick(values["candidates"], values["pool_multiplier"])))
        elif values["engine"] == "ga":
            parts["population"] = 12 * values["population"] * rows
        return parts

    def _held_rows(self, n: int) -> int:
        """The pool's rows in memory: the measure engine's support rows join the GAN's."""
        return self._pool_rows(n) + (math.ceil(SUPPORT * self._pool_rows(n))
                                     if self.engine == "measure" else 0)

    def _pool_rows(self, n: int) -> int:
        if self.pool_multiplier is not None:
            return max(n, math.ceil(self.pool_multiplier * n))
        if self.engine == "measure":  # a small table's fit is quick, and gains from more rows
            return max(2 * n, MIN_POOL)
        return 20 * n

    @property
    def _candidates(self):
        return candidates_per_pick(self.candidates, self.pool_multiplier)

    @property
    def _sections(self):
        return section_count(self.engine, self.sections)

    def selections(self, n: int, epsilon: float) -> int:
        """How many selections of a section share the selection budget ``epsilon``: one per
        output row for ``rows``, N_g·N_s + 1 for ``ga``, whatever the section's size, and
        T for ``measure`` (each followed by a Gaussian measurement)."""
        if self.engine == "measure":
            return ROUNDS if self.rounds is None else int(self.rounds)
        if self.engine == "ga":
            return self._generations(epsilon) * int(self.parents) + 1
        return math.ceil(n / self._sections)

    def select_event(self, n: int, epsilon: float, delta: float) -> Exponential:
        """The selections of a section (the largest has n_s = ⌈n/S⌉ rows; the smallest the
        largest sensitivity 2/⌊n/S⌋): each the ε_s-exponential mechanism, ε_s the largest whose
        bounded-range composition stays within (ε, δ). Sections are disjoint parts of the
        table, so they compose in parallel: the whole selection costs one section's."""
        count = self.selections(n, epsilon)
        eps_s = per_step_epsilon(epsilon, count, delta, "bounded_range")
        return Exponential(eps_s, normalised_marginals_l1(n // self._sections), count)

    def _charges(self, population: Population, schema: Schema, budget: Budget
                 ) -> list[Charge]:
        """The GAN's DP-SGD, then the selection: the rows and ga engines' one event of all
        their picks; the measure engine's fixed measurements, then a pick and a measurement
        per round (any picked marginal costs ρ, so the widest one's event bounds it). Its
        events wait for the learned domains, if any."""
        gan = super()._charges(population, schema, budget)
        if self.engine != "measure":
            return [*gan, Charge(SELECT, self.select_event(population.rows,
                                                           *budget.allowance(SELECT)))]
        if not schema.releasable:
            return [*gan, Charge(SELECT, None, exact=False)]
        planned = measure_plan(population, schema, *budget.allowance(SELECT), self.rounds,
                               SELECT)
        exact = population.max_rows == 1  # otherwise the events follow n̂
        fixed = [Charge(SELECT, measurement_event(float(planned.sensitivity[w]), planned.rho),
                        exact) for w in planned.fixed]
        pick = Charge(SELECT, selection_event(population.rows, planned.rho, 1,
                                              population.max_rows), exact)
        return [*gan, *fixed, *[pick, Charge(SELECT, planned.widest, exact=False)]
                * planned.rounds]

    def _preview(self, population: Population, schema: Schema, budget: Budget
                 ) -> list[NoiseScale]:
        if self.engine == "measure":
            return [*super()._preview(population, schema, budget),
                    *self._measure_preview(population, schema, budget)]
        n = population.rows
        event = self.select_event(n, *budget.allowance(SELECT))
        eps_s, n_s = event.epsilon, math.ceil(n / self._sections)
        if self.engine == "ga":
            odds = math.exp(min(eps_s * 0.01 * n_s / 4, 700))
            return [*super()._preview(population, schema, budget), NoiseScale(
                SELECT, "DP simple GA: exponential mechanism, bounded-range composition",
                describe(event),
                f"{event.count:,} selections per section, whatever its size: an output whose "
                f"weighted L1 distance is 0.01 lower is favoured ×{odds:.3g} at each", event)]

        def favour(t: int) -> str:  # best/worst odds of the EM between candidates at pick t
            return f"×{math.exp(min(eps_s * n_s / (2 * t), 700)):.3g}"

        return [*super()._preview(population, schema, budget), NoiseScale(
            SELECT, "exponential mechanism, bounded-range composition", describe(event),
            f"{n_s:,} picks per section: a candidate that is a whole row better can be favoured "
            f"at most {favour(1)} at the first pick, {favour(100)} at pick 100 and "
            f"{favour(n_s)} at the last, so late picks are close to uniform draws from the pool",
            event)]

    def _measure_preview(self, population: Population, schema: Schema, budget: Budget
                         ) -> list[NoiseScale]:
        n, k = population.rows, population.max_rows
        try:
            planned = measure_plan(population, schema, *budget.allowance(SELECT), self.rounds,
                                   SELECT)
        except (ParameterError, BudgetError) as exc:
            return [NoiseScale(SELECT, "Gumbel selection + Gaussian", "impossible", str(exc))]
        rounds, rho, widest = planned.rounds, planned.rho, planned.widest
        pick = selection_event(n, rho, 1, k)
        sigma, gumbel = widest.sigma, 2 * pick.sensitivity / pick.epsilon
        first = "every column's" + ("" if schema.target is None else
                                    f", every pair with {schema.target}")
        return [
            NoiseScale(SELECT, "report-noisy-max (Gumbel), zCDP", describe(pick),
                       f"each of {rounds} rounds picks the marginal the weighted pool matches "
                       f"worst, with Gumbel noise of scale {gumbel:.2g} in max error", pick),
            NoiseScale(SELECT, "Gaussian, zCDP", f"ρ per call = {rho:.3g}; {describe(widest)}",
                       f"{len(planned.fixed)} marginals measured first ({first}) and {rounds} "
                       f"picked ones: every cell is a fraction of rows measured within "
                       f"±{sigma:.2g} (1 σ), i.e. "
                       f"±{sigma * n:.3g} of the {n:,} rows; the pool's weights are then fitted "
                       "to them, which costs nothing", widest)]

    def _duration(self, population: Population, schema: Schema, budget: Budget
                  ) -> float | None:
        """The GAN's, then the measure engine's: its pool (with the support rows) weighed
        against every workload it measures. No cost model for the rows and ga engines."""
        if self.engine != "measure":
            return None
        try:
            planned = measure_plan(population, schema, *budget.allowance(SELECT), self.rounds,
                                   SELECT)
        except (ParameterError, BudgetError):
            return None
        return super()._duration(population, schema, budget) + MEASURE_SECONDS * (
            self._held_rows(population.rows) * planned.work / 1e6) ** MEASURE_POWER

    def _generations(self, epsilon: float) -> int:
        return default_generations(epsilon) if self.generations is None else int(
            self.generations)

    def _fit(self, data: pd.DataFrame, schema: Schema, ctx: FitContext) -> None:
        n = self.population_.rows  # len(data) for one row per unit, n̂ for the measure engine
        if self.engine == "measure":  # refuse an impossible plan before the GAN spends
            measure_plan(self.population_, schema, *self.ledger_.budget.allowance(SELECT),
                         self.rounds, SELECT)
        self.discretizer_ = Discretizer(schema, bins=self.bins, exact_integers=self.exact_integers)
        self.prior_, self.table_ = self._train_gan(
            PrivateCodes.of_array(self.discretizer_.codes(data)), ctx)

        m = self._pool_rows(n)
        ctx.stage("pool", 1, f"drawing a pool of {m:,} rows from the generator")
        pool = self.discretizer_.decode(self.sample_codes(m, self.rng_), self.rng_)
        ctx.progress("pool", 1, 1)
        if self.engine == "measure":
            self._measure(data, schema, pool, ctx)
            return
        coarse = Discretizer(schema, bins=SELECTION_BINS)
        pool_codes, real_codes = coarse.codes(pool), coarse.codes(data)
        marginals, weights = top_pairs(pool_codes, coarse.sizes, self.marginal_fraction)
        self.marginals_ = [tuple(schema.names[c] for c in cols) for cols in marginals]
        self.weights_ = weights

        parts = np.array_split(self.rng_.permutation(n), self._sections)
        pool_parts = np.array_split(self.rng_.permutation(m), self._sections)
        real_cells = cells(real_codes, coarse.sizes, marginals)
        pool_cells = cells(pool_codes, coarse.sizes, marginals)
        problem = _Problem([real_cells[p] for p in parts], [pool_cells[p] for p in pool_parts],
                           [pool_codes[p] for p in pool_parts],
                           np.array([np.prod(coarse.sizes[list(c)]) for c in marginals]),
                           marginals, weights, *self.ledger_.budget.allowance(SELECT))
        event = self.select_event(n, problem.epsilon, problem.delta)
        how = ("as whole subsets by the DP simple GA" if self.engine == "ga" else
               f"one exponential-mechanism pick per row ({self.distance} distance)")
        done = [0]  # selections made in the section furthest along: the ledger if it stops
        choose = self._choose_subsets if self.engine == "ga" else self._choose_rows
        # a stop other than a cancel can come between two progress reports, after the
        # selections made since the last one: settle those too
        slack = int(self.parents) + 1 if self.engine == "ga" else max(1, math.ceil(
            n / self._sections) // 100)
        entry = None
        try:
            entry = self.ledger_.charge(SELECT, event, (
                f"{n:,} rows chosen from a pool of {m:,} in {self._sections} disjoint "
                f"section(s) (parallel composition), {how}, over {len(marginals)} marginals: "
                + ", ".join("×".join(c) for c in self.marginals_)))
            chosen, self.selection_distance_ = choose(problem, event, ctx, done)
        except BaseException as exc:  # Ctrl-C included
            ran = done[0] if isinstance(exc, Cancelled) else done[0] + slack  # cancel: exact
            if entry is not None and ran < event.count:
                self.ledger_.settle(entry, replace(event, count=ran))
            raise
        picked = np.concatenate([p[c] for p, c in zip(pool_parts, chosen, strict=True)])
        self.synthetic_ = finalize(pool.iloc[picked].reset_index(drop=True), schema)

    def _measure(self, data: pd.DataFrame, schema: Schema, pool: pd.DataFrame,
                 ctx: FitContext) -> None:
        """The measure engine: measured marginals, pool weights fitted to them, n rows drawn
        by the weights (:mod:`.measure`)."""
        def progress(t: int, rounds: int, worst: float, distance: float) -> None:
            if t == 0:  # the first measurements made, and rows drawn from them
                pairs = "" if schema.target is None else f" and every pair with {schema.target}"
                ctx.stage(SELECT, max(rounds, 1), (
                    f"every column's marginal{pairs} measured; the pool of {len(pool):,} rows "
                    f"joined by as many drawn from them; {rounds} rounds: pick the "
                    "worst-matched pair, measure it, reweight the pool"))
            ctx.progress(SELECT, t if rounds else 1, max(rounds, 1), max_error=worst,
                         distance=distance)

        result = measure_and_weight(self.ledger_, SELECT, schema, data, pool, self.population_,
                                    self.rounds, self.rng_, progress)
        self.measured_ = result.picked
        self.pool_weights_ = result.weights
        self.selection_distance_ = np.array(result.distance[-1:])
        rows = draw(result.weights, self.population_.rows, self.rng_)
        self.synthetic_ = finalize(result.pool.iloc[rows].reset_index(drop=True), schema)

    def _choose_rows(self, problem: _Problem, event: Exponential, ctx: FitContext,
                     done: list[int]):
        """The thesis's engine: one exponential-mechanism pick per output row."""
        steps = max(len(r) for r in problem.reals)
        ctx.stage(SELECT, steps, f"{len(problem.reals)} sections × {steps:,} "
                                 f"exponential-mechanism picks, ε per pick {event.epsilon:.3g}")

        def progress(t: int, total: int, d: np.ndarray) -> None:
            done[0] = t
            ctx.progress(SELECT, t, total, distance=float(np.mean(d)),
                         **{f"distance_{s + 1}": float(x) for s, x in enumerate(d)})

        trace = select(problem.reals, problem.pools, problem.cell_counts, problem.weights,
                       event.epsilon, int(self._candidates), self.distance, self.rng_,
                       sensitivity=event.sensitivity, progress=progress,
                       every=max(1, steps // 100))
        return trace.chosen, trace.distance

    def _choose_subsets(self, problem: _Problem, event: Exponential, ctx: FitContext,
                        done: list[int]):
        """The GA engine: the DP simple GA chooses each section's whole output."""
        generations = self._generations(problem.epsilon)
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
                problem.epsilon, problem.delta, self.rng_, sensitivity=event.sensitivity,
                progress=report, generations=generations,
                population=self.population, parents=self.parents, p_c=self.p_c, p_m=self.p_m)
            done[0] = event.count  # the section's last selection has run
            chosen.append(rows)
            distance.append(gap)
        return chosen, np.array(distance)

    def _sample(self, n: int, rng: np.random.Generator) -> pd.DataFrame:
        """Rows of the selected table (post-processing)."""
        order = resample(len(self.synthetic_), n, rng)
        return self.synthetic_.iloc[order].reset_index(drop=True)


@dataclass(frozen=True)
class _Problem:
    """One selection: per section the private cells, the pool's cells and codes; the budget."""

    reals: list[np.ndarray]
    pools: list[np.ndarray]
    pool_values: list[np.ndarray]
    cell_counts: np.ndarray
    marginals: list[tuple[int, ...]]
    weights: np.ndarray
    epsilon: float
    delta: float
