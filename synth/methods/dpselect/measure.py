"""DP-Select's measure engine: measure the private table's marginals, then weight the pool.

The selection share buys Gaussian measurements of marginals: every column's own and
Private-GSD's 2-way workloads (categorical pairs, and binary-tree range marginals of every
pair with a numeric column, :mod:`synth.methods.gsd.queries`). Each of T rounds

1. picks the workload the weighted pool answers worst, by report-noisy-max over max errors;
2. measures it with the Gaussian mechanism (left unclipped: clipping at 0 biases every
   empty cell upward, and the fit would pile mass onto the few pool rows there);
3. refits the pool's weights to every measurement so far (:func:`.weights.fit_weights`,
   warm-started, stopped once they fit within the noise), which is post-processing: the
   pool is the DP-GAN's, already paid for.

The output's rows are then drawn from the pool by the weights. Privacy is Private-GSD's:
answers are fractions of the public n (n̂ under units of up to k rows), each selection is the
exponential mechanism at ε₀ = √(8ρ') and each measurement ρ'-zCDP with ρ' = ρ/(2T), ρ from the
share's (ε, δ) (:func:`synth.methods.gsd.method.plan`). Every call is charged to the ledger
before it runs, so a stopped run's ledger holds exactly what ran.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from synth.errors import BudgetError
from synth.methods.dpselect.weights import fit_weights, incidence
from synth.methods.gsd.method import (
    measurement_event,
    plan,
    select_workloads,
    selection_event,
)
from synth.methods.gsd.queries import CHUNK, Marginals, Space, build, plan_size
from synth.privacy.budget import Ledger
from synth.privacy.events import Gaussian
from synth.privacy.mechanisms import gaussian
from synth.privacy.unit import Population
from synth.schema import Schema

LEVELS = 5  # binary-tree levels: 2 … 32 intervals per numeric column, as Private-GSD's default
# From Adult at ε = 2 (a DP-GAN pool of 4n rows, 2-way TVD 0.124 drawn uniformly): 20, 40
# and 60 rounds gave 0.059, 0.047 and 0.046 in 2-way TVD, in 14, 39 and 66 s on 2 cores;
# 10 steps per round and 200 after the last matched 60 and 600 within 0.002.
ROUNDS = 40
ROUND_STEPS = 10  # mirror-descent steps after each measurement (warm-started)
FINAL_STEPS = 200  # and after the last one
FLOOR = 1.0  # stop a fit at L ≤ FLOOR × measured cells (the discrepancy principle)


def workloads(space: Space) -> list[Marginals]:
    """The marginals that may be measured, from the public schema: every column's own (a
    pool far from the table is often off in these first), categorical pairs, and pairs with
    a numeric column."""
    one_way = Marginals(space, [(j,) for j in range(space.d)], levels=LEVELS, kind="1-way")
    if space.d == 1:
        return [one_way]
    categorical = len(space.categorical)
    classes = (["cat2"] if categorical >= 2 else []) + (["bt"] if len(space.numeric) else [])
    return [one_way, *build(space, classes, np.random.default_rng(0), levels=LEVELS)]


def workload_count(categorical: list[bool]) -> int:
    """How many workloads :func:`workloads` makes, from the column kinds alone (a schema
    whose categories are still to be learned has them)."""
    if len(categorical) == 1:
        return 1
    classes = (["cat2"] if sum(categorical) >= 2 else []) + (
        ["bt"] if not all(categorical) else [])
    return len(categorical) + plan_size(categorical, classes, LEVELS)[0]


@dataclass(frozen=True)
class Plan:
    """T rounds, ρ per mechanism call, and each workload's Δ₂ as a fraction of n̂."""

    rounds: int
    rho: float
    sensitivity: np.ndarray

    @property
    def widest(self) -> Gaussian:
        """The measurement of the workload with the most noise."""
        return measurement_event(float(self.sensitivity.max()), self.rho)


def measure_plan(population: Population, schema: Schema, epsilon: float, delta: float,
                 rounds: int | None, stage: str) -> Plan:
    """The engine's plan from public facts only, or a clear error (before anything is spent:
    DP-Select checks it before training its GAN)."""
    sens = np.concatenate([q.sensitivity for q in workloads(Space(schema))])
    t, _, rho = plan(population, epsilon, delta, len(sens), float(sens.max()), rounds,
                     stage=stage, default=ROUNDS)
    sens = sens * population.max_rows / population.rows
    if (sens / np.sqrt(2 * rho)).min() >= 1:
        raise BudgetError(f"ε = {epsilon:.3g} is too small to measure anything: the Gaussian "
                          "noise exceeds the whole range [0, 1] of an answer. Raise ε or the "
                          "selection's share")
    return Plan(t, rho, sens)


@dataclass
class Measured:
    """The engine's result: the pool's weights and what was measured, round by round."""

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
        self.cells = [_cells(q, pool) for q in classes]
        # answers are fractions of the public n (n̂ with units; len(private) otherwise)
        self.true = [q.answers(private) * len(private) / n for q in classes]
        # which workload each slot belongs to, and how many slots each workload has
        self.owner = [np.searchsorted(q.bounds, [s.offset for s in q.slots], side="right") - 1
                      for q in classes]
        self.slots = [np.bincount(o, minlength=len(q)) for o, q in
                      zip(self.owner, classes, strict=True)]

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
            gap = np.abs(true - mine)
            worst.append(np.maximum.reduceat(gap, q.bounds[:-1]))
            tvd.append(np.add.reduceat(gap, q.bounds[:-1]) / (2 * slots))
        return np.concatenate(worst), float(np.concatenate(tvd).mean())

    def locate(self, w: int) -> tuple[int, int]:
        k = int(np.searchsorted(self.first, w, side="right") - 1)
        return k, int(w - self.first[k])


def _cells(q: Marginals, pool: np.ndarray) -> np.ndarray:
    """(slots, m) cell of each pool row in each slot of ``q``, block by block: all at once,
    the intermediate (m, slots, columns) arrays of a 90k-row pool take over 1 GB."""
    out = np.empty((len(q.slots), len(pool)), dtype=np.int32)
    for start in range(0, len(pool), CHUNK):
        out[:, start:start + CHUNK] = q.cells(pool[start:start + CHUNK]).T
    return out


def measure_and_weight(ledger: Ledger, stage: str, schema: Schema, private: pd.DataFrame,
                       pool: pd.DataFrame, population: Population, rounds: int | None,
                       progress: Callable[[int, int, float, float], None] | None = None
                       ) -> Measured:
    """Run the engine (module docstring) and return the pool's weights. The mechanisms draw
    fresh OS noise; nothing else is random."""
    space = Space(schema)
    classes = workloads(space)

    n, k = population.rows, population.max_rows
    planned = measure_plan(population, schema, *ledger.budget.allowance(stage), rounds, stage)
    t_max, rho, sens = planned.rounds, planned.rho, planned.sensitivity
    data = _Pool(classes, space.encode(pool), space.encode(private), n)
    m = len(pool)
    weights = np.full(m, 1.0 / m)
    result = Measured(weights)
    picked: list[int] = []
    columns, targets, sigmas = [], [], []  # the measured slots' cells, answers and σ
    offset, step = 0, 1.0
    for t in range(1, t_max + 1):
        scores, distance = data.errors(weights)
        result.max_error.append(float(scores.max()))
        result.distance.append(distance)
        if progress is not None:
            progress(t - 1, t_max, result.max_error[-1], distance)
        scores[picked] = -np.inf
        pick = selection_event(n, rho, 1, k)
        ledger.charge(stage, pick, f"round {t}: the worst-answered marginal, by max error")
        w = int(select_workloads(scores, pick)[0])
        c, local = data.locate(w)
        q = classes[c]
        event = measurement_event(float(sens[w]), rho)
        label = f"{q.kind}: {q.labels[local]}"
        ledger.charge(stage, event, f"round {t}: measure {label}")
        lo, hi = q.bounds[local:local + 2]
        # unclipped: clipping at 0 would bias every empty cell upward, and the fit would
        # chase that mass onto a few pool rows
        targets.append(gaussian(data.true[c][lo:hi], event.sigma))
        sigmas.append(np.full(hi - lo, event.sigma))
        for s in np.flatnonzero(data.owner[c] == local):
            columns.append(data.cells[c][s] - lo + offset)
        offset += hi - lo
        picked.append(w)
        result.picked.append(label)
        result.answers.append(targets[-1])
        a = incidence(np.stack(columns, axis=1), offset)
        fit = fit_weights(a, np.concatenate(targets), np.concatenate(sigmas), prior=weights,
                          iterations=FINAL_STEPS if t == t_max else ROUND_STEPS, step=step,
                          floor=FLOOR * offset)
        weights, step = fit.weights, fit.step
    result.weights = weights
    scores, distance = data.errors(weights)
    result.max_error.append(float(scores.max()))
    result.distance.append(distance)
    if progress is not None:
        progress(t_max, t_max, result.max_error[-1], distance)
    return result

