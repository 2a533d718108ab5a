"""The projection step of Private-GSD: a genetic search over synthetic tables (Liu et al. 2023,
Algorithm 1). Pure post-processing of noisy answers: it never sees the private table.

Every generation proposes ``mutations`` + ``crossovers`` candidates, each the current best
table D* with **one cell** changed (mutation: a random value of the column, see
:meth:`Space.random_values`; crossover: the same column of a random row of a random elite),
and keeps the ``elite`` best of the old elites and the candidates. A candidate's loss is
priced incrementally from D*'s residual (see :class:`synth.methods.gsd.queries.Tracker`), so a
generation costs O(P · slots containing the column), not O(P · N' · m). The loss is the
squared L2 distance Σ w·(â − Q(D))² (note C13); the search stops when it improved by less
than ``tol`` (relative) over the last ``window`` generations (default N', App. D.1), or
after ``max_generations``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from synth.errors import ParameterError, check_int
from synth.methods.gsd.queries import Space, Workloads

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

    elites = np.stack([space.random(rows, rng) for _ in range(elite)])
    if init is not None:
        if init.shape != (rows, space.d):
            raise ParameterError(f"warm start must have shape {(rows, space.d)}, got "
                                 f"{init.shape}")
        elites[0] = init
    fitness = np.array([loss_of(e, classes, targets, weights) for e in elites])
    order = np.argsort(fitness, kind="stable")
    elites, fitness = elites[order], fitness[order]
    best = elites[0].copy()

    def track():
        return [q.track(best, t, w) for q, t, w in zip(classes, targets, weights, strict=True)]

    trackers = track()
    pop = mutations + crossovers
    lagged, generation = fitness[0], 0
    converged = False
    while generation < max_generations and not converged:
        n_block = min(BLOCK, max_generations - generation)
        all_rows = rng.integers(rows, size=(n_block, pop))
        all_cols = rng.integers(space.d, size=(n_block, pop))
        all_mut = space.random_values(all_cols[:, :mutations].ravel(), rng).reshape(
            n_block, mutations)
        all_src = rng.integers(elite, size=(n_block, crossovers))
        all_src_rows = rng.integers(rows, size=(n_block, crossovers))
        for b in range(n_block):
            r, c = all_rows[b], all_cols[b]
            values = np.concatenate([all_mut[b], elites[all_src[b], all_src_rows[b],
                                                         c[mutations:]]])
            cand = fitness[0] + sum(t.delta(best, r, c, values) for t in trackers)
            merged = np.concatenate([fitness, cand])
            top = np.argsort(merged, kind="stable")[:elite]
            if not np.array_equal(top, np.arange(elite)):
                new = np.empty_like(elites)
                for k, idx in enumerate(top):
                    if idx < elite:
                        new[k] = elites[idx]
                    else:
                        i = idx - elite
                        new[k] = best
                        new[k, r[i], c[i]] = values[i]
                if top[0] >= elite:  # a candidate is the new best: move D* by its one edit
                    i = top[0] - elite
                    for t in trackers:
                        t.accept(best, r[i], c[i], values[i])
                    best[r[i], c[i]] = values[i]
                elites, fitness = new, merged[top]
            generation += 1
            if progress is not None and generation % every == 0:
                progress(generation, float(fitness[0]), _worst(trackers))
            if generation % window == 0:
                trackers = track()  # start afresh: sums of ±1/N' drift in floating point
                fitness[0] = sum(t.loss for t in trackers)
                converged = generation > window and (
                    lagged <= 0 or (lagged - fitness[0]) / lagged < tol)
                if converged:
                    break
                lagged = fitness[0]
    trackers = track()
    return Projection(best, float(sum(t.loss for t in trackers)), generation, _worst(trackers))


def _worst(trackers) -> float:
    return max(float(np.abs(t.residual[t.weight > 0]).max(initial=0.0)) for t in trackers)
