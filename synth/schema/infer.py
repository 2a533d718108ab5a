"""Reading a schema off a table: each column's kind, integer flag, missing policy and domain
proposed from its values (never public until declared), and a column re-read as the kind a
steward chooses."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from synth import dates
from synth.dates import DATETIME
from synth.errors import SchemaError
from synth.meaning import fits, meant, words
from synth.schema.model import (
    CATEGORICAL,
    DATE_FIELDS,
    DATE_VALUES,
    KINDS,
    MISSING,
    NUMERIC,
    Column,
    Schema,
    category_names,
    category_values,
    check_table,
)

_NUMBER_TEXT = re.compile(r"^[\s$€£¥]*[-+]?(\d{1,3}(,\d{3})+|\d+)(\.\d+)?\s*[%$€£¥]?\s*$")
_BOOL_WORDS = ({"true", "false"}, {"yes", "no"}, {"t", "f"}, {"y", "n"})


def infer_schema(table: pd.DataFrame, target: str | None = None, *, max_codes: int = 10,
                 id_ratio: float = 0.95) -> Schema:
    """Propose each column's kind, integer flag, missing policy and domain from the table.

    Everything found here is read off the private table: every column is ``proposed`` (a run
    refuses it until the user confirms it, :meth:`Schema.confirm`) and every domain is
    **data-derived** (``public=False``): a run learns it privately unless the user declares it
    public. Suspicious
    columns (identifier-like, constant, all missing, many missing) get ``flags``.
    Integer-valued columns with at most ``max_codes`` distinct values are treated as codes.
    """
    check_table(table)
    if table.shape[1] == 0:
        raise SchemaError("the table has no columns")
    if target is not None and target not in table.columns:
        raise SchemaError(f"target column {target!r} is not in the table")
    if len(set(table.dtypes)) == 1 and isinstance(table.dtypes.iloc[0], np.dtype):
        cells = table.to_numpy()  # one dtype (a CSV's objects): columns as plain arrays
        columns = tuple(_infer_column(str(name), cells[:, j], max_codes, id_ratio)
                        for j, name in enumerate(table.columns))
    else:
        columns = tuple(_infer_column(str(name), table.iloc[:, j], max_codes, id_ratio)
                        for j, name in enumerate(table.columns))
    schema = Schema(columns)
    if target is not None:
        col = schema[target]
        if col.kind != CATEGORICAL:
            col = _as_categorical(col, table[target])
            schema = schema.replace_column(col)
        schema = replace(schema, target=target)
    return schema




def edit_column(col: Column, values: pd.Series, kind: str, *, lower: Any = None,
                upper: Any = None, categories: Iterable[str] | None = None,
                integer: bool | None = None, missing: str | None = None,
                fill_value: Any = None, **date_fields: Any) -> Column:
    """``col`` as a user edits it: a new kind re-reads the domain from ``values`` (so it is
    data-derived until declared public); given bounds or categories replace the domain, and a
    given integer flag or missing policy replaces the column's. A datetime column takes
    dates as bounds and fill value, and its own fields (``granularity``, ``origin``,
    ``timezone``, ``format``, ``input_format``; a given ``input_format`` is also how a
    column becoming datetime is read)."""
    if kind not in KINDS:
        raise SchemaError(f"column {col.name!r}: kind must be one of {KINDS}, got {kind!r}")
    unknown = set(date_fields) - set(DATE_FIELDS)
    if unknown:
        raise SchemaError(f"column {col.name!r}: no such column fields {sorted(unknown)}")
    before = col  # a domain the steward edits is theirs, no longer the meaning's
    if kind != col.kind:  # what follows is read off the data: a proposal again
        col = replace(col, proposed=True, meaning=None)
    if kind != col.kind and kind == CATEGORICAL:
        col = _as_categorical(col, values)
    elif kind != col.kind and kind == DATETIME:
        col = _as_dates(col, values, date_fields.get("input_format"),
                        date_fields.get("granularity"), date_fields.get("timezone"))
        # what was proposed stands where a field was left blank (a column switched back to
        # dates from a category has no format in the page's box)
        date_fields = {k: v for k, v in date_fields.items() if v is not None}
    elif kind != col.kind:
        present = values[(category_values(values) != MISSING).to_numpy()]
        numbers = _numbers(present)
        if numbers is None or len(numbers) == 0:
            raise SchemaError(f"column {col.name!r} cannot be numeric: some of its values are "
                              "not numbers")
        col = Column(col.name, NUMERIC, lower=float(numbers.min()), upper=float(numbers.max()),
                     integer=bool(np.all(numbers == np.round(numbers))),
                     flags=flags_for(col.flags, NUMERIC), missing="indicator", proposed=True)
    if kind == DATETIME:
        given = {k: v for k, v in date_fields.items() if v is not None}
        to = given.get("granularity", col.granularity)
        if to != col.granularity:  # the dates in the new units (a zone keeps them)
            given = {**{k: dates.regrained(getattr(col, k), col.granularity, to,
                                           last=k == "upper")
                        for k in DATE_VALUES if getattr(col, k) is not None}, **given}
        # an origin or format given as None is cleared (the ISO 8601 default, the lower bound)
        given.update({k: None for k in ("origin", "format", "input_format")
                      if k in date_fields and date_fields[k] is None})
        reread = ("input_format" in date_fields and not col.releasable
                  and date_fields["input_format"] != col.input_format)
        zone, grain = col.timezone, col.granularity
        if given:
            col = replace(col, **given)
        if col.timezone != zone or col.granularity != grain:  # zoned values in a naive
            _date_range(col, values)  # column, or days in a month one: refused now
        if reread:  # data-derived bounds read in the old order: a proposal again
            lower, upper = _date_range(col, values)
            col = replace(col, lower=lower, upper=upper, proposed=True)
        if "input_format" in date_fields:  # the order is the user's word now, kept or not
            col = replace(col, flags=tuple(f for f in col.flags if "day/month order" not in f))
    if kind != CATEGORICAL and (lower is not None or upper is not None):  # one given: the
        col = replace(col, lower=col.lower if lower is None else lower,  # other one stays
                      upper=col.upper if upper is None else upper, learned=False)
        col = col if (col.lower, col.upper) == (before.lower, before.upper) else replace(
            col, meaning=None)
    if kind == CATEGORICAL and categories is not None:
        col = replace(col, categories=tuple(categories), learned=False)
        col = col if col.categories == before.categories else replace(col, meaning=None)
    if kind == NUMERIC and integer is not None:
        col = replace(col, integer=bool(integer))
    if kind != CATEGORICAL and missing is not None:  # a fill value not given stays
        fill = col.fill_value if fill_value is None else fill_value
        col = replace(col, missing=missing, fill_value=fill if missing == "fill" else None)
    return col


def read_domain(col: Column, values: pd.Series) -> Column:
    """``col`` with the domain inference reads off ``values``, its other fields as they are:
    what a declaration kept without the table's values (:mod:`synth.decisions`) gets back
    from the table itself."""
    if col.kind == CATEGORICAL:
        return replace(col, categories=_categories_of(values))
    if col.kind == DATETIME:
        lower, upper = _date_range(col, values)
        return replace(col, lower=lower, upper=upper)
    numbers = _numbers(values[(category_values(values) != MISSING).to_numpy()])
    if numbers is None or len(numbers) == 0:
        raise SchemaError(f"column {col.name!r} cannot be numeric: some of its values are not "
                          "numbers")
    return replace(col, lower=float(numbers.min()), upper=float(numbers.max()))


def _as_dates(col: Column, values: pd.Series, input_format: str | None,
              granularity: str | None, timezone: str | None) -> Column:
    """``col`` read as dates: in ``input_format`` when given, else as inference would."""
    present = values[(category_values(values) != MISSING).to_numpy()]
    if input_format is None:
        proposal = dates.propose(pd.Series(present.unique()), present.dtype)
        if proposal is None:
            raise SchemaError(f"column {col.name!r} cannot be datetime: its values do not all "
                              "read as dates in ISO 8601 or one day/month/year order; give "
                              "the format they are in (input_format)")
        input_format, flags = proposal.input_format, proposal.flags
        granularity = granularity or proposal.granularity
        timezone = timezone or proposal.timezone
    else:
        flags = ()
    granularity, timezone = granularity or "day", timezone or "naive"
    lower, upper = _date_range(Column(col.name, DATETIME, granularity=granularity,
                                      timezone=timezone, input_format=input_format), values)
    return Column(col.name, DATETIME, lower=lower, upper=upper,
                  granularity=granularity, timezone=timezone, input_format=input_format,
                  flags=(*flags_for(col.flags, DATETIME), *flags), missing="indicator",
                  proposed=True)


def _date_range(col: Column, values: pd.Series) -> tuple[float, float]:
    """The least and greatest of ``values`` read as ``col``'s dates (data-derived), or a
    SchemaError saying how many present values do not read."""
    present = values[(category_values(values) != MISSING).to_numpy()]
    units, _, bad, zoned = dates.parse(present, col.granularity, col.timezone,
                                       col.input_format)
    if zoned:
        raise SchemaError(f"column {col.name!r}: {zoned} of its {len(present)} present values "
                          "carry a time zone, which a naive column refuses rather than guess: "
                          "choose the time zone UTC")
    if bad or len(units) == 0:
        raise SchemaError(f"column {col.name!r} cannot be datetime by {col.granularity}: "
                          f"{bad} of its {len(present)} present values do not read as dates "
                          f"in {col.input_format or 'ISO 8601'!r} or are finer than a "
                          f"{col.granularity} (never cut silently)")
    return float(units.min()), float(units.max())


def _as_categorical(col: Column, values: pd.Series) -> Column:
    return Column(col.name, CATEGORICAL, categories=_categories_of(values),
                  flags=flags_for(col.flags, CATEGORICAL), proposed=col.proposed)


# what an inference flag says only of one kind: it goes when the column changes kind (a
# "1,668 categories" warning stayed on a column read as numbers)
_KIND_FLAGS = {NUMERIC: ("categories: its marginals", "numbers stored as text",
                         "day/month order"),
               CATEGORICAL: ("missing values (", "day/month order"),
               DATETIME: ("categories: its marginals", "numbers stored as text",
                          "identifier-like")}


def flags_for(flags: Iterable[str], kind: str) -> tuple[str, ...]:
    """``flags`` that still hold for a column of ``kind``."""
    return tuple(f for f in flags if not any(part in f for part in _KIND_FLAGS[kind]))


def _categories_of(values: pd.Series) -> tuple[str, ...]:
    """Sorted categories, with ``<missing>`` last when any value is missing."""
    seen = set(category_values(values))
    cats = in_order(seen - {MISSING})
    return (*cats, MISSING) if MISSING in seen else tuple(cats)


def _infer_column(name: str, values: pd.Series | np.ndarray, max_codes: int,
                  id_ratio: float) -> Column:
    """A column's proposal (:func:`_read_column`), its domain the one its name means where
    it has one (:mod:`synth.meaning`): the whole of it, never the table's own range."""
    return _by_meaning(_read_column(name, values, max_codes, id_ratio), values)


def _by_meaning(col: Column, values: pd.Series | np.ndarray) -> Column:
    if col.kind == DATETIME:
        return _clock(col) if col.input_format in dates.CLOCKS else col
    if col.kind == NUMERIC and "time" in words(col.name):
        return _hhmm(col, values)
    meaning = meant(col.name)
    if meaning is None:
        return col
    numbers = pd.to_numeric(pd.Series(np.asarray(values, dtype=object)).map(
        lambda v: np.nan if v is None or (isinstance(v, str) and not v.strip()) else v),
        errors="coerce").to_numpy(dtype=float)
    codes = col.kind == CATEGORICAL and col.categories is not None and all(
        c == MISSING or _numbers(pd.Series([c])) is not None for c in col.categories)
    if col.kind == CATEGORICAL and not codes:
        return col  # 'age group' of ranges, month names: not numbers of the meaning
    if not fits(meaning, numbers):
        return replace(col, flags=(*col.flags, f"named like {meaning.name} but holds values "
                                   f"outside {meaning.lower:g}–{meaning.upper:g} (or not "
                                   "whole): its domain is not proposed from its name"))
    if codes:
        if not meaning.whole or meaning.upper - meaning.lower > 100:
            return col
        every = tuple(str(i) for i in range(int(meaning.lower), int(meaning.upper) + 1))
        blank = (MISSING,) if MISSING in (col.categories or ()) else ()
        return replace(col, categories=(*every, *blank), meaning=meaning.said)
    return replace(col, lower=float(meaning.lower), upper=float(meaning.upper),
                   integer=meaning.whole or col.integer, meaning=meaning.said)


def _clock(col: Column) -> Column:
    """A time of day's column: its domain is the whole day it is read on (00:00–23:59)."""
    lower, upper = dates.clock_day(col.granularity)
    last = dates.written(np.array([upper]), col.granularity, "naive",
                         "%H:%M:%S" if col.granularity == "second" else "%H:%M")[0]
    # counted from midnight: learned bounds (where the steward leaves them to be learned)
    # are sought from a public origin that needs no declaring
    return replace(col, lower=lower, upper=upper, origin=lower,
                   meaning=f"a time of day is 00:00–{last}")


def _hhmm(col: Column, values: pd.Series | np.ndarray) -> Column:
    """A number named like a time (``dep_time``) whose values are all clock times written
    as HHMM (517 is 05:17: whole, at most 2400, a day's end read as midnight, minutes under
    60, some past the first hour) is a time of day, released as one ('0517'): as a number,
    562 (minute 62) would be a valid release. Anything else named 'time' (a duration,
    ``air_time``) stays a number."""
    x = pd.to_numeric(pd.Series(np.asarray(values, dtype=object)), errors="coerce").dropna()
    x = x.to_numpy(dtype=float)
    clock = (x == np.round(x)) & (x >= 0) & (x <= 2400) & (x % 100 < 60)
    if not len(x) or not clock.all() or x.max() < 100:  # 0–59 alone: minutes, not a clock
        return col
    return _clock(replace(col, kind=DATETIME, integer=False, granularity="minute",
                          timezone="naive", input_format="%H%M", format="%H%M"))


def _read_column(name: str, values: pd.Series | np.ndarray, max_codes: int,
                 id_ratio: float) -> Column:
    # each distinct value is looked at once (factorize), so a wide or many-valued table is
    # read in about linear time
    plain = values.dtype.kind in "biufO"  # as a numpy array: no per-call pandas overhead
    codes, uniques = pd.factorize(np.asarray(values) if plain else values,
                                  use_na_sentinel=True)
    names = category_names(uniques)
    real = np.array([n != MISSING for n in names], dtype=bool)  # distinct present values
    counts = np.bincount(codes + 1, minlength=len(uniques) + 1)[1:]
    n_present = int(counts[real].sum())
    if n_present == 0:
        return Column(name, CATEGORICAL, categories=(MISSING,), proposed=True,
                      flags=("all values are missing: drop this column",))
    n_missing = len(values) - n_present
    distinct = int(real.sum())
    present = np.asarray(uniques)[real] if plain else pd.Series(uniques)[real]  # distinct
    flags: list[str] = []
    if distinct == 1:
        flags.append("constant: every value is the same, so it carries no information")
    identifier = distinct > 1 and n_present >= 20 and distinct >= id_ratio * n_present
    id_flag = (f"identifier-like: {distinct / n_present:.0%} of values are unique; drop it, "
               "or it wastes budget on noise")

    as_number = _numbers(present)
    words = {str(v).strip().lower() for v in present} if distinct <= 2 else set()
    is_bool = pd.api.types.is_bool_dtype(values) or (
        bool(words) and any(words <= w for w in _BOOL_WORDS))
    integer = as_number is not None and bool(np.all(as_number == np.round(as_number)))
    if as_number is not None and not is_bool and not (integer and distinct <= max_codes):
        # real-valued columns are nearly unique by nature, and so are whole numbers spread
        # wide (balances, or ages on a 30-row table): an identifier is a dense run of numbers
        dense = integer and as_number.max() - as_number.min() < 2 * distinct
        if identifier and dense:
            flags.append(id_flag)
        if n_missing:
            flags.append(f"{n_missing} missing values ({n_missing / len(values):.1%}): "
                         "missing='indicator' learns where they are, or 'fill' a public value")
        # every number gets the same proposal, blanks or not: which columns have blanks is
        # the table's business, and a policy read off it would be released
        return Column(name, NUMERIC, lower=float(as_number.min()),
                      upper=float(as_number.max()), integer=integer, missing="indicator",
                      proposed=True, flags=tuple(flags))
    proposal = None if as_number is not None or is_bool else dates.propose(
        present, getattr(values, "dtype", None))
    if proposal is not None:  # ordered whole units, not a category per date
        flags = [f for f in flags if not f.startswith("identifier-like")]  # dates are unique
        if n_missing:
            flags.append(f"{n_missing} missing values ({n_missing / len(values):.1%}): "
                         "missing='indicator' learns where they are, or 'fill' a public date")
        clock = proposal.input_format in dates.CLOCKS  # released as times of day too
        return Column(name, DATETIME, lower=proposal.lower, upper=proposal.upper,
                      granularity=proposal.granularity, timezone=proposal.timezone,
                      input_format=proposal.input_format, missing="indicator", proposed=True,
                      format=proposal.input_format if clock else None,
                      flags=(*flags, *proposal.flags))
    typos = None if as_number is not None or is_bool else dates.undated(present)
    if typos is not None:
        flags.append(f"mostly dates, but {typos:,} of its {distinct:,} distinct values do not "
                     "look like one: correct them in the file or leave them blank, then read "
                     "it as a date (kind datetime)")
    example = None if as_number is not None else numbers_as_text(present)
    if example is not None:
        flags.append(f"numbers stored as text (e.g. {example!r}): read them as numbers (the "
                     "Data page's Read as numbers, or schema confirm --numbers) or remove "
                     "separators and currency signs from the file")
    if identifier:
        flags.append(id_flag)
    elif distinct > 100:
        flags.append(f"{distinct} categories: its marginals will be sparse and noisy")
    seen = set(names)
    cats = in_order(seen - {MISSING})
    missing = MISSING in seen or bool(codes.min(initial=0) < 0)
    return Column(name, CATEGORICAL, categories=(*cats, MISSING) if missing else tuple(cats),
                  proposed=True, flags=tuple(flags))


_CALENDARS = (
    ("january", "february", "march", "april", "may", "june", "july", "august", "september",
     "october", "november", "december"),
    ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"))


def in_order(categories: Iterable[str]) -> list[str]:
    """Categories in the order a reader expects: months and weekdays (names or their first
    three letters, in any case) in calendar order, anything else sorted."""
    cats = sorted(categories)
    for names in _CALENDARS:
        rank = {}
        for i, name in enumerate(names):
            rank[name] = rank[name[:3]] = i
        if cats and all(c.strip().lower() in rank for c in cats):
            return sorted(cats, key=lambda c: (rank[c.strip().lower()], c))
    return cats


def _numbers(values: pd.Series | np.ndarray) -> np.ndarray | None:
    """The values as floats if every one of them parses as a finite number, else None."""
    if pd.api.types.is_bool_dtype(values):
        return None
    if pd.api.types.is_numeric_dtype(values):
        out = np.asarray(values, dtype=float)
    else:
        out = np.array([_number(str(v).strip()) for v in values], dtype=float)
    return out if np.isfinite(out).all() else None


def numbers_as_text(values: Iterable[Any]) -> str | None:
    """An example when a column's distinct present values are numbers written with thousands
    separators or currency signs ("3,750", "$1,200"), which would otherwise be read as
    categories; None when they are plain numbers or mostly words. Plain Python over the
    distinct values: a wide table calls it once a column."""
    texts = [t for t in (str(v).strip() for v in values) if t]
    odd = [t for t in texts if math.isnan(_number(t))]  # not plain numbers
    if not odd:
        return None
    looks = [t for t in odd if _NUMBER_TEXT.match(t)]
    if len(odd) - len(looks) > 0.05 * len(texts):
        return None
    return looks[0] if looks else None


def as_numbers(values: pd.Series) -> pd.Series:
    """The fix for :func:`numbers_as_text`: separators and currency signs removed."""
    return pd.to_numeric(unseparated(values.astype("string")), errors="coerce").where(
        values.notna())


def unseparated(text: pd.Series) -> pd.Series:
    return text.str.replace(r"[\s,$€£¥%]", "", regex=True)


def read_as_numbers(col: Column, values: pd.Series) -> Column:
    """``col`` read as the numbers its text writes ('3,750'): numeric, its domain read off
    them, and declared :attr:`~Column.written_as_text`, so every run reads the file so."""
    text_flag = tuple(f for f in col.flags if not f.startswith("numbers stored"))
    return replace(edit_column(replace(col, flags=text_flag), as_numbers(values), NUMERIC),
                   written_as_text=True)


def _number(text: str) -> float:
    """A number as pandas' to_numeric reads it (ASCII, no '_' digit groups), else NaN: per
    distinct value, in Python, which is quicker than a pandas call for a column's few values."""
    if not text.isascii() or "_" in text:
        return math.nan
    try:
        return float(text)
    except ValueError:
        return math.nan
