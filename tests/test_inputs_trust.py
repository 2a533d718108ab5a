"""What the app and the CLI trust about a table as it comes in: whose account it is (the
file's content as read), which files a folder read opens, and which columns it can hold.

Everything runs as a user would: the CLI in a subprocess, the app through Streamlit's
AppTest, the package through its public functions.
"""

import os
import subprocess
import sys

import pandas as pd
import pytest

from synth.errors import DataError
from synth.source import TableFile, read_whole

from .conftest import REPO
from .test_app import SYNTH, button, labelled, run, texts

WAIT = 600  # a hang, not a slow machine


def synth(*args, home):
    return subprocess.run([sys.executable, "-m", "synth", *map(str, args)], capture_output=True,
                          text=True, cwd=REPO, timeout=WAIT,
                          env={**os.environ, "SYNTH_HOME": str(home)})


def salaries() -> pd.DataFrame:
    """A table whose salary column holds numbers as text ('3,100'): the Data page offers to
    read it as numbers."""
    return pd.DataFrame({"age": [18 + i % 50 for i in range(400)],
                         "group": ["abc"[i % 3] for i in range(400)],
                         "salary": [f"3,{100 + i % 300}" for i in range(400)]})


def sidebar(at) -> str:
    return " ".join(c.value for c in at.sidebar.caption)


# ---- item 3: one file, one account -----------------------------------------------------------


@pytest.mark.parametrize("kind", ["csv", "parquet"])
def test_reading_a_column_as_numbers_keeps_the_files_account(app, tmp_path, monkeypatch, kind):
    """The limit set by the CLI on a file (read where it lies) is the one the app's upload
    sees; converting a column with the Data page's button keeps that account, so a run
    after it is charged to the file, and the server path reaches the same account again."""
    monkeypatch.setenv("SYNTH_HOME", str(tmp_path / "home"))
    root = tmp_path / "root"
    root.mkdir()
    path = root / f"salaries.{kind}"
    if kind == "csv":
        salaries().to_csv(path, index=False)
    else:
        salaries().to_parquet(path, index=False)
    limited = synth("account", "limit", path, "--epsilon", 3, "--max-bytes", 10,
                    home=tmp_path / "home")
    assert limited.returncode == 0, limited.stderr
    app.sidebar.file_uploader[0].set_value((path.name, path.read_bytes(), "text/csv")).run()
    assert not app.exception and not app.error, [e.value for e in app.error]
    assert "ε = 3 of its limit 3 remains" in sidebar(app)  # the CLI's account
    button(app, "Read salary as numbers").click().run()
    assert not app.exception and not app.error, [e.value for e in app.error]
    assert app.session_state["dataset"].table["salary"].dtype.kind in "if"  # converted
    assert "ε = 3 of its limit 3 remains" in sidebar(app)  # still the file's account
    public = next(m for m in app.multiselect if m.label.startswith("Columns whose domain"))
    for name in ("age", "group", "salary"):
        public = public.select(name)
    public.run()
    labelled(app.checkbox, "I have checked each column").check().run()
    app.switch_page(SYNTH).run()
    run(app)  # ε = 1, the page's default
    assert not app.exception and not app.error, [e.value for e in app.error]
    listed = synth("account", home=tmp_path / "home")
    assert listed.returncode == 0 and listed.stdout.startswith("1 table(s)"), listed.stdout
    assert "limit ε=3; 1 run(s)" in listed.stdout  # the run was charged to the file's account
    assert "ε = 2 of its limit 3 remains" in sidebar(app)
    monkeypatch.setenv("SYNTH_DATA_ROOT", str(root))  # the same file, read by path
    app.switch_page("app_pages/data.py").run()
    app.sidebar.text_input(key="server-path").set_value(path.name).run()
    button(app, "Read it").click().run()
    assert not app.exception and not app.error, [e.value for e in app.error]
    assert app.session_state["dataset"].where == str(path)
    assert "ε = 2 of its limit 3 remains" in sidebar(app)


# ---- item 9: a folder read opens no hidden file ----------------------------------------------


def hidden_folder(root) -> pd.DataFrame:
    """``root/ds`` with one visible Parquet file, a hidden one and one in a hidden folder;
    returns the visible file's table."""
    visible = pd.DataFrame({"a": [1, 2], "b": ["x", "y"]})
    (root / "ds" / ".hidden").mkdir(parents=True)
    visible.to_parquet(root / "ds" / "a.parquet", index=False)
    pd.DataFrame({"a": [3], "b": ["in a hidden folder"]}).to_parquet(
        root / "ds" / ".hidden" / "h.parquet", index=False)
    pd.DataFrame({"a": [4], "b": ["a hidden file"]}).to_parquet(
        root / "ds" / ".h.parquet", index=False)
    return visible


def test_a_folder_read_opens_only_its_visible_files(tmp_path):
    """The rule for a path typed in the app (no hidden part) holds for every file a folder
    read opens: hidden files are not part of the table, in the CLI as in the app."""
    visible = hidden_folder(tmp_path)
    file = TableFile(tmp_path / "ds")
    assert file.files == [tmp_path / "ds" / "a.parquet"]
    assert len(file) == 2
    assert read_whole(file).equals(visible)


def test_the_apps_server_path_reads_no_hidden_file_through_its_folder(app, tmp_path,
                                                                      monkeypatch):
    visible = hidden_folder(tmp_path)
    monkeypatch.setenv("SYNTH_DATA_ROOT", str(tmp_path))
    app.run()
    app.sidebar.text_input(key="server-path").set_value("ds").run()
    button(app, "Read it").click().run()
    assert not app.exception and not app.error, [e.value for e in app.error]
    ds = app.session_state["dataset"]
    assert ds.where == str(tmp_path / "ds")
    assert ds.table.reset_index(drop=True).equals(visible)
    assert "hidden" not in texts(app)


def test_only_hidden_parquet_files_is_a_folder_without_a_table(tmp_path):
    hidden_folder(tmp_path)
    (tmp_path / "ds" / "a.parquet").unlink()
    with pytest.raises(DataError, match=r"without \.parquet files.*hidden ones"):
        TableFile(tmp_path / "ds")


# ---- item 8: nested Parquet columns ----------------------------------------------------------


def nested(path) -> None:
    pd.DataFrame({"age": [30, 40, 50], "tags": [[1, 2], [3], []],
                  "address": [{"zip": 1}, {"zip": 2}, {"zip": 3}],
                  "group": ["a", "b", "a"]}).to_parquet(path, index=False)


def refused_as_nested(result) -> None:
    """Exit code 2 and one line naming both nested columns, no traceback."""
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "nested columns are not supported" in lines[0], lines[0]
    assert "'tags'" in lines[0] and "'address'" in lines[0] and "'age'" not in lines[0]
    assert "internal error" not in lines[0]


@pytest.mark.parametrize("where", ["whole", "where it lies", "folder"])
def test_nested_parquet_columns_are_refused_by_name_in_every_command(tmp_path, where):
    path = tmp_path / "people.parquet"
    if where == "folder":
        path = tmp_path / "people"
        path.mkdir()
        nested(path / "part.parquet")
    else:
        nested(path)
    size = ["--max-bytes", 10] if where == "where it lies" else []
    schema = REPO / "sample_data" / "census_demo.schema.json"
    home = tmp_path / "home"
    if where == "whole":  # schema infer reads a file whole
        refused_as_nested(synth("schema", "infer", path, "--out", tmp_path / "s.json",
                                home=home))
        assert not (tmp_path / "s.json").exists()
    refused_as_nested(synth("run", path, "--schema", schema, "--method", "independent",
                            "--epsilon", 1, "--out", tmp_path / "o.csv", "--ledger",
                            tmp_path / "l.json", *size, home=home))
    assert not (tmp_path / "o.csv").exists()
    refused_as_nested(synth("account", "limit", path, "--epsilon", 1, *size, home=home))
    assert synth("account", home=home).stdout.startswith("0 table(s)")  # nothing recorded


def test_the_apps_upload_refuses_nested_columns_by_name(app, tmp_path):
    nested(tmp_path / "people.parquet")
    data = (tmp_path / "people.parquet").read_bytes()
    app.sidebar.file_uploader[0].set_value(("people.parquet", data, "application/octet-stream")
                                           ).run()
    assert not app.exception
    said = [e.value for e in app.error]
    assert len(said) == 1 and "Reading people.parquet failed" in said[0], said
    assert "nested columns are not supported" in said[0] and "'tags'" in said[0], said
    assert "unexpectedly" not in said[0]
    assert "census demo (bundled sample)" in texts(app)  # the earlier data is kept
