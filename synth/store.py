"""The run store: every run and sweep made from the app, the CLI or a sweep, kept past the
browser that started it.

A record per run in SQLite (``runs.sqlite`` under ``SYNTH_HOME``, beside the privacy account)
and a folder per run (``runs/<id>/``) for the release files another module writes there, both
the owner's alone. It keeps configurations, figures and releases, and the steward's decisions
per table (:mod:`synth.decisions`), never a private table, and nothing of it goes into a
release. Several processes write at once, each write one ``BEGIN IMMEDIATE`` transaction. A
status moves once, from running; a running record whose process is gone reads as
:data:`DIED` (never stored): a crash shows with no one left to write it down.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import socket
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, fields
from pathlib import Path
from secrets import randbits, token_hex
from typing import Any

from synth import sqlite
from synth.account import home
from synth.errors import SynthError, plain
from synth.status import CANCELLED, DIED, FAILED, FINISHED, RUNNING

RUN, SWEEP = "run", "sweep"
HOST = socket.gethostname()

# every column and its declaration: one missing from an older file is added with its default
COLUMNS = {
    "id": "TEXT PRIMARY KEY", "kind": "TEXT NOT NULL DEFAULT 'run'",
    "table_key": "TEXT NOT NULL DEFAULT ''", "table_name": "TEXT NOT NULL DEFAULT ''",
    "method": "TEXT NOT NULL DEFAULT ''", "epsilon": "REAL", "delta": "REAL",
    "status": "TEXT NOT NULL DEFAULT 'running'", "started": "REAL NOT NULL DEFAULT 0",
    "ended": "REAL", "charge": "INTEGER", "configuration": "TEXT NOT NULL DEFAULT '{}'",
    "summary": "TEXT NOT NULL DEFAULT '{}'", "error": "TEXT NOT NULL DEFAULT ''",
    "pid": "INTEGER NOT NULL DEFAULT 0", "host": "TEXT NOT NULL DEFAULT ''",
    "birth": "INTEGER",  # the process's start time (Linux clock ticks): a reused pid is not it
    "deleted": "INTEGER NOT NULL DEFAULT 0"}
SELECT = f"SELECT {', '.join(COLUMNS)} FROM runs"


class StoreError(SynthError):
    """The run store cannot be read or written, or a record cannot change as asked."""


@dataclass(frozen=True)
class RunEntry:
    """One run or sweep as recorded: what was asked, how it ended, where its files lie."""

    id: str
    kind: str
    table: str  # the table's account key (opaque here)
    table_name: str
    method: str
    epsilon: float
    delta: float
    status: str
    started: float
    ended: float | None
    charge: int | None
    configuration: dict
    summary: dict
    error: str
    pid: int
    host: str
    folder: Path
    deleted: bool = False

    def files(self) -> list[Path]:
        """The files now in the folder (a release another module wrote), [] once deleted."""
        try:
            return sorted(p for p in self.folder.rglob("*") if p.is_file())
        except OSError:
            return []

    def to_dict(self) -> dict:
        """The entry as strict JSON values: non-finite floats (ε = ∞) as strings ("inf")."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        files = [p.relative_to(self.folder).as_posix() for p in self.files()]
        return _json({**data, "folder": str(self.folder), "files": files})


class RunStore:
    """Runs and sweeps in a SQLite file, each one's files in a folder beside it."""

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path is not None else home() / "runs.sqlite"
        self.root = self.path.parent / "runs"
        with self._failing("opened", self.root):
            self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        with self._failing("opened"):
            sqlite.private_file(self.path)
        with self._transaction() as db:  # one process migrates; the others then see it done
            db.execute("CREATE TABLE IF NOT EXISTS runs ("
                       + ", ".join(f"{name} {how}" for name, how in COLUMNS.items()) + ")")
            have = {row[1] for row in db.execute("PRAGMA table_info(runs)")}
            for name in [name for name in COLUMNS if name not in have]:
                db.execute(f"ALTER TABLE runs ADD COLUMN {name} {COLUMNS[name]}")
            db.execute("CREATE INDEX IF NOT EXISTS runs_table ON runs(table_key)")
            # per table: the steward's decisions (synth.decisions) and the seed of its
            # held-out units (synth.runs.split), neither ever part of a release
            db.execute("CREATE TABLE IF NOT EXISTS tables (table_key TEXT PRIMARY KEY, "
                       "decisions TEXT, saved REAL, split_seed INTEGER)")

    def _failing(self, how: str, path: Path | None = None):
        return sqlite.failing(StoreError, f"the run store {str(path or self.path)!r}", how)

    @contextmanager
    def _transaction(self, write: bool = True) -> Iterator[sqlite3.Connection]:
        """One transaction; a write takes the lock at once, so check-then-write is one step."""
        with self._failing("written" if write else "read"), \
                sqlite.transaction(self.path, write) as db:
            yield db

    def start(self, kind: str, table: str, table_name: str, method: str, epsilon: float,
              delta: float, configuration: dict, charge: int | None = None) -> RunEntry:
        """Record a run as it begins, with a new folder of its own for its files."""
        if kind not in (RUN, SWEEP):
            raise StoreError(f"a record's kind is {RUN!r} or {SWEEP!r}, got {kind!r}")
        stat = _stat(os.getpid())
        with self._transaction() as db:
            now = time.time()
            for _ in range(1000):  # ids of one second differ by chance; a clash draws again
                id = time.strftime("%Y%m%d-%H%M%S-", time.gmtime(now)) + token_hex(2)
                if not (db.execute("SELECT 1 FROM runs WHERE id = ?", (id,)).fetchone()
                        or (self.root / id).exists()):
                    break
            else:  # never in practice (65,536 a second), but never a loop holding the lock
                raise StoreError(f"no free run id in {str(self.root)!r} this second; try again")
            db.execute(f"INSERT INTO runs ({', '.join(COLUMNS)}) VALUES "
                       f"({', '.join('?' * len(COLUMNS))})",
                       (id, kind, table, table_name, method, float(epsilon), float(delta),
                        RUNNING, now, None, charge, _dumps(configuration), "{}", "",
                        os.getpid(), HOST, stat and stat[1], 0))
            with self._failing("written", self.root / id):
                (self.root / id).mkdir(mode=0o700)
            return self._find(db, id)

    def finish(self, id: str, summary: dict | None = None) -> RunEntry:
        """End a run that made its release, with its figures for listing."""
        return self._move(id, FINISHED, "", summary or {})

    def stop(self, id: str, status: str, error: str = "", summary: dict | None = None
             ) -> RunEntry:
        """End a run as cancelled or failed (``error``: the failure's one line), with what
        figures it has (a cancelled sweep's rows)."""
        if status not in (CANCELLED, FAILED):
            raise StoreError(f"a run stops as {CANCELLED!r} or {FAILED!r}, not {status!r}")
        return self._move(id, status, error, summary or {})

    def _move(self, id: str, status: str, error: str, summary: dict) -> RunEntry:
        """RUNNING (or DIED: stored as running) to ``status``, once: an end is not rewritten."""
        with self._transaction() as db:
            entry = self._find(db, id)
            if entry.status not in (RUNNING, DIED):
                raise StoreError(f"run {entry.id} is already {entry.status}: a run's status "
                                 f"moves once, from {RUNNING!r}")
            db.execute("UPDATE runs SET status = ?, ended = ?, error = ?, summary = ? "
                       "WHERE id = ?", (status, time.time(), " ".join(error.split()),
                                        _dumps({**entry.summary, **summary}), entry.id))
            return self._find(db, entry.id)

    def get(self, id: str) -> RunEntry:
        """The run with this id, or with this unique prefix of one."""
        with self._transaction(write=False) as db:
            return self._find(db, id)

    def list(self, table: str | None = None, kind: str | None = None) -> list[RunEntry]:
        """Runs, newest first, of one table or kind if given."""
        where = [(c, v) for c, v in (("table_key", table), ("kind", kind)) if v is not None]
        clause = " AND ".join(f"{c} = ?" for c, _ in where)
        with self._transaction(write=False) as db:
            rows = db.execute(f"{SELECT} {'WHERE ' + clause if where else ''} "
                              "ORDER BY started DESC, id DESC", [v for _, v in where])
            return [self._entry(row) for row in rows.fetchall()]

    def delete(self, id: str) -> RunEntry:
        """Remove a run's files and folder, keeping its record, marked deleted, and its charge
        in the account. A live run is refused: it may still be writing there."""
        with self._transaction() as db:
            entry = self._find(db, id)
            if entry.status == RUNNING:
                raise StoreError(f"run {entry.id} is still running (pid {entry.pid} on "
                                 f"{entry.host}): stop it before deleting it")
            with self._failing("deleted", entry.folder):
                if entry.folder.exists():
                    shutil.rmtree(entry.folder)
            db.execute("UPDATE runs SET deleted = 1 WHERE id = ?", (entry.id,))
            return self._find(db, entry.id)

    def keep_decisions(self, table: str, body: dict) -> None:
        """Keep the steward's decisions about a table (:mod:`synth.decisions`), replacing
        those kept before."""
        with self._transaction() as db:
            db.execute("INSERT INTO tables (table_key, decisions, saved) VALUES (?, ?, ?) "
                       "ON CONFLICT(table_key) DO UPDATE SET decisions = excluded.decisions, "
                       "saved = excluded.saved", (table, _dumps(body), time.time()))

    def decisions(self, table: str) -> tuple[dict, float] | None:
        """The decisions kept about a table and when they were saved, if any."""
        with self._transaction(write=False) as db:
            row = db.execute("SELECT decisions, saved FROM tables WHERE table_key = ?",
                             (table,)).fetchone()
        return None if row is None or row[0] is None else (json.loads(row[0]), row[1])

    def split_seed(self, table: str) -> int:
        """The seed of a table's held-out units: drawn once from OS entropy, then kept."""
        with self._transaction() as db:
            db.execute("INSERT INTO tables (table_key, split_seed) VALUES (?, ?) ON CONFLICT"
                       "(table_key) DO UPDATE SET split_seed = coalesce(split_seed, "
                       "excluded.split_seed)", (table, randbits(62)))
            return db.execute("SELECT split_seed FROM tables WHERE table_key = ?",
                              (table,)).fetchone()[0]

    def _find(self, db: sqlite3.Connection, id: str) -> RunEntry:
        rows = db.execute(f"{SELECT} WHERE id = ?", (id,)).fetchall() or (db.execute(
            f"{SELECT} WHERE substr(id, 1, ?) = ? ORDER BY id LIMIT 3", (len(id), id)
        ).fetchall() if id else [])
        if not rows:
            raise StoreError(f"no run {id!r} in {str(self.path)!r}: list the runs for their ids")
        if len(rows) > 1:
            raise StoreError(f"run id {id!r} is ambiguous ({', '.join(r[0] for r in rows[:2])}"
                             ", …): give more of it")
        return self._entry(rows[0])

    def _entry(self, row: tuple) -> RunEntry:
        values = dict(zip(COLUMNS, row, strict=True))
        birth, table, status = values.pop("birth"), values.pop("table_key"), values["status"]
        if status == RUNNING and values["host"] == HOST and not _alive(values["pid"], birth):
            status = DIED
        for k in ("epsilon", "delta"):  # NULL: NaN was given, or a column added since
            values[k] = math.nan if values[k] is None else float(values[k])
        return RunEntry(**{
            **values, "table": table, "status": status,
            "configuration": json.loads(values["configuration"]),
            "summary": json.loads(values["summary"]), "deleted": bool(values["deleted"]),
            "folder": self.root / values["id"]})


def _alive(pid: int, birth: int | None) -> bool:
    """Whether ``pid`` still runs and is the process that started the run: a zombie, or a
    reused pid (another start time, where Linux tells it), is gone."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # alive, another user's
    stat = _stat(pid)
    return stat is None or (stat[0] != "Z" and (birth is None or stat[1] == birth))


def _stat(pid: int) -> tuple[str, int] | None:
    """A process's state and start time from ``/proc/<pid>/stat`` (fields 3 and 22), if any."""
    try:  # the name (field 2) is in parentheses and may hold spaces: split after its end
        rest = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return rest[0], int(rest[19])
    except (OSError, IndexError, ValueError):
        return None


def _json(value: Any) -> Any:
    """``value`` with non-finite floats as strings ("inf", "nan"): strict JSON, readable by
    any tool; numpy scalars as Python's."""
    value = plain(value)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {str(k): _json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json(v) for v in value]
    return value


def _dumps(value: dict) -> str:
    return json.dumps(_json(value), allow_nan=False, default=str, ensure_ascii=False)
