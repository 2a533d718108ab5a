"""What every page draws first: the dataset picker in the sidebar.

Each page calls :func:`sidebar` itself rather than app.py drawing it, so the sidebar is part
of every page run (AppTest reruns only the page script under st.navigation).
"""

from __future__ import annotations

import json
from typing import Any

import streamlit as st

from synth.data import DEFAULT_MAX_BYTES, read_table
from synth.methods import Synthesizer
from synth.schema import infer_schema
from ui import runner, state

ENCODINGS = ("utf-8", "latin-1", "cp1252")


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
            st.toast(f"Finished: {ended.name}", icon="✅")
        st.caption(f"**{ds.name}**: {len(ds.table):,} rows × {ds.table.shape[1]} columns")
        done = len(state.runs())
        st.caption(f"{done} finished run{'s' * (done != 1)} this session")
        if state.job() is not None:
            st.caption(f"⏳ running: {state.job().name}")
    return ds


def param_inputs(cls: type[Synthesizer], skip: tuple[str | None, ...] = ()) -> dict[str, Any]:
    """One input per constructor parameter of a method, starting from its defaults; the
    method itself checks the values (and says which one is wrong)."""
    values: dict[str, Any] = {}
    for name, default in cls.param_defaults().items():
        if name in skip:
            continue
        key, label = f"param:{cls.name}:{name}", name.replace("_", " ")
        if isinstance(default, bool):
            values[name] = st.checkbox(label, value=default, key=key)
        elif isinstance(default, int):
            values[name] = int(st.number_input(label, value=default, step=1, key=key))
        elif isinstance(default, float):
            values[name] = st.number_input(label, value=default, format="%g", key=key)
        else:  # strings, and None meaning "chosen by the method"
            text = st.text_input(label, value="" if default is None else str(default), key=key,
                                 help="leave empty for the method's choice"
                                 if default is None else None)
            values[name] = _parse(text) if default is None else text
    return values


def _parse(text: str) -> Any:
    """'' → None, numbers → numbers, anything else stays text (the method validates it)."""
    text = text.strip()
    if not text:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text
