"""Counting on a Dask cluster: the third backend of :func:`synth.marginals.count`.

A Parquet table too large for one machine is split into ``dask.dataframe`` partitions; each
worker prepares its partition against the schema exactly as a chunk read by DuckDB is
prepared (:class:`synth.source.Chunks`), runs the method's counter on it, and sends back
only the count vectors, which the client adds up in partition order: the same sums, exactly,
as a pass on one machine (integer counts, or whole numbers held as floats). No row leaves
the workers; the client checks the rows seen against the plan's and the target's classes
as a local pass does.

The cluster is the steward's: its scheduler address comes from ``synth run --scheduler`` or
the app's ``SYNTH_SCHEDULER`` setting, and every worker must read the table at the same path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from synth import missing
from synth.errors import DataError, ParameterError, SynthError
from synth.marginals import add_up
from synth.schema import Schema, check_target, prepare

Counter = Callable[[pd.DataFrame], list[np.ndarray]]
CONNECT = "20s"  # how long a scheduler may take to answer before the run is refused


def _count_partition(frame: pd.DataFrame, nulls: dict[str, str], schema: Schema, encode: bool,
                     target: str | None, counter: Counter
                     ) -> tuple[list[np.ndarray], int, list[Any]]:
    """On a worker: (the counter's arrays, rows, up to two target classes) of a partition."""
    frame = frame.reset_index(drop=True)
    for name, dtype in nulls.items():  # as pandas reads the whole column (source.py)
        frame[name] = frame[name].astype(dtype)
    prepared = prepare(frame, schema)
    if encode:
        prepared = missing.encode(prepared, schema)
    classes = ([] if target is None else
               prepared[target].dropna().unique()[:2].tolist())
    return counter(prepared), len(prepared), classes


def reduce_on_cluster(file: Any, schema: Schema, encode: bool, target: str | None,
                      counter: Counter, ctx: Any, stage: str, description: str
                      ) -> list[np.ndarray]:
    """``counter``'s arrays summed over every partition of ``file`` (a Parquet
    :class:`~synth.source.TableFile` with a ``scheduler``), counted on the cluster."""
    try:
        import dask
        import dask.dataframe as dd
        from distributed import Client, as_completed
    except ImportError:
        raise ParameterError("counting on a Dask cluster needs Dask: pip install "
                             "'synth[dask]'") from None

    if file.kind == "CSV":
        raise ParameterError(f"{file.name} is a CSV: a Dask cluster counts Parquet tables; "
                             "convert it, or leave the scheduler out to count it here")
    file.check_unchanged()
    nulls = file.null_dependent(schema.names)
    with dask.config.set({"dataframe.convert-string": False}):
        frame = dd.read_parquet([str(f) for f in file.files], columns=list(schema.names))
        parts = frame.to_delayed()
    work = [dask.delayed(_count_partition)(p, nulls, schema, encode, target, counter)
            for p in parts]
    total = len(file)
    ctx.stage(stage, total, description)
    try:
        client = Client(file.scheduler, set_as_default=False, timeout=CONNECT)
    except (OSError, TimeoutError) as exc:
        raise DataError(f"no Dask scheduler answers at {file.scheduler!r}: {exc}") from None
    with client:
        futures = client.compute(work)
        order = {f.key: i for i, f in enumerate(futures)}
        results: list[list[np.ndarray] | None] = [None] * len(futures)
        seen, classes = 0, set()
        try:
            for future in as_completed(futures, loop=client.loop):
                try:
                    counts, rows, found = future.result()
                except SynthError:
                    raise
                except Exception as exc:  # a worker without the file, a read error
                    raise DataError(f"a worker of {file.scheduler} could not count "
                                    f"{file.name}: {type(exc).__name__}: {exc}") from None
                results[order[future.key]] = counts
                seen += rows
                classes.update(found)
                ctx.progress(stage, min(seen, total), total)  # raises Cancelled when asked
        finally:
            client.cancel(futures)
    file.check_unchanged()
    if seen != total:
        raise DataError(f"{file.name} changed while it was read: {seen:,} rows, not the "
                        f"{total:,} the fit was planned for")
    if target is not None:
        check_target(pd.DataFrame({target: sorted(classes)}), target)
    return add_up(r for r in results if r is not None)
