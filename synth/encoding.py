"""Table ⇄ model space, built from the schema only (never from the data).

:class:`Discretizer` maps each column to integer codes: categories by their index, numbers by
bins over the column's bounds. Numbers can be binned so that point masses survive exactly:
one code per integer when an integer range is small (an age, 40 hours a week), one-value bins
at both bounds otherwise (a capital gain of 0, a top-coded 99,999), and a float's 0 alone (a
claim amount of 0).

:class:`Space` keeps numbers as numbers: a categorical column holds its code and a numeric
column its value scaled to [0, 1] over the public bounds. Private-GSD searches there, and
DP-Select's measure engine weighs its pool there; only the queries
(:class:`synth.marginals.Marginals`) look at numbers through intervals.

Counting codes by a tuple of columns is :mod:`synth.marginals`' job.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from synth.errors import ParameterError, SchemaError
from synth.schema import CATEGORICAL, DIGITS, MISSING, Column, Schema
from synth.validation import Param

BOUND_ATOM = 0.2  # chance that a random numeric value is one of the column's bounds


class Space:
    """Table ⇄ the unit-interval space, from the public schema only: an (n, d) float array
    whose categorical columns hold codes and numeric columns values in [0, 1]."""

    def __init__(self, schema: Schema):
        self.schema = schema
        self.names = schema.names
        # category count per column, 0 for a numeric column
        self.cards = np.array([len(c.categories) if c.kind == CATEGORICAL else 0
                               for c in schema], dtype=np.int64)
        self.categorical = np.flatnonzero(self.cards > 0)
        self.numeric = np.flatnonzero(self.cards == 0)
        # integer columns: the number of steps between their bounds (0: a continuous column,
        # or bounds a plan has yet to learn)
        self.steps = np.array([
            round(c.upper - c.lower) if c.kind != CATEGORICAL and c.integer
            and c.lower is not None else 0 for c in schema], dtype=np.int64)

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


def _edges(col: Column, bins: int, exact_integers: int) -> np.ndarray:
    """Bin edges of a numeric column; bin k is [e_k, e_k+1), the last one closed.

    In shape-aware mode (``exact_integers`` > 0) point masses keep a bin of their own.
    Integer columns get integer edges over [lower, upper + 1): one bin per value in a small
    range, otherwise about ``bins`` bins with each bound a one-value bin (a capital gain of
    0, a top-coded 99,999); every bin holds whole numbers, so decoding never invents
    fractions. A float gets its ``bins`` equal bins and, where its range holds 0, a bin
    [0, the next float) for 0 alone (splitting the equal bin that held it): real amounts and
    balances pile up there (no claim, an empty account), and an 85 % zero claim amount was
    released with no zeros at all, drawn across the first of 32 bins. (A bin for each bound
    instead cost MST a tenth on pairs where learned bounds lie beyond the data: noise in
    two empty cells, released on them.)
    """
    lo, hi = col.lower, col.upper
    if not exact_integers or (hi == lo and not col.integer):
        return np.linspace(lo, hi, (1 if hi == lo else bins) + 1)
    if not col.integer:
        edges = np.linspace(lo, hi, bins + 1)
        if lo <= 0 <= hi:  # an edge a rounding away from 0 is 0: no sliver of a bin beside it
            edges[np.abs(edges) <= 4 * np.finfo(float).eps * max(-lo, hi)] = 0.0
            edges = np.unique(np.concatenate([edges, [0.0, np.nextafter(0.0, np.inf)]]))
        return edges
    lo, hi = int(np.ceil(lo)), int(np.floor(hi))
    if hi - lo + 1 <= exact_integers or hi - lo + 1 <= bins:
        return np.arange(lo, hi + 2, dtype=float)
    inner = np.round(np.linspace(lo + 1, hi, max(bins - 1, 2)))
    return np.unique(np.concatenate([[lo], inner, [hi, hi + 1]])).astype(float)


def _one_value(edges: np.ndarray) -> np.ndarray:
    """Which bins of a float's ``edges`` hold one value alone: [0, the next float) for 0."""
    return edges[1:] == np.nextafter(edges[:-1], np.inf)


# the parameters of a method that counts a Discretizer's codes (independent, MST, AIM)
BINS = Param("bins", int, low=1, advanced=False, label="Bins per numeric column",
             help="Equal-width bins over each numeric column's bounds: more bins keep more "
                  "detail, and spread the noise over more cells.")
EXACT_INTEGERS = Param("exact_integers", int, low=0, label="Exact integers up to",
                       help="Integer columns with at most this many values get a cell per "
                            "value, so spikes such as 40 hours a week survive; 0 bins every "
                            "numeric column.")


class Discretizer:
    """Integer codes for every column of a schema whose domains are all known.

    ``bins`` is the number of equal-width bins per numeric column (an int, or a mapping from
    column name to int). ``exact_integers`` > 0 makes the bins shape-aware: an integer
    column gets one code per value when its range holds at most that many values, a wider
    one about ``bins`` integer bins with the two bounds as one-value bins of their own, and
    a float ``bins`` equal bins and a bin of its own for 0 where its range holds 0. 0 bins
    every number equally.
    """

    def __init__(self, schema: Schema, bins: int | Mapping[str, int] = 10,
                 exact_integers: int = 0):
        self.schema = schema
        self.edges: dict[str, np.ndarray] = {}
        sizes = []
        for col in schema:
            if col.kind == CATEGORICAL:
                if not col.categories:
                    raise SchemaError(f"column {col.name!r} has no categories to encode")
                sizes.append(len(col.categories))
                continue
            if col.lower is None:
                raise SchemaError(f"column {col.name!r} has no bounds to encode")
            b = bins.get(col.name, 10) if isinstance(bins, Mapping) else bins
            if int(b) != b or b < 1:
                raise SchemaError(f"column {col.name!r}: number of bins must be an integer ≥ 1, "
                                  f"got {b!r}")
            self.edges[col.name] = edges = _edges(col, int(b), exact_integers)
            sizes.append(len(edges) - 1)
        self.sizes = np.array(sizes, dtype=np.int64)

    def codes(self, frame: pd.DataFrame) -> np.ndarray:
        """(n, d) int64 codes of a prepared frame (see :func:`synth.schema.prepare`)."""
        out = np.empty((len(frame), len(self.schema)), dtype=np.int64)
        for j, col in enumerate(self.schema):
            out[:, j] = self._column_codes(col, frame[col.name])
        return out

    def _column_codes(self, col: Column, values: pd.Series) -> np.ndarray:
        if col.kind == CATEGORICAL:
            codes = pd.Categorical(values, categories=list(col.categories)).codes
            if (codes < 0).any():  # the value itself is private: not quoted
                raise SchemaError(f"column {col.name!r} has a value that is not one of its "
                                  "categories")
            return codes.astype(np.int64)
        edges = self.edges[col.name]
        x = values.to_numpy(dtype=float)
        if np.isnan(x).any():
            raise SchemaError(f"column {col.name!r} has missing values: put the frame in model "
                              "space first (synth.missing.model_frame)")
        codes = np.searchsorted(edges, x, side="right") - 1
        return np.clip(codes, 0, len(edges) - 2).astype(np.int64)

    def labels(self, name: str) -> list[str]:
        """Readable names of a column's codes: categories, whole numbers ("40", "18–21" or
        "-20 to 349": the first and last a bin holds, as :meth:`decode` draws them) or
        "[a, b)" bins."""
        col = self.schema[name]
        if col.kind == CATEGORICAL:
            return list(col.categories)
        e = self.edges[name]
        if col.integer and np.all(np.diff(e) == 1) and e[-1] > col.upper:
            return [f"{v:g}" for v in e[:-1]]
        if col.integer:
            first, last = np.ceil(e[:-1]), np.append(np.ceil(e[1:-1]) - 1, np.floor(e[-1]))
            if np.all(last >= first):  # every bin holds a whole number: name them
                return [f"{a:g}" if a == b else f"{a:g}{'–' if a >= 0 else ' to '}{b:g}"
                        for a, b in zip(first, last, strict=True)]
        alone = _one_value(e)
        return [f"{e[k]:.4g}" if alone[k] else
                (f"({e[k - 1]:.4g}, " if k and alone[k - 1] else f"[{e[k]:.4g}, ")
                + f"{e[k + 1]:.4g}{']' if k == len(e) - 2 else ')'}"
                for k in range(len(e) - 1)]

    def decode(self, codes: np.ndarray, rng: np.random.Generator) -> pd.DataFrame:
        """A prepared-style frame from codes; a number is drawn uniformly in its bin (a whole
        number, for integer columns: a one-value bin gives back exactly that value, as does a
        float's bin for 0)."""
        data = {}
        for j, col in enumerate(self.schema):
            c = codes[:, j]
            if col.kind == CATEGORICAL:
                data[col.name] = np.asarray(col.categories, dtype=object)[c]
                continue
            edges = self.edges[col.name]
            a, b = edges[c], edges[c + 1]
            if col.integer:
                first = np.ceil(a)
                last = np.where(c == len(edges) - 2, np.floor(b), np.ceil(b) - 1)
                last = np.maximum(np.minimum(last, np.floor(col.upper)), first)
                data[col.name] = first + np.floor(rng.random(len(c)) * (last - first + 1))
            else:  # a one-value bin gives the value itself
                data[col.name] = np.where(_one_value(edges)[c], a,
                                          a + rng.random(len(c)) * (b - a))
        return pd.DataFrame(data)


def finalize(frame: pd.DataFrame, schema: Schema) -> pd.DataFrame:
    """A prepared-style frame in the user's terms: the schema's columns in order, integers as
    int64 within bounds, floats as float64, categories as strings with ``<missing>`` as NaN."""
    out = {}
    for col in schema:
        values = frame[col.name]
        if col.kind == CATEGORICAL:
            out[col.name] = values.astype(object).where(values != MISSING, np.nan)
        else:
            x = values.to_numpy(dtype=float)
            if col.lower is not None:
                x = np.clip(x, col.lower, col.upper)
            out[col.name] = np.round(x).astype(np.int64) if col.integer else x
    return pd.DataFrame(out)


def significant(values: np.ndarray, digits: int, how=np.round) -> np.ndarray:
    """``values`` rounded to ``digits`` significant digits (0 and NaN as they are), to the
    nearest or by ``how`` (np.floor, np.ceil)."""
    x = np.asarray(values, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = 10.0 ** (digits - 1 - np.floor(np.log10(np.abs(x))))
        out = how(x * scale) / scale
    return np.where(np.isfinite(out), out, x)


def rounded(frame: pd.DataFrame, schema: Schema) -> pd.DataFrame:
    """A release's numbers that are not whole at their column's declared precision
    (:attr:`~synth.schema.Column.digits`, by default :data:`~synth.schema.DIGITS`
    significant digits): a synthetic value carries no more precision than the steward
    declared, and its CSV no 16-digit tails."""
    out = frame.copy()
    for col in schema:
        if col.kind != CATEGORICAL and not col.integer and col.name in out.columns:
            out[col.name] = within(out[col.name].to_numpy(dtype=float), col.digits or DIGITS,
                                   col.lower, col.upper)
    return out


def within(values: np.ndarray, digits: int, lower: float | None, upper: float | None
           ) -> np.ndarray:
    """``values`` at ``digits`` significant digits and still within [lower, upper]: one
    that rounds past a bound (155871.75 to 155872) is rounded towards the inside instead
    (155871), or is the bound itself where no value at that precision lies inside."""
    out = significant(values, digits)
    if lower is None:
        return out
    high, low = out > upper, out < lower
    out[high] = np.maximum(significant(values[high], digits, np.floor), lower)
    out[low] = np.minimum(significant(values[low], digits, np.ceil), upper)
    return np.clip(out, lower, upper)


def model_width(schema: Schema, bins: int, exact_integers: int = 0) -> int:
    """How many codes a :class:`Discretizer` of ``schema`` would hold, at most, worked out
    without building its edges (a memory model must price ``bins = 10**12`` before any
    array of that size is made)."""
    return sum(column_widths(schema, bins, exact_integers))


def column_widths(schema: Schema, bins: int, exact_integers: int = 0) -> list[int]:
    """:func:`model_width` column by column (a marginal's cells are their product)."""
    widths = []
    for col in schema:
        if col.kind == CATEGORICAL:
            widths.append(max(len(col.categories or ()), 1))
        elif col.integer and col.lower is not None and (
                col.upper - col.lower + 1 <= exact_integers):
            widths.append(int(col.upper - col.lower + 1))
        elif col.integer and col.lower is None:  # bounds still to be learned: the widest
            widths.append(max(int(bins) + 2, int(exact_integers)))
        else:
            widths.append(int(bins) + 2)
    return widths
