"""Tables read where they lie, in chunks: the same cells and the same counts as in memory,
exactly, and a bad file refused before anything is spent."""

import os
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from synth.data import fingerprint, read_table
from synth.encoding import Space
from synth.errors import DataError, SchemaError
from synth.methods import FitContext, Progress, StageStarted, make
from synth.methods.gsd.method import GSD
from synth.methods.gsd.queries import build, parse_classes
from synth.privacy.budget import Budget
from synth.privacy.domains import domain_counts
from synth.schema import infer_schema, prepare
from synth.source import READ, Chunks, TableFile, read_whole

from .conftest import changes

BUDGET = Budget(1.0, 1e-5)


@pytest.fixture
def sample_file(sample, tmp_path):
    """The bundled sample as a CSV on disk, read 700 rows at a time (5000 rows: 8 chunks)."""
    table, schema = sample
    path = tmp_path / "sample.csv"
    table.to_csv(path, index=False)
    return TableFile(path, chunk_rows=700), read_table(path), schema


def test_csv_chunks_hold_the_cells_read_table_gives(tmp_path):
    path = tmp_path / "odd.csv"
    path.write_text('x; y ;z\n 1;"a;b";NA\n2 ; c;\n;"d ""q""";7\n3;e;n/a\n 4 ;;None\n')
    file = TableFile(path, chunk_rows=2)
    whole = read_table(path)
    assert file.columns == ["x", "y", "z"] and len(file) == 5
    assert [len(c) for c in file.chunks()] == [2, 2, 1]
    assert read_whole(file).equals(whole)  # stripped cells, missing markers as NaN, quotes
    assert fingerprint(file) == fingerprint(whole)


def test_parquet_chunks_keep_the_dtypes_pandas_reads(tmp_path):
    frame = pd.DataFrame({"i": pd.array([1, 2, None, 4, 5, 6], dtype="Int64"),
                          "j": [1, 2, 3, 4, 5, 6], "s": ["a", None, "b", "c", "d", "e"],
                          "f": [0.5, 1, 2, 3, 4, np.nan]})
    frame.to_parquet(tmp_path / "p.parquet", index=False)
    (tmp_path / "ds").mkdir()
    frame.iloc[:3].to_parquet(tmp_path / "ds" / "a.parquet", index=False)
    frame.iloc[3:].to_parquet(tmp_path / "ds" / "b.parquet", index=False)
    whole = read_table(tmp_path / "p.parquet")
    for path in (tmp_path / "p.parquet", tmp_path / "ds"):
        file = TableFile(path, chunk_rows=2)
        assert len(file) == 6
        assert read_whole(file).equals(whole), path.name
        assert fingerprint(file) == fingerprint(whole)
    # written by another tool: an integer column with a null is read as floats by pandas,
    # in every chunk, not only in those that hold the null
    pq.write_table(pa.table({"i": [1, 2, None, 4], "s": ["a", "b", "c", "d"]}),
                   tmp_path / "plain.parquet")
    file = TableFile(tmp_path / "plain.parquet", chunk_rows=2)
    assert all(c["i"].dtype == np.float64 for c in file.chunks())
    assert read_whole(file).equals(read_table(tmp_path / "plain.parquet"))


def test_types_that_depend_on_the_reader_or_a_null_match_the_whole_read(tmp_path):
    """Found by an audit: a table read in chunks must have the fingerprint of the same file
    read whole, or switching how it is read would open a second privacy account."""
    import datetime

    days = [datetime.datetime(2020, 1, d) for d in range(1, 7)]
    pq.write_table(pa.table({
        "ms": pa.array(days, pa.timestamp("ms")),
        "tz": pa.array(days, pa.timestamp("us", tz="Europe/Paris")),
        "flag": pa.array([True, False, True, None, False, True]),  # a null in one chunk
        "n": pa.array([1, 2, 3, 4, None, 6], pa.int8())}), tmp_path / "types.parquet")
    pd.DataFrame({"flag": [True, None, True, False, True, False],
                  "t": pd.date_range("2020-01-01", periods=6, tz="UTC")}
                 ).to_parquet(tmp_path / "pandas.parquet")
    for name in ("types.parquet", "pandas.parquet"):
        whole = read_table(tmp_path / name)
        file = TableFile(tmp_path / name, chunk_rows=2)
        assert read_whole(file).equals(whole), name
        assert fingerprint(file) == fingerprint(whole), name


def test_what_duckdb_would_misread_is_refused(tmp_path):
    pd.DataFrame({"Age": [1, 2], "age": [3, 4]}).to_parquet(tmp_path / "case.parquet")
    (tmp_path / "case.csv").write_text("Age,age\n1,2\n")
    for name in ("case.parquet", "case.csv"):
        with pytest.raises(DataError, match=r"\['Age', 'age'\] differ only in case"):
            TableFile(tmp_path / name)
    (tmp_path / "d1.csv").write_text("a,b\n1,2\n")  # what DuckDB would read instead
    (tmp_path / "d[1].csv").write_text("a,b\n3,4\n")
    with pytest.raises(DataError, match=r"reads \* \? \[ \] \{ \} in a path as a pattern"):
        TableFile(tmp_path / "d[1].csv")
    (tmp_path / "mixed").mkdir()
    pq.write_table(pa.table({"a": pa.array([1, 2], pa.int64())}), tmp_path / "mixed/0.parquet")
    pq.write_table(pa.table({"a": pa.array([1.5])}), tmp_path / "mixed/1.parquet")
    with pytest.raises(DataError, match=r"other columns or types than '0\.parquet'"):
        TableFile(tmp_path / "mixed")


def test_a_file_changed_between_passes_is_refused(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("a,b\n1,x\n2,y\n")
    file = TableFile(path)
    assert len(read_whole(file)) == 2
    path.write_text("a,b\n1,x\n2,z\n")  # the same rows, another value
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
    with pytest.raises(DataError, match="changed while it was read"):
        read_whole(file)


def test_a_bad_file_is_refused_in_one_line(tmp_path):
    (tmp_path / "ragged.csv").write_text("x,y\n1,2\nsecret-value\n")
    with pytest.raises(DataError, match=r"'ragged\.csv' cannot be read.*Line: 3") as refused:
        list(TableFile(tmp_path / "ragged.csv").chunks())
    assert "secret-value" not in str(refused.value)  # a message can reach a ledger
    with pytest.raises(DataError, match="no such file or folder"):
        TableFile(tmp_path / "absent.csv")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match=r"folder without \.parquet files"):
        TableFile(tmp_path / "empty")
    with pytest.raises(DataError, match=r"has no columns \['w'\]"):
        list(TableFile(tmp_path / "ragged.csv").chunks(["w"]))


def test_chunked_counts_equal_the_counts_in_memory_exactly(sample_file):
    file, whole, schema = sample_file
    prepared = prepare(whole, schema)
    # domain learning's counts: per category, and over the grid of signed edges
    learned = list(infer_schema(whole, target="income"))
    chunked = domain_counts(Chunks.of_file(file, infer_schema(whole), encode=False), learned)
    in_memory = domain_counts([prepare(whole, infer_schema(whole))], learned)
    for name, counts in in_memory.items():
        got = chunked[name]
        if isinstance(counts, pd.Series):
            assert got.sort_index().equals(counts.sort_index().astype(np.int64)), name
        else:  # a number's grid counts and its count of blanks
            assert np.array_equal(got[0], counts[0]) and got[1] == counts[1], name
    # independent marginals' histograms
    model = make("independent")
    model.fit(whole, schema, BUDGET)  # sets the discretizer (from the public schema)
    ctx = FitContext()
    assert np.array_equal(model.histograms(Chunks.of_file(file, schema), ctx),
                          model.histograms(Chunks.of_frame(prepared), ctx))
    # GSD's query answers, marginals and halfspaces alike
    space = Space(schema)
    classes = build(space, parse_classes("cat2+bt+halfspace"), np.random.default_rng(0))
    run = SimpleNamespace(classes=classes, true=[], n=len(whole))  # what _answer reads
    GSD._answer(run, space, Chunks.of_file(file, schema), ctx)
    for q, true in zip(classes, run.true, strict=True):
        assert np.array_equal(true, q.answers(space.encode(prepared)))


@pytest.mark.parametrize("method", ["independent", "gsd"])
def test_a_fit_from_a_file_reads_it_in_chunks_with_progress(sample_file, method):
    file, _, schema = sample_file
    events = []
    params = {"rounds": 2, "max_generations": 20} if method == "gsd" else {}
    model = make(method, params).fit(file, schema, BUDGET,
                                     FitContext(on_event=events.append, min_interval=0))
    stage = "answers" if method == "gsd" else "count"
    read = [e.step for e in events if isinstance(e, Progress) and e.stage == stage]
    assert changes(read) == [*range(700, 5000, 700), 5000]  # rows read, chunk by chunk
    assert READ not in {e.stage for e in events if isinstance(e, StageStarted)}  # not loaded
    assert model.n_rows_ == 5000 and len(model.sample()) == 5000
    assert model.ledger_.total_epsilon <= 1.0 + 1e-9


@pytest.mark.parametrize("method", ["independent", "gsd", "dpgan"])
def test_a_bad_value_in_the_last_chunk_is_refused_with_nothing_spent(tmp_path, sample, method):
    table, schema = sample
    bad = table.copy()
    bad.loc[len(bad) - 1, "age"] = "old"
    bad.to_csv(tmp_path / "bad.csv", index=False)
    model = make(method)
    with pytest.raises(SchemaError, match="column 'age': 1 values are not numbers"):
        model.fit(TableFile(tmp_path / "bad.csv", chunk_rows=700), schema, BUDGET)
    assert model.ledger_.entries == []
    one = table.assign(income=table["income"].iloc[0])
    one.to_csv(tmp_path / "one.csv", index=False)
    with pytest.raises(SchemaError, match="target column 'income' has a single class"):
        model.fit(TableFile(tmp_path / "one.csv", chunk_rows=700), schema, BUDGET)
    assert model.ledger_.entries == []


def test_domains_are_learned_from_the_chunks_before_the_counts(sample_file):
    file, whole, _ = sample_file
    schema = infer_schema(whole, target="income").confirm()  # domains learned privately
    events = []
    budget = Budget(2.0, 1e-5, {"domain": 0.5, "measure": 0.5})  # 13 columns to learn
    model = make("independent").fit(file, schema, budget, FitContext(on_event=events.append))
    stages = [e.stage for e in events if isinstance(e, StageStarted)]
    assert stages == ["domain", "count", "measure"]
    assert model.schema_.releasable and model.ledger_.total_epsilon <= 2.0 + 1e-9
    assert {e.stage for e in model.ledger_.entries} == {"domain", "measure"}


def test_a_method_that_needs_rows_reads_the_file_whole(sample_file):
    file, _, schema = sample_file
    events = []
    model = make("dpselect", {"gan__epochs": 0.2, "engine": "rows", "pool_multiplier": 2}).fit(
        file, schema, BUDGET, FitContext(on_event=events.append, min_interval=0))
    read = [e.step for e in events if isinstance(e, Progress) and e.stage == READ]
    assert read[-1] == 5000 and model.n_rows_ == 5000


def test_windows_of_a_file_hold_exactly_the_rows_asked_for(sample_file, monkeypatch):
    """DP-SGD's rows from a file too large to keep: a pass takes the codes of the rows a
    window's batches drew, across chunk boundaries, as the whole table's codes would be."""
    from synth.encoding import Discretizer
    from synth.methods.dpgan import codes as module
    from synth.methods.dpgan.codes import PrivateCodes

    file, whole, schema = sample_file
    disc = Discretizer(schema)
    expected = disc.codes(prepare(whole, schema))
    ctx = FitContext()
    kept = PrivateCodes.of_chunks(Chunks.of_file(file, schema), disc.codes, len(schema), ctx)
    monkeypatch.setattr(module, "CODES", 1000)
    passes = PrivateCodes.of_chunks(Chunks.of_file(file, schema), disc.codes, len(schema), ctx)
    rows = np.unique(np.random.default_rng(0).integers(0, 5000, 900))
    rows = np.union1d(rows, [0, 699, 700, 1399, 4999])  # either side of a chunk's edge
    for codes in (kept, passes):
        assert np.array_equal(codes.take(rows), expected[rows])
    assert np.array_equal(passes.take(np.array([], dtype=np.int64)), expected[:0])
    assert passes.steps_per_window(128) == 1  # 1,000 codes: a window of one step


def test_a_window_pass_over_a_changed_table_is_refused_quoting_no_value(sample, monkeypatch):
    """Every value was checked by the first pass: one a later pass cannot read means the
    table changed, and the refusal (which may reach a sweep's row) quotes nothing of it."""
    from synth.encoding import Discretizer
    from synth.methods.dpgan import codes as module
    from synth.methods.dpgan.codes import PrivateCodes

    table, schema = sample
    bad = table.copy()
    bad["age"] = bad["age"].astype(object)
    bad.loc[0, "age"] = "secret-age"
    passes = iter([table, bad])
    disc = Discretizer(schema)
    monkeypatch.setattr(module, "CODES", 1000)
    codes = PrivateCodes.of_chunks(Chunks(len(table), lambda: [next(passes)]),
                                   lambda f: disc.codes(prepare(f, schema)), len(schema),
                                   FitContext())
    with pytest.raises(DataError, match="changed while it was read") as refused:
        codes.take(np.array([0, 1]))
    assert "secret" not in str(refused.value)


def test_dpgan_from_a_file_in_windows_is_the_fit_in_memory(sample_file, monkeypatch):
    """The file is read in chunks (never whole) and, too large to keep, once per window of
    steps; with the same noise the release is the one a fit on the table in memory gives:
    the batches, and so the mechanism, are the same."""
    from synth.methods.dpgan import codes as module
    from synth.privacy.mechanisms import replayable_noise

    file, whole, schema = sample_file
    params = {"epochs": 0.2, "batch_size": 100}
    with replayable_noise(5):
        memory = make("dpgan", params).fit(whole, schema, BUDGET,
                                           FitContext(postprocessing_seed=0))
    monkeypatch.setattr(module, "CODES", 3000)  # a window of one step: 10 passes
    events = []
    with replayable_noise(5):
        windows = make("dpgan", params).fit(file, schema, BUDGET, FitContext(
            postprocessing_seed=0, on_event=events.append, min_interval=0))
    read = [e.step for e in events if isinstance(e, Progress) and e.stage == READ]
    assert changes(read) == [*range(700, 5000, 700), 5000]  # checked chunk by chunk, once
    assert windows.ledger_.to_dict()["entries"] == memory.ledger_.to_dict()["entries"]
    pd.testing.assert_frame_equal(windows.sample(500, seed=1), memory.sample(500, seed=1))


def test_a_file_that_changes_under_a_fit_is_refused():
    chunks = Chunks(5, lambda: [pd.DataFrame({"a": [1, 2, 3, 4]})])
    with pytest.raises(DataError, match="changed while it was read: 4 rows, not the 5"):
        list(chunks)
