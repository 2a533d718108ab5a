"""Typed access to Streamlit's session state, so pages share data without string keys."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import streamlit as st

from synth.checklist import Check
from synth.data import load_sample
from synth.errors import SynthError
from synth.evaluation import Fidelity
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


@dataclass
class Run:
    """A finished synthesis, kept for the session under a descriptive name."""

    name: str
    synthetic: pd.DataFrame
    real: pd.DataFrame  # the rows it was synthesized from: for comparisons, never released
    schema: Schema  # the working schema of the run (may hold data-derived domains)
    ledger: dict[str, Any]
    config: dict[str, Any]  # method, parameters, budget, seed, CLI command, released schema
    seconds: float
    evaluation: dict[str, Any] = field(default_factory=dict)  # utility, or {"error": ...}
    fidelity: Fidelity | None = None  # against the rows that were synthesized
    checklist: list[Check] = field(default_factory=list)  # read off the real rows: not released


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
