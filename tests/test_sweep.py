"""Sweeps: grid expansion, the same grid on any workers (same runs and ledgers; fresh noise, so
the figures agree as statistics, not bytes), and stopping early."""

import contextlib
import subprocess
import sys

import pandas as pd
import pytest

from synth.data import sample_paths
from synth.errors import ParameterError
from synth.methods import make
from synth.protocol import protocol_split
from synth.sweep import COLUMNS, DEMO, PRESETS, grid, sweep

from .conftest import REPO


def test_grid_expands_methods_epsilons_splits_values_and_seeds():
    jobs = grid(["independent", "dpselect"], [0.5, 2], seeds=3, param="sections",
                values=[1, 5], shares=[0.2, 0.5], fixed={"dpselect": {"gan__epochs": 1}})
    independent = [j for j in jobs if j.method == "independent"]
    select = [j for j in jobs if j.method == "dpselect"]
    assert len(independent) == 2 * 3  # no 'sections', no share parameter: ε × seeds
    assert len(select) == 2 * 2 * 2 * 3  # ε × share × value × seed
    assert {j.params["sections"] for j in select} == {1, 5}
    assert {j.params["gan_share"] for j in select} == {0.2, 0.5}
    assert all(j.params["gan__epochs"] == 1 and j.param == "sections" for j in select)
    assert {j.seed for j in jobs} == {0, 1, 2} and all(j.param is None for j in independent)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"methods": ["nope"]}, "unknown method 'nope'"),
    ({"methods": []}, "at least one method"),
    ({"param": "bins"}, "give the values of the swept parameter 'bins'"),
])
def test_bad_grids_are_refused_by_name(kwargs, message):
    with pytest.raises(ParameterError, match=message):
        grid(**{"methods": ["independent"], "epsilons": [1.0], **kwargs})


PLANNED = ["method", "epsilon", "seed", "param", "value", "share", "ledger_epsilon",
           "ledger_delta"]  # what a run is and what it spends: the same on every worker


def test_same_grid_same_runs_on_two_workers(sample):
    table, schema = sample
    train, _, test = protocol_split(table)
    jobs = grid(["independent"], [0.5, 2.0], seeds=2, param="bins", values=[4, 16])
    seen = []
    first = sweep(jobs, train, test, schema, 1e-6, n_jobs=2,
                  on_row=lambda done, total, row: seen.append((done, total)))
    again = sweep(jobs, train, test, schema, 1e-6, n_jobs=1)
    assert list(first.columns) == list(COLUMNS) and len(first) == len(jobs) == 8
    pd.testing.assert_frame_equal(first[PLANNED], again[PLANNED])
    assert not first["tvd1"].equals(again["tvd1"])  # fresh noise in every run
    assert (first["tvd1"] - again["tvd1"]).abs().max() < 0.05  # the same distribution
    assert sorted(seen) == [(i, 8) for i in range(1, 9)]
    assert (first["ledger_epsilon"] <= first["epsilon"] * (1 + 1e-9)).all()
    assert first["accuracy"].notna().all() and (first["tvd2"] > 0).all()
    # more budget, better marginals: the median TVD1 at ε = 2 is below that at ε = 0.5
    by_eps = first.groupby("epsilon")["tvd1"].median()
    assert by_eps[2.0] < by_eps[0.5]


def test_stopping_keeps_the_finished_rows(sample):
    table, schema = sample
    train, _, test = protocol_split(table)
    jobs = grid(["independent"], [1.0], seeds=6)
    done = []
    rows = sweep(jobs, train, test, schema, 1e-6, n_jobs=1,
                 on_row=lambda i, total, row: done.append(i), should_stop=lambda: len(done) >= 2)
    assert len(rows) == 2 and list(rows["seed"]) == sorted(rows["seed"])


@contextlib.contextmanager
def dask_cluster():
    """joblib's Dask backend on a local cluster of 2 worker processes; yields its task
    stream (what ran on the workers)."""
    distributed = pytest.importorskip("distributed")
    from joblib import parallel_config

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client, parallel_config(backend="dask"), \
            distributed.get_task_stream(client) as tasks:
        yield tasks


def test_the_same_sweep_runs_on_a_local_dask_cluster(sample):
    """joblib's Dask backend: the workers are Dask's, the table is the same."""
    table, schema = sample
    train, _, test = protocol_split(table)
    jobs = grid(["independent"], [1.0], seeds=2, param="bins", values=[4, 16])
    local = sweep(jobs, train, test, schema, 1e-6, n_jobs=1)
    with dask_cluster() as tasks:
        remote = sweep(jobs, train, test, schema, 1e-6)
    assert len(tasks.data) >= 1  # the runs went through Dask's workers
    pd.testing.assert_frame_equal(local[PLANNED], remote[PLANNED])
    assert remote["tvd1"].notna().all()


def test_dask_workers_read_a_table_file_themselves(sample, tmp_path):
    """A sweep over a table read where it lies sends each job its path, not its rows: the
    job's table pickles to the same few bytes at any size, and the runs match in-memory
    ones in everything planned."""
    import pickle

    from synth.source import TableFile

    table, schema = sample
    train, _, test = protocol_split(table)
    train.to_parquet(tmp_path / "train.parquet", index=False)
    pd.concat([train] * 20).to_parquet(tmp_path / "large.parquet", index=False)
    file = TableFile(tmp_path / "train.parquet")
    small, big = (len(pickle.dumps(TableFile(tmp_path / n))) for n in ("train.parquet",
                                                                      "large.parquet"))
    assert max(small, big) < 4096 and abs(small - big) < 16  # a path and a query
    assert len(pickle.dumps(train)) > 100 * small  # the rows themselves
    jobs = grid(["independent", "gsd"], [1.0], seeds=1, fixed={"gsd": {"rounds": 2,
                                                                     "max_generations": 100}})
    local = sweep(jobs, train, test, schema, 1e-6, n_jobs=1)
    with dask_cluster() as tasks:
        remote = sweep(jobs, file, test, schema, 1e-6)
    assert len(tasks.data) >= 1
    assert remote["error"].isna().all(), remote["error"].tolist()
    pd.testing.assert_frame_equal(local[PLANNED], remote[PLANNED])
    assert remote["tvd1"].notna().all() and remote["accuracy"].notna().all()


def test_a_grid_sweeps_the_rows_per_unit_or_refuses_by_name():
    """Sweeping k makes one job per k, each protecting the unit at that k; k and another
    parameter at once, or k without a unit column, are refused by name."""
    from synth.privacy.unit import PrivacyUnit
    from synth.sweep import UNIT_K

    jobs = grid(["independent", "gsd"], [1.0], 2, unit=PrivacyUnit("person", 3), ks=[1, 5])
    assert len(jobs) == 2 * 2 * 2
    assert sorted({j.unit.max_rows for j in jobs}) == [1, 5]
    assert {j.unit.column for j in jobs} == {"person"} and {j.param for j in jobs} == {UNIT_K}
    assert all(j.unit == PrivacyUnit("person", 3) for j in grid(
        ["independent"], [1.0], 1, unit=PrivacyUnit("person", 3)))
    with pytest.raises(ParameterError, match="not both"):
        grid(["gsd"], [1.0], 1, "rows", [10], unit=PrivacyUnit("person", 3), ks=[1])
    with pytest.raises(ParameterError, match="privacy-unit column"):
        grid(["gsd"], [1.0], 1, ks=[2])


@pytest.mark.parametrize("demo", [False, True])
@pytest.mark.parametrize("name", list(PRESETS))
def test_every_presets_runs_pass_their_methods_checks(name, demo):
    """Every job of a preset's grid, built as the CLI and the app build it (with and without
    the demo settings), passes its method's own parameter checks for a table of the bundled
    sample's size, and sets each value the preset names."""
    preset = PRESETS[name]
    jobs = grid(preset.methods, preset.epsilons, 1, preset.param, preset.values, preset.shares,
                DEMO if demo else None)
    for job in jobs:
        make(job.method, job.params).check_params(4000)
    if preset.param is not None:
        for method in preset.methods:
            swept = {j.params[preset.param] for j in jobs if j.method == method}
            assert swept == set(preset.values)


def test_the_sections_preset_runs(tmp_path):
    """`synth sweep --preset sections` on a small table: all its runs finish, one per number
    of sections and ε, within the budget."""
    table, schema = sample_paths()
    pd.read_csv(table).head(300).to_csv(tmp_path / "t.csv", index=False)
    res = subprocess.run(
        [sys.executable, "-m", "synth", "sweep", tmp_path / "t.csv", "--schema", schema,
         "--preset", "sections", "--seeds", "1", "--demo", "--jobs", "1", "--out",
         tmp_path / "sweep.csv", "--quiet"], capture_output=True, text=True, cwd=REPO,
        timeout=600)
    assert res.returncode == 0, res.stderr
    rows = pd.read_csv(tmp_path / "sweep.csv")
    assert rows["error"].isna().all(), rows["error"].tolist()
    preset = PRESETS["sections"]
    assert len(rows) == len(preset.epsilons) * len(preset.values)
    assert set(rows["value"]) == set(preset.values) and set(rows["param"]) == {"sections"}
    assert (rows["ledger_epsilon"] <= rows["epsilon"] * (1 + 1e-9)).all()


def test_a_sweep_is_recorded_with_its_rows_and_a_stopped_one_as_cancelled(sample, tmp_path):
    """The run store records a sweep as it starts and keeps its rows (sweep.csv) as it ends:
    finished, or cancelled with the runs that finished."""
    from synth.account import Store, TableAccount
    from synth.store import CANCELLED, FINISHED, SWEEP, RunStore
    from synth.sweep import recorded

    table, schema = sample
    train, _, test = protocol_split(table)
    store = RunStore(tmp_path / "runs.sqlite")
    account = TableAccount.of(table, "t", Store(tmp_path / "account.sqlite"))
    whole = sweep(grid(["independent"], [0.5, 2.0], seeds=1), train, test, schema, 1e-6,
                  n_jobs=1, account=account, store=store, described={"grid": "g"})
    done = []
    part = sweep(grid(["independent"], [1.0], seeds=4), train, test, schema, 1e-6, n_jobs=1,
                 on_row=lambda i, total, row: done.append(i),
                 should_stop=lambda: len(done) >= 2, account=account, store=store)
    stopped, finished = store.list(kind=SWEEP)  # newest first
    assert (finished.status, finished.configuration["grid"]) == (FINISHED, "g")
    assert finished.epsilon == 2.5 and finished.summary == {"rows": 2, "failed": 0}
    assert recorded(finished).to_csv(index=False) == whole.to_csv(index=False)
    assert stopped.status == CANCELLED and stopped.summary["rows"] == len(part) == 2
    assert recorded(stopped).to_csv(index=False) == part.to_csv(index=False)


def test_a_swept_parameter_reaches_a_nested_methods_own():
    """DP-Select's GAN is nested (its epochs are gan__epochs): sweeping epochs over DP-GAN
    and DP-Select sets both, and each row says the value it ran with."""
    jobs = grid(["dpgan", "dpselect", "mst"], [1.0], seeds=1, param="epochs", values=[2, 3])
    runs = {(j.method, j.params.get("epochs", j.params.get("gan__epochs"))) for j in jobs}
    assert runs == {("dpgan", 2), ("dpgan", 3), ("dpselect", 2), ("dpselect", 3),
                    ("mst", None)}
    assert all(j.param == "epochs" for j in jobs if j.method != "mst")
