"""The one way this package keeps state in SQLite: the privacy account and the run store.

Several processes (the app's server, the CLI, a sweep's workers) write the same file, so
every write is one ``BEGIN IMMEDIATE`` transaction: it takes the lock at once, and a check
and the write it allows are one step (a lifetime limit and its charge, a run id and its
record). A file the owner alone may read, and a failure said in one line that names it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from synth.errors import SynthError

WAIT = 60  # seconds a writer waits for another's lock before it fails


def private_file(path: Path) -> None:
    """Create ``path`` (and its folder) readable by its owner alone, if it is not there."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch(mode=0o600, exist_ok=True)


@contextmanager
def failing(error: type[SynthError], what: str, how: str, after: str = "") -> Iterator[None]:
    """A file-system or SQLite failure (a full disk, a folder that is a file) as one line:
    ``what`` cannot be ``how`` (the reason), and what to do; ``after`` ends it."""
    try:
        yield
    except (OSError, sqlite3.Error) as exc:
        reason = " ".join(str(getattr(exc, "strerror", None) or exc).split())
        raise error(f"{what} cannot be {how} ({reason}); free space there or set SYNTH_HOME "
                    f"to a writable folder{after}") from None


@contextmanager
def transaction(path: Path, write: bool = True) -> Iterator[sqlite3.Connection]:
    """One transaction on ``path``: a write takes the lock at once; an error rolls it back."""
    db = sqlite3.connect(path, timeout=WAIT, isolation_level=None)
    try:
        db.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
    finally:
        db.close()
