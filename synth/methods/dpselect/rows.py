"""Private selection of output rows from a synthetic pool (the DP-Select engine).

The output is built one row per step: T candidates are drawn from the pool rows not yet
chosen, each is scored by minus the weighted distance between the private table's chosen
marginals and those of (rows chosen so far + candidate), and the exponential mechanism picks
one. Only the candidate's own cell of each marginal changes, so a candidate costs O(k) work;
everything is vectorised over candidates and over the S sections, which run in lockstep.

Marginals live in a padded array of shape (sections, k, cells): marginal i of a row is the
row-major cell of its column tuple. Distances: ``l1`` (the thesis's "density distance area"),
``l2`` and ``kolmogorov`` (the largest gap between the row-major flattened CDFs, a documented
choice for 2-way tables, whose joint CDF has no natural order for categories).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from synth.errors import ParameterError
from synth.marginals import cell_index, marginal
from synth.privacy.mechanisms import exponential

DISTANCES = ("l1", "l2", "kolmogorov")


def cells(codes: np.ndarray, sizes: np.ndarray, marginals: Sequence[tuple[int, ...]]
          ) -> np.ndarray:
    """(n, k) row-major cell index of every row in every marginal (a tuple of columns)."""
    out = np.zeros((len(codes), len(marginals)), dtype=np.int64)
    for i, cols in enumerate(marginals):
        out[:, i] = cell_index(codes, sizes, cols)
    return out


def mutual_information(codes: np.ndarray, sizes: np.ndarray, a: int, b: int) -> float:
    """I(X_a; X_b) in nats of the empirical joint distribution of two code columns."""
    joint = marginal(codes, sizes, (a, b)).reshape(sizes[a], sizes[b])
    p = joint / max(joint.sum(), 1)
    pa, pb = p.sum(axis=1, keepdims=True), p.sum(axis=0, keepdims=True)
    nz = p > 0
    return float(np.sum(p[nz] * np.log(p[nz] / (pa @ pb)[nz])))


def top_pairs(codes: np.ndarray, sizes: np.ndarray, fraction: float = 0.1
              ) -> tuple[list[tuple[int, ...]], np.ndarray]:
    """The ⌈fraction · #pairs⌉ column pairs of highest mutual information, with weights MI/ΣMI.

    Call it on synthetic codes (the pool): on the private table it would spend privacy.
    A single column gives its own 1-way marginal.
    """
    d = codes.shape[1]
    if d == 1:
        return [(0,)], np.ones(1)
    pairs = list(itertools.combinations(range(d), 2))
    mi = np.array([mutual_information(codes, sizes, a, b) for a, b in pairs])
    k = max(1, math.ceil(fraction * len(pairs)))
    order = np.argsort(-mi, kind="stable")[:k]
    chosen = mi[order]
    weights = chosen / chosen.sum() if chosen.sum() > 0 else np.full(k, 1 / k)
    return [pairs[i] for i in order], weights


@dataclass(frozen=True)
class SelectionTrace:
    """What the selection did: chosen pool rows per section and the distance after it."""

    chosen: list[np.ndarray]  # per section, indices into that section's pool
    distance: np.ndarray  # per section, final weighted distance to the reference


def weighted_distance(reference: np.ndarray, counts: np.ndarray, total: np.ndarray,
                      weights: np.ndarray, distance: str) -> np.ndarray:
    """Per section: Σ_i w_i · dist(reference_i, counts_i / total) over padded (S, k, M) arrays."""
    q = counts / np.maximum(total, 1)[:, None, None]
    if distance == "l1":
        per = np.abs(reference - q).sum(axis=2)
    elif distance == "l2":
        per = np.sqrt(((reference - q) ** 2).sum(axis=2))
    else:
        per = np.abs(np.cumsum(reference - q, axis=2)).max(axis=2)
    return per @ weights


def select(reference_cells: Sequence[np.ndarray], pool_cells: Sequence[np.ndarray],
           cell_counts: np.ndarray, weights: np.ndarray, epsilon_step: float,
           candidates: int, distance: str, rng: np.random.Generator, *, sensitivity: float,
           progress: Callable[[int, int, np.ndarray], None] | None = None,
           every: int = 0) -> SelectionTrace:
    """Choose len(reference_cells[s]) rows from pool section s, for every section s at once.

    ``reference_cells[s]`` / ``pool_cells[s]``: (n_s, k) / (m_s, k) cell indices (see
    :func:`cells`) of the private section and its pool. Each pick is the exponential
    mechanism with per-step ε ``epsilon_step`` and score sensitivity ``sensitivity`` for every
    section: 2/n_s of the smallest section (replace-one neighbours at a public row count: one
    record moves at most 2/n_s of L1 mass in each of a section's normalised marginals; the L2
    and Kolmogorov distances move less, and the weights sum to 1), so the ledger's event is
    exactly what ran. ``rng`` only draws the candidates (public: the pool is a DP output).
    ``progress(step, total, distances)`` is called every ``every`` steps (0: never).
    """
    if distance not in DISTANCES:
        raise ParameterError(f"distance must be one of {DISTANCES}, got {distance!r}")
    sections, k, width = len(reference_cells), len(weights), int(cell_counts.max())
    sizes = np.array([len(r) for r in reference_cells])
    pools = np.array([len(p) for p in pool_cells])
    if np.any(pools < sizes):
        raise ParameterError("every pool section needs at least as many rows as its output")
    steps = int(sizes.max())

    reference = np.zeros((sections, k, width))
    for s, ref in enumerate(reference_cells):
        for i in range(k):
            reference[s, i, : cell_counts[i]] = marginal(ref, cell_counts, (i,)) / len(ref)
    pool = np.zeros((sections, int(pools.max()), k), dtype=np.int64)
    for s, p in enumerate(pool_cells):
        pool[s, : len(p)] = p
    available = np.tile(np.arange(pool.shape[1]), (sections, 1))  # first `left` are unused
    left = pools.copy()
    counts = np.zeros((sections, k, width))
    chosen = np.zeros((sections, steps), dtype=np.int64)
    # sum of squares bookkeeping for l2: Σ P², Σ P·C and Σ C² per (section, marginal)
    p_sq, p_c, c_sq = (reference ** 2).sum(axis=2), np.zeros((sections, k)), np.zeros((sections, k))
    rows = np.arange(sections)

    for t in range(steps):
        active = t < sizes
        positions = _draw(rng, left, candidates)  # (S, T), -1 where a section has fewer rows
        valid = (positions >= 0) | ~active[:, None]  # finished sections: ignored picks
        cand = np.take_along_axis(available, np.maximum(positions, 0), axis=1)
        cand_cells = pool[rows[:, None], cand]  # (S, T, k)
        score = candidate_scores(reference, counts, t, cand_cells, weights, distance,
                                 (p_sq, p_c, c_sq))
        # Pr ∝ exp(ε_s·score/(2Δ_s)), Δ_s = 2/n_s: scaled scores with sensitivity 1
        scaled = np.where(valid, score, -np.inf)
        pick = exponential(scaled, epsilon_step, sensitivity)
        pos = positions[rows, pick]
        row = available[rows, pos]
        live = rows[active]
        chosen[live, t] = row[live]
        sel_cells = pool[live, row[live]]  # (A, k)
        if distance == "l2":
            li = np.arange(k)[None, :]
            p_c[live] += reference[live[:, None], li, sel_cells]
            c_sq[live] += 2 * counts[live[:, None], li, sel_cells] + 1
        counts[live[:, None], np.arange(k)[None, :], sel_cells] += 1
        last = left[live] - 1  # swap-remove the chosen row from the unused prefix
        available[live, pos[live]] = available[live, last]
        left[live] = last
        if progress is not None and every and ((t + 1) % every == 0 or t + 1 == steps):
            progress(t + 1, steps, weighted_distance(reference, counts,
                                                     np.minimum(sizes, t + 1), weights,
                                                     distance))
    final = weighted_distance(reference, counts, sizes, weights, distance)
    return SelectionTrace([chosen[s, : sizes[s]] for s in range(sections)], final)


def candidate_scores(reference: np.ndarray, counts: np.ndarray, t: int, cand_cells: np.ndarray,
                     weights: np.ndarray, distance: str,
                     l2_terms: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
                     ) -> np.ndarray:
    """(S, T) scores −Σ_i w_i·dist_i of adding each candidate to the t rows chosen so far.

    ``reference`` / ``counts``: (S, k, M) private marginals and chosen-row counts;
    ``cand_cells``: (S, T, k). Only a candidate's own cell changes, so each costs O(k).
    For ``l1`` the score leaves out the other cells' terms, equal for every candidate of a
    section, so it is exact up to a per-section constant (all the exponential mechanism sees).
    ``l2_terms`` are (Σ P², Σ P·C, Σ C²) per (section, marginal), kept up to date by the caller.
    """
    sections, k = reference.shape[:2]
    s_idx, i_idx = np.arange(sections)[:, None, None], np.arange(k)[None, None, :]
    h = 1.0 / (t + 1)
    a = reference[s_idx, i_idx, cand_cells] - counts[s_idx, i_idx, cand_cells] * h
    if distance == "l1":  # |P − (C+1)h| − |P − Ch| in the candidate's cell
        per = np.abs(a - h) - np.abs(a)
    elif distance == "l2":
        p_sq, p_c, c_sq = l2_terms
        base = p_sq - 2 * h * p_c + h * h * c_sq  # Σ_j (P − C/(t+1))², (S, k)
        per = np.sqrt(np.maximum(base[:, None, :] - a * a + (a - h) ** 2, 0))
    else:  # adding a row at cell j lowers G = F_P − F_C·h by h from j on
        gap = np.cumsum(reference - counts * h, axis=2)
        before = np.maximum.accumulate(np.abs(gap), axis=2)
        after = np.maximum.accumulate(np.abs(gap - h)[:, :, ::-1], axis=2)[:, :, ::-1]
        prefix = np.where(cand_cells > 0,
                          before[s_idx, i_idx, np.maximum(cand_cells - 1, 0)], 0.0)
        per = np.maximum(prefix, after[s_idx, i_idx, cand_cells])
    return -(per @ weights)


def _draw(rng: np.random.Generator, left: np.ndarray, t: int) -> np.ndarray:
    """(S, t) distinct positions in [0, left_s) per row; -1 pads a row with fewer than t."""
    out = np.floor(rng.random((len(left), t)) * left[:, None]).astype(np.int64)
    srt = np.sort(out, axis=1)
    redo = np.flatnonzero((np.diff(srt, axis=1) == 0).any(axis=1) | (left < t))
    for s in redo:  # rare: a repeated position, or a nearly exhausted pool
        m = min(t, int(left[s]))
        out[s] = -1
        out[s, :m] = rng.choice(int(left[s]), size=m, replace=False)
    return out
