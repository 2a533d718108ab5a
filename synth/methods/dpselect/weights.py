"""Weights over pool rows that fit noisy marginal answers, then rows drawn by them.

The post-processing half of a measure-then-select engine for DP-Select (issue 20): once
marginals of the private table are measured with noise, choosing output rows from the
synthetic pool costs no privacy. As in PMW^Pub (Liu et al. 2021, "Leveraging Public Data for
Practical Private Query Release"), the pool plays the role of public data: a distribution w
over its m rows is fitted to the noisy answers â by minimising

    L(w) = Σ_j ((Aᵀw)_j − â_j)² / σ_j²   over the simplex,

where A (m × c, sparse 0/1) says which measured cells each pool row falls in, so (Aᵀw)_j is
the weighted pool's share of cell j. Entropic mirror descent (multiplicative weights) keeps w
on the simplex without projections and, started from a prior (uniform: the pool as the GAN
made it), moves it only as far as the answers ask. Rows are then drawn by systematic
resampling, which gives each row ⌊nw⌋ or ⌈nw⌉ copies: less sampling noise than i.i.d.
draws.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import sparse

from synth.errors import ParameterError

MAX_MOVE = 1.0  # the most a step may change log wᵢ: one accepted step cannot collapse w


@dataclass(frozen=True)
class Fit:
    """Fitted weights (summing to 1), the loss L before and after, the steps taken, and the
    step size reached (a warm start of a similar problem may begin there)."""

    weights: np.ndarray
    start_loss: float
    loss: float
    iterations: int
    step: float = 1.0


def incidence(cells: np.ndarray, width: int) -> sparse.csr_matrix:
    """A (m × width) 0/1 matrix from (m, q) cell ids: row i has a 1 in each of its q cells
    (one per measured marginal, its ids offset so marginals do not overlap)."""
    m, q = cells.shape
    if cells.size and (cells.min() < 0 or cells.max() >= width):
        raise ParameterError(f"cell ids must lie in [0, {width}), got "
                             f"[{cells.min()}, {cells.max()}]")
    return sparse.csr_matrix((np.ones(m * q, dtype=np.float64), cells.ravel(),
                              np.arange(0, m * q + 1, q, dtype=np.int32)), shape=(m, width))


def fit_weights(a: sparse.spmatrix, answers: np.ndarray, sigma: np.ndarray | float = 1.0,
                prior: np.ndarray | None = None, iterations: int = 500,
                tol: float = 1e-9, step: float = 1.0, floor: float = 0.0,
                beat: Callable[[], None] = lambda: None) -> Fit:
    """Minimise L(w) (module docstring) by entropic mirror descent from ``prior``.

    The step size adapts: a step that does not lower L is halved and retried, an accepted
    one grows by half, but no step moves any log wᵢ by more than ``MAX_MOVE`` (an early step
    that lowers L by piling the mass on a few rows would otherwise be accepted); ``step`` is
    the first one tried. It stops after ``iterations``
    steps, when a step lowers L by less than ``tol`` relative to L, or once L ≤ ``floor``
    (with noisy answers, the discrepancy principle: the truth itself has L ≈ one unit per
    cell, so fitting much below that fits the noise). ``beat`` runs before every step (a
    fit's context keeps the caller informed, and stops it when cancelled)."""
    m, c = a.shape
    answers = np.asarray(answers, dtype=np.float64)
    if answers.shape != (c,):
        raise ParameterError(f"answers must have one value per cell ({c}), got "
                             f"shape {answers.shape}")
    inverse = 1.0 / np.broadcast_to(np.asarray(sigma, dtype=np.float64), (c,)) ** 2
    w = np.full(m, 1.0 / m) if prior is None else np.asarray(prior, dtype=np.float64)
    if w.shape != (m,) or (w < 0).any() or not np.isclose(w.sum(), 1.0):
        raise ParameterError(f"prior must be {m} non-negative weights summing to 1")
    at = a.T  # a CSC view: no copy of A

    def loss(weights: np.ndarray) -> tuple[float, np.ndarray]:
        residual = at @ weights - answers
        return float(residual @ (inverse * residual)), residual

    start, residual = loss(w)
    current, done = start, 0
    log_w = np.log(np.maximum(w, 1e-300))
    while done < iterations and current > floor:
        beat()
        gradient = 2.0 * (a @ (inverse * residual))
        gradient -= gradient.min()  # a constant shift: the same step after normalising
        step = min(step, MAX_MOVE / max(gradient.max(), 1e-300))
        while True:
            trial = log_w - step * gradient
            trial -= trial.max()
            new = np.exp(trial)
            new /= new.sum()
            value, new_residual = loss(new)
            if value < current or step < 1e-12:
                break
            step /= 2
        done += 1
        if value >= current:
            break
        improved = (current - value) / current
        log_w, w, current, residual = np.log(np.maximum(new, 1e-300)), new, value, new_residual
        step *= 1.5
        if improved < tol:
            break
    return Fit(w, start, current, done, step)


def resample(weights: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """n row indices by systematic resampling: row i appears ⌊n·wᵢ⌋ or ⌈n·wᵢ⌉ times, in a
    random order (``rng`` is post-processing: the weights are already private)."""
    edges = np.cumsum(weights)
    edges /= edges[-1]
    picks = np.searchsorted(edges, (rng.random() + np.arange(n)) / n, side="right")
    return rng.permutation(np.minimum(picks, len(weights) - 1))
