"""What every page draws first: the dataset picker in the sidebar.

Each page calls :func:`sidebar` itself rather than app.py drawing it, so the sidebar is part
of every page run (AppTest reruns only the page script under st.navigation).
"""

from __future__ import annotations

import streamlit as st

from synth.account import Usage
from synth.data import DEFAULT_MAX_BYTES, read_table
from synth.privacy.budget import epsilon_text
from synth.schema import infer_schema
from ui import runner, state

ENCODINGS = ("utf-8", "latin-1", "cp1252")


def spent_words(usage: Usage) -> str:
    """The table's lifetime spending in a line: spent, and what remains under a limit."""
    spent = f"ε = {epsilon_text(usage.epsilon)}, δ = {usage.delta:.2g}"
    if usage.limit_epsilon is None:
        return f"Privacy spent on this table, all runs: {spent} (no limit set)"
    eps, _ = usage.remaining
    return (f"Privacy spent on this table, all runs: {spent}; ε = {epsilon_text(eps)} of "
            f"its limit {usage.limit_epsilon:g} remains")


def sidebar() -> state.Dataset:
    """Draw the dataset picker; return the dataset the page should use."""
    with st.sidebar:
        st.header("Dataset")
        upload = st.file_uploader(
            f"Upload a CSV or Parquet table (up to {DEFAULT_MAX_BYTES // 2**20} MB)",
            type=["csv", "tsv", "txt", "parquet"], key="upload")
        encoding = st.selectbox(
            "Text encoding", ENCODINGS, key="encoding",
            help="UTF-8 is read by default (a byte-order mark is recognised); a file saved by "
                 "older spreadsheet software may be Latin-1 or Windows-1252.")
        chosen = (upload.file_id, encoding) if upload is not None else None
        if upload is not None and state.first_time("upload", chosen):  # once per encoding
            with state.guard(f"Reading {upload.name}"):
                upload.seek(0)
                table = read_table(upload, encoding=None if encoding == ENCODINGS[0]
                                   else encoding)
                schema = infer_schema(table)
                state.set_dataset(state.Dataset(upload.name, table, schema, schema))
        if st.button("Use the bundled sample",
                     disabled=state.dataset().name == state.SAMPLE_NAME):
            state.reset_dataset()
        ds = state.dataset()
        ended = state.collect()  # a run that finished while any page was open
        if ended is not None and ended.status == runner.DONE:
            st.toast(f"Finished: {ended.name}", icon=":material/check_circle:")
        st.caption(f"**{ds.name}**: {len(ds.table):,} rows × {ds.table.shape[1]} columns")
        done = len(state.runs())
        st.caption(f"{done} finished run{'s' * (done != 1)} this session")
        with state.guard("Reading the privacy account"):
            st.caption(spent_words(state.account(ds).usage()))
        if state.job() is not None:
            st.caption(f":material/hourglass_top: running: {state.job().name}")
    return ds
