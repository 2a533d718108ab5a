"""Declaring domains public: what exactly is published, and when it gives the table away.

A public domain is released as is. Bounds proposed by :func:`synth.schema.infer_schema` are
the table's own minimum and maximum, and a proposed category list is the exact set of values
present: publishing either publishes the most extreme records and the rarest values. So a
declaration is shown with the exact values it publishes and warned about when it matches the
table. Rounded ("nice") bounds hide the exact extremes, but bounds chosen by looking at the
table still say roughly how far it reaches (one record far out moves them), so they are
warned about too: a public domain should come from a codebook, not from the data.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import replace

import numpy as np
import pandas as pd

from synth import dates
from synth.schema import (
    CATEGORICAL,
    DATETIME,
    MISSING,
    OTHER,
    Column,
    Schema,
    category_values,
    infer_schema,
)

RARE = 5  # a category held by fewer rows is called rare in warnings
# a shortcut (--public categories or all) never declares a category list longer than this
# share of the rows: so many categories are nearly the rows themselves
SHORTCUT_SHARE = 0.1
_NEVER_SHORTCUT = ("identifier-like", "numbers stored as text")


def shortcut(schema: Schema, table: pd.DataFrame, names: Iterable[str]
             ) -> tuple[list[str], dict[str, str]]:
    """(the columns of ``names`` a declaration shortcut may declare public, why each other
    one is left undeclared): never an identifier-like column, numbers read as text, or a
    category list longer than :data:`SHORTCUT_SHARE` of the rows, as the table shows them
    now (whatever flags the schema file kept). Publishing such a list publishes the rows'
    identifiers or amounts; the steward may still name one deliberately."""
    names = [n for n in names if n in schema.names]
    seen = infer_schema(table[[n for n in names if n in table.columns]]) if names else None
    kept, skipped = [], {}
    for name in names:
        flags = seen[name].flags if seen is not None and name in seen.names else ()
        why = next((kind for kind in _NEVER_SHORTCUT for f in flags if f.startswith(kind)),
                   None)
        col = schema[name]
        if why is None and col.kind == CATEGORICAL and col.categories is not None and len(
                col.categories) > SHORTCUT_SHARE * len(table):
            why = (f"{len(col.categories):,} categories, over {SHORTCUT_SHARE:.0%} of its "
                   f"{len(table):,} rows")
        if why is None:
            kept.append(name)
        else:
            skipped[name] = why
    return kept, skipped


SHORTCUTS = ("all", "categories", "known")  # --public words that name no column


def by_shortcut(schema: Schema, table: pd.DataFrame, words: Iterable[str]
                ) -> tuple[list[str], dict[str, tuple[str, str]]]:
    """(the columns ``words`` of :data:`SHORTCUTS` declare public, (the word, why) for each
    column a word covers but leaves undeclared): 'known' every domain proposed from a
    name's meaning, 'categories' or 'all' what :func:`shortcut` lets them publish."""
    public: list[str] = []
    skipped: dict[str, tuple[str, str]] = {}
    for word in words:
        if word == "known":
            public += [c.name for c in schema if c.meaning]
            continue
        kept, left = shortcut(schema, table, [c.name for c in schema
                                              if word == "all" or c.kind == CATEGORICAL])
        public += kept
        skipped.update({name: (word, why) for name, why in left.items()})
    return list(dict.fromkeys(public)), skipped


def nice_bounds(lower: float, upper: float) -> tuple[float, float]:
    """[lower, upper] widened outward to multiples of a round step (1, 2 or 5 × 10^k, about a
    tenth of the largest magnitude), strictly beyond both values except a floor of 0 for
    non-negative data: 17–90 gives 10–100, 3–987,654 gives 0–1,000,000."""
    scale = max(abs(lower), abs(upper), upper - lower)
    if scale < 1e-9:  # zero, or too small for a round step: the unit interval around it
        return -1.0, 1.0
    power = 10.0 ** math.floor(math.log10(scale))
    step = next(m * power for m in (0.1, 0.2, 0.5, 1.0) if scale / (m * power) <= 10)
    digits = max(0, 1 - math.floor(math.log10(step)))  # 0.30000000000000004 → 0.3
    lo = round(math.floor(lower / step) * step, digits)
    hi = round(math.ceil(upper / step) * step, digits)
    if lo >= lower and lower != 0:
        lo = round(lo - step, digits)
    if hi <= upper:
        hi = round(hi + step, digits)
    if lower >= 0:
        lo = max(lo, 0.0)
    return float(lo), float(hi)


def nice_dates(lower: float, upper: float, granularity: str) -> tuple[float, float]:
    """Date bounds (units since the epoch at ``granularity``) widened outward, strictly
    beyond both, to years' starts and ends at multiples of a round step (1, 2 or 5 × 10^k
    years, about a tenth of the span, at least a year: whole years would give the extreme
    records' years away), within the dates a column may hold (:func:`synth.dates.limits`,
    where a bound cannot lie beyond the data). 2020-03-14 to 2022-11-02 gives 2020-01-01 to
    2022-12-31; 1923-08-02 to 2001-05-17 gives 1920-01-01 to 2009-12-31."""
    stamps = dates.stamps_of(np.array([lower, upper]), granularity)
    span = max((stamps[1] - stamps[0]) / pd.Timedelta(days=365.25), 1.0)
    power = 10 ** math.floor(math.log10(span))
    step = max(1, round(next(m * power for m in (0.1, 0.2, 0.5, 1.0) if span / (m * power)
                             <= 10)))
    first, last = (stamps.year[0] // step) * step, (stamps.year[1] // step + 1) * step
    lo = dates.year_start(first, granularity)
    if lo >= lower:
        lo = dates.year_start(first - step, granularity)
    hi = dates.year_start(last, granularity) - 1  # the last unit before the next step
    if hi <= upper:
        hi = dates.year_start(last + step, granularity) - 1
    least, most = dates.limits(granularity)
    return max(lo, least), min(hi, most)


def published(col: Column) -> str:
    """What a column publishes, in words: a public domain exactly, and for a date column every
    field its release carries (granularity, time zone, release format, a declared origin, a
    fill date), public bounds or not: each is released as is."""
    if col.kind == CATEGORICAL:
        return f"categories {list(col.categories or ())}"
    if col.kind == DATETIME:
        clock = col.format in dates.CLOCKS
        return (f"{'times of day' if clock else 'dates'} by {col.granularity}"
                + (f" in [{col.shown(col.lower)}, {col.shown(col.upper)}]"
                   if col.releasable and col.lower is not None else "")
                + f", time zone {col.timezone}, released as {dates.release_format(col)!r}"
                + (f", counted from the public origin {col.shown(col.origin)}"
                   if col.origin is not None else "")
                + (f", a missing date filled with {col.shown(col.fill_value)}"
                   if col.missing == "fill" else ""))
    kind = "whole numbers" if col.integer else "numbers"
    return f"{kind} in [{col.lower:g}, {col.upper:g}]"


def declaration(col: Column) -> str:
    """What confirming ``col`` declares, in words: kind, integer flag, missing values, domain
    (a date column's released fields too, see :func:`published`)."""
    if col.kind == CATEGORICAL:
        what = "categorical (a missing value is the category '<missing>')"
    elif col.kind == DATETIME:
        what = f"datetime, a missing value: {col.missing}"
    else:
        what = (f"numeric, {'whole numbers' if col.integer else 'any real number'}"
                f", a missing value: {col.missing}"
                + (f" {col.shown(col.fill_value)}" if col.missing == "fill" else ""))
    if col.public:
        domain = f"public {published(col)}"
    else:
        domain = "domain learned privately" + (
            f"; {published(col)}" if col.kind == DATETIME else "")
    return f"{col.name}: {what}; {domain}"


def present_numbers(col: Column, values: pd.Series, released: bool = False) -> np.ndarray:
    """A number's or a date's readable present values as numbers (dates as units since the
    epoch, read as the private table writes them, or in the release's format where
    ``released``); anything unreadable left out."""
    if col.kind == DATETIME:
        fmt = dates.release_format(col) if released else col.input_format
        units = dates.parse(values, col.granularity, col.timezone, fmt)[0]
        return units[~np.isnan(units)]
    return pd.to_numeric(values, errors="coerce").dropna().to_numpy(dtype=float)


def _nice(col: Column, lower: float, upper: float) -> tuple[float, float]:
    if col.kind == DATETIME:
        return nice_dates(lower, upper, col.granularity)
    return nice_bounds(lower, upper)


def warnings(schema: Schema, table: pd.DataFrame) -> list[str]:
    """For each public domain, declared origin or fill date that matches the private table: a
    one-line warning naming the column and what it gives away (for the steward: these read
    the table)."""
    out = []
    for col in schema:
        if col.name not in table.columns:
            continue
        values = table[col.name]
        present = present_numbers(col, values) if col.kind != CATEGORICAL else None
        if col.kind == DATETIME:  # released whether or not the bounds are public
            out += _fixed_dates(col, present)
        if not col.public or col.meaning:  # a meaning's domain says nothing of the table
            continue
        if col.kind == CATEGORICAL:
            counts = category_values(values).value_counts()
            seen = set(counts.index) - {MISSING}
            declared = set(col.categories or ()) - {MISSING, OTHER}
            rare = int((counts.drop(MISSING, errors="ignore") < RARE).sum())
            if declared and declared == seen and rare:  # common values identify no one
                out.append(f"column {col.name!r}: the public categories are exactly the "
                           f"{len(seen)} values in the table, {rare} of them held by fewer than "
                           f"{RARE} rows: publish them only if a codebook lists them all, or "
                           "add 'other' and leave rare ones out")
            continue
        if present.size == 0 or col.lower is None:
            continue
        hits = [f"{name} {col.shown(bound)} is the table's {which}"
                for name, bound, which, value in (("lower", col.lower, "minimum", present.min()),
                                                  ("upper", col.upper, "maximum", present.max()))
                if bound == value and (bound != 0 or col.kind == DATETIME)]
        lo, hi = _nice(col, float(present.min()), float(present.max()))
        if hits:
            out.append(f"column {col.name!r}: {' and '.join(hits)}, so publishing it publishes "
                       f"a real record; round it to [{col.shown(lo)}, {col.shown(hi)}] (nice "
                       "bounds), or leave the domain to be learned privately"
                       + _at_limits(col, present))
        elif (col.lower, col.upper) == (lo, hi):
            out.append(f"column {col.name!r}: [{col.shown(col.lower)}, {col.shown(col.upper)}] "
                       "is the table's own range rounded: it still tells roughly how far the "
                       "data reaches; keep it only if a codebook gives that range, or leave "
                       "the domain to be learned privately")
    return out


def _at_limits(col: Column, present: np.ndarray) -> str:
    """What to say of a date column whose values reach the first or last date a column may
    hold (a placeholder such as 9999-12-31): no bound can lie beyond them."""
    if col.kind != DATETIME:
        return ""
    first, last = dates.limits(col.granularity)
    said = [f"no {side} bound lies beyond {col.shown(limit)}, the {which} date a column may "
            "hold" for side, limit, which, reached in (
                ("lower", first, "first", present.min() <= first),
                ("upper", last, "last", present.max() >= last)) if reached]
    return (f" ({'; '.join(said)}: a placeholder date? leave such values blank and declare "
            "missing values instead)") if said else ""


def _fixed_dates(col: Column, present: np.ndarray) -> list[str]:
    """Warnings for a date column's declared origin and fill date where the table holds
    them: each is released as is, so it would publish a real record."""
    out = []
    for name, value in (("origin", col.origin),
                        ("fill date", col.fill_value if col.missing == "fill" else None)):
        if value is None or not np.isin(value, present):
            continue
        which = ("the table's minimum" if value == present.min() else "the table's maximum"
                 if value == present.max() else "a date in the table")
        year = int(dates.stamps_of(np.array([value]), col.granularity).year[0])
        rounded = next((u for u in (dates.year_start(y, col.granularity)
                                    for y in range(year, max(year - 50, 0), -1))
                        if not np.isin(u, present)), None)
        out.append(f"column {col.name!r}: the {name} {col.shown(value)} is {which}, so "
                   "publishing it publishes a real record; use a round date"
                   + ("" if rounded is None else f", such as {col.shown(rounded)} (a year's "
                      "start)")
                   + ", that no record gave")
    return out


def round_bounds(schema: Schema, table: pd.DataFrame, names: Iterable[str]) -> Schema:
    """``schema`` with the bounds of the numeric and date columns ``names`` widened to
    :func:`nice_bounds` (:func:`nice_dates`) of the table's values (rounding twice changes
    nothing more)."""
    chosen = set(names)
    columns = []
    for col in schema:
        if col.name in chosen and col.kind != CATEGORICAL and col.lower is not None and (
                not col.meaning):  # an hour stays 0–23, never rounded to 25
            present = present_numbers(col, table[col.name])
            lo, hi = _nice(col, float(present.min()), float(present.max())) if len(
                present) else (col.lower, col.upper)
            lo, hi = min(lo, col.lower), max(hi, col.upper)
            if col.integer:
                lo, hi = float(np.floor(lo)), float(np.ceil(hi))
            col = replace(col, lower=lo, upper=hi)
        columns.append(col)
    return replace(schema, columns=tuple(columns))
