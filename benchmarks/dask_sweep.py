"""A sweep on a local multi-worker Dask cluster whose workers read the table themselves
(issue 21, item 5).

The table is Adult resampled to ``--rows`` rows as Parquet (benchmarks/scale.py makes it),
the held-out test part the protocol's test sixth of Adult. The same grid (independent
marginals, several ε and seeds) runs twice through joblib's Dask backend on a
``LocalCluster`` of ``--workers`` single-threaded worker processes:

* **path**: each job gets a :class:`synth.source.TableFile` (a path: its pickle is a few
  hundred bytes) and its worker reads the file itself, in chunks;
* **frame**: each job gets the table as a DataFrame, which Dask pickles and ships to the
  workers (the way a sweep ran before).

Records per mode the wall time of the sweep, the bytes a job's table pickles to, the peak
RSS of every worker process (sampled by psutil while the sweep runs) and of the driver, and
the sweep's rows. Writes benchmarks/results/dask_sweep.json.

    python benchmarks/dask_sweep.py [--rows 2000000] [--workers 2]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pickle
import platform
import resource
import threading
import time
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parent.parent


class Peaks(threading.Thread):
    """Peak RSS of each of the cluster's worker processes, sampled every 0.2 s."""

    def __init__(self, pids: list[int]):
        super().__init__(daemon=True)
        self.procs = [psutil.Process(p) for p in pids]
        self.peaks = {p: 0 for p in pids}
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.2):
            for proc in self.procs:
                with contextlib.suppress(psutil.Error):
                    self.peaks[proc.pid] = max(self.peaks[proc.pid], proc.memory_info().rss)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--adult", default=str(REPO.parent / "shared/data/adult.csv"))
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.5, 1.0, 2.0, 4.0])
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--data-dir", default="/tmp/synth-scale")
    args = parser.parse_args()

    import distributed
    from joblib import parallel_config
    from scale import make_adult

    from synth.data import read_table
    from synth.privacy.budget import default_delta
    from synth.protocol import adult_schema, protocol_split
    from synth.source import TableFile, read_whole
    from synth.sweep import grid, sweep

    adult = read_table(args.adult)
    schema = adult_schema(adult)
    _, _, test = protocol_split(adult)
    data_dir = Path(args.data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    file = TableFile(make_adult(args.adult, args.rows, data_dir))
    delta = default_delta(len(file))
    jobs = grid(["independent"], args.epsilons, seeds=args.seeds)
    results = {}
    for mode in ("path", "frame"):
        table = file if mode == "path" else read_whole(file, schema.names)
        with distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1,
                                      processes=True, host="127.0.0.1",
                                      dashboard_address=None) as cluster, \
                distributed.Client(cluster) as client, parallel_config(backend="dask"):
            pids = list(client.run(os.getpid).values())
            peaks = Peaks(pids)
            peaks.start()
            started = time.perf_counter()
            rows = sweep(jobs, table, test, schema, delta)
            seconds = time.perf_counter() - started
            peaks.done.set()
            peaks.join()
        results[mode] = {
            "sweep_seconds": seconds, "jobs": len(jobs),
            "table_pickle_bytes": len(pickle.dumps(table, protocol=5)),
            "worker_peak_rss_mib": [v / 2**20 for v in peaks.peaks.values()],
            "errors": int(rows["error"].notna().sum()),
            "tvd1_median": float(rows["tvd1"].median()),
            "tvd2_median": float(rows["tvd2"].median()),
            "accuracy_median": float(rows["accuracy"].median())}
        print(mode, json.dumps(results[mode]), flush=True)
        del table
    out = REPO / "benchmarks" / "results" / "dask_sweep.json"
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps({
        "machine": {"platform": platform.platform(), "cores": os.cpu_count(),
                    "python": platform.python_version()},
        "protocol": f"Adult resampled to {args.rows:,} rows (Parquet), independent marginals "
                    f"at ε {args.epsilons} × {args.seeds} seeds, δ = {delta:g}, measured "
                    "against the protocol's test sixth; a LocalCluster of "
                    f"{args.workers} single-threaded worker processes",
        "driver_peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "modes": results}, indent=2) + "\n")
    tmp.replace(out)


if __name__ == "__main__":
    main()
