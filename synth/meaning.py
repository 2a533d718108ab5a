"""Domains known from a column's meaning: proposed from its name and kind, never its values.

A month is 1–12 and an hour 0–23 whatever a table holds: such a domain is public knowledge,
so declaring it public costs no budget and publishes nothing about the rows. A column named
like one (its name's words: ``dep_hour``, ``birthMonth``, ``pct_paid``) is proposed the
whole domain, never the table's own range (a sample with months 3–9 is still proposed 1–12),
marked as coming from meaning (:attr:`synth.schema.Column.meaning`) so that
``schema confirm --public known`` and the Data page can declare every such domain at once.
The values are read only to check that the meaning fits (every present value inside the
domain, whole where it must be): a column named ``hour`` holding 0–2359 is left alone,
flagged, as it is a clock time, not an hour.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Meaning:
    """A domain known from a name: ``words`` any of which a column's name holds, the
    interval, and whether its values are whole."""

    name: str
    lower: float
    upper: float
    whole: bool
    words: frozenset[str]

    @property
    def said(self) -> str:
        return f"{self.name} is {self.lower:g}–{self.upper:g}"


# the first a name says wins: a weekday before a day of the month before a month, so
# 'day_of_week' is a weekday and 'DayOfMonth' a day
MEANINGS = (
    # 0–6 whatever the table holds: a 1–7 table is flagged, never given its own convention
    Meaning("a weekday", 0, 6, True, frozenset({"weekday", "dow", "dayofweek", "wday"})),
    Meaning("a day of the month", 1, 31, True, frozenset({"dom", "dayofmonth", "mday"})),
    Meaning("a month", 1, 12, True, frozenset({"month", "mnth", "mth"})),
    Meaning("a day of the month", 1, 31, True, frozenset({"day"})),
    Meaning("an hour", 0, 23, True, frozenset({"hour", "hr", "hh"})),
    Meaning("a minute", 0, 59, True, frozenset({"minute", "minutes"})),
    Meaning("a second", 0, 59, True, frozenset({"second", "seconds", "sec", "secs"})),
    Meaning("a percentage", 0, 100, False, frozenset({"pct", "percent", "percentage"})),
    Meaning("an age in years", 0, 120, False, frozenset({"age"})),
    Meaning("a year", 1900, 2100, True, frozenset({"year", "yr", "yyyy"})),
)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def words(name: str) -> list[str]:
    """A column name's words, lower case: ``depHour`` and ``dep_hour`` are dep, hour; a
    trailing % is 'percent'; 'day of week' is also read as one word, dayofweek."""
    parts = [w.lower() for w in re.split(r"[^A-Za-z0-9]+", _CAMEL.sub(" ", name)) if w]
    joined = ["".join(parts[i:i + 3]) for i in range(len(parts) - 2)]
    return parts + joined + (["percent"] if name.rstrip().endswith("%") else [])


# a word after one of these names a period, not a value in it: spend_last_year is an
# amount, trips_per_month a count
PERIOD = frozenset({"last", "next", "past", "previous", "prev", "per", "each", "every", "this"})


def meant(name: str) -> Meaning | None:
    """The meaning a column's name says, if any (its values unread)."""
    parts = words(name)
    said = {w for i, w in enumerate(parts) if i == 0 or parts[i - 1] not in PERIOD}
    if {"week", "day"} <= said:  # day_of_week, week_day
        said.add("weekday")
    return next((m for m in MEANINGS if m.words & said), None)


def fits(meaning: Meaning, numbers: np.ndarray) -> bool:
    """Whether every present value lies in the meaning's domain (whole where it must be):
    the only look at the values, to keep a wrong reading of a name from being proposed."""
    present = numbers[~np.isnan(numbers)]
    inside = bool(np.all((present >= meaning.lower) & (present <= meaning.upper)))
    return inside and (not meaning.whole or bool(np.all(present == np.round(present))))
