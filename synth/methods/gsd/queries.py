"""Statistical-query workloads for Private-GSD, and the loss a genetic search minimises.

Tables live in *GSD space*: an (n, d) float array where a categorical column holds its category
code and a numeric column its value scaled to [0, 1] over the public bounds (:class:`Space`).
Numbers are never discretised there; only the queries look at them through intervals.

A query class holds W *workloads*; workload w is a block of queries answered as fractions of
rows, with an L2 sensitivity ``sensitivity[w] / n`` for an n-row table with n public (one row
replaced). Four classes (Liu et al. 2023, §5.2 and the note's corrections):

* :class:`Marginals` (``cat2``, ``cat3``, ``bt``): k-way categorical marginals, Δ = √2, and
  2-way binary-tree range marginals over numeric columns, levels 1…L of 2^ℓ half-open intervals
  (the last one closed), Δ = √(2L), since a row lies in exactly one cell of each level;
* :class:`Prefixes`: 1{x_c = v, x_a < τ_a, x_b < τ_b}, a workload being one (a, τ_a, b, τ_b)
  crossed with every value v of c, Δ = √2;
* :class:`Halfspaces`: 1{⟨θ, onehot(x)⟩ ≤ τ}, θ_i ~ N(0, 1/d), τ ~ N(0, 1), each its own
  workload, Δ = 1.

The search needs the loss change of a one-cell edit without recomputing any statistic: each
class's :meth:`track` returns a tracker that keeps the residual r = â − Q(D) of the current best
table and prices P candidate edits at once. Like the loss, it looks only at measured
(weighted) queries: for marginals, the cells of the measured (workload, level) slots that
contain the edited column.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from synth.encoding import cell_index, finalize
from synth.errors import ParameterError
from synth.schema import CATEGORICAL, Schema

QUERY_CLASSES = ("cat2", "cat3", "bt", "prefix", "halfspace")
CHUNK = 4096  # rows per block when laying out a large table's cells (DP-Select's pool)
CELLS = 2**23  # entries per block of a (rows × queries) truth table or (rows × slots × k) cells
BOUND_ATOM = 0.2  # chance that a numeric mutation proposes one of the column's bounds


# ---- the space ------------------------------------------------------------------------------


class Space:
    """Table ⇄ GSD space, from the public schema only."""

    def __init__(self, schema: Schema):
        self.schema = schema
        self.names = schema.names
        # category count per column, 0 for a numeric column
        self.cards = np.array([len(c.categories) if c.kind == CATEGORICAL else 0
                               for c in schema], dtype=np.int64)
        self.categorical = np.flatnonzero(self.cards > 0)
        self.numeric = np.flatnonzero(self.cards == 0)
        # integer columns: the number of steps between their bounds (0: a continuous column)
        self.steps = np.array([
            round(c.upper - c.lower) if c.kind != CATEGORICAL and c.integer else 0
            for c in schema], dtype=np.int64)

    @property
    def d(self) -> int:
        return len(self.cards)

    def encode(self, frame: pd.DataFrame) -> np.ndarray:
        x = np.empty((len(frame), self.d))
        for j, col in enumerate(self.schema):
            values = frame[col.name]
            if col.kind == CATEGORICAL:
                x[:, j] = pd.Categorical(values, categories=list(col.categories)).codes
            else:
                width = col.upper - col.lower
                v = values.to_numpy(dtype=float) - col.lower
                x[:, j] = np.clip(v / width, 0, 1) if width > 0 else 0.0
        if (x < 0).any():
            j = int(np.flatnonzero((x < 0).any(axis=0))[0])
            raise ParameterError(f"column {self.names[j]!r} holds a value outside its categories")
        return x

    def decode(self, x: np.ndarray) -> pd.DataFrame:
        data = {}
        for j, col in enumerate(self.schema):
            if col.kind == CATEGORICAL:
                data[col.name] = np.asarray(col.categories, dtype=object)[x[:, j].astype(int)]
            else:
                data[col.name] = col.lower + x[:, j] * (col.upper - col.lower)
        return finalize(pd.DataFrame(data), self.schema)

    def random_values(self, cols: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One value v ~ U(X_j) per entry of ``cols``: a uniform code, or a uniform number
        (a whole number, for an integer column) that is one of the column's bounds with
        probability ``BOUND_ATOM``. Many real columns pile up at a bound (no capital gain,
        top-coded hours); without that atom their values would be smeared uniformly over the
        finest interval the queries see, and a tree trained on them splits on noise."""
        u = rng.random(len(cols))
        card, steps = self.cards[cols], self.steps[cols]
        number = np.where(steps > 0, np.floor(u * (steps + 1)) / np.maximum(steps, 1), u)
        atom = rng.random(len(cols)) < BOUND_ATOM
        number = np.where(atom, np.round(u), number)
        return np.where(card > 0, np.floor(u * card), number)

    def random(self, n: int, rng: np.random.Generator) -> np.ndarray:
        cols = np.tile(np.arange(self.d), n)
        return self.random_values(cols, rng).reshape(n, self.d)


# ---- query classes --------------------------------------------------------------------------


class Workloads:
    """Base class: ``bounds[w]:bounds[w+1]`` are workload w's queries in the answer vector."""

    kind: str
    bounds: np.ndarray
    sensitivity: np.ndarray  # L2 sensitivity of each workload in rows (divide by n)
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

    def track(self, x: np.ndarray, target: np.ndarray, weight: np.ndarray) -> Tracker:
        raise NotImplementedError


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


@dataclass(frozen=True)
class _Slot:
    """One level of one marginal workload: its columns, bins per column and first cell."""

    cols: tuple[int, ...]
    bins: tuple[int, ...]
    offset: int


def _layout(space: Space, tuples: Sequence[tuple[int, ...]], levels: int
            ) -> tuple[list[_Slot], np.ndarray, np.ndarray, list[str]]:
    """Per workload (a column tuple): its slots, one per level when a column is numeric, laid
    out one after another; returns the slots and the workloads' bounds, Δ₂ in rows, labels."""
    slots, bounds, sens, labels = [], [0], [], []
    offset = 0
    for cols in tuples:
        numeric = any(space.cards[c] == 0 for c in cols)
        for level in range(1, levels + 1) if numeric else [0]:
            bins = tuple(int(space.cards[c]) or 2**level for c in cols)
            slots.append(_Slot(tuple(cols), bins, offset))
            offset += math.prod(bins)
        bounds.append(offset)
        sens.append(math.sqrt(2 * (levels if numeric else 1)))
        labels.append(" × ".join(space.names[c] for c in cols))
    return slots, np.array(bounds, dtype=np.int64), np.array(sens), labels


def _strides(bins: np.ndarray) -> np.ndarray:
    """Row-major strides of each slot's cells, so the cell :func:`cell_index` gives is
    Σ code_t · stride_t: an edit of one code moves it by stride · Δcode."""
    strides = np.ones_like(bins)
    for t in range(bins.shape[1] - 2, -1, -1):
        strides[:, t] = strides[:, t + 1] * bins[:, t + 1]
    return strides


class Marginals(Workloads):
    """k-way marginals over column tuples; a numeric column is seen through 2^ℓ intervals of
    [0, 1] at each level ℓ = 1…``levels`` (a binary-tree marginal), a categorical one by its
    codes. A workload holds all cells of all its levels."""

    def __init__(self, space: Space, tuples: Sequence[tuple[int, ...]], levels: int = 5,
                 kind: str = "marginals"):
        if not tuples:
            raise ParameterError(f"query class {kind!r} has no column tuples on this table")
        if int(levels) != levels or not 1 <= levels <= 16:
            raise ParameterError(f"levels must be an integer between 1 and 16, got {levels!r}")
        self.kind, self.space, self.k = kind, space, len(tuples[0])
        self.slots, self.bounds, self.sensitivity, self.labels = _layout(space, tuples, levels)
        self._cols = np.array([sl.cols for sl in self.slots], dtype=np.int64)  # (S, k)
        self._bins = np.array([sl.bins for sl in self.slots], dtype=np.int64)
        self._strides = _strides(self._bins)
        self._offsets = np.array([sl.offset for sl in self.slots], dtype=np.int64)
        self._numeric = space.cards[self._cols] == 0

    def by_column(self, slots: np.ndarray) -> tuple[np.ndarray, ...]:
        """Per column, (d, K): the positions in ``slots`` of those that contain it (padded
        with 0), its stride and bins there, and which entries are real: an edit of the column
        touches only those."""
        d = self.space.d
        per_col = [np.argwhere(self._cols[slots] == j) for j in range(d)]  # (position, t)
        width = max(1, max(len(p) for p in per_col))
        where = np.zeros((d, width), dtype=np.int64)
        stride = np.zeros((d, width), dtype=np.int64)
        bins = np.ones((d, width), dtype=np.int64)
        valid = np.zeros((d, width), dtype=bool)
        for j, pairs in enumerate(per_col):
            i, t = pairs[:, 0], pairs[:, 1]
            where[j, : len(pairs)] = i
            stride[j, : len(pairs)] = self._strides[slots[i], t]
            bins[j, : len(pairs)] = self._bins[slots[i], t]
            valid[j, : len(pairs)] = True
        return where, stride, bins, valid

    def weighted(self, weight: np.ndarray) -> np.ndarray:
        """The slots holding a query of non-zero weight (the slots tile the answer vector)."""
        return np.flatnonzero(np.add.reduceat((weight != 0).astype(np.int64), self._offsets))

    def cells(self, x: np.ndarray, slots: np.ndarray | slice = slice(None)) -> np.ndarray:
        """(n, S) index of the cell each row falls in, for every slot (or those given)."""
        cols, bins = self._cols[slots], self._bins[slots]
        v = x[:, cols]  # (n, S, k)
        codes = np.where(self._numeric[slots], np.minimum(np.floor(v * bins), bins - 1), v)
        return cell_index(codes.astype(np.int64), bins) + self._offsets[slots]

    def counts(self, x: np.ndarray) -> np.ndarray:
        counts = np.zeros(self.size)
        block = max(1, CELLS // (len(self.slots) * self.k))  # rows: (rows, slots, k) is big
        for start in range(0, len(x), block):
            counts += np.bincount(self.cells(x[start:start + block]).ravel(),
                                  minlength=self.size)
        return counts

    def track(self, x, target, weight) -> _MarginalTracker:
        return _MarginalTracker(self, x, target, weight)


class _MarginalTracker(Tracker):
    """Keeps the cells of the weighted slots only: an adaptive search has measured a few of
    thousands of workloads, and the others never enter its loss."""

    def __init__(self, queries: Marginals, x, target, weight):
        self.q = queries
        slots = queries.weighted(weight)
        self.cells = queries.cells(x, slots)
        self._slots, self._stride, self._bins, self._valid = queries.by_column(slots)
        counts = np.bincount(self.cells.ravel(), minlength=queries.size)
        super().__init__(x, target, weight, counts / len(x))

    def _moves(self, x, rows, cols, values):
        slots, valid = self._slots[cols], self._valid[cols]  # (P, K)
        bins, stride = self._bins[cols], self._stride[cols]
        numeric = (self.q.space.cards[cols] == 0)[:, None]
        old_v, new_v = x[rows, cols][:, None], np.asarray(values)[:, None]
        old_code = np.where(numeric, np.minimum(np.floor(old_v * bins), bins - 1), old_v)
        new_code = np.where(numeric, np.minimum(np.floor(new_v * bins), bins - 1), new_v)
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

    def track(self, x, target, weight) -> _PredicateTracker:
        return _PredicateTracker(self, x, target, weight)


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
    d, c = len(categorical), sum(map(bool, categorical))
    count, worst = 0, 0.0
    for name in classes:
        if name in ("cat2", "cat3"):
            k = math.comb(c, int(name[-1]))
            count, worst = count + k, max(worst, math.sqrt(2) if k else 0.0)
        elif name == "bt":
            k = math.comb(d, 2) - math.comb(c, 2)
            count, worst = count + k, max(worst, math.sqrt(2 * levels) if k else 0.0)
        else:
            count += int(random_queries)
            worst = max(worst, math.sqrt(2) if name == "prefix" and c else 1.0)
    return count, worst


def narrowest(categorical: Sequence[bool], classes: Sequence[str], levels: int = 5) -> float:
    """A lower bound on the smallest Δ₂ of the workloads :func:`build` gives, from the column
    kinds alone: categorical marginals √2, range marginals √(2·levels), a random query at
    least 1. If even its noise drowns an answer, every workload's does."""
    d, c = len(categorical), sum(map(bool, categorical))
    smallest = math.inf
    for name in classes:
        if name in ("cat2", "cat3"):
            if math.comb(c, int(name[-1])):
                smallest = min(smallest, math.sqrt(2))
        elif name == "bt":
            if math.comb(d, 2) > math.comb(c, 2):
                smallest = min(smallest, math.sqrt(2 * levels))
        else:
            smallest = min(smallest, 1.0)
    return smallest


def build(space: Space, classes: Sequence[str], rng: np.random.Generator, levels: int = 5,
          random_queries: int = 10_000) -> list[Workloads]:
    """The query classes named, over every eligible column tuple of ``space``."""
    out: list[Workloads] = []
    cat = list(space.categorical)
    for name in classes:
        if name in ("cat2", "cat3"):
            k = int(name[-1])
            if len(cat) < k:
                raise ParameterError(f"query class {name!r} needs {k} categorical columns; the "
                                     f"table has {len(cat)}")
            out.append(Marginals(space, list(itertools.combinations(cat, k)), kind=name))
        elif name == "bt":
            pairs = [p for p in itertools.combinations(range(space.d), 2)
                     if space.cards[p[0]] == 0 or space.cards[p[1]] == 0]
            if not pairs:
                raise ParameterError("query class 'bt' needs a numeric column and a second "
                                     "column")
            out.append(Marginals(space, pairs, levels=levels, kind="bt"))
        else:
            if int(random_queries) != random_queries or random_queries < 1:
                raise ParameterError(f"random_queries must be a positive integer, got "
                                     f"{random_queries!r}")
            maker = Prefixes if name == "prefix" else Halfspaces
            out.append(maker.random(space, int(random_queries), rng))
    return out
