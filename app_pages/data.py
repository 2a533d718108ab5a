"""Data: look at the table, check the inferred schema, decide what is public knowledge."""

import json
from dataclasses import replace

import pandas as pd
import streamlit as st

from synth.schema import CATEGORICAL, Schema
from ui import layout, state

ds = layout.sidebar()
st.title("Data")
st.caption("Everything on this page shows the private table: it is for your eyes and is not "
           "part of any release.")

st.subheader(f"{ds.name}: {len(ds.table):,} rows")
st.dataframe(ds.table.head(200), width="stretch", height=260)


def describe(schema: Schema) -> pd.DataFrame:
    rows = []
    for c in schema:
        if c.kind == CATEGORICAL:
            domain = f"{len(c.categories or ())} categories"
        else:
            domain = f"[{c.lower:g}, {c.upper:g}]" + (" integers" if c.integer else "")
        rows.append({"column": c.name, "kind": c.kind, "domain": domain,
                     "domain is public": c.public, "warnings": "; ".join(c.flags)})
    return pd.DataFrame(rows)


st.subheader("Schema")
flagged = [c for c in ds.inferred if c.flags]
for col in flagged:
    st.warning(f"**{col.name}**: {'; '.join(col.flags)}")

names = ds.inferred.names
noisy = [c.name for c in ds.inferred
         if any(f.startswith(("identifier-like", "constant", "all values")) for f in c.flags)]
dropped = st.multiselect(
    "Columns to leave out of the synthetic table", names, default=noisy, key=f"drop:{ds.name}",
    help="Identifier-like and constant columns (pre-selected) only waste privacy budget.")
public = st.multiselect(
    "Columns whose domain (categories or bounds) is public knowledge", names,
    default=[c.name for c in ds.inferred if c.public], key=f"public:{ds.name}",
    help="A public domain costs no budget. Any other domain is learned privately from the "
         "table, with a share of the budget, before the method runs.")
categorical = [c.name for c in ds.inferred if c.kind == CATEGORICAL]
target = st.selectbox(
    "Target column for utility checks", [None, *categorical], key=f"target:{ds.name}",
    index=[None, *categorical].index(ds.inferred.target))

with state.guard("Updating the schema"):
    schema = replace(ds.inferred.declare_public(public), target=target)
    schema = schema.drop(dropped) if dropped else schema
    state.set_schema(schema)

st.dataframe(describe(ds.schema), width="stretch", hide_index=True)
if not ds.schema.releasable:
    private = [c.name for c in ds.schema if not c.public]
    st.info(f"{len(private)} column domains are data-derived ({', '.join(private[:6])}"
            f"{'…' if len(private) > 6 else ''}): a run learns them privately with part of "
            "the budget.")
st.caption("Declaring a domain public asserts that its categories or bounds, as listed, are "
           "known without looking at this table (from a codebook, say): they are released as is.")
st.download_button("Download working schema (JSON)",
                   data=json.dumps(ds.schema.to_dict(), indent=2), file_name="schema.json",
                   mime="application/json")
st.caption("The working schema holds domains and warnings read off the private table: keep it "
           "with the data. Releases carry only public and privately learned domains.")
