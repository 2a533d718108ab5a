"""A table read where it lies, in chunks: for files larger than memory, or than an upload.

DuckDB scans the file: a CSV, a Parquet file, or a folder of Parquet files (a dataset, hive
partitions included). It reads only the columns asked for, streams them as Arrow batches of
``chunk_rows`` rows under a fixed memory limit, and counts a Parquet file's rows from its
metadata. DuckDB rather than Polars because one SQL surface covers CSV, Parquet files and
folders, its memory limit and thread count are settings we control, and it has no Python
dependencies to conflict with our pins.

Every chunk holds what :func:`synth.data.read_table` would give for the same rows (CSV cells
as stripped strings with the missing markers as NaN; Parquet columns as pandas reads them),
so a statistic summed over the chunks equals the one taken in memory, exactly.
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from synth import missing
from synth.data import _cell, _check_header, _sniff_delimiter, human_bytes
from synth.errors import DataError, check_int
from synth.privacy.unit import Population, PrivacyUnit, population
from synth.schema import Schema, check_target, prepare

READ = "read"  # the fit stage that reads a file into memory (a method that needs rows)
CHUNK_ROWS = 100_000
MEMORY_LIMIT = "1GB"  # DuckDB's own buffers; a chunk's pandas frame comes on top
HEAD_BYTES = 1 << 16  # what the delimiter and header are read from


class TableFile:
    """A CSV or Parquet table on this machine, read in chunks of ``chunk_rows`` rows.

    Nothing is read but the header (or Parquet schema) until :meth:`chunks` is iterated.
    ``encoding`` is CSV's: UTF-8 by default (with or without a byte-order mark), or one
    DuckDB reads (``"latin-1"``, ``"utf-16"``).
    """

    def __init__(self, path: str | os.PathLike, *, chunk_rows: int = CHUNK_ROWS,
                 encoding: str | None = None):
        self.path = Path(path)
        self.chunk_rows = check_int(chunk_rows, "chunk_rows")
        self.name = repr(self.path.name)
        if not self.path.exists():
            raise DataError(f"no such file or folder: {str(self.path)!r}")
        if self.path.is_dir():
            files = sorted(self.path.rglob("*.parquet"))
            if not files:
                raise DataError(f"{str(self.path)!r} is a folder without .parquet files")
            self.size = sum(f.stat().st_size for f in files)
            self._metadata = _pandas_metadata(files[0])
            self._scan = f"read_parquet({_quote(str(self.path / '**' / '*.parquet'))}, " \
                         "hive_partitioning = true)"
            self.kind = "Parquet dataset"
        else:
            self.size = self.path.stat().st_size
            with open(self.path, "rb") as fh:
                head = fh.read(HEAD_BYTES)
            if not head.strip():
                raise DataError(f"{self.name} is empty")
            if head[:4] == b"PAR1":
                self._scan = f"read_parquet({_quote(str(self.path))})"
                self.kind = "Parquet"
                self._metadata = _pandas_metadata(self.path)
            else:
                self._scan = self._csv_scan(head, encoding)
                self.kind = "CSV"
        self.columns = self._columns()
        _check_header(self.columns, self.name)
        self._rows: int | None = None

    def _csv_scan(self, head: bytes, encoding: str | None) -> str:
        """The read_csv call: our own delimiter sniffing and header, every cell as text."""
        name = encoding or ("utf-16" if head.startswith((codecs.BOM_UTF16_LE,
                                                         codecs.BOM_UTF16_BE)) else "utf-8")
        text = head.decode("utf-8-sig" if name == "utf-8" else name, errors="ignore")
        delimiter = _sniff_delimiter(text)
        first = next(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter), [])
        self._header = [h.strip() for h in first]
        columns = ", ".join(f"{_quote(h)}: 'VARCHAR'" for h in self._header)
        return (f"read_csv({_quote(str(self.path))}, header = true, auto_detect = false, "
                f"columns = {{{columns}}}, delim = {_quote(delimiter)}, quote = '\"', "
                f"escape = '\"', encoding = {_quote(name)}, strict_mode = true)")

    def __repr__(self) -> str:
        return f"TableFile({str(self.path)!r}: {self.kind}, {human_bytes(self.size)})"

    def _connect(self):
        import duckdb  # deferred: only a table read where it lies needs it

        con = duckdb.connect()
        con.execute(f"SET memory_limit = '{MEMORY_LIMIT}'")
        con.execute("SET enable_progress_bar = false")
        con.execute("SET preserve_insertion_order = true")  # chunks in the file's order
        return con

    def _query(self, sql: str):
        import duckdb

        try:
            return self._connect().sql(sql)
        except duckdb.Error as exc:
            raise DataError(f"{self.name} cannot be read: {_first_line(exc)}") from None

    def _columns(self) -> list[str]:
        if self.kind == "CSV":
            return list(self._header)
        return [str(c) for c in self._query(f"SELECT * FROM {self._scan} LIMIT 0").columns]

    def __len__(self) -> int:
        """The row count (a Parquet file's from its metadata; a CSV's by a scan)."""
        if self._rows is None:
            import duckdb

            try:
                rows = self._query(f"SELECT count(*) FROM {self._scan}").fetchall()
            except duckdb.Error as exc:
                raise DataError(f"{self.name} cannot be read: {_first_line(exc)}") from None
            self._rows = int(rows[0][0])
        return self._rows

    def chunks(self, columns: Sequence[str] | None = None) -> Iterator[pd.DataFrame]:
        """The table's rows in order, ``chunk_rows`` at a time, with only ``columns``."""
        import duckdb

        columns = list(self.columns if columns is None else columns)
        absent = [c for c in columns if c not in self.columns]
        if absent:
            raise DataError(f"{self.name} has no columns {absent}; it has {self.columns[:20]}")
        select = ", ".join(_ident(c) for c in columns)
        integers = self._nullable_integers(columns)
        try:
            reader = self._query(f"SELECT {select} FROM {self._scan}").to_arrow_reader(
                self.chunk_rows)
            start = 0
            for batch in reader:
                frame = self._frame(batch, integers)
                frame.index = pd.RangeIndex(start, start + len(frame))
                start += len(frame)
                yield frame
        except duckdb.Error as exc:
            raise DataError(f"{self.name} cannot be read: {_first_line(exc)}") from None

    def __iter__(self) -> Iterator[pd.DataFrame]:
        return self.chunks()

    def _frame(self, batch, integers: set[str]) -> pd.DataFrame:
        if self.kind != "CSV" and self._metadata:  # the dtypes pandas wrote (Int64, …)
            batch = batch.replace_schema_metadata(self._metadata)
        frame = batch.to_pandas()
        if self.kind == "CSV":
            cells = frame.to_numpy(dtype=object, na_value="")
            return pd.DataFrame(_cell(cells), columns=frame.columns, dtype=object)
        for name in integers:  # pandas reads a whole column with a null as floats
            frame[name] = frame[name].astype(float)
        return frame

    def _nullable_integers(self, columns: Sequence[str]) -> set[str]:
        """Parquet integer columns that pandas did not write and that hold a null anywhere:
        read whole, pandas gives them as floats, so every chunk must too (one aggregate
        query, answered from the file's metadata where it can be)."""
        if self.kind == "CSV":
            return set()
        select = ", ".join(_ident(c) for c in columns)
        types = self._query(f"SELECT {select} FROM {self._scan} LIMIT 0").dtypes
        written = _pandas_columns(self._metadata)
        ints = [c for c, t in zip(columns, types, strict=True)
                if "INT" in str(t).upper() and c not in written]
        if not ints:
            return set()
        counts = self._query("SELECT " + ", ".join(f"count(*) - count({_ident(c)})"
                                                   for c in ints) + f" FROM {self._scan}"
                             ).fetchall()[0]
        return {c for c, nulls in zip(ints, counts, strict=True) if nulls}


def _pandas_metadata(path: Path) -> dict | None:
    """The schema metadata of a Parquet file (pandas' own dtypes, when pandas wrote it)."""
    import pyarrow.parquet as pq

    try:
        metadata = pq.read_schema(path).metadata
    except Exception as exc:  # pyarrow raises several types for corrupt files
        raise DataError(f"{path.name!r} looks like Parquet but cannot be read: {exc}") from None
    return metadata if metadata and b"pandas" in metadata else None


def _pandas_columns(metadata: dict | None) -> set[str]:
    if not metadata:
        return set()
    return {str(c.get("name")) for c in json.loads(metadata[b"pandas"]).get("columns", [])}


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__



class Chunks:
    """The private table as a method that only counts reads it: one chunk at a time, each
    prepared against ``schema`` (and, with ``encode``, put in model space), so memory holds
    a chunk, never the table. Iterating again reads the file again.

    A pass checks what :func:`synth.schema.validate` checks of a table in memory: every
    value against the schema (a refusal names the column) and, over the pass, two classes
    in the target. A method reads its first pass whole before it charges anything, so a bad
    file is refused with nothing spent. Every pass must see the ``rows`` the plan was made
    for: a file changed under a fit is refused.
    """

    def __init__(self, rows: int, frames: Callable[[], Iterable[pd.DataFrame]],
                 target: str | None = None, name: str = "the table"):
        self.rows, self._frames, self._target, self._name = rows, frames, target, name

    @classmethod
    def of_frame(cls, frame: pd.DataFrame) -> Chunks:
        """A table already in memory and checked, as one chunk."""
        return cls(len(frame), lambda: [frame])

    @classmethod
    def of_file(cls, file: TableFile, schema: Schema, encode: bool = True,
                target: bool = True) -> Chunks:
        """``file``'s chunks prepared against ``schema`` (in model space with ``encode``);
        ``target``: check the target's classes, as validating a table does (once a fit
        has learned the domains, a target folded into one class is that release's fact,
        not a refusal: a table in memory is not checked again either)."""

        def frames() -> Iterator[pd.DataFrame]:
            for chunk in file.chunks(schema.names):
                prepared = prepare(chunk, schema)
                yield missing.encode(prepared, schema) if encode else prepared

        return cls(len(file), frames, schema.target if target else None, file.name)

    def __len__(self) -> int:
        return self.rows

    def __iter__(self) -> Iterator[pd.DataFrame]:
        classes: set = set()
        seen = 0
        for frame in self._frames():
            seen += len(frame)
            if self._target is not None and len(classes) < 2:
                classes.update(frame[self._target].dropna().unique()[:2].tolist())
            yield frame
        if seen != self.rows:
            raise DataError(f"{self._name} changed while it was read: {seen:,} rows, not the "
                            f"{self.rows:,} the fit was planned for")
        if self._target is not None:
            check_target(pd.DataFrame({self._target: sorted(classes)}), self._target)

    def scan(self, ctx: Any, stage: str, description: str) -> Iterator[pd.DataFrame]:
        """The chunks, as a stage of ``ctx`` (a FitContext) whose progress counts rows read
        (and which stops between chunks when the run is cancelled)."""
        ctx.stage(stage, self.rows, description)
        done = 0
        for frame in self:
            yield frame
            done += len(frame)
            ctx.progress(stage, done, self.rows)


def read_whole(file: TableFile, columns: Sequence[str] | None = None,
               progress: Callable[[int, int], None] | None = None) -> pd.DataFrame:
    """``columns`` of ``file`` in memory, for what needs every row; ``progress`` is called
    with (rows read, rows) after each chunk."""
    columns = list(file.columns if columns is None else columns)
    frames, done = [], 0
    for frame in file.chunks(columns):
        frames.append(frame)
        done += len(frame)
        if progress is not None:
            progress(done, len(file))
    if not frames:
        return pd.DataFrame(columns=columns)
    return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]


def open_table(path: str | os.PathLike, max_bytes: int, encoding: str | None = None
               ) -> pd.DataFrame | TableFile:
    """A private table by path: read whole up to ``max_bytes``; a larger file, or a folder
    of Parquet files, as a :class:`TableFile` read where it lies."""
    from synth.data import read_table

    max_bytes = check_int(max_bytes, "max_bytes")
    where = Path(path)
    if where.is_dir() or (where.is_file() and where.stat().st_size > max_bytes):
        return TableFile(where, encoding=encoding)
    return read_table(where, max_bytes=max_bytes, encoding=encoding)


def table_population(table: pd.DataFrame | TableFile, unit: PrivacyUnit) -> Population:
    """:func:`synth.privacy.unit.population` of a table in memory or read where it lies
    (only its unit column is read, and only when a unit is declared)."""
    if not isinstance(table, TableFile):
        return population(table, unit)
    if unit.declared:
        return population(read_whole(table, [unit.column]), unit)
    return Population(len(table), len(table))
