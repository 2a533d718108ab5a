"""Statistical-query workloads for Private-GSD, and the loss a genetic search minimises.

Tables live in the unit-interval space (:class:`synth.encoding.Space`): a categorical column
holds its category code and a numeric column its value scaled to [0, 1] over the public
bounds. Numbers are never discretised there; only the queries look at them through intervals.

A query class holds W *workloads* (:class:`synth.marginals.Workloads`); workload w is a block
of queries answered as fractions of rows, with an L2 sensitivity ``sensitivity[w] / n`` for an
n-row table with n public (one row replaced). Four classes (Liu et al. 2023, §5.2 and the
note's corrections):

* marginals (``num1``, ``cat2``, ``cat3``, ``bt``), from the marginal primitive
  (:class:`synth.marginals.Marginals`): k-way categorical marginals, Δ = √2, 2-way
  binary-tree range marginals over numeric columns, levels 1…L of 2^ℓ half-open intervals
  (the last one closed; at the finest level each bound a cell of its own where an interval
  holds several values), Δ = √(2L), since a row lies in exactly one cell of each level, and
  a numeric column's own marginal at the finest level alone, Δ = √2;
* :class:`Prefixes`: 1{x_c = v, x_a < τ_a, x_b < τ_b}, a workload being one (a, τ_a, b, τ_b)
  crossed with every value v of c, Δ = √2;
* :class:`Halfspaces`: 1{⟨θ, onehot(x)⟩ ≤ τ}, θ_i ~ N(0, 1/d), τ ~ N(0, 1), each its own
  workload, Δ = 1.

The search needs the loss change of a one-cell edit without recomputing any statistic:
:func:`track` gives each class a tracker that keeps the residual r = â − Q(D) of the current
best table and prices P candidate edits at once. Like the loss, it looks only at measured
(weighted) queries: for marginals, the cells of the measured (workload, level) slots that
contain the edited column.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from synth.encoding import Space
from synth.errors import ParameterError
from synth.marginals import (
    CELLS,
    MARGINAL_CLASSES,
    Marginals,
    Workloads,
    interval_codes,
    workload_size,
)
from synth.marginals import workloads as marginal_workloads

QUERY_CLASSES = ("num1", "cat2", "cat3", "bt", "prefix", "halfspace")


# ---- trackers: the loss and the price of an edit ------------------------------------------


class Tracker:
    """Residual r = target − Q(x) of one table, and the loss Σ w·r² with the price of edits.

    ``delta`` prices candidate edits (row, column, new value) of ``x`` without applying them;
    ``accept`` records one, and must be called *before* ``x`` itself is edited.
    """

    def __init__(self, x: np.ndarray, target: np.ndarray, weight: np.ndarray,
                 answers: np.ndarray):
        self.h = 1.0 / len(x)
        self.weight = weight
        self.residual = target - answers

    @property
    def loss(self) -> float:
        return float(self.weight @ self.residual**2)

    def delta(self, x, rows, cols, values) -> np.ndarray:
        raise NotImplementedError

    def accept(self, x, row: int, col: int, value: float) -> None:
        raise NotImplementedError


class _MarginalTracker(Tracker):
    """Keeps the cells of the weighted slots only, numbered afresh: an adaptive search has
    measured a few of thousands of workloads, and the others never enter its loss (nor its
    arrays, whose size decides whether an edit's gathers stay in cache)."""

    def __init__(self, queries: Marginals, x, target, weight):
        self.q = queries
        slots = queries.weighted(weight)
        ends = np.append(queries.offsets[1:], queries.size)[slots]
        starts = queries.offsets[slots]
        first = np.cumsum(ends - starts) - (ends - starts)  # each slot's first compact cell
        kept = np.concatenate([np.arange(0)] + [np.arange(a, b) for a, b in zip(starts, ends,
                                                                                strict=True)])
        self.cells = queries.cells(x, slots) + (first - starts)
        self._slots, self._stride, self._inner, self._valid, self._apart = queries.by_column(
            slots)
        counts = np.bincount(self.cells.ravel(), minlength=len(kept))
        super().__init__(x, target[kept], weight[kept], counts / len(x))

    def _moves(self, x, rows, cols, values):
        slots, valid = self._slots[cols], self._valid[cols]  # (P, K)
        inner, stride, apart = self._inner[cols], self._stride[cols], self._apart[cols]
        numeric = (self.q.space.cards[cols] == 0)[:, None]
        old_v, new_v = x[rows, cols][:, None], np.asarray(values)[:, None]
        old_code = np.where(numeric, interval_codes(old_v, inner, apart), old_v)
        new_code = np.where(numeric, interval_codes(new_v, inner, apart), new_v)
        old = self.cells[rows[:, None], slots]
        new = old + stride * (new_code - old_code).astype(np.int64)
        return slots, valid & (new != old), old, new

    def delta(self, x, rows, cols, values) -> np.ndarray:
        if not self.cells.size:  # nothing of this class is measured yet
            return np.zeros(len(rows))
        _, moved, old, new = self._moves(x, rows, cols, values)
        r, w, h = self.residual, self.weight, self.h
        change = w[old] * (2 * h * r[old] + h * h) + w[new] * (h * h - 2 * h * r[new])
        return np.where(moved, change, 0.0).sum(axis=1)

    def accept(self, x, row, col, value) -> None:
        if not self.cells.size:
            return
        slots, moved, old, new = self._moves(x, np.array([row]), np.array([col]),
                                             np.array([value]))
        m = moved[0]
        self.residual[old[0, m]] += self.h
        self.residual[new[0, m]] -= self.h
        self.cells[row, slots[0, m]] = new[0, m]


class _PredicateTracker(Tracker):
    """Prices an edit by evaluating the predicates on the old and new row: only the queries
    with weight (the measured ones) are looked at."""

    def __init__(self, queries: _Predicates, x, target, weight):
        self.q = queries
        self.active = np.flatnonzero(weight)
        answers = np.zeros(queries.size)  # unweighted queries never enter the loss
        answers[self.active] = queries.phi(x, self.active).mean(axis=0)
        super().__init__(x, target, weight, answers)

    def _flips(self, x, rows, cols, values) -> np.ndarray:
        old = x[rows]
        new = old.copy()
        new[np.arange(len(rows)), cols] = values
        a = self.active
        return (self.q.phi(new, a).astype(np.int8) - self.q.phi(old, a).astype(np.int8))

    def delta(self, x, rows, cols, values) -> np.ndarray:
        flips = self._flips(x, rows, cols, values)
        r, w, h = self.residual[self.active], self.weight[self.active], self.h
        return (flips != 0) @ (w * h * h) - flips @ (2 * h * w * r)

    def accept(self, x, row, col, value) -> None:
        flips = self._flips(x, np.array([row]), np.array([col]), np.array([value]))[0]
        self.residual[self.active] -= self.h * flips


class _Predicates(Workloads):
    def phi(self, x: np.ndarray, which: np.ndarray | None = None) -> np.ndarray:
        """(n, m) truth of each query (or of the queries ``which``) on each row."""
        raise NotImplementedError

    def counts(self, x: np.ndarray) -> np.ndarray:
        total = np.zeros(self.size)
        chunk = max(1, CELLS // self.size)  # rows per block: the (rows, m) truth table is big
        for start in range(0, len(x), chunk):
            total += self.phi(x[start:start + chunk]).sum(axis=0)
        return total


class Prefixes(_Predicates):
    """1{x_c = v and x_a < τ_a and x_b < τ_b}; ``c = -1`` drops the categorical condition.

    Queries sharing (a, τ_a, b, τ_b) and c form one workload (a row satisfies at most one of
    its values v, so Δ = √2); without c a query is its own workload (Δ = 1).
    """

    kind = "prefix"

    def __init__(self, space: Space, c, v, a, ta, b, tb, workload):
        arrays = [np.asarray(z) for z in (c, v, a, ta, b, tb, workload)]
        self.c, self.v, self.a, self.ta, self.b, self.tb, group = arrays
        if len(self.c) == 0:
            raise ParameterError("prefix queries need at least one query")
        if np.any(np.diff(group) < 0):
            raise ParameterError("prefix queries must be ordered by workload")
        self.space = space
        starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
        self.bounds = np.r_[starts, len(group)].astype(np.int64)
        sizes = np.diff(self.bounds)
        self.sensitivity = np.where(self.c[starts] >= 0, math.sqrt(2), 1.0)
        self.sensitivity[sizes == 1] = 1.0
        names = space.names
        self.labels = [f"{names[self.c[s]] + ', ' if self.c[s] >= 0 else ''}"
                       f"{names[self.a[s]]} < {self.ta[s]:.3f}, {names[self.b[s]]} < "
                       f"{self.tb[s]:.3f}" for s in starts]

    @classmethod
    def random(cls, space: Space, count: int, rng: np.random.Generator) -> Prefixes:
        """``count`` random prefixes (a, b with replacement, τ ~ U[0, 1]) each crossed with
        every value of a random categorical column (the paper's, which uses binary ones)."""
        if len(space.numeric) == 0:
            raise ParameterError("prefix queries need at least one numeric column")
        a = rng.choice(space.numeric, count)
        b = rng.choice(space.numeric, count)
        ta, tb = rng.random(count), rng.random(count)
        if len(space.categorical) == 0:
            return cls(space, np.full(count, -1), np.zeros(count), a, ta, b, tb, np.arange(count))
        c = rng.choice(space.categorical, count)
        reps = space.cards[c]
        group = np.repeat(np.arange(count), reps)
        v = np.concatenate([np.arange(k) for k in reps])
        return cls(space, np.repeat(c, reps), v, *(np.repeat(z, reps) for z in (a, ta, b, tb)),
                   group)

    def phi(self, x, which=None):
        sel = slice(None) if which is None else which
        c, v, a, ta, b, tb = (z[sel] for z in (self.c, self.v, self.a, self.ta, self.b, self.tb))
        hit = (x[:, a] < ta) & (x[:, b] < tb)
        return hit & ((c < 0) | (x[:, np.maximum(c, 0)] == v))


class Halfspaces(_Predicates):
    """1{⟨θ, onehot(x)⟩ ≤ τ}: a categorical column contributes θ at its code's coordinate, a
    numeric one θ times its value. Each query is its own workload (Δ = 1)."""

    kind = "halfspace"

    def __init__(self, space: Space, theta: np.ndarray, tau: np.ndarray):
        self.space = space
        width = np.maximum(space.cards, 1)
        self.offsets = np.r_[0, np.cumsum(width)[:-1]]
        if theta.shape != (len(tau), int(width.sum())):
            raise ParameterError(f"theta must have shape ({len(tau)}, {int(width.sum())})")
        self.theta, self.tau = theta, tau
        self.bounds = np.arange(len(tau) + 1, dtype=np.int64)
        self.sensitivity = np.ones(len(tau))
        self.labels = [f"halfspace {i}" for i in range(len(tau))]

    @classmethod
    def random(cls, space: Space, count: int, rng: np.random.Generator) -> Halfspaces:
        width = int(np.maximum(space.cards, 1).sum())
        theta = rng.normal(0, 1 / math.sqrt(space.d), (count, width))
        return cls(space, theta, rng.normal(size=count))

    def embed(self, x: np.ndarray) -> np.ndarray:
        """onehot(x): a category's coordinate is 1, a numeric column's is its value."""
        out = np.zeros((len(x), self.theta.shape[1]))
        for j in range(self.space.d):
            if self.space.cards[j]:
                out[np.arange(len(x)), self.offsets[j] + x[:, j].astype(np.int64)] = 1.0
            else:
                out[:, self.offsets[j]] = x[:, j]
        return out

    def phi(self, x, which=None):
        theta = self.theta if which is None else self.theta[which]
        tau = self.tau if which is None else self.tau[which]
        return self.embed(x) @ theta.T <= tau


# ---- building a query set -------------------------------------------------------------------


def parse_classes(text: str) -> list[str]:
    """'cat2+bt' → ['cat2', 'bt'], refusing unknown or repeated names."""
    names = [t.strip() for t in str(text).split("+") if t.strip()]
    bad = [t for t in names if t not in QUERY_CLASSES]
    if not names or bad:
        raise ParameterError(f"queries must be classes joined by '+', from {QUERY_CLASSES}; "
                             f"got {text!r}")
    if len(set(names)) != len(names):
        raise ParameterError(f"queries lists a class twice: {text!r}")
    return names


def plan_size(categorical: Sequence[bool], classes: Sequence[str], levels: int = 5,
              random_queries: int = 10_000) -> tuple[int, float]:
    """(number of workloads, largest Δ₂) that :func:`build` gives, from the column kinds
    alone: the noise can be previewed before any domain is known."""
    c = sum(map(bool, categorical))
    count, worst = 0, 0.0
    for name in classes:
        if name in MARGINAL_CLASSES:
            w, sens = workload_size(categorical, name, levels)
        else:
            w, sens = int(random_queries), math.sqrt(2) if name == "prefix" and c else 1.0
        count, worst = count + w, max(worst, sens)
    return count, worst


def narrowest(categorical: Sequence[bool], classes: Sequence[str], levels: int = 5) -> float:
    """A lower bound on the smallest Δ₂ of the workloads :func:`build` gives, from the column
    kinds alone: categorical marginals √2, range marginals √(2·levels), a random query at
    least 1. If even its noise drowns an answer, every workload's does."""
    smallest = math.inf
    for name in classes:
        if name in MARGINAL_CLASSES:
            w, sens = workload_size(categorical, name, levels)
            smallest = min(smallest, sens) if w else smallest
        else:
            smallest = min(smallest, 1.0)
    return smallest


def build(space: Space, classes: Sequence[str], rng: np.random.Generator, levels: int = 5,
          random_queries: int = 10_000, exact: int = 0) -> list[Workloads]:
    """The query classes named, over every eligible column tuple of ``space`` (a whole
    number of at most ``exact`` values has an interval per value at the finest level); a
    marginal class with no tuple here (``cat2`` on a table of numbers) is left out, as
    :func:`plan_size` counts it."""
    out: list[Workloads] = []
    categorical = list(space.cards > 0)
    for name in classes:
        if name in MARGINAL_CLASSES:
            if workload_size(categorical, name, levels)[0]:
                out.append(marginal_workloads(space, name, levels, exact))
        else:
            if int(random_queries) != random_queries or random_queries < 1:
                raise ParameterError(f"random_queries must be a positive integer, got "
                                     f"{random_queries!r}")
            maker = Prefixes if name == "prefix" else Halfspaces
            out.append(maker.random(space, int(random_queries), rng))
    return out


def track(q: Workloads, x: np.ndarray, target: np.ndarray, weight: np.ndarray) -> Tracker:
    """The tracker of ``q``'s loss on table ``x`` against ``target`` weighted by ``weight``."""
    if isinstance(q, Marginals):
        return _MarginalTracker(q, x, target, weight)
    return _PredicateTracker(q, x, target, weight)
