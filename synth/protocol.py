"""The measuring protocol of DESIGN.md: the Adult split and its public schema.

Benchmarks, tests and the CLI all take the split and schema from here, so every figure is
measured the same way; a run holds out the split's test sixth through
:func:`synth.runs.split`.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from synth.errors import DataError
from synth.schema import CATEGORICAL, NUMERIC, Column, Schema, infer_schema

MIN_ROWS = 4  # the fewest rows whose ⌊4n/6⌋ / ⌊5n/6⌋ cuts leave no part empty
ADULT_TARGET = "income"
ADULT_BOUNDS = {
    "age": (17, 90),
    "fnlwgt": (0, 1_500_000),
    "education-num": (1, 16),
    "capital-gain": (0, 99_999),
    "capital-loss": (0, 4_356),
    "hours-per-week": (1, 99),
}


def cut_points(n: int) -> tuple[int, int]:
    """Where the protocol cuts n shuffled rows: train ends at ⌊4n/6⌋, validation at ⌊5n/6⌋."""
    return 4 * n // 6, 5 * n // 6


def protocol_split(table: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(train, validation, test): shuffle with default_rng(0), then :func:`cut_points`."""
    n = len(table)
    if n < MIN_ROWS:
        raise DataError(f"the protocol split needs at least {MIN_ROWS} rows (train, validation "
                        f"and test each get one), but the table has {n}")
    order = np.random.default_rng(0).permutation(n)
    a, b = cut_points(n)
    parts = (order[:a], order[a:b], order[b:])
    return tuple(table.iloc[p].reset_index(drop=True) for p in parts)


def adult_schema(table: pd.DataFrame) -> Schema:
    """Adult's public schema: the protocol's numeric bounds, every other column categorical
    with its categories declared public ("?" is a category of its own)."""
    inferred = infer_schema(table)
    columns = []
    for col in inferred:
        if col.name in ADULT_BOUNDS:
            lo, hi = ADULT_BOUNDS[col.name]
            columns.append(Column(col.name, NUMERIC, lower=lo, upper=hi, integer=True,
                                  public=True))
        else:
            cats = col.categories if col.kind == CATEGORICAL else tuple(
                str(v) for v in sorted(table[col.name].dropna().unique()))
            columns.append(Column(col.name, CATEGORICAL, categories=cats, public=True))
    return replace(Schema(tuple(columns)), target=ADULT_TARGET)
