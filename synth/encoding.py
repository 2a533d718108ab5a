"""Table ⇄ model space, built from the schema only (never from the data).

:class:`Discretizer` maps each column to integer codes: categories by their index, numbers by
equal-width bins over the column's bounds, or, for integer columns with a small range, one code
per integer so point masses (an age of 40 hours a week, a capital gain of 0) survive exactly.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from synth.errors import SchemaError
from synth.schema import CATEGORICAL, MISSING, Column, Schema


class Discretizer:
    """Integer codes for every column of a schema whose domains are all known.

    ``bins`` is the number of equal-width bins per numeric column (an int, or a mapping from
    column name to int). Integer columns whose range holds at most ``exact_integers`` values
    get one code per value instead (0 turns that off).
    """

    def __init__(self, schema: Schema, bins: int | Mapping[str, int] = 10,
                 exact_integers: int = 0):
        self.schema = schema
        self.edges: dict[str, np.ndarray] = {}
        self.exact: set[str] = set()
        sizes = []
        for col in schema:
            if col.kind == CATEGORICAL:
                if not col.categories:
                    raise SchemaError(f"column {col.name!r} has no categories to encode")
                sizes.append(len(col.categories))
                continue
            if col.lower is None:
                raise SchemaError(f"column {col.name!r} has no bounds to encode")
            span = col.upper - col.lower
            if col.integer and exact_integers and span + 1 <= exact_integers:
                self.exact.add(col.name)
                sizes.append(round(span) + 1)
                continue
            b = bins.get(col.name, 10) if isinstance(bins, Mapping) else bins
            if int(b) < 1:
                raise SchemaError(f"column {col.name!r}: number of bins must be ≥ 1, got {b}")
            b = 1 if span == 0 else int(b)
            self.edges[col.name] = np.linspace(col.lower, col.upper, b + 1)
            sizes.append(b)
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
            if (codes < 0).any():
                bad = values[codes < 0].iloc[0]
                raise SchemaError(f"column {col.name!r}: value {bad!r} is not a known category")
            return codes.astype(np.int64)
        x = values.to_numpy(dtype=float)
        if col.name in self.exact:
            return np.clip(np.round(x - col.lower), 0, self.sizes[self._index(col)] - 1).astype(
                np.int64)
        edges = self.edges[col.name]
        b = len(edges) - 1
        if b == 1:
            return np.zeros(len(x), dtype=np.int64)
        scaled = (x - col.lower) / (col.upper - col.lower) * b
        return np.clip(np.floor(scaled), 0, b - 1).astype(np.int64)

    def _index(self, col: Column) -> int:
        return self.schema.names.index(col.name)

    def labels(self, name: str) -> list[str]:
        """Readable names of a column's codes: categories, integers or "[a, b)" bins."""
        col = self.schema[name]
        if col.kind == CATEGORICAL:
            return list(col.categories)
        if name in self.exact:
            return [f"{col.lower + k:g}" for k in range(self.sizes[self._index(col)])]
        e = self.edges[name]
        return [f"[{e[k]:.4g}, {e[k + 1]:.4g}{']' if k == len(e) - 2 else ')'}"
                for k in range(len(e) - 1)]

    def decode(self, codes: np.ndarray, rng: np.random.Generator) -> pd.DataFrame:
        """A prepared-style frame from codes; a binned number is drawn uniformly in its bin."""
        data = {}
        for j, col in enumerate(self.schema):
            c = codes[:, j]
            if col.kind == CATEGORICAL:
                data[col.name] = np.asarray(col.categories, dtype=object)[c]
            elif col.name in self.exact:
                data[col.name] = col.lower + c.astype(float)
            else:
                edges = self.edges[col.name]
                x = edges[c] + rng.random(len(c)) * (edges[c + 1] - edges[c])
                data[col.name] = np.round(x) if col.integer else x
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
