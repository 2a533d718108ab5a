"""Column kinds and their domains, and the one place where a table meets its schema.

A column is numeric, categorical or datetime: a date is a whole number of units (days,
months, years or seconds) to every method, read and written as a date (:mod:`synth.dates`).
A column's *domain* (categories, or numeric or date bounds) is either **declared public** by
the user (``public=True``), **data-derived** (read off the private table by
:func:`infer_schema`: fine to look at, never to release), or **learned** under DP inside a run
(``learned=True``, see :mod:`synth.privacy.domains`). Methods only ever run on public or
learned domains.

A column's kind, integer flag and missing policy shape the release too, so they are the
user's declaration: :func:`infer_schema` marks what it reads off the table ``proposed``, and a
fit refuses a proposal until :meth:`Schema.confirm`.
"""

from __future__ import annotations

import json
import math
import os
import re
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
from synth.meaning import fits, meant, words

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

_NUMBER_TEXT = re.compile(r"^[\s$€£¥]*[-+]?(\d{1,3}(,\d{3})+|\d+)(\.\d+)?\s*[%$€£¥]?\s*$")
_BOOL_WORDS = ({"true", "false"}, {"yes", "no"}, {"t", "f"}, {"y", "n"})


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


# ---- inference ------------------------------------------------------------------------------


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


def check_schema(schema: Any) -> Schema:
    """``schema`` if it is a Schema, else a SchemaError naming what it is."""
    if not isinstance(schema, Schema):
        raise SchemaError(f"schema must be a Schema (Schema.load, infer_schema or "
                          f"Schema.from_dict), got {schema!r}")
    return schema


def check_columns(table: Any, schema: Any) -> None:
    """A DataFrame that has every column of a Schema, or an error naming what is missing."""
    check_table(table)
    check_schema(schema)
    missing_cols = [c.name for c in schema if c.name not in table.columns]
    if missing_cols:
        raise SchemaError(f"the table lacks schema columns {missing_cols}; "
                          f"it has {list(map(str, table.columns))[:20]}")


def check_table(table: Any, name: str = "table") -> pd.DataFrame:
    """``table`` if it is a DataFrame, else a DataError naming what it is."""
    if not isinstance(table, pd.DataFrame):
        raise DataError(f"{name} must be a pandas DataFrame (read_table reads one), got "
                        f"{type(table).__name__}")
    return table


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
    names = _names(uniques)
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
    return pd.to_numeric(_unseparated(values.astype("string")), errors="coerce").where(
        values.notna())


def _unseparated(text: pd.Series) -> pd.Series:
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


# ---- a table against its schema -------------------------------------------------------------


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


def category_values(values: pd.Series) -> pd.Series:
    """Values as category strings: stripped, with missing (NaN, None, blank) as ``<missing>``.

    Each distinct value is normalised once (factorize), then spread back by its code.
    """
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    names = np.array([*_names(uniques), MISSING], dtype=object)
    return pd.Series(names[codes], index=values.index, dtype=object)  # code −1 → <missing>


def _names(uniques: Any) -> list[str]:
    """Distinct values as category strings (blank ones as ``<missing>``)."""
    return [_category(u).strip() or MISSING for u in uniques]


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
        text = _unseparated(text) if col.written_as_text else text
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
