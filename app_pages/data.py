"""Data: look at the table, check and edit its schema, decide what is public knowledge."""

import json
from dataclasses import replace

import pandas as pd
import streamlit as st

from synth.data import counted
from synth.dates import GRANULARITIES, TIMEZONES
from synth.decisions import Decisions
from synth.declarations import published, round_bounds, warnings
from synth.errors import SynthError
from synth.privacy.domains import missing_origin
from synth.privacy.unit import PrivacyUnit, kept_rows, population
from synth.schema import (
    CATEGORICAL,
    DATETIME,
    KINDS,
    MISSING_POLICIES,
    NUMERIC,
    Schema,
    as_numbers,
    edit_column,
    read_as_numbers,
    validate,
)
from ui import layout, state

ds = layout.sidebar()
st.title("Data")
st.caption("Everything on this page shows the private table: it is for your eyes and is not "
           "part of any release.")

st.subheader(f"{ds.name}: {counted(len(ds.table), 'row')}")
if ds.restored:
    st.info(ds.restored, icon=":material/history:")
if ds.namesake:
    st.warning(ds.namesake, icon=":material/difference:")
st.dataframe(ds.table.head(200), width="stretch", height=260)
if ds.fragile:
    st.caption(f"Its privacy account: {ds.fragile}.")


def matching(schema: Schema, table: pd.DataFrame) -> Schema:
    """A loaded schema, checked against this table's columns and values."""
    validate(table, schema)  # names missing columns and values outside a declared domain
    return schema


def describe(schema: Schema) -> pd.DataFrame:
    rows = []
    for c in schema:
        if c.kind == CATEGORICAL:
            domain = counted(len(c.categories or ()), "category", "categories")
        else:
            domain = f"[{c.shown(c.lower)}, {c.shown(c.upper)}]"
        if c.meaning:  # public knowledge, proposed from the name: not read off the table
            domain += f" ({c.meaning.split(' is ')[0]}, from its name)"
        kind = f"{c.kind} by {c.granularity}" if c.kind == DATETIME else c.kind
        rows.append({"column": c.name, "kind": kind,
                     "integer": c.integer if c.kind == NUMERIC else None,
                     "missing values": c.missing if c.kind != CATEGORICAL else "a category",
                     "domain": domain, "domain is public": c.public,
                     "read from the data": c.proposed, "warnings": "; ".join(c.flags)})
    return pd.DataFrame(rows)


def kept(what: str) -> dict:
    """A choice about the current schema, kept for the session and renewed with the schema
    (an edit, a loaded file, another table)."""
    return {"key": state.mine(what, schema=True), "persist_state": "session"}


def shown(col, value) -> str:
    """A date field as its text box shows it ('' when unset)."""
    return "" if value is None else col.shown(value)


st.subheader("Schema")
with st.expander("Edit a column, or load a schema file"):
    st.caption("Changing a column's kind re-reads its domain from the table (data-derived until "
               "you declare it public); edited bounds or categories replace its domain.")
    state.among(state.mine("edit"), ds.base.names)
    name = st.selectbox("Column to edit", ds.base.names, key=state.mine("edit"),
                        persist_state="session")
    col = ds.base[name]
    kind = st.radio("Kind", KINDS, index=KINDS.index(col.kind), horizontal=True,
                    **kept(f"kind:{name}"))
    lower = upper = categories = integer = policy = fill = None
    when: dict = {}  # a datetime column's own fields (synth.dates)
    if kind == DATETIME:
        when["input_format"] = st.text_input(
            "How the table writes its dates (a strftime pattern; blank: ISO 8601)",
            col.input_format or "", placeholder="%d/%m/%Y", **kept(f"input-format:{name}"),
            help="%d day, %m month, %Y year, %H:%M:%S time: 31/12/2024 is %d/%m/%Y, "
                 "12/31/2024 is %m/%d/%Y. Where both read every value, the order is yours to "
                 "say.") or None
    if kind == DATETIME and col.kind == DATETIME:
        left, right = st.columns(2)
        when["granularity"] = left.selectbox(
            "Granularity", GRANULARITIES, index=GRANULARITIES.index(col.granularity),
            **kept(f"granularity:{name}"),
            help="The unit a date is counted in: day, month or year, or second for a "
                 "timestamp. Coarser units release less detail.")
        when["timezone"] = right.selectbox(
            "Time zone", TIMEZONES, index=TIMEZONES.index(col.timezone),
            **kept(f"timezone:{name}"),
            help="naive: wall-clock values without a zone (one that has a zone is refused); "
                 "UTC: values with an offset are converted to UTC.")
        # a date is passed on only when edited: one shown at the old granularity ('2021-12')
        # would undo the conversion, and shown bounds would undo a re-read in a new order
        lower = left.text_input("Lower bound (a date)", shown(col, col.lower),
                                **kept(f"lower:{name}"))
        lower = None if lower == shown(col, col.lower) else lower or None
        upper = right.text_input("Upper bound (a date)", shown(col, col.upper),
                                 **kept(f"upper:{name}"))
        upper = None if upper == shown(col, col.upper) else upper or None
        origin = left.text_input(
            "Public origin (a date; blank: the lower bound)", shown(col, col.origin),
            **kept(f"origin:{name}"),
            help="Dates are counted from here. Bounds learned privately are sought outward "
                 "from it, so it must be public and near the data: the start of the "
                 "collection, say.")
        if origin != shown(col, col.origin):
            when["origin"] = origin or None
        when["format"] = right.text_input(
            "Release format (a strftime pattern; blank: ISO 8601)", col.format or "",
            **kept(f"format:{name}")) or None
        policy = left.selectbox("A missing date is", MISSING_POLICIES,
                                index=MISSING_POLICIES.index(col.missing),
                                **kept(f"missing:{name}"))
        if policy == "fill":
            fill = right.text_input("Public fill date", shown(col, col.fill_value),
                                    **kept(f"fill:{name}"))
            fill = None if fill == shown(col, col.fill_value) else fill or None
    elif kind == NUMERIC and col.kind == NUMERIC:
        left, right = st.columns(2)
        lower = left.number_input("Lower bound", value=col.lower, format="%g",
                                  **kept(f"lower:{name}"))
        upper = right.number_input("Upper bound", value=col.upper, format="%g",
                                   **kept(f"upper:{name}"))
        integer = left.checkbox("Whole numbers only (integer)", value=col.integer,
                                **kept(f"integer:{name}"),
                                help="Synthetic values are whole numbers, and the methods can "
                                     "keep point masses such as 0 or 40 exactly.")
        policy = right.selectbox("A missing value is", MISSING_POLICIES,
                                 index=MISSING_POLICIES.index(col.missing),
                                 **kept(f"missing:{name}"),
                                 help="none: an error; indicator: learned as a present/missing "
                                      "column (blanks in the release); fill: a public value")
        if policy == "fill":
            fill = right.number_input("Public fill value", value=col.fill_value, format="%g",
                                      **kept(f"fill:{name}"))
    elif kind == CATEGORICAL and col.kind == CATEGORICAL:
        text = st.text_area("Categories, one per line", "\n".join(col.categories or ()),
                            **kept(f"categories:{name}"))
        categories = [line.strip() for line in text.splitlines() if line.strip()]
    if st.button("Apply to this column"):
        with state.guard(f"Editing column {name!r}"):
            confirmed = not ds.schema.proposed  # the steward's word stands for the others,
            edited = edit_column(replace(col, proposed=col.proposed and not confirmed),
                                 ds.table[name], kind, lower=lower, upper=upper,
                                 categories=categories, integer=integer, missing=policy,
                                 fill_value=fill, **when)  # and for this one unless re-read
            base = ds.base.replace_column(edited)
            state.set_base(base.confirm([c for c in base.names if c != name]) if confirmed
                           else base)
            st.rerun()
    loaded = st.file_uploader("Load a schema (JSON), e.g. one saved from this page",
                              type=["json"], key=f"schema-file:{ds.name}")
    if loaded is not None and state.first_time("schema file", loaded.file_id):
        with state.guard(f"Loading {loaded.name}"):
            state.set_base(matching(Schema.from_json(loaded.getvalue().decode("utf-8-sig")),
                                    ds.table), fresh_choices=True)
            st.rerun()

flagged = [c for c in ds.base if c.flags]
for col in flagged:
    st.warning(f"**{col.name}**: {'; '.join(col.flags)}")
    if any(f.startswith("numbers stored as text") for f in col.flags) and st.button(
            f"Read {col.name} as numbers", key=f"as-numbers:{ds.name}:{col.name}"):
        with state.guard(f"Reading {col.name!r} as numbers"):
            # a new object (kept results are keyed per table object); the privacy account
            # stays the file's as read (ds.read_as)
            text = ds.table[col.name]
            ds.table = ds.table.assign(**{col.name: as_numbers(text)})
            ds.converted = True  # the file as it lies is no longer this table
            state.set_base(ds.base.replace_column(read_as_numbers(col, text)))
            st.rerun()

names = ds.base.names
categorical = [c.name for c in ds.base if c.kind == CATEGORICAL]
targets = ["", *categorical]  # "": none (a kept None would read as no choice at all)
for choice, options in (("drop", names), ("public", names), ("target", targets)):
    state.among(state.mine(choice), options)
dropped = st.multiselect(
    "Columns to leave out of the synthetic table", names, key=state.mine("drop"),
    persist_state="session",
    help="Every column is released unless you leave it out. Identifier-like and constant "
         "columns (see the warnings) only waste privacy budget.")
known = [c for c in ds.base if c.meaning]
declared = st.session_state.get(state.mine("public"), [c.name for c in ds.base if c.public])
if known and not {c.name for c in known} <= set(declared):
    def declare_known() -> None:
        chosen = st.session_state.get(state.mine("public"), declared)
        st.session_state[state.mine("public")] = [*chosen, *(
            c.name for c in known if c.name not in chosen)]

    st.button(f"Declare the {counted(len(known), 'domain')} known from column names public: "
              + "; ".join(f"{c.name} ({c.meaning.split(' is ')[-1]})" for c in known[:6])
              + ("…" if len(known) > 6 else ""), on_click=declare_known,
              help="A month is 1–12 and an hour 0–23 whatever the table holds: proposed from "
                   "each column's name, never read off its values, so declaring them "
                   "publishes nothing about the rows and costs no budget.")
public = st.multiselect(
    "Columns whose domain (categories or bounds) is public knowledge", names,
    default=None if state.mine("public") in st.session_state else [
        c.name for c in ds.base if c.public], key=state.mine("public"),
    persist_state="session",
    help="A public domain costs no budget and is released exactly as listed below (a "
         "number or date that may be blank still pays a little to count its blanks, unless "
         "its missing policy is none). Any other domain is learned privately from "
         "the table, with a share of the budget.")
target = st.selectbox(
    "Target column for utility checks", targets, key=state.mine("target"),
    persist_state="session",
    index=targets.index(ds.base.target or ""), format_func=lambda c: c or "none") or None

st.subheader("Whom to protect")
st.markdown(
    "By default each **row** is protected. If one person (or household) can have several rows "
    "here, visits or months say, name the column that says whose row it is: the guarantee "
    "then covers **all of a person's rows**. At most *k* rows of each person are used, chosen "
    "at random; a person's other rows are left out. A larger k keeps more rows but needs more "
    "noise to hide a whole person. The column itself is never synthesized or released.")
units = ["", *map(str, ds.table.columns)]  # the schema may leave an ID column out already
state.among(state.mine("unit"), units)
left, right = st.columns(2)
with left:
    unit_column = st.selectbox(
        "Column naming the person (or household) of each row", units, key=state.mine("unit"),
        index=units.index(ds.unit.column or ""), persist_state="session",
        format_func=lambda c: c or "none: protect each row")
with right:
    k = st.number_input("At most k rows per person", min_value=1, max_value=10_000,
                        value=ds.unit.max_rows, step=1, key=state.mine("unit-k"),
                        persist_state="session", disabled=not unit_column)
unit = PrivacyUnit(unit_column or None, int(k) if unit_column else 1)
try:
    people = population(ds.table, unit)
except SynthError as exc:  # no run may fall back to protecting rows: they wait for a fix
    ds.unit, ds.unit_problem = PrivacyUnit(), f"The privacy unit is refused: {exc}."
    st.error(ds.unit_problem, icon=":material/error:")
else:
    ds.unit, ds.unit_problem = unit, ""
    if unit.declared:
        st.caption(f"{people.units:,} people; at most {unit.max_rows} rows each keeps "
                   f"{kept_rows(ds.table, unit):,} of the {len(ds.table):,} rows (for you: "
                   "plans and releases never show how many rows are kept).")
        most = int(ds.table[unit.column].value_counts().max())
        if unit.max_rows > most:
            st.warning(f"No one has more than {most} rows here, so k = {unit.max_rows} keeps "
                       f"no more rows than k = {most} but adds noise for rows no one has: "
                       f"k = {most} keeps every row for less.", icon=":material/warning:")
    else:
        st.caption("Protecting each row: someone with several rows is protected more weakly.")

confirmed = not ds.base.proposed or st.checkbox(
    "I have checked each column's kind, integer flag and missing-value policy: they are my "
    "declaration, not a reading of the data", **kept("confirm"))

with state.guard("Updating the schema"):
    schema = replace(ds.base.declare_public(public), target=target)
    state.decide(Decisions(schema.confirm() if confirmed else schema, tuple(dropped), ds.unit))

st.dataframe(describe(ds.schema), width="stretch", hide_index=True)
if ds.schema.proposed:
    n = len(ds.schema.proposed)
    st.warning(f"{counted(n, 'column')} {'is a proposal' if n == 1 else 'are proposals'} read "
               f"from the table ({', '.join(ds.schema.proposed[:6])}"
               f"{'…' if n > 6 else ''}: kind, integer flag, missing values): a run refuses "
               f"{'it' if n == 1 else 'them'} until you confirm above.")
shown = [c for c in ds.schema if c.public]
dated = [c for c in ds.schema if c.kind == DATETIME and not c.public]  # their fields publish
if shown or dated:
    with st.expander(f"Exactly what the {len(shown)} public domains publish", expanded=True):
        for col in shown:
            st.markdown(f"**{col.name}**: {published(col)}")
        for col in dated:
            st.markdown(f"**{col.name}** (domain learned privately): {published(col)}")
        said = warnings(ds.schema, ds.table)
        if said:  # one box, however many columns (the census sample opened with 11)
            st.warning(f"{counted(len(said), 'public declaration')} "
                       f"{'matches' if len(said) == 1 else 'match'} the table closely:"
                       "\n" + "\n".join(f"- {line}" for line in said))
        numeric = [c.name for c in shown if c.kind != CATEGORICAL]
        if numeric and st.button("Round the public bounds to nice values",
                                 help="Widens each public numeric domain outward to round "
                                      "numbers (a date's to round years): the exact extremes "
                                      "are not published, though rounded ones still tell "
                                      "roughly how far the data reaches."):
            with state.guard("Rounding the bounds"):
                state.set_base(round_bounds(ds.base, ds.table, numeric))
                st.rerun()
unanchored = [c.name for c in ds.schema if c.kind == DATETIME and not c.public
              and c.origin is None]
if unanchored:  # said here, where the origin is declared, not first on Synthesize
    said = missing_origin(unanchored)
    st.warning(f"{said[0].upper()}{said[1:]}: edit the column above.")
if not ds.schema.releasable:
    private = [c.name for c in ds.schema if not c.public]
    st.info(f"{counted(len(private), 'column domain')} "
            f"{'is' if len(private) == 1 else 'are'} data-derived ({', '.join(private[:6])}"
            f"{'…' if len(private) > 6 else ''}): a run learns them privately with part of "
            "the budget.")
st.caption("Declaring a domain public asserts that its categories or bounds, as listed, are "
           "known without looking at this table (from a codebook, say): they are released as is.")
st.download_button("Download working schema (JSON)",
                   data=json.dumps(ds.schema.to_dict(), indent=2), file_name="schema.json",
                   mime="application/json")
st.caption("The working schema holds domains and warnings read off the private table: keep it "
           "with the data. Releases carry only public and privately learned domains.")
