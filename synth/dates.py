"""Dates and times as numbers: a ``datetime`` column's values, read, counted and written.

A date column is a whole-number column to every method: a value is a count of its
**granularity**'s units (days, months, years, or seconds for timestamps). In the user's
terms (:func:`synth.schema.prepare`, a schema's bounds) that count runs from the Unix epoch
(1970-01-01, month 1970-01, year 1970): the same date is the same number in every schema.
In model space (:func:`synth.missing.model_schema`) it runs from the column's public
**origin** (by default its lower bound), so the methods see small numbers from 0 upward and a
bound learned privately (:mod:`synth.privacy.domains`, whose grid is fixed around 0) is
sought near the data, not decades away at 1970.

Timestamps are either **naive** (a wall-clock time, no zone) or **UTC** (a value with an
offset is converted to UTC; one without is taken as UTC): the schema says which, and a naive
column refuses values that carry a zone rather than guess. The private table's values are
read in the column's ``input_format`` alone (a strftime pattern; ISO 8601 down to the
granularity when none is declared), a release's in its ``format``, which they are written in
(ISO 8601 at its granularity by default): a value that reads only some other way is not a
date, never a guess.

Nothing here looks at a private value beyond what it is asked to convert: inference
(:func:`propose`) reads the table, so what it says is a proposal, like every inferred fact.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from synth.errors import SchemaError

DATETIME = "datetime"
GRANULARITIES = ("day", "month", "year", "hour", "minute", "second")
TIMED = ("hour", "minute", "second")  # granularities with a time of day
TIMEZONES = ("naive", "UTC")
# a year in each granularity's units: the scale a learned date bound's octaves count in
UNITS_PER_YEAR = {"day": 365.25, "month": 12.0, "year": 1.0, "hour": 8_766.0,
                  "minute": 525_960.0, "second": 31_557_600.0}
_UNIT = {"day": "D", "month": "M", "year": "Y", "hour": "h", "minute": "m", "second": "s"}
_ISO = {"day": "%Y-%m-%d", "month": "%Y-%m", "year": "%Y", "hour": "%Y-%m-%dT%H:00",
        "minute": "%Y-%m-%dT%H:%M", "second": "%Y-%m-%dT%H:%M:%S"}
# a time of day alone ('05:17', or 517 in a column named like a clock time) is read on
# strptime's day, 1900-01-01: its domain is that day, whatever the table holds
CLOCKS = ("%H:%M", "%H:%M:%S", "%H%M")
CLOCK_DAY = np.datetime64("1900-01-01T00:00:00", "s")
_CLOCK_TEXT = re.compile(r"^\d{1,2}:\d\d(:\d\d)?$")
ISO = "ISO8601"  # pandas' reader of every ISO 8601 form (dates, months, times, offsets)
# the dates a column may hold: four-digit years, which every format and reader agrees on
FIRST, LAST = np.datetime64("0001-01-01T00:00:00", "s"), np.datetime64("9999-12-31T23:59:59",
                                                                       "s")
# a time of day followed by a zone: 'Z', 'UTC' or an offset (what a naive column refuses)
_ZONED = re.compile(r"\d:\d\d(:\d\d(\.\d*)?)?\s*(z|utc|gmt|[+-]\d\d(:?\d\d)?)$", re.I)
# what inference tries, in order: ISO 8601 first (unambiguous), then day/month/year orders
_ISO_TEXT = re.compile(r"^\d{4}-\d\d(-\d\d([T ]\d\d:\d\d(:\d\d(\.\d+)?)?\s*"
                       r"(Z|[+-]\d\d(:?\d\d)?)?)?)?$", re.I)
_MONTH_TEXT = re.compile(r"^\d{4}-\d\d$")
# the parts an ISO 8601 value must give at a granularity: a day column refuses '2020-05'
_DAY = re.compile(r"^\d{4}(-\d{1,2}-\d{1,2}|\d{4})(?!\d)")
_PARTS = {"day": _DAY, "hour": _DAY, "minute": _DAY, "second": _DAY,
          "month": re.compile(r"^\d{4}(-\d{1,2}|\d{2}(\d{2})?)(?!\d)")}
_DATEISH = re.compile(r"^\s*(\d{1,2}[-/.]\d{1,2}[-/.]\d{4}|\d{4}[-/.]\d{1,2}([-/.]\d{1,2})?|"
                      r"\d{1,2} [a-z]{3,9},? \d{4}|[a-z]{3,9} \d{1,2},? \d{4})\b", re.I)
_TIMES = ("", " %H:%M", " %H:%M:%S")
_ORDERS = tuple(f"{first}{sep}{second}{sep}%Y" for sep in "/.-"
                for first, second in (("%d", "%m"), ("%m", "%d")))
_CANDIDATES = (*(order + time for order in _ORDERS for time in _TIMES),
               "%Y/%m/%d", "%Y/%m/%d %H:%M:%S", "%d %b %Y", "%d %B %Y", "%b %d, %Y",
               "%B %d, %Y")


def iso_format(granularity: str, timezone: str) -> str:
    """The ISO 8601 form of a value at ``granularity`` ('2024-03-01', '2024-03', '2024',
    '2024-03-01T09:30:00', with a 'Z' for a UTC timestamp)."""
    return _ISO[granularity] + ("Z" if granularity in TIMED and timezone == "UTC" else "")


def clock_day(granularity: str) -> tuple[float, float]:
    """The first and last units of the day a time of day is read on (00:00 to 23:59 at a
    minute's granularity): a clock column's whole domain, public knowledge."""
    day = np.array([CLOCK_DAY, CLOCK_DAY + np.timedelta64(86_399, "s")])
    first, last = _count(day, granularity)
    return float(first), float(last)


def release_format(col: Any) -> str:
    """The strftime pattern a datetime column's values are released in."""
    return col.format or iso_format(col.granularity, col.timezone)


def limits(granularity: str) -> tuple[float, float]:
    """The first and last units a column may hold (years 1 to 9999)."""
    return float(_count(np.array([FIRST]), granularity)[0]), float(
        _count(np.array([LAST]), granularity)[0])


def year_start(year: int, granularity: str) -> float:
    """The first unit of ``year`` at ``granularity`` (units since the epoch; a year outside
    1 to 9999 too, for arithmetic: clamp to :func:`limits` before using it as a date)."""
    stamp = np.array([year - 1970]).astype("datetime64[Y]").astype("datetime64[s]")
    return float(_count(stamp, granularity)[0])


def _count(stamps: np.ndarray, granularity: str) -> np.ndarray:
    """Whole units since the epoch of naive datetime64 ``stamps`` (floored), as int64."""
    return stamps.astype(f"datetime64[{_UNIT[granularity]}]").astype(np.int64)


def _whole(stamps: np.ndarray, granularity: str, finer: bool = False) -> np.ndarray:
    """:func:`_count` of ``stamps`` as floats, NaN for a stamp finer than the granularity
    (not the start of its unit) unless ``finer`` ones are floored."""
    counted = _count(stamps, granularity)
    if finer:
        return counted.astype(float)
    exact = counted.astype(f"datetime64[{_UNIT[granularity]}]").astype(stamps.dtype) == stamps
    return np.where(exact, counted, np.nan)


def _stamps(units: np.ndarray, granularity: str) -> np.ndarray:
    """datetime64[s] of whole ``units`` since the epoch (within years 1 to 9999)."""
    lo, hi = limits(granularity)
    counted = np.clip(np.asarray(units, dtype=float), lo, hi).astype(np.int64)
    return counted.astype(f"datetime64[{_UNIT[granularity]}]").astype("datetime64[s]")


def unit_of(value: Any, granularity: str, timezone: str, what: str) -> float:
    """One declared date (a bound, an origin, a fill value) as units since the epoch: text
    in ISO 8601, or a date, datetime, Timestamp or numpy datetime64. A bound that is not a
    date is refused by ``what`` it is."""
    if isinstance(value, str | dt.date | np.datetime64):
        units, blank, bad, zoned = parse(pd.Series([value], dtype=object), granularity,
                                         timezone, None, finer=True)
        if not (bad or zoned or blank[0]):
            return float(units[0])
        if zoned:
            raise SchemaError(f"{what} {value!r} carries a time zone, but the column's "
                              "timezone is 'naive': give it without one, or declare 'UTC'")
    raise SchemaError(f"{what} must be a date (ISO 8601, like '2020-01-31'), got {value!r}")


def regrained(units: float, granularity: str, to: str, last: bool = False) -> float:
    """Units at ``granularity`` as units at ``to``: the one holding their first instant, or,
    ``last`` (an upper bound), their last one: month 2021-12 ends on day 2021-12-31, and
    flooring it to 2021-12-01 would clip the month's other days."""
    start = float(_count(_stamps(np.array([units]), granularity), to)[0])
    if not last:
        return start
    if units >= limits(granularity)[1]:
        return limits(to)[1]
    after = float(_count(_stamps(np.array([units + 1]), granularity), to)[0])
    return max(start, after - 1)


def text_of(units: float, granularity: str, timezone: str) -> str:
    """Units since the epoch in ISO 8601 at ``granularity`` (how a schema file writes a
    date)."""
    return written(np.array([units]), granularity, timezone,
                   iso_format(granularity, timezone))[0]


_END_OF_DAY = {"2400": "0000"}


def parse(values: pd.Series, granularity: str, timezone: str, fmt: str | None,
          finer: bool = False) -> tuple[np.ndarray, np.ndarray, int, int]:
    """(units since the epoch, NaN where blank; which values are blank; how many present
    values are not dates; how many carry a time zone a naive column refuses).

    Native timestamps are taken as they are; anything else is read as text in ``fmt`` alone
    (None: ISO 8601, down to the granularity's part: '2020-05' is no day), never in another
    format: a value that reads some other way would be read as a date it may not be. A value
    finer than the granularity (a day in a month column, a time in a day column) is not
    one of its dates either: cutting it to its unit's start would change it silently (a
    declared bound or origin may be ``finer``: it is counted as its unit). Each distinct
    value is read once."""
    blank_dtype = pd.api.types.is_datetime64_any_dtype(values)
    if blank_dtype:
        stamps = pd.Series(values, copy=False)
        blank = stamps.isna().to_numpy()
        zoned = 0
        if isinstance(stamps.dtype, pd.DatetimeTZDtype):
            if timezone == "naive":
                zoned = int((~blank).sum())
            stamps = stamps.dt.tz_convert("UTC").dt.tz_localize(None)
        units = np.full(len(values), np.nan)
        present = stamps[~blank].to_numpy(dtype="datetime64[us]")
        units[~blank] = _whole(present, granularity, finer)
        return units, blank, int(np.isnan(units[~blank]).sum()), zoned
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    texts = np.array([_text(u) for u in uniques], dtype=object)
    distinct = np.full(len(texts), np.nan)
    todo = np.array([t != "" for t in texts], dtype=bool)
    zoned_distinct = np.zeros(len(texts), dtype=bool)
    if timezone == "naive":
        zoned_distinct = np.array([bool(_ZONED.search(t)) for t in texts], dtype=bool)
        todo &= ~zoned_distinct
    if fmt is None and granularity != "year":  # ISO 8601 reads '2020' as a day too
        todo &= np.array([bool(_PARTS[granularity].match(t)) for t in texts], dtype=bool)
    if fmt == "%H%M":  # 517 is 05:17 and 45 is 00:45: the reader needs all four digits;
        # 2400, a day's end in airline schedules, is its midnight
        texts = np.array([_END_OF_DAY.get(t.zfill(4), t.zfill(4)) if t.isdigit() else t
                          for t in texts], dtype=object)
    fmt = ISO if fmt is None else fmt
    read = pd.to_datetime(pd.Series(texts[todo], dtype=object), format=fmt,
                          errors="coerce", utc=True)
    ok = read.notna().to_numpy(copy=True)
    if ok.any():
        where = np.flatnonzero(todo)[ok]
        if timezone == "naive":  # a zone the pattern missed ('…T10Z', '…T1000+0500')
            aware = _aware(texts[where], fmt)
            zoned_distinct[where[aware]] = True
            ok[np.flatnonzero(ok)[aware]] = False
            where = where[~aware]
        stamps = read[ok].dt.tz_localize(None).to_numpy(dtype="datetime64[us]")
        distinct[where] = _whole(stamps, granularity, finer)
    blank_distinct = np.array([t == "" for t in texts], dtype=bool)
    todo = ~blank_distinct & ~zoned_distinct & np.isnan(distinct)  # not read: not dates
    full = np.append(distinct, np.nan)  # code −1 (missing) → NaN
    units = full[codes]
    blank = np.append(blank_distinct, True)[codes]
    per_value = np.bincount(codes[codes >= 0], minlength=len(texts))
    bad = int(per_value[todo].sum())
    zoned = int(per_value[zoned_distinct].sum())
    return units, blank, bad, zoned


def _aware(texts: np.ndarray, fmt: str) -> np.ndarray:
    """Which of ``texts`` (each read in ``fmt``) carry a time zone: those pandas reads
    tz-aware. Where naive and zoned values (or several offsets) mix, pandas refuses the lot:
    they are told apart half by half, sorted by their ends so that alike ones stay together."""
    def split(part: np.ndarray) -> np.ndarray:
        try:
            read = pd.to_datetime(pd.Series(part, dtype=object), format=fmt, errors="coerce")
        except ValueError:  # mixed: never a single value
            half = len(part) // 2
            return np.concatenate([split(part[:half]), split(part[half:])])
        return np.full(len(part), isinstance(read.dtype, pd.DatetimeTZDtype))

    if len(texts) == 0:
        return np.zeros(0, dtype=bool)
    order = np.argsort(np.array([t[-6:] for t in texts], dtype=object), kind="stable")
    out = np.empty(len(texts), dtype=bool)
    out[order] = split(texts[order])
    return out


def _text(value: Any) -> str:
    """A value as the text a date is read from ('' when blank)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, pd.Timestamp | dt.datetime) and value.tzinfo is None:
        return value.isoformat()
    return str(value).strip()


def written(units: np.ndarray, granularity: str, timezone: str, fmt: str) -> np.ndarray:
    """Units since the epoch as text in ``fmt`` (NaN where a unit is missing): each distinct
    value formatted once."""
    x = np.asarray(units, dtype=float)
    out = np.full(len(x), np.nan, dtype=object)
    present = ~np.isnan(x)
    if not present.any():
        return out
    distinct, inverse = np.unique(x[present], return_inverse=True)
    stamps = pd.Series(_stamps(distinct, granularity))
    if timezone == "UTC":
        stamps = stamps.dt.tz_localize("UTC")
    out[present] = stamps.dt.strftime(fmt).to_numpy(dtype=object)[inverse]
    return out


def released(frame: pd.DataFrame, schema: Iterable[Any]) -> pd.DataFrame:
    """``frame`` (the user's terms: units since the epoch) with every datetime column of
    ``schema`` written as text in its release format, as a release holds it."""
    dated = [c for c in schema if c.kind == DATETIME and c.name in frame.columns]
    if not dated:
        return frame
    out = frame.copy()
    for col in dated:
        values = pd.to_numeric(out[col.name], errors="coerce").to_numpy(dtype=float)
        out[col.name] = written(values, col.granularity, col.timezone, release_format(col))
    return out


def origin_of(col: Any) -> float | None:
    """The units a datetime column's model-space values count from: its declared origin, or
    else its lower bound (None while neither is known)."""
    return col.origin if col.origin is not None else col.lower


def stamps_of(units: np.ndarray, granularity: str) -> pd.DatetimeIndex:
    """Units since the epoch as naive timestamps (for a time axis)."""
    return pd.DatetimeIndex(_stamps(np.asarray(units, dtype=float), granularity))


def check_format(fmt: Any, granularity: str, timezone: str, where: str) -> str:
    """A release format that writes every value at ``granularity`` so it reads back the
    same, or a SchemaError naming the column."""
    if not isinstance(fmt, str) or "%" not in fmt:
        raise SchemaError(f"{where}: format must be a strftime pattern such as '%Y-%m-%d', "
                          f"got {fmt!r}")
    if re.search(r"(?<!%)(%%)*%y", fmt):  # 1950 and 2050 would both read back as one year
        raise SchemaError(f"{where}: format {fmt!r} writes two-digit years (%y), which do not "
                          "read back outside 1969-2068; use %Y")
    day = CLOCK_DAY if fmt in CLOCKS else np.datetime64("2001-11-23", "s")
    probe = _count(np.array([day + np.timedelta64(52_546, "s")]), granularity)  # 14:35:46
    text = written(probe.astype(float), granularity, timezone, fmt)
    back, _, bad, zoned = parse(pd.Series(text, dtype=object), granularity, timezone, fmt)
    if bad or zoned or back[0] != probe[0]:
        raise SchemaError(f"{where}: format {fmt!r} does not write a {granularity}'s values so "
                          f"they read back (it wrote {text[0]!r}); use one that shows every "
                          f"part down to the {granularity}, such as "
                          f"{iso_format(granularity, timezone)!r}")
    return fmt


@dataclass(frozen=True)
class Proposal:
    """What inference reads off a column whose values all parse as dates."""

    granularity: str
    timezone: str
    input_format: str | None  # None: ISO 8601 (or native timestamps)
    lower: float
    upper: float
    flags: tuple[str, ...] = ()


def propose(present: np.ndarray | pd.Series, dtype: Any) -> Proposal | None:
    """A datetime proposal for a column's distinct present values, or None when they are
    not all dates in one format: native timestamps (a Parquet timestamp or date type), Python
    dates, or text in ISO 8601 or a common day/month/year order. Where every value reads both
    day-first and month-first the proposal takes day-first and says so in a flag: the
    steward chooses."""
    values = pd.Series(present, dtype=dtype if pd.api.types.is_datetime64_any_dtype(dtype)
                       else object)
    if len(values) == 0:
        return None
    if pd.api.types.is_datetime64_any_dtype(values):
        zone = "UTC" if isinstance(values.dtype, pd.DatetimeTZDtype) else "naive"
        return _proposal(values, None, zone, ())
    if all(isinstance(v, dt.date) for v in values):  # Python dates and datetimes
        zone = "UTC" if any(isinstance(v, dt.datetime) and v.tzinfo is not None
                            for v in values) else "naive"
        return _proposal(values, None, zone, ())
    if all(isinstance(v, str) and _CLOCK_TEXT.match(v.strip()) for v in values):
        timed = [v.count(":") == 2 for v in values]  # a time of day: '05:17' or '05:17:09'
        if all(timed) or not any(timed):
            return _proposal(values, "%H:%M:%S" if all(timed) else "%H:%M", "naive", ())
        return None
    head = values.iloc[:50]  # most columns of text are told apart by their first values
    if not all(isinstance(v, str) and _DATEISH.match(v) for v in head):
        return None
    texts = [str(v).strip() for v in values]
    if not all(isinstance(v, str) and _DATEISH.match(v) for v in values):
        return None
    zone = "UTC" if any(_ZONED.search(t) for t in texts) else "naive"
    if all(_ISO_TEXT.match(t) for t in texts):
        month = all(_MONTH_TEXT.match(t) for t in texts)
        return _proposal(values, None, zone, (), month=month)
    fits = [f for f in _CANDIDATES if _unread(texts, f) == 0]
    if not fits:
        return None
    chosen, flags = fits[0], ()
    swapped = chosen.replace("%d", "%D").replace("%m", "%d").replace("%D", "%m")
    if swapped != chosen and swapped in fits:
        flags = (f"day/month order is ambiguous: every value reads both as {chosen!r} and as "
                 f"{swapped!r}; proposed {chosen!r}: set input_format to the order the file "
                 "uses",)
    return _proposal(values, chosen, zone, flags)


def undated(present: np.ndarray | pd.Series, most: float = 0.9) -> int | None:
    """How many of ``present``'s distinct text values do not read as dates in the format
    that reads most of them, where that format reads at least ``most`` of them (a date
    column with a few typos, which :func:`propose` leaves categorical); None otherwise."""
    texts = [v.strip() for v in pd.unique(np.asarray(present, dtype=object))
             if isinstance(v, str)]
    if not texts or sum(bool(_DATEISH.match(t)) for t in texts) < most * len(texts):
        return None
    bad = min(_unread(texts, fmt) for fmt in (ISO, *_CANDIDATES))
    return bad if 0 < bad <= (1 - most) * len(texts) else None


def _unread(texts: list[str], fmt: str) -> int:
    """How many of ``texts`` do not read as dates in ``fmt``."""
    read = pd.to_datetime(pd.Series(texts, dtype=object), format=fmt, errors="coerce",
                          utc=True)
    return int(read.isna().sum())


def _proposal(values: pd.Series, fmt: str | None, zone: str, flags: tuple[str, ...],
              month: bool = False) -> Proposal | None:
    units, _, bad, zoned = parse(values, "month" if month else "second", zone, fmt)
    if bad or zoned or np.isnan(units).all():
        return None
    seconds = units[~np.isnan(units)]
    timed = not month and (fmt in CLOCKS or bool(np.any(seconds % 86_400)))
    # the coarsest unit that holds every value: a timestamp always on the hour is released
    # on the hour (a proposal, like every inferred fact: the steward confirms it)
    granularity = ("month" if month else "day" if not timed else
                   next((g for g, size in (("hour", 3_600), ("minute", 60))
                         if not np.any(seconds % size)), "second"))
    counted, _, _, _ = parse(values, granularity, zone, fmt)
    counted = counted[~np.isnan(counted)]
    return Proposal(granularity, zone, fmt, float(counted.min()), float(counted.max()), flags)
