"""The marginal primitive: cells are a row-major bijection, counts match pandas and agree
across backends, measurements and selections have the noise their events state."""

import itertools
import math

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from synth.errors import SchemaError
from synth.marginals import (
    cell_index,
    marginal,
    measure,
    measurement_event,
    select,
    selection_event,
)
from synth.privacy.audit import epsilon_lower_bound, event_counts
from synth.privacy.mechanisms import replayable_noise


@st.composite
def tables(draw):
    """Random codes over 1–4 columns of 1–5 values, and a column tuple of them."""
    sizes = np.array(draw(st.lists(st.integers(1, 5), min_size=1, max_size=4)))
    n = draw(st.integers(0, 60))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    codes = np.column_stack([rng.integers(0, s, n) for s in sizes]).reshape(n, len(sizes))
    columns = draw(st.permutations(range(len(sizes))))
    k = draw(st.integers(1, len(sizes)))
    return codes, sizes, tuple(columns[:k])


@settings(max_examples=60, deadline=None)
@given(tables())
def test_marginal_counts_equal_a_pandas_group_count(table):
    codes, sizes, columns = table
    counts = marginal(codes, sizes, columns)
    assert counts.dtype.kind == "i"
    assert len(counts) == math.prod(sizes[list(columns)])
    frame = pd.DataFrame(codes[:, list(columns)], columns=list(columns))
    expected = frame.groupby(list(columns)).size()
    table = counts.reshape(sizes[list(columns)])
    for key, count in expected.items():
        key = key if isinstance(key, tuple) else (key,)
        assert table[key] == count
    assert counts.sum() == len(codes)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 5), min_size=1, max_size=4))
def test_cells_are_a_row_major_bijection(sizes):
    sizes = np.array(sizes)
    every = np.array(list(itertools.product(*(range(s) for s in sizes)))).reshape(-1, len(sizes))
    cells = cell_index(every, sizes)
    assert cells.dtype == np.int64
    assert np.array_equal(cells, np.arange(math.prod(sizes)))  # product order is row-major
    assert np.array_equal(np.ravel_multi_index(every.T, sizes), cells)


def test_weights_and_per_slot_sizes():
    codes = np.array([[0, 1], [1, 2], [1, 2]])
    sizes = np.array([2, 3])
    assert marginal(codes, sizes, weights=np.array([0.5, 1.0, 2.0])).tolist() == [
        0, 0.5, 0, 0, 0, 3.0]
    assert marginal(codes, sizes, (1,)).tolist() == [0, 1, 2]
    # one marginal per leading index: sizes broadcast against (n, slots, k) codes
    slots = np.stack([codes, codes[:, ::-1]], axis=1)
    got = cell_index(slots, np.array([[2, 3], [3, 2]]))
    assert got.tolist() == [[1, 2], [5, 5], [5, 5]]


def test_a_marginal_too_large_to_index_is_refused():
    with pytest.raises(SchemaError, match="too large to count"):  # 3^64 cells: int64 wraps
        cell_index(np.zeros((2, 64), dtype=int), np.full(64, 3))


def test_selection_round_audit():
    """One selection: on neighbouring score vectors (each score moves by ≤ 1/n) the picks'
    frequencies stay within e^ε₀, ε₀ = √(8ρ); four times ρ (half the noise) is caught."""
    trials, k, n, rho = 40_000, 10, 100, 1 / 8  # ε₀ = 1
    d = np.zeros(k)
    d2 = np.full(k, -1 / n)
    d2[0] = 1 / n

    def bound(r):
        event = selection_event(n, r, 1)
        a = np.array([select(d, event)[0] for _ in range(trials)])
        b = np.array([select(d2, event)[0] for _ in range(trials)])
        events = np.arange(k)
        return epsilon_lower_bound(event_counts(a, events), event_counts(b, events), trials)

    assert selection_event(n, rho, 1).epsilon == pytest.approx(1.0)
    assert bound(rho) <= math.sqrt(8 * rho)  # OpenDP's sampler, as the fit runs it
    with replayable_noise(3):  # the audit's power: numpy's Gumbel with half the noise
        assert bound(4 * rho) > 1.3 * math.sqrt(8 * rho)


def test_measurement_noise_scale():
    rho, sens = 0.02, math.sqrt(10) / 1000
    event = measurement_event(sens, rho)
    assert event.rho == pytest.approx(rho)
    noisy = measure(np.full(100_000, 0.5), event)
    sigma = sens / math.sqrt(2 * rho)
    assert noisy.std() == pytest.approx(sigma, rel=0.03)
    assert noisy.mean() == pytest.approx(0.5, abs=4 * sigma / math.sqrt(100_000))


# ---- where the table lies: every backend counts the same ------------------------------------


@pytest.fixture(scope="module")
def parquet_folder(sample, tmp_path_factory):
    """The bundled sample as a folder of three Parquet files; an integer column holds a null
    in one file only (pandas reads the whole column as floats, so every part must too)."""
    from dataclasses import replace

    from synth.schema import Schema

    table, schema = sample
    schema = Schema([replace(c, missing="indicator") if c.name == "age" else c
                     for c in schema], target=schema.target)
    table = table.copy()
    table["age"] = table["age"].astype("int64")
    folder = tmp_path_factory.mktemp("parts")
    cuts = [0, 1700, 3300, len(table)]
    for i, (a, b) in enumerate(itertools.pairwise(cuts)):
        part = pa.Table.from_pandas(table.iloc[a:b], preserve_index=False)
        if i == 1:
            ages = table["age"].iloc[a:b].astype(object).tolist()
            ages[5] = None
            part = part.set_column(part.schema.get_field_index("age"), "age",
                                   pa.array(ages, type=pa.int64()))
        pq.write_table(part.replace_schema_metadata(None), folder / f"part-{i}.parquet")
    return folder, schema


def counters(schema):
    """Independent's 1-way histograms and GSD's answers (categorical pairs, range marginals
    and halfspaces), as each method counts a chunk."""
    from synth.encoding import Discretizer, Space
    from synth.methods.gsd.queries import build, parse_classes

    disc, space = Discretizer(schema, bins=16, exact_integers=128), Space(schema)
    classes = build(space, parse_classes("cat2+bt+halfspace"), np.random.default_rng(0),
                    random_queries=50)

    def counter(frame):
        codes, x = disc.codes(frame), space.encode(frame)
        return [*(marginal(codes, disc.sizes, (j,)) for j in range(len(schema))),
                *(q.counts(x) for q in classes)]

    return counter


@pytest.fixture(scope="module")
def scheduler():
    """The address of a local Dask cluster of 2 single-threaded worker processes."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=None) as cluster:
        yield cluster.scheduler_address


def test_memory_duckdb_and_a_dask_cluster_count_the_same(parquet_folder, scheduler):
    """One counter over the same table: in memory, streamed by DuckDB in chunks, and on a
    2-worker local Dask cluster, the sums are equal exactly (nothing approximately)."""
    from synth import missing
    from synth.marginals import count
    from synth.methods import FitContext
    from synth.schema import prepare
    from synth.source import Chunks, TableFile

    folder, schema = parquet_folder
    counter = counters(missing.model_schema(schema))  # a chunk is put in model space
    whole = pd.concat([pd.read_parquet(f) for f in sorted(folder.iterdir())],
                      ignore_index=True)
    in_memory = count(Chunks.of_frame(missing.encode(prepare(whole, schema), schema)),
                      counter, FitContext(), "count", "")
    streamed = count(Chunks.of_file(TableFile(folder, chunk_rows=700), schema), counter,
                     FitContext(), "count", "")
    file = TableFile(folder, scheduler=scheduler)
    events = []
    clustered = count(Chunks.of_file(file, schema), counter,
                      FitContext(on_event=events.append, min_interval=0), "count", "")
    assert len(in_memory) == len(streamed) == len(clustered) > len(schema)
    for a, b, c in zip(in_memory, streamed, clustered, strict=True):
        assert np.array_equal(a, b) and np.array_equal(a, c)
    assert in_memory[0].sum() == len(whole) == 5000  # a 1-way histogram counts every row
    assert [e.step for e in events if hasattr(e, "step")][-1] == 5000  # progress in rows


def test_a_cluster_refuses_a_csv_and_an_address_with_no_scheduler(sample, tmp_path,
                                                                  monkeypatch):
    from synth import cluster
    from synth.errors import DataError, ParameterError
    from synth.marginals import count
    from synth.methods import FitContext
    from synth.source import Chunks, TableFile

    table, schema = sample
    table.to_csv(tmp_path / "t.csv", index=False)
    csv = TableFile(tmp_path / "t.csv", scheduler="tcp://127.0.0.1:9")
    with pytest.raises(ParameterError, match="counts Parquet"):
        count(Chunks.of_file(csv, schema), counters(schema), FitContext(), "count", "")
    table.to_parquet(tmp_path / "t.parquet", index=False)
    nobody = TableFile(tmp_path / "t.parquet", scheduler="tcp://127.0.0.1:9")
    monkeypatch.setattr(cluster, "CONNECT", "2s")  # nothing listens on port 9
    with pytest.raises(DataError, match="no Dask scheduler answers"):
        count(Chunks.of_file(nobody, schema), counters(schema), FitContext(), "count", "")


@pytest.mark.parametrize("method", ["independent", "gsd"])
def test_a_fit_counted_on_a_cluster_is_the_fit_streamed_here(parquet_folder, scheduler,
                                                            method):
    """With the same noise and seed, a fit whose counting ran on the cluster releases the same
    table and ledger as one that streamed the file through DuckDB."""
    from synth.methods import FitContext, make
    from synth.privacy.budget import Budget
    from synth.source import TableFile

    folder, schema = parquet_folder
    params = {"rounds": 2, "rows": 100, "max_generations": 30} if method == "gsd" else {}
    releases = []
    for where in (None, scheduler):
        with replayable_noise(7):
            model = make(method, params).fit(TableFile(folder, scheduler=where), schema,
                                             Budget(1.0, 1e-5), FitContext(postprocessing_seed=1))
        releases.append((model.sample(), [e.event for e in model.ledger_.entries]))
    pd.testing.assert_frame_equal(*(r[0] for r in releases))
    assert releases[0][1] == releases[1][1]


@pytest.mark.parametrize(("lower", "upper", "exact", "finest"), [
    (8, 76, 128, 69),   # 69 whole values: one interval each at the finest level
    (8, 76, 0, 34),     # exactness off: 2^5 intervals, and each bound a cell of its own
    (1, 16, 128, 32),   # 16 values already fit 2^5 intervals
    (0, 500, 128, 34),  # 501 values: too many for an interval each
])
def test_the_finest_level_gives_a_whole_number_an_interval_per_value(lower, upper, exact,
                                                                      finest):
    """GSD's range marginals at ``exact``: every value of a whole-number column lands in its
    own cell of the finest level (a 40-hour spike is not mixed with 41), and coarser levels
    stay binary. Where an interval holds several values, each bound has a cell to itself
    (no capital gain is not mixed with small gains)."""
    from synth.encoding import Space
    from synth.marginals import Marginals
    from synth.schema import Column, Schema

    schema = Schema((Column("n", "numeric", lower, upper, public=True, integer=True),))
    space = Space(schema)
    q = Marginals(space, [(0,)], levels=5, exact=exact)
    assert [s.bins[0] for s in q.slots] == [2, 4, 8, 16, finest]
    values = pd.DataFrame({"n": np.arange(lower, upper + 1, dtype=float)})
    cells = q.cells(space.encode(values), np.array([4]))[:, 0]
    if finest == upper - lower + 1:
        assert len(np.unique(cells)) == len(values)  # a bijection of values and cells
    for bound in (cells[0], cells[-1]):
        assert (cells == bound).sum() == 1, "a bound shares its cell"
    assert len(np.unique(cells)) == min(finest, len(values))  # no cell is left empty
    # a number's own at the finest level alone (GSD's num1): the same cells, one partition
    flat = Marginals(space, [(0,)], levels=5, exact=exact, tree=False)
    assert [s.bins[0] for s in flat.slots] == [finest]
    assert list(flat.sensitivity) == [math.sqrt(2)]
    assert np.array_equal(flat.cells(space.encode(values))[:, 0], cells - q.offsets[4])


@pytest.mark.parametrize(("lower", "upper", "bins"), [(1, 99, 20), (0, 7, 3), (-40, 1_000, 7)])
def test_whole_number_bins_are_named_by_the_whole_numbers_they_hold(lower, upper, bins):
    """A steward read hours binned as '[1, 2.1)': an integer column's bins are named by the
    first and last whole number each holds, together every value once, and a value drawn
    from a bin lies in its name's range."""
    from synth.encoding import Discretizer
    from synth.schema import Column, Schema

    col = Column("h", "numeric", lower=lower, upper=upper, integer=True, public=True)
    disc = Discretizer(Schema((col,)), bins=bins)
    ranges = [tuple(int(v) for v in label.replace("–", " ").replace(" to ", " ").split())
              for label in disc.labels("h")]
    held = [v for r in ranges for v in range(r[0], r[-1] + 1)]
    assert held == list(range(lower, upper + 1))
    codes = np.repeat(np.arange(len(ranges)), 50)[:, None]
    drawn = disc.decode(codes, np.random.default_rng(0))["h"].to_numpy()
    assert all(ranges[c][0] <= v <= ranges[c][-1] for c, v in zip(codes[:, 0], drawn,
                                                                   strict=True))


def test_a_value_outside_the_categories_is_refused_without_being_quoted():
    """An error may be stored and shown: it names the column, never a private value."""
    from synth.encoding import Discretizer
    from synth.schema import Column, Schema

    col = Column("city", "categorical", categories=("Leeds", "York"), public=True)
    with pytest.raises(SchemaError, match="'city'") as refused:
        Discretizer(Schema((col,))).codes(pd.DataFrame({"city": ["York", "Ilkley-1961"]}))
    assert "Ilkley" not in str(refused.value)


@settings(max_examples=150, deadline=None)
@given(steps=st.integers(0, 3000), levels=st.integers(1, 8), exact=st.sampled_from([0, 128]))
def test_a_draw_within_an_interval_stays_in_its_cell_and_reaches_every_value_there(
        steps, levels, exact):
    """What a release draws inside a cell (Private-GSD's spreading, DP-Select's support rows)
    is a value of that cell: every whole number there from the first (u = 0) to the last
    (u → 1), never a bound where the bounds have cells of their own, and only where the cell
    holds a whole number at all; a continuous draw stays in its cell at both ends of u."""
    from synth.marginals import _bins, bounds_apart, draw_in_cell, interval_codes

    apart = bounds_apart(steps, levels, exact)
    inner = _bins(steps, levels, levels, exact)
    bins = inner + 2 * apart
    if steps:
        values = np.arange(steps + 1) / steps
        codes = interval_codes(values, inner, apart)
        assert set(codes) <= set(range(bins))
        for code in range(bins):
            mine = values[codes == code]
            u = np.r_[0.0, np.random.default_rng(code).random(64), np.nextafter(1.0, 0.0)]
            drawn = draw_in_cell(np.full(len(u), code), inner, apart, steps, u)
            if len(mine) == 0:
                assert np.isnan(drawn).all(), code
                continue
            assert set(drawn) <= set(mine), code
            assert drawn[0] == mine[0] and drawn[-1] == mine[-1], code
    else:
        u = np.random.default_rng(levels).random((bins, 16))
        u[:, 0], u[:, -1] = 0.0, np.nextafter(1.0, 0.0)
        codes = np.repeat(np.arange(bins), 16).reshape(bins, 16)
        drawn = draw_in_cell(codes, inner, apart, 0, u)
        np.testing.assert_array_equal(interval_codes(drawn, inner, apart), codes)
        if apart:
            assert (drawn[1:-1] > 0).all() and (drawn[1:-1] < 1).all()
