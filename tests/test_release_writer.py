"""The one release writer (synth/release.py), run as a user runs it (issue 33, items 4, 6, 7
and 10): nothing is spent on a release that cannot be written, no output overwrites an input,
an interrupted commit never removes the old release and its leftovers are cleaned up, and a
released CSV cannot run as a spreadsheet formula."""

import csv
import hashlib
import io
import json
import os
import subprocess
import sys

import pandas as pd
import pytest

from synth import release
from synth.account import Store
from synth.cli import main
from synth.data import sample_paths
from synth.release import LEDGER, TABLE, ReleaseWriter, csv_text

from .conftest import REPO

OLD = "an older release\n"
# the CLI in a process of its own that dies (os._exit: no cleanup runs, as under kill -9)
# between the ledger's rename and the table's: the one fault a test cannot stage for real
KILLED = ("import os, sys; from synth import release; release.fault = lambda point: "
          "os._exit(9) if point == 'renamed --ledger' else None; from synth.cli import main; "
          "sys.exit(main(sys.argv[1:]))")


def synth(tmp_path, *args, code=None):
    """The CLI in a subprocess with an account of its own under tmp_path/home."""
    command = ["-c", code] if code else ["-m", "synth"]
    return subprocess.run([sys.executable, *command, *map(str, args)], capture_output=True,
                          text=True, cwd=REPO, timeout=1800,
                          env={**os.environ, "SYNTH_HOME": str(tmp_path / "home")})


def run_args(out, ledger, schema=None, data=None, epsilon=1):
    table, sample_schema = sample_paths()
    return ["run", data or table, "--schema", schema or sample_schema, "--method",
            "independent", "--epsilon", epsilon, "--out", out, "--ledger", ledger, "--quiet"]


def spent_runs(tmp_path) -> int:
    """Runs the account under tmp_path/home has recorded (0 when it was never opened)."""
    path = tmp_path / "home" / "account.sqlite"
    return sum(u.runs for u in Store(path).tables()) if path.exists() else 0


def sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def files(folder) -> list[str]:
    """The files in folder, but the account's home."""
    return sorted(p.name for p in folder.iterdir() if p.name != "home")


def leftovers(folder) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


@pytest.mark.parametrize("where", ["under a file", "a folder"])
def test_an_unwritable_out_is_refused_before_anything_is_spent(tmp_path, where):
    (tmp_path / "notes.txt").write_text("a file, not a folder\n")
    (tmp_path / "results").mkdir()
    out = tmp_path / ("notes.txt/o.csv" if where == "under a file" else "results")
    res = synth(tmp_path, *run_args(out, tmp_path / "l.json"))
    assert res.returncode == 2, res.stderr
    (line,) = res.stderr.strip().splitlines()  # one line, naming the option and the path
    assert line.startswith(f"error: cannot write --out {str(out)!r}")
    assert "nothing was spent" in line and spent_runs(tmp_path) == 0
    assert files(tmp_path) == ["notes.txt", "results"]  # no ledger either


def test_a_full_disk_is_refused_before_anything_is_spent(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SYNTH_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(release, "free_bytes", lambda folder: 4096)  # the disk's free space
    code = main([str(a) for a in run_args(tmp_path / "o.csv", tmp_path / "l.json")])
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and line.startswith("error: --out") and "4.0 KB free" in line, line
    assert "nothing was spent" in line and spent_runs(tmp_path) == 0
    assert not (tmp_path / "o.csv").exists() and not (tmp_path / "l.json").exists()
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("which", ["--out", "--ledger"])
def test_no_output_overwrites_the_schema(tmp_path, which):
    _, sample_schema = sample_paths()
    schema = tmp_path / "schema.json"
    schema.write_bytes(sample_schema.read_bytes())
    paths = {"--out": tmp_path / "o.csv", "--ledger": tmp_path / "l.json", which: schema}
    res = synth(tmp_path, *run_args(paths["--out"], paths["--ledger"], schema=schema))
    assert res.returncode == 2 and f"{which} and --schema are the same file" in res.stderr
    assert schema.read_bytes() == sample_schema.read_bytes() and spent_runs(tmp_path) == 0
    assert files(tmp_path) == ["schema.json"]


def test_a_kill_between_the_renames_keeps_the_old_table_and_the_next_run_cleans_up(tmp_path):
    out, ledger = tmp_path / "o.csv", tmp_path / "l.json"
    out.write_text(OLD)
    res = synth(tmp_path, *run_args(out, ledger), code=KILLED)
    assert res.returncode == 9, res.stderr
    assert out.read_text() == OLD  # never removed before its replacement is in place
    record = json.loads(ledger.read_text())  # the new ledger: it does not claim the old table
    assert record["status"] == "released" and record["synthetic_sha256"] != sha(out)
    (left,) = leftovers(tmp_path)  # the whole new table, staged
    assert left.startswith(".o.csv.") and sha(tmp_path / left) == record["synthetic_sha256"]

    res = synth(tmp_path, *run_args(out, ledger))
    assert res.returncode == 0, res.stderr
    assert f"removed {tmp_path / left}" in res.stderr
    assert files(tmp_path) == ["l.json", "o.csv"]
    assert json.loads(ledger.read_text())["synthetic_sha256"] == sha(out)


def test_the_old_writers_leftovers_are_removed_by_the_next_run(tmp_path):
    """What bb2e1c2 left after a kill in its commit: the new release as hidden files."""
    out, ledger = tmp_path / "o.csv", tmp_path / "l.json"
    for stale in (".o.csv.k2x9q1_a.tmp", ".l.json.7hh2m0zt.tmp"):
        (tmp_path / stale).write_text("a whole release that was never renamed\n")
    res = synth(tmp_path, *run_args(out, ledger))
    assert res.returncode == 0, res.stderr
    assert res.stderr.count("removed ") == 2 and ".o.csv.k2x9q1_a.tmp" in res.stderr
    assert leftovers(tmp_path) == [] and out.exists() and ledger.exists()


def test_a_cancel_between_the_renames_keeps_the_old_table(tmp_path, monkeypatch, capsys):
    """Ctrl-C after the ledger's rename: the run spent, so its ledger says so, and the old
    table stays whole beside it; nothing is left staged."""
    monkeypatch.setenv("SYNTH_HOME", str(tmp_path / "home"))

    pressed = []

    def interrupt(point):  # one Ctrl-C, at the first rename
        if point == "renamed --ledger" and not pressed:
            pressed.append(point)
            raise KeyboardInterrupt

    monkeypatch.setattr(release, "fault", interrupt)
    out, ledger = tmp_path / "o.csv", tmp_path / "l.json"
    out.write_text(OLD)
    assert main([str(a) for a in run_args(out, ledger)]) == 130
    assert "no synthetic table was released" in capsys.readouterr().err
    record = json.loads(ledger.read_text())
    assert record["status"].startswith("cancelled while its files were written; the run "
                                       "finished and is kept in the run store as ")
    assert record["status"].endswith("; nothing was released") and record["entries"]
    assert "synthetic_sha256" not in record and out.read_text() == OLD
    assert leftovers(tmp_path) == []


def test_a_running_writers_files_are_not_taken_for_leftovers(tmp_path):
    out = tmp_path / "o.csv"
    first = ReleaseWriter({TABLE: out, LEDGER: tmp_path / "a.json"}, {}, 10)
    try:
        staged = leftovers(tmp_path)
        second = ReleaseWriter({TABLE: out, LEDGER: tmp_path / "b.json"}, {}, 10)
        assert second.removed == [] and set(staged) < set(leftovers(tmp_path))
        second.abort()
        assert leftovers(tmp_path) == staged
    finally:
        first.abort()
    assert leftovers(tmp_path) == []


FORMULAS = ["=1+1", "+SUM(A1:A9)", "-2+3+cmd|' /C calc'!A0", "@SUM(1)"]


def test_a_released_csv_cannot_run_as_a_formula(tmp_path):
    """Text cells and headers that a spreadsheet would run are written with a ' in front;
    numbers, negative ones included, are never altered. The checklist names the columns."""
    n = 600
    table = pd.DataFrame({"note": [FORMULAS[i % len(FORMULAS)] for i in range(n)],
                          "-balance": [(i % 201) - 100 for i in range(n)],
                          "kind": ["a", "b", "-c"] * (n // 3)})
    data, schema = tmp_path / "private.parquet", tmp_path / "schema.json"
    table.to_parquet(data, index=False)
    assert synth(tmp_path, "schema", "infer", data, "--out", schema).returncode == 0
    res = synth(tmp_path, "schema", "confirm", schema, data, "--public", "all")
    assert res.returncode == 0, res.stderr
    out, ledger = tmp_path / "o.csv", tmp_path / "l.json"
    res = synth(tmp_path, *run_args(out, ledger, schema=schema, data=data, epsilon=8))
    assert res.returncode == 0, res.stderr
    assert json.loads(ledger.read_text())["synthetic_sha256"] == sha(out)

    with open(out, newline="") as file:
        header, *rows = list(csv.reader(file))
    assert header == ["note", "'-balance", "kind"] and len(rows) == n
    notes = [row[0] for row in rows if row[0]]
    assert notes and all(cell[0] == "'" and cell[1:] in FORMULAS for cell in notes)
    assert {row[2] for row in rows} <= {"a", "b", "'-c"}  # a text cell like any other
    balances = [row[1] for row in rows]
    assert any(b.startswith("-") for b in balances)  # negative numbers, written as they are
    assert all(float(b) <= 100 for b in balances if b)
    back = pd.read_csv(out)
    assert pd.api.types.is_numeric_dtype(back["'-balance"]) and back["'-balance"].min() < 0
    assert "'-balance' (header)" in res.stderr and "'note' (" in res.stderr  # the checklist


def test_the_csv_writer_leaves_numbers_and_plain_text_alone():
    """Tab and CR too (a table read by synth loses them: its cells are stripped); a cell
    holding a CR is quoted, or a spreadsheet would start a row, unprefixed, after it."""
    frame = pd.DataFrame({"x": [-1.5, 2.0, -3e-9], "n": [-1, 0, 7], "t": ["-4", "+5", "a-b"],
                          "c": pd.Categorical(["=c", "d", "=c"]), "s": ["@x", None, "ok"],
                          "\tw": ["\t=1", "\r=1", "a\r=1"]})
    text = csv_text(frame)
    assert text.splitlines()[0].endswith(",'\tw") and '"\'\r=1"' in text and '"a\r=1"' in text
    back = pd.read_csv(io.StringIO(text), dtype={"t": str})
    assert back["'\tw"].tolist() == ["'\t=1", "'\r=1", "a\r=1"]
    assert back["x"].tolist() == frame["x"].tolist() and back["n"].tolist() == [-1, 0, 7]
    assert back["t"].tolist() == ["-4", "+5", "a-b"]  # text that is a plain number is kept
    assert back["c"].tolist() == ["'=c", "d", "'=c"] and back["s"].iloc[0] == "'@x"
    assert pd.isna(back["s"].iloc[1]) and back["s"].iloc[2] == "ok"
    assert csv_text(frame.assign(c=frame["c"].astype(str))) == text  # one rule for any text dtype


def test_a_sweep_that_cannot_write_its_table_spends_nothing(tmp_path):
    """The audit: `synth sweep … --out data.csv/x.csv` charged the account, then failed."""
    table, schema = sample_paths()
    (tmp_path / "notes.txt").write_text("a file, not a folder\n")
    res = synth(tmp_path, "sweep", table, "--schema", schema, "--methods", "independent",
                "--epsilons", 0.1, "--seeds", 1, "--jobs", 1, "--quiet",
                "--out", tmp_path / "notes.txt" / "sweep.csv")
    assert res.returncode == 2 and "cannot write --out" in res.stderr, res.stderr
    assert spent_runs(tmp_path) == 0


@pytest.mark.parametrize("command", ["sweep", "infer"])
def test_no_other_output_overwrites_an_input(tmp_path, command):
    """The audit: `synth sweep … --out DATA` and `schema infer DATA --out DATA` replaced the
    private table."""
    table, schema = sample_paths()
    data = tmp_path / "data.csv"
    data.write_bytes(table.read_bytes())
    before = sha(data)
    args = (["sweep", data, "--schema", schema, "--methods", "independent", "--epsilons",
             0.1, "--seeds", 1, "--jobs", 1, "--quiet", "--out", data]
            if command == "sweep" else ["schema", "infer", data, "--out", data])
    res = synth(tmp_path, *args)
    assert res.returncode == 2 and "--out and DATA are the same file" in res.stderr, res.stderr
    assert sha(data) == before and spent_runs(tmp_path) == 0


def test_an_output_inside_the_input_folder_or_over_the_account_is_refused(tmp_path):
    """The audit: `--out ds/p0.parquet` replaced a part of the Parquet folder read as the
    table, and `--out $SYNTH_HOME/account.sqlite.secret` gave the table a fresh account,
    past its lifetime limit."""
    table, _ = sample_paths()
    folder = tmp_path / "ds"
    folder.mkdir()
    pd.read_csv(table).to_parquet(folder / "p0.parquet", index=False)
    before = sha(folder / "p0.parquet")
    res = synth(tmp_path, *run_args(folder / "p0.parquet", tmp_path / "l.json", data=folder))
    assert res.returncode == 2 and "lies inside the other" in res.stderr, res.stderr
    assert sha(folder / "p0.parquet") == before and spent_runs(tmp_path) == 0
    assert synth(tmp_path, *run_args(tmp_path / "o.csv", tmp_path / "l.json")).returncode == 0
    secret = tmp_path / "home" / "account.sqlite.secret"
    kept = sha(secret)
    res = synth(tmp_path, *run_args(secret, tmp_path / "l2.json"))
    assert res.returncode == 2 and "privacy account's secret" in res.stderr, res.stderr
    assert sha(secret) == kept and spent_runs(tmp_path) == 1
