"""What every page draws first: the dataset picker in the sidebar.

Each page calls :func:`sidebar` itself rather than app.py drawing it, so the sidebar is part
of every page run (AppTest reruns only the page script under st.navigation).
"""

from __future__ import annotations

import copy
import math
import os
from collections.abc import Callable
from pathlib import Path

import streamlit as st

from synth.account import Usage
from synth.data import DEFAULT_MAX_BYTES, counted, human_bytes, read_table
from synth.errors import DataError
from synth.methods.base import BYTES_PER_CELL, sample_bound
from synth.privacy.budget import epsilon_text
from synth.schema import infer_schema
from synth.source import TableFile, read_whole
from synth.status import CANCELLED, FINISHED, RUNNING
from ui import runner, state

ENCODINGS = ("utf-8", "latin-1", "cp1252")


def spent_words(usage: Usage) -> str:
    """The table's lifetime spending in a line: spent, and what remains under a limit."""
    spent = f"ε = {epsilon_text(usage.epsilon)}, δ = {usage.delta:.2g}"
    if usage.limit_epsilon is None:
        words = f"Privacy spent on this table, all runs: {spent} (no limit set)"
    else:
        eps, _ = usage.remaining
        words = (f"Privacy spent on this table, all runs: {spent}; ε = {epsilon_text(eps)} of "
                 f"its limit {usage.limit_epsilon:g} remains")
    if usage.mixed:
        words += ("; by whom the runs protected: " + "; ".join(
            f"{unit}, ε = {epsilon_text(e)}, δ = {d:.2g}" for unit, e, d in usage.by_unit)
            + " (the Privacy page of the documentation says what each bounds)")
    return words


def confirm_spending(ds: state.Dataset, epsilon: float, delta: float, what: str,
                     action: Callable[[], bool], summed: bool = False) -> None:
    """Ask before ``action`` spends (ε, δ) of the table's account (``summed`` over a sweep's
    runs): what it spends, what the table has spent, and whether its limit allows it (the
    account refuses otherwise)."""
    with st.container(border=True), state.guard("Reading the privacy account"):
        usage = state.account(ds).usage()
        sigma = "Σ" if summed else ""
        st.markdown(f"**{what} {sigma}ε = {epsilon_text(epsilon)}, {sigma}δ = {delta:.2g}** "
                    f"from the privacy account of {ds.name}.")
        st.caption(spent_words(usage) + ". Runs add up: ε and δ are summed over all of "
                   "them (basic composition).")
        over = usage.refusal(epsilon, delta)  # the account's own rule, as it will apply it
        if over:
            st.error(f"It would be refused: {over}. Spend less, or raise the limit under "
                     "Lifetime limit in the sidebar.")
        yes, no = st.columns(2)
        if yes.button("Spend and run", type="primary", disabled=bool(over)):
            state.answered()
            if action():  # started: the page redraws with its live view
                st.rerun()
        if no.button("Not now"):
            state.answered()
            st.rerun()


def sidebar(watched: str | None = None) -> state.Dataset:
    """Draw the dataset picker; return the dataset the page should use. ``watched`` ("run" or
    "sweep") is what the page's own live view follows, so the sidebar need not watch it."""
    with st.sidebar:
        st.header("Dataset")
        # any file is taken, so a type the reader cannot use is refused in a sentence (the
        # uploader's own refusal named MIME types); read_table tells the kinds apart
        upload = st.file_uploader(
            f"Upload a CSV, Parquet or Excel (.xlsx) table (up to "
            f"{DEFAULT_MAX_BYTES // 2**20} MB)", key="upload")
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
        server_file(encoding)
        for sample, label in (("census", "Use the census sample"),
                              ("panel", "Use the panel sample (person-months)")):
            if st.button(label, disabled=state.dataset().name == state.SAMPLES[sample][0]):
                state.use_sample(sample)
        ds = state.dataset()
        announce(state.collect(), state.collect_sweep())  # ended while any page was open
        st.caption(f"**{ds.name}**: {counted(len(ds.table), 'row')} × "
                   f"{counted(ds.table.shape[1], 'column')}"
                   + (f", read from `{ds.where}`" if ds.where else ""))
        with state.guard("Reading the run store"):
            done = sum(e.status == FINISHED and not e.deleted for e in state.entries(ds))
            st.caption(f"{done} finished run{'s' * (done != 1)} of this table, kept under "
                       "SYNTH_HOME")
        with state.guard("Reading the privacy account"):
            account = state.account(ds)
            usage = account.usage()
            st.caption(spent_words(usage))
            with st.expander("Lifetime limit"):
                st.caption("The account is the file's content as read: leaving columns out, "
                           "Read as numbers or a re-upload keep it; a changed row or a renamed "
                           "column starts a new one (bookkeeping, not a lock).")
                limit = st.number_input(
                    "Most ε all runs on this table may spend", min_value=0.01, format="%g",
                    value=usage.limit_epsilon or (math.floor(usage.epsilon) + 1.0
                                                  if math.isfinite(usage.epsilon) else 1.0),
                    key=state.mine("limit"), persist_state="session",
                    help="A run or sweep that would pass it is refused before it reads "
                         "anything. Kept with the account under SYNTH_HOME, for the CLI too.")
                if st.button("Set the limit"):
                    account.set_limit(limit, usage.limit_delta)
                    st.rerun()
        watch(watched)
    return ds


TABLE_SUFFIXES = {".csv", ".tsv", ".txt", ".parquet"}


def data_root() -> Path | None:
    """The folder whose tables the app may read by path: SYNTH_DATA_ROOT, or None (reading
    by path is off). Whoever can open the app can read the tables under it."""
    root = os.environ.get("SYNTH_DATA_ROOT")
    return Path(root).resolve() if root else None


def scheduler() -> str | None:
    """The steward's Dask scheduler (SYNTH_SCHEDULER), whose workers count a Parquet table
    read by path where it lies, or None. Every worker must read the table at that path."""
    return os.environ.get("SYNTH_SCHEDULER") or None


def cluster_file(ds: state.Dataset, counts: bool, whole: bool) -> TableFile | None:
    """The Parquet the open table was read from, as it was read (its files and their
    stamps), for the SYNTH_SCHEDULER cluster to count, when a run can count it there: not
    converted since, the whole table (no hold-out), one row per unit, and a method that
    ``counts``. Otherwise None: the run fits the table this app holds."""
    source = ds.source
    if (scheduler() is None or source is None or source.kind == "CSV" or ds.converted
            or not counts or not whole or ds.unit.declared):
        return None
    file = copy.copy(source)  # the files and stamps of the read; this run's scheduler
    file.scheduler = scheduler()
    return file


def server_table(typed: str, root: Path, encoding: str | None = None) -> TableFile:
    """The table at ``typed`` under ``root``, or a refusal naming what the user typed: only
    tables (.csv, .tsv, .txt, .parquet, or a folder of .parquet files) under the root, no
    hidden file or folder, no link out of it, and at most what memory holds."""
    relative = Path(typed)
    if typed.startswith("~") or any(part.startswith(".") and part not in (".", "..")
                                    for part in relative.parts):
        raise DataError(f"{typed!r} is not a table this app reads (no hidden files, no ~)")
    path = (root / relative).resolve()
    if not path.is_relative_to(root):
        raise DataError(f"{typed!r} is outside the folder this app may read "
                        "(SYNTH_DATA_ROOT)")
    if path.is_file() and path.suffix.lower() not in TABLE_SUFFIXES:
        raise DataError(f"{typed!r} is not a table: give a .csv, .tsv, .txt or .parquet "
                        "file, or a folder of .parquet files")
    file = TableFile(path, encoding=encoding)
    if not all(f.resolve().is_relative_to(root) for f in file.files):
        raise DataError(f"{typed!r} links to files outside the folder this app may read")
    need = len(file) * len(file.columns) * BYTES_PER_CELL
    if need > sample_bound():
        raise DataError(f"{typed!r} holds {len(file):,} rows × {len(file.columns)} columns, "
                        f"about {human_bytes(need)} in memory, over this app's "
                        f"{human_bytes(sample_bound())}; fit it with synth run, which reads it "
                        "where it lies")
    return file


def server_file(encoding: str) -> None:
    """A table over the upload limit, read by path on the machine that runs the app."""
    root = data_root()
    with st.expander("A larger file on this server"):
        if root is None:
            st.caption("To read a table larger than the upload limit where it lies on the "
                       "machine that runs this app, start the app with SYNTH_DATA_ROOT set to "
                       "the folder that holds it.")
            return
        st.caption(f"A CSV or Parquet file, or a folder of Parquet files, under `{root}` on "
                   "the machine that runs this app (SYNTH_DATA_ROOT). It is read there, by "
                   "this server: nothing is uploaded or copied.")
        typed = st.text_input("Path on this server", key="server-path",
                              placeholder="table.parquet").strip()
        if st.button("Read it", disabled=not typed):
            with state.guard(f"Reading {typed}"):
                file = server_table(typed, root,
                                    None if encoding == ENCODINGS[0] else encoding)
                bar = st.progress(0.0, text=f"Reading {file.name}")
                table = read_whole(file, progress=lambda done, rows: bar.progress(
                    done / rows, text=f"Reading {file.name}: {done:,} of {rows:,} rows"))
                if table.empty:
                    raise DataError(f"{file.name} has a header but no data rows")
                schema = infer_schema(table)
                state.set_dataset(state.Dataset(file.path.name, table, schema, schema,
                                                where=str(file.path), source=file))
                st.rerun()


def announce(run: runner.Job | None, sweep: runner.SweepJob | None) -> None:
    """Say on whatever page is open that a run or a sweep has ended, and how."""
    for job in (run, sweep):
        if job is None:
            continue
        if job.status == FINISHED:
            done = (f" ({len(job.result)} of {job.total} runs; the rest were cancelled)"
                    if isinstance(job, runner.SweepJob) and len(job.result) < job.total
                    else "")
            st.toast(f"Finished: {job.name}{done}", icon=":material/check_circle:")
        elif job.status == CANCELLED:
            st.toast(f"Cancelled: {job.name}", icon=":material/cancel:")
        else:
            st.toast(f"Failed: {job.name}: {job.error}", icon=":material/error:")


def watch(watched: str | None) -> None:
    """While a run or a sweep is in progress, check every second whether it has ended, and
    then rerun the page so that :func:`announce` tells it (the page itself may be idle). Not
    the one the page's live view follows: every redraw costs the browser, beside training."""
    jobs = {"run": state.job(), "sweep": state.sweep_job()}
    busy = [job for job in jobs.values() if job is not None]
    unwatched = [job for what, job in jobs.items() if job is not None and what != watched]

    @st.fragment(run_every=1.0 if unwatched else None)
    def check() -> None:
        if any(job.status != RUNNING for job in unwatched):
            st.rerun(scope="app")
        for job in busy:
            st.caption(f":material/hourglass_top: running: {job.name}")

    check()
