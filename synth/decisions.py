"""A steward's decisions about a table, kept past a reload or a restart.

The schema and every choice made about it on the Data page (which domains are public, the
target, the columns left out, whom a run protects, the columns read as numbers, the
confirmation) are the steward's work: the run store keeps them per table, under the table's
account key (:mod:`synth.store`), and the app restores them when the same table is opened
again, in any tab, after a reload or a restart.

The store keeps what the steward decided, never what inference read off the table: of each
column, only the fields that differ from inference's proposal for the table as read (a
confirmed kind, an edited policy or format, an origin), and its domain only where it is
declared public. On restoring, the table is proposed again and the kept fields are laid over
the proposal; a domain not declared public comes from the proposal, or is read again from
the table where the steward changed how the column is read (:func:`synth.schema.read_domain`).
So whether a column has blanks, a date format a single value decides or a kind no one
confirmed never reach the store.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any

import pandas as pd

from synth.errors import SchemaError
from synth.privacy.unit import PrivacyUnit
from synth.schema import DATE_FIELDS, Column, Schema, as_numbers, flags_for, read_domain

VERSION = 2
DOMAIN = ("lower", "upper", "categories")
_DEFAULTS = {f.name: f.default for f in fields(Column)}
# fields that change how a column's values are read: its domain is read again if one changed
READING = ("kind", "granularity", "timezone", "input_format")


@dataclass(frozen=True)
class Decisions:
    """What the steward decided about a table: ``schema`` holds the kinds, policies, public
    domains, target and confirmation; the rest are the page's other choices."""

    schema: Schema
    left_out: tuple[str, ...] = ()
    unit: PrivacyUnit = field(default_factory=PrivacyUnit)

    def working(self) -> Schema:
        """The schema a run uses: the columns left out, and the unit's column, dropped."""
        unit = self.unit.column
        leave = [*self.left_out, *([unit] if unit in self.schema.names
                                   and unit not in self.left_out else [])]
        return self.schema.drop(leave) if leave else self.schema

    def to_dict(self, proposal: Schema) -> dict[str, Any]:
        """The decisions as the store keeps them, against ``proposal`` (inference's reading
        of the table as read): each column's changed fields, no domain read off the table."""
        if list(proposal.names) != list(self.schema.names):
            raise SchemaError("decisions are kept against the proposal of the same columns")
        data = self.schema.to_dict()
        columns = [_changed(c, p) for c, p in zip(data.pop("columns"), proposal.to_dict()[
            "columns"], strict=True)]
        return {"version": VERSION, "schema": {**data, "columns": columns},
                "left_out": list(self.left_out), "unit": self.unit.column,
                "rows_per_unit": self.unit.max_rows}


def _changed(column: dict, proposed: dict) -> dict:
    """A column's fields that differ from the proposal's (its name always; its domain only
    where it is declared public; never the inference's warnings)."""
    written = {**{k: _DEFAULTS[k] for k in proposed}, **column}  # a default is not written
    changed = {k: v for k, v in written.items() if k != "flags" and (
        k not in proposed or proposed[k] != v)}
    if not column["public"]:
        changed = {k: v for k, v in changed.items() if k not in DOMAIN}
    return {"name": column["name"], **changed}


def restore(data: Any, table: pd.DataFrame, proposal: Schema
            ) -> tuple[pd.DataFrame, Decisions]:
    """Kept decisions (as :meth:`Decisions.to_dict` wrote them) applied to ``table`` as read,
    for which inference proposed ``proposal``: the table with the columns declared written
    as text converted to the numbers they write, and the decisions. A SchemaError names the
    column they no longer fit (never a value of it)."""
    if not isinstance(data, dict) or data.get("version") != VERSION:
        raise SchemaError("the kept decisions are of another version of this tool")
    kept = data["schema"]["columns"]
    if [c.get("name") for c in kept] != list(proposal.names):
        raise SchemaError("the kept decisions describe other columns than this table's")
    numbers = [c["name"] for c in kept if c.get("written_as_text")]
    table = table.assign(**{n: as_numbers(table[n]) for n in numbers}) if numbers else table
    columns = tuple(_restored(c, proposal[c["name"]], table[c["name"]]) for c in kept)
    schema = Schema.from_dict({**data["schema"], "columns": [c.to_dict() for c in columns]})
    left_out = tuple(data.get("left_out", ()))
    schema.drop(left_out)  # names every column the table lacks
    unit = PrivacyUnit(data.get("unit"), int(data.get("rows_per_unit", 1)))
    if unit.column is not None and unit.column not in table.columns:
        raise SchemaError(f"the kept privacy unit {unit.column!r} is not a column of this "
                          "table")
    return table, Decisions(schema, left_out, unit)


def _restored(kept: dict, proposed: Column, values: pd.Series) -> Column:
    """The proposal with the kept fields laid over it; its domain read again where the
    steward changed how the column is read and declared none."""
    base = {k: v for k, v in proposed.to_dict().items() if k != "flags"}
    reread = any(k in kept for k in READING) and not any(k in kept for k in DOMAIN)
    if reread:
        base = {k: v for k, v in base.items() if k not in (*DOMAIN, "meaning")}
    if kept.get("kind", proposed.kind) != proposed.kind:  # the former kind's own fields go
        base = {k: v for k, v in base.items() if k not in (*DATE_FIELDS, "fill_value")}
    try:
        col = Schema.from_dict({"columns": [{**base, **kept}]}).columns[0]
        col = read_domain(col, values) if reread else col
        flags = flags_for(proposed.flags, col.kind)
        if "input_format" in kept:  # the order is the steward's word (as edit_column says)
            flags = tuple(f for f in flags if "day/month order" not in f)
        return replace(col, flags=flags)
    except SchemaError:  # its message may quote the table's values: never shown
        raise SchemaError(f"column {proposed.name!r} no longer reads as it was declared") \
            from None
