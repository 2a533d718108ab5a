"""DP-Select's measure engine: measure the private table's marginals, then weight the pool.

The selection share buys Gaussian measurements of marginals. First every column's own
(1-way) marginal and, when the schema declares a target, every pair with it are measured
(:func:`upfront`), and rows whose columns are drawn independently from the 1-way measurements
join the pool (:func:`support_rows`): a GAN trained on a sliver of a small table's budget
misses much of the table's support, and no weighting of its rows can put mass where it drew
none. Then Private-GSD's other 2-way workloads (categorical pairs, and binary-tree range
marginals of every pair with a numeric column, :mod:`synth.marginals`) are measured
adaptively. Each of T rounds

1. picks the workload the weighted pool answers worst, by report-noisy-max over max errors;
2. measures it with the Gaussian mechanism (left unclipped: clipping at 0 biases every
   empty cell upward, and the fit would pile mass onto the few pool rows there);
3. refits the pool's weights to every measurement so far (:func:`.weights.fit_weights`,
   warm-started, stopped once they fit within the noise), which is post-processing: the
   pool is the DP-GAN's, already paid for.

The output's rows are then drawn from the pool by the weights. Privacy is Private-GSD's:
answers are fractions of the public n (n̂ under units of up to k rows), each selection is the
exponential mechanism at ε₀ = √(8ρ') and each measurement ρ'-zCDP with ρ' = ρ/(F + 2T) for F
workloads measured up front, ρ from the share's (ε, δ); T as :func:`measure_plan` allows. Every
call is charged to the ledger before it runs, so a stopped run's ledger holds exactly what
ran.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from synth.encoding import Space
from synth.errors import ParameterError
from synth.marginals import (
    Marginals,
    check_audible,
    draw_in_cell,
    interval_codes,
    measure,
    measurement_event,
    plan_rounds,
    select,
    selection_event,
    workload_size,
)
from synth.marginals import workloads as marginal_workloads
from synth.methods.dpselect.weights import fit_weights, incidence
from synth.privacy.budget import Ledger
from synth.privacy.events import Gaussian
from synth.privacy.unit import Population
from synth.schema import CATEGORICAL, Schema

LEVELS = 5  # binary-tree levels: 2 … 32 intervals per numeric column, as Private-GSD's default
# From Adult at ε = 2 (a DP-GAN pool of 4n rows, 2-way TVD 0.124 drawn uniformly): 20, 40
# and 60 rounds gave 0.059, 0.047 and 0.046 in 2-way TVD, in 14, 39 and 66 s on 2 cores;
# 10 steps per round and 200 after the last matched 60 and 600 within 0.002.
ROUNDS = 40
ROUND_STEPS = 10  # mirror-descent steps after each measurement (warm-started)
FINAL_STEPS = 200  # and after the last one
FLOOR = 1.0  # stop a fit at L ≤ FLOOR × measured cells (the discrepancy principle)
# rows drawn from the measured 1-way marginals, as a multiple of the GAN's pool (on the sample,
# 2 scored within the runs' spread of 1)
SUPPORT = 1.0


def workloads(space: Space) -> list[Marginals]:
    """The marginals that may be measured, from the public schema: every column's own (the
    first d workloads), then the pairs: categorical pairs, and pairs with a numeric column."""
    one_way = marginal_workloads(space, "1-way", LEVELS)
    if space.d == 1:
        return [one_way]
    categorical = len(space.categorical)
    classes = (["cat2"] if categorical >= 2 else []) + (["bt"] if len(space.numeric) else [])
    return [one_way, *(marginal_workloads(space, kind, LEVELS) for kind in classes)]


def upfront(schema: Schema, classes: list[Marginals]) -> list[int]:
    """The workloads measured before the rounds: every column's own, then every pair with the
    declared target column (public: the pairs a model of the target learns from)."""
    ids = list(range(len(schema)))
    if schema.target is None:
        return ids
    target = schema.names.index(schema.target)
    first = len(schema)
    for q in classes[1:]:
        cols = {s.offset: s.cols for s in q.slots}  # a workload's first slot has its columns
        ids += [first + w for w in range(len(q)) if target in cols[q.bounds[w]]]
        first += len(q)
    return ids


def candidate_count(categorical: list[bool], target: int | None) -> int:
    """How many workloads the rounds pick from (the pairs not measured :func:`upfront`), from
    the column kinds alone (a schema whose categories are still to be learned has them)."""
    d = len(categorical)
    if d == 1:
        return 0
    classes = (["cat2"] if sum(categorical) >= 2 else []) + (
        ["bt"] if not all(categorical) else [])
    pairs = sum(workload_size(categorical, kind, LEVELS)[0] for kind in classes)
    return pairs - (d - 1 if target is not None else 0)


@dataclass(frozen=True)
class Plan:
    """The workloads measured up front, T rounds after them, ρ per mechanism call, and each
    workload's Δ₂ as a fraction of n̂ (the d 1-way workloads first)."""

    fixed: list[int]
    rounds: int
    rho: float
    sensitivity: np.ndarray
    slots: np.ndarray  # each workload's slots (levels): its share of the fit's work

    @property
    def work(self) -> float:
        """Slots the fit weighs the pool against by the last round (the candidates' mean
        for the picked ones): what the engine's time grows with, times the pool's rows."""
        rest = np.delete(self.slots, self.fixed)
        return float(self.slots[self.fixed].sum() + self.rounds * (rest.mean() if len(rest)
                                                                   else 0.0))

    @property
    def widest(self) -> Gaussian:
        """The measurement of the workload with the most noise."""
        return measurement_event(float(self.sensitivity.max()), self.rho)

    def event(self, w: int) -> Gaussian:
        """The measurement of workload ``w``."""
        return measurement_event(float(self.sensitivity[w]), self.rho)


def measure_plan(population: Population, schema: Schema, epsilon: float, delta: float,
                 rounds: int | None, stage: str) -> Plan:
    """The engine's plan from public facts only, or a clear error (before anything is spent:
    DP-Select checks it before training its GAN)."""
    classes = workloads(Space(schema))
    sens = np.concatenate([q.sensitivity for q in classes])
    fixed = upfront(schema, classes)
    if len(fixed) == len(sens) and rounds is not None:  # every workload measured once
        raise ParameterError("rounds (T) pick among pairs of columns, and this table has "
                             "none left to pick: leave rounds empty")
    rest = np.delete(sens, fixed)

    def rounds_at(people: Population) -> tuple[int, float]:
        if not len(rest):
            return 0, plan_rounds(people, epsilon, delta, len(fixed), 0.0, None, 1,
                                  one_shot=True, stage=stage)[2]
        t, _, rho = plan_rounds(people, epsilon, delta, len(rest), float(rest.max()), rounds,
                                ROUNDS, stage=stage, fixed=len(fixed))
        return t, rho

    t, rho = rounds_at(population)
    # judged where n̂ is worst (U rows) with the rounds of the public k·U rows (the least ρ
    # a call): the same at plan and fit, so a plan that passes is not refused at n̂
    k = population.max_rows
    check_audible(measurement_event(float(sens.min()) * k / population.units,
                                    rounds_at(population.public())[1]).sigma, epsilon,
                  " or the selection's share")
    sens = sens * k / population.rows
    slots = np.concatenate([np.diff(np.searchsorted([s.offset for s in q.slots], q.bounds))
                            for q in classes])
    return Plan(fixed, t, rho, sens, slots)


@dataclass
class Measured:
    """The engine's result: the pool (the GAN's rows, then the support rows) and its
    weights, and what was measured, round by round."""

    pool: pd.DataFrame
    weights: np.ndarray
    picked: list[str] = field(default_factory=list)
    answers: list[np.ndarray] = field(default_factory=list)  # the noisy answers, as measured
    max_error: list[float] = field(default_factory=list)  # against the true answers
    distance: list[float] = field(default_factory=list)  # mean TVD over all workloads


class _Pool:
    """The pool's cells in every workload, slot by slot, and the private answers."""

    def __init__(self, classes: list[Marginals], pool: np.ndarray, private: np.ndarray,
                 n: int):
        self.classes = classes
        self.first = np.cumsum([0, *(len(q) for q in classes)])
        self.cells = [q.slot_cells(pool) for q in classes]
        # answers are fractions of the public n (n̂ with units; len(private) otherwise)
        self.true = [q.answers(private) * len(private) / n for q in classes]
        # which workload each slot belongs to, and how many slots each workload has
        self.owner = [np.searchsorted(q.bounds, [s.offset for s in q.slots], side="right") - 1
                      for q in classes]
        self.slots = [np.bincount(o, minlength=len(q)) for o, q in
                      zip(self.owner, classes, strict=True)]

    def extend(self, rows: np.ndarray) -> None:
        """Add encoded ``rows`` to the pool."""
        self.cells = [np.concatenate([c, q.slot_cells(rows)], axis=1)
                      for q, c in zip(self.classes, self.cells, strict=True)]

    def answers(self, weights: np.ndarray) -> list[np.ndarray]:
        """Every workload's answers on the pool weighted by ``weights``."""
        return [sum(np.bincount(c, weights=weights, minlength=q.size) for c in cells)
                for q, cells in zip(self.classes, self.cells, strict=True)]

    def errors(self, weights: np.ndarray) -> tuple[np.ndarray, float]:
        """Per workload max |true − weighted pool| (the selection's score, sensitivity k/n),
        and the mean over workloads of their total variation distance per slot."""
        worst, tvd = [], []
        for q, true, mine, slots in zip(self.classes, self.true, self.answers(weights),
                                        self.slots, strict=True):
            worst.append(q.worst_errors(true, mine))
            tvd.append(np.add.reduceat(np.abs(true - mine), q.bounds[:-1]) / (2 * slots))
        return np.concatenate(worst), float(np.concatenate(tvd).mean())

    def locate(self, w: int) -> tuple[int, int]:
        k = int(np.searchsorted(self.first, w, side="right") - 1)
        return k, int(w - self.first[k])


def support_rows(space: Space, one_way: Marginals, answers: np.ndarray, pool: np.ndarray,
                 m: int, rng: np.random.Generator) -> pd.DataFrame:
    """``m`` rows whose columns are drawn independently from the measured 1-way marginals
    (negative answers read as 0), in the pool's terms: post-processing of the measurements
    and the pool. A numeric column takes its finest interval by the measurement, then a value
    the GAN drew in that interval (so atoms such as no capital gain survive), or a uniform one
    where it drew none. ``rng`` steers post-processing only."""
    data = {}
    for j, col in enumerate(space.schema):
        slot = [s for s in one_way.slots if s.cols == (j,)][-1]  # the finest level
        bins = slot.bins[0]
        p = np.clip(answers[slot.offset:slot.offset + bins], 0, None)
        p = p / p.sum() if p.sum() > 0 else np.full(bins, 1.0 / bins)
        cell = rng.choice(bins, m, p=p)
        if col.kind == CATEGORICAL:
            data[col.name] = np.asarray(col.categories, dtype=object)[cell]
            continue
        apart, inner = slot.apart[0], slot.inner[0]
        drawn = np.sort(pool[:, j])
        cells = interval_codes(drawn, inner, apart)
        first = np.searchsorted(cells, cell, side="left")
        count = np.searchsorted(cells, cell, side="right") - first
        mine = drawn[np.minimum(first + np.floor(rng.random(m) * count).astype(np.int64),
                                len(drawn) - 1)]
        # a whole number inside the interval where it holds one, else a uniform value there
        steps = int(space.steps[j])
        fresh = draw_in_cell(cell, inner, apart, steps, rng.random(m))
        if steps:
            fresh = np.where(np.isnan(fresh), draw_in_cell(cell, inner, apart, 0, rng.random(m)),
                             fresh)
        value = col.lower + np.where(count > 0, mine, fresh) * (col.upper - col.lower)
        data[col.name] = np.round(value) if col.integer else value
    return pd.DataFrame(data)


def measure_and_weight(ledger: Ledger, stage: str, schema: Schema, private: pd.DataFrame,
                       pool: pd.DataFrame, population: Population, planned: Plan,
                       rng: np.random.Generator,
                       progress: Callable[[int, int, float, float], None] | None = None,
                       beat: Callable[[], None] = lambda: None,
                       wait: Callable[[Callable[[], Any]], Any] = lambda work: work()
                       ) -> Measured:
    """Run the engine (module docstring) and return the pool's weights. The mechanisms draw
    fresh OS noise; ``rng`` steers only the support rows' draw, which is post-processing.
    ``progress`` hears each round's end, ``beat`` every step between, and ``wait`` runs
    each long computation that charges nothing (a fit's :meth:`~synth.methods.FitContext.wait`
    keeps the caller informed meanwhile). ``planned`` is :func:`measure_plan`'s for the
    population and the ledger's share."""
    space = Space(schema)
    classes = workloads(space)
    d = space.d

    n, k = population.rows, population.max_rows
    t_max, rho = planned.rounds, planned.rho
    gan = wait(lambda: space.encode(pool))
    data = wait(lambda: _Pool(classes, gan, space.encode(private), n))
    result = Measured(pool, np.empty(0))
    targets, sigmas = [], []  # the measured workloads' noisy answers and σ

    def measure_one(w: int, why: str) -> None:
        c, local = data.locate(w)
        q = classes[c]
        event = planned.event(w)
        label = f"{q.kind}: {q.labels[local]}"
        ledger.charge(stage, event, f"{why}: measure {label}")
        lo, hi = q.bounds[local:local + 2]
        # unclipped: clipping at 0 would bias every empty cell upward, and the fit would
        # chase that mass onto a few pool rows
        targets.append(measure(data.true[c][lo:hi], event))
        beat()
        sigmas.append(np.full(hi - lo, event.sigma))
        result.picked.append(label)
        result.answers.append(targets[-1])

    for j in range(d):
        measure_one(j, "every column")
    one_way = np.concatenate(targets)
    for w in planned.fixed[d:]:
        measure_one(w, "every pair with the target")
    extra = wait(lambda: support_rows(space, classes[0], one_way, gan,
                                      math.ceil(SUPPORT * len(pool)), rng))
    wait(lambda: data.extend(space.encode(extra)))
    result.pool = pd.concat([pool, extra[list(pool.columns)]], ignore_index=True)
    m = len(result.pool)
    weights = np.full(m, 1.0 / m)
    # the measured slots' cells of every pool row, offset workload by workload, filled in
    # as they are measured (rebuilding them every round took a fifth of the engine's time)
    capacity = planned.slots[planned.fixed].sum() + t_max * planned.slots.max()
    cells = np.empty((m, int(capacity)), dtype=np.int32)
    used = width = 0

    def add(w: int) -> None:
        nonlocal used, width
        c, local = data.locate(w)
        lo, hi = classes[c].bounds[local:local + 2]
        for s in np.flatnonzero(data.owner[c] == local):
            cells[:, used] = data.cells[c][s] - lo + width
            used += 1
        beat()
        width += hi - lo

    for w in planned.fixed:
        add(w)
    picked, step = list(planned.fixed), 1.0
    for t in range(t_max + 1):
        fit = fit_weights(incidence(cells[:, :used], width), np.concatenate(targets),
                          np.concatenate(sigmas), prior=weights,
                          iterations=FINAL_STEPS if t == t_max else ROUND_STEPS, step=step,
                          floor=FLOOR * width, beat=beat)
        weights, step = fit.weights, fit.step
        scores, distance = wait(partial(data.errors, weights))
        result.max_error.append(float(scores.max()))
        result.distance.append(distance)
        if progress is not None:
            progress(t, t_max, result.max_error[-1], distance)
        if t == t_max:
            break
        scores[picked] = -np.inf
        beat()  # a cancel asked as the round ended stops before the next pick is charged
        pick = selection_event(n, rho, 1, k)
        ledger.charge(stage, pick, f"round {t + 1}: the worst-answered marginal, by max error")
        w = int(select(scores, pick)[0])
        measure_one(w, f"round {t + 1}")
        add(w)
        picked.append(w)
    result.weights = weights
    return result
