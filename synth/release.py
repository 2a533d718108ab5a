"""A release, and the one writer of releases: its files whole or absent.

:class:`Release` is what a run releases, in one shape everywhere (the CLI, the app's
downloads, the run store, sweeps and notebooks). A run opens its :class:`ReleaseWriter`
before it spends anything: every output is checked against every input and against the
other outputs, the hidden temporary files are created beside each destination and the
table's folder is checked for room, so a release that could not be written is refused before
the first charge. After the run, :meth:`ReleaseWriter.write` renames the ledger into place
and the table last, over the old files (an old release is never removed before its
replacement is there). Temporary files whose writer is gone (killed during its write, say)
are removed, and reported, by the next writer of the same destination.

The CSV of a release goes through :func:`csv_text`: text a spreadsheet would run as a formula
is written with a ``'`` before it (OWASP's advice on CSV injection).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import glob
import hashlib
import io
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from synth.data import human_bytes
from synth.errors import ParameterError, SynthError
from synth.methods.base import BYTES_PER_CELL

RELEASED = "released"
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")  # what a spreadsheet may read as a formula
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def fault(point: str) -> None:
    """Test-only seam for faults that cannot be staged for real (a kill between the ledger's
    rename and the table's): tests replace it; in use it does nothing."""


def free_bytes(folder: Path) -> int:
    """Bytes free in ``folder``'s file system (a test makes a disk look full here)."""
    return shutil.disk_usage(folder).free


def formula_like(value: Any) -> bool:
    """Whether a spreadsheet opening the CSV could run ``value`` as a formula: text that begins
    with one of FORMULA_START and is not a plain number ("-3.5" is read as the number it is)."""
    return (isinstance(value, str) and value.startswith(FORMULA_START)
            and _NUMBER.fullmatch(value) is None)


def _neutral(value: Any) -> Any:
    return "'" + value if formula_like(value) else value


def _text_cells(column: pd.Series) -> pd.Series | None:
    """A text column's cells with formula-like ones neutralised, or None if none is (numbers,
    negative ones included, are never touched: only text columns are looked at)."""
    if not (pd.api.types.is_object_dtype(column)
            or isinstance(column.dtype, pd.CategoricalDtype | pd.StringDtype)):
        return None
    values = column.astype(object)
    risky = [v for v in pd.unique(values) if formula_like(v)]
    if not risky:
        return None
    hit = values.isin(risky)
    return values.mask(hit, "'" + values[hit])


def formula_cells(frame: pd.DataFrame) -> dict[str, int]:
    """Each column whose header or text cells :func:`csv_text` neutralises, with how many of
    its cells (for the release checklist)."""
    found = {}
    for name in frame.columns:
        cells = _text_cells(frame[name])
        count = 0 if cells is None else int((cells.ne(frame[name].astype(object))
                                             & cells.notna()).sum())
        if count or formula_like(str(name)):
            found[str(name)] = count
    return found


def csv_text(frame: pd.DataFrame) -> str:
    """``frame`` as a release's CSV. Text cells and headers beginning with =, +, -, @, a tab
    or a CR get a ``'`` in front, so a spreadsheet shows them as text instead of running them;
    numbers are written as they are. Lines end in CRLF (RFC 4180), which makes the writer
    quote a cell holding a CR: unquoted, a spreadsheet would start a new row there, and the
    text after the CR would be a cell of its own, unprefixed."""
    fixed = {name: cells for name in frame.columns
             if (cells := _text_cells(frame[name])) is not None}
    if fixed:
        frame = pd.DataFrame({name: fixed.get(name, frame[name]) for name in frame.columns})
    return frame.to_csv(index=False, header=[_neutral(str(name)) for name in frame.columns],
                        lineterminator="\r\n")


def read_csv_text(data: bytes) -> pd.DataFrame:
    """A release's CSV read back as the table it was made from: :func:`csv_text`'s ``'``
    before formula-like text cells and headers taken off again."""
    frame = pd.read_csv(io.BytesIO(data))
    frame.columns = [_plain(str(name)) for name in frame.columns]
    for name in frame.columns:
        if pd.api.types.is_string_dtype(frame[name]):  # object or str: text cells
            frame[name] = frame[name].map(_plain)
    return frame


def _plain(value: Any) -> Any:
    return value[1:] if isinstance(value, str) and formula_like(value[1:]) and (
        value.startswith("'")) else value


def distinct(paths: Mapping[str, Path]) -> None:
    """Refuse, by name, two of an action's files that are one file (``--out`` over the private
    table or the schema, say) or where one lies inside the other (an output inside a folder
    of Parquet files read as the table). The privacy account's own files always count as
    inputs: an output over them would reset or destroy what a table has spent."""
    seen: dict[Path, str] = {}
    for name, path in {**paths, **account_files()}.items():
        try:
            key = Path(path).resolve()
        except (OSError, RuntimeError) as exc:  # a symlink loop, say
            raise ParameterError(f"{name} {str(path)!r} cannot be resolved: {exc}") from None
        for other, known in seen.items():
            if key == other or other in key.parents or key in other.parents:
                raise ParameterError(f"{name} and {known} are the same file, or one lies "
                                     f"inside the other ({str(path)!r}); give each its own "
                                     "path")
        seen[key] = name


def account_files() -> dict[str, Path]:
    """The privacy account's files and the run store's records under SYNTH_HOME, which no
    output may be."""
    from synth.account import home  # deferred: the account imports the data layer

    store = home() / "account.sqlite"
    return {"the privacy account (SYNTH_HOME)": store,
            "the privacy account's secret": store.with_name(store.name + ".secret"),
            "the run store (SYNTH_HOME)": home() / "runs.sqlite"}


@dataclass
class _Staged:
    """A hidden temporary file beside its destination, kept open (``fd``) under a lock: while
    its writer lives, no other writer takes it for a leftover."""

    tmp: Path
    fd: int

    def fill(self, data: bytes) -> None:
        os.ftruncate(self.fd, 0)
        os.lseek(self.fd, 0, os.SEEK_SET)
        with open(self.fd, "wb", closefd=False) as file:
            file.write(data)
            file.flush()
            os.fsync(self.fd)

    def drop(self) -> None:
        with contextlib.suppress(OSError):
            self.tmp.unlink(missing_ok=True)
        os.close(self.fd)


@contextlib.contextmanager
def _locked(folders: list[Path]) -> Iterator[None]:
    """Hold an exclusive flock on each folder (in one order, so two writers cannot deadlock):
    writers of the same folders take turns, and the lock leaves no file behind."""
    fds = []
    try:
        for folder in sorted({f.resolve() for f in folders}):
            fds.append(os.open(folder, os.O_RDONLY))
            fcntl.flock(fds[-1], fcntl.LOCK_EX)
        yield
    finally:
        for fd in fds:
            os.close(fd)


def remove_leftovers(path: Path) -> list[Path]:
    """Remove the temporary files an earlier writer of ``path`` left beside it, and return
    them. A writer holds a lock on its own until it ends, so one that can be locked was left
    by a writer that is gone. The caller holds the folder's lock (see :func:`_stage`)."""
    gone = []
    for tmp in sorted(path.parent.glob(f".{glob.escape(path.name)}.*.tmp")):
        try:
            fd = os.open(tmp, os.O_RDONLY)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            tmp.unlink()
            gone.append(tmp)
        except OSError:  # its writer is alive (or it is not a file we may remove)
            pass
        finally:
            os.close(fd)
    return gone


def _stage(path: Path, removed: list[Path]) -> _Staged:
    """An empty temporary file beside ``path``, locked; the leftovers swept on the way are
    added to ``removed``. Raises OSError when ``path`` cannot be written."""
    if path.is_dir():
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except FileExistsError:  # the folder's name is a file's
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR)) from None
    with _locked([path.parent]):  # a sweeper never sees our file before it is locked
        removed += remove_leftovers(path)
        fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return _Staged(Path(name), fd)


class Output:
    """One file an action writes (a sweep's table, a schema, a report), staged before the
    action runs: an output that is one of ``inputs`` or cannot be written is refused first
    (for a sweep: before anything is spent). :meth:`commit` writes it whole and renames it
    into place, so a reader sees the old file or the whole new one, never a part of it."""

    def __init__(self, path: Path, name: str = "--out",
                 inputs: Mapping[str, Path] | None = None):
        self.path, self.name = Path(path), name
        distinct({**(inputs or {}), name: self.path})
        try:
            self._staged: _Staged | None = _stage(self.path, [])
        except OSError as exc:
            raise SynthError(f"cannot write {name} {str(path)!r}: {exc.strerror}") from None

    def commit(self, write: Callable[[Path], object]) -> None:
        """``write(tmp)`` into the staged file, then rename it over ``path``."""
        if self._staged is None:
            raise SynthError(f"{self.name} {str(self.path)!r} was written already")
        try:
            write(self._staged.tmp)
            os.replace(self._staged.tmp, self.path)
        except OSError as exc:
            raise SynthError(f"cannot write {self.name} {str(self.path)!r}: "
                             f"{exc.strerror}") from None
        finally:
            self.abort()

    def abort(self) -> None:
        """Remove the staged file, if it is still there."""
        if self._staged is not None:
            self._staged.drop()
            self._staged = None


def write_file(path: Path, write: Callable[[Path], object], name: str = "--out",
               inputs: Mapping[str, Path] | None = None) -> None:
    """``write(tmp)`` into a temporary file beside ``path``, then rename it (:class:`Output`
    staged and committed at once)."""
    Output(path, name, inputs).commit(write)


@dataclass(frozen=True, eq=False)
class Release:
    """What a run releases, in one shape for the CLI, the app, the run store, sweeps and
    notebooks: the synthetic table (None for a run that spent and then stopped), its ledger
    file (the ledger, the method, its parameters, the seed, the released schema, the
    reproducing command, the row count, the status and the table's SHA-256) and the
    configuration that runs it again. :meth:`files` are its downloads and written files."""

    synthetic: pd.DataFrame | None
    ledger: Mapping[str, Any]
    configuration: Mapping[str, Any]
    csv: bytes = b""  # the table as released (csv_text, UTF-8): what the checksum is of

    @classmethod
    def of(cls, synthetic: pd.DataFrame, ledger: Mapping[str, Any],
           configuration: Mapping[str, Any]) -> Release:
        """A released table: its ledger file gains the status, row count and checksum."""
        csv = csv_text(synthetic).encode()
        return cls(synthetic, {**ledger, **_configured(configuration),
                               "rows": len(synthetic), "status": RELEASED,
                               "synthetic_sha256": hashlib.sha256(csv).hexdigest()},
                   configuration, csv)

    @classmethod
    def stopped(cls, ledger: Mapping[str, Any], configuration: Mapping[str, Any],
                how: str) -> Release:
        """A run that spent, then stopped (``how``: cancelled, or failed and why): its
        ledger, and no table."""
        return cls(None, {**ledger, **_configured(configuration),
                          "status": f"{how}; nothing was released"}, configuration)

    @property
    def status(self) -> str:
        return self.ledger.get("status", "")

    def report(self) -> str:
        """The releasable HTML report: parameters, ledger, the table's own charts."""
        from synth.report import release_report  # plotly: only a report pays for it

        return release_report(self.ledger, self.synthetic)

    def files(self, report: bool = False) -> dict[str, bytes]:
        """The release's files by name, in the order they are put in place (the table
        last); the HTML report with ``report``."""
        files = {LEDGER: _json(self.ledger), CONFIGURATION: _json(self.configuration)}
        if report:
            files[REPORT] = self.report().encode()
        if self.synthetic is not None:
            files[TABLE] = self.csv
        return files


TABLE, LEDGER, CONFIGURATION, REPORT = ("synth.csv", "ledger.json", "run.json",
                                        "release_report.html")


def _configured(configuration: Mapping[str, Any]) -> dict[str, Any]:
    """What a ledger file repeats of the configuration (its budget is the ledger's own)."""
    return {k: v for k, v in configuration.items() if k not in ("epsilon", "delta", "shares")}


def _json(value: Mapping[str, Any]) -> bytes:
    return json.dumps(value, indent=2, ensure_ascii=False).encode() + b"\n"


class ReleaseWriter:
    """The one writer of releases: a :class:`Release`'s files to ``paths`` (file name →
    destination: the CLI's ``--out`` and ``--ledger``, or every file into a run's folder),
    staged before the run.

    Opening it refuses a destination that is one of ``inputs`` or another destination,
    removes what earlier writers left (``removed`` lists it), creates the temporary files and
    checks that the table's folder has room for ``cells`` cells (at BYTES_PER_CELL each): all
    before anything is spent. Then :meth:`write` (a release, or a stopped run's ledger) and
    :meth:`abort` in any case. Files are renamed into place in :meth:`Release.files`' order,
    the table last, over the old files, under the folders' locks so that two runs cannot
    interleave: an interruption leaves a new ledger beside the old table (whose SHA-256 is
    not the one the ledger holds), never a new table without its ledger. ``labels`` name
    the destinations in errors (``--out``)."""

    def __init__(self, paths: Mapping[str, Path], inputs: Mapping[str, Path], cells: int,
                 labels: Mapping[str, str] | None = None):
        self.paths = {name: Path(path) for name, path in paths.items()}
        labelled = {(labels or {}).get(name, name): path for name, path in self.paths.items()}
        distinct({**inputs, **labelled})
        self.names = {path: label for label, path in labelled.items()}
        self.removed: list[Path] = []
        self._staged: dict[Path, _Staged] = {}
        try:
            for path in self.paths.values():
                self._stage(path)
            table = self.paths.get(TABLE)
            if table is not None:
                need = cells * BYTES_PER_CELL
                with self._writing(table):
                    free = free_bytes(table.parent)
                if need > free:
                    raise SynthError(
                        f"{self.names[table]} {str(table)!r}: its folder has "
                        f"{human_bytes(free)} free, and the table needs up to "
                        f"{human_bytes(need)} ({cells:,} cells × {BYTES_PER_CELL} bytes); "
                        "free some space or write elsewhere")
        except SynthError as exc:
            self.abort()
            raise SynthError(f"{exc}; nothing was spent") from None

    @contextlib.contextmanager
    def _writing(self, path: Path) -> Iterator[None]:
        """An OSError inside as a one-line error naming the file."""
        try:
            yield
        except OSError as exc:
            raise SynthError(f"cannot write {self.names[path]} {str(path)!r}: "
                             f"{exc.strerror or exc}") from None

    def _stage(self, path: Path) -> None:
        with self._writing(path):
            self._staged[path] = _stage(path, self.removed)

    def write(self, release: Release) -> None:
        """Fill the temporary files with ``release``'s files that have a destination, and
        rename them into place (the table last); what stays staged is removed (a stopped
        run's table, say)."""
        files = {self.paths[name]: data for name, data in
                 release.files(report=REPORT in self.paths).items() if name in self.paths}
        for path in files:
            if path not in self._staged:  # renamed by a write that failed after it
                self._stage(path)
        for path, data in files.items():
            with self._writing(path):
                self._staged[path].fill(data)
        with _locked(list({p.parent for p in files})):
            for path in files:
                with self._writing(path):
                    os.replace(self._staged[path].tmp, path)
                os.close(self._staged.pop(path).fd)
                fault(f"renamed {self.names[path]}")
        self.abort()

    def abort(self) -> None:
        """Remove what is still staged (nothing, after a whole release's write)."""
        while self._staged:
            self._staged.popitem()[1].drop()
