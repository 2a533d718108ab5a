"""Sweeps: many runs over a grid of ε, budget splits, methods and one method parameter, with
several seeds, as one tidy table.

A sweep is a list of :class:`Job`s; a job's seed steers post-processing only, and its noise is
fresh, so the same grid twice gives two samples of the same distributions (compare them by
statistics over seeds, never byte for byte). Runs go through
joblib: every local core by default, or any joblib backend the caller configures (a Dask
cluster through ``joblib.parallel_config(backend="dask")``).

A **rehearsal** spends a small share of ε once on a DP stand-in of the table, then runs a sweep
on the stand-in for free. Which method is best depends on the table and the budget, and a
sweep on the real table pays for every run. The stand-in is one release of the table (AIM by
default, the closest on pairs of the methods), charged to the table's account like any run;
everything after it reads the stand-in only, so it is post-processing and costs nothing more.
What it cannot see: the stand-in is smoother than the table and carries its own noise (it
holds only what its own model kept: for AIM, the few marginals it measured, numbers binned and
drawn within their bins), so a figure on it can be off either way, and it favours methods
whose model is like its own. It predicts a choice of method, not a figure to quote.
"""

from __future__ import annotations

import itertools
import logging
import math
import statistics
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import pandas as pd

from synth.account import TableAccount
from synth.errors import ParameterError, SynthError, without_values
from synth.privacy.budget import default_delta
from synth.privacy.domains import DOMAIN
from synth.privacy.unit import PrivacyUnit
from synth.protocol import cut_points
from synth.release import write_file
from synth.schema import Schema
from synth.source import TableFile
from synth.status import CANCELLED, FAILED, ended
from synth.store import SWEEP, RunEntry, RunStore, StoreError

if TYPE_CHECKING:
    from synth.runs import Run, RunRecord

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
          described: Mapping[str, Any] | None = None, charged: bool = True) -> pd.DataFrame:
    """Run every job (``n_jobs`` joblib workers; -1: every core) and return one row per
    finished job, in job order. ``on_row(done, total, row)`` sees each row as it finishes;
    when ``should_stop()`` turns true the runs not yet finished are abandoned and the finished
    rows are returned. Each run reserves its budget in ``account`` before it starts, so the
    runs past the table's limit fail, refused before they read anything; a failed run is a
    row with its ``error``, and the others are kept. With a ``store`` (and an account), the
    sweep is recorded there as it starts, and its rows are written to its folder
    (:data:`TABLE`) as it ends; ``described`` adds to its recorded configuration. A sweep
    that is not ``charged`` reads a release, not the table (a rehearsal's stand-in): it is
    recorded under the table's account as spending nothing, and its runs charge nothing."""
    from joblib import Parallel, delayed

    entry = _start(store, account, jobs, delta, described, charged)
    tasks = (delayed(_indexed)(i, job, train, test, schema, delta,
                               account if charged else None)
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
           delta: float, described: Mapping[str, Any] | None, charged: bool
           ) -> RunEntry | None:
    """Record the sweep as it begins (a store that cannot stops it: nothing has run)."""
    if store is None or account is None:
        return None
    methods = list(dict.fromkeys(job.method for job in jobs))
    return store.start(SWEEP, account.key, account.name, ",".join(methods),
                       math.fsum(job.epsilon for job in jobs) if charged else 0.0,
                       delta * len(jobs) if charged else 0.0,
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


# ---- rehearsals ------------------------------------------------------------------------

REHEARSED = ("independent", "mst", "aim", "gsd", "dpselect")
STAND_IN = "aim"
SHARE = 0.1
CAVEAT = ("The stand-in is smoother than your table and carries its own noise: it keeps only "
          "what its own model kept, so the figures on it can be off either way, and it "
          "favours the methods whose model is like its own. Read the recommendation, not "
          "the figures.")


@dataclass(frozen=True)
class Rehearsal:
    """What a rehearsal found: each method's predicted figures at ``epsilon`` (one row per
    method: medians over seeds, and their range) and the method with the lowest predicted
    2-way TVD; ``stand_in`` is the paid run (its ledger is the rehearsal's whole cost)."""

    epsilon: float
    stand_in: RunRecord
    runs: pd.DataFrame  # every run on the stand-in, as a sweep's rows
    predicted: pd.DataFrame  # per method: tvd2, its min and max, accuracy, seconds, failed
    recommended: str | None

    def to_dict(self) -> dict[str, Any]:
        ledger = self.stand_in.ledger
        return {"epsilon": self.epsilon,
                "stand_in": {"method": self.stand_in.method,
                             "epsilon": ledger["total_epsilon"],
                             "delta": ledger["total_delta"],
                             "shares": {stage: round(part, 6) for stage, part
                                        in self.stand_in.shares.items()}},
                "predicted": {row.method: {key: _plain(getattr(row, key)) for key in
                                           ("tvd2", "tvd2_min", "tvd2_max", "accuracy",
                                            "seconds", "runs", "error")}
                              for row in self.predicted.itertuples(index=False)},
                "recommended": self.recommended, "caveat": CAVEAT}


def trial(methods: Sequence[str] = REHEARSED, epsilon: float = 1.0, seeds: int = 1,
          fixed: Mapping[str, Mapping[str, Any]] | None = None) -> list[Job]:
    """The runs a rehearsal of ``epsilon`` tries on its stand-in: each method with ``seeds``
    seeds and ``fixed`` settings (default the Trade-offs page's quicker ones,
    :data:`DEMO`)."""
    if not epsilon > 0:
        raise ParameterError(f"epsilon must be positive, got {epsilon!r}")
    return grid(methods, [epsilon], seeds, fixed=DEMO if fixed is None else fixed)


def rehearse(table: pd.DataFrame, schema: Schema, jobs: Sequence[Job], share: float = SHARE,
             delta: float | None = None, stand_in: str = STAND_IN,
             account: TableAccount | None = None, store: RunStore | None = None,
             n_jobs: int = 1, on_row: Callable[[int, int, dict[str, Any]], None] | None = None,
             should_stop: Callable[[], bool] | None = None,
             described: Mapping[str, Any] | None = None) -> Rehearsal:
    """Release a stand-in of ``table`` by ``stand_in`` at ε = ``share`` × the largest ε of
    ``jobs`` (charged to ``account`` before it reads a row, recorded in ``store``), then run
    ``jobs`` on the stand-in and score them against it: a sweep recorded in ``store`` as
    spending nothing (``described`` adds to its configuration). Nothing after the stand-in
    reads the table. The predictions are the runs at the largest ε."""
    if not 0 < share < 1:
        raise ParameterError(f"share must be between 0 and 1 (the part of ε the stand-in "
                             f"costs), got {share!r}")
    if not jobs:
        raise ParameterError("a rehearsal needs at least one run to try on its stand-in")
    if any(job.unit.declared for job in jobs):
        raise ParameterError("a rehearsal protects rows, not people: it is not yet offered "
                             "with a privacy unit")
    if n_jobs == 0:
        raise ParameterError("n_jobs must be ≥ 1, or negative (-1: every core), got 0")
    schema.check_declared()  # proposals read off the table must not steer the stand-in's plan
    from synth.methods import FitContext
    from synth.runs import split

    epsilon = max(job.epsilon for job in jobs)
    delta = default_delta(len(table)) if delta is None else delta
    # the stand-in has as many rows as the table, and its runs fit the protocol's train and
    # validation parts of it: a grid none of whose runs can run there is refused unpaid
    tried = cut_points(len(table))[1] if schema.target is not None else len(table)
    _check_tried(jobs, schema.public_view(), delta, tried)
    paid = stand_in_run(stand_in, schema, share * epsilon, delta, len(table), account, store)
    if paid.plan.refusals:  # the ε its ways out name is the stand-in's: say so
        from synth.plan import MOST_DOMAIN_SHARE

        widened = (f" with any domain share up to {MOST_DOMAIN_SHARE:g}"
                   if DOMAIN in paid.budget.shares else "")
        raise type(paid.plan.refusals[0])(
            f"the stand-in, at ε = {share * epsilon:.3g} (a share of {share:g} of ε = "
            f"{epsilon:g}), is refused{widened}: {paid.plan.refusals[0]} (an ε named there is "
            f"the stand-in's: raise the share or ε until their product reaches it)") from None
    record = paid(table, schema, ctx=FitContext(should_stop=should_stop), measure=False)
    # from here on, only the stand-in is read: post-processing, charged to nobody. Its runs
    # see the schema's public view (domains read off the table are the table's, not the
    # stand-in's), and learn the rest from the stand-in as they would from the table
    schema = schema.public_view()
    train, test = split(record.synthetic, schema)
    where = {"stand_in": {"method": stand_in, "run": paid.entry and paid.entry.id,
                          "epsilon": record.ledger["total_epsilon"]}, **(described or {})}
    runs = sweep(jobs, train, test, schema, delta, n_jobs=n_jobs, on_row=on_row,
                 should_stop=should_stop, account=account, store=store, described=where,
                 charged=False)
    methods = list(dict.fromkeys(job.method for job in jobs))
    predicted = summary(runs[runs["epsilon"] == epsilon], methods)
    return Rehearsal(epsilon, record, runs, predicted, recommended(predicted))


def stand_in_run(method: str, schema: Schema, epsilon: float, delta: float, rows: int,
                 account: TableAccount | None = None, store: RunStore | None = None) -> Run:
    """The stand-in's run at ``epsilon``. A stand-in's ε is small, where bounds learned at the
    default domain share may be noise (refused): then the smallest domain share, on the app's
    steps, whose plan refuses nothing. A split of the same ε, chosen from public facts (the
    schema's public view and the row count): a stand-in whose ranges are noise would mislead
    every run tried on it, while its model's part shrinks only where the bounds need it.
    Refused at every share, the run at the default share is returned."""
    from synth.plan import MOST_DOMAIN_SHARE, SHARE_STEP
    from synth.runs import Run

    public = schema.public_view()
    default = Run(method, public, epsilon, delta, rows=rows)
    given, share = default.budget.shares.get(DOMAIN), None
    if given is not None and default.plan.refusals:
        steps = range(round(given / SHARE_STEP) + 1, round(MOST_DOMAIN_SHARE / SHARE_STEP) + 1)
        for share in (round(step * SHARE_STEP, 2) for step in steps):
            if not Run(method, public, epsilon, delta, shares={DOMAIN: share},
                       rows=rows).plan.refusals:
                break
        else:
            share = None  # refused at every share: the default's plan says why
    return Run(method, schema, epsilon, delta, shares=None if share is None else {DOMAIN: share},
               account=account, store=store, rows=rows)


def _check_tried(jobs: Sequence[Job], schema: Schema, delta: float, rows: int) -> None:
    """Refuse, before the stand-in is paid for, a rehearsal none of whose runs could run on
    it: each job planned from public facts (the schema's public view, the stand-in's rows)."""
    from synth.runs import Run

    reasons = {}
    for job in jobs:
        try:
            refusals = Run(job.method, schema, job.epsilon, delta, job.params,
                           rows=rows).plan.refusals
        except SynthError as err:
            refusals = (err,)
        if not refusals:
            return
        reasons.setdefault(job.method, refusals[0].brief)
    raise ParameterError("no run of this rehearsal could run on its stand-in, so nothing was "
                         "spent: " + "; ".join(f"{m}: {r}" for m, r in reasons.items()))


def recommended(predicted: pd.DataFrame) -> str | None:
    """The method of lowest predicted 2-way TVD (None if none finished)."""
    scored = predicted.dropna(subset=["tvd2"])
    return None if scored.empty else str(scored.loc[scored["tvd2"].idxmin(), "method"])


def summary(runs: pd.DataFrame, methods: Sequence[str]) -> pd.DataFrame:
    """One row per method: the median 2-way TVD over its finished runs, their min and max,
    the median tree accuracy and seconds, and the first failure's message if none finished."""
    rows = []
    for method in methods:
        mine = runs[runs["method"] == method]
        done = mine[mine["error"].isna()]
        tvd = done["tvd2"].dropna().tolist()
        accuracy = done["accuracy"].dropna().tolist()
        rows.append({"method": method,
                     "tvd2": statistics.median(tvd) if tvd else None,
                     "tvd2_min": min(tvd) if tvd else None,
                     "tvd2_max": max(tvd) if tvd else None,
                     "accuracy": statistics.median(accuracy) if accuracy else None,
                     "seconds": statistics.median(done["seconds"]) if len(done) else None,
                     "runs": len(done),
                     "error": None if tvd or mine.empty else str(mine["error"].iloc[0])})
    return pd.DataFrame(rows)


def _plain(value: Any) -> Any:
    """A JSON value: NaN and None are null, numpy numbers plain."""
    if value is None or (isinstance(value, float) and value != value):
        return None
    return value.item() if hasattr(value, "item") else value
