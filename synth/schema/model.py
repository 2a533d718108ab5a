"""The schema's model and file format: column kinds, their domains and a schema's JSON.

A column is numeric, categorical or datetime: a date is a whole number of units (days,
months, years or seconds) to every method, read and written as a date (:mod:`synth.dates`).
A column's *domain* (categories, or numeric or date bounds) is either **declared public** by
the user (``public=True``), **data-derived** (read off the private table by
:func:`~synth.schema.infer.infer_schema`: fine to look at, never to release), or
**learned** under DP inside a run (``learned=True``, see :mod:`synth.privacy.domains`).
Methods only ever run on public or learned domains.

A column's kind, integer flag and missing policy shape the release too, so they are the
user's declaration: inference marks what it reads off the table ``proposed``, and a fit
refuses a proposal until :meth:`Schema.confirm`.
"""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from synth import dates
from synth.dates import DATETIME, GRANULARITIES, TIMEZONES
from synth.errors import DataError, SchemaError, as_float

NUMERIC = "numeric"
CATEGORICAL = "categorical"
KINDS = (NUMERIC, CATEGORICAL, DATETIME)  # a datetime column is a whole number of units
# the fields only a datetime column has (see synth.dates), and the dates a schema file writes
# for it as ISO 8601 text
DATE_FIELDS = ("granularity", "origin", "timezone", "format", "input_format")
DATE_VALUES = ("lower", "upper", "origin", "fill_value")
MISSING = "<missing>"  # a missing categorical value is a category of its own
OTHER = "other"  # a column whose categories include it absorbs values it has not seen
# for numeric columns: "none" (a missing value is an error), "indicator" (values may be missing:
# a run learns privately whether any are, and a method where, see synth.missing), "fill"
# (missing values become a public fill_value)
MISSING_POLICIES = ("none", "indicator", "fill")
DIGITS = 6  # significant digits of a released number that is not whole, unless declared



@dataclass(frozen=True)
class Column:
    """One column: its kind, its domain, and whether that domain may be released."""

    name: str
    kind: str
    lower: float | None = None
    upper: float | None = None
    categories: tuple[str, ...] | None = None
    public: bool = False
    integer: bool = False
    missing: str = "none"
    fill_value: float | None = None
    learned: bool = False
    proposed: bool = False  # kind, integer flag and missing policy read off the data, unconfirmed
    flags: tuple[str, ...] = ()
    digits: int | None = None  # significant digits a released number keeps (None: DIGITS)
    blanks: bool = True  # missing='indicator': False once a run learned privately there are none
    # a number the file writes as text with digit separators or currency signs ('3,750',
    # '$1,200'): read as the number it writes (how the private file writes it, like a date's
    # input_format: never part of a release)
    written_as_text: bool = False
    # the domain proposed from the column's name and kind, public knowledge ("a month is
    # 1–12", synth.meaning), not read off the table; None: no such proposal
    meaning: str | None = None
    # a datetime column (synth.dates): lower, upper, origin and fill_value count whole
    # granularity units since the epoch (a schema file writes them as ISO 8601 dates); the
    # origin is public, and model-space values count from it (by default from the lower bound)
    granularity: str | None = None  # 'day' (default), 'month', 'year', 'hour', 'minute', 'second'
    origin: float | None = None
    timezone: str | None = None  # 'naive' (default) or 'UTC'
    format: str | None = None  # strftime pattern of released values (None: ISO 8601)
    input_format: str | None = None  # strftime pattern of the table's values (None: ISO 8601)

    def __post_init__(self) -> None:
        where = f"column {self.name!r}"
        if not isinstance(self.name, str) or not self.name:
            raise SchemaError(f"column names must be non-empty strings, got {self.name!r}")
        if self.kind not in KINDS:
            raise SchemaError(f"{where}: kind must be 'numeric', 'categorical' or "
                              f"'datetime', got {self.kind!r}")
        if self.kind == DATETIME:
            self._check_dates(where)
        else:
            given = [f for f in DATE_FIELDS if getattr(self, f) is not None]
            if given:
                raise SchemaError(f"{where}: {given} apply to datetime columns only; it is "
                                  f"{self.kind}")
        if self.categories is not None:
            if isinstance(self.categories, str | bytes | Mapping) or not isinstance(
                    self.categories, Iterable):
                raise SchemaError(f"{where}: categories must be a list of strings, got "
                                  f"{self.categories!r}")
            cats = tuple(_category(c) for c in self.categories)
            spaced = [c for c in cats if c != c.strip()]
            if spaced:  # "A " would be a category no value is (cells are read stripped)
                raise SchemaError(f"{where}: categories {spaced[:5]} have surrounding spaces, "
                                  "which a table's values never keep (they are read "
                                  "stripped): list them without")
            dupes = repeated(cats)
            if dupes:
                raise SchemaError(f"{where}: categories listed twice: {dupes[:5]}")
            object.__setattr__(self, "categories", cats)
        object.__setattr__(self, "flags", tuple(self.flags))
        if self.digits is not None and (isinstance(self.digits, bool) or not isinstance(
                self.digits, int) or not 1 <= self.digits <= 17):
            raise SchemaError(f"{where}: digits must be a whole number from 1 to 17 "
                              f"(significant digits), got {self.digits!r}")
        if self.written_as_text and self.kind != NUMERIC:
            raise SchemaError(f"{where}: written_as_text applies to numeric columns only; it "
                              f"is {self.kind}")
        if self.kind != CATEGORICAL:
            self._check_numeric(where)
        elif self.releasable and not self.categories:
            raise SchemaError(f"{where}: a public categorical column needs its list of categories")

    def _check_dates(self, where: str) -> None:
        """Granularity, time zone and formats checked; declared dates as units since the
        epoch; always whole numbers."""
        granularity = "day" if self.granularity is None else self.granularity
        if granularity not in GRANULARITIES:
            raise SchemaError(f"{where}: granularity must be one of {GRANULARITIES}, got "
                              f"{granularity!r}")
        timezone = "naive" if self.timezone is None else self.timezone
        if timezone not in TIMEZONES:
            raise SchemaError(f"{where}: timezone must be 'naive' or 'UTC', got {timezone!r}")
        object.__setattr__(self, "granularity", granularity)
        object.__setattr__(self, "timezone", timezone)
        object.__setattr__(self, "integer", True)
        if self.input_format is not None and (not isinstance(self.input_format, str)
                                              or "%" not in self.input_format):
            raise SchemaError(f"{where}: input_format must be a strftime pattern such as "
                              f"'%d/%m/%Y', got {self.input_format!r}")
        if self.format is not None:
            dates.check_format(self.format, granularity, timezone, where)
        first, last = dates.limits(granularity)
        for name in DATE_VALUES:
            value = getattr(self, name)
            what = f"{where}: {name.replace('_', ' ')}" + (" bound" * (name in ("lower",
                                                                                 "upper")))
            if value is None:
                continue
            if isinstance(value, bool):
                raise SchemaError(f"{what} must be a date, got {value!r}")
            if isinstance(value, int | float | np.integer | np.floating):  # units (internal)
                units = float(value)
                if not math.isfinite(units):
                    raise SchemaError(f"{what} must be a date, got {value!r}")
                units = float(math.floor(units))
            else:
                units = dates.unit_of(value, granularity, timezone, what)
            object.__setattr__(self, name, min(max(units, first), last))

    def shown(self, value: float | None) -> str:
        """One of this column's values as a reader sees it: a date (ISO 8601) for a datetime
        column, a time of day as released for a clock, otherwise the number."""
        if value is None:
            return "none"
        if self.kind == DATETIME and self.format in dates.CLOCKS:  # a time of day: '05:17'
            return str(dates.written(np.array([value]), self.granularity, self.timezone,
                                     self.format)[0])
        if self.kind == DATETIME:
            return dates.text_of(value, self.granularity, self.timezone)
        return f"{value:g}"

    def _check_numeric(self, where: str) -> None:
        for name in ("lower", "upper"):
            value = getattr(self, name)
            if value is None:
                continue
            object.__setattr__(self, name, _finite(value, f"{where}: {name} bound"))
        if (self.lower is None) != (self.upper is None):
            raise SchemaError(f"{where}: give both lower and upper bounds, or neither")
        if self.lower is not None and self.lower > self.upper:
            raise SchemaError(f"{where}: lower bound {self.shown(self.lower)} is above upper "
                              f"{self.shown(self.upper)}")
        if self.releasable and self.lower is None:
            raise SchemaError(f"{where}: a public {self.kind} column needs lower and upper "
                              "bounds")
        if self.missing == "drop":
            raise SchemaError(f"{where}: missing='drop' is no longer offered: dropping rows "
                              "changed n, which is public; use 'indicator' or 'fill'")
        if self.missing not in MISSING_POLICIES:
            raise SchemaError(f"{where}: missing must be one of {MISSING_POLICIES}, "
                              f"got {self.missing!r}")
        if self.missing == "fill":
            if self.fill_value is None:
                raise SchemaError(f"{where}: missing='fill' needs a public fill_value")
            fill = _finite(self.fill_value, f"{where}: fill_value")
            if self.lower is not None and not self.lower <= fill <= self.upper:
                raise SchemaError(f"{where}: fill_value {self.shown(fill)} lies outside "
                                  f"[{self.shown(self.lower)}, {self.shown(self.upper)}]")
            object.__setattr__(self, "fill_value", fill)

    @property
    def releasable(self) -> bool:
        """True when the domain may appear in a release: declared public or learned under DP."""
        return self.public or self.learned

    @property
    def learns(self) -> bool:
        """True when a run learns something about this column privately before it fits: a
        domain not declared public, or whether a number declared to allow blanks
        (``missing='indicator'``) has any (see :mod:`synth.privacy.domains`)."""
        return not self.learned and (not self.public or (
            self.kind != CATEGORICAL and self.missing == "indicator"))

    @property
    def size(self) -> int:
        """Number of categories (categorical columns only)."""
        if self.categories is None:
            raise SchemaError(f"column {self.name!r} has no categories")
        return len(self.categories)

    def to_dict(self) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in fields(self)}  # asdict deep-copies: slow
        d["categories"] = list(self.categories) if self.categories is not None else None
        d["flags"] = list(self.flags)
        for name, default in (("digits", None), ("blanks", True), ("meaning", None),
                              ("written_as_text", False)):
            if d[name] == default:  # a schema file says nothing of a default
                del d[name]
        if self.kind != DATETIME:
            for name in DATE_FIELDS:
                del d[name]
            return d
        for name in DATE_VALUES:  # dates as a reader writes them, never as unit counts
            if d[name] is not None:
                d[name] = dates.text_of(d[name], self.granularity, self.timezone)
        return d


def _finite(value: Any, what: str) -> float:
    """A schema number as a finite float (not a bool, not text), or a SchemaError."""
    number = as_float(value, what, SchemaError)
    if not math.isfinite(number):
        raise SchemaError(f"{what} must be finite, got {value!r}")
    return number


def repeated(items: Iterable[str]) -> list[str]:
    """The items listed more than once, sorted (in linear time: a 50,000-category list or a
    20,000-column header is checked at once)."""
    return sorted(item for item, count in Counter(items).items() if count > 1)


def _category(value: Any) -> str:
    """Categories are strings; integer-valued floats (1.0 from a float column) print as ints."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def category_values(values: pd.Series) -> pd.Series:
    """Values as category strings: stripped, with missing (NaN, None, blank) as ``<missing>``.

    Each distinct value is normalised once (factorize), then spread back by its code.
    """
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    names = np.array([*category_names(uniques), MISSING], dtype=object)
    return pd.Series(names[codes], index=values.index, dtype=object)  # code −1 → <missing>


def category_names(uniques: Any) -> list[str]:
    """Distinct values as category strings (blank ones as ``<missing>``)."""
    return [_category(u).strip() or MISSING for u in uniques]


@dataclass(frozen=True)
class Schema:
    """An ordered set of columns and, optionally, the target column for utility checks.

    Each :class:`Column` says its kind (numeric, categorical or datetime) and what is public
    about it: bounds, categories, whether it holds whole numbers, what a missing value is,
    a date's granularity, origin and formats. A schema read
    off a table by :func:`infer_schema` is only a proposal (every column ``proposed``); a run
    refuses it until the steward confirms it (``Schema.confirm`` or ``synth
    schema confirm``). Domains not declared public are learned under DP in the run's
    ``domain`` share. ``Schema.load``/``save`` read and write the JSON file the CLI and the app
    use."""

    columns: tuple[Column, ...]
    target: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)  # unknown keys kept on round-trip

    def __post_init__(self) -> None:
        if isinstance(self.columns, str | bytes) or not isinstance(self.columns, Iterable):
            raise SchemaError(f"a schema's columns must be a list of Column, got "
                              f"{self.columns!r}")
        cols = tuple(self.columns)
        if not cols:
            raise SchemaError("a schema needs at least one column")
        strays = [c for c in cols if not isinstance(c, Column)]
        if strays:
            raise SchemaError(f"a schema's columns must be Column objects, got {strays[0]!r}")
        names = [c.name for c in cols]
        dupes = repeated(names)
        if dupes:
            raise SchemaError(f"column names appear more than once in the schema: {dupes}")
        if self.target is not None:
            if self.target not in names:
                raise SchemaError(f"target column {self.target!r} is not in the schema")
            if self[self.target].kind != CATEGORICAL:
                raise SchemaError(f"target column {self.target!r} must be categorical")
        object.__setattr__(self, "columns", cols)

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    def __getitem__(self, name: str) -> Column:
        for c in self.columns:
            if c.name == name:
                return c
        raise SchemaError(f"no column named {name!r} in the schema")

    def __iter__(self):
        return iter(self.columns)

    def __len__(self) -> int:
        return len(self.columns)

    @property
    def releasable(self) -> bool:
        return all(c.releasable for c in self.columns)

    @property
    def to_learn(self) -> list[Column]:
        """The columns a run learns something about privately first (:attr:`Column.learns`)."""
        return [c for c in self.columns if c.learns]

    @property
    def proposed(self) -> list[str]:
        """Columns whose kind, integer flag and missing policy the user has not confirmed."""
        return [c.name for c in self.columns if c.proposed]

    def confirm(self, names: Iterable[str] | None = None) -> Schema:
        """The user's declaration that ``names`` (default: all) have the kind, integer flag and
        missing policy the schema gives them: no longer proposals read off the data."""
        chosen = set(self.names if names is None else names)
        unknown = chosen - set(self.names)
        if unknown:
            raise SchemaError(f"cannot confirm unknown columns: {sorted(unknown)}")
        return replace(self, columns=tuple(replace(c, proposed=False) if c.name in chosen else c
                                           for c in self.columns))

    def check_declared(self) -> None:
        """Refuse proposals: what a release's columns are must be the user's word."""
        if self.proposed:
            names = self.proposed
            raise SchemaError(
                f"columns {names[:6]}{'…' if len(names) > 6 else ''} are proposals read from "
                "the data (kind, integer flag, missing policy): review them, then confirm "
                "(synth schema confirm, or the Data page's confirmation)")

    def drop(self, names: Iterable[str]) -> Schema:
        names = set(names)
        unknown = names - set(self.names)
        if unknown:
            raise SchemaError(f"cannot drop unknown columns: {sorted(unknown)}")
        target = None if self.target in names else self.target
        return replace(self, columns=tuple(c for c in self.columns if c.name not in names),
                       target=target)

    def replace_column(self, column: Column) -> Schema:
        self[column.name]  # raises for an unknown name
        return replace(self, columns=tuple(column if c.name == column.name else c
                                           for c in self.columns))

    def declare_public(self, names: Iterable[str] | None = None) -> Schema:
        """Exactly ``names`` (default: all) have public domains; the others are data-derived."""
        chosen = set(self.names if names is None else names)
        unknown = chosen - set(self.names)
        if unknown:
            raise SchemaError(f"cannot declare unknown columns public: {sorted(unknown)}")
        return replace(self, columns=tuple(replace(c, public=c.name in chosen)
                                           for c in self.columns))

    def public_view(self) -> Schema:
        """What may leave the steward's hands: public and DP-learned domains as they are;
        data-derived domains, the inference flags, a date's input format (how the private
        file writes it: inferred, it changes with single records) and any key a schema file
        holds beyond its columns and target (a steward's notes) removed."""
        def redact(c: Column) -> Column:
            if c.releasable:
                return replace(c, flags=(), input_format=None, written_as_text=False)
            return replace(c, lower=None, upper=None, categories=None, flags=(),
                           input_format=None, written_as_text=False,
                           fill_value=c.fill_value if c.missing == "fill" else None)

        return replace(self, columns=tuple(redact(c) for c in self.columns), extra={})

    def reading(self, declared: Schema) -> Schema:
        """This schema (a release's) with the input formats of ``declared`` (the steward's),
        so it reads the private table: a release never carries them."""
        formats = {c.name: c.input_format for c in declared if c.kind == DATETIME}
        return replace(self, columns=tuple(
            replace(c, input_format=formats.get(c.name)) if c.kind == DATETIME else c
            for c in self.columns))

    # ---- JSON -----------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        return {**self.extra, "target": self.target,
                "columns": [c.to_dict() for c in self.columns]}

    @classmethod
    def from_dict(cls, data: Any) -> Schema:
        if not isinstance(data, Mapping) or not isinstance(data.get("columns"), list):
            raise SchemaError("a schema file must be a JSON object with a 'columns' list")
        known = {f for f in Column.__dataclass_fields__}
        columns = []
        for i, raw in enumerate(data["columns"], 1):
            if not isinstance(raw, Mapping) or "name" not in raw or "kind" not in raw:
                raise SchemaError(f"schema column {i}: needs at least 'name' and 'kind'")
            args = {k: v for k, v in raw.items() if k in known}
            if args.get("categories") is not None:
                if not isinstance(args["categories"], list):
                    raise SchemaError(f"column {raw['name']!r}: categories must be a list")
                args["categories"] = tuple(args["categories"])
            if not isinstance(args.get("flags", []), list):
                raise SchemaError(f"column {raw['name']!r}: flags must be a list of strings")
            for flag in ("public", "integer", "learned", "proposed", "blanks", "written_as_text"):
                if flag in args and not isinstance(args[flag], bool):
                    raise SchemaError(f"column {raw['name']!r}: {flag!r} must be true or false")
            if args.get("kind") == DATETIME:  # a schema file's dates are text, never counts
                for name in DATE_VALUES:
                    if args.get(name) is not None and not isinstance(args[name], str):
                        what = name.replace("_", " ") + " bound" * (name in ("lower", "upper"))
                        raise SchemaError(f"column {raw['name']!r}: {what} must be a date "
                                          f"(ISO 8601, like '2020-01-31'), got {args[name]!r}")
            columns.append(Column(**args))
        extra = {k: v for k, v in data.items() if k not in ("columns", "target")}
        return cls(tuple(columns), target=data.get("target"), extra=extra)

    def to_json(self) -> str:
        """The schema as JSON, one column a line: readable, and written by json's C encoder
        (``indent`` would take the pure-Python one: a second for 20,000 columns)."""
        data = self.to_dict()
        columns = ",\n".join(f"    {json.dumps(c, ensure_ascii=False)}"
                              for c in data.pop("columns"))
        head = "".join(f"  {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)},\n"
                       for k, v in data.items())
        return f'{{\n{head}  "columns": [\n{columns}\n  ]\n}}\n'

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_json(), encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> Schema:
        if not isinstance(path, str | os.PathLike):
            raise SchemaError(f"a schema file's path must be a string or Path, got {path!r}")
        try:
            text = Path(path).read_text(encoding="utf-8-sig")
        except OSError as exc:
            raise SchemaError(f"cannot read schema file {str(path)!r}: {exc.strerror}") from None
        return cls.from_json(text)

    @classmethod
    def from_json(cls, text: str) -> Schema:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SchemaError(f"schema file is not valid JSON: {exc.msg} at line {exc.lineno}") \
                from None
        return cls.from_dict(data)



def check_schema(schema: Any) -> Schema:
    """``schema`` if it is a Schema, else a SchemaError naming what it is."""
    if not isinstance(schema, Schema):
        raise SchemaError(f"schema must be a Schema (Schema.load, infer_schema or "
                          f"Schema.from_dict), got {schema!r}")
    return schema



def check_table(table: Any, name: str = "table") -> pd.DataFrame:
    """``table`` if it is a DataFrame, else a DataError naming what it is."""
    if not isinstance(table, pd.DataFrame):
        raise DataError(f"{name} must be a pandas DataFrame (read_table reads one), got "
                        f"{type(table).__name__}")
    return table
