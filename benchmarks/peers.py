"""The peers' methods next to ours on Adult, by the measuring protocol of DESIGN.md (issue 35).

MST and AIM (on our marginal primitive, with private-pgm's estimation) beside Private-GSD and
DP-Select's measure engine: per run the wall time of the fit, peak RSS of its process, 1-way
and 2-way TVD against the train split, and the decision tree's and logistic regression's
accuracy on the test sixth; medians with min–max per (method, ε). Each run is its own
process, so peak memory is the run's own. ``--table`` runs the same on another table of
benchmarks/tables.py (the rows a run in the app synthesizes, bounds learned where the table
declares none, each person protected where it has people; utility where it has a target),
kept under ``tables``. Results merge into
benchmarks/results/peers.json run by run (a rerun of some cells keeps the others, and runs of
several tables at once each keep theirs).

    python benchmarks/peers.py --methods mst aim --epsilons 1 2 --seeds 1
    python benchmarks/peers.py                  # the issue's grid: 4 methods × 5 ε × 3 seeds
    python benchmarks/peers.py --table churn --methods mst aim --epsilons 1
    python benchmarks/peers.py --opendp         # OpenDP's own AIM and MST, ε ∈ {1, 2}, seed 0
    python benchmarks/peers.py --opendp mst     # only its MST (other results are kept)
    python benchmarks/peers.py --dask           # 10M rows counted by Dask and DuckDB

``--opendp`` runs OpenDP's AIM and MST (``opendp[mbi]``, which pins mbi 1.1 and its own
polars) as an outside comparator, in an environment of their own made on first use
(``OPENDP_ENV``, default ~/.cache/synth-benchmarks/opendp), through
benchmarks/opendp_peer.py, with DP Wizard's defaults: the public keys, 10 equal-width bins
over the public bounds (11 cut points), pure ε-DP. A failure is recorded as one. ``--dask`` writes a
10M-row Parquet folder (Adult's train split, resampled; in a temporary folder) and counts
every 1-way and 2-way marginal on a 2-worker LocalCluster and by DuckDB on this machine:
the counts must be equal exactly; the times of both go to the results.
"""

from __future__ import annotations

import argparse
import fcntl
import itertools
import json
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from benchmarks.tables import TABLES, train_test, unit  # noqa: E402

OUT = REPO / "benchmarks/results/peers.json"
DELTA = 1e-5
METHODS = ("mst", "aim", "gsd", "dpselect")
EPSILONS = (0.5, 1.0, 2.0, 4.0, 8.0)
OPENDP = ("aim", "mst")
OPENDP_EPSILONS = (1.0, 2.0)
OPENDP_SECONDS = 1800  # a run still going after this is recorded as a failure
OPENDP_CUTS = 10  # DP Wizard's default bin count
DASK_ROWS = 10_000_000
TARGETS = {"mst_tvd2_at_1": 0.059, "aim_tvd2_at_1": 0.051, "aim_seconds_at_1": 600}
ANCHORS = {"mst_tvd2": {"1": 0.054, "2": 0.050}, "aim_tvd2": {"1": 0.051, "2": 0.049},
           "aim_minutes_before": "18-30", "gsd_tvd2_at_1": "0.049-0.051",
           "dpselect_measure_tvd2": {"1": "0.047-0.050", "2": 0.037}}


def one(method: str, epsilon: float, seed: int, table: str = "adult") -> dict:
    """One run in this process: fit on the table's synthesized rows (Adult: the train
    split), score against them and, where the table has a target, against its test rows."""
    from synth.evaluation import marginal_tvd, utility
    from synth.methods import FitContext, make
    from synth.privacy.budget import Budget

    train, test, schema = train_test(table)
    started = time.perf_counter()
    model = make(method).fit(train, schema, Budget(epsilon, DELTA, unit=unit(table)),
                             FitContext(postprocessing_seed=seed))
    seconds = time.perf_counter() - started
    synthetic = model.sample()
    released = model.schema_.reading(schema)  # with the bounds it learned
    fidelity = marginal_tvd(train, synthetic, released)
    scores = utility(test, synthetic, released) if test is not None else {}
    return {"method": method, "epsilon": epsilon, "seed": seed, "seconds": round(seconds, 1),
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
            "tvd1": round(fidelity.tvd1, 4), "tvd2": round(fidelity.tvd2, 4),
            **{name: round(scores[key], 4) for name, key in (
                ("tree", "accuracy"), ("logistic", "logistic_accuracy")) if key in scores},
            "epsilon_spent": round(model.ledger_.total_epsilon, 6),
            "rounds": getattr(model, "rounds_", None),
            "kernel": platform.release()}  # which host: their speeds differ


def summarise(runs: list[dict]) -> dict:
    cells: dict[str, dict] = {}
    for key in sorted({(r["method"], r["epsilon"]) for r in runs}):
        mine = [r for r in runs if (r["method"], r["epsilon"]) == key]
        cells[f"{key[0]} at ε={key[1]:g}"] = {
            m: {"median": statistics.median(r[m] for r in mine),
                "min": min(r[m] for r in mine), "max": max(r[m] for r in mine)}
            for m in ("tvd2", "tvd1", "tree", "logistic", "seconds", "peak_rss_mb")
            if all(m in r for r in mine)}
        cells[f"{key[0]} at ε={key[1]:g}"]["seeds"] = len(mine)
    return cells


def opendp_env() -> Path:
    """The outside comparator's Python: OpenDP with its own mbi and polars, made once."""
    env = Path(os.environ.get("OPENDP_ENV", Path.home() / ".cache/synth-benchmarks/opendp"))
    python = env / "bin/python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(env)], check=True)
        # mbi 1.1 samples its synthetic table with pandas, which opendp[mbi] leaves out
        subprocess.run([str(python), "-m", "pip", "install", "-q", "opendp[mbi]", "pandas"],
                       check=True)
    return python


def failure(stderr: str) -> list[str]:
    """The line that says why a child failed: the innermost error's message (OpenDP nests
    its exceptions, closing each with a line of brackets)."""
    lines = [x.strip() for x in stderr.strip().splitlines() if len(x.strip()) > 3]
    said = [x for x in lines if re.search(r"Error|Exception|Failed|insufficient", x)]
    return said[-1:] or lines[-1:]


def opendp_runs(algorithms: Sequence[str] = OPENDP) -> list[dict]:
    """OpenDP's AIM and MST at ε ∈ {1, 2}, one run each, scored as ours are."""
    import pandas as pd

    from synth.evaluation import marginal_tvd, utility
    from synth.schema import CATEGORICAL, prepare

    train, test, schema = train_test("adult")
    python = opendp_env()
    version = subprocess.run([str(python), "-c", "from importlib.metadata import version as v; "
                              "print('opendp', v('opendp'), 'mbi', v('mbi'))"],
                             capture_output=True, text=True, check=False).stdout.strip()
    keys = {c.name: list(c.categories) for c in schema if c.kind == CATEGORICAL}
    # DP Wizard's make_cut_points: bin count + 1 points from the lower bound to the upper
    cuts = {c.name: sorted({round(c.lower + i * (c.upper - c.lower) / OPENDP_CUTS)
                            for i in range(OPENDP_CUTS + 1)})
            for c in schema if c.kind != CATEGORICAL}
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        train.to_csv(Path(tmp) / "train.csv", index=False)
        for algorithm, epsilon in itertools.product(algorithms, OPENDP_EPSILONS):
            out, spec = Path(tmp) / "synthetic.csv", Path(tmp) / "spec.json"
            out.unlink(missing_ok=True)
            spec.write_text(json.dumps({
                "train": str(Path(tmp) / "train.csv"), "algorithm": algorithm,
                "epsilon": epsilon, "columns": list(schema.names), "keys": keys,
                "cuts": cuts, "rows": len(train), "out": str(out)}))
            run = {"method": f"opendp-{algorithm}", "epsilon": epsilon, "seed": 0,
                   "opendp": version}
            try:
                child = subprocess.run([str(python), str(REPO / "benchmarks/opendp_peer.py"),
                                        str(spec)], capture_output=True, text=True,
                                       check=False, timeout=OPENDP_SECONDS)
            except subprocess.TimeoutExpired:
                runs.append({**run, "failed": [f"no release in {OPENDP_SECONDS} s"]})
                print(json.dumps(runs[-1]), flush=True)
                continue
            if child.returncode:
                runs.append({**run, "failed": failure(child.stderr)})
                print(json.dumps(runs[-1]), flush=True)
                continue
            timing = json.loads(child.stdout.strip().splitlines()[-1])
            # OpenDP's release may hold nulls (a key's null bin): scored on its rows without
            # any, their share reported
            released = pd.read_csv(out, dtype=dict.fromkeys(keys, str))
            complete = released.notna().all(axis=1)
            synthetic = prepare(released[complete].reset_index(drop=True), schema)
            fidelity = marginal_tvd(train, synthetic, schema)
            scores = utility(test, synthetic, schema)
            runs.append({**run, **timing, "rows_with_nulls": round(1 - complete.mean(), 4),
                         "tvd1": round(fidelity.tvd1, 4),
                         "tvd2": round(fidelity.tvd2, 4), "tree": round(scores["accuracy"], 4),
                         "logistic": round(scores["logistic_accuracy"], 4),
                         "settings": f"keys public, {OPENDP_CUTS} equal-width bins per numeric "
                                     "column (DP Wizard's cut points), "
                                     "pure ε-DP (OpenDP's rule when keys and cuts span every "
                                     "column), AIM()/MST() defaults"})
            print(json.dumps(runs[-1]), flush=True)
    return runs


def dask_counts() -> dict:
    """10M rows counted on a 2-worker LocalCluster and by DuckDB: equal exactly; times."""
    import distributed
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from synth import missing
    from synth.encoding import Discretizer
    from synth.marginals import count, marginal
    from synth.methods import FitContext
    from synth.source import Chunks, TableFile

    train, _, schema = train_test("adult")
    model = missing.model_schema(schema)
    disc = Discretizer(model, bins=32, exact_integers=128)
    marginals = [*((j,) for j in range(len(model))),
                 *itertools.combinations(range(len(model)), 2)]

    def counter(frame):
        codes = disc.codes(frame)
        return [marginal(codes, disc.sizes, m) for m in marginals]

    result = {"rows": DASK_ROWS, "marginals": len(marginals), "workers": 2}
    with tempfile.TemporaryDirectory() as tmp:
        rng = np.random.default_rng(0)
        parts = 20
        for i in range(parts):
            rows = train.iloc[rng.integers(0, len(train), DASK_ROWS // parts)]
            pq.write_table(pa.Table.from_pandas(rows, preserve_index=False),
                           Path(tmp) / f"part-{i:02d}.parquet")
        started = time.perf_counter()
        local = count(Chunks.of_file(TableFile(tmp), schema), counter, FitContext(),
                      "count", "")
        result["duckdb_seconds"] = round(time.perf_counter() - started, 1)
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                      dashboard_address=None) as cluster:
            started = time.perf_counter()
            clustered = count(Chunks.of_file(TableFile(tmp, scheduler=cluster.scheduler_address),
                                             schema), counter, FitContext(), "count", "")
            result["dask_seconds"] = round(time.perf_counter() - started, 1)
    result["equal_exactly"] = all(np.array_equal(a, b) for a, b in zip(local, clustered,
                                                                          strict=True))
    result["rows_counted"] = int(local[0].sum())
    print(json.dumps(result), flush=True)
    return result


def save(change: Callable[[dict], None]) -> None:
    """Apply ``change`` to the results file as it is now and write it whole, atomically,
    under a lock: what another run of this script kept meanwhile (another table, the OpenDP
    runs) is kept too."""
    with open(OUT.with_suffix(".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        results = json.loads(OUT.read_text()) if OUT.exists() else {}
        change(results)
        results["summary"] = summarise([r for r in results.get("runs", [])
                                        if "failed" not in r])
        results["opendp_summary"] = summarise([r for r in results.get("opendp", [])
                                               if "failed" not in r])
        tmp = OUT.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(results, indent=1) + "\n")
        tmp.replace(OUT)


def replaced(runs: list[dict], fresh: Sequence[dict]) -> list[dict]:
    """``runs`` with the ``fresh`` runs in place of any of the same method, ε and seed."""
    again = {(r["method"], r["epsilon"], r["seed"]) for r in fresh}
    return [r for r in runs if (r["method"], r["epsilon"], r["seed"]) not in again] + [
        *fresh]


def keep(table: str, run: dict) -> None:
    """Keep one run of ``table`` (Adult's at the top level, every other under ``tables``)."""
    def change(results: dict) -> None:
        if table == "adult":
            results.update(
                protocol="Adult by DESIGN.md: train split (21,707 rows), δ = 1e-5, method "
                         "defaults, one process per run; other tables (\"tables\", "
                         "benchmarks/tables.py): the rows a run in the app synthesizes",
                machine=f"{platform.machine()}, {platform.processor() or 'cpu'}, 2 cores "
                        "(this project's CI class)",
                targets=TARGETS, anchors=ANCHORS, runs=replaced(results.get("runs", []), [run]))
            return
        tables = results.setdefault("tables", {})
        runs = replaced(tables.get(table, {}).get("runs", []), [run])
        tables[table] = {"runs": runs,
                         "summary": summarise([r for r in runs if "failed" not in r])}

    save(change)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--methods", nargs="+", default=list(METHODS))
    parser.add_argument("--epsilons", nargs="+", type=float, default=list(EPSILONS))
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--opendp", nargs="*", choices=OPENDP, metavar="ALGORITHM",
                        help="OpenDP's AIM and MST only (or those named)")
    parser.add_argument("--dask", action="store_true", help="the 10M-row count only")
    parser.add_argument("--table", default="adult", choices=TABLES,
                        help="a table of benchmarks/tables.py (Adult by the protocol)")
    parser.add_argument("--one", nargs=4, metavar=("METHOD", "EPSILON", "SEED", "TABLE"),
                        help=argparse.SUPPRESS)  # a child process's single run
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one[0], float(args.one[1]), int(args.one[2]), args.one[3])))
        return
    if args.opendp is not None:
        fresh = opendp_runs(args.opendp or OPENDP)
        save(lambda results: results.update(opendp=replaced(results.get("opendp", []), fresh)))
        return
    if args.dask:
        counted = dask_counts()
        save(lambda results: results.update(dask=counted))
        return
    for method in args.methods:
        for epsilon in args.epsilons:
            for seed in range(args.seeds):
                child = subprocess.run([sys.executable, __file__, "--one", method,
                                        str(epsilon), str(seed), args.table],
                                       capture_output=True, text=True, check=False)
                if child.returncode:
                    run = {"method": method, "epsilon": epsilon, "seed": seed,
                           "failed": child.stderr.strip().splitlines()[-1:]}
                else:
                    run = json.loads(child.stdout.strip().splitlines()[-1])
                print(json.dumps(run), flush=True)
                keep(args.table, run)


if __name__ == "__main__":
    main()
