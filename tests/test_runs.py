"""A run, the one way every caller makes a release: its hold-out, its record, its stop."""

from __future__ import annotations

import json
import shlex
from dataclasses import replace

import numpy as np
import pytest

from synth.cli import build_parser
from synth.errors import Cancelled, ParameterError, SynthError
from synth.methods import FitContext, Progress, Spent, StageStarted, parse_settings
from synth.protocol import protocol_split
from synth.runs import Run, RunRecord, run, split, synthesized_rows


def test_split_holds_out_the_protocol_test_sixth_only_with_a_target(sample):
    table, schema = sample
    table = table.assign(row=range(len(table)))
    schema = replace(schema, columns=(*schema.columns, replace(schema["age"], name="row")))
    private, test = split(table, schema)
    assert len(private) == synthesized_rows(len(table), schema)
    assert len(test) == len(table) - 5 * len(table) // 6  # the protocol's test sixth
    assert set(private["row"]).isdisjoint(test["row"])  # no held-out row is synthesized
    assert set(private["row"]) | set(test["row"]) == set(table["row"])  # and none is lost
    assert split(table, schema, hold_out=False) == (table, None)
    untargeted = replace(schema, target=None)
    assert split(table, untargeted)[1] is None
    assert synthesized_rows(len(table), untargeted) == len(table)


def test_a_record_is_the_release_and_the_stewards_measurements(sample):
    table, schema = sample
    private, test = split(table, schema)
    record = run(private, schema, "independent", 1.0, 1e-6, {"bins": 8},
                 postprocessing_seed=3, test=test)
    assert isinstance(record, RunRecord)
    assert len(record.synthetic) == len(private)
    assert record.ledger["total_epsilon"] <= 1.0 + 1e-12
    assert 0 < record.fit_seconds <= record.seconds
    assert 0 <= record.fidelity.tvd1 <= 1 and 0 <= record.scores["accuracy"] <= 1
    assert record.scores["majority"] == pytest.approx(
        test[schema.target].value_counts(normalize=True).max())
    # the release holds the ledger and configuration, none of the steward's measurements
    release = record.release.ledger
    assert release["params"]["bins"] == 8 and release["rows"] == len(private)
    assert not {"scores", "fidelity", "tvd1", "accuracy", "checklist"} & set(release)
    json.dumps(release)  # a file can hold it
    # its command, parsed by the CLI, asks for the same configuration
    args = build_parser().parse_args(shlex.split(record.command)[3:])
    params, shares = parse_settings(args.set)
    assert (args.method, args.epsilon, args.delta, args.postprocessing_seed) == (
        "independent", 1.0, 1e-6, 3)
    assert params == {"bins": 8} and shares == record.shares


def test_numpy_parameters_make_a_run_and_its_command(sample):
    table, schema = sample
    record = run(table.iloc[:300], schema, "independent", 1.0, params={"bins": np.int64(8)})
    assert "bins=8" in record.command and record.params["bins"] == 8


def test_a_configuration_the_schema_rules_out_is_refused_before_the_table_is_read(sample):
    _, schema = sample
    with pytest.raises(ParameterError, match="rounds × per_round = 1000000 exceeds"):
        Run("gsd", schema, 1.0, 1e-6, {"rounds": 10**6})  # the app disables Run: no plan


def test_a_stopped_run_shows_what_it_spent_and_releases_nothing(sample):
    table, schema = sample
    planned = Run("independent", schema, 1.0, 1e-6)
    assert planned.spent is None  # configured: nothing is read or spent yet
    spent = []
    ctx = FitContext(on_event=lambda e: spent.append(e) if isinstance(e, Spent) else None,
                     should_stop=lambda: bool(spent))
    with pytest.raises(Cancelled):
        planned(table, schema, ctx=ctx)
    assert planned.spent is not None and planned.spent["entries"]
    assert planned.spent["total_epsilon"] == pytest.approx(spent[-1].total_epsilon)


def test_a_failed_measurement_keeps_the_release(sample):
    table, schema = sample
    record = run(table, schema, "independent", 1.0, test=table.iloc[:0])  # nothing to score
    # the quality scores need no test rows; utility does, so it is left out
    assert set(record.scores) == {"column_shapes", "column_pair_trends", "quality",
                                  "data_validity"}
    assert len(record.synthetic) == len(table)
    unscorable = table.drop(columns=[schema.target])
    record = run(table, schema, "independent", 1.0, test=unscorable)
    assert schema.target in record.scores["error"]  # said, not raised
    assert len(record.synthetic) == len(table) and record.ledger["entries"]


def test_a_unit_hold_out_keeps_people_whole_and_others_in_place():
    """With a privacy unit the hold-out moves whole people, and giving one person more rows
    moves no one else between the parts (shuffling rows would: the row count is private)."""
    import pandas as pd

    from synth.privacy.mechanisms import replayable_noise
    from synth.privacy.unit import PrivacyUnit
    from synth.protocol import cut_points
    from synth.schema import infer_schema

    rng = np.random.default_rng(5)
    people = np.repeat([f"P{i}" for i in range(300)], rng.integers(1, 5, size=300))
    table = pd.DataFrame({"person": people, "y": rng.choice(["a", "b"], len(people))})
    schema = replace(infer_schema(table[["y"]]), target="y")
    unit = PrivacyUnit("person", 3)
    with replayable_noise(1):
        train, test = split(table, schema, unit=unit)
    assert not set(train["person"]) & set(test["person"])
    assert train["person"].nunique() == cut_points(300)[1]
    longer = pd.concat([table, table[table["person"] == "P0"]], ignore_index=True)
    with replayable_noise(1):  # the same draw: only P0's rows can move
        train2, test2 = split(longer, schema, unit=unit)
    others = lambda part: set(part["person"]) - {"P0"}  # noqa: E731
    assert others(train2) == others(train) and others(test2) == others(test)


def test_renaming_one_person_leaves_the_synthesized_unit_count_alone():
    """The audit's attack: one person renamed moved the part's unit count U by one under the
    hash rule (1,260 vs 1,259), and at k = 1 the release has exactly U rows. U must be a
    function of the table's public unit count alone, on every draw."""
    import pandas as pd

    from synth.privacy.unit import PrivacyUnit, population
    from synth.protocol import cut_points
    from synth.schema import infer_schema

    rng = np.random.default_rng(2)
    ids = [f"person-{i}" for i in range(120)]
    table = pd.DataFrame({"person": np.repeat(ids, 2), "y": rng.choice(["a", "b"], 240)})
    schema = replace(infer_schema(table[["y"]]), target="y")
    unit = PrivacyUnit("person", 1)
    counts = set()
    for renamed in ids[:40]:  # each neighbour: one person's ID changed
        other = table.assign(person=table["person"].replace(renamed, f"{renamed}-renamed"))
        for part in (split(table, schema, unit=unit)[0], split(other, schema, unit=unit)[0]):
            counts.add(population(part, unit).units)
    assert counts == {cut_points(120)[1]}


def test_a_run_store_that_cannot_record_stops_the_run_and_settles_its_charge(sample, tmp_path):
    """The record opens after the account's reservation: if it cannot, nothing is read and the
    reservation settles to nothing spent (it used to stay reserved in full)."""
    from synth.account import Store, TableAccount
    from synth.store import RunStore, StoreError

    table, schema = sample
    store = RunStore(tmp_path / "runs.sqlite")
    (tmp_path / "runs.sqlite").unlink()
    (tmp_path / "runs.sqlite").mkdir()  # the records' file is now a folder
    account = TableAccount.of(table, "t", Store(tmp_path / "account.sqlite"))
    with pytest.raises(StoreError):
        Run("independent", schema, 1.0, 1e-5, account=account, store=store)(
            table, schema, measure=False)
    usage = account.usage()
    assert usage.runs == 1 and usage.running == 0 and usage.epsilon == 0


def test_a_stored_run_reads_back_as_its_release_byte_for_byte(sample, tmp_path):
    """What the app lists after a restart: the run store's files are the release as made
    (its ledger's checksum is of the table read back), with the figures it measured."""
    import hashlib

    from synth.account import Store, TableAccount
    from synth.release import LEDGER, TABLE
    from synth.store import FINISHED, RunStore

    table, schema = sample
    store = RunStore(tmp_path / "runs.sqlite")
    account = TableAccount.of(table, "t", Store(tmp_path / "account.sqlite"))
    train, _, test = protocol_split(table)
    record = Run("independent", schema, 1.0, 1e-5, account=account, store=store)(
        train, schema, test)
    (entry,) = store.list()
    assert entry.status == FINISHED and entry.summary["held_out"]
    again = RunRecord.read(entry)
    files = again.release.files()
    assert files == record.release.files()
    ledger = json.loads(files[LEDGER])
    assert ledger["synthetic_sha256"] == hashlib.sha256(files[TABLE]).hexdigest()
    assert again.scores == pytest.approx(record.scores)
    assert again.ledger["total_epsilon"] == record.ledger["total_epsilon"]
    assert list(again.synthetic.columns) == list(record.synthetic.columns)
    assert len(again.synthetic) == len(record.synthetic)
    assert again.schema.to_dict() == record.schema.to_dict()
    store.delete(entry.id)  # its files gone: a one-line refusal naming the run
    with pytest.raises(SynthError, match=f"run {entry.id}'s release cannot be read"):
        RunRecord.read(store.get(entry.id))


def test_a_run_whose_files_cannot_be_kept_is_recorded_as_failed(sample, tmp_path, monkeypatch):
    """A store that cannot keep a paid-for release never fails the run (its caller holds the
    release) and never leaves the record running: it is closed as failed, saying why."""
    import synth.release as release
    from synth.account import Store, TableAccount
    from synth.store import FAILED, RunStore

    def lost(point: str) -> None:
        raise SynthError(f"the disk went away ({point})")

    monkeypatch.setattr(release, "fault", lost)
    table, schema = sample
    store = RunStore(tmp_path / "runs.sqlite")
    account = TableAccount.of(table, "t", Store(tmp_path / "account.sqlite"))
    record = Run("independent", schema, 1.0, 1e-5, account=account, store=store)(
        table, schema, measure=False)
    (entry,) = store.list()
    assert entry.status == FAILED and "its files could not be kept" in entry.error
    assert len(record.synthetic) == len(table) and account.usage().running == 0


def test_a_release_csv_reads_back_as_the_table_it_was_made_from():
    """csv_text guards formula-like text with a ' in front; reading a stored release back
    takes it off again, so Compare and the reports see the released values."""
    import pandas as pd

    from synth.release import csv_text, read_csv_text

    frame = pd.DataFrame({"=name": ["=1+1", "+x", "@a", "-b", "plain", "'quoted"],
                          "n": [-1.5, 2.0, 3.0, -4.0, 5.0, 6.0]})
    back = read_csv_text(csv_text(frame).encode())
    assert list(back.columns) == ["=name", "n"]
    assert back["=name"].tolist() == frame["=name"].tolist()
    assert back["n"].tolist() == frame["n"].tolist()


def test_a_run_checks_the_plan_it_showed(sample):
    """The plan shown before Run is the one the run checks (worked out once), and another
    population gets a plan of its own."""
    from synth.privacy.unit import Population, PrivacyUnit
    from synth.source import table_population

    table, schema = sample
    configured = Run("independent", schema, 1.0, 1e-5, rows=len(table))
    shown = configured.plan
    assert configured.plan_for(table_population(table, PrivacyUnit()), schema) is shown
    other = configured.plan_for(Population.of(len(table) // 2, PrivacyUnit()), schema)
    assert other is not shown and other.entries == shown.entries  # the same events


def test_a_cancel_while_drawing_stops_the_run_and_in_the_comparison_keeps_the_release(sample):
    """Issue 49: a run's stages after the fit report and cancel too. A cancel before the
    release is drawn stops the run; once it is drawn, a cancel skips the comparison (for the
    steward's eyes only) and the paid-for release is kept, saying so."""
    table, schema = sample
    for stage, kept in (("draw", False), ("compare", True)):
        events, asked = [], []

        def heard(event, stage=stage, events=events, asked=asked):
            events.append(event)
            if isinstance(event, StageStarted) and event.stage == stage:
                asked.append(True)

        ctx = FitContext(on_event=heard, should_stop=lambda asked=asked: bool(asked))
        planned = Run("independent", schema, 1.0, 1e-6)
        if not kept:
            with pytest.raises(Cancelled):
                planned(table, schema, table.iloc[:500], ctx)
            assert planned.spent["entries"]
            continue
        record = planned(table, schema, table.iloc[:500], ctx)
        assert len(record.synthetic) == len(table) and record.fidelity is None
        assert "cancelled" in record.scores["error"]
        assert "cancelled" in record.checklist[0].text
        started = [e.stage for e in events if isinstance(e, StageStarted)]
        assert started[-2:] == ["compare", "write"]


def test_a_long_call_keeps_its_stage_alive_and_cancels_at_once():
    """A call that reports nothing (a compile, a solver) runs beside the fit's thread, which
    repeats the stage's last step while it runs and lands a cancel without waiting for it."""
    import threading

    events, release = [], threading.Event()

    def heard(event):
        events.append(event)
        if sum(isinstance(e, Progress) for e in events) >= 3:  # the stage repeated twice
            release.set()

    ctx = FitContext(on_event=heard)
    ctx.stage("solve", 4)
    ctx.progress("solve", 2, 4)
    assert ctx.wait(lambda: release.wait(600)) is True, "no event came while it ran"
    assert [(e.step, e.total) for e in events[1:]] == [(2, 4)] * 3

    stuck, asked = threading.Event(), []
    ctx = FitContext(on_event=lambda e: asked.append(e), should_stop=lambda: len(asked) > 1)
    ctx.stage("solve", 1)
    with pytest.raises(Cancelled):
        ctx.wait(lambda: stuck.wait(600))  # never set before the cancel lands
    assert not stuck.is_set()
    with pytest.raises(Cancelled):  # the call left behind stops at its next check
        ctx.check()
    stuck.set()
    with pytest.raises(ValueError, match="carried"):
        FitContext().wait(lambda: (_ for _ in ()).throw(ValueError("carried")))


def test_a_stage_of_unknown_length_ends_on_its_last_step():
    """AIM's rounds have no known total: throttling dropped the last round's event, so the
    page's last figure for the stage said 84 % of its budget spent where all of it was."""
    events = []
    ctx = FitContext(on_event=events.append, min_interval=3600)  # every later step throttled
    ctx.stage("measure")
    for step in (1, 2, 3):
        ctx.progress("measure", step, None, budget_spent=step / 3)
    ctx.stage("estimate", 1)
    steps = [(e.step, e.metrics["budget_spent"]) for e in events if isinstance(e, Progress)]
    assert steps == [(1, 1 / 3), (3, 1.0)]
    assert isinstance(events[-1], StageStarted) and events[-1].stage == "estimate"


def test_a_chunk_counting_for_long_keeps_its_stage_alive_and_cancels_at_once():
    """A counting pass over a chunk of wide workloads (Private-GSD's answers on 20,000
    flights: 2 s) said nothing and heard no cancel until the chunk was counted."""
    import threading

    import pandas as pd

    from synth.source import Chunks

    events, cancel, release = [], threading.Event(), threading.Event()
    ctx = FitContext(on_event=events.append, should_stop=cancel.is_set)

    def counter(frame):
        for _ in range(300):  # until the stage's last step is repeated, 30 s at most
            if sum(isinstance(e, Progress) for e in events) >= 2:
                break
            release.wait(0.1)
        cancel.set()
        assert release.wait(60), "the cancel did not land while the chunk counted"
        return [np.zeros(1)]

    with pytest.raises(Cancelled):
        Chunks.of_frame(pd.DataFrame({"a": [1.0, 2.0]})).reduce(counter, ctx, "answers", "")
    release.set()
    repeats = [(e.stage, e.step) for e in events if isinstance(e, Progress)]
    assert repeats[:2] == [("answers", 0)] * 2, "the stage was silent while the chunk counted"


def test_a_fit_loads_its_libraries_beside_its_thread():
    """In a fresh interpreter OpenDP, JAX and mbi take seconds to import: imported where the
    first noise was drawn or the model built, they left a stage silent and deaf to a cancel
    for up to 3.6 s (AIM on the census sample). A fit loads them in ``ctx.wait``."""
    import subprocess
    import sys
    import textwrap

    spy = textwrap.dedent("""
        import importlib.abc, json, sys, threading
        seen = {}
        class Spy(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path, target=None):
                if name in ("opendp", "jax", "mbi"):
                    seen.setdefault(name, threading.current_thread().name)
        sys.meta_path.insert(0, Spy())
        from synth.data import load_sample
        from synth.methods import make
        from synth.privacy.budget import Budget
        table, schema = load_sample()
        make("mst", {"iterations": 5}).fit(table.head(300), schema, Budget(1.0, 1e-6))
        print(json.dumps(seen))
    """)
    done = subprocess.run([sys.executable, "-c", spy], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.splitlines()[-1]) == dict.fromkeys(
        ("opendp", "jax", "mbi"), "synth wait")


def test_a_run_whose_comparison_was_cancelled_reads_back_from_the_store(sample, tmp_path):
    """The auditor's finding: a release kept after a cancel in compare (its scores say so
    in words) read back as an error, and the app left the paid-for run out after a restart."""
    from synth.account import Store, TableAccount
    from synth.store import RunStore

    table, schema = sample
    account = TableAccount.of(table, "census.csv", Store(tmp_path / "account.sqlite"))
    store = RunStore(tmp_path / "runs.sqlite")
    asked = []
    ctx = FitContext(on_event=lambda e: asked.append(True) if isinstance(e, StageStarted)
                     and e.stage == "compare" else None, should_stop=lambda: bool(asked))
    planned = Run("independent", schema, 1.0, 1e-6, account=account, store=store)
    made = planned(table, schema, table.iloc[:500], ctx)
    back = RunRecord.read(store.get(planned.entry.id))
    assert "cancelled" in back.scores["error"] and len(back.synthetic) == len(made.synthetic)


def test_a_table_whose_bounds_are_learned_is_scored_by_its_release():
    """A bank-like table declares its categories and learns every bound: its 'pdays' is
    blank for most clients (a missing indicator), which only a column with bounds can
    encode. The tree is trained and tested on the release's learned bounds, so it scores
    instead of failing (it failed on the declared schema, which has no bounds)."""
    from synth.schema import Schema

    from .conftest import script

    bank = script("make_bank_data")
    table, schema = bank.generate(6000, 0), Schema.from_dict(bank.categories_public())
    assert schema["pdays"].lower is None and table["pdays"].isna().any()
    train, test = split(table, schema)
    record = run(train, schema, "independent", 4.0, test=test)
    assert "error" not in record.scores, record.scores["error"]
    assert 0.5 < record.scores["accuracy"] <= 1
