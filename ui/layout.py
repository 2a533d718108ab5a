"""What every page draws first: the dataset picker in the sidebar.

Each page calls :func:`sidebar` itself rather than app.py drawing it, so the sidebar is part
of every page run (AppTest reruns only the page script under st.navigation).
"""

from __future__ import annotations

import streamlit as st

from synth.data import DEFAULT_MAX_BYTES, read_table
from synth.schema import infer_schema
from ui import state


def sidebar() -> state.Dataset:
    """Draw the dataset picker; return the dataset the page should use."""
    with st.sidebar:
        st.header("Dataset")
        upload = st.file_uploader(
            f"Upload a CSV or Parquet table (up to {DEFAULT_MAX_BYTES // 2**20} MB)",
            type=["csv", "tsv", "txt", "parquet"], key="upload")
        if upload is not None and st.session_state.get("loaded_upload") != upload.file_id:
            st.session_state["loaded_upload"] = upload.file_id  # a bad file is tried once
            with state.guard(f"Reading {upload.name}"):
                table = read_table(upload)
                schema = infer_schema(table)
                state.set_dataset(state.Dataset(upload.name, table, schema, schema))
        if st.button("Use the bundled sample",
                     disabled=state.dataset().name == state.SAMPLE_NAME):
            state.reset_dataset()
        ds = state.dataset()
        st.caption(f"**{ds.name}**: {len(ds.table):,} rows × {ds.table.shape[1]} columns")
        done = len(state.runs())
        st.caption(f"{done} finished run{'s' * (done != 1)} this session")
    return ds
