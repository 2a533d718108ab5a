"""The marginal primitive: workloads of marginals, counting them where the table lies,
measuring them, selecting the worst-answered one, and planning zCDP rounds.

Every method that measures marginals (independent, GSD, DP-Select's measure engine, MST, AIM)
and every figure that compares them (the evaluation, the plots, domain learning) goes through
this module:

* **cells and counts**: :func:`cell_index` and :func:`marginal` count rows of integer codes by
  a tuple of columns; :class:`Marginals` is a *workload set* over the unit-interval encoding
  (:class:`~synth.encoding.Space`), each workload the cells of one column tuple, a numeric
  column seen through 2^ℓ intervals at each level ℓ (binary-tree marginals);
* **where the table lies**: :func:`count` sums a counter over a table's chunks, in memory or
  streamed by DuckDB (:class:`~synth.source.Chunks`), or over a Dask cluster's partitions
  (:class:`~synth.cluster.DaskTable`); every backend gives the same counts exactly;
* **measuring**: :func:`measurement_event` is the Gaussian mechanism at ρ-zCDP,
  σ = Δ₂/√(2ρ) (the one place this is written), and :func:`measure` adds its noise;
* **selecting**: :func:`selection_event` and :func:`select`, report-noisy-max with Gumbel noise
  over each workload's error (the exponential mechanism at ε₀ = √(8ρ), ρ-zCDP);
* **planning**: :func:`plan_rounds` splits a zCDP budget over T rounds of S selections and
  measurements, and :func:`check_fits` and :func:`check_audible` refuse doomed plans.

Sensitivities are for replace-one with n public (:data:`synth.privacy.events.RELATION`): an
answer is a fraction of n rows, so a workload's answers move by Δ₂/n, and k times that for a
unit of up to k rows (:mod:`synth.privacy.unit`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import pandas as pd

from synth.errors import BudgetError, ParameterError, SchemaError
from synth.privacy.accounting import zcdp_rho
from synth.privacy.events import Exponential, Gaussian, fraction_linf
from synth.privacy.mechanisms import exponential_top_k, gaussian

if TYPE_CHECKING:
    from synth.encoding import Space
    from synth.privacy.unit import Population

CELLS = 2**23  # entries per block of a (rows × slots × k) array of cells
CHUNK = 4096  # rows per block when laying out a large pool's cells


# ---- cells and counts -----------------------------------------------------------------------


def cell_index(codes: np.ndarray, sizes: np.ndarray, columns: Sequence[int] | None = None
               ) -> np.ndarray:
    """Row-major cell of each row in the marginal over ``columns`` (all columns if None).

    ``codes`` is (..., d) integer codes and ``sizes`` the codes per column, (d,) or any shape
    that broadcasts against ``codes`` (one marginal per leading index, as a workload's slots).
    The result, int64 of shape ``codes.shape[:-1]``, is exact: c_1·s_2·…·s_k + … + c_k.
    """
    codes, sizes = np.asarray(codes), np.asarray(sizes, dtype=np.int64)
    if columns is not None:
        columns = list(columns)
        codes, sizes = codes[..., columns], sizes[..., columns]
    cells = np.prod(sizes.astype(float), axis=-1)
    if np.size(cells) and np.max(cells) >= 2.0**63:
        raise SchemaError(f"a marginal of {np.max(cells):.3g} cells is too large to count; "
                          "use fewer columns or fewer bins")
    out = np.zeros(codes.shape[:-1], dtype=np.int64)
    for t in range(codes.shape[-1]):
        out = out * sizes[..., t] + codes[..., t]
    return out


def marginal(codes: np.ndarray, sizes: np.ndarray, columns: Sequence[int] | None = None,
             weights: np.ndarray | None = None) -> np.ndarray:
    """Counts (or summed ``weights``) of the rows of ``codes`` in each cell of the marginal over
    ``columns``, flat in row-major order: reshape to ``sizes[columns]`` for the table.

    Integer counts without weights, so callers normalise exactly as they choose.
    """
    sizes = np.asarray(sizes)
    shape = sizes if columns is None else sizes[list(columns)]
    return np.bincount(cell_index(codes, sizes, columns), weights,
                       minlength=math.prod(int(s) for s in shape))


class Workloads:
    """A workload set: ``bounds[w]:bounds[w+1]`` are workload w's queries in the answer vector,
    each answered as a fraction of rows; ``sensitivity[w]`` is its L2 sensitivity in rows
    (divide by n)."""

    kind: str
    bounds: np.ndarray
    sensitivity: np.ndarray
    labels: list[str]

    @property
    def size(self) -> int:
        return int(self.bounds[-1])

    def __len__(self) -> int:
        return len(self.bounds) - 1

    def answers(self, x: np.ndarray) -> np.ndarray:
        """Every query's answer on table ``x``, as fractions of its rows."""
        return self.counts(x) / len(x)

    def counts(self, x: np.ndarray) -> np.ndarray:
        """How many rows of ``x`` each query holds for (whole numbers, as floats): summed
        over a table's chunks, they give its answers exactly."""
        raise NotImplementedError

    def worst_errors(self, true: np.ndarray, answers: np.ndarray) -> np.ndarray:
        """Max |true − answer| per workload: the selection's score (sensitivity 1/n)."""
        return np.maximum.reduceat(np.abs(true - answers), self.bounds[:-1])


@dataclass(frozen=True)
class Slot:
    """One level of one marginal workload: its columns, bins per column and first cell."""

    cols: tuple[int, ...]
    bins: tuple[int, ...]
    offset: int
    apart: tuple[bool, ...]  # per column: its bounds are cells of their own (bounds_apart)

    @property
    def inner(self) -> tuple[int, ...]:
        """Per column, its intervals: the bins, a bound's own cells aside."""
        return tuple(b - 2 * a for b, a in zip(self.bins, self.apart, strict=True))


def _layout(space: Space, tuples: Sequence[tuple[int, ...]], levels: int, exact: int = 0,
            tree: bool = True) -> tuple[list[Slot], np.ndarray, np.ndarray, list[str]]:
    """Per workload (a column tuple): its slots, one per level when a column is numeric (the
    finest only without a ``tree``), laid out one after another; returns the slots and the
    workloads' bounds, Δ₂ in rows, labels. A row lies in one cell of each slot, so replacing
    it moves 2 cells per slot: Δ₂ = √(2L) for L slots."""
    slots, bounds, sens, labels = [], [0], [], []
    offset = 0
    for cols in tuples:
        numeric = any(space.cards[c] == 0 for c in cols)
        seen = (range(1, levels + 1) if tree else [levels]) if numeric else [0]
        for level in seen:
            apart = tuple(not space.cards[c] and level == levels
                          and bounds_apart(int(space.steps[c]), levels, exact) for c in cols)
            bins = tuple(int(space.cards[c]) or _bins(int(space.steps[c]), level, levels,
                                                      exact) + 2 * a
                         for c, a in zip(cols, apart, strict=True))
            slots.append(Slot(tuple(cols), bins, offset, apart))
            offset += math.prod(bins)
        bounds.append(offset)
        sens.append(math.sqrt(2 * len(seen)))
        labels.append(" × ".join(space.names[c] for c in cols))
    return slots, np.array(bounds, dtype=np.int64), np.array(sens), labels


def _bins(steps: int, level: int, levels: int, exact: int) -> int:
    """A numeric column's intervals at ``level``: 2^level, but at the finest level a whole
    number taking at most ``exact`` values (``steps`` + 1) gets an interval per value: 32
    intervals over hours 8–76 mixed a 40-hour spike with 41."""
    if level == levels and 2**levels < steps + 1 <= exact:
        return steps + 1
    return 2**level


def bounds_apart(steps: int, levels: int, exact: int) -> bool:
    """Whether a numeric column's bounds are cells of their own at the finest of ``levels``:
    where its 2^levels intervals hold more than one value each (a continuous number, or a
    whole number of more than 2^levels steps and more than ``exact`` values). A table may
    pile up at a bound (no capital gain, top-coded hours) or hold nothing there (a date
    range's first day); inside the first interval a search cannot tell which without it:
    Private-GSD's guess put a sign-up date's months 0.071–0.073 off in TVD with answers
    all but exact (ε = 1,000), 0.047–0.057 with the bounds apart (benchmarks/dates.py)."""
    return _bins(steps, levels, levels, exact) == 2**levels and (steps == 0
                                                                or steps > 2**levels)


def interval_codes(v: np.ndarray, inner: np.ndarray, apart: np.ndarray) -> np.ndarray:
    """The code of each value v in [0, 1] among ``inner`` intervals (⌊v·inner⌋, the last one
    closed), after a cell of its own for 0 and before one for 1 where the bounds are
    ``apart`` (see :func:`bounds_apart`). A search's loss prices every edit with it, so it is
    a few array operations: 1 is the last interval's top, moved on by one cell where apart."""
    return np.minimum(np.floor(v * inner), inner - 1 + apart) + (apart & (v > 0))


def draw_in_cell(code: np.ndarray, inner: int, apart: bool, steps: int, u: np.ndarray
                 ) -> np.ndarray:
    """A value in [0, 1] drawn uniformly (by ``u`` in [0, 1)) within each cell ``code`` of
    :func:`interval_codes`: a whole number k/``steps`` where the column counts ``steps``
    steps (NaN where the cell holds none), a bound for a bound's own cell. A draw always
    lies in its cell: where rounding puts c + u on c + 1 (u within 2⁻⁵³·c of 1) or u = 0
    on a bound that is a cell apart, the interval's middle is taken instead."""
    c = np.asarray(code, dtype=np.int64) - apart  # the interval among the inner ones
    if steps == 0:
        value = (c + u) / inner
        value = np.where(interval_codes(value, inner, apart) == c + apart, value,
                         (c + 0.5) / inner)
    else:  # k from ⌈c·steps/inner⌉ to before the next interval's first, bounds left out
        lo = -(-c * steps // inner) + (apart & (c == 0))
        hi = np.where(c == inner - 1, steps - apart, -(-(c + 1) * steps // inner) - 1)
        value = np.where(hi >= lo, (lo + np.floor(u * (hi - lo + 1))) / steps, np.nan)
    if apart:
        value = np.where(c < 0, 0.0, np.where(c == inner, 1.0, value))
    return value


def _strides(bins: np.ndarray) -> np.ndarray:
    """Row-major strides of each slot's cells, so the cell :func:`cell_index` gives is
    Σ code_t · stride_t: an edit of one code moves it by stride · Δcode."""
    strides = np.ones_like(bins)
    for t in range(bins.shape[1] - 2, -1, -1):
        strides[:, t] = strides[:, t + 1] * bins[:, t + 1]
    return strides


class Marginals(Workloads):
    """k-way marginals over column tuples of a :class:`~synth.encoding.Space`; a numeric
    column is seen through 2^ℓ intervals of [0, 1] at each level ℓ = 1…``levels`` (a
    binary-tree marginal; at the finest level a whole number taking at most ``exact``
    values has an interval per value, and elsewhere each bound is a cell of its own, see
    :func:`bounds_apart`), a categorical one by its codes. A workload holds all cells of all
    its levels; without a ``tree``, of the finest level only."""

    def __init__(self, space: Space, tuples: Sequence[tuple[int, ...]], levels: int = 5,
                 kind: str = "marginals", exact: int = 0, tree: bool = True):
        if not tuples:
            raise ParameterError(f"query class {kind!r} has no column tuples on this table")
        if int(levels) != levels or not 1 <= levels <= 16:
            raise ParameterError(f"levels must be an integer between 1 and 16, got {levels!r}")
        self.kind, self.space, self.k = kind, space, len(tuples[0])
        self.slots, self.bounds, self.sensitivity, self.labels = _layout(space, tuples, levels,
                                                                          exact, tree)
        self._cols = np.array([sl.cols for sl in self.slots], dtype=np.int64)  # (S, k)
        self._bins = np.array([sl.bins for sl in self.slots], dtype=np.int64)
        self.strides = _strides(self._bins)
        self.offsets = np.array([sl.offset for sl in self.slots], dtype=np.int64)
        self._numeric = space.cards[self._cols] == 0
        self._apart = np.array([sl.apart for sl in self.slots], dtype=bool)
        self._inner = np.array([sl.inner for sl in self.slots], dtype=np.int64)

    def by_column(self, slots: np.ndarray) -> tuple[np.ndarray, ...]:
        """Per column, (d, K): the positions in ``slots`` of those that contain it (padded
        with 0), its stride and intervals there, which entries are real, and whether its
        bounds are cells apart there: an edit of the column touches only those."""
        d = self.space.d
        per_col = [np.argwhere(self._cols[slots] == j) for j in range(d)]  # (position, t)
        width = max(1, max(len(p) for p in per_col))
        where = np.zeros((d, width), dtype=np.int64)
        stride = np.zeros((d, width), dtype=np.int64)
        inner = np.ones((d, width), dtype=np.int64)
        valid = np.zeros((d, width), dtype=bool)
        apart = np.zeros((d, width), dtype=bool)
        for j, pairs in enumerate(per_col):
            i, t = pairs[:, 0], pairs[:, 1]
            where[j, : len(pairs)] = i
            stride[j, : len(pairs)] = self.strides[slots[i], t]
            inner[j, : len(pairs)] = self._inner[slots[i], t]
            valid[j, : len(pairs)] = True
            apart[j, : len(pairs)] = self._apart[slots[i], t]
        return where, stride, inner, valid, apart

    def weighted(self, weight: np.ndarray) -> np.ndarray:
        """The slots holding a query of non-zero weight (the slots tile the answer vector)."""
        return np.flatnonzero(np.add.reduceat((weight != 0).astype(np.int64), self.offsets))

    def cells(self, x: np.ndarray, slots: np.ndarray | slice = slice(None)) -> np.ndarray:
        """(n, S) index of the cell each row falls in, for every slot (or those given)."""
        cols, bins = self._cols[slots], self._bins[slots]
        v = x[:, cols]  # (n, S, k)
        codes = np.where(self._numeric[slots],
                         interval_codes(v, self._inner[slots], self._apart[slots]), v)
        return cell_index(codes.astype(np.int64), bins) + self.offsets[slots]

    def slot_cells(self, x: np.ndarray) -> np.ndarray:
        """(S, n) int32 cell of each row in each slot, block by block: all at once, the
        intermediate (n, S, k) arrays of a 90k-row pool take over 1 GB."""
        out = np.empty((len(self.slots), len(x)), dtype=np.int32)
        for start in range(0, len(x), CHUNK):
            out[:, start:start + CHUNK] = self.cells(x[start:start + CHUNK]).T
        return out

    def counts(self, x: np.ndarray) -> np.ndarray:
        counts = np.zeros(self.size)
        block = max(1, CELLS // (len(self.slots) * self.k))  # rows: (rows, slots, k) is big
        for start in range(0, len(x), block):
            counts += np.bincount(self.cells(x[start:start + block]).ravel(),
                                  minlength=self.size)
        return counts


MARGINAL_CLASSES = ("1-way", "num1", "cat2", "cat3", "bt")


def workloads(space: Space, kind: str, levels: int = 5, exact: int = 0) -> Marginals:
    """A marginal workload set over ``space`` by name: ``1-way`` (every column's own, a
    number's as a binary tree), ``num1`` (every numeric column's own at its finest intervals
    only), ``cat2``/``cat3`` (categorical pairs or triples), ``bt`` (2-way binary-tree
    marginals of every pair with a numeric column); ``exact`` as :class:`Marginals` takes it."""
    if kind == "1-way":
        return Marginals(space, [(j,) for j in range(space.d)], levels=levels, kind=kind,
                         exact=exact)
    if kind == "num1":
        if not len(space.numeric):
            raise ParameterError("query class 'num1' needs a numeric column")
        return Marginals(space, [(int(j),) for j in space.numeric], levels=levels, kind=kind,
                         exact=exact, tree=False)
    if kind in ("cat2", "cat3"):
        k, cat = int(kind[-1]), list(space.categorical)
        if len(cat) < k:
            raise ParameterError(f"query class {kind!r} needs {k} categorical columns; the "
                                 f"table has {len(cat)}")
        return Marginals(space, list(itertools.combinations(cat, k)), kind=kind)
    if kind == "bt":
        pairs = [p for p in itertools.combinations(range(space.d), 2)
                 if space.cards[p[0]] == 0 or space.cards[p[1]] == 0]
        if not pairs:
            raise ParameterError("query class 'bt' needs a numeric column and a second column")
        return Marginals(space, pairs, levels=levels, kind=kind, exact=exact)
    raise ParameterError(f"no marginal workload {kind!r}; one of {MARGINAL_CLASSES}")


def workload_size(categorical: Sequence[bool], kind: str, levels: int = 5
                  ) -> tuple[int, float]:
    """(workloads, Δ₂) of the marginals :func:`workloads` gives but ``1-way``, from the kinds
    alone, so a plan can be made before any domain is known (no workloads: Δ₂ = 0)."""
    d, c = len(categorical), sum(map(bool, categorical))
    if kind == "num1":
        return d - c, math.sqrt(2) if d > c else 0.0
    if kind in ("cat2", "cat3"):
        w = math.comb(c, int(kind[-1]))
        return w, math.sqrt(2) if w else 0.0
    if kind == "bt":
        w = math.comb(d, 2) - math.comb(c, 2)
        return w, math.sqrt(2 * levels) if w else 0.0
    raise ParameterError(f"no marginal workload {kind!r}; one of {MARGINAL_CLASSES[1:]}")


# ---- where the table lies -------------------------------------------------------------------


class Table(Protocol):
    """What :func:`count` reads: :class:`~synth.source.Chunks` (a frame in memory, or a file
    streamed by DuckDB) or :class:`~synth.cluster.DaskTable` (partitions on a cluster)."""

    rows: int

    def reduce(self, counter: Callable[[pd.DataFrame], list[np.ndarray]], ctx: Any,
               stage: str, description: str) -> list[np.ndarray]: ...


def count(table: Table, counter: Callable[[pd.DataFrame], list[np.ndarray]], ctx: Any,
          stage: str, description: str) -> list[np.ndarray]:
    """``counter``'s arrays summed over every row of ``table``, wherever it lies: the counter
    maps a chunk (prepared against the schema, in model space) to count vectors, and chunks'
    counts add up to the whole table's exactly. One pass, shown as ``stage`` of ``ctx``."""
    return table.reduce(counter, ctx, stage, description)


def add_up(parts: Iterable[list[np.ndarray]]) -> list[np.ndarray]:
    """The element-wise sum of each part's count vectors, in the order given."""
    total: list[np.ndarray] | None = None
    for part in parts:
        total = [np.array(p, copy=True) for p in part] if total is None else [
            t + p for t, p in zip(total, part, strict=True)]
    if total is None:
        raise ParameterError("nothing to count: the table has no chunks")
    return total


# ---- measuring and selecting ----------------------------------------------------------------


def measurement_event(sensitivity: float, rho: float) -> Gaussian:
    """Gaussian noise σ = Δ/√(2ρ) on a workload of L2 sensitivity Δ: ρ-zCDP."""
    return Gaussian(sensitivity / math.sqrt(2 * rho), sensitivity)


def measure(answers: np.ndarray, event: Gaussian) -> np.ndarray:
    """``answers`` plus the event's Gaussian noise (fresh OS entropy), unclipped: clipping is
    the caller's post-processing, and biases empty cells upward."""
    return gaussian(answers, event.sigma)


def selection_event(n: int, rho: float, count: int = 1, rows_per_unit: int = 1
                    ) -> Exponential:
    """``count`` workloads by report-noisy-max over max errors (sensitivity 1/n, or k/n for
    units of up to k rows) with Gumbel noise of scale Δ/√(2ρ): each pick is the exponential
    mechanism at ε₀ = √(8ρ), which is ε₀²/8 = ρ-zCDP (bounded range), so the picks cost
    count·ρ."""
    return Exponential(math.sqrt(8 * rho), fraction_linf(n, rows_per_unit), count)


def noise_l1(event: Gaussian, cells: float | np.ndarray) -> float | np.ndarray:
    """The expected L1 size of the event's noise on a marginal of ``cells`` cells,
    √(2/π)·σ·cells: what measuring it adds to its error. A pick weighs a marginal's error
    against it (AIM's rule), so a wide marginal whose measurement would be mostly noise is
    not preferred for its width."""
    return math.sqrt(2 / math.pi) * event.sigma * cells


def select(scores: np.ndarray, event: Exponential) -> np.ndarray:
    """The ``event.count`` workloads of highest noisy score (Gumbel top-k); a score of −∞
    (a workload already measured) is never picked."""
    return exponential_top_k(scores, event.count, event.epsilon, event.sensitivity)


# ---- planning -------------------------------------------------------------------------------


def plan_rounds(population: Population, epsilon: float, delta: float, workloads: int,
                widest: float, rounds: int | None, default: int, per_round: int = 1,
                one_shot: bool = False, stage: str = "queries", fixed: int = 0
                ) -> tuple[int, int, float]:
    """(T, S, ρ per mechanism call) for ``workloads`` candidates whose largest Δ₂ is
    ``widest`` (in rows, for one row per unit), or a clear error. Each of T rounds selects S
    workloads and measures them, after ``fixed`` measurements made up front: F + 2TS calls
    of ρ/(F + 2TS) each; one-shot measures every workload once at ρ/W. The default T is
    ``default``, but never more rounds than there are workloads to pick, nor so many that a
    measurement's σ, k·widest/(n·√(2ρ')), would exceed an answer's whole range [0, 1]: on a
    tiny table fewer workloads are measured, each with more budget. ``stage`` names the
    budget share in errors."""
    rho = zcdp_rho(epsilon, delta, stage)
    if one_shot:
        return 1, workloads, rho / workloads
    s = int(per_round)
    if rounds is None:
        rows = population.rows / population.max_rows  # n/k: the answers' scale
        # σ < 1 while F + 2TS < 2ρ(n/k)²/widest²: T below (that − F)/2S
        calls = 2 * rho * rows * rows / (widest * widest) if widest > 0 else math.inf
        below = (calls - fixed) / (2 * s)
        audible = math.ceil(below) - 1 if math.isfinite(below) else math.inf
        rounds = max(1, int(min(default, workloads // s, audible)))
    check_fits(int(rounds), s, workloads)
    return int(rounds), s, rho / (fixed + 2 * int(rounds) * s)


def check_fits(rounds: int, per_round: int, workloads: int) -> None:
    """Refuse a plan that would measure some workload twice."""
    if rounds * per_round > workloads:
        raise ParameterError(f"rounds × per_round = {rounds * per_round} exceeds the "
                             f"{workloads} workloads of this query set; no workload is "
                             "measured twice")


def check_audible(sigma: float, epsilon: float, remedy: str = "") -> None:
    """Refuse a run whose quietest measurement's noise (``sigma``, in fractions of the rows)
    exceeds an answer's whole range [0, 1]: it could measure nothing. ``remedy`` ends the
    message (what else the steward may change besides ε)."""
    if sigma >= 1:
        raise BudgetError(f"ε = {epsilon:.3g} is too small to measure anything: the Gaussian "
                          f"noise (σ ≥ {sigma:.3g}) exceeds the whole range [0, 1] of an "
                          f"answer. Raise ε{remedy}")
