"""Missing numbers as values, so that no row is ever dropped and n stays the public n.

A numeric column declared ``missing='indicator'`` becomes two columns in model space: the
number, with missing ones replaced by a placeholder (the column's lower bound), and a public
yes/no column saying where it was missing. Methods learn that column like any other (its
marginals and its correlations with the rest); sampling turns "yes" back into an empty cell,
unless a run learned privately that the column has no blanks (``blanks=False``, see
:mod:`synth.privacy.domains`): then the release has none there.

A datetime column is a whole number to the methods: units of its granularity counted from
its public origin (:mod:`synth.dates`); :func:`decode` counts them from the epoch again.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from synth import dates
from synth.errors import SchemaError
from synth.schema import CATEGORICAL, DATETIME, NUMERIC, Column, Schema, prepare

PRESENT, ABSENT = "present", "missing"


def indicator_name(schema: Schema, name: str) -> str:
    """The model-space name of ``name``'s indicator, clear of every other column name."""
    out = f"{name} (missing)"
    while out in schema.names:
        out += "'"
    return out


def _indicated(schema: Schema) -> list[Column]:
    return [c for c in schema if c.kind != CATEGORICAL and c.missing == "indicator"]


def _dated(schema: Schema) -> list[Column]:
    return [c for c in schema if c.kind == DATETIME]


def _counted(col: Column) -> Column:
    """A datetime column as the methods see it: a whole number of units from its origin
    (:func:`synth.dates.origin_of`), with the same bounds, blanks and missing policy."""
    origin = dates.origin_of(col) or 0.0

    def shift(value: float | None) -> float | None:
        return None if value is None else value - origin

    return Column(col.name, NUMERIC, lower=shift(col.lower), upper=shift(col.upper),
                  public=col.public, integer=True, missing=col.missing,
                  fill_value=shift(col.fill_value), learned=col.learned,
                  proposed=col.proposed, flags=col.flags, blanks=col.blanks)


def model_schema(schema: Schema) -> Schema:
    """``schema`` as the methods see it: a datetime column as whole units from its origin
    (a numeric column), and an indicator column after every ``missing='indicator'``
    column."""
    if not _indicated(schema) and not _dated(schema):
        return schema
    columns: list[Column] = []
    for col in schema:
        columns.append(_counted(col) if col.kind == DATETIME else col)
        if col.kind != CATEGORICAL and col.missing == "indicator":
            columns.append(Column(indicator_name(schema, col.name), CATEGORICAL,
                                  categories=(PRESENT, ABSENT), public=True))
    return replace(schema, columns=tuple(columns))


def encode(frame: pd.DataFrame, schema: Schema) -> pd.DataFrame:
    """A prepared frame in model space: dates counted from their origin, and each indicated
    NaN the placeholder plus "yes" in its indicator column (see :func:`model_schema`)."""
    indicated, dated = _indicated(schema), _dated(schema)
    if not indicated and not dated:
        return frame
    out = frame.copy()
    for col in dated:
        out[col.name] = out[col.name] - (dates.origin_of(col) or 0.0)
    model = model_schema(schema)
    for col in indicated:
        if col.lower is None:
            raise SchemaError(f"column {col.name!r} needs bounds before its missing values "
                             "can be encoded")
        absent = out[col.name].isna()
        out[col.name] = out[col.name].fillna(model[col.name].lower)
        out[indicator_name(schema, col.name)] = np.where(absent, ABSENT, PRESENT).astype(object)
    return out[model.names]


def decode(frame: pd.DataFrame, schema: Schema, rng: np.random.Generator | None = None
           ) -> pd.DataFrame:
    """A model-space frame in the user's terms: dates back to units since the epoch
    (:func:`synth.dates.released` writes them as text), indicated values blanked,
    indicators dropped; an integer column with blanks becomes pandas' nullable ``Int64``.
    In a column learned to have no blanks (``blanks=False``) a row flagged missing takes
    the value of another row drawn with ``rng`` (post-processing: no blank, and no pile-up
    at the placeholder)."""
    indicated, dated = _indicated(schema), _dated(schema)
    if not indicated and not dated:
        return frame
    out = frame.copy()
    for col in dated:
        out[col.name] = out[col.name].to_numpy(dtype=float) + (dates.origin_of(col) or 0.0)
    for col in indicated:
        flag = indicator_name(schema, col.name)
        absent = (out[flag] == ABSENT).to_numpy()
        if col.blanks:
            out[col.name] = out[col.name].astype("Int64" if col.integer else float).mask(absent)
            continue
        values = out[col.name].to_numpy(dtype=float, copy=True)
        donors = values[~absent] if (~absent).any() else values
        rng = np.random.default_rng() if rng is None else rng
        values[absent] = rng.choice(donors, size=int(absent.sum()))
        out[col.name] = values.round().astype(np.int64) if col.integer else values
    return out[schema.names]


def model_frame(table: pd.DataFrame, schema: Schema, *, released: bool = False
                ) -> pd.DataFrame:
    """``table`` (a release's, ``released``, or the private one) prepared against ``schema``
    and put in model space (for :func:`model_schema`)."""
    return encode(prepare(table, schema, released=released), schema)
