"""The unit of protection: one row, or every row of one person (household, …), at most k kept.

Record-level DP protects a row; a person with 40 visits in the table is then protected 40
times more weakly. Declaring a **privacy unit** (a column naming whose rows they are) and a
bound k changes the neighbouring relation to *replace one unit*: every row of one unit may
change, appear or vanish. Before any mechanism sees the table, **contribution bounding**
keeps at most k rows of each unit, chosen at random from OS entropy (:func:`bound`), so after
it a unit holds between 1 and k rows.

What that does to the calibrations (derived in :mod:`synth.privacy.events`, each with a
factor ``rows_per_unit`` = k):

* The **number of units U** is public under this relation, as the row count n is under
  replace-one-record: swapping a unit's rows for another's leaves U as it is.
* The **row count after bounding** is not: a unit of 1 row can become one of k rows, so it
  moves by up to k − 1. It is estimated with the Laplace mechanism (:func:`rows_event`, the
  ``rows`` stage: pure ε-DP, so it takes ε and no δ) and the estimate n̂ is the public n from
  then on: fractions of rows are counts divided by n̂, and the release has n̂ rows. With k = 1
  it is U, with nothing spent.
* A unit's change is at most k single-row changes, so by the triangle inequality every
  sensitivity of a count vector (and of fractions over a fixed n̂) is k times the record's.
* DP-SGD samples units and clips each unit's summed gradient (:mod:`synth.methods.dpgan`), so
  its noise does not grow with k at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from synth.errors import BudgetError, ParameterError, SchemaError, check_int
from synth.privacy.events import RELATION, Laplace, row_count_l1
from synth.privacy.mechanisms import fresh_rng, laplace

ROWS = "rows"  # the budget stage that estimates the bounded table's row count (k > 1)
# of ε, by default: n̂ within about ±(k − 1)/(0.05 ε) rows. None of δ: the Laplace count is
# pure ε-DP, so the method's budget gives its δ to the other stages
ROWS_SHARE = 0.05


@dataclass(frozen=True)
class PrivacyUnit:
    """Whom a run protects: ``column`` names the unit each row belongs to (``None``: every
    row is its own unit, as without this declaration), and at most ``max_rows`` (k) rows of
    each unit are used."""

    column: str | None = None
    max_rows: int = 1

    def __post_init__(self) -> None:
        if self.column is not None and (not isinstance(self.column, str)
                                        or not self.column.strip()):
            raise ParameterError(f"the privacy unit must be a column name, got "
                                 f"{self.column!r}")
        k = check_int(self.max_rows, "max_rows_per_unit", 1)
        if self.column is None and k != 1:
            raise ParameterError(f"max_rows_per_unit = {k} needs a privacy-unit column: "
                                 "without one each row is its own unit")
        object.__setattr__(self, "max_rows", k)

    @property
    def declared(self) -> bool:
        return self.column is not None

    @property
    def relation(self) -> str:
        """The neighbouring relation in words, for the ledger and the report."""
        if not self.declared:
            return RELATION
        rows = "1 row" if self.max_rows == 1 else f"≤ {self.max_rows} rows"
        return (f"replace one unit, all rows sharing a value of {self.column!r} ({rows} "
                "kept per unit; the number of units is public)")

    @property
    def short(self) -> str:
        """Whom a run protected, in a few words (the account's per-unit totals). Not k: runs
        protecting one person at different k all bound that person's loss, and add up."""
        return f"one {self.column!r}" if self.declared else "one row"

    def to_dict(self) -> dict[str, Any]:
        return {"column": self.column, "max_rows": self.max_rows}

    @classmethod
    def from_dict(cls, data: Any) -> PrivacyUnit:
        if not isinstance(data, dict) or set(data) - {"column", "max_rows"}:
            raise BudgetError(f"a privacy unit is {{'column': name, 'max_rows': k}}, got "
                              f"{data!r}")
        return cls(data.get("column"), data.get("max_rows", 1))


@dataclass(frozen=True)
class Population:
    """What a plan may use about the private table, all public under the run's relation:
    n rows (the row count, or its private estimate n̂ when k > 1), in U units of at most k
    rows each. Without a unit, U = n and k = 1."""

    rows: int
    units: int
    max_rows: int = 1

    def __post_init__(self) -> None:
        for name in ("rows", "units", "max_rows"):
            object.__setattr__(self, name, check_int(getattr(self, name), name))
        if not self.units <= self.rows <= self.units * self.max_rows:
            raise ParameterError(f"{self.rows:,} rows cannot come from {self.units:,} units "
                                 f"of 1 to {self.max_rows} rows each")

    def public(self) -> Population:
        """What a rule or refusal may read: with more than one row per unit the rows bounding
        keeps are private, so they are replaced by their public bound k·U."""
        return self if self.max_rows == 1 else Population(self.units * self.max_rows,
                                                          self.units, self.max_rows)

    @classmethod
    def of(cls, rows: int | Population, unit: PrivacyUnit) -> Population:
        """``rows`` as the population of a run protecting ``unit``: an int is n rows, one per
        unit, which is all a record-level plan needs; a unit of more rows needs its
        population given (how many units, how many rows bounding keeps)."""
        if isinstance(rows, Population):
            if rows.max_rows != unit.max_rows:
                raise ParameterError(f"the population has up to {rows.max_rows} rows per "
                                     f"unit, the privacy unit {unit.max_rows}")
            return rows
        if unit.max_rows > 1:
            raise ParameterError(f"a plan for up to {unit.max_rows} rows per unit needs the "
                                 "number of units and of rows kept: give a Population")
        n = check_int(rows, "n (rows)")
        return cls(n, n)


def bound(table: pd.DataFrame, unit: PrivacyUnit) -> tuple[pd.DataFrame, np.ndarray]:
    """The table with at most k rows per unit, chosen at random from OS entropy, and without
    the unit column; with each kept row's unit as 0 … U − 1. A unit column that cannot be a
    unit (absent, with missing values, one unit, a different value on every row) is refused
    by name: the steward sees why, and nothing has been spent."""
    if not unit.declared:
        return table, np.arange(len(table))
    codes, rng = _units(table, unit), fresh_rng()
    # kept rows in a random order, units renumbered at random: no position or label says
    # where a unit sat in the file, so replacing one unit by a longer or shorter one moves
    # no other unit's place (a published post-processing seed pairs DP-SGD's fakes, and
    # DP-Select's sections, with positions)
    keep = rng.permutation(_at_most(codes, unit.max_rows, rng))
    label = rng.permutation(int(codes.max()) + 1)
    return (table.drop(columns=[unit.column]).iloc[keep].reset_index(drop=True),
            label[codes[keep]])


def population(table: pd.DataFrame, unit: PrivacyUnit) -> Population:
    """The public population a run on ``table`` plans for: n rows, or U units with k·U
    standing for the rows bounding keeps (those are private: a 7-row person replaced by a
    1-row one moves them; the fit estimates them privately)."""
    if not unit.declared:
        return Population(len(table), len(table))
    units = int(_units(table, unit).max()) + 1
    return Population(units * unit.max_rows, units, unit.max_rows)


def kept_rows(table: pd.DataFrame, unit: PrivacyUnit) -> int:
    """How many rows bounding keeps (at most k per unit): private, for the steward's own
    eyes (the Data page), never for a plan."""
    if not unit.declared:
        return len(table)
    return int(np.minimum(np.bincount(_units(table, unit)), unit.max_rows).sum())


def beyond_cap(table: pd.DataFrame, unit: PrivacyUnit) -> int:
    """How many of ``table``'s rows bounding leaves out (past k of their unit): private, a
    figure for the steward's checklist only."""
    if not unit.declared:
        return 0
    return int(np.clip(np.bincount(_units(table, unit)) - unit.max_rows, 0, None).sum())


def _units(table: pd.DataFrame, unit: PrivacyUnit) -> np.ndarray:
    """Each row's unit as 0 … U − 1, or a refusal naming the column."""
    name = unit.column
    if name not in table.columns:
        raise SchemaError(f"privacy unit column {name!r} is not in the table; its columns "
                          f"are {list(map(str, table.columns))}")
    ids = table[name]
    if isinstance(ids, pd.DataFrame):
        raise SchemaError(f"the table has several columns named {name!r}; rename them")
    missing = int(ids.isna().sum())
    if missing:
        raise SchemaError(f"privacy unit column {name!r} has no value on {missing:,} row(s): "
                          "every row must name its unit (rows without one could belong to "
                          "anyone, so no bound on a person's rows would hold)")
    codes, uniques = pd.factorize(ids)
    if len(uniques) == 1 and len(table) > 1:
        raise SchemaError(f"privacy unit column {name!r} has one value for every row: the "
                          "whole table would be one unit, of which at most "
                          f"{unit.max_rows} row(s) are kept; choose the column that names "
                          "people (or households)")
    if len(uniques) == len(table) and len(table) > 1:
        raise SchemaError(f"privacy unit column {name!r} has a different value on every row: "
                          "it identifies rows, not people; leave the privacy unit out to "
                          "protect one row, which is the same guarantee")
    return codes


def _at_most(codes: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """Row positions keeping at most ``k`` rows of each code, a uniform choice within each."""
    order = np.lexsort((rng.random(len(codes)), codes))  # by unit, shuffled within
    grouped = codes[order]
    starts = np.flatnonzero(np.r_[True, grouped[1:] != grouped[:-1]])
    rank = np.arange(len(codes)) - np.repeat(starts, np.diff(np.r_[starts, len(codes)]))
    return np.sort(order[rank < k])


def rows_event(epsilon: float, max_rows: int) -> Laplace:
    """The row count after bounding plus Laplace noise: sensitivity k − 1 (a unit's 1 … k
    rows become another's 1 … k, :func:`~synth.privacy.events.row_count_l1`), ε-DP."""
    if max_rows < 2:
        raise BudgetError("with one row per unit the row count is public: nothing to estimate")
    if not epsilon > 0:
        raise BudgetError(f"the {ROWS!r} share is empty, but with up to {max_rows} rows per "
                          "unit the row count must be estimated privately")
    sensitivity = row_count_l1(max_rows)
    return Laplace(sensitivity / epsilon, sensitivity)


def estimate_rows(rows: int, units: int, event: Laplace, max_rows: int) -> int:
    """n̂: the bounded row count plus the event's noise, rounded into [U, k·U], where every
    bounded table's count lies (post-processing with public U and k)."""
    noisy = float(laplace(np.array([float(rows)]), event.scale)[0])
    return int(min(max(round(noisy), units), max_rows * units))
