"""The projection step of Private-GSD: a genetic search over synthetic tables (Liu et al. 2023,
Algorithm 1). Pure post-processing of noisy answers: it never sees the private table.

Every generation proposes ``mutations`` + ``crossovers`` candidates, each the current best
table D* with **one cell** changed (mutation: a random value of the column, see
:meth:`Space.random_values`; crossover: the same column of a random row of a random elite),
and keeps the ``elite`` best of the old elites and the candidates. A candidate's loss is
priced incrementally from D*'s residual (see :class:`synth.methods.gsd.queries.Tracker`), so a
generation costs O(P · measured slots containing the column), not O(P · N' · m). The loss is the
squared L2 distance Σ w·(â − Q(D))² (note C13); the search stops when it improved by less
than ``tol`` (relative) over the last ``window`` generations (default N', App. D.1), or
after ``max_generations``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from synth.encoding import Space
from synth.errors import ParameterError, check_int
from synth.marginals import Workloads
from synth.methods.gsd.queries import track

BLOCK = 256  # generations whose random draws are made at once


@dataclass(frozen=True)
class Projection:
    table: np.ndarray  # the best table found, in GSD space
    loss: float
    generations: int
    max_error: float  # largest |â − Q(table)| over the weighted queries


def loss_of(x: np.ndarray, classes: Sequence[Workloads], targets, weights) -> float:
    """Σ w·(â − Q(x))² over all classes, computed from scratch."""
    return float(sum(w @ (t - q.answers(x)) ** 2
                     for q, t, w in zip(classes, targets, weights, strict=True)))


def project(space: Space, classes: Sequence[Workloads], targets: Sequence[np.ndarray],
            weights: Sequence[np.ndarray], rows: int, rng: np.random.Generator, *,
            init: np.ndarray | None = None, mutations: int = 50, crossovers: int = 50,
            elite: int = 2, max_generations: int = 200_000, window: int | None = None,
            tol: float = 1e-4, progress: Callable[[int, float, float], None] | None = None,
            every: int = 250) -> Projection:
    """Search for an ``rows``-row table whose answers approach ``targets`` where ``weights``
    are non-zero; ``init`` (warm start) takes the first elite slot. ``progress(generation,
    loss, max_error)`` (max_error: the largest |â − Q(D*)| where weighted) is called every
    ``every`` generations and may raise to stop the search."""
    rows = check_int(rows, "rows (N')")
    elite = check_int(elite, "elite")
    mutations = check_int(mutations, "mutations", 0)
    crossovers = check_int(crossovers, "crossovers", 0)
    max_generations = check_int(max_generations, "max_generations", 0)
    window = rows if window is None else check_int(window, "window")
    if mutations + crossovers == 0:
        raise ParameterError("the population is empty: mutations + crossovers must be ≥ 1")
    if not 0 <= tol < 1:
        raise ParameterError(f"tol must lie in [0, 1), got {tol!r}")

    search = _Search(space, classes, targets, weights, rng, mutations, crossovers,
                     _first_elites(space, classes, targets, weights, rows, elite, rng, init))
    search.run(max_generations, window, tol, progress, every)
    trackers = search.track()
    return Projection(search.best, float(sum(t.loss for t in trackers)), search.generation,
                      _worst(trackers))


def _first_elites(space: Space, classes, targets, weights, rows: int, elite: int,
                  rng: np.random.Generator, init: np.ndarray | None) -> np.ndarray:
    """``elite`` random tables, the warm start ``init`` in the first slot."""
    elites = np.stack([space.random(rows, rng) for _ in range(elite)])
    if init is not None:
        if init.shape != (rows, space.d):
            raise ParameterError(f"warm start must have shape {(rows, space.d)}, got "
                                 f"{init.shape}")
        elites[0] = init
    return elites


@dataclass(frozen=True)
class _Draws:
    """A block of generations' random draws, made at once: per generation and candidate the
    row and column edited, a mutation's new value, a crossover's source elite and row."""

    rows: np.ndarray
    cols: np.ndarray
    mutated: np.ndarray
    source: np.ndarray
    source_rows: np.ndarray


class _Search:
    """The search's state: the elites by loss (best first), D* and its loss trackers."""

    def __init__(self, space: Space, classes, targets, weights, rng: np.random.Generator,
                 mutations: int, crossovers: int, elites: np.ndarray):
        self.space, self.rng = space, rng
        self.classes, self.targets, self.weights = classes, targets, weights
        self.mutations, self.crossovers = mutations, crossovers
        fitness = np.array([loss_of(e, classes, targets, weights) for e in elites])
        order = np.argsort(fitness, kind="stable")
        self.elites, self.fitness = elites[order], fitness[order]
        self.best = self.elites[0].copy()
        self.trackers = self.track()
        self.lagged, self.generation = self.fitness[0], 0

    def track(self) -> list:
        return [track(q, self.best, t, w)
                for q, t, w in zip(self.classes, self.targets, self.weights, strict=True)]

    def run(self, max_generations: int, window: int, tol: float, progress, every: int) -> None:
        """Generations until ``max_generations`` or convergence, in blocks of draws."""
        while self.generation < max_generations:
            draws = self._draw(min(BLOCK, max_generations - self.generation))
            for b in range(len(draws.rows)):
                self._step(*self._candidates(draws, b))
                self.generation += 1
                if progress is not None and self.generation % every == 0:
                    progress(self.generation, float(self.fitness[0]), _worst(self.trackers))
                if self.generation % window == 0 and self._converged(window, tol):
                    return

    def _draw(self, count: int) -> _Draws:
        rows, elite = len(self.best), len(self.elites)
        pop = self.mutations + self.crossovers
        all_rows = self.rng.integers(rows, size=(count, pop))
        all_cols = self.rng.integers(self.space.d, size=(count, pop))
        mutated = self.space.random_values(all_cols[:, :self.mutations].ravel(),
                                           self.rng).reshape(count, self.mutations)
        source = self.rng.integers(elite, size=(count, self.crossovers))
        source_rows = self.rng.integers(rows, size=(count, self.crossovers))
        return _Draws(all_rows, all_cols, mutated, source, source_rows)

    def _candidates(self, draws: _Draws, b: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Generation b's one-cell edits of D*: (rows, columns, new values)."""
        r, c = draws.rows[b], draws.cols[b]
        crossed = self.elites[draws.source[b], draws.source_rows[b], c[self.mutations:]]
        return r, c, np.concatenate([draws.mutated[b], crossed])

    def _step(self, r: np.ndarray, c: np.ndarray, values: np.ndarray) -> None:
        """Price the candidates and keep the best of them and the old elites."""
        elite = len(self.elites)
        cand = self.fitness[0] + sum(t.delta(self.best, r, c, values) for t in self.trackers)
        merged = np.concatenate([self.fitness, cand])
        top = np.argsort(merged, kind="stable")[:elite]
        if np.array_equal(top, np.arange(elite)):
            return
        new = np.empty_like(self.elites)
        for k, idx in enumerate(top):
            if idx < elite:
                new[k] = self.elites[idx]
            else:
                new[k] = self.best
                new[k, r[idx - elite], c[idx - elite]] = values[idx - elite]
        if top[0] >= elite:  # a candidate is the new best: move D* by its one edit
            i = top[0] - elite
            for t in self.trackers:
                t.accept(self.best, r[i], c[i], values[i])
            self.best[r[i], c[i]] = values[i]
        self.elites, self.fitness = new, merged[top]

    def _converged(self, window: int, tol: float) -> bool:
        """Fresh trackers (sums of ±1/N' drift in floating point), then whether the loss
        improved by less than ``tol`` (relative) over the last window."""
        self.trackers = self.track()
        self.fitness[0] = sum(t.loss for t in self.trackers)
        lagged, self.lagged = self.lagged, self.fitness[0]
        return self.generation > window and (lagged <= 0 or (lagged - self.fitness[0])
                                             / lagged < tol)


def _worst(trackers) -> float:
    return max(float(np.abs(t.residual[t.weight > 0]).max(initial=0.0)) for t in trackers)
