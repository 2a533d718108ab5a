"""Reading tables safely (CSV, Parquet or an Excel workbook, from a path or uploaded bytes)
and the bundled samples.

CSV cells come back as stripped strings with missing markers as NaN; :func:`synth.schema.
infer_schema` decides what is numeric. Every refusal is a :class:`DataError` that says what is
wrong with the file in one line.
"""

from __future__ import annotations

import codecs
import csv
import hashlib
import io
import math
import os
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

import numpy as np
import pandas as pd

from synth.errors import DataError, check_int
from synth.schema import Schema, repeated

DEFAULT_MAX_BYTES = 200 * 1024 * 1024
MISSING_TOKENS = frozenset({"", "NA", "N/A", "n/a", "NaN", "nan", "null", "NULL", "None", "#N/A"})
DELIMITERS = ",;\t|"
SAMPLE_DIR = Path(__file__).resolve().parent.parent / "sample_data"
# name shown to users -> file stem in sample_data/ (the panel: several rows per person, for
# the unit of protection; person_id is its unit column, left out of its schema)
SAMPLES = {"census": "census_demo", "panel": "panel_demo"}

Source = str | os.PathLike | bytes | bytearray | IO[bytes]


def human_bytes(nbytes: float) -> str:
    for unit in ("bytes", "KB", "MB", "GB", "TB"):
        if nbytes < 1024 or unit == "TB":
            return f"{nbytes:.0f} {unit}" if unit == "bytes" else f"{nbytes:.1f} {unit}"
        nbytes /= 1024
    raise AssertionError  # pragma: no cover


def figure(x: float) -> str:
    """Three significant digits written out, as a steward reads a count: 1,130 not
    1.13e+03, 28.1, 0.0123."""
    if not math.isfinite(x) or abs(x) < 100:
        return f"{x:.3g}"
    return f"{round(x, 2 - math.floor(math.log10(abs(x)))):,.0f}"


def up_to(share: float) -> str:
    """A worst-case share in words: "up to 12%", or "nearly all" where it rounds to 100%."""
    return "nearly all" if share >= 0.995 else f"up to {share:.0%}"


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """"1 row", "2 rows", "1,668 categories": a count with its noun in the right number."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


def fingerprint(table: pd.DataFrame | Iterable[pd.DataFrame], row_order: bool = False) -> str:
    """A fingerprint of the table's people: SHA-256 over its rows' hashes, sorted (unless
    ``row_order``), with the columns in name order, so neither changes it. Each cell is
    hashed in a canonical form (:func:`canonical`), so a CSV, its Parquet copy and a
    workbook of the same rows share it (37, 37.0 and "37" alike). Which table a privacy
    account or a kept result (a sweep: ``row_order``, as its split depends on it) belongs
    to. A table given in chunks (a :class:`synth.source.TableFile`) has the fingerprint of
    their whole."""
    return _fingerprint(table, row_order, lambda frame: pd.DataFrame(
        {i: canonical(frame.iloc[:, i]) for i in range(frame.shape[1])}))


def fragile_numbers(table: pd.DataFrame) -> str:
    """Why a copy of ``table`` in another format may not share its account, or "": numbers
    with more than 15 significant digits, which a spreadsheet (Excel keeps 15) writes
    otherwise, so the copy is another table to :func:`fingerprint`. Named where a limit is
    set and where such a table is opened."""
    names = []
    for name in table.columns:
        values = table[name]
        numbers = (values.to_numpy(dtype=float, na_value=np.nan)
                   if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(
                       values) else pd.to_numeric(values, errors="coerce").to_numpy(dtype=float))
        numbers = numbers[np.isfinite(numbers)]
        if len(numbers) and np.any(np.array([float(f"{v:.15g}") for v in
                                             np.unique(numbers)]) != np.unique(numbers)):
            names.append(str(name))
    if not names:
        return ""
    shown = ", ".join(repr(n) for n in names[:6]) + ("…" if len(names) > 6 else "")
    return (f"columns {shown} hold numbers of more than 15 significant digits: a copy saved "
            "by a program that keeps 15 (a spreadsheet) is another table with an account of "
            "its own, so set its limit there too (a CSV or Parquet copy shares this one)")


def former_fingerprint(table: pd.DataFrame | Iterable[pd.DataFrame]) -> str:
    """The fingerprint accounts were kept under before cells were hashed canonically (by
    pandas' types: 37 and 37.0 apart): an account found under it is moved to
    :func:`fingerprint`'s, so no spending is lost."""
    return _fingerprint(table, False, lambda frame: frame)


def _fingerprint(table: pd.DataFrame | Iterable[pd.DataFrame], row_order: bool,
                 cells) -> str:
    frames = [table] if isinstance(table, pd.DataFrame) else table
    names, hashes = None, []
    for frame in frames:
        ordered = frame[sorted(frame.columns, key=str)]
        names = "\x1f".join(map(str, ordered.columns)).encode()
        hashes.append(pd.util.hash_pandas_object(cells(ordered), index=False).to_numpy())
    rows = np.concatenate(hashes) if hashes else np.zeros(0, dtype=np.uint64)
    rows = rows if row_order else np.sort(rows)
    return hashlib.sha256((names or b"") + b"\x1e" + rows.tobytes()).hexdigest()


_MIDNIGHT = r"^(\d{4}-\d{2}-\d{2})[T ]00:00(?::00)?$"  # a date alone, written as a timestamp
_STAMP = r"^(\d{4}-\d{2}-\d{2})T"  # ISO 8601's T, written as a space


def canonical(column: pd.Series) -> np.ndarray:
    """A column's cells as the text a fingerprint hashes, whatever type a file gave them:
    a number as its shortest form (whole ones without a point: 37, 37.0 and "37.00" are
    "37"), true/false as "true"/"false", a timestamp as ISO 8601 (a date alone at
    midnight), other text stripped, a blank (or a word a CSV reads as one, "NA") as one
    marker. Text that reads as a number is that number, so two tables differing only in how
    numbers are written share an account (the safe side); floats a program re-formats (Excel
    keeps 15 digits) may not, and :func:`fragile_numbers` names them."""
    values = pd.Series(column, copy=False)
    blank = values.isna().to_numpy(copy=True)
    out = np.full(len(values), "\x00", dtype=object)
    if pd.api.types.is_bool_dtype(values):
        out[~blank] = np.where(values[~blank].astype(bool), "true", "false")
        return out
    if pd.api.types.is_datetime64_any_dtype(values):
        stamps = pd.Series(values[~blank])
        if isinstance(stamps.dtype, pd.DatetimeTZDtype):
            stamps = stamps.dt.tz_convert("UTC").dt.tz_localize(None)
        text = stamps.dt.strftime("%Y-%m-%d %H:%M:%S").str.replace(_MIDNIGHT, r"\1",
                                                                   regex=True)
        out[~blank] = text.to_numpy()  # each value as text of it would be: a date alone at 0h
        return out
    if pd.api.types.is_numeric_dtype(values):
        numbers = values.to_numpy(dtype=float, na_value=np.nan)
        if values.dtype == np.float32:  # 0.1 as a float32 is 0.100000001490116 as a float64
            numbers = numbers.astype(np.float32).astype(str).astype(float)
        text = np.full(len(values), "", dtype=object)
    else:
        text = pd.Series([str(v).strip() for v in values.to_numpy(dtype=object)], dtype=object)
        text = text.str.replace(_MIDNIGHT, r"\1", regex=True).str.replace(
            _STAMP, r"\1 ", regex=True).to_numpy(dtype=object, copy=True)  # a workbook's dates
        blank |= np.isin(text, list(MISSING_TOKENS))  # "NA" a CSV reads as missing
        lowered = np.char.lower(text.astype(str)) if len(text) else text
        words = np.isin(lowered, ["true", "false"])
        text[words] = lowered[words]
        numbers = pd.to_numeric(pd.Series(text), errors="coerce").to_numpy(dtype=float,
                                                                           copy=True)
        numbers[words] = np.nan
    number = ~blank & np.isfinite(numbers)
    whole = number & (numbers == np.round(numbers)) & (np.abs(numbers) < 2.0**63)
    out[whole] = numbers[whole].astype(np.int64).astype(str)
    rest = number & ~whole
    out[rest] = [repr(float(v)) for v in numbers[rest]]
    other = ~blank & ~number
    out[other] = text[other] if text.dtype == object and len(text) else [
        str(v) for v in values.to_numpy(dtype=object)[other]]
    return out


def _too_big(name: str, size: int, max_bytes: int) -> DataError:
    return DataError(f"{name} is {human_bytes(size)}, over the {human_bytes(max_bytes)} limit; "
                     "raise max_bytes to read it")


def _read_bytes(source: Source, max_bytes: int) -> tuple[bytes, str]:
    """The raw bytes and a display name, refusing anything over ``max_bytes`` before reading."""
    if isinstance(source, bytes | bytearray):
        name, size = "the upload", len(source)
        if size > max_bytes:
            raise _too_big(name, size, max_bytes)
        return bytes(source), name
    if isinstance(source, str | os.PathLike):
        path = Path(source)
        name = f"{path.name!r}"
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            raise DataError(f"no such file: {str(path)!r}") from None
        except OSError as exc:
            raise DataError(f"cannot read {str(path)!r}: {exc.strerror}") from None
        if path.is_dir():
            raise DataError(f"{str(path)!r} is a folder, not a table file")
        if size > max_bytes:
            raise _too_big(name, size, max_bytes)
        try:
            return path.read_bytes(), name
        except OSError as exc:
            raise DataError(f"cannot read {str(path)!r}: {exc.strerror}") from None
    if not callable(getattr(source, "read", None)):
        raise DataError(f"source must be a file path, bytes or a binary file object, got "
                        f"{source!r}")
    name = repr(getattr(source, "name", "the upload"))
    size = getattr(source, "size", None)
    if isinstance(size, int) and size > max_bytes:
        raise _too_big(name, size, max_bytes)
    data = source.read(max_bytes + 1)
    if not isinstance(data, bytes | bytearray):
        raise DataError(f"{name} gives {type(data).__name__}, not bytes: open it in binary "
                        "mode ('rb')")
    if len(data) > max_bytes:
        raise DataError(f"{name} is over the {human_bytes(max_bytes)} limit; "
                        "raise max_bytes to read it")
    return bytes(data), name


def read_table(source: Source, *, max_bytes: int = DEFAULT_MAX_BYTES, encoding: str | None = None,
               min_columns: int = 2) -> pd.DataFrame:
    """Read a CSV (delimiter sniffed), Parquet table or Excel workbook (.xlsx: its first
    sheet, cells as text).

    ``encoding=None`` reads UTF-8 (with or without BOM, or UTF-16 with a BOM) and refuses
    anything else, naming the line and byte; other encodings (``"latin-1"``) only when given.
    Refuses files over ``max_bytes`` without reading them, and tables with fewer than
    ``min_columns`` columns.
    """
    max_bytes = check_int(max_bytes, "max_bytes")
    min_columns = check_int(min_columns, "min_columns")
    if encoding is not None and not isinstance(encoding, str):
        raise DataError(f"encoding must be a name such as 'latin-1', or None, got {encoding!r}")
    raw, name = _read_bytes(source, max_bytes)
    if not raw.strip():
        raise DataError(f"{name} is empty")
    if raw[:4] == b"PAR1":
        table = _read_parquet(raw, name)
    elif raw[:4] == b"PK\x03\x04":
        table = _read_excel(raw, name)
    elif raw[:8] == b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1":
        raise DataError(f"{name} is an Excel 97–2003 workbook (.xls), which is not read: save "
                        "it as .xlsx (Excel's Save As) or as CSV")
    else:
        table = _read_csv(raw, name, encoding)
    if table.shape[1] < min_columns:
        only = ", ".join(repr(str(c)) for c in table.columns)
        raise DataError(f"{name} has only {table.shape[1]} column ({only}); a table needs at least "
                        f"{min_columns}. Is the delimiter one of , ; tab | ?")
    return table


def _read_parquet(raw: bytes, name: str) -> pd.DataFrame:
    import pyarrow.parquet as pq

    try:
        check_flat(pq.read_schema(io.BytesIO(raw)), name)
        table = pd.read_parquet(io.BytesIO(raw))
    except DataError:
        raise
    except Exception as exc:  # pyarrow raises several types for corrupt files
        raise DataError(f"{name} looks like Parquet but cannot be read: {exc}") from None
    table.columns = [str(c) for c in table.columns]
    _check_header(list(table.columns), name)
    if table.empty:
        raise DataError(f"{name} has a header but no data rows")
    return table


def _read_excel(raw: bytes, name: str) -> pd.DataFrame:
    """The first sheet of an .xlsx workbook, as a CSV is read: every cell as text (a number
    as Excel shows it without formatting, a date as ISO), blanks as missing."""
    import openpyxl

    try:
        book = openpyxl.load_workbook(io.BytesIO(raw), read_only=True, data_only=True)
    except Exception as exc:  # a zip that is not a workbook, or a damaged one
        raise DataError(f"{name} is a zip archive but not an Excel workbook (.xlsx) that can "
                        f"be read ({type(exc).__name__}): save the table as CSV") from None
    sheet = book.worksheets[0]
    rows = [[_excel_text(v) for v in row] for row in sheet.iter_rows(values_only=True)]
    book.close()
    rows = [r for r in rows if any(isinstance(v, str) for v in r)]  # blank rows dropped
    if not rows:
        raise DataError(f"{name}: the first sheet is empty")
    header = [h.strip() if isinstance(h, str) else "" for h in rows[0]]
    while header and not header[-1]:  # trailing blank header cells: unused columns
        header.pop()
    _check_header(header, name)
    body = [r[:len(header)] + [np.nan] * (len(header) - len(r)) for r in rows[1:]]
    if not body:
        raise DataError(f"{name} has a header but no data rows")
    return pd.DataFrame(np.array(body, dtype=object), columns=header, dtype=object)


def _excel_text(value: Any) -> str | float:
    """A cell as the CSV reader would give it: text, or NaN when blank."""
    if value is None:
        return np.nan
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if hasattr(value, "isoformat"):  # a date or a time
        value = value.isoformat()
    return _cell_value(str(value))


def check_flat(schema: Any, name: str) -> None:
    """Refuse a Parquet table (its Arrow ``schema``) with nested columns, by name: a list,
    struct or map cell is no value any method models, nor one a fingerprint can hash."""
    import pyarrow as pa

    nested = [f"{f.name!r} ({str(f.type).split('<')[0]})" for f in schema
              if pa.types.is_nested(f.type)]
    if nested:
        raise DataError(f"{name}: nested columns are not supported: {', '.join(nested[:6])}"
                        f"{' …' if len(nested) > 6 else ''}; flatten them into plain columns, "
                        "or leave them out of the file")


def _decode(raw: bytes, name: str, encoding: str | None) -> str:
    if encoding is not None:
        try:
            return raw.decode(encoding)
        except LookupError:
            raise DataError(f"unknown encoding {encoding!r}") from None
        except UnicodeDecodeError as exc:
            raise DataError(
                f"{name} is not valid {encoding} (byte {raw[exc.start]:#04x} at position "
                f"{exc.start}); leave the encoding unset to detect it, or give the right one"
            ) from None
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return raw.decode("utf-16")
    if b"\x00" in raw[:65536]:
        raise DataError(f"{name} holds binary data, not a CSV, Parquet or Excel (.xlsx) table "
                        "(UTF-16 text without a byte-order mark also looks like this: save it "
                        "as UTF-8)")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        _check_text(raw.decode("latin-1"), name)  # binary junk is called that, not bad UTF-8
        line = raw.count(b"\n", 0, exc.start) + 1
        column = exc.start - raw.rfind(b"\n", 0, exc.start)
        raise DataError(f"{name} is not valid UTF-8: line {line} has byte {raw[exc.start]:#04x} "
                        f"at character {column}; if the file is Latin-1 (or Windows-1252), "
                        "choose that encoding (Text encoding in the app, --encoding latin-1 in "
                        "the CLI, encoding='latin-1' in Python), or save it as UTF-8"
                        ) from None


def _check_text(text: str, name: str) -> None:
    controls = sum(1 for ch in text[:65536] if ord(ch) < 32 and ch not in "\t\r\n")
    if controls > 0.01 * min(len(text), 65536):
        raise DataError(f"{name} holds binary data, not a CSV, Parquet or Excel (.xlsx) table")


def _sniff_delimiter(text: str) -> str:
    sample = "\n".join(text.splitlines()[:50])
    try:
        return csv.Sniffer().sniff(sample, delimiters=DELIMITERS).delimiter
    except csv.Error:
        lines = [ln for ln in sample.splitlines() if ln.strip()][:20]
        counts = {d: [ln.count(d) for ln in lines] for d in DELIMITERS}
        steady = [d for d, c in counts.items() if c and min(c) > 0 and len(set(c)) == 1]
        return max(steady, key=lambda d: counts[d][0]) if steady else ","


def _check_header(header: list[str], name: str) -> None:
    for i, col in enumerate(header, 1):
        if not col:
            raise DataError(f"{name}: column {i} has an empty name in the header")
    dupes = repeated(header)
    if dupes:
        raise DataError(f"{name} has duplicate column names: {dupes}")


def _read_csv(raw: bytes, name: str, encoding: str | None) -> pd.DataFrame:
    text = _decode(raw, name, encoding)
    _check_text(text, name)
    delimiter = _sniff_delimiter(text)
    try:
        rows = [r for r in csv.reader(io.StringIO(text, newline=""), delimiter=delimiter) if r]
    except csv.Error as exc:
        raise DataError(f"{name} is not a well-formed CSV: {exc}") from None
    if not rows:
        raise DataError(f"{name} is empty")
    header = [h.strip() for h in rows[0]]
    _check_header(header, name)
    body = rows[1:]
    if not body:
        raise DataError(f"{name} has a header but no data rows")
    width = len(header)
    ragged = [(i, len(r)) for i, r in enumerate(body, 2) if len(r) != width]
    if ragged:
        line, got = ragged[0]
        more = f" (and {len(ragged) - 1} more rows)" if len(ragged) > 1 else ""
        raise DataError(f"{name}: row {line} has {got} fields but the header has {width}{more}")
    cells = _cell(np.array(body, dtype=object))  # one pass over every cell, in C's loop
    return pd.DataFrame(cells, columns=header, dtype=object)


def _cell_value(text: str) -> str | float:
    """A CSV cell stripped, with the missing markers as NaN."""
    text = text.strip()
    return np.nan if text in MISSING_TOKENS else text


_cell = np.frompyfunc(_cell_value, 1, 1)


# ---- bundled samples ------------------------------------------------------------------------


def sample_paths(name: str = "census") -> tuple[Path, Path]:
    """(table CSV, schema JSON) of a bundled sample."""
    if name not in SAMPLES:
        raise DataError(f"no bundled sample named {name!r}; choose from {sorted(SAMPLES)}")
    stem = SAMPLE_DIR / SAMPLES[name]
    return stem.with_suffix(".csv"), stem.with_suffix(".schema.json")


def load_sample(name: str = "census") -> tuple[pd.DataFrame, Schema]:
    """A bundled demo table and its public schema: ``"census"`` (5,000 people, every domain
    from a codebook) or ``"panel"`` (person-months, protected per person by default). Made by
    ``scripts/make_sample_data.py``; no real person is in either."""
    table_path, schema_path = sample_paths(name)
    return read_table(table_path), Schema.load(schema_path)
