"""Time and peak memory of a fit against the table's rows (issue 21, item 2).

The tables are Adult resampled with replacement (``default_rng(n)``: benchmark data, not a
release) to n rows, written as Parquet with the protocol's kinds (numbers as integers) in
``--data-dir``; a fit reads its file where it lies (:class:`synth.source.TableFile`), the
methods that only count in chunks. Each fit is a fresh process, so its peak RSS is its own;
δ is :func:`synth.privacy.budget.default_delta` of n, the schema the protocol's public one.
The fitted slope is that of log(time) (and log(peak memory)) against log(n) by least
squares, over the sizes from ``--slope-from`` rows up (below, fixed costs dominate).

Writes benchmarks/results/scale.json and scale.html (log-log charts).

    python benchmarks/scale.py --rows 10000 100000 1000000 2000000 10000000 \\
        --methods independent gsd --epsilon 1
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "benchmarks" / "results"
PIECE = 1_000_000  # rows written per Parquet row group batch


def make_adult(adult: str, n: int, data_dir: Path) -> Path:
    """Adult resampled to ``n`` rows as Parquet (made once, then reused)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from synth.data import read_table
    from synth.protocol import adult_schema

    path = data_dir / f"adult_{n}.parquet"
    if path.exists():
        return path
    table = read_table(adult)
    schema = adult_schema(table)
    for col in schema:
        if col.kind == "numeric":
            table[col.name] = table[col.name].astype(float).round().astype("int64")
    rng = np.random.default_rng(n)
    partial = path.with_suffix(".partial")
    writer = None
    for start in range(0, n, PIECE):
        rows = rng.integers(0, len(table), min(PIECE, n - start))
        piece = pa.Table.from_pandas(table.iloc[rows], preserve_index=False)
        writer = writer or pq.ParquetWriter(partial, piece.schema)
        writer.write_table(piece)
    writer.close()
    partial.rename(path)
    return path


def one_fit(path: str, adult: str, method: str, epsilon: float, seed: int) -> dict:
    """One fit from the file, in a fresh process: wall time, stages, peak RSS."""
    started = time.perf_counter()
    from synth.data import read_table
    from synth.methods import FitContext, make
    from synth.privacy.budget import Budget, default_delta
    from synth.protocol import adult_schema
    from synth.source import TableFile

    schema = adult_schema(read_table(adult))
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    fitted = time.perf_counter()
    file = TableFile(path)
    model = make(method).fit(file, schema, Budget(epsilon, default_delta(len(file))),
                             FitContext(postprocessing_seed=seed))
    fit_seconds = time.perf_counter() - fitted
    sample = model.sample(10_000)
    return {"method": method, "rows": len(file), "columns": len(schema), "epsilon": epsilon,
            "seed": seed, "fit_seconds": fit_seconds, "timings": model.timings_,
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "rss_before_fit_mib": base, "sampled": len(sample),
            "ledger_epsilon": model.ledger_.total_epsilon,
            "process_seconds": time.perf_counter() - started}


def slope(xs: list[float], ys: list[float]) -> float | None:
    """Least-squares slope of log y against log x."""
    if len(set(xs)) < 2:
        return None
    return float(np.polyfit(np.log(xs), np.log(ys), 1)[0])


def summarise(runs: list[dict], slope_from: int) -> dict:
    out: dict = {}
    for method in sorted({r["method"] for r in runs}):
        mine = [r for r in runs if r["method"] == method]
        sizes = sorted({r["rows"] for r in mine})
        table = {}
        for n in sizes:
            times = [r["fit_seconds"] for r in mine if r["rows"] == n]
            peaks = [r["peak_rss_mib"] for r in mine if r["rows"] == n]
            table[str(n)] = {"fit_seconds_median": statistics.median(times),
                             "min": min(times), "max": max(times),
                             "peak_rss_mib_max": max(peaks), "runs": len(times)}
        big = [n for n in sizes if n >= slope_from]
        medians = [table[str(n)]["fit_seconds_median"] for n in big]
        peaks = [table[str(n)]["peak_rss_mib_max"] for n in big]
        out[method] = {"by_rows": table, "time_slope": slope(big, medians),
                       "memory_slope": slope(big, peaks), "slope_over_rows": big}
    return out


def chart(runs: list[dict], path: Path) -> None:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=2, subplot_titles=("fit time (s)", "peak memory (MiB)"))
    for method in sorted({r["method"] for r in runs}):
        mine = sorted((r for r in runs if r["method"] == method), key=lambda r: r["rows"])
        x = [r["rows"] for r in mine]
        fig.add_trace(go.Scatter(x=x, y=[r["fit_seconds"] for r in mine], name=method,
                                 mode="lines+markers", legendgroup=method), 1, 1)
        fig.add_trace(go.Scatter(x=x, y=[r["peak_rss_mib"] for r in mine], name=method,
                                 mode="lines+markers", legendgroup=method, showlegend=False),
                      1, 2)
    fig.update_xaxes(type="log", title="rows")
    fig.update_yaxes(type="log")
    fig.update_layout(title="Fit cost against rows (Adult resampled, Parquet, 2 cores)")
    tmp = path.with_suffix(".tmp")
    fig.write_html(tmp, include_plotlyjs="cdn")
    tmp.replace(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--adult", default=str(REPO.parent / "shared/data/adult.csv"))
    parser.add_argument("--rows", type=int, nargs="+",
                        default=[10_000, 100_000, 1_000_000, 2_000_000, 10_000_000])
    parser.add_argument("--methods", nargs="+", default=["independent", "gsd"])
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--slope-from", type=int, default=100_000)
    parser.add_argument("--data-dir", default="/tmp/synth-scale")
    parser.add_argument("--out", default=str(OUT / "scale.json"))
    args = parser.parse_args()

    data_dir = Path(args.data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    out = Path(args.out)
    runs = json.loads(out.read_text())["runs"] if out.exists() else []
    for n in args.rows:
        path = make_adult(args.adult, n, data_dir)
        for method in args.methods:
            for seed in range(args.seeds):
                with ProcessPoolExecutor(max_workers=1) as pool:
                    run = pool.submit(one_fit, str(path), args.adult, method, args.epsilon,
                                      seed).result()
                runs = [r for r in runs if (r["method"], r["rows"], r["seed"], r["epsilon"])
                        != (method, n, seed, args.epsilon)] + [run]
                print(f"{method} n={n:,} seed {seed}: fit {run['fit_seconds']:.1f} s, peak "
                      f"{run['peak_rss_mib']:.0f} MiB", flush=True)
                _write(out, runs, args)
    chart(runs, out.with_suffix(".html"))
    print(json.dumps(summarise(runs, args.slope_from), indent=2))


def _write(out: Path, runs: list[dict], args: argparse.Namespace) -> None:
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps({
        "machine": {"platform": platform.platform(), "cores": os.cpu_count(),
                    "python": platform.python_version()},
        "protocol": "Adult resampled with replacement to n rows (Parquet, protocol kinds), "
                    "read where it lies; protocol's public schema; δ = default_delta(n); "
                    "one fresh process per fit",
        "summary": summarise(runs, args.slope_from), "runs": runs}, indent=2) + "\n")
    tmp.replace(out)


if __name__ == "__main__":
    main()
