"""Typed access to Streamlit's session state, so pages share data without string keys.

Runs and sweeps are not the session's: they are the table's, kept in the run store
(:mod:`synth.store`) under SYNTH_HOME, and one in progress is the server's (a registry by
table), so a reload, a new tab or a server restart finds them. A session holds only what it
is looking at: the table, its choices, and the job it watches.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import re
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import streamlit as st

from synth.account import Store, TableAccount, home
from synth.checklist import Check, release_checklist
from synth.data import fingerprint, former_fingerprint, fragile_numbers, load_sample
from synth.decisions import Decisions, restore
from synth.errors import Fix, SynthError
from synth.methods import METHODS
from synth.privacy.budget import epsilon_text
from synth.privacy.unit import PrivacyUnit
from synth.runs import RunRecord
from synth.runs import split as split_table
from synth.schema import Schema
from synth.status import CANCELLED, FINISHED, RUNNING
from synth.store import RUN, SWEEP, RunEntry, RunStore
from synth.sweep import recorded
from ui import runner
from ui.parameters import param_key

if TYPE_CHECKING:
    from synth.evaluation import Fidelity
    from synth.source import TableFile

log = logging.getLogger(__name__)
_LOCK = threading.Lock()  # the live registry's check-then-register is one step

SAMPLE_NAME = "census demo (bundled sample)"
# The bundled samples (synth.data.SAMPLES): the name the app shows, and whom a run protects
# until the Data page says otherwise (the panel's people have 1-24 rows each)
SAMPLES = {"census": (SAMPLE_NAME, PrivacyUnit()),
           "panel": ("panel demo: person-months (bundled sample)", PrivacyUnit("person_id", 3))}
# Widget keys of the choices a page keeps for the session (Streamlit's persist_state): the
# session's own (CHOICE), and the current table's or schema's (:func:`mine`)
CHOICE, TABLE = "choice:", "table:"


@dataclass
class Dataset:
    """The private table and the schema the user is working with."""

    name: str
    table: pd.DataFrame
    schema: Schema  # the working schema: base plus the Data page's choices
    base: Schema  # inferred from the table, then edited column by column or loaded from a file
    unit: PrivacyUnit = field(default_factory=PrivacyUnit)  # whom a run protects
    unit_problem: str = ""  # why the chosen unit column was refused: nothing may run then
    where: str = ""  # the server path it was read from, for a table read by path
    # that file as it was read (its files and their stamps): what a Dask cluster counts
    source: TableFile | None = field(default=None, repr=False)
    converted: bool = False  # a conversion (Read as numbers) changed it since it was read
    restored: str = ""  # what opening it restored of the steward's kept decisions
    namesake: str = ""  # a hint that another table of this name has an account of its own
    # whose privacy account it is: the fingerprint of ``table`` as read, taken once here, so
    # a conversion the app offers later (Read as numbers) keeps the account of the same file
    # that the CLI, a sweep or another upload reaches
    read_as: str = field(init=False)
    former: str = field(init=False, repr=False)  # its fingerprint as accounts were once kept
    fragile: str = field(init=False, repr=False)  # why a copy may have another account
    # the schema proposed for (or bundled with) the table as read: what kept decisions
    # are told apart from (synth.decisions)
    proposal: Schema = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.proposal = self.base
        self.read_as = fingerprint(self.table)
        self.former = former_fingerprint(self.table)
        self.fragile = fragile_numbers(self.table)


@dataclass(frozen=True)
class Run:
    """A finished synthesis of the open table, as this session compares it: its record (made
    by this server, or read back from the run store) and the table's rows it came from."""

    name: str  # starts with the table's name
    record: RunRecord  # the release, its configuration and the steward's measurements
    real: pd.DataFrame  # the rows it was synthesized from: for comparisons, never released
    schema: Schema  # the working schema of the run (may hold data-derived domains)
    id: str = ""  # its id in the run store
    number: int = 0  # its place in the table's runs (#1 first)
    table: str = ""  # the table's name as the store records it
    held_out: pd.DataFrame | None = None  # the rows it never saw (None: it saw every row)

    def file_name(self, name: str) -> str:
        """A download's name after the table, the method and the run's number
        ('shaped-independent-2-synth.csv'): two runs' files never overwrite each other."""
        stem = re.sub(r"[^a-z0-9]+", "-", Path(self.table).stem.lower()).strip("-") or "run"
        return f"{stem}-{self.record.method}-{self.number}-{name}"

    @functools.cached_property
    def fidelity(self) -> Fidelity | None:
        """Its marginals against the real rows: measured when it ran, or (read back from the
        store, which keeps no private table) measured again on the table now open."""
        if self.record.fidelity is not None:
            return self.record.fidelity
        from synth.evaluation import marginal_tvd

        try:
            return marginal_tvd(self.real, self.record.synthetic,
                                self.record.schema.reading(self.schema))
        except Exception:  # a figure for the steward: never the page's failure
            log.warning("run %s: its fidelity cannot be measured again", self.id,
                        exc_info=True)
            return None

    @functools.cached_property
    def checklist(self) -> list[Check]:
        """The release checklist: made when it ran, or again on the table now open."""
        if self.record.checklist:
            return self.record.checklist
        unit = self.record.ledger["budget"].get("unit")  # whom it protected, as it ran
        try:
            return release_checklist(self.real, self.record.synthetic,
                                     self.record.schema.reading(self.schema),
                                     PrivacyUnit.from_dict(unit) if unit else None)
        except Exception as exc:
            return [Check("checklist", f"could not be made again: {exc}", warn=True)]


@st.cache_data(show_spinner=False)
def _sample(name: str) -> tuple[pd.DataFrame, Schema]:
    return load_sample(name)


def _sample_dataset(name: str) -> Dataset:
    table, schema = _sample(name)
    shown, unit = SAMPLES[name]
    return Dataset(shown, table, schema, schema, unit)


def dataset() -> Dataset:
    """The current dataset; the census sample until the user uploads another."""
    if "dataset" not in st.session_state:
        st.session_state["dataset"] = ds = _sample_dataset("census")
        _restore(ds)
    return st.session_state["dataset"]


def among(key: str, options: list) -> None:
    """Drop what a kept choice holds that ``options`` no longer offer (an edited target, a
    column gone), so the widget shows a valid choice instead of failing."""
    value = st.session_state.get(key)
    if isinstance(value, list):
        if any(v not in options for v in value):  # written only then: a write is a new value
            st.session_state[key] = [v for v in value if v in options]
    elif key in st.session_state and value not in options:
        del st.session_state[key]


def mine(what: str, schema: bool = False) -> str:
    """The widget key of a choice that belongs to the current table (with ``schema``: to its
    current schema, such as the confirmation). A new table, or a loaded schema, gets new keys
    and so fresh widgets: deleting a key is not enough, since the browser keeps showing, and
    sends back, a widget's old value (Streamlit issue 16388); A's public columns or δ must
    never come back for table B."""
    table, version = st.session_state.get("generation", (0, 0))
    return f"{TABLE}{table}:{version if schema else ''}:{what}"


def _renew(schema_only: bool = False) -> None:
    """New keys for the table's choices (or only its schema's), the old ones dropped."""
    table, version = st.session_state.get("generation", (0, 0))
    _forget(mine("", schema=True) if schema_only else TABLE)
    st.session_state["generation"] = (table + (not schema_only), version + 1)


def _forget(prefix: str) -> None:
    for key in [k for k in st.session_state if isinstance(k, str) and k.startswith(prefix)]:
        del st.session_state[key]


def set_dataset(ds: Dataset) -> None:
    """Switch tables: what belonged to the old one (its Data page choices, its δ, a failed
    run's message) goes; runs and sweeps stay, each under its own table's name."""
    st.session_state["dataset"] = ds
    _renew()
    for key in ("last_job", "last_sweep", "asked"):
        st.session_state.pop(key, None)
    _restore(ds)


def _restore(ds: Dataset) -> None:
    """Open ``ds`` as the steward left it: the decisions the store keeps about the table
    (:mod:`synth.decisions`), applied to it; where they no longer fit, it opens as read and
    the Data page says why."""
    try:
        key = account(ds).key
        ds.namesake = _namesake(ds, key)
        kept = store().decisions(key)
        if kept is None:
            return
        table, decisions = restore(kept[0], ds.table, ds.proposal)
    except Exception as exc:  # kept by another version, or a store that cannot be read
        bug = not isinstance(exc, SynthError)  # a SynthError names columns, never values
        log.warning("decisions about %s not restored: %s", ds.name, exc, exc_info=bug)
        why = type(exc).__name__ if bug else exc
        ds.restored = (f"Your declarations kept for this table could not be restored ({why}): "
                       "it opens as read.")
        return
    ds.table, ds.base, ds.unit = table, decisions.schema, decisions.unit
    ds.converted = any(c.written_as_text for c in decisions.schema)
    ds.schema = decisions.working()
    st.session_state[mine("drop")] = list(decisions.left_out)
    st.session_state["decided"] = (key, decisions.to_dict(ds.proposal))
    saved = time.strftime("%Y-%m-%d %H:%M", time.localtime(kept[1]))
    ds.restored = (f"Your declarations for this table, as you left them on {saved}, are "
                   "restored: they are kept under SYNTH_HOME without the table's values, so "
                   "a domain you did not declare public is read again from the table.")


def _namesake(ds: Dataset, key: str) -> str:
    """What to tell a steward who opens a file named like another table the account knows,
    with other rows: budgets are kept per table as read, so a changed file starts afresh."""
    try:
        others = [u for u in Store().tables() if u.name == ds.name and u.key != key and u.runs]
    except SynthError:
        return ""
    if not others:
        return ""
    spent = sum(u.epsilon for u in others)
    return (f"Another table named {ds.name} has a privacy account here (ε = "
            f"{epsilon_text(spent)} spent over {sum(u.runs for u in others)} run(s)), and this "
            "file's rows differ from it, so this one starts an account of its own. If it holds "
            "the same people, what the other version spent counts against them too: set this "
            "table's lifetime limit in the sidebar to what is left.")


def apply(fix: Fix) -> None:
    """Take a refusal's way out (:class:`~synth.errors.Fix`): set the Synthesize page's
    sliders or the chosen method's parameter, or leave columns out as the Data page would.
    A button's ``on_click``: it runs before the page is drawn again."""
    method = st.session_state.get(f"{CHOICE}method")
    for setting, value in fix.changes:
        if setting == "epsilon":
            st.session_state[f"{CHOICE}epsilon"] = value
        elif setting == "domain_share":
            st.session_state[mine("domain-share")] = value
        elif setting == "leave_out":
            _leave_out(list(value))
        elif setting == "method":
            st.session_state[f"{CHOICE}method"] = value
        else:
            st.session_state[param_key(method, setting)] = value


def _leave_out(names: list[str]) -> None:
    ds, key = dataset(), mine("drop")
    dropped = list(dict.fromkeys([*st.session_state.get(key, []), *names]))
    st.session_state[key] = dropped
    ds.schema = ds.schema.drop([n for n in names if n in ds.schema.names])
    kept = st.session_state.get("decided")
    if kept is not None:  # the Data page's decisions, as it would keep them
        body = {**kept[1], "left_out": dropped}
        store().keep_decisions(kept[0], body)
        st.session_state["decided"] = (kept[0], body)


def offer(*errors: SynthError) -> None:
    """A button for each way out of ``errors`` the app can take in one click, two abreast."""
    fixes = [fix for error in errors for fix in error.fixes]
    for row in range(0, len(fixes), 2):
        pair = fixes[row:row + 2]
        for i, (fix, place) in enumerate(zip(pair, st.columns(2), strict=False), row):
            place.button(fix.label, key=f"fix:{i}:{fix.label}", on_click=apply, args=(fix,),
                         icon=":material/build:", width="stretch",
                         help=f"Clears the refusal, but {fix.caveat}." if fix.caveat else None)


def decide(decisions: Decisions) -> None:
    """The Data page's decisions: the working schema from them, and kept in the store for
    the table (written only when they change)."""
    ds = dataset()
    ds.schema = decisions.working()
    key, body = account(ds).key, decisions.to_dict(ds.proposal)
    if st.session_state.get("decided") != (key, body):
        store().keep_decisions(key, body)
        st.session_state["decided"] = (key, body)


def use_sample(name: str) -> None:
    """Switch to a bundled sample (an upload already read is not read again)."""
    set_dataset(_sample_dataset(name))


def set_base(schema: Schema, fresh_choices: bool = False) -> None:
    """A new base schema, to be confirmed anew. The column editor re-reads it; an edited
    column keeps the Data page's other choices, while a loaded file (``fresh_choices``)
    restarts them all from what it says (public domains, target)."""
    ds = dataset()
    ds.base = ds.schema = schema
    _renew(schema_only=not fresh_choices)


def store() -> RunStore:
    """The run store under SYNTH_HOME (the privacy account's folder), opened (and its file
    migrated) once per server and SYNTH_HOME, not on every rerun."""
    return _store(str(home() / "runs.sqlite"))


@st.cache_resource(show_spinner=False)
def _store(path: str) -> RunStore:
    return RunStore(path)


def entries(ds: Dataset | None = None, kind: str = RUN) -> list[RunEntry]:
    """Every run (or sweep) of the table as the store records it, oldest first: finished,
    running, cancelled, failed or died."""
    return store().list(table=account(ds or dataset()).key, kind=kind)[::-1]


@st.cache_resource
def _kept() -> dict[str, Any]:
    """What this server has made or read back, by run id: a run's :class:`RunRecord` (with
    its measurements: figures, never rows of the private table), a sweep's rows. The store
    is the truth; this spares reading it again."""
    return {}


def keeper() -> Callable[[str, RunRecord], None]:
    """What a background run calls to keep its record here (it has no session, and must not
    touch Streamlit): take it on the page's thread."""
    return _kept().__setitem__


def run_name(entry: RunEntry, number: int) -> str:
    """How the app names a run: its table, method, ε, split, seed and place in the table's
    runs (#1 first), all read from its record."""
    cls, params = METHODS.get(entry.method), entry.configuration.get("params", {})
    split = (f" {cls.share_param}={params[cls.share_param]:g}"
             if cls is not None and cls.share_param in params else "")
    seed = entry.configuration.get("postprocessing_seed")
    title = cls.title if cls is not None else entry.method
    return (f"{entry.table_name}: {title} ε={entry.epsilon:g}{split}"
            f"{f' seed={seed}' if seed is not None else ''} #{number}")


def runs(ds: Dataset | None = None) -> list[Run]:
    """The table's finished runs, oldest first, from the run store: a reload, a new tab or
    a server restart finds them all. Each is compared with this session's rows of the table
    (kept for the session); one that cannot be read back is left out (logged)."""
    ds = ds or dataset()
    kept, seen = _kept(), st.session_state.setdefault("listed", {})
    found = []
    for number, entry in enumerate(entries(ds), 1):
        if entry.status != FINISHED or entry.deleted:
            continue
        where = (entry.id, ds.read_as, ds.unit.column)  # the rows it is compared with
        record = kept.get(entry.id)
        # a run's own record, with its measurements, replaces the one read back from the
        # store in the moment between the store's "finished" and the run's keeping it
        if where not in seen or (record is not None and seen[where].record is not record):
            if record is None:
                try:
                    read = RunRecord.read(entry)
                except Exception:
                    log.warning("run %s left out", entry.id, exc_info=True)
                    continue
                record = kept.setdefault(entry.id, read)  # the run's own, if kept meanwhile
            real, held = split(ds, record.schema, entry.summary.get("held_out", False))
            seen[where] = Run(run_name(entry, number), record, real,
                              record.schema.reading(ds.schema), entry.id, number,
                              entry.table_name, held)
        found.append(seen[where])
    return found


def sweeps(ds: Dataset) -> dict[str, pd.DataFrame]:
    """The table's recorded sweeps with rows (finished, or stopped with some done), by the
    grid they ran, oldest first; only those of this table as it is now (its rows in order
    and its schema: :func:`sweep_table`)."""
    kept, found, key = _kept(), {}, sweep_table(ds)
    for entry in entries(ds, SWEEP):
        if (entry.status not in (FINISHED, CANCELLED) or entry.deleted
                or not entry.summary.get("rows") or entry.configuration.get("table") != key):
            continue
        if entry.id not in kept:
            try:
                kept[entry.id] = recorded(entry)
            except SynthError as exc:
                log.warning("sweep %s left out: %s", entry.id, exc)
                continue
        found[entry.configuration.get("grid", entry.id)] = kept[entry.id]
    return found


def sweep_table(ds: Dataset) -> str:
    """Where a sweep belongs, as recorded: :func:`table_key` under the account's secret (a
    bare hash of the rows would be a fingerprint anyone could test a guess against)."""
    return account(ds).store.key(table_key(ds))


def first_time(what: str, token: Any) -> bool:
    """Whether ``token`` (an uploaded file's id, say) is new for ``what`` this session; it is
    remembered, so a file is applied once, not on every rerun."""
    if st.session_state.get(f"seen:{what}") == token:
        return False
    st.session_state[f"seen:{what}"] = token
    return True


def _in_order(ds: Dataset) -> str:
    """The current table's fingerprint of its rows in order, kept per table object (Adult:
    0.2 s); a converted table is a new object (``DataFrame.assign``)."""
    cached = st.session_state.get("fingerprint")
    if cached is None or cached[0] is not ds.table:  # holding the table keeps its id unique
        cached = st.session_state["fingerprint"] = (ds.table,
                                                    fingerprint(ds.table, row_order=True))
    return cached[1]


def table_key(ds: Dataset) -> str:
    """The dataset's rows in order and schema, hashed: where a kept result (a sweep, whose
    split depends on the order) belongs."""
    described = json.dumps(ds.schema.to_dict(), sort_keys=True, default=str)
    return hashlib.sha256(f"{_in_order(ds)}:{described}".encode()).hexdigest()


def account(ds: Dataset) -> TableAccount:
    """The persistent privacy account (under SYNTH_HOME) of the table as read, charged by
    every run. Call it on the page's thread: a background thread has no session."""
    store = Store()
    return TableAccount(store, store.key(ds.read_as, ds.former), ds.name)


def ask_to_spend(what: str, plan: str) -> None:
    """Remember that Run (or Run the sweep) was pressed for ``plan`` (everything that sets
    what it spends): the page asks before spending."""
    st.session_state["asked"] = (what, plan)


def asked_to_spend(what: str, plan: str) -> bool | None:
    """True while the page should ask about ``plan``; None if nothing was asked; False (the
    question withdrawn) if the settings changed since: a number committed by the very click
    on "Spend and run" must not start a run other than the one the box showed."""
    asked = st.session_state.get("asked")
    if asked is None or asked[0] != what:
        return None
    if asked[1] != plan:
        answered()
        return False
    return True


def answered() -> None:
    st.session_state.pop("asked", None)


@st.cache_resource
def _live() -> dict[tuple[str, str, str], runner.Job]:
    """The runs and sweeps in progress on this server (or ended, not yet seen), by kind and
    table (SYNTH_HOME and its fingerprint): a reloaded page or a new tab on the table finds
    its job here, with its live view and Cancel. One of each kind per table at a time."""
    return {}


def _where(kind: str) -> tuple[str, str, str]:
    """The open table's place in the registry: no file is read (the page asks every second)."""
    return kind, str(home()), dataset().read_as


def _job(kind: str, session_key: str) -> runner.Job | None:
    """The job this session watches (it may be another table's, if the table was switched
    while it ran); none yet, the open table's live one, which it then watches (a reload, or
    a new tab)."""
    current = st.session_state.get(session_key)
    if current is None:
        current = _live().get(_where(kind))
        if current is not None:
            st.session_state[session_key] = current
    return current


def _start(kind: str, session_key: str, new: runner.Job, work: Callable, **how: Any) -> None:
    """Register ``new`` as the table's live job of ``kind``, then start it: refused if
    another is running on this table (in another tab, say)."""
    where = _where(kind)
    with _LOCK:
        other = _live().get(where)
        if other is not None and other.status == RUNNING:
            raise SynthError(f"{other.name} is still running (in another tab?): open this "
                             "page again to watch it, or wait for it to end")
        _live()[where] = new
    try:
        new.start(work, **how)
    except BaseException:  # never a registered job that does not run: it would block the table
        with _LOCK:
            _live().pop(where, None)
        raise
    st.session_state[session_key] = new


def _collect(session_key: str, last_key: str) -> runner.Job | None:
    """Forget an ended job (the registry too): it is in the store. Returns it if it ended."""
    current = st.session_state.get(session_key)
    if current is None or current.status == RUNNING:
        return None
    del st.session_state[session_key]
    with _LOCK:
        live = _live()
        for where in [k for k, v in live.items() if v is current]:
            del live[where]
    st.session_state[last_key] = current
    return current


def sweep_job() -> runner.SweepJob | None:
    """The sweep this session watches (or ended but not yet collected), if any."""
    return _job(SWEEP, "sweep_job")


def start_sweep(new: runner.SweepJob, work: Callable) -> None:
    _start(SWEEP, "sweep_job", new, work)
    st.session_state.pop("last_sweep", None)


def collect_sweep() -> runner.SweepJob | None:
    """Forget an ended sweep (its rows are in the store); return it (None while it runs or
    when there is none)."""
    return _collect("sweep_job", "last_sweep")


def last_sweep() -> runner.SweepJob | None:
    """The most recently ended sweep, to report a failure."""
    return st.session_state.get("last_sweep")


def job() -> runner.Job | None:
    """The run this session watches (or ended but not yet collected), if any."""
    return _job(RUN, "job")


def start_job(new: runner.Job, work: Callable, ledger: Callable) -> None:
    _start(RUN, "job", new, work, ledger=ledger)
    st.session_state.pop("last_job", None)  # an earlier failure or cancellation is old news


def collect() -> runner.Job | None:
    """Forget an ended run (its release is in the store); return the job if it ended (so
    the page can say how), None while it is still running or absent."""
    return _collect("job", "last_job")


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
        offer(exc)
    except Exception as exc:  # a bug: log it for us, tell the user plainly
        log.exception("%s failed", action)
        st.error(f"{action} failed unexpectedly ({type(exc).__name__}: {exc}). Earlier results "
                 "are kept; please report this.")


def split(ds: Dataset, schema: Schema, hold_out: bool = True
          ) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """:func:`synth.runs.split` of the current table, kept per table and unit column: the
    preview, the run and sweeps see the same parts whatever page or hold-out choice came
    between. A unit hold-out is a random draw from the seed the run store keeps for the
    table, so a reload or a restart draws the parts a run was made from again."""
    if not hold_out or schema.target is None:
        return ds.table, None
    unit = ds.unit.column if ds.unit.declared else None
    kept = st.session_state.get("split")
    if kept is None or kept[0] is not ds.table or kept[1] != unit:
        rng = np.random.default_rng(store().split_seed(account(ds).key)) if unit else None
        kept = st.session_state["split"] = (ds.table, unit,
                                            split_table(ds.table, schema, True, ds.unit, rng),
                                            secrets.token_hex(8))
    return kept[2]


def split_draw(ds: Dataset, schema: Schema) -> str:
    """A token of the kept split's draw, for caching what is computed from its parts."""
    split(ds, schema)
    return st.session_state["split"][3] if "split" in st.session_state else ""
