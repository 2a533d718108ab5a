"""The run store: records that outlive the browser, shared by processes, honest about crashes,
owner-only, and never a way to lose or rewrite how a run ended."""

from __future__ import annotations

import json
import math
import os
import re
import sqlite3
import stat
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from synth import store as run_store
from synth.account import Store
from synth.store import (
    CANCELLED,
    DIED,
    FAILED,
    FINISHED,
    RUN,
    RUNNING,
    SWEEP,
    RunStore,
    StoreError,
)

from .conftest import within

WAIT = 300  # seconds a child may take: generous on a loaded machine


@pytest.fixture
def home(tmp_path, monkeypatch):
    """This test's own SYNTH_HOME (and its children's: they inherit the environment)."""
    path = tmp_path / "home"
    monkeypatch.setenv("SYNTH_HOME", str(path))
    return path


@pytest.fixture
def clock(monkeypatch):
    """A clock one second apart per call and random parts drawn from a script: ids and order
    that do not depend on the machine's speed."""
    now = iter(range(1_800_000_000, 1_900_000_000))
    monkeypatch.setattr(run_store, "time", SimpleNamespace(
        time=lambda: float(next(now)), gmtime=time.gmtime, strftime=time.strftime))
    draws: list[str] = []
    monkeypatch.setattr(run_store, "token_hex", lambda _: draws.pop(0))
    return draws


def start(store: RunStore, table: str = "key-a", kind: str = RUN, **extra) -> run_store.RunEntry:
    return store.start(kind, table, f"{table}.csv", "independent" if kind == RUN else "",
                       extra.pop("epsilon", 1.0), 1e-6, {"method": "independent", **extra})


def one_line(error: pytest.ExceptionInfo) -> str:
    message = str(error.value)
    assert "\n" not in message and message
    return message


def test_a_run_is_recorded_from_start_to_finish_and_listed_newest_first(home):
    store = RunStore()
    assert store.path == home / "runs.sqlite"
    first = start(store, charge=None)
    assert re.fullmatch(r"\d{8}-\d{6}-[0-9a-f]{4}", first.id)
    assert first.id[:15] == time.strftime("%Y%m%d-%H%M%S", time.gmtime(first.started))
    assert (first.status, first.pid, first.ended, first.summary) == (RUNNING, os.getpid(),
                                                                     None, {})
    assert first.folder == home / "runs" / first.id and first.folder.is_dir()
    sweep = store.start(SWEEP, "key-b", "b.csv", "", 2.0, 0.0, {"methods": ["a", "b"]}, 7)
    done = store.finish(first.id, {"rows": 100})
    assert done.status == FINISHED and done.ended >= done.started
    assert done.summary == {"rows": 100}
    again = RunStore()  # another connection, as another process would read it
    assert [e.id for e in again.list()] == [sweep.id, first.id]
    assert [e.id for e in again.list(table="key-a")] == [first.id]
    assert [e.id for e in again.list(kind=SWEEP)] == [sweep.id]
    assert again.get(sweep.id).charge == 7 and again.get(sweep.id).method == ""
    assert again.get(first.id) == store.get(first.id)
    assert again.list(table="key-a", kind=SWEEP) == []


def test_ids_order_by_time_and_a_clash_draws_again(home, clock, monkeypatch):
    store = RunStore()
    clock += ["aaaa", "aaaa", "bbbb"]  # the second's first draw is taken
    store.root.joinpath(time.strftime("%Y%m%d-%H%M%S-cccc", time.gmtime(1_800_000_002))
                        ).mkdir()  # a folder left from another file: not reused
    run_store.time.time = lambda: 1_800_000_001.0
    a, b = start(store), start(store)
    assert a.id.endswith("-aaaa") and b.id.endswith("-bbbb") and a.id[:-4] == b.id[:-4]
    clock += ["cccc", "dddd"]
    run_store.time.time = lambda: 1_800_000_002.0
    c = start(store)
    assert c.id.endswith("-dddd")
    assert [e.id for e in store.list()] == [c.id, b.id, a.id]
    assert sorted(e.id for e in store.list()) == [a.id, b.id, c.id]
    monkeypatch.setattr(run_store, "token_hex", lambda _: "dddd")  # every draw taken
    with pytest.raises(StoreError, match="no free run id"):
        within(60, start, store)
    assert len(store.list()) == 3


def test_a_status_moves_once_from_running(home):
    store = RunStore()
    finished, cancelled, failed = start(store), start(store), start(store)
    store.finish(finished.id)
    assert store.stop(cancelled.id, CANCELLED).status == CANCELLED
    assert store.stop(failed.id, FAILED, "boom\nat line 3").error == "boom at line 3"
    for entry in (finished, cancelled, failed):
        for move in (lambda i: store.finish(i), lambda i: store.stop(i, FAILED, "late")):
            with pytest.raises(StoreError, match="is already") as refused:
                move(entry.id)
            assert entry.id in one_line(refused)
    assert [store.get(e.id).status for e in (finished, cancelled, failed)] == [
        FINISHED, CANCELLED, FAILED]
    assert store.get(failed.id).error == "boom at line 3"
    with pytest.raises(StoreError, match="stops as"):
        store.stop(start(store).id, FINISHED)
    with pytest.raises(StoreError, match="kind"):
        store.start("notebook", "k", "t.csv", "m", 1.0, 0.0, {})


DIE = """
from synth.store import RunStore, RUN
print(RunStore().start(RUN, "key-a", "a.csv", "dpgan", 2.0, 1e-6, {"epochs": 9}).id)
"""


def test_a_run_whose_process_is_gone_reads_as_died(home):
    child = subprocess.run([sys.executable, "-c", DIE], capture_output=True, text=True,
                           timeout=WAIT, check=True)  # it starts a run and exits: a crash
    store = RunStore()
    gone = store.get(child.stdout.strip())
    assert gone.status == DIED and gone.pid != os.getpid()
    assert [e.status for e in store.list()] == [DIED]
    live = start(store)  # this process: alive, with several runs of its threads beside
    assert store.get(live.id).status == RUNNING and start(store).status == RUNNING
    with sqlite3.connect(store.path) as db:  # the same run seen from another machine
        db.execute("UPDATE runs SET host = 'elsewhere' WHERE id = ?", (gone.id,))
    assert store.get(gone.id).status == RUNNING
    with sqlite3.connect(store.path) as db:
        db.execute("UPDATE runs SET host = ? WHERE id = ?", (run_store.HOST, gone.id))
    assert store.stop(gone.id, FAILED, "the process died").status == FAILED  # a clean-up
    if run_store._stat(os.getpid()) is not None:  # Linux: a reused pid is another process
        with sqlite3.connect(store.path) as db:
            db.execute("UPDATE runs SET birth = birth + 1 WHERE id = ?", (live.id,))
        assert store.get(live.id).status == DIED


def test_delete_removes_files_keeps_the_record_and_the_charge_and_refuses_a_live_run(home):
    account = Store()
    charge = account.reserve("key-a", "a.csv", 1.0, 1e-6, "a run")
    store = RunStore()
    entry = store.start(RUN, "key-a", "a.csv", "independent", 1.0, 1e-6, {}, charge)
    (entry.folder / "synthetic.csv").write_text("a,b\n1,2\n")
    (entry.folder / "report").mkdir()
    (entry.folder / "report" / "index.html").write_text("<p>")
    assert [p.name for p in entry.files()] == ["index.html", "synthetic.csv"]
    assert entry.to_dict()["files"] == ["report/index.html", "synthetic.csv"]
    with pytest.raises(StoreError, match="still running") as refused:
        store.delete(entry.id)
    assert entry.id in one_line(refused) and len(entry.files()) == 2
    account.settle(charge, 0.8, 1e-6, "finished")
    store.finish(entry.id, {"rows": 1})
    before = account.usage("key-a")
    deleted = store.delete(entry.id)
    assert deleted.deleted and deleted.status == FINISHED and deleted.summary == {"rows": 1}
    assert not entry.folder.exists() and deleted.files() == [] and deleted.charge == charge
    assert store.get(entry.id).deleted and store.list()[0].deleted
    assert account.usage("key-a") == before and before.epsilon == pytest.approx(0.8)
    assert store.delete(entry.id).deleted  # twice: nothing left to remove, still no error


def test_unknown_and_ambiguous_ids_are_one_line_errors_and_a_unique_prefix_is_enough(
        home, clock):
    store = RunStore()
    clock += ["aaaa", "aabb", "bbbb"]
    run_store.time.time = lambda: 1_800_000_000.0
    a, b, c = start(store), start(store), start(store)
    assert store.get(c.id[:-3]) == store.get(c.id)
    assert store.finish(a.id[:-1]).id == a.id
    with pytest.raises(StoreError, match="ambiguous") as ambiguous:
        store.get(a.id[:-2])
    assert a.id in one_line(ambiguous) and "give more" in str(ambiguous.value)
    for unknown in ("nope", "", "2026%", "_"):
        with pytest.raises(StoreError, match="no run") as refused:
            store.delete(unknown)
        assert repr(unknown) in one_line(refused) and str(store.path) in str(refused.value)
    assert b.folder.exists()


def test_the_store_is_its_owners_alone(home):
    old = os.umask(0)  # a permissive umask: the store must not rely on the user's
    try:
        store = RunStore()
        entry = start(store)
    finally:
        os.umask(old)
    for path, mode in ((store.path, 0o600), (store.root, 0o700), (entry.folder, 0o700)):
        assert stat.S_IMODE(path.stat().st_mode) == mode, path


STARTS = """
import random, sys, time
from pathlib import Path
from synth import store as run_store
go = Path(sys.argv[1])
while not go.exists():  # start together, as closely as the OS allows
    time.sleep(0.001)
run_store.token_hex = lambda _: f"{random.randrange(256):04x}"  # clashes are likely
store = run_store.RunStore()
for _ in range(20):
    print(store.start(run_store.RUN, "key-a", "a.csv", "independent", 1.0, 0.0, {}).id)
"""


def test_processes_starting_runs_at_once_get_distinct_ids(home, tmp_path):
    go = tmp_path / "go"
    children = [subprocess.Popen([sys.executable, "-c", STARTS, str(go)],
                                 stdout=subprocess.PIPE, text=True) for _ in range(3)]
    go.touch()
    ids = [i for c in children for i in c.communicate(timeout=WAIT)[0].split()]
    assert all(c.returncode == 0 for c in children)
    assert len(ids) == len(set(ids)) == 60
    store = RunStore()
    assert sorted(e.id for e in store.list()) == sorted(ids)
    assert all(store.get(i).folder.is_dir() for i in ids)


def test_a_run_without_a_guarantee_keeps_epsilon_infinite(home):
    store = RunStore()
    entry = start(store, epsilon=math.inf, budget={"epsilon": math.inf, "shares": (0.5,)},
                  rows=np.int64(3))
    store.finish(entry.id, {"tvd": np.float64(0.25), "auc": math.nan, "n": np.int32(2)})
    read = RunStore().get(entry.id)
    assert read.epsilon == math.inf and read.delta == 1e-6
    assert read.configuration == {"method": "independent", "rows": 3,
                                  "budget": {"epsilon": "inf", "shares": [0.5]}}
    assert read.summary == {"tvd": 0.25, "auc": "nan", "n": 2}
    as_json = json.loads(json.dumps(read.to_dict(), allow_nan=False))
    assert as_json["epsilon"] == "inf" and as_json["folder"] == str(read.folder)
    assert as_json["status"] == FINISHED and as_json["files"] == []


def test_a_store_that_cannot_be_written_says_where_and_what_to_do(home, tmp_path,
                                                                   monkeypatch):
    blocked = tmp_path / "a file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("SYNTH_HOME", str(blocked))
    with pytest.raises(StoreError, match="SYNTH_HOME") as refused:
        RunStore()
    assert str(blocked / "runs") in one_line(refused)
    folder = tmp_path / "runs.sqlite"
    folder.mkdir()  # the database's name taken by a folder
    with pytest.raises(StoreError, match="SYNTH_HOME") as refused:
        RunStore(folder)
    assert repr(str(folder)) in one_line(refused)


def test_an_older_file_opens_and_gains_the_new_columns(home):
    home.mkdir()
    with sqlite3.connect(home / "runs.sqlite") as db:
        db.execute("CREATE TABLE runs (id TEXT PRIMARY KEY, kind TEXT NOT NULL, "
                   "table_key TEXT NOT NULL, status TEXT NOT NULL, started REAL NOT NULL)")
        db.execute("INSERT INTO runs VALUES ('20250101-000000-abcd', 'run', 'k', "
                   "'finished', 1.0)")
    store = RunStore()
    old = store.get("20250101-000000-abcd")
    assert (old.status, old.deleted, old.configuration, old.table) == (FINISHED, False, {}, "k")
    assert [e.id for e in store.list()][-1] == old.id and start(store).status == RUNNING
    assert store.delete(old.id).deleted
    assert isinstance(old.folder, Path)
