"""A run: configure → fit → sample → measure → record, the same for every way of making a
release (the CLI, the app, sweeps, benchmarks and notebooks).

:class:`Run` is configured first, so a caller can show its budget and reproducing command
before anything is spent and read what it spent if it stops (:attr:`Run.spent`); calling it
returns a typed :class:`RunRecord`. :func:`run` does both at once. :func:`split` is the one
hold-out rule: the measuring protocol's test sixth, never shown to the method.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import shlex
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from synth.account import UNBOUNDED, TableAccount
from synth.checklist import Check, release_checklist
from synth.errors import Cancelled, SynthError, without_values
from synth.methods import FitContext, Synthesizer, make
from synth.missing import model_schema
from synth.plan import Plan
from synth.privacy.budget import Budget, default_delta, merge_shares
from synth.privacy.mechanisms import fresh_rng
from synth.privacy.unit import Population, PrivacyUnit, population
from synth.protocol import cut_points, protocol_split
from synth.release import (
    CONFIGURATION,
    LEDGER,
    TABLE,
    Release,
    ReleaseWriter,
    read_csv_text,
)
from synth.schema import Schema
from synth.source import TableFile, read_whole, table_population
from synth.status import FAILED, FINISHED, ended
from synth.store import RUN, RunEntry, RunStore, StoreError

log = logging.getLogger(__name__)

# a run's stages after the fit: a cancel stops the run until its release is drawn; then it
# skips what is left of the comparison, and the paid-for release is written all the same
DRAW, COMPARE, WRITE = "draw", "compare", "write"

if TYPE_CHECKING:  # scikit-learn comes with evaluation: only a run that measures pays for it
    from synth.evaluation import Fidelity


def split(table: pd.DataFrame, schema: Schema, hold_out: bool = True,
          unit: PrivacyUnit | None = None, rng: np.random.Generator | None = None
          ) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """(rows to synthesize, held-out test rows or None). With a target column (utility needs
    one) and ``hold_out``, the protocol split's test sixth is held out and its train and
    validation parts are synthesized; otherwise every row is synthesized.

    With a privacy unit, whole units are held out: of the table's U units (public under the
    relation), exactly ``cut_points(U)[1]`` are synthesized, a uniformly random subset drawn
    with OS entropy. The part's unit count is then a function of U alone (a hash of each ID
    would let renaming one person move it), and one person's rows never move anyone else's.
    The draw is fresh on every call unless ``rng`` is given: the app draws it from a seed the
    run store keeps per table, so a run's views, measured again after a restart, read the
    rows it was made from."""
    if not hold_out or schema.target is None:
        return table, None
    if unit is not None and unit.declared and unit.column in table.columns:
        codes, ids = pd.factorize(table[unit.column])
        if (codes < 0).any():
            population(table, unit)  # refuses, naming the column
        keep = np.zeros(len(ids), dtype=bool)
        keep[(rng or fresh_rng()).permutation(len(ids))[:cut_points(len(ids))[1]]] = True
        test = ~keep[codes]
        return (table[~test].reset_index(drop=True), table[test].reset_index(drop=True))
    train, validation, test = protocol_split(table)
    return pd.concat([train, validation], ignore_index=True), test


def synthesized_rows(n: int, schema: Schema, hold_out: bool = True) -> int:
    """How many of ``n`` rows :func:`split` gives the method (without splitting anything)."""
    return cut_points(n)[1] if hold_out and schema.target is not None else n


@dataclass(frozen=True)
class RunRecord:
    """A finished run. The release is ``synthetic``, ``ledger`` and the released ``schema``
    (:meth:`release`); ``fidelity``, ``scores`` and ``checklist`` compare it with the private
    table, so they are for the steward's eyes only."""

    method: str
    params: dict[str, Any]  # every parameter of the method, defaults filled in
    epsilon: float
    delta: float
    shares: dict[str, float]
    postprocessing_seed: int | None
    command: str  # the `python -m synth run` line for the same configuration
    schema: Schema  # as released: the public view, with any privately learned domains
    ledger: dict[str, Any]
    synthetic: pd.DataFrame
    seconds: float  # the whole run: fit, sample, measurements and checklist
    fit_seconds: float  # the fit alone
    timings: dict[str, float] = field(default_factory=dict)  # wall seconds per stage
    fidelity: Fidelity | None = None  # against the rows synthesized, when measured
    # SDMetrics' quality scores and utility (synth.evaluation), or {"error": message}
    scores: dict[str, Any] = field(default_factory=dict)
    checklist: list[Check] = field(default_factory=list)  # when measured

    def figures(self) -> dict[str, Any]:
        """The measuring protocol's figures (as :func:`synth.evaluation.evaluate` gives them,
        fidelity against the rows synthesized): for the steward, never released."""
        return {"rows": len(self.synthetic), **self.scores,
                "tvd1": self.fidelity.tvd1 if self.fidelity else None,
                "tvd2": self.fidelity.tvd2 if self.fidelity else None}

    @functools.cached_property
    def release(self) -> Release:
        """What the run releases (:class:`~synth.release.Release`): the table, its ledger
        file and the configuration that runs it again."""
        return Release.of(self.synthetic, self.ledger, self.configuration())

    @classmethod
    def read(cls, entry: RunEntry) -> RunRecord:
        """A finished run as the run store keeps it: its release's files as written (the
        record's :attr:`release` is them, byte for byte) and the figures it was measured by.
        Its per-column fidelity and its checklist compared it with the private table, which
        the store never keeps: they are absent."""
        try:
            files = {name: (entry.folder / name).read_bytes()
                     for name in (TABLE, LEDGER, CONFIGURATION)}
            ledger, configuration = (json.loads(files[name]) for name in (LEDGER, CONFIGURATION))
            summary = entry.summary
            record = cls(entry.method, configuration["params"], configuration["epsilon"],
                         configuration["delta"], configuration["shares"],
                         configuration["postprocessing_seed"], configuration["command"],
                         Schema.from_dict(configuration["schema"]), ledger,
                         read_csv_text(files[TABLE]), summary.get("seconds", math.nan),
                         summary.get("fit_seconds", math.nan),
                         # a score of NaN (no pair with a real trend) is kept as "nan"; a
                         # failed or cancelled comparison keeps its words
                         scores={k: v if k == "error" else float(v)
                                 for k, v in summary.get("scores", {}).items()})
        except (OSError, ValueError, KeyError, TypeError, SynthError) as exc:
            raise StoreError(f"run {entry.id}'s release cannot be read from "
                             f"{str(entry.folder)!r} ({type(exc).__name__}: {exc}); synth runs "
                             f"show {entry.id} says what is recorded") from None
        # the release as written (a CSV read back and written again may differ in a digit)
        record.__dict__["release"] = Release(record.synthetic, ledger, configuration,
                                             files[TABLE])
        return record

    def configuration(self) -> dict[str, Any]:
        """The run's configuration (run.json): everything needed to run it again."""
        return {"method": self.method, "params": self.params, "epsilon": self.epsilon,
                "delta": self.delta, "shares": self.shares,
                "postprocessing_seed": self.postprocessing_seed,
                "schema": self.schema.to_dict(), "command": self.command}


class Run:
    """A configured run: the model and budget are made, and every parameter and share
    checked, at once (against ``rows``, the rows the method will see, when given); nothing
    is read or spent until it is called."""

    def __init__(self, method: str, schema: Schema, epsilon: float, delta: float,
                 params: Mapping[str, Any] | None = None,
                 shares: Mapping[str, float] | None = None,
                 postprocessing_seed: int | None = None, account: TableAccount | None = None,
                 rows: int | Population | None = None, unit: PrivacyUnit | None = None,
                 store: RunStore | None = None):
        self.model: Synthesizer = make(method, params)
        self.account = account  # the table's persistent account, charged before the fit
        self.store = store  # where the run is recorded, with its release (needs the account)
        self.entry: RunEntry | None = None  # its record, once it runs
        unit = PrivacyUnit() if unit is None else unit
        # every rule that needs no data, the schema's public facts (and, given, the
        # population's: public under the relation) too; plain values: the command is JSON
        checked = self.model.check_params(rows, model_schema(schema.public_view()))
        self.method, self.given = method, {k: checked[k] for k in params or {}}
        self.budget = self.model.budget_for(Budget(epsilon, delta, merge_shares(
            self.model.default_shares(schema, unit), dict(shares or {})), unit), schema)
        self.postprocessing_seed = postprocessing_seed
        # what a run on the given population would refuse or risk: the page shows it
        self._planned: tuple[Population, Schema, Plan] | None = None
        self.plan = None if rows is None else self.plan_for(Population.of(rows, unit), schema)

    def plan_for(self, population: Population, schema: Schema) -> Plan:
        """The run's :class:`~synth.plan.Plan` on ``population`` (public facts only), worked
        out once for the population and schema it was last asked for (the page shows it,
        then the run checks it)."""
        kept = self._planned
        if kept is None or kept[0] != population or kept[1] is not schema:
            kept = self._planned = (population, schema,
                                    self.model.plan(population, schema, self.budget))
        return kept[2]

    @property
    def command(self) -> str:
        return run_command(self.method, self.budget.epsilon, self.budget.delta,
                           self.postprocessing_seed, self.given, dict(self.budget.shares),
                           unit=self.budget.unit)

    @property
    def spent(self) -> dict[str, Any] | None:
        """The ledger so far, if a mechanism has been charged (for a run that stopped)."""
        ledger = getattr(self.model, "ledger_", None)
        return ledger.to_dict() if ledger is not None and ledger.entries else None

    def stopped(self, exc: BaseException, names: Sequence[str] = (), kept: str = ""
                ) -> Release | None:
        """The release of a run that spent, then stopped with ``exc``: its ledger (what
        ran), no table; None if nothing was spent. It says why as a kept record does
        (:func:`~synth.errors.without_values`: the schema's column ``names``, never a value),
        and where a run that finished before its files were written is ``kept``."""
        ledger = self.spent
        if ledger is None:
            return None
        how = ("cancelled" if isinstance(exc, Cancelled | KeyboardInterrupt) else
               f"failed: {without_values(exc, names)}")
        if kept:
            how += (f" while its files were written; the run finished and is kept in the run "
                    f"store as {kept}")
        return Release.stopped(ledger, self._asked(), how)

    def _asked(self) -> dict[str, Any]:
        """The configuration as asked (a finished run's adds the released schema): releasable,
        its command names no file of yours (DATA.csv, schema.json stand in)."""
        return {"method": self.method, "params": self.model.check_params(),
                "epsilon": self.budget.epsilon, "delta": self.budget.delta,
                "shares": dict(self.budget.shares),
                "postprocessing_seed": self.postprocessing_seed, "command": self.command}

    def __call__(self, table: pd.DataFrame | TableFile, schema: Schema,
                 test: pd.DataFrame | None = None, ctx: FitContext | None = None,
                 rows: int | None = None, measure: bool = True) -> RunRecord:
        """Fit on ``table``, sample ``rows`` (default: as many), and with ``measure`` compare
        the sample with ``table`` (fidelity, the checklist) and ``test`` (utility). A failed
        measurement is recorded in ``scores`` (or the checklist); it never costs the caller
        the release, which is paid for by then. A table read where it lies (a
        :class:`~synth.source.TableFile`, which a sweep's worker opens itself) is fitted as
        it lies; measuring reads its schema's columns whole."""
        ctx = FitContext(postprocessing_seed=self.postprocessing_seed) if ctx is None else ctx
        started = time.perf_counter()
        planned = self.plan_for(table_population(table, self.budget.unit), schema)
        planned.check()  # a doomed run is refused before the account is charged
        # a run that may carry no guarantee is recorded as unbounded (ε = ∞) before it runs,
        # so a lifetime limit refuses it; it settles to its ledger's ε if it kept one
        charge = None if self.account is None else self.account.reserve(
            math.inf if planned.unbounded else self.budget.epsilon, self.budget.delta,
            self.command, self.budget.unit, planned.unbounded)  # or refused: nothing read
        try:  # a record that cannot be opened stops the run: its reservation settles to 0
            self._record(charge, planned)
            model = self.model.fit(table, schema, self.budget, ctx)
            fit_seconds = time.perf_counter() - started
            ctx.stage(DRAW, 1, "drawing the synthetic rows from the fitted model "
                               "(post-processing)")
            synthetic = ctx.wait(lambda: model.sample(rows))
            ctx.progress(DRAW, 1, 1)
            fidelity, scores, checklist = (self._measure(table, synthetic, schema, test, model,
                                                         ctx, self.budget.unit)
                                           if measure else (None, {}, []))
            ctx.stage(WRITE, None, "keeping the release", cancellable=False)
            record = RunRecord(
                self.method, model.check_params(), self.budget.epsilon, self.budget.delta,
                dict(self.budget.shares), self.postprocessing_seed, self.command,
                model.schema_, model.ledger_.to_dict(), synthetic,
                time.perf_counter() - started, fit_seconds, dict(ctx.timings), fidelity,
                scores, checklist)
            ctx.wait(lambda: self._recorded(None, record, test is not None),
                     cancellable=False)
            ctx.finish()
        except BaseException as exc:  # Ctrl-C while sampling or recording too: the account,
            self._settle(charge, ended(exc))  # the store and the ledger all say it stopped
            self._recorded(exc, names=schema.names)
            raise
        self._settle(charge, FINISHED)
        return record

    @staticmethod
    def _measure(table: pd.DataFrame | TableFile, synthetic: pd.DataFrame, schema: Schema,
                 test: pd.DataFrame | None, model: Synthesizer, ctx: FitContext,
                 unit: PrivacyUnit) -> tuple[Fidelity | None, dict[str, Any], list[Check]]:
        """(fidelity, scores, checklist) of a release against the private table, for the
        steward's eyes: a failure, or a cancel, is said in the scores or the checklist,
        never the run's (the release is paid for: it is kept)."""
        from synth.evaluation import marginal_tvd, utility
        from synth.quality import quality

        fidelity, scores, checklist = None, {}, []
        released = model.schema_.reading(schema)  # the bounds the release has, not the table's
        held_out = test is not None and not test.empty and schema.target is not None
        steps = 4 + held_out
        ctx.stage(COMPARE, steps, "comparing the release with the private table, for your "
                                  "eyes only (never released)", cancellable=False)
        cancelled = "the comparison was cancelled; the release is kept"
        try:
            if isinstance(table, TableFile):  # with the unit's column: the checklist's cap
                table = ctx.wait(lambda: read_whole(table, [*schema.names, *(
                    [unit.column] if unit.declared else [])]))
            ctx.progress(COMPARE, 1, steps)
            fidelity = ctx.wait(lambda: marginal_tvd(table, synthetic, released))
            ctx.progress(COMPARE, 2, steps)
            report = ctx.wait(lambda: quality(table, synthetic, schema))
            scores = {"column_shapes": report.column_shapes,
                      "column_pair_trends": report.column_pair_trends,
                      "quality": report.overall, "data_validity": report.validity}
            ctx.progress(COMPARE, 3, steps)
            if held_out:
                scores.update(ctx.wait(lambda: utility(test, synthetic, released,
                                                       real_train=table)))
                ctx.progress(COMPARE, 4, steps)
        except Cancelled:
            return fidelity, {**scores, "error": cancelled}, [Check("checklist", cancelled,
                                                                   warn=True)]
        except Exception as exc:
            scores = {"error": _said(exc, schema.names)}
        try:
            checklist = ctx.wait(lambda: release_checklist(table, synthetic, released, unit))
            ctx.progress(COMPARE, steps, steps)
        except Cancelled:
            checklist = [Check("checklist", cancelled, warn=True)]
        except Exception as exc:
            checklist = [Check("checklist", f"could not be made: {_said(exc, schema.names)}",
                               warn=True)]
        return fidelity, scores, checklist

    def _record(self, charge: int | None, planned: Plan) -> None:
        """Open the run's record in the store (running), with its account charge."""
        if self.store is None or self.account is None:
            return
        self.entry = self.store.start(
            RUN, self.account.key, self.account.name, self.method, self.budget.epsilon,
            self.budget.delta, {**self._asked(), "seconds_planned": planned.seconds}, charge)

    def _recorded(self, exc: BaseException | None, record: RunRecord | None = None,
                  held_out: bool = False, names: Sequence[str] = ()) -> None:
        """Close the run's record: its release's files into its folder (a stopped run's
        ledger, if it spent), then its status and figures (``held_out``: whether utility was
        measured on held-out rows, so a comparison can split the table again). A store that
        fails is never the run's failure (the release is paid for, and the caller holds it):
        the record is closed as failed, saying why, or, if even that fails, logged."""
        if self.entry is None:
            return
        release = record.release if record is not None else self.stopped(exc, names)
        try:
            try:
                if release is not None:
                    folder = self.entry.folder
                    writer = ReleaseWriter({name: folder / name for name in
                                            (LEDGER, CONFIGURATION, TABLE)}, {}, 0)
                    try:
                        writer.write(release)
                    finally:
                        writer.abort()
            except SynthError as failed:
                self.store.stop(self.entry.id, FAILED, f"its files could not be kept: {failed}")
                return
            if record is not None:
                fidelity = record.fidelity
                self.store.finish(self.entry.id, {
                    "rows": len(record.synthetic), "scores": record.scores,
                    "tvd1": fidelity and fidelity.tvd1, "tvd2": fidelity and fidelity.tvd2,
                    "held_out": held_out, "epsilon_spent": record.ledger["total_epsilon"],
                    "delta_spent": record.ledger["total_delta"], "seconds": record.seconds,
                    "fit_seconds": record.fit_seconds})
            else:
                status = ended(exc)
                self.store.stop(self.entry.id, status,
                                "" if status != FAILED else without_values(exc, names))
        except Exception:
            log.exception("recording run %s in the run store failed", self.entry.id)

    def _settle(self, charge: int | None, status: str) -> None:
        """The account's charge down to what the ledger spent (nothing, if nothing ran). If
        that fails, the charge keeps its whole reservation, and the run goes on."""
        if charge is None:
            return
        ledger = getattr(self.model, "ledger_", None)
        eps, delta = (0.0, 0.0) if ledger is None or not ledger.entries else (
            ledger.total_epsilon, ledger.total_delta)
        if ledger is not None and not ledger.guaranteed:
            status = UNBOUNDED
        try:
            self.account.settle(charge, eps, delta, status)
        except Exception:
            log.exception("settling charge %s failed: it keeps its whole reservation", charge)


def _said(exc: Exception, names: Sequence[str]) -> str:
    """A measurement's failure as the run store keeps it (:func:`~synth.errors.without_values`);
    a bug is logged for us whole."""
    if not isinstance(exc, SynthError):
        log.exception("measuring a finished run failed")
    return without_values(exc, names)


def run(table: pd.DataFrame | TableFile, schema: Schema, method: str, epsilon: float,
        delta: float | None = None, params: Mapping[str, Any] | None = None,
        shares: Mapping[str, float] | None = None, postprocessing_seed: int | None = None,
        test: pd.DataFrame | None = None, ctx: FitContext | None = None,
        measure: bool = True, account: TableAccount | None = None,
        unit: PrivacyUnit | None = None) -> RunRecord:
    """Configure and run at once (δ by default :func:`default_delta` of the units): see
    :class:`Run`."""
    unit = PrivacyUnit() if unit is None else unit
    delta = default_delta(table_population(table, unit).units) if delta is None else delta
    return Run(method, schema, epsilon, delta, params, shares, postprocessing_seed, account,
               unit=unit)(table, schema, test, ctx, measure=measure)


def run_command(method: str, epsilon: float, delta: float, seed: int | None,
                params: Mapping[str, Any], shares: Mapping[str, float],
                data: str = "DATA.csv", schema: str = "schema.json",
                unit: PrivacyUnit | None = None) -> str:
    """The ``python -m synth run`` line that runs the same configuration (for the app and
    reports). Its noise is fresh, so it makes another release from the same distribution."""
    words = ["python", "-m", "synth", "run", data, "--schema", schema, "--method", method,
             "--epsilon", f"{epsilon:g}", "--delta", f"{delta:g}",
             "--out", "synth.csv", "--ledger", "ledger.json"]
    if unit is not None and unit.declared:
        words += ["--privacy-unit", unit.column, "--max-rows-per-unit", str(unit.max_rows)]
    if seed is not None:
        words += ["--postprocessing-seed", str(seed)]
    for key, value in params.items():
        words += ["--set", f"{key}={json.dumps(value)}"]
    for stage, share in shares.items():
        # 12 digits: 0.1, not the 0.09999999999999998 a complement leaves (shares are
        # normalised within 1e-6, so the run is the same)
        words += ["--set", f"share.{stage}={float(share):.12g}"]
    return shlex.join(words)
