"""Sweeps: many runs over a grid of ε, budget splits, methods and one method parameter, with
several seeds, as one tidy table.

A sweep is a list of :class:`Job`s; a job's seed steers post-processing only, and its noise is
fresh, so the same grid twice gives two samples of the same distributions (compare them by
statistics over seeds, never byte for byte). Runs go through
joblib: every local core by default, or any joblib backend the caller configures (a Dask
cluster through ``joblib.parallel_config(backend="dask")``).
"""

from __future__ import annotations

import itertools
import logging
import math
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

from synth.account import TableAccount
from synth.errors import ParameterError, SynthError, without_values
from synth.privacy.unit import PrivacyUnit
from synth.release import write_file
from synth.schema import Schema
from synth.source import TableFile
from synth.status import CANCELLED, FAILED, ended
from synth.store import SWEEP, RunEntry, RunStore, StoreError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Preset:
    """A ready-made grid: the questions the thesis's own figures answer."""

    title: str
    methods: tuple[str, ...]
    epsilons: tuple[float, ...]
    param: str | None = None
    values: tuple[Any, ...] = ()
    shares: tuple[float, ...] = ()


PRESETS = {
    "accuracy-vs-epsilon": Preset("Accuracy vs ε for all methods",
                                  ("independent", "mst", "aim", "dpgan", "dpselect",
                                   "gsd"),
                                  (0.5, 1.0, 2.0, 4.0, 8.0)),
    "gan-share": Preset("GAN share for DP-Select", ("dpselect",), (1.0, 4.0),
                        shares=(0.1, 0.2, 0.4, 0.6)),
    "pool-size": Preset("Pool size (DP-Select)", ("dpselect",), (1.0, 4.0),
                        "pool_multiplier", (2, 5, 10, 20)),
    "sections": Preset("Sections (DP-Select's rows engine)", ("dpselect",), (1.0, 4.0),
                       "sections", (1, 5, 25)),
}
# What a swept parameter needs held fixed, per method and parameter (a setting the caller
# fixes wins): DP-Select's sections split the rows engine's selections, and its default
# engine (measure) measures the whole table and refuses them
SWEPT_WITH: dict[tuple[str, str], dict[str, Any]] = {("dpselect", "sections"): {"engine": "rows"}}
# Quicker settings, measured on Adult by benchmarks/sweep.py: the GANs train 8 epochs with a
# quarter of the generator batch (after the critic's DP-SGD, the generator's Gumbel samples are
# the slowest part), and each GSD round's genetic search stops at 1,500 generations (its early
# stop ran ~15,000 on Adult; 2,000 fitted as well, 1,000 did not).
DEMO = {"dpgan": {"epochs": 8, "generator_batch": 512},
        "dpselect": {"gan__epochs": 8, "gan__generator_batch": 512},
        "gsd": {"max_generations": 1500}}

TABLE = "sweep.csv"  # a recorded sweep's rows, in its run store folder
COLUMNS = ("method", "epsilon", "seed", "param", "value", "share", "ledger_epsilon",
           "ledger_delta", "accuracy", "balanced_accuracy", "logistic_accuracy", "tvd1", "tvd2",
           "quality", "seconds", "error")


@dataclass(frozen=True)
class Job:
    """One run of a sweep: a method at (ε, δ) with one parameter set and one post-processing
    seed."""

    method: str
    epsilon: float
    seed: int
    params: Mapping[str, Any] = field(default_factory=dict)
    share: float | None = None  # the method's own split (its ``share_param``), if swept
    param: str | None = None  # the swept parameter, if any (its value is in ``params``)
    unit: PrivacyUnit = field(default_factory=PrivacyUnit)  # whom the run protects


UNIT_K = "max_rows_per_unit"  # the swept "parameter" of a sweep over the bound k


def grid(methods: Sequence[str], epsilons: Iterable[float], seeds: int = 3,
         param: str | None = None, values: Iterable[Any] = (),
         shares: Iterable[float] = (), fixed: Mapping[str, Mapping[str, Any]] | None = None,
         unit: PrivacyUnit | None = None, ks: Iterable[int] = ()) -> list[Job]:
    """Every (method, ε, share, value, seed), seeds 0…seeds−1 (the swept parameter and the
    shares apply to the methods that have them); ``fixed``: per method, parameters held fixed
    (over what the swept parameter needs, :data:`SWEPT_WITH`).
    Every run protects ``unit``; given ``ks``, the sweep is over its bound k instead of a
    parameter (``param`` is then :data:`UNIT_K`)."""
    unit = PrivacyUnit() if unit is None else unit
    ks = list(ks)
    if ks:
        if param is not None:
            raise ParameterError(f"sweep either the rows per unit k or {param!r}, not both")
        if not unit.declared:
            raise ParameterError("sweeping the rows per unit k needs a privacy-unit column")
        return [replace(job, unit=PrivacyUnit(unit.column, k), param=UNIT_K)
                for k in ks for job in grid(methods, epsilons, seeds, None, (), shares, fixed,
                                            unit)]
    from synth.methods import METHODS

    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise ParameterError(f"unknown method {unknown[0]!r}; choose from {sorted(METHODS)}")
    epsilons, values, shares = list(epsilons), list(values), list(shares)
    if not methods or not epsilons or seeds < 1:
        raise ParameterError("a sweep needs at least one method, one ε and one seed")
    if param is not None and not values:
        raise ParameterError(f"give the values of the swept parameter {param!r}")
    jobs = []
    for method in methods:
        cls = METHODS[method]
        name = None if param is None else cls.own_name(param)
        mine = values if name is not None else [None]
        splits = shares if shares and cls.share_param else [None]
        for eps, share, value, seed in itertools.product(epsilons, splits, mine, range(seeds)):
            params = {**(SWEPT_WITH.get((method, param), {}) if value is not None else {}),
                      **(fixed or {}).get(method, {})}
            if value is not None:
                params[name] = value
            if share is not None:
                params[cls.share_param] = share
            jobs.append(Job(method, float(eps), seed, params, share,
                            param if value is not None else None, unit))
    return jobs


def run_job(job: Job, train: pd.DataFrame | TableFile, test: pd.DataFrame | None,
            schema: Schema, delta: float, account: TableAccount | None = None
            ) -> dict[str, Any]:
    """Run and measure one job, charged to ``account``: a row of the sweep's table (runs in a
    worker, which opens the account's file itself, and a table read where it lies too: a
    :class:`~synth.source.TableFile` travels as its path, never as rows). A job that fails
    is a row too: its ``error`` says why, its ledger columns what it spent before stopping."""
    from synth.methods import METHODS
    from synth.runs import Run

    row = {"method": job.method, "epsilon": job.epsilon, "seed": job.seed, "param": job.param,
           "value": job.unit.max_rows if job.param == UNIT_K else
           job.params.get(METHODS[job.method].own_name(job.param)) if job.param else None,
           "share": job.share}
    started, planned = time.perf_counter(), None
    try:
        planned = Run(job.method, schema, job.epsilon, delta, job.params,
                      postprocessing_seed=job.seed, account=account, unit=job.unit)
        record = planned(train, schema, test)
    except Exception as exc:  # one bad configuration must not cost the others
        if not isinstance(exc, SynthError):
            log.exception("sweep job %s failed", job)
        spent = planned.spent if planned is not None else None
        return {**row, "ledger_epsilon": spent["total_epsilon"] if spent else 0.0,
                "ledger_delta": spent["total_delta"] if spent else 0.0,
                "seconds": time.perf_counter() - started,
                "error": without_values(exc, schema.names)}  # the store keeps it: no value
    figures = record.figures()
    return {**row, "ledger_epsilon": record.ledger["total_epsilon"],
            "ledger_delta": record.ledger["total_delta"], "accuracy": figures.get("accuracy"),
            "balanced_accuracy": figures.get("balanced_accuracy"),
            "logistic_accuracy": figures.get("logistic_accuracy"), "tvd1": figures["tvd1"],
            "tvd2": figures["tvd2"], "quality": figures.get("quality"),
            "seconds": record.seconds, "error": None}


def sweep(jobs: Sequence[Job], train: pd.DataFrame | TableFile, test: pd.DataFrame | None,
          schema: Schema, delta: float, n_jobs: int = -1,
          on_row: Callable[[int, int, dict[str, Any]], None] | None = None,
          should_stop: Callable[[], bool] | None = None,
          account: TableAccount | None = None, store: RunStore | None = None,
          described: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """Run every job (``n_jobs`` joblib workers; -1: every core) and return one row per
    finished job, in job order. ``on_row(done, total, row)`` sees each row as it finishes;
    when ``should_stop()`` turns true the runs not yet finished are abandoned and the finished
    rows are returned. Each run reserves its budget in ``account`` before it starts, so the
    runs past the table's limit fail, refused before they read anything; a failed run is a
    row with its ``error``, and the others are kept. With a ``store`` (and an account), the
    sweep is recorded there as it starts, and its rows are written to its folder
    (:data:`TABLE`) as it ends; ``described`` adds to its recorded configuration."""
    from joblib import Parallel, delayed

    entry = _start(store, account, jobs, delta, described)
    tasks = (delayed(_indexed)(i, job, train, test, schema, delta, account)
             for i, job in enumerate(jobs))
    rows: dict[int, dict[str, Any]] = {}
    try:
        with warnings.catch_warnings():  # a stop abandons runs on purpose: no need to warn
            warnings.filterwarnings("ignore", message=".*tasks which were still being processed")
            for i, row in Parallel(n_jobs=n_jobs, return_as="generator_unordered")(tasks):
                rows[i] = row
                if on_row is not None:
                    on_row(len(rows), len(jobs), row)
                if should_stop is not None and should_stop():
                    break
    except BaseException as exc:
        _end(store, entry, _table(rows), exc)
        raise
    table = _table(rows)
    _end(store, entry, table, None, len(rows) < len(jobs))
    return table


def _table(rows: dict[int, dict[str, Any]]) -> pd.DataFrame:
    return pd.DataFrame([rows[i] for i in sorted(rows)], columns=list(COLUMNS))


def _start(store: RunStore | None, account: TableAccount | None, jobs: Sequence[Job],
           delta: float, described: Mapping[str, Any] | None) -> RunEntry | None:
    """Record the sweep as it begins (a store that cannot stops it: nothing has run)."""
    if store is None or account is None:
        return None
    methods = list(dict.fromkeys(job.method for job in jobs))
    return store.start(SWEEP, account.key, account.name, ",".join(methods),
                       math.fsum(job.epsilon for job in jobs), delta * len(jobs),
                       {"runs": len(jobs), "methods": methods,
                        "epsilons": sorted({job.epsilon for job in jobs}),
                        "seeds": len({job.seed for job in jobs}), **(described or {})})


def _end(store: RunStore | None, entry: RunEntry | None, table: pd.DataFrame,
         exc: BaseException | None, stopped: bool = False) -> None:
    """Close the sweep's record: the rows that finished into its folder, then its status
    (finished; cancelled, by a stop or an interrupt; failed). A store that fails is never
    the sweep's failure (its runs are paid for): the record says so, or it is logged."""
    if store is None or entry is None:
        return
    summary = {"rows": len(table), "failed": int(table["error"].notna().sum())}
    try:
        try:
            write_file(entry.folder / TABLE, lambda path: table.to_csv(path, index=False),
                       "the sweep's record")
        except SynthError as failed:
            store.stop(entry.id, FAILED, f"its rows could not be kept: {failed}", summary)
            return
        if exc is None and not stopped:
            store.finish(entry.id, summary)
        elif exc is None or ended(exc) == CANCELLED:
            store.stop(entry.id, CANCELLED, "", summary)
        else:
            store.stop(entry.id, FAILED, without_values(exc), summary)
    except Exception:
        log.exception("recording sweep %s in the run store failed", entry.id)


def recorded(entry: RunEntry) -> pd.DataFrame:
    """A recorded sweep's rows, as it wrote them."""
    try:
        return pd.read_csv(entry.folder / TABLE)
    except (OSError, ValueError) as exc:
        raise StoreError(f"sweep {entry.id}'s rows cannot be read from "
                         f"{str(entry.folder)!r} ({exc})") from None


def _indexed(i: int, job: Job, *args) -> tuple[int, dict[str, Any]]:
    return i, run_job(job, *args)
