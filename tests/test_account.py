"""The persistent privacy account: charged before a run reads anything, refused at the
steward's limit, shared by processes, kept through crashes."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from synth.account import RUNNING, Store, TableAccount
from synth.data import fingerprint as table_key
from synth.errors import BudgetError, Cancelled
from synth.methods import FitContext, Spent
from synth.runs import Run, run

from .conftest import REPO

WAIT = 300  # seconds a child may take to reach the point a test waits for: generous


@pytest.fixture
def store(tmp_path):
    return Store(tmp_path / "account.sqlite")


def test_a_table_is_known_by_its_people_not_its_order(sample):
    table, _ = sample
    shuffled = table.sample(frac=1, random_state=1)[list(reversed(table.columns))]
    assert table_key(shuffled) == table_key(table)
    assert table_key(table.iloc[1:]) != table_key(table)  # one person fewer: another table
    changed = table.copy()
    changed.loc[0, "sex"] = next(v for v in table["sex"] if v != table.loc[0, "sex"])
    assert table_key(changed) != table_key(table)


def test_runs_compose_by_their_ledgers_and_persist(sample, store):
    table, schema = sample
    account = TableAccount.of(table, "census.csv", store)
    records = [run(table, schema, "independent", eps, 1e-6, account=account, measure=False)
               for eps in (0.5, 0.25)]
    usage = Store(store.path).usage(account.key)  # a new connection: it is on disk
    assert usage.runs == 2 and usage.running == 0
    assert usage.epsilon == pytest.approx(sum(r.ledger["total_epsilon"] for r in records))
    assert usage.delta == pytest.approx(sum(r.ledger["total_delta"] for r in records))


def test_a_run_past_the_limit_is_refused_before_anything_is_read(sample, store):
    table, schema = sample
    account = TableAccount.of(table, "census.csv", store)
    store.set_limit(account.key, "census.csv", 1.5, None)
    run(table, schema, "independent", 1.0, 1e-6, account=account, measure=False)
    refused = Run("independent", schema, 1.0, 1e-6, account=account)
    with pytest.raises(BudgetError, match=r"over its lifetime limit: ε=0\.5 of ε=1\.5 remain"):
        refused(table, schema)
    assert not hasattr(refused.model, "ledger_")  # the fit never started
    assert store.usage(account.key).runs == 1
    run(table, schema, "independent", 0.5, 1e-6, account=account, measure=False)  # exactly


def test_a_run_without_a_guarantee_is_refused_under_a_limit_and_recorded_before_it_runs(
        sample, store):
    """The audit's attack: private sampling with allow_no_guarantee was reserved at its
    nominal ε and marked unbounded only at settlement, so under a limit of 2 it ran and
    released. A run known up front to carry no guarantee is refused wherever a limit is set,
    before it reads anything, and recorded as unbounded before it runs."""
    table, schema = sample
    small = table[["sex", "race", "income"]]
    narrow = schema.drop(c for c in schema.names if c not in small.columns)
    demo = {"allow_no_guarantee": True, "k": 10**6, "d": 1}
    limited = TableAccount.of(small, "small.csv", store)
    store.set_limit(limited.key, "small.csv", 2.0, None)
    with pytest.raises(BudgetError, match="no DP guarantee"):
        run(small, narrow, "private_sampling", 1.0, 1e-6, account=limited, measure=False,
            params=demo)
    assert store.usage(limited.key).runs == 0  # refused before any charge
    other = small.iloc[1:]  # another table, with no limit: the run goes ahead
    account = TableAccount.of(other, "other.csv", store)
    seen = []
    record = run(other, narrow, "private_sampling", 1.0, 1e-6, account=account,
                 measure=False, params=demo, ctx=FitContext(on_event=lambda e: seen.append(
                     store.usage(account.key).epsilon) if isinstance(e, Spent) else None))
    assert seen and all(math.isinf(e) for e in seen)  # unbounded while it ran
    assert record.ledger["total_epsilon"] is None  # the ledger claims no guarantee
    assert math.isinf(store.usage(account.key).epsilon)  # nor does the account
    store.set_limit(account.key, "other.csv", 10.0, None)
    with pytest.raises(BudgetError, match="over its lifetime limit"):
        run(other, narrow, "independent", 0.1, 1e-6, account=account)


def test_the_account_is_its_owners_and_holds_no_fingerprint(sample, store):
    table, _ = sample
    account = TableAccount.of(table, "census.csv", store)
    assert account.key != table_key(table)  # keyed by an HMAC under a secret beside it
    for path in (store.path, store.path.with_name(store.path.name + ".secret")):
        assert path.stat().st_mode & 0o077 == 0, path


def test_a_cancelled_run_keeps_what_it_spent(sample, store):
    table, schema = sample
    account = TableAccount.of(table, "census.csv", store)
    planned = Run("independent", schema, 1.0, 1e-6, {"bins": 8}, account=account)
    spent = []
    with pytest.raises(Cancelled):
        planned(table, schema, ctx=FitContext(
            on_event=lambda e: spent.append(e) if isinstance(e, Spent) else None,
            should_stop=lambda: bool(spent)))
    usage = store.usage(account.key)
    assert usage.running == 0 and usage.epsilon == pytest.approx(planned.spent["total_epsilon"])


CHARGE = """
import sys, time
from pathlib import Path
from synth.account import Store
from synth.errors import BudgetError
go = Path(sys.argv[2])
while not go.exists():  # start together, as closely as the OS allows
    time.sleep(0.001)
store = Store(sys.argv[1])
print(store.key("a fingerprint"))  # the secret is made once, whoever comes first
try:
    store.reserve("same table", "t.csv", 0.6, 0.0, "a run")
    print("charged")
except BudgetError:
    print("refused")
"""


def test_concurrent_processes_cannot_both_pass_the_limit(tmp_path):
    store = Store(tmp_path / "fresh" / "account.sqlite")  # no secret yet: made concurrently
    store.set_limit("same table", "t.csv", 1.0, None)
    go = tmp_path / "go"
    children = [subprocess.Popen([sys.executable, "-c", CHARGE, str(store.path), str(go)],
                                 stdout=subprocess.PIPE, text=True) for _ in range(4)]
    go.touch()
    keys, said = zip(*(c.communicate(timeout=WAIT)[0].split() for c in children), strict=True)
    assert sorted(said) == ["charged", "refused", "refused", "refused"]
    assert len(set(keys)) == 1 and keys[0] == store.key("a fingerprint")
    assert store.usage("same table").epsilon == pytest.approx(0.6)


def test_a_crash_mid_run_leaves_the_whole_charge(sample, tmp_path):
    table, _ = sample
    env = {**os.environ, "SYNTH_HOME": str(tmp_path)}
    schema = REPO / "sample_data" / "census_demo.schema.json"
    data = REPO / "sample_data" / "census_demo.csv"
    child = subprocess.Popen(
        [sys.executable, "-m", "synth", "run", str(data), "--schema", str(schema), "--method",
         "dpgan", "--epsilon", "2", "--set", "epochs=1000", "--out", str(tmp_path / "s.csv"),
         "--ledger", str(tmp_path / "l.json"), "--quiet"], env=env, cwd=tmp_path)
    store = Store(tmp_path / "account.sqlite")
    key = store.key(table_key(table))
    try:  # wait for the reservation, however slowly the child starts
        for _ in range(WAIT * 10):
            usage = store.usage(key)
            if usage is not None and usage.running:
                break
            assert child.poll() is None, "the run ended before it could be killed"
            time.sleep(0.1)
        else:
            pytest.fail(f"no reservation after {WAIT} s")
    finally:
        child.send_signal(signal.SIGKILL)  # no cleanup runs: a crash
        child.wait(timeout=WAIT)
    usage = store.usage(key)
    assert usage.running == 1 and usage.epsilon == pytest.approx(2.0)  # kept in full
    assert not Path(tmp_path / "s.csv").exists()


def test_the_cli_charges_its_input_and_refuses_at_the_limit(tmp_path):
    env = {**os.environ, "SYNTH_HOME": str(tmp_path)}
    data = REPO / "sample_data" / "census_demo.csv"
    schema = REPO / "sample_data" / "census_demo.schema.json"

    def synth(*args):
        return subprocess.run([sys.executable, "-m", "synth", *map(str, args)], env=env,
                              cwd=tmp_path, capture_output=True, text=True, timeout=WAIT)

    limited = synth("account", "limit", data, "--epsilon", "1")
    assert limited.returncode == 0 and "limit ε=1" in limited.stdout
    runs = [synth("run", data, "--schema", schema, "--method", "independent", "--epsilon",
                  "0.6", "--out", tmp_path / f"s{i}.csv", "--ledger", tmp_path / f"l{i}.json",
                  "--quiet") for i in range(2)]
    assert runs[0].returncode == 0, runs[0].stderr
    assert runs[1].returncode == 2
    assert "over its lifetime limit: ε=0.4 of ε=1 remain" in runs[1].stderr
    assert not (tmp_path / "l1.json").exists()  # refused before anything: no ledger to write
    listed = synth("account")
    assert "census_demo.csv" in listed.stdout and "spent ε=0.6" in listed.stdout
    assert "1 run(s)" in listed.stdout and "basic composition" in listed.stdout
    assert RUNNING not in listed.stdout


def test_a_sweep_charges_each_run_and_stops_being_charged_at_the_limit(sample, store):
    from synth.sweep import grid, sweep

    table, schema = sample
    account = TableAccount.of(table, "census.csv", store)
    store.set_limit(account.key, "census.csv", 1.0, None)
    jobs = grid(["independent"], [0.5], seeds=3)
    rows = sweep(jobs, table, None, schema, 1e-6, n_jobs=1, account=account)
    assert rows["error"].isna().sum() == 2  # two runs kept, the third refused and said why
    (refused,) = rows["error"].dropna()
    assert "over its lifetime limit" in refused
    assert rows["ledger_epsilon"].sum() == pytest.approx(1.0)
    usage = store.usage(account.key)
    assert usage.runs == 2 and usage.epsilon == pytest.approx(1.0)


def test_the_account_keeps_totals_per_privacy_unit(tmp_path):
    """Runs protecting rows and runs protecting people add up apart too: the overall sum
    bounds a row's loss, a person's is the sum over that unit's runs only."""
    from synth.privacy.unit import PrivacyUnit

    store = Store(tmp_path / "account.sqlite")
    for eps, unit in ((0.5, PrivacyUnit()), (1.0, PrivacyUnit("person", 3)),
                      (0.25, PrivacyUnit("person", 5))):  # both protect the whole person
        charge = store.reserve("t", "t.csv", eps, 1e-6, "a run", unit)
        store.settle(charge, eps, 1e-6, "finished")
    usage = store.usage("t")
    assert usage.epsilon == pytest.approx(1.75)
    totals = {unit: (e, d) for unit, e, d in usage.by_unit}
    assert totals.keys() == {"one row", "one 'person'"}
    assert totals["one 'person'"] == pytest.approx((1.25, 2e-6))
    assert totals["one row"] == pytest.approx((0.5, 1e-6))


def test_an_account_file_from_before_per_unit_totals_reads_each_runs_unit(tmp_path):
    """Its charges' units are read back from their commands; a command naming none
    protected rows."""
    import sqlite3

    path = tmp_path / "account.sqlite"
    db = sqlite3.connect(path)
    db.executescript("""
        CREATE TABLE tables (key TEXT PRIMARY KEY, name TEXT NOT NULL,
                             limit_epsilon REAL, limit_delta REAL);
        CREATE TABLE charges (id INTEGER PRIMARY KEY, key TEXT NOT NULL REFERENCES tables(key),
                              epsilon REAL NOT NULL, delta REAL NOT NULL, status TEXT NOT NULL,
                              what TEXT NOT NULL, started REAL NOT NULL);
        INSERT INTO tables VALUES ('t', 't.csv', NULL, NULL);
        INSERT INTO charges (key, epsilon, delta, status, what, started)
            VALUES ('t', 0.7, 0.0, 'done', 'python -m synth run t.csv --epsilon 0.7', 0),
                   ('t', 1.0, 1e-6, 'done', 'python -m synth run t.csv --epsilon 1 '
                    || '--privacy-unit ''person id'' --max-rows-per-unit 4', 0);""")
    db.commit()
    db.close()
    usage = Store(path).usage("t")
    assert usage.by_unit == (("one 'person id'", pytest.approx(1.0), pytest.approx(1e-6)),
                             ("one row", pytest.approx(0.7), 0.0))
    assert Store(path).usage("t").by_unit == usage.by_unit  # migrated once
