"""A table read where it lies, in chunks: for files larger than memory, or than an upload.

DuckDB scans the file: a CSV, a Parquet file, or a folder of Parquet files (a dataset, hive
partitions included, its hidden files left out). It reads only the columns asked for, streams
them as Arrow batches of ``chunk_rows`` rows under a fixed memory limit, and counts a Parquet
file's rows from its metadata. DuckDB rather than Polars because one SQL surface covers CSV,
Parquet files and folders, its memory limit and thread count are settings we control, and it
has no Python dependencies to conflict with our pins.

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
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from synth import missing
from synth.data import _cell, _check_header, _sniff_delimiter, check_flat, human_bytes
from synth.errors import DataError, check_int
from synth.marginals import add_up
from synth.privacy.unit import Population, PrivacyUnit, population
from synth.schema import Schema, check_target, prepare

if TYPE_CHECKING:  # the methods import this module
    from synth.methods.base import FitContext

READ = "read"  # the fit stage that reads a file into memory (a method that needs rows)
CHUNK_ROWS = 100_000
FRAME_ROWS = 25_000  # a table in memory is scanned in slices of this many rows
MEMORY_LIMIT = "1GB"  # each scan's own DuckDB buffers; a chunk's pandas frame comes on top
THREADS = 2  # DuckDB decodes on 2 threads (the benchmarks' machine); the rest is pandas
HEAD_BYTES = 1 << 16  # what the delimiter is sniffed from
MAX_HEADER_BYTES = 1 << 24
GLOB = set("*?[]{}")
CSV_ENCODINGS = {"utf-8", "utf-16", "latin-1"}  # what DuckDB's read_csv decodes
NUMPY_TYPES = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
               "bool", "object", "float32", "float64"}


class TableFile:
    """A CSV or Parquet table on this machine, read in chunks of ``chunk_rows`` rows.

    Nothing is read but the header (or Parquet schema) until :meth:`chunks` is iterated.
    With a Dask ``scheduler`` address, a method's counting passes run on that cluster
    (:mod:`synth.cluster`); other passes still stream here.
    ``encoding`` is CSV's: UTF-8 by default (with or without a byte-order mark), or one
    DuckDB reads (``"latin-1"``, ``"utf-16"``). A file that changes while it is read is
    refused.
    """

    def __init__(self, path: str | os.PathLike, *, chunk_rows: int = CHUNK_ROWS,
                 encoding: str | None = None, scheduler: str | None = None):
        self.path = Path(path)
        self.scheduler = scheduler or None  # a Dask cluster counts it (synth.cluster)
        self.chunk_rows = check_int(chunk_rows, "chunk_rows")
        self.name = repr(self.path.name)
        if not self.path.exists():
            raise DataError(f"no such file or folder: {str(self.path)!r}")
        self._schema = None
        if self.path.is_dir():
            self.files = _visible_parquet(self.path)
            _check_plain(self.files)
            self._schema = _parquet_schema(self.files, self.name)
            listed = ", ".join(_quote(str(f)) for f in self.files)  # exactly these, no glob
            self._scan = f"read_parquet([{listed}], hive_partitioning = true)"
            self.kind = "Parquet dataset"
        else:
            _check_plain([self.path])
            self.files = [self.path]
            with open(self.path, "rb") as fh:
                head = fh.read(HEAD_BYTES)
                if b"\n" not in head and len(head) == HEAD_BYTES:  # a very wide header
                    head += fh.readline(MAX_HEADER_BYTES)
            if not head.strip():
                raise DataError(f"{self.name} is empty")
            if head[:4] == b"PAR1":
                self._schema = _parquet_schema(self.files, self.name)
                self._scan = f"read_parquet({_quote(str(self.path))})"
                self.kind = "Parquet"
            else:
                self._scan = self._csv_scan(head, encoding)
                self.kind = "CSV"
        self.size = sum(f.stat().st_size for f in self.files)
        self._stamp = self._stamps()
        self.columns = self._columns()
        _check_header(self.columns, self.name)
        if len(self.columns) < 2:
            raise DataError(f"{self.name} has only {len(self.columns)} column; a table needs at "
                            "least 2. Is the delimiter one of , ; tab | ?")
        self._rows: int | None = None
        self._nulls: dict[tuple[str, ...], dict[str, str]] = {}  # by the columns read

    def _stamps(self) -> list[tuple[int, int]]:
        return [(f.stat().st_size, f.stat().st_mtime_ns) for f in self.files]

    def check_unchanged(self) -> None:
        """Refuse a file (or a folder's file) whose size or modification time moved since it
        was opened: a fit must see one table in every pass."""
        try:
            same = self._stamps() == self._stamp
        except OSError:
            same = False
        if not same:
            raise DataError(f"{self.name} changed while it was read; run again on a file that "
                            "stays put")

    def _csv_scan(self, head: bytes, encoding: str | None) -> str:
        """The read_csv call: our own delimiter sniffing and header, every cell as text."""
        name = encoding or ("utf-16" if head.startswith((codecs.BOM_UTF16_LE,
                                                         codecs.BOM_UTF16_BE)) else "utf-8")
        if name.lower().replace("_", "-") not in CSV_ENCODINGS:
            raise DataError(f"{self.name}: a CSV read where it lies must be one of "
                            f"{', '.join(sorted(CSV_ENCODINGS))}, not {name!r}; save it as "
                            "UTF-8")
        line = head.split(b"\n", 1)[0]
        try:
            text = line.decode("utf-8-sig" if name == "utf-8" else name)
        except UnicodeDecodeError as exc:
            raise DataError(f"{self.name}'s header is not valid {name} (byte "
                            f"{line[exc.start]:#04x} at position {exc.start})") from None
        sample = head.decode("utf-8-sig" if name == "utf-8" else name, errors="replace")
        delimiter = _sniff_delimiter(sample)
        first = next(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter), [])
        self._header = [h.strip() for h in first]
        _check_case(self._header, self.name)
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
        con.execute(f"SET threads = {THREADS}")
        con.execute("SET enable_progress_bar = false")
        con.execute("SET preserve_insertion_order = true")  # chunks in the file's order
        return con

    def _query(self, sql: str):
        import duckdb

        try:
            return self._connect().sql(sql)
        except duckdb.Error as exc:
            raise DataError(f"{self.name} cannot be read: {_said(exc)}") from None

    def _columns(self) -> list[str]:
        if self.kind == "CSV":
            return list(self._header)
        _check_case(self._schema.names, self.name)
        read = [str(c) for c in self._query(f"SELECT * FROM {self._scan} LIMIT 0").columns]
        if read[:len(self._schema.names)] != self._schema.names:  # hive partitions come last
            raise DataError(f"{self.name}: DuckDB reads its columns as {read[:20]}, not "
                            f"{self._schema.names[:20]}")
        index = _index_columns(self._schema.metadata)  # pandas reads them as the index
        return [c for c in read if c not in index]

    def __len__(self) -> int:
        """The row count (a Parquet file's from its metadata; a CSV's by a scan)."""
        if self._rows is None:
            import duckdb

            try:
                rows = self._query(f"SELECT count(*) FROM {self._scan}").fetchall()
            except duckdb.Error as exc:
                raise DataError(f"{self.name} cannot be read: {_said(exc)}") from None
            self._rows = int(rows[0][0])
        return self._rows

    def chunks(self, columns: Sequence[str] | None = None) -> Iterator[pd.DataFrame]:
        """The table's rows in order, ``chunk_rows`` at a time, with only ``columns``; a
        file that changed since it was opened is refused at the end of the pass."""
        import duckdb

        columns = list(self.columns if columns is None else columns)
        absent = [c for c in columns if c not in self.columns]
        if absent:
            raise DataError(f"{self.name} has no columns {absent}; it has {self.columns[:20]}")
        self.check_unchanged()
        select = ", ".join(_ident(c) for c in columns)
        nulls = self.null_dependent(columns)
        try:
            reader = self._query(f"SELECT {select} FROM {self._scan}").to_arrow_reader(
                self.chunk_rows)
            start = 0
            for batch in reader:
                frame = self._frame(batch, nulls)
                frame.index = pd.RangeIndex(start, start + len(frame))
                start += len(frame)
                yield frame
        except duckdb.Error as exc:
            raise DataError(f"{self.name} cannot be read: {_said(exc)}") from None
        self.check_unchanged()

    def __iter__(self) -> Iterator[pd.DataFrame]:
        return self.chunks()

    def _frame(self, batch, nulls: dict[str, str]) -> pd.DataFrame:
        if self.kind == "CSV":
            cells = batch.to_pandas().to_numpy(dtype=object, na_value="")
            return pd.DataFrame(_cell(cells), columns=batch.schema.names, dtype=object)
        frame = self._as_written(batch).to_pandas()
        for name, dtype in nulls.items():  # as pandas reads the whole column
            frame[name] = frame[name].astype(dtype)
        return frame

    def _as_written(self, batch):
        """A DuckDB batch with the file's own Arrow types (DuckDB reads every timestamp in
        microseconds, say) and pandas' metadata, so pandas converts it as it converts the
        whole file."""
        import pyarrow as pa

        fields = [self._schema.field(n) if n in self._schema.names else batch.schema.field(n)
                  for n in batch.schema.names]
        arrays = [a if a.type == f.type else a.cast(f.type)
                  for a, f in zip(batch.columns, fields, strict=True)]
        return pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields,
                                                                   self._schema.metadata))

    def null_dependent(self, columns: Sequence[str]) -> dict[str, str]:
        """Parquet columns whose pandas type depends on holding a null: read whole, pandas
        gives an integer column with a null as floats and a true/false one as objects, so
        every chunk must convert them alike (one aggregate query, answered from the file's
        metadata where it can be). A column pandas wrote as Int64 or boolean keeps it."""
        import pyarrow as pa

        if self.kind == "CSV":
            return {}
        extension = _extension_columns(self._schema.metadata)
        kinds = {}
        for name in columns:
            if name not in self._schema.names or name in extension:
                continue
            kind = self._schema.field(name).type
            if pa.types.is_integer(kind):
                kinds[name] = "float64"
            elif pa.types.is_boolean(kind):
                kinds[name] = "object"
        if not kinds:
            return {}
        key = tuple(kinds)
        if key in self._nulls:
            return self._nulls[key]
        counts = self._query("SELECT " + ", ".join(f"count(*) - count({_ident(c)})"
                                                   for c in kinds) + f" FROM {self._scan}"
                             ).fetchall()[0]
        self._nulls[key] = {c: t for (c, t), held in zip(kinds.items(), counts, strict=True)
                            if held}
        return self._nulls[key]


def _visible_parquet(folder: Path) -> list[Path]:
    """The .parquet files of a folder and its subfolders, without the hidden ones (a name
    below ``folder`` that starts with "."): as for a path typed in the app, a hidden file is
    never part of a table, and the app, the CLI and the account all see the same files."""
    files = sorted(f for f in folder.rglob("*.parquet")
                   if not any(part.startswith(".") for part in f.relative_to(folder).parts))
    if not files:
        raise DataError(f"{str(folder)!r} is a folder without .parquet files (hidden ones, "
                        "whose name or folder starts with '.', are not read)")
    return files


def _check_plain(files: Sequence[Path]) -> None:
    """DuckDB reads * ? [ ] { } in a path as a pattern, which could read other files."""
    odd = [f for f in files if GLOB & set(str(f))]
    if odd:
        raise DataError(f"{odd[0].name!r}: DuckDB reads * ? [ ] {{ }} in a path as a pattern, "
                        "so it could read other files; rename it without them")


def _parquet_schema(files: Sequence[Path], name: str):
    """The Arrow schema pandas reads the Parquet ``files`` (table ``name``) with; files of a
    folder that disagree on their columns' types are refused (DuckDB would cast them to the
    first's), and so are nested columns."""
    import pyarrow.parquet as pq

    schemas = []
    for f in files:
        try:
            schemas.append(pq.read_schema(f))
        except Exception as exc:  # pyarrow raises several types for corrupt files
            raise DataError(f"{f.name!r} looks like Parquet but cannot be read: {exc}"
                            ) from None
    for f, schema in zip(files[1:], schemas[1:], strict=True):
        if not schema.remove_metadata().equals(schemas[0].remove_metadata()):
            raise DataError(f"{f.name!r} has other columns or types than {files[0].name!r}; "
                            "the files of one table must agree")
    check_flat(schemas[0], name)
    return schemas[0]


def _extension_columns(metadata: dict | None) -> set[str]:
    """Columns pandas wrote with a nullable extension type (Int64, boolean, …)."""
    if not metadata or b"pandas" not in metadata:
        return set()
    columns = json.loads(metadata[b"pandas"]).get("columns", [])
    return {str(c.get("name")) for c in columns
            if str(c.get("numpy_type", "")) not in NUMPY_TYPES}


def _index_columns(metadata: dict | None) -> set[str]:
    """Columns that hold a pandas index (``__index_level_0__``), which pandas does not read
    as data."""
    if not metadata or b"pandas" not in metadata:
        return set()
    return {c for c in json.loads(metadata[b"pandas"]).get("index_columns", [])
            if isinstance(c, str)}


def _check_case(names: Sequence[str], name: str) -> None:
    """DuckDB's names are case-insensitive: two that differ only in case cannot be read."""
    lower = [n.lower() for n in names]
    clash = sorted({n for n, low in zip(names, lower, strict=True) if lower.count(low) > 1})
    if clash:
        raise DataError(f"{name}: columns {clash[:6]} differ only in case, which DuckDB reads "
                        "as one name; rename them")


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _said(exc: Exception) -> str:
    """DuckDB's error on one line (its first line alone can be "CSV Error on Line: 3"),
    without the line of data it quotes: a message can reach a ledger's status."""
    text = str(exc).strip().split("Original Line")[0]  # the data line may run on: cut there
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return " ".join(lines[:3])[:400] if lines else type(exc).__name__



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
                 target: str | None = None, name: str = "the table",
                 cluster: Callable[..., list[np.ndarray]] | None = None):
        self.rows, self._frames, self._target, self._name = rows, frames, target, name
        self._cluster = cluster

    @classmethod
    def of_frame(cls, frame: pd.DataFrame) -> Chunks:
        """A table already in memory and checked, in slices of :data:`FRAME_ROWS` rows (a
        stage that scans it reports and checks for a cancel between them)."""
        return cls(len(frame), lambda: (frame.iloc[i:i + FRAME_ROWS]
                                        for i in range(0, max(len(frame), 1), FRAME_ROWS)))

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

        checked = schema.target if target else None
        cluster = None
        if file.scheduler is not None:
            from synth.cluster import reduce_on_cluster

            cluster = partial(reduce_on_cluster, file, schema, encode, checked)
        return cls(len(file), frames, checked, file.name, cluster)

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

    def scan(self, ctx: FitContext, stage: str, description: str) -> Iterator[pd.DataFrame]:
        """The chunks, as a stage of ``ctx`` (a FitContext) whose progress counts rows read
        (and which stops between chunks when the run is cancelled)."""
        ctx.stage(stage, self.rows, description)
        done = 0
        for frame in self:
            yield frame
            done += len(frame)
            ctx.progress(stage, done, self.rows)

    def reduce(self, counter: Callable[[pd.DataFrame], list[np.ndarray]], ctx: FitContext,
               stage: str, description: str) -> list[np.ndarray]:
        """``counter``'s arrays summed over the chunks, in order, as one :meth:`scan`: the
        in-memory and DuckDB backends of :func:`synth.marginals.count`, or the file's Dask
        cluster when it has one. A chunk is counted in ``ctx.wait``: a wide workload's
        chunk counts for seconds, and the stage stays alive and cancellable meanwhile."""
        if self._cluster is not None:
            return self._cluster(counter, ctx, stage, description)
        return add_up(ctx.wait(partial(counter, frame))
                      for frame in self.scan(ctx, stage, description))


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


def open_table(path: str | os.PathLike, max_bytes: int, encoding: str | None = None,
               scheduler: str | None = None) -> pd.DataFrame | TableFile:
    """A private table by path: read whole up to ``max_bytes``; a larger file, a folder of
    Parquet files, or any table counted on a Dask ``scheduler``, as a :class:`TableFile`
    read where it lies."""
    from synth.data import read_table

    max_bytes = check_int(max_bytes, "max_bytes")
    where = Path(path)
    if scheduler or where.is_dir() or (where.is_file() and where.stat().st_size > max_bytes):
        return TableFile(where, encoding=encoding, scheduler=scheduler)
    return read_table(where, max_bytes=max_bytes, encoding=encoding)


def table_population(table: pd.DataFrame | TableFile, unit: PrivacyUnit) -> Population:
    """:func:`synth.privacy.unit.population` of a table in memory or read where it lies
    (only its unit column is read, and only when a unit is declared)."""
    if not isinstance(table, TableFile):
        return population(table, unit)
    if unit.declared:
        return population(read_whole(table, [unit.column]), unit)
    return Population(len(table), len(table))
