"""The one place where a table meets its schema: values checked, read and clipped into the
schema's domains, for a fit or a release."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from synth import dates
from synth.dates import DATETIME
from synth.errors import SchemaError
from synth.schema.infer import unseparated
from synth.schema.model import (
    CATEGORICAL,
    OTHER,
    Column,
    Schema,
    category_values,
    check_schema,
    check_table,
)


def check_columns(table: Any, schema: Any) -> None:
    """A DataFrame that has every column of a Schema, or an error naming what is missing."""
    check_table(table)
    check_schema(schema)
    missing_cols = [c.name for c in schema if c.name not in table.columns]
    if missing_cols:
        raise SchemaError(f"the table lacks schema columns {missing_cols}; "
                          f"it has {list(map(str, table.columns))[:20]}")



def prepare(table: pd.DataFrame, schema: Schema, *, released: bool = False) -> pd.DataFrame:
    """The table in the schema's terms: its columns in order, categoricals as strings (missing
    as ``<missing>``), numerics as floats clipped to their bounds (integers rounded), a missing
    number filled (``missing='fill'``) or kept as NaN (``'indicator'``). Every row is kept:
    n is public, so no row may be dropped for what it holds. Dates are read in their input
    format, or in their release format where the table is a release (``released``): the
    two orders may differ, and a date that reads in both would be misread.

    Every disagreement is collected and raised at once, each naming its column.
    """
    check_columns(table, schema)
    dupes = table.columns[table.columns.duplicated()].unique().tolist()
    if dupes:
        raise SchemaError(f"the table has duplicate column names: {dupes}")
    problems: list[str] = []
    out: dict[str, pd.Series] = {}
    for col in schema:
        values = table[col.name]
        if col.kind == CATEGORICAL:
            out[col.name] = _prepare_categorical(col, values, problems)
        elif col.kind == DATETIME:
            out[col.name] = _prepare_dates(col, values, problems, released)
        else:
            out[col.name] = _prepare_numeric(col, values, problems)
    if problems:
        raise SchemaError("the table disagrees with the schema: " + "; ".join(problems))
    return pd.DataFrame(out, index=table.index).reset_index(drop=True)


def validate(table: pd.DataFrame, schema: Schema) -> pd.DataFrame:
    """:func:`prepare` for a private input table, which must also have a usable target."""
    frame = prepare(table, schema)
    if frame.empty:
        raise SchemaError("the table has no rows")
    if schema.target is not None:
        check_target(frame, schema.target)
    return frame


def _prepare_categorical(col: Column, values: pd.Series, problems: list[str]) -> pd.Series:
    text = category_values(values)
    if col.categories is not None:
        known = set(col.categories)
        unseen = text[~text.isin(known)]
        if len(unseen):
            if OTHER in known:
                text = text.where(text.isin(known), OTHER)
            else:
                examples = sorted(unseen.unique())[:3]
                problems.append(
                    f"column {col.name!r}: {len(unseen)} values are not among its "
                    f"{len(known)} categories (e.g. {examples}); add them to the schema or "
                    f"add an {OTHER!r} category to absorb them")
    return text


def _prepare_numeric(col: Column, values: pd.Series, problems: list[str]) -> pd.Series:
    if pd.api.types.is_bool_dtype(values):
        problems.append(f"column {col.name!r}: holds true/false values but is declared numeric")
        return values.astype(float)
    if pd.api.types.is_numeric_dtype(values):
        numbers = values.astype(float)
        blank = numbers.isna()
    else:
        text = values.astype("string").str.strip()
        text = unseparated(text) if col.written_as_text else text
        blank = pd.Series((text.isna() | (text == "")).to_numpy(dtype=bool), index=values.index)
        numbers = pd.to_numeric(text.mask(blank), errors="coerce").astype(float)
        bad = numbers.isna() & ~blank
        if bad.any():
            examples = [str(v) for v in text[bad].unique()[:3]]
            problems.append(f"column {col.name!r}: {int(bad.sum())} values are not numbers "
                            f"(e.g. {examples})")
    infinite = np.isinf(numbers)
    if infinite.any():
        problems.append(f"column {col.name!r}: {int(infinite.sum())} values are infinite")
    return _bounded(col, numbers, blank, problems)


def _prepare_dates(col: Column, values: pd.Series, problems: list[str], released: bool
                   ) -> pd.Series:
    """A datetime column as units since the epoch (see :mod:`synth.dates`): read in its
    input format (or its release format, for a release read back) or ISO 8601. A value that
    is not a date is counted, never shown: dates are what identify people."""
    fmt = dates.release_format(col) if released else col.input_format
    units, blank, bad, zoned = dates.parse(values, col.granularity, col.timezone, fmt)
    if bad:
        read = f"({fmt!r})" if fmt else f"(ISO 8601) down to the {col.granularity}"
        problems.append(f"column {col.name!r}: {bad} values are not dates in its format {read}"
                        f" or are finer than a {col.granularity} (never cut silently); fix "
                        "them in the file, declare the format they are in (input_format), or "
                        "a finer granularity")
    if zoned:
        problems.append(f"column {col.name!r}: {zoned} values carry a time zone, but its "
                        "timezone is 'naive': declare timezone 'UTC' (they are converted to "
                        "UTC) or remove the zone from the file")
    numbers = pd.Series(units, index=values.index, dtype=float)
    return _bounded(col, numbers, pd.Series(blank, index=values.index), problems)


def _bounded(col: Column, numbers: pd.Series, blank: pd.Series, problems: list[str]
             ) -> pd.Series:
    """Numbers with their blanks filled or kept (by the missing policy), clipped to the
    column's bounds, rounded when whole."""
    if blank.any():
        if col.missing == "fill":
            numbers = numbers.fillna(col.fill_value)
        elif col.missing == "none":
            problems.append(f"column {col.name!r}: {int(blank.sum())} values are missing but its "
                            "schema says missing='none'; declare missing='indicator' (methods "
                            "learn where values are missing) or 'fill' with a public fill_value")
    if col.lower is not None:
        numbers = numbers.clip(col.lower, col.upper)
    if col.integer:
        numbers = numbers.round()
    return numbers


def check_target(table: pd.DataFrame, target: str) -> None:
    """A usable target has at least two classes in ``table``."""
    if target not in table.columns:
        raise SchemaError(f"target column {target!r} is not in the table")
    classes = table[target].dropna().unique()
    if len(classes) < 2:
        only = f" ({classes[0]!r})" if len(classes) else ""
        raise SchemaError(f"target column {target!r} has a single class{only}; "
                          "utility needs at least two")
