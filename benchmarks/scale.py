"""Time and peak memory of a fit against the table's rows and columns (issue 21, item 2).

Rows: Adult resampled with replacement (``default_rng(n)``: benchmark data, not a release)
to n rows, written as Parquet with the protocol's kinds (numbers as integers), with the
protocol's public schema. Columns: the wide table of scripts/make_wide_data.py (a public
latent-class description, 100 columns of mixed kinds) at ``--wide-rows`` rows, fitted on
its first c columns in an interleaved order (categorical, integer and continuous alike),
its target always among them. Files are made once in ``--data-dir``.

A fit reads its file where it lies (:class:`synth.source.TableFile`): the methods that
stream in chunks, the others by loading the schema's columns. Each fit is a fresh
interpreter (this script with ``--job``), so its peak RSS is its own; δ is
:func:`synth.privacy.budget.default_delta` of n. The fitted slope is that of log(time) (and
log(peak memory)) against log(n), or log(columns), by least squares, over the sizes from
``--slope-from`` rows up (below, fixed costs dominate).

Writes benchmarks/results/scale.json and scale.html (log-log charts).

    python benchmarks/scale.py --rows 10000 100000 1000000 2000000 10000000 \\
        --methods independent gsd --epsilon 1
    python benchmarks/scale.py --rows --columns 15 30 60 100 --methods independent gsd dpgan
    python benchmarks/scale.py --methods dpgan --dpgan-steps 1700
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
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


def make_wide(n: int, data_dir: Path) -> tuple[Path, list[str], str]:
    """The wide table at ``n`` rows (made once), its columns in interleaved kind order and
    its public schema as JSON."""
    import sys

    sys.path.insert(0, str(REPO / "scripts"))
    from make_wide_data import description, schema_of, write

    path = data_dir / f"wide_{n}.parquet"
    schema = write(n, path) if not path.exists() else schema_of(description())
    kinds: dict[str, list[str]] = {}
    for col in schema["columns"][:-1]:
        kinds.setdefault(col["name"][:3], []).append(col["name"])
    order = [name for group in zip(*kinds.values(), strict=False) for name in group]
    order += [c["name"] for c in schema["columns"][:-1] if c["name"] not in order]
    return path, order, json.dumps(schema)


def one_fit(path: str, schema_json: str, method: str, epsilon: float, seed: int,
            steps: int | None = None) -> dict:
    """One fit from the file, in a fresh process: wall time, stages, peak RSS. ``steps``:
    DP-GAN's (and DP-Select's) epochs are set so that the critic takes about that many steps
    at any n (at 10 epochs, 10M rows would take 780,000 steps: the curve would measure the
    steps, not n)."""
    started = time.perf_counter()
    from synth.methods import METHODS, FitContext, make
    from synth.privacy.budget import Budget, default_delta
    from synth.schema import Schema
    from synth.source import TableFile

    schema = Schema.from_json(schema_json)
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    fitted = time.perf_counter()
    file = TableFile(path)
    epochs = METHODS[method].own_name("epochs")  # DP-Select's is its GAN's, gan__epochs
    params = {epochs: steps * 128 / len(file)} if steps and epochs else {}
    model = make(method, params).fit(file, schema, Budget(epsilon, default_delta(len(file))),
                             FitContext(postprocessing_seed=seed))
    fit_seconds = time.perf_counter() - fitted
    sample = model.sample(10_000)
    return {"table": Path(path).name.split("_")[0], "method": method, "rows": len(file),
            "columns": len(schema), "epsilon": epsilon, "params": params,
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


AXES = {"adult": "rows", "wide": "columns"}  # what each table's runs vary


def summarise(runs: list[dict], slope_from: int) -> dict:
    """Per table and method: median time (min–max) and peak memory at each size, and the
    fitted slopes against that table's axis."""
    out: dict = {}
    for table, axis in AXES.items():
        for method in sorted({r["method"] for r in runs if r.get("table") == table}):
            mine = [r for r in runs if r.get("table") == table and r["method"] == method]
            sizes = sorted({r[axis] for r in mine})
            by = {}
            for size in sizes:
                times = [r["fit_seconds"] for r in mine if r[axis] == size]
                peaks = [r["peak_rss_mib"] for r in mine if r[axis] == size]
                by[str(size)] = {"fit_seconds_median": statistics.median(times),
                                 "min": min(times), "max": max(times),
                                 "peak_rss_mib_max": max(peaks), "runs": len(times)}
            big = [x for x in sizes if axis == "columns" or x >= slope_from]
            out.setdefault(table, {})[method] = {
                f"by_{axis}": by,
                "time_slope": slope(big, [by[str(x)]["fit_seconds_median"] for x in big]),
                "memory_slope": slope(big, [by[str(x)]["peak_rss_mib_max"] for x in big]),
                f"slope_over_{axis}": big}
    return out


def chart(runs: list[dict], path: Path) -> None:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=2, cols=2, subplot_titles=(
        "fit time (s) against rows", "peak memory (MiB) against rows",
        "fit time (s) against columns", "peak memory (MiB) against columns"))
    for row, (table, axis) in enumerate(AXES.items(), 1):
        for method in sorted({r["method"] for r in runs}):
            mine = sorted((r for r in runs if r.get("table") == table and
                           r["method"] == method), key=lambda r: r[axis])
            if not mine:
                continue
            x = [r[axis] for r in mine]
            for col, what in enumerate(("fit_seconds", "peak_rss_mib"), 1):
                fig.add_trace(go.Scatter(x=x, y=[r[what] for r in mine], name=method,
                                         mode="lines+markers", legendgroup=method,
                                         showlegend=row == 1 and col == 1), row, col)
        fig.update_xaxes(type="log", title=axis, row=row)
    fig.update_yaxes(type="log")
    fig.update_layout(title="Fit cost against rows (Adult resampled) and columns (wide "
                            "table), Parquet read where it lies, 2 cores", height=800)
    tmp = path.with_suffix(".tmp")
    fig.write_html(tmp, include_plotlyjs="cdn")
    tmp.replace(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--adult", default=str(REPO.parent / "shared/data/adult.csv"))
    parser.add_argument("--rows", type=int, nargs="*",
                        default=[10_000, 100_000, 1_000_000, 2_000_000, 10_000_000])
    parser.add_argument("--columns", type=int, nargs="*", default=[])
    parser.add_argument("--wide-rows", type=int, default=50_000)
    parser.add_argument("--methods", nargs="+", default=["independent", "gsd"])
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--dpgan-steps", type=int, default=None,
                        help="DP-GAN's and DP-Select's critic steps at every n (epochs = "
                             "steps · 128 / n)")
    parser.add_argument("--slope-from", type=int, default=100_000)
    parser.add_argument("--data-dir", default="/tmp/synth-scale")
    parser.add_argument("--out", default=str(OUT / "scale.json"))
    parser.add_argument("--job", action="store_true",
                        help="internal: one fit, its arguments as JSON on stdin")
    args = parser.parse_args()
    if args.job:
        print(json.dumps(one_fit(*json.loads(sys.stdin.read()))))
        return

    data_dir = Path(args.data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    out = Path(args.out)
    runs = json.loads(out.read_text())["runs"] if out.exists() else []
    todo = []
    if args.rows:
        from synth.data import read_table
        from synth.protocol import adult_schema

        adult = adult_schema(read_table(args.adult)).to_json()
        todo += [(make_adult(args.adult, n, data_dir), adult) for n in args.rows]
    if args.columns:
        path, order, wide = make_wide(args.wide_rows, data_dir)
        from synth.schema import Schema

        full = Schema.from_json(wide)
        for c in args.columns:
            keep = set(order[:c - 1]) | {full.target}
            todo.append((path, full.drop([n for n in full.names if n not in keep]).to_json()))
    for path, schema in todo:
        for method in args.methods:
            for seed in range(args.seeds):
                # a fresh interpreter, started as a CLI run is
                job = json.dumps([str(path), schema, method, args.epsilon, seed,
                                  args.dpgan_steps])
                done = subprocess.run([sys.executable, __file__, "--job"], input=job,
                                      capture_output=True, text=True, check=True)
                run = json.loads(done.stdout.splitlines()[-1])
                key = ("table", "method", "rows", "columns", "seed", "epsilon")
                runs = [r for r in runs if tuple(r.get(k) for k in key)
                        != tuple(run[k] for k in key)] + [run]
                print(f"{run['table']} {method} n={run['rows']:,} × {run['columns']}, seed "
                      f"{seed}: fit {run['fit_seconds']:.1f} s, peak "
                      f"{run['peak_rss_mib']:.0f} MiB", flush=True)
                _write(out, runs, args)
    chart(runs, out.with_suffix(".html"))
    print(json.dumps(summarise(runs, args.slope_from), indent=2))


def _write(out: Path, runs: list[dict], args: argparse.Namespace) -> None:
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps({
        "machine": {"platform": platform.platform(), "cores": os.cpu_count(),
                    "python": platform.python_version()},
        "protocol": "rows: Adult resampled with replacement to n rows (Parquet, protocol "
                    "kinds), the protocol's public schema; columns: scripts/make_wide_data.py "
                    "at --wide-rows rows, its first c columns (interleaved kinds); read where "
                    "it lies; δ = default_delta(n); ε as given; one fresh process per fit",
        "summary": summarise(runs, args.slope_from), "runs": runs}, indent=2) + "\n")
    tmp.replace(out)


if __name__ == "__main__":
    main()
