"""The one interface every method implements, and the events a fit reports.

A synthesizer follows the scikit-learn contract: the constructor stores parameters and does
nothing else; ``fit(table, schema, budget, ctx)`` validates, learns any data-derived domains
under DP, then trains; learned state ends in an underscore; ``sample(n)`` returns a DataFrame
with the schema's columns and dtypes.
"""

from __future__ import annotations

import contextlib
import inspect
import math
import os
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, TypeVar

import numpy as np
import pandas as pd

from synth import missing
from synth.data import human_bytes
from synth.dates import released
from synth.encoding import rounded
from synth.errors import (
    BudgetError,
    Cancelled,
    ParameterError,
    SchemaError,
    SynthError,
    check_int,
    is_number,
)
from synth.plan import NoiseScale, Plan, Recipe, open_ledger, plan, priced
from synth.privacy import mechanisms
from synth.privacy.budget import ALL, Budget, LedgerEntry
from synth.privacy.domains import DOMAIN, default_share, learn_domains
from synth.privacy.unit import (
    ROWS,
    ROWS_SHARE,
    Population,
    PrivacyUnit,
    bound,
    estimate_rows,
    rows_event,
)
from synth.schema import CATEGORICAL, Schema, check_columns, check_schema, prepare, validate
from synth.source import READ, Chunks, TableFile, read_whole
from synth.validation import Param, check_all

# ---- events ---------------------------------------------------------------------------------

HEARTBEAT = 1.0  # seconds: a stage that reports nothing for this long repeats its last step
T = TypeVar("T")


@dataclass(frozen=True)
class StageStarted:
    """A new stage of the fit begins; ``total`` steps if known."""

    stage: str
    total: int | None = None
    description: str = ""


@dataclass(frozen=True)
class Progress:
    """``step`` of ``total`` done in ``stage``, with metrics such as losses."""

    stage: str
    step: int
    total: int | None = None
    metrics: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Spent:
    """A mechanism was charged to the ledger; totals so far included."""

    entry: LedgerEntry
    total_epsilon: float
    total_delta: float


Event = StageStarted | Progress | Spent


@dataclass
class FitContext:
    """What a fit needs from its caller: where to send events, when to stop, and optionally a
    seed for post-processing.

    ``postprocessing_seed`` steers only what happens after the private table is touched by a
    mechanism (initialisations, the genetic searches, sampling from a fitted model): privacy
    noise never depends on it (see :mod:`synth.privacy.mechanisms`), so the same seed twice
    gives two different releases. ``progress`` events of one stage are throttled to one per
    ``min_interval`` seconds (the first and last step always pass, the last of a stage of
    unknown length when the stage ends); ``should_stop`` is checked
    on every call regardless. A stage that works without steps keeps the caller informed
    through :meth:`beat` (in a loop) or :meth:`wait` (one long call): an event at least every
    :data:`HEARTBEAT` seconds and a cancel that lands within a tenth of a second.
    """

    postprocessing_seed: int | None = None
    on_event: Callable[[Event], None] | None = None
    should_stop: Callable[[], bool] | None = None
    device: str = "auto"
    min_interval: float = 0.1
    timings: dict[str, float] = field(default_factory=dict)  # wall seconds per stage
    _last: dict[str, float] = field(default_factory=dict, repr=False)
    _current: tuple[str, float] | None = field(default=None, repr=False)
    _step: tuple[str, int, int | None] | None = field(default=None, repr=False)
    _heard: float = field(default=0.0, repr=False)  # when the last event was sent
    _left: bool = field(default=False, repr=False)  # a wait was interrupted: stop everywhere
    _held: Progress | None = field(default=None, repr=False)  # the last step throttled away

    def __post_init__(self) -> None:
        check_seed(self.postprocessing_seed, "postprocessing_seed")
        for name in ("on_event", "should_stop"):
            if getattr(self, name) is not None and not callable(getattr(self, name)):
                raise ParameterError(f"{name} must be a function or None, got "
                                     f"{getattr(self, name)!r}")
        if not is_number(self.min_interval) or not self.min_interval >= 0:
            raise ParameterError(f"min_interval must be a number of seconds ≥ 0, got "
                                 f"{self.min_interval!r}")

    def emit(self, event: Event) -> None:
        self._heard = time.monotonic()
        if self.on_event is not None:
            self.on_event(event)

    def check(self) -> None:
        """Raise :class:`Cancelled` if the caller asked to stop (or a :meth:`wait` was
        interrupted: the call it left behind stops at its next check)."""
        if self._left or (self.should_stop is not None and self.should_stop()):
            raise Cancelled("the run was cancelled")

    def stage(self, name: str, total: int | None = None, description: str = "",
              cancellable: bool = True) -> None:
        """Begin stage ``name`` (``total`` steps, if known); first, unless it is not
        ``cancellable`` (what is paid for is being kept), check for a cancel."""
        if cancellable:
            self.check()
        self.finish()
        self._current = (name, time.perf_counter())
        self._last.pop(name, None)
        self._step = (name, 0, total)
        self.emit(StageStarted(name, total, description))
        if cancellable:  # and again: a cancel its listener asked lands before any charge
            self.check()

    def finish(self) -> None:
        """Close the current stage's clock (the next :meth:`stage` call does it too), first
        sending its last step if throttling held it back (a stage of unknown length cannot
        tell its last step when it comes)."""
        if self._held is not None:
            held, self._held = self._held, None
            self.emit(held)
        if self._current is not None:
            name, started = self._current
            self.timings[name] = self.timings.get(name, 0.0) + time.perf_counter() - started
            self._current = None

    def progress(self, stage: str, step: int, total: int | None = None, **metrics: float) -> None:
        self.check()
        self._step = (stage, step, total)
        now = time.monotonic()
        last = self._last.get(stage)
        event = Progress(stage, step, total, {k: float(v) for k, v in metrics.items()})
        if last is None or step == total or now - last >= self.min_interval:
            self._last[stage], self._held = now, None
            self.emit(event)
            self.check()  # a cancel asked while the event was heard lands before what follows
        else:
            self._held = event

    def beat(self) -> None:
        """Check for a cancel; if nothing was sent for :data:`HEARTBEAT` seconds, repeat the
        current stage's last step, so the caller sees the stage alive. For loops whose
        steps are not the stage's own (scoring candidates, a solver's rounds)."""
        self.check()
        if self._step is not None and time.monotonic() - self._heard >= HEARTBEAT:
            self.emit(Progress(*self._step))

    def wait(self, work: Callable[[], T], cancellable: bool = True) -> T:
        """``work()``, one call that says nothing while it runs (a JIT compile, a solver, a
        library's report), in a helper thread while this one beats (:meth:`beat`) every
        tenth of a second. A cancel (or Ctrl-C) raises here at once and drops the call's
        result; the call stops at its next check of this context, or at its end, and every
        later check of this context raises too (a cancelled context stays cancelled). A
        helper started from the main thread is no daemon: the interpreter waits for it rather
        than kill it inside a library's native code. ``work`` must not charge the ledger or
        draw noise: those stay on the fit's own thread. Work that is not ``cancellable``
        (keeping a paid-for release) is only kept alive, and waited for even on Ctrl-C."""
        if cancellable:
            self.check()
        done, out = threading.Event(), {}

        def target() -> None:
            try:
                out["value"] = work()
            except BaseException as exc:  # carried to the waiting thread
                out["error"] = exc
            finally:
                done.set()

        threading.Thread(target=target, name="synth wait").start()
        try:
            while not done.wait(0.1):
                if cancellable:
                    self.beat()
                elif self._step is not None and time.monotonic() - self._heard >= HEARTBEAT:
                    self.emit(Progress(*self._step))
        except BaseException:
            self._left = True
            if not cancellable:  # never two writers of one release
                done.wait()
            raise
        if "error" in out:
            raise out["error"]
        return out["value"]

    def resolve_device(self) -> str:
        """'cuda' when asked for or (with 'auto') available, else 'cpu'."""
        if self.device != "auto":
            return self.device
        import torch  # deferred: only neural methods pay for the import

        return "cuda" if torch.cuda.is_available() else "cpu"


# ---- the interface --------------------------------------------------------------------------


class Synthesizer:
    """A synthesis method: configured by its parameters, fitted once under a budget, sampled
    as often as wanted.

    ``fit(table, schema, budget, ctx)`` spends at most ``budget`` and leaves the fitted
    state: ``ledger_`` (every charge, each made before its mechanism ran), ``plan_`` (what the
    fit was allowed to charge, and the method's recipe), ``schema_`` (the released schema:
    declared domains plus the learned ones), ``timings_`` and ``n_rows_``. ``sample(n)`` is
    post-processing and spends nothing. ``plan(population, schema, budget)`` says what a fit
    would do, and ``preview(n, schema, budget)`` the noise every stage would use, without
    reading any data.

    Subclasses set the class attributes below and implement ``_recipe`` (what a fit will do,
    from public facts), ``_fit`` (doing it) and ``_sample`` (see the architecture page of the
    documentation)."""

    name: ClassVar[str]
    title: ClassVar[str]
    summary: ClassVar[str]  # two lines for the app: what it does
    # one sentence for the app on when it is the better choice, with the figures of the
    # benchmarks that say so (benchmarks/results/peers.json, Adult by the protocol)
    when: ClassVar[str]
    paper: ClassVar[str]
    stages: ClassVar[Mapping[str, float]]  # the method's own budget shares, summing to 1
    # the accountant each stage's events are composed by (synth.privacy.accounting)
    accountants: ClassVar[Mapping[str, str]]
    # the parameter, if any, that splits the method's budget between its first stage and the
    # rest (the app shows it as a slider next to the other shares)
    share_param: ClassVar[str | None] = None
    # the stages whose every event is pure ε-DP (Laplace, a theorem's ε; basic composition):
    # δ there would go unused, so they get none (Budget.pure), as the rows stage does
    pure_stages: ClassVar[frozenset[str]] = frozenset()
    # one Param per constructor parameter: what fit, the CLI's --set and the app's widgets
    # accept (synth.validation)
    params: ClassVar[Mapping[str, Param]] = {}
    # True for a method that reads the table in chunks (it counts, or DP-SGD keeps only the
    # rows its batches draw): its _fit takes the table as Chunks, and a file is read a chunk
    # at a time; otherwise _fit takes the whole table as a DataFrame
    streams: ClassVar[bool] = False
    # True for a method that reads the table only through synth.marginals.count: a Dask
    # cluster can then count a Parquet table where it lies (TableFile's scheduler)
    counts: ClassVar[bool] = False
    # a small setting that fits a few thousand rows in seconds: what the method contract suite
    # (tests/test_contract.py) and smoke checks run, never a default for stewards
    quick: ClassVar[Mapping[str, Any]] = {}
    # constructor parameters that are another method, configured (DP-Select's ``gan``: a
    # DPGAN; None means its defaults). Their parameters are named ``gan__epochs``,
    # scikit-learn's way, wherever parameters are named: params, get_params, make, --set
    nested: ClassVar[Mapping[str, type[Synthesizer]]] = {}

    def get_params(self) -> dict[str, Any]:
        """Every parameter by name, a nested method's as ``name__param``."""
        values: dict[str, Any] = {}
        for name in _signature(type(self)):
            value = getattr(self, name)
            if name in self.nested:
                _check_nested(name, self.nested[name], value)
                inner = self.nested[name]() if value is None else value
                values.update({f"{name}__{k}": v for k, v in inner.get_params().items()})
            else:
                values[name] = value
        return values

    @classmethod
    def param_defaults(cls) -> dict[str, Any]:
        """The defaults by name, a nested method's as ``name__param``."""
        values: dict[str, Any] = {}
        for name, default in _signature(cls).items():
            if name in cls.nested:  # its default: None, the nested method's defaults
                values.update({f"{name}__{k}": v
                               for k, v in cls.nested[name].param_defaults().items()})
            else:
                values[name] = default
        return values

    @classmethod
    def own_name(cls, param: str) -> str | None:
        """What this method calls ``param``: its own, or a nested method's (DP-Select's
        ``gan__epochs`` for ``epochs``); None where it has none."""
        known = cls.param_defaults()
        return next((n for n in (param, *(f"{o}__{param}" for o in cls.nested)) if n in known),
                    None)

    def set_params(self, **values: Any) -> Synthesizer:
        """Set parameters by name (``gan__epochs`` sets the nested method's: a new one is
        made, so a method given by the caller is never changed); unknown names are
        refused by name."""
        known = self.param_defaults()
        for name in values:
            if name not in known and name not in self.nested:
                meant = self.own_name(name)
                raise ParameterError(
                    f"unknown parameter {name!r} for method {self.name!r}; "
                    + (f"did you mean {meant!r}?" if meant else
                       f"it takes {sorted(known) or 'no parameters'}"))
        for outer, cls in self.nested.items():
            if outer in values:  # a configured method first, then any of its parameters
                _check_nested(outer, cls, values[outer])
                setattr(self, outer, values[outer])
            mine = inner(values, outer)
            if mine:
                current = getattr(self, outer)
                setattr(self, outer, cls(**{**({} if current is None else
                                                current.get_params()), **mine}))
        for name, value in values.items():
            if "__" not in name and name not in self.nested:
                setattr(self, name, value)
        return self

    def default_shares(self, schema: Schema, unit: PrivacyUnit | None = None,
                       domain_share: float | None = None) -> dict[str, float]:
        """The method's stage shares, with a ``domain`` share when the schema needs one (by
        default :func:`~synth.privacy.domains.default_share`) and a ``rows`` share when
        ``unit`` keeps more than one row per unit (its row count is then estimated
        privately)."""
        share = default_share(schema) if domain_share is None else domain_share
        extra = {DOMAIN: share} if schema.to_learn else {}
        if unit is not None and unit.max_rows > 1:
            extra[ROWS] = ROWS_SHARE
        if not extra:
            return dict(self.stages)
        rest = 1 - math.fsum(extra.values())
        return {**extra, **{k: v * rest for k, v in self.stages.items()}}

    def check_params(self, n: int | Population | None = None, schema: Schema | None = None
                     ) -> dict[str, Any]:
        """Every parameter checked against its declared :class:`~synth.validation.Param`
        (``params``), then the rules that tie several together (:meth:`_check_rules`; those
        that need the population (an int: n rows, one per unit) or the model-space schema
        only when given). Refuses the first bad one by name; returns the values as plain
        Python values, leaving the attributes as given. The rules see only the public
        population (:meth:`~synth.privacy.unit.Population.public`)."""
        values = check_all(self.get_params(), self.params)
        if n is not None:
            n = (n if isinstance(n, Population) else Population.of(n, PrivacyUnit())).public()
        self._check_rules(values, n, schema)
        for outer, cls in self.nested.items():  # a nested method's rules, in its owner's names
            try:
                cls()._check_rules(inner(values, outer), n, schema)
            except ParameterError as exc:
                raise renamed(exc, outer, cls.params) from None
        parts, most = self._memory_of(values, n, schema), memory_bound()
        if sum(parts.values()) > most:
            worst = max(parts, key=parts.__getitem__)
            raise ParameterError(
                f"{worst} would need about {human_bytes(parts[worst])} of memory "
                f"({human_bytes(sum(parts.values()))} in all), over the {human_bytes(most)} "
                "bound (half this machine's memory): use smaller values")
        return values

    def _check_rules(self, values: dict[str, Any], population: Population | None,
                     schema: Schema | None) -> None:
        """Rules between parameters, or between a parameter and the ``population`` (rows,
        units) or the model-space ``schema`` (public facts: column count and kinds)."""

    def check_unit(self, unit: PrivacyUnit) -> None:
        """Refuse, by name, a unit of protection this method cannot calibrate for (all of
        them take one row per unit)."""

    def budget_for(self, budget: Budget, schema: Schema) -> Budget:
        """``budget`` as this method spends it: the default single share (``"all"``) becomes
        the method's own split; a split that leaves out a stage, or contradicts the method's
        share parameter (``share.gan`` against ``gan_share``), is refused by name. Unless
        the budget splits δ itself, δ follows ε's split but for the pure ε-DP stages (the
        rows stage's Laplace count, ``pure_stages``, and the domain stage when it learns only
        numeric bounds), whose δ goes to the others."""
        if not isinstance(budget, Budget):
            raise BudgetError(f"budget must be a Budget(epsilon, delta[, shares]), got "
                              f"{budget!r}")
        self.check_unit(budget.unit)
        learned = [c.kind for c in schema.to_learn]  # bounds and blanks: pure ε-DP
        pure = {ROWS, *self.pure_stages, *([DOMAIN] if learned and CATEGORICAL not in learned
                                           else [])}
        if dict(budget.shares) == {ALL: 1.0}:
            return replace(budget, shares=self.default_shares(schema, budget.unit)).pure(pure)
        unshared = [s for s in self.stages if s not in budget.shares]
        if budget.unit.max_rows > 1 and ROWS not in budget.shares:
            unshared.append(ROWS)
        if unshared:
            raise BudgetError(f"method {self.name!r} needs budget shares for {unshared}; "
                              f"the budget has {sorted(budget.shares)} (leave shares out to "
                              "use the method's own split)")
        if self.share_param is not None:
            given = {s: budget.shares[s] for s in self.stages}
            total = math.fsum(given.values())
            for stage, want in self.stages.items():
                got = given[stage] / total if total > 0 else 0.0
                if abs(got - want) > 1e-6:
                    split = " : ".join(f"{v:g}" for v in self.stages.values())
                    raise BudgetError(
                        f"share {stage!r} ({given[stage]:g} of the budget) contradicts "
                        f"{self.share_param}={getattr(self, self.share_param)!r}, which splits "
                        f"{' and '.join(self.stages)} {split}; set {self.share_param} to "
                        f"change that split, not share.{stage}")
        return budget if budget.delta_shares is not None else budget.pure(pure)

    def recipe(self, population: Population, schema: Schema, budget: Budget) -> Recipe:
        """What a fit on ``population`` would do (:class:`~synth.plan.Recipe`), from public
        facts only: the model-space ``schema`` (domains still to learn priced at their most,
        :func:`~synth.plan.priced`) and ``budget``, the method's split. The parameters are
        checked first; the hook reads them as plain values. Raises a :class:`SynthError` for
        a run that cannot succeed."""
        values = self.check_params(population, schema)
        with self._plain(values):
            made = self._recipe(population, schema, budget)
        return replace(made, memory=self._memory_of(values, population, schema))

    def plan(self, population: Population, schema: Schema, budget: Budget) -> Plan:
        """The run's :class:`~synth.plan.Plan` on the public ``population`` and the working
        ``schema`` (private domains not yet learned), under ``budget`` as
        :meth:`budget_for` splits it."""
        return plan(self.recipe, self.accountants, population, schema, budget)

    def preview(self, n: int | Population, schema: Schema, budget: Budget
                ) -> list[NoiseScale]:
        """The noise every stage would use for an ``n``-row table (or a :class:`Population`
        of units): the plan's steps in words, so the trade-offs of a budget split can be
        shown before anything is spent. With more than one row per unit the public k·U
        stands for the fit's private estimate n̂ (the rows bounding keeps are private)."""
        check_schema(schema)
        budget = self.budget_for(budget, schema)
        population = Population.of(n, budget.unit).public()
        self.check_params(population, priced(schema, budget, population))
        return list(self.plan(population, schema, budget).scales)

    def fit(self, table: pd.DataFrame | TableFile, schema: Schema, budget: Budget,
            ctx: FitContext | None = None) -> Synthesizer:
        """Fit on ``table``: a DataFrame, or a :class:`~synth.source.TableFile` read where it
        lies. A method that ``streams`` reads a file in chunks, holding one at a
        time; the others, and any fit with a unit of protection, read its columns whole.

        The privacy pipeline is the same for every method, one named step each: read, bound
        each unit's contribution, check everything public (parameters, the plan) before the
        first charge, estimate the row count privately (k > 1), learn the private domains,
        encode, then the method's own ``_fit``. The parameters stay as given."""
        ctx = FitContext() if ctx is None else ctx
        if not isinstance(ctx, FitContext):
            raise ParameterError(f"ctx must be a FitContext or None, got {ctx!r}")
        self.__dict__.pop("schema_", None)  # a failed or cancelled fit leaves it unfitted
        budget = self._open_ledger(schema, budget, ctx)
        ctx.wait(mechanisms.load)  # cancellable while the noise library loads
        table, file = self._read(table, schema, budget.unit, ctx)
        table, data, units = self._bound(table, file, schema, budget.unit)
        # U (and n with one row per unit) are public: the rules can check them before
        # anything is spent (the ledger is empty); k·U bounds the row count
        population = Population(len(data), len(data) if units is None else
                                int(units.max(initial=-1)) + 1, budget.unit.max_rows)
        values = self.check_params(population, priced(schema, budget, population))
        with self._plain(values):
            self._check_plan(population, schema, budget)
            population = self._private_rows(len(data), population, ctx)
            read_once = bool(schema.to_learn)  # a file is read (and checked) to learn domains
            learned, data = self._learn_domains(table, data, schema, population, ctx)
            schema = learned.public_view()  # releasable: no flags read off the table
            self.population_ = population  # public: n (or n̂), U, k
            self.n_rows_ = population.rows  # the public n: no row is dropped but by bounding
            space = missing.model_schema(schema)
            # the plan's recipe, or one made at the facts the plan stood in for (n̂, the
            # learned domains: DP outputs; the rules saw the public ones): the fit reads it
            # and works none of it out again
            recipe = self.plan_.recipe if population.max_rows == 1 and not read_once \
                else self._recipe(population, space, self.ledger_.budget)
            self._units = units  # each row's unit, for DP-SGD over units; never kept
            try:
                # the file is read as the steward declared it (the release drops its formats)
                self._fit(self._encode(data, file, learned, checked=read_once), space,
                          recipe, ctx)
            finally:
                del self._units
        ctx.finish()
        self.timings_ = dict(ctx.timings)
        self.schema_ = schema  # set last: it marks the model as fitted
        return self

    def _open_ledger(self, schema: Schema, budget: Budget, ctx: FitContext) -> Budget:
        """Check the schema and budget, and open the fit's ledger (and post-processing
        generator); returns the budget as this method spends it."""
        check_schema(schema)
        schema.check_declared()
        budget = self.budget_for(budget, schema)
        self.ledger_ = open_ledger(self.accountants, budget, on_spend=lambda e: ctx.emit(
            Spent(e, self.ledger_.total_epsilon, self.ledger_.total_delta)))
        self.rng_ = np.random.default_rng(ctx.postprocessing_seed)  # post-processing only
        if budget.unit.column in schema.names:
            raise SchemaError(f"column {budget.unit.column!r} is the privacy unit: leave it "
                              "out of the synthesised columns (it is never released)")
        return budget

    def _read(self, table: pd.DataFrame | TableFile, schema: Schema, unit: PrivacyUnit,
              ctx: FitContext) -> tuple[pd.DataFrame | None, TableFile | None]:
        """(the table in memory, or None; the file read where it lies, or None): a file is
        read whole when the method does not stream or a unit must be bounded."""
        if not isinstance(table, TableFile):
            return table, None
        if unit.declared or not self.streams:
            ctx.stage(READ, len(table), f"reading {table.name} into memory")
            return read_whole(table, [*schema.names, *([unit.column] if unit.declared
                                                       else [])],
                              lambda done, rows: ctx.progress(READ, done, rows)), None
        return None, table

    @staticmethod
    def _bound(table: pd.DataFrame | None, file: TableFile | None, schema: Schema,
               unit: PrivacyUnit) -> tuple[pd.DataFrame | None, pd.DataFrame | Chunks,
                                           np.ndarray | None]:
        """(the bounded table, the data checked against the schema, each row's unit): before
        any mechanism sees the table, at most k rows per unit, no unit column. A file read
        where it lies has one row per unit (n is its row count) and is checked as it is
        read."""
        if file is not None:
            check_columns(pd.DataFrame(columns=file.columns), schema)
            if len(file) == 0:
                raise SchemaError("the table has no rows")
            return None, Chunks.of_file(file, schema, encode=False), None
        table, units = bound(table, unit)
        return table, validate(table, schema), units

    @contextlib.contextmanager
    def _plain(self, values: dict[str, Any]) -> Iterator[None]:
        """The parameters as the plain Python values :meth:`check_params` made of them
        (np.int64(8) → 8, 64.0 → 64 for an integer: torch and JSON take those) while the fit
        reads them; the caller's, as given, afterwards (the scikit-learn contract)."""
        given = {name: getattr(self, name) for name in _signature(type(self))}
        self.set_params(**values)
        try:
            yield
        finally:
            for name, value in given.items():
                setattr(self, name, value)

    def _check_plan(self, population: Population, schema: Schema, budget: Budget) -> None:
        """The plan's refusals (public facts only) before the first charge; from then on the
        ledger refuses any charge the plan does not hold."""
        self.plan_ = self.plan(population, schema, budget)
        self.plan_.check()
        self.ledger_.guard = self.plan_.guard

    def _private_rows(self, rows: int, population: Population, ctx: FitContext) -> Population:
        """With more than one row per unit the row count after bounding is private: its
        Laplace estimate n̂ replaces it (see :mod:`synth.privacy.unit`)."""
        k = population.max_rows
        if k == 1:
            return population
        event = rows_event(self.ledger_.budget.allowance(ROWS)[0], k)
        ctx.stage(ROWS, 1, "estimating the row count under DP")
        self.ledger_.charge(ROWS, event, f"row count after keeping at most {k} rows per unit")
        population = replace(population, rows=estimate_rows(rows, population.units, event, k))
        ctx.progress(ROWS, 1, 1)
        return population

    def _learn_domains(self, table: pd.DataFrame | None, data: pd.DataFrame | Chunks,
                       schema: Schema, population: Population, ctx: FitContext
                       ) -> tuple[Schema, pd.DataFrame | Chunks]:
        """(the schema with every private domain learned under DP, the data prepared for
        it); the schema itself when every domain is public. A file is counted as it is
        read. The mechanisms see the public rows (n, or k·U), as the plan did."""
        if not schema.to_learn:
            return schema, data
        rows, k = population.units * population.max_rows, population.max_rows
        if isinstance(data, Chunks):
            return learn_domains(data.scan(ctx, DOMAIN, "reading the table to learn its "
                                           "domains under DP"), schema, self.ledger_,
                                 rows, rows_per_unit=k), data
        ctx.stage(DOMAIN, len(schema.to_learn),
                  "learning data-derived domains under DP")
        learned = learn_domains(data, schema, self.ledger_, rows,
                                progress=lambda i, n: ctx.progress(DOMAIN, i, n),
                                rows_per_unit=k)
        return learned, prepare(table, learned)

    def _encode(self, data: pd.DataFrame | Chunks, file: TableFile | None, schema: Schema,
                checked: bool) -> pd.DataFrame | Chunks:
        """The data in model space: chunks of a file (``checked`` once already, when its
        domains were learned from it), chunks of a frame for a method that ``streams``, or
        the encoded frame."""
        if file is not None:
            return Chunks.of_file(file, schema, target=not checked)
        if self.streams:
            return Chunks.of_frame(missing.encode(data, schema))
        return missing.encode(data, schema)

    def _recipe(self, population: Population, schema: Schema, budget: Budget) -> Recipe:
        """The method's :class:`~synth.plan.Recipe` from public facts only (the model-space
        ``schema``, whose domains may still be private; the parameters as plain values):
        its steps exactly, or as bounds where they wait for a private choice or fact, the
        settings its ``_fit`` reads, and its time. Raises a :class:`SynthError` for a run
        that cannot succeed: :func:`synth.plan.plan` refuses it before the first charge."""
        raise NotImplementedError

    def _memory(self, values: dict[str, Any], population: Population | None,
                schema: Schema | None) -> dict[str, int]:
        """Peak bytes a fit would hold, from public facts, by what drives them (parameter
        names); empty where no parameter can drive memory far. :meth:`check_params` refuses
        a total over :func:`memory_bound`, naming the largest part."""
        return {}

    def _memory_of(self, values: dict[str, Any], population: Population | None,
                   schema: Schema | None) -> dict[str, int]:
        """:meth:`_memory`, and each nested method's, whose drivers are named as here
        (``gan__components``)."""
        parts = dict(self._memory(values, population, schema))
        for outer, cls in self.nested.items():
            named = re.compile(rf"\b({'|'.join(cls.params)})\b")
            parts.update({named.sub(rf"{outer}__\1", k): v for k, v in cls()._memory(
                inner(values, outer), population, schema).items()})
        return parts

    def sample(self, n: int | None = None, seed: int | None = None) -> pd.DataFrame:
        """``n`` synthetic rows (default: as many as the private table had): numbers at
        their declared precision, dates as text in their column's release format."""
        if not hasattr(self, "schema_"):
            raise SynthError(f"{type(self).__name__} is not fitted; call fit() first")
        n = self.n_rows_ if n is None else check_rows(n, len(self.schema_), "n (rows to sample)")
        check_seed(seed, "seed")
        rng = self.rng_ if seed is None else np.random.default_rng(seed)
        frame = missing.decode(self._sample(n, rng), self.schema_, rng)
        return released(rounded(frame, self.schema_), self.schema_)

    def _fit(self, data: pd.DataFrame | Chunks, schema: Schema, recipe: Recipe,
             ctx: FitContext) -> None:
        """Learn from ``data``, the table in model space (Chunks when ``streams``), as
        ``recipe`` says: the one :meth:`_recipe` made for the fit's facts."""
        raise NotImplementedError

    def _sample(self, n: int, rng: np.random.Generator) -> pd.DataFrame:
        raise NotImplementedError


BYTES_PER_CELL = 100  # sampling then writing a CSV peaks near 90 bytes a cell (measured)
MAX_SAMPLE_BYTES = 8 * 1024**3


def inner(values: Mapping[str, Any], outer: str) -> dict[str, Any]:
    """The parameters of the method nested as ``outer``, by its own names."""
    return {k.split("__", 1)[1]: v for k, v in values.items() if k.startswith(f"{outer}__")}


def renamed(exc: ParameterError, outer: str, names: Mapping[str, Any]) -> ParameterError:
    """A nested method's refusal in its owner's names: the parameter it starts with and
    those its fixes set become ``outer__name``."""
    def name(word: str) -> str:
        return f"{outer}__{word}" if word in names else word

    first, gap, rest = str(exc).partition(" ")
    brief_first, brief_gap, brief_rest = exc.brief.partition(" ")
    fixes = [replace(f, changes=tuple((name(k), v) for k, v in f.changes)) for f in exc.fixes]
    return ParameterError(f"{name(first)}{gap}{rest}", fixes=fixes,
                          brief=f"{name(brief_first)}{brief_gap}{brief_rest}")


def _check_nested(name: str, cls: type, value: Any) -> None:
    """A nested method is given configured, as an instance of its class, or None."""
    if value is not None and not isinstance(value, cls):
        raise ParameterError(f"{name} must be a configured {cls.__name__} (e.g. "
                             f"{cls.__name__}(epochs=5)) or None, got {value!r}")


def _signature(cls: type) -> dict[str, Any]:
    """The constructor's parameters and their defaults."""
    return {p.name: p.default for p in inspect.signature(cls.__init__).parameters.values()
            if p.name != "self"}


def check_seed(seed: Any, name: str) -> int | None:
    """A seed is None or an integer ≥ 0 (what numpy's generators take)."""
    return None if seed is None else check_int(seed, name, 0)


def memory_bound() -> int:
    """Bytes a fit may hold: half this machine's memory (MAX_SAMPLE_BYTES if unknown)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2
    except (ValueError, OSError, AttributeError):  # no sysconf: the fixed bound alone
        return MAX_SAMPLE_BYTES


def sample_bound() -> int:
    """Bytes a sample may take: half this machine's memory, at most MAX_SAMPLE_BYTES."""
    return min(MAX_SAMPLE_BYTES, memory_bound())


def check_rows(n: Any, columns: int, name: str) -> int:
    """``n`` rows of ``columns`` columns as an int, refused by name before any work when it
    is not a whole number ≥ 1 or its memory estimate is over :func:`sample_bound`."""
    n = check_int(n, name)
    need, bound = n * max(columns, 1) * BYTES_PER_CELL, sample_bound()
    if need > bound:
        most = bound // (max(columns, 1) * BYTES_PER_CELL)
        raise ParameterError(
            f"{name} = {n:,} would need about {human_bytes(need)} of memory ({columns} columns "
            f"× {BYTES_PER_CELL} bytes a cell), over the {human_bytes(bound)} bound (half "
            f"this machine's memory, at most {human_bytes(MAX_SAMPLE_BYTES)}); ask for at most "
            f"{most:,} rows")
    return n


def resample(size: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """n row indices into a released table of ``size`` rows: a random subset when n ≤ size,
    otherwise every row as often as possible and a random subset for the rest."""
    return np.concatenate([rng.permutation(size) for _ in range(-(-n // size))])[:n]

