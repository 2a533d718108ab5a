"""Typed access to Streamlit's session state, so pages share data without string keys."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pandas as pd
import streamlit as st

from synth.account import Store, TableAccount
from synth.data import fingerprint, load_sample
from synth.errors import SynthError
from synth.runs import RunRecord
from synth.schema import Schema
from ui import runner

log = logging.getLogger(__name__)

SAMPLE_NAME = "census demo (bundled sample)"


@dataclass
class Dataset:
    """The private table and the schema the user is working with."""

    name: str
    table: pd.DataFrame
    schema: Schema  # the working schema: base plus the Data page's choices
    base: Schema  # inferred from the table, then edited column by column or loaded from a file


@dataclass(frozen=True)
class Run:
    """A finished synthesis, kept for the session under a descriptive name."""

    name: str
    record: RunRecord  # the release, its configuration and the steward's measurements
    real: pd.DataFrame  # the rows it was synthesized from: for comparisons, never released
    schema: Schema  # the working schema of the run (may hold data-derived domains)


@st.cache_data(show_spinner=False)
def _sample() -> tuple[pd.DataFrame, Schema]:
    return load_sample()


def dataset() -> Dataset:
    """The current dataset; the bundled sample until the user uploads another."""
    if "dataset" not in st.session_state:
        table, schema = _sample()
        st.session_state["dataset"] = Dataset(SAMPLE_NAME, table, schema, schema)
    return st.session_state["dataset"]


def set_dataset(ds: Dataset) -> None:
    st.session_state["dataset"] = ds
    st.session_state.pop(f"confirm:{ds.name}", None)  # a new table's proposals are unconfirmed


def reset_dataset() -> None:
    """Back to the bundled sample (an upload already read is not read again)."""
    st.session_state.pop("dataset", None)


def set_schema(schema: Schema) -> None:
    dataset().schema = schema


def set_base(schema: Schema, fresh_choices: bool = False) -> None:
    """A new base schema: an edited column keeps the Data page's choices; a loaded file
    (``fresh_choices``) restarts them from what it says is public and the target."""
    ds = dataset()
    ds.base = ds.schema = schema
    st.session_state.pop(f"confirm:{ds.name}", None)  # a changed schema is confirmed anew
    if fresh_choices:
        for choice in ("public", "drop", "target"):
            st.session_state.pop(f"{choice}:{ds.name}", None)


def runs() -> list[Run]:
    return st.session_state.setdefault("runs", [])


def add_run(run: Run) -> None:
    runs().append(run)


def first_time(what: str, token: Any) -> bool:
    """Whether ``token`` (an uploaded file's id, say) is new for ``what`` this session; it is
    remembered, so a file is applied once, not on every rerun."""
    if st.session_state.get(f"seen:{what}") == token:
        return False
    st.session_state[f"seen:{what}"] = token
    return True


def _fingerprints(ds: Dataset) -> tuple[str, str]:
    """The table's fingerprints, of its people and of its rows in order, kept per table
    object (Adult: 0.2 s each); a changed table is a new object (``DataFrame.assign``)."""
    cached = st.session_state.get("fingerprint")
    if cached is None or cached[0] is not ds.table:  # holding the table keeps its id unique
        cached = st.session_state["fingerprint"] = (
            ds.table, fingerprint(ds.table), fingerprint(ds.table, row_order=True))
    return cached[1], cached[2]


def table_key(ds: Dataset) -> str:
    """The dataset's rows in order and schema, hashed: where a kept result (a sweep, whose
    split depends on the order) belongs."""
    described = json.dumps(ds.schema.to_dict(), sort_keys=True, default=str)
    return hashlib.sha256(f"{_fingerprints(ds)[1]}:{described}".encode()).hexdigest()


def account(ds: Dataset) -> TableAccount:
    """The table's persistent privacy account (under SYNTH_HOME), charged by every run. Call
    it on the page's thread: a background thread has no session."""
    store = Store()
    return TableAccount(store, store.key(_fingerprints(ds)[0]), ds.name)


def sweep_job() -> runner.SweepJob | None:
    """The sweep in progress (or finished but not yet collected), if any."""
    return st.session_state.get("sweep_job")


def start_sweep(new: runner.SweepJob) -> None:
    st.session_state["sweep_job"] = new


def collect_sweep() -> runner.SweepJob | None:
    """Forget a finished sweep and return it (None while it runs or when there is none)."""
    current = sweep_job()
    if current is None or current.status == runner.RUNNING:
        return None
    del st.session_state["sweep_job"]
    return current


def job() -> runner.Job | None:
    """The run in progress (or finished but not yet collected), if any."""
    return st.session_state.get("job")


def start_job(new: runner.Job) -> None:
    st.session_state["job"] = new
    st.session_state.pop("last_job", None)  # an earlier failure or cancellation is old news


def collect() -> runner.Job | None:
    """Move a finished job's release into the runs and forget the job; return the job if it
    ended (so the page can say how), None while it is still running or absent."""
    current = job()
    if current is None or current.status == runner.RUNNING:
        return None
    del st.session_state["job"]
    if current.status == runner.DONE:
        add_run(current.result)
    st.session_state["last_job"] = current
    return current


def last_job() -> runner.Job | None:
    """The most recently ended job, to report a failure or cancellation."""
    return st.session_state.get("last_job")


@contextlib.contextmanager
def guard(action: str) -> Iterator[None]:
    """Show a failure as a message, never a traceback; earlier results stay untouched."""
    try:
        yield
    except SynthError as exc:
        st.error(f"{action} failed: {exc}")
    except Exception as exc:  # a bug: log it for us, tell the user plainly
        log.exception("%s failed", action)
        st.error(f"{action} failed unexpectedly ({type(exc).__name__}: {exc}). Earlier results "
                 "are kept; please report this.")
