"""Excel workbooks: an .xlsx is read as its CSV would be; what cannot be read is refused in a
sentence a person understands (the app's uploader used to answer with MIME types)."""

from __future__ import annotations

import datetime as dt
import io
import zipfile

import openpyxl
import pandas as pd
import pytest

from synth.data import read_table
from synth.errors import DataError


def workbook(rows: list[list]) -> bytes:
    book = openpyxl.Workbook()
    for row in rows:
        book.active.append(row)
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def test_an_xlsx_reads_as_its_csv_does():
    rows = [["age", "city", "balance", "joined"],
            [35, "Lisbon", 3750.5, dt.date(2021, 3, 4)],
            [41.0, " Porto ", None, dt.date(2020, 12, 31)],
            [None, None, None, None],  # a blank row: dropped, as a CSV's empty line
            [29, "", -12, dt.date(2019, 1, 1)]]
    table = read_table(io.BytesIO(workbook(rows)))
    csv = read_table(io.BytesIO(b"age,city,balance,joined\n35,Lisbon,3750.5,2021-03-04\n"
                                b"41, Porto ,,2020-12-31\n29,,-12,2019-01-01\n"))
    pd.testing.assert_frame_equal(table.drop(columns="joined"), csv.drop(columns="joined"))
    assert table["joined"].str[:10].tolist() == csv["joined"].tolist()


def test_an_old_workbook_or_another_zip_is_refused_in_a_sentence():
    with pytest.raises(DataError, match=r"Excel 97–2003 workbook \(.xls\).*save it as .xlsx"):
        read_table(io.BytesIO(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 600))
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("notes.txt", "hello")
    with pytest.raises(DataError, match="a zip archive but not an Excel workbook"):
        read_table(io.BytesIO(archive.getvalue()))


def test_the_app_reads_an_uploaded_workbook_and_refuses_an_image_in_a_sentence(app):
    rows = [["age", "sex", "income"]] + [[20 + i % 50, "FM"[i % 2], ">50K" if i % 3 else "<=50K"]
                                         for i in range(200)]
    app.sidebar.file_uploader[0].set_value(
        ("people.xlsx", workbook(rows),
         "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet")).run()
    assert not app.exception
    assert any("people.xlsx" in c.value and "200 rows × 3 columns" in c.value
               for c in app.sidebar.caption)
    app.sidebar.file_uploader[0].set_value(("photo.png", b"\x89PNG\r\n\x1a\n" + b"\0" * 200,
                                            "image/png")).run()
    assert not app.exception
    said = " ".join(e.value for e in app.error)
    assert "'photo.png' holds binary data, not a CSV, Parquet or Excel (.xlsx) table" in said
    assert any("people.xlsx" in c.value for c in app.sidebar.caption)  # the table stays
