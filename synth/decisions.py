"""A steward's decisions about a table, kept past a reload or a restart.

The schema and every choice made about it on the Data page (which domains are public, the
target, the columns left out, whom a run protects, the columns read as numbers, the
confirmation) are the steward's work: the run store keeps them per table, under the table's
account key (:mod:`synth.store`), and the app restores them when the same table is opened
again, in any tab, after a reload or a restart.

The store keeps no value of the table. A domain declared public, or known from a column's
meaning, is kept as declared; any other domain (read off the table's values by inference or
by an edit, and learned privately by a run) is left out, with the inference's warnings, and
read again from the table when the decisions are restored (:func:`synth.schema.read_domain`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

from synth.errors import SchemaError
from synth.privacy.unit import PrivacyUnit
from synth.schema import Column, Schema, as_numbers, flags_for, read_domain

VERSION = 1


@dataclass(frozen=True)
class Decisions:
    """What the steward decided about a table: ``schema`` holds the kinds, policies, public
    domains, target and confirmation; the rest are the page's other choices."""

    schema: Schema
    left_out: tuple[str, ...] = ()
    unit: PrivacyUnit = field(default_factory=PrivacyUnit)
    as_numbers: tuple[str, ...] = ()  # columns of numbers written as text, read as numbers

    def working(self) -> Schema:
        """The schema a run uses: the columns left out, and the unit's column, dropped."""
        unit = self.unit.column
        leave = [*self.left_out, *([unit] if unit in self.schema.names
                                   and unit not in self.left_out else [])]
        return self.schema.drop(leave) if leave else self.schema

    def to_dict(self) -> dict[str, Any]:
        """The decisions as the store keeps them: no domain read off the table."""
        kept = replace(self.schema, columns=tuple(_kept(c) for c in self.schema))
        return {"version": VERSION, "schema": kept.to_dict(), "left_out": list(self.left_out),
                "unit": self.unit.column, "rows_per_unit": self.unit.max_rows,
                "as_numbers": list(self.as_numbers)}


def _kept(col: Column) -> Column:
    """What the store keeps of a column: all of it where its domain is public knowledge,
    else all but its domain; never the inference's warnings (they quote values)."""
    if col.public or col.meaning:
        return replace(col, flags=())
    return replace(col, lower=None, upper=None, categories=None, flags=())


def restore(data: Any, table: pd.DataFrame, inferred: Schema) -> tuple[pd.DataFrame, Decisions]:
    """Kept decisions (as :meth:`Decisions.to_dict` wrote them) applied to ``table`` as read,
    whose schema inference proposed ``inferred``: the table with the columns read as numbers
    converted, and the decisions with each domain left out read again from it (and the
    inference's warnings that hold for each column's kind). A SchemaError says why they no
    longer fit it."""
    if not isinstance(data, dict) or data.get("version") != VERSION:
        raise SchemaError("the kept decisions are of another version of this tool")
    numbers = tuple(data.get("as_numbers", ()))
    unknown = [n for n in numbers if n not in table.columns]
    if unknown:
        raise SchemaError(f"the kept decisions read columns {unknown[:3]} as numbers, which "
                          "this table does not have")
    table = table.assign(**{n: as_numbers(table[n]) for n in numbers}) if numbers else table
    kept = Schema.from_dict(data["schema"])
    if list(kept.names) != list(inferred.names):
        raise SchemaError("the kept decisions describe other columns than this table's")

    def back(col: Column) -> Column:
        col = replace(col, flags=flags_for(inferred[col.name].flags, col.kind))
        return col if col.public or col.meaning else read_domain(col, table[col.name])

    schema = replace(kept, columns=tuple(back(c) for c in kept))
    left_out = tuple(data.get("left_out", ()))
    schema.drop(left_out)  # names every column the table lacks
    unit = PrivacyUnit(data.get("unit"), int(data.get("rows_per_unit", 1)))
    if unit.column is not None and unit.column not in table.columns:
        raise SchemaError(f"the kept privacy unit {unit.column!r} is not a column of this "
                          "table")
    return table, Decisions(schema, left_out, unit, numbers)
