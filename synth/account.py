"""The persistent privacy account: what each table has spent, over every run, in SQLite.

A table is known by a fingerprint of its contents, the people in it
(:func:`synth.data.fingerprint`): row order, column order and the file it came from do not
matter, so a re-upload, a new schema or a run on a column
subset charges the same account. Runs compose by **basic composition**: a table's total is the
sum of its runs' (ε, δ), each run's own total as its ledger accounts it. Each charge also
names whom its run protected (a row, or every row of one person: :class:`PrivacyUnit`'s
column, whatever its k), and the totals are kept per unit too: the sum over all runs bounds
what one row's values gave away; a person's is the sum of the runs protecting their column,
with row-level runs counted by group privacy (see docs/privacy.md).

A run **reserves** its whole budget before anything reads the table, in one transaction that
checks the steward's lifetime limit, so two processes charging one table at once cannot both
pass it; then it **settles** to what its ledger spent (never more than reserved). A run that
crashes keeps its whole reservation: the account never under-reports. Everything goes through
:class:`Store`, a small interface, so a shared server database can replace the local file.

The file lives under ``SYNTH_HOME`` (default ``~/.synth``), readable by its owner only; it
holds keys, names and totals, never a row, and is the steward's, not part of any release. A
key is an HMAC of the table's fingerprint under a random secret kept beside it, so a leaked
file cannot confirm a guess about a row. The account is the steward's own bookkeeping, not an
enforcement boundary: a table whose content changes (a row added or dropped, a file cut to
fewer columns, numbers re-saved as 37.0) is another table with its own account. Leaving
columns out through the schema or the app keeps the table's account.
"""

from __future__ import annotations

import hmac
import math
import os
import secrets
import shlex
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from synth import sqlite
from synth.data import fingerprint, former_fingerprint
from synth.errors import AccountError, BudgetError, check_delta, check_epsilon
from synth.privacy.unit import PrivacyUnit
from synth.status import RUNNING

COMPOSITION = "basic composition across runs: a table's total is the sum of its runs' (ε, δ)"
UNBOUNDED = "no guarantee"  # a run whose ledger claims none: its ε is recorded as infinite
ONE_ROW = PrivacyUnit()  # whom a run protects unless it names a unit
SLACK = 1e-9  # relative: a limit spent exactly in several runs must not fail on rounding


def home() -> Path:
    """``SYNTH_HOME``, or ``~/.synth``."""
    return Path(os.environ.get("SYNTH_HOME") or Path.home() / ".synth")


@dataclass(frozen=True)
class Usage:
    """One table's account: its total so far, its limit and its runs."""

    key: str
    name: str
    epsilon: float  # every run's ε, summed (basic composition)
    delta: float
    runs: int
    running: int  # reserved and not settled: still running, or crashed (counted in full)
    limit_epsilon: float | None
    limit_delta: float | None
    by_unit: tuple[tuple[str, float, float], ...] = ()  # (whom it protected, ε, δ) per unit

    @property
    def mixed(self) -> bool:
        """Whether some run protected a unit other than a row: then one total is not all."""
        return any(unit != ONE_ROW.short for unit, _, _ in self.by_unit)

    def allows(self, epsilon: float, delta: float) -> bool:
        """Whether a run of (ε, δ) fits under the limit (a relative SLACK for rounding: a limit
        spent exactly in several runs must not fail)."""
        return not ((self.limit_epsilon is not None
                     and self.epsilon + epsilon > self.limit_epsilon * (1 + SLACK))
                    or (self.limit_delta is not None
                        and self.delta + delta > self.limit_delta * (1 + SLACK)))

    def refusal(self, epsilon: float, delta: float, unbounded: str = "") -> str:
        """Why the lifetime limit refuses a run of (ε, δ), "" if it does not: the one rule,
        which :meth:`Store.reserve` applies and the pages say before Run. A run that may
        carry no guarantee (``unbounded`` says why) is ε = ∞, refused wherever ε has a
        limit."""
        if (unbounded or math.isinf(epsilon)) and self.limit_epsilon is not None:
            return (f"this run may carry no DP guarantee ({unbounded or 'ε = ∞'}), and table "
                    f"{self.name!r} has a lifetime limit ({_words(self)} remain): a run "
                    "without a guarantee is refused wherever a limit is set")
        if self.allows(math.inf if unbounded else epsilon, delta):
            return ""
        return (f"this run would spend ε={epsilon:g}, δ={delta:.3g} of table {self.name!r}, "
                f"over its lifetime limit: {_words(self)} remain")

    @property
    def remaining(self) -> tuple[float, float]:
        """(ε, δ) left under the limit (infinite where there is none)."""
        eps = math.inf if self.limit_epsilon is None else max(0.0, self.limit_epsilon
                                                              - self.epsilon)
        delta = math.inf if self.limit_delta is None else max(0.0, self.limit_delta
                                                              - self.delta)
        return eps, delta


class Store:
    """The account's storage: a SQLite file (one table of tables, one of charges)."""

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path is not None else home() / "account.sqlite"
        with self._failing("opened"):
            sqlite.private_file(self.path)
        with self._transaction() as db:  # one process creates and migrates; the others see it
            db.execute("CREATE TABLE IF NOT EXISTS tables (key TEXT PRIMARY KEY, name TEXT NOT "
                       "NULL, limit_epsilon REAL, limit_delta REAL)")
            db.execute("CREATE TABLE IF NOT EXISTS charges (id INTEGER PRIMARY KEY, key TEXT "
                       "NOT NULL REFERENCES tables(key), epsilon REAL NOT NULL, delta REAL NOT "
                       "NULL, status TEXT NOT NULL, what TEXT NOT NULL, started REAL NOT NULL, "
                       "unit TEXT NOT NULL)")
            db.execute("CREATE INDEX IF NOT EXISTS charges_key ON charges(key)")
            if "unit" not in {row[1] for row in db.execute("PRAGMA table_info(charges)")}:
                _add_units(db)

    def _failing(self, how: str):
        """Nothing runs without its account: a failure names its file."""
        return sqlite.failing(AccountError, f"the privacy account {str(self.path)!r}", how,
                              ": nothing was run or spent")

    def key(self, fingerprint: str, former: str | None = None) -> str:
        """The account's key for a table's fingerprint: an HMAC under this store's secret.
        An account kept under the table's ``former`` fingerprint
        (:func:`synth.data.former_fingerprint`) moves to it, its charges and its limit (the
        stricter, if both have one), so no spending is lost."""
        with self._failing("written"):
            key = self._key(fingerprint)
        if former is not None:
            self._move(self._key(former), key)
        return key

    def _move(self, old: str, new: str) -> None:
        with self._transaction() as db:
            found = db.execute("SELECT name, limit_epsilon, limit_delta FROM tables WHERE "
                               "key = ?", (old,)).fetchone()
            if found is None or old == new:
                return
            _ensure(db, new, found[0])
            db.execute("UPDATE charges SET key = ? WHERE key = ?", (new, old))
            for i, column in ((1, "limit_epsilon"), (2, "limit_delta")):
                if found[i] is not None:  # the stricter limit holds
                    db.execute(f"UPDATE tables SET {column} = MIN(COALESCE({column}, ?), ?) "
                               "WHERE key = ?", (found[i], found[i], new))
            db.execute("DELETE FROM tables WHERE key = ?", (old,))

    def _key(self, fingerprint: str) -> str:
        secret = self.path.with_name(self.path.name + ".secret")
        if not secret.exists():  # written whole, then linked into place: the first one wins
            draft = secret.with_name(f"{secret.name}.{os.getpid()}.{secrets.token_hex(4)}")
            fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as out:
                out.write(secrets.token_bytes(32))
            try:
                os.link(draft, secret)
            except FileExistsError:
                pass
            finally:
                draft.unlink()
        return hmac.new(secret.read_bytes(), fingerprint.encode(), "sha256").hexdigest()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, taken at once: a limit check and its charge are one step."""
        with self._failing("written"), sqlite.transaction(self.path) as db:
            yield db

    def usage(self, key: str) -> Usage | None:
        with self._transaction() as db:
            return _usage(db, key)

    def tables(self) -> list[Usage]:
        with self._transaction() as db:
            keys = [k for (k,) in db.execute("SELECT key FROM tables ORDER BY name, key")]
            return [_usage(db, k) for k in keys]

    def set_limit(self, key: str, name: str, epsilon: float, delta: float | None) -> Usage:
        """The table's lifetime limit (δ None: no δ limit); it may be below what is spent,
        which then refuses every further run."""
        check_epsilon(epsilon)
        if delta is not None:
            check_delta(delta)
        with self._transaction() as db:
            _ensure(db, key, name)
            db.execute("UPDATE tables SET limit_epsilon = ?, limit_delta = ? WHERE key = ?",
                       (float(epsilon), None if delta is None else float(delta), key))
            return _usage(db, key)

    def reserve(self, key: str, name: str, epsilon: float, delta: float, what: str,
                unit: PrivacyUnit = ONE_ROW, unbounded: str = "") -> int:
        """Charge a run's whole (ε, δ), protecting ``unit``, before it starts, or refuse, with
        what remains, when it would pass the limit. A run that may carry no guarantee
        (``unbounded`` says why) is charged ε = ∞, so any limit refuses it. Returns the
        charge's id for :meth:`settle`."""
        if unbounded:
            epsilon = math.inf
        with self._transaction() as db:
            _ensure(db, key, name)
            refused = _usage(db, key).refusal(epsilon, delta, unbounded)
            if refused:
                raise BudgetError(refused)
            return db.execute(
                "INSERT INTO charges (key, epsilon, delta, status, what, started, unit) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (key, float(epsilon), float(delta), RUNNING, what, time.time(),
                 unit.short)).lastrowid

    def charges(self, key: str) -> dict[int, tuple[float, float, str]]:
        """A table's charges, (ε, δ, status) by id, as the account holds them now: a run that
        died keeps its whole reservation."""
        with self._transaction() as db:
            return {row[0]: tuple(row[1:]) for row in db.execute(
                "SELECT id, epsilon, delta, status FROM charges WHERE key = ?", (key,))}

    def settle(self, charge: int, epsilon: float, delta: float, status: str) -> None:
        """What the run spent, by its ledger; never more than it reserved. A run without a
        guarantee (``UNBOUNDED``) keeps its δ and has an infinite ε: it ends any limit."""
        with self._transaction() as db:
            if status == UNBOUNDED:
                db.execute("UPDATE charges SET epsilon = ?, status = ? WHERE id = ?",
                           (math.inf, status, charge))
                return
            db.execute("UPDATE charges SET epsilon = MIN(epsilon, ?), delta = MIN(delta, ?), "
                       "status = ? WHERE id = ?", (float(epsilon), float(delta), status, charge))


@dataclass(frozen=True)
class TableAccount:
    """One table's privacy account in a store (SQLite under ``SYNTH_HOME``): what every run on
    the table has spent, from the app, the CLI and sweeps alike, and its lifetime limit.

    ``TableAccount.of(table, name)`` finds the account by the table's contents (the same
    file opened again is the same table); ``usage()`` reads it; ``set_limit(ε, δ)`` sets the
    limit a run may not pass. A run ``reserve``-s its whole budget before it starts and
    ``settle``-s what it really spent when it ends."""

    store: Store
    key: str
    name: str

    @classmethod
    def of(cls, table: pd.DataFrame, name: str, store: Store | None = None) -> TableAccount:
        store = store or Store()
        return cls(store, store.key(fingerprint(table), former_fingerprint(table)), name)

    def usage(self) -> Usage:
        return self.store.usage(self.key) or Usage(self.key, self.name, 0.0, 0.0, 0, 0, None,
                                                   None)

    def reserve(self, epsilon: float, delta: float, what: str,
                unit: PrivacyUnit = ONE_ROW, unbounded: str = "") -> int:
        return self.store.reserve(self.key, self.name, epsilon, delta, what, unit, unbounded)

    def set_limit(self, epsilon: float, delta: float | None = None) -> Usage:
        return self.store.set_limit(self.key, self.name, epsilon, delta)

    def settle(self, charge: int, epsilon: float, delta: float, status: str) -> None:
        self.store.settle(charge, epsilon, delta, status)


def _add_units(db: sqlite3.Connection) -> None:
    """Give a file written before the account kept units one: each charge's unit is read
    back from its command (``--privacy-unit COLUMN``), else it protected rows."""
    db.execute(f"ALTER TABLE charges ADD COLUMN unit TEXT NOT NULL DEFAULT '{ONE_ROW.short}'")
    for charge, what in db.execute(
            "SELECT id, what FROM charges WHERE what LIKE '%--privacy-unit %'").fetchall():
        words = shlex.split(what)
        unit = PrivacyUnit(words[words.index("--privacy-unit") + 1])
        db.execute("UPDATE charges SET unit = ? WHERE id = ?", (unit.short, charge))


def _ensure(db: sqlite3.Connection, key: str, name: str) -> None:
    db.execute("INSERT INTO tables (key, name) VALUES (?, ?) ON CONFLICT(key) DO UPDATE "
               "SET name = excluded.name", (key, name))


def _usage(db: sqlite3.Connection, key: str) -> Usage | None:
    row = db.execute("SELECT name, limit_epsilon, limit_delta FROM tables WHERE key = ?",
                     (key,)).fetchone()
    if row is None:
        return None
    eps, delta, runs, running = db.execute(
        "SELECT COALESCE(SUM(epsilon), 0), COALESCE(SUM(delta), 0), COUNT(*), "
        "COALESCE(SUM(status = ?), 0) FROM charges WHERE key = ?", (RUNNING, key)).fetchone()
    by_unit = tuple((unit, float(e), float(d)) for unit, e, d in db.execute(
        "SELECT unit, SUM(epsilon), SUM(delta) FROM charges WHERE key = ? GROUP BY unit "
        "ORDER BY unit", (key,)))
    return Usage(key, row[0], float(eps), float(delta), int(runs), int(running), row[1], row[2],
                 by_unit)


def _words(usage: Usage) -> str:
    eps, delta = usage.remaining
    return (f"ε={eps:g}" + ("" if math.isinf(delta) else f", δ={delta:.3g}")
            + f" of ε={usage.limit_epsilon:g}"
            + ("" if usage.limit_delta is None else f", δ={usage.limit_delta:.3g}"))
