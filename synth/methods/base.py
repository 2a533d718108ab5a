"""The one interface every method implements, and the events a fit reports.

A synthesizer follows the scikit-learn contract: the constructor stores parameters and does
nothing else; ``fit(table, schema, budget, ctx)`` validates, learns any data-derived domains
under DP, then trains; learned state ends in an underscore; ``sample(n)`` returns a DataFrame
with the schema's columns and dtypes.
"""

from __future__ import annotations

import inspect
import math
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from synth import missing
from synth.data import human_bytes
from synth.errors import (
    BudgetError,
    Cancelled,
    ParameterError,
    SynthError,
    check_int,
    is_number,
)
from synth.privacy.budget import ALL, Budget, Ledger, LedgerEntry
from synth.privacy.domains import DOMAIN, keep_threshold, laplace_scale, learn_domains
from synth.privacy.events import Event as PrivacyEvent
from synth.schema import Schema, check_schema, prepare, validate
from synth.validation import Param, check_all

# ---- events ---------------------------------------------------------------------------------


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


@dataclass(frozen=True)
class NoiseScale:
    """What one stage's mechanism will do, worked out before any data is read: from the
    public schema, the row count (public in our privacy model) and the budget only."""

    stage: str
    mechanism: str
    scale: str  # the planned event's parameters, formatted (describe(event))
    meaning: str  # what it does to the result, in words
    event: PrivacyEvent | None = None  # the very event the fit will charge, where one is fixed


@dataclass
class FitContext:
    """What a fit needs from its caller: where to send events, when to stop, and optionally a
    seed for post-processing.

    ``postprocessing_seed`` steers only what happens after the private table is touched by a
    mechanism (initialisations, the genetic searches, sampling from a fitted model): privacy
    noise never depends on it (see :mod:`synth.privacy.mechanisms`), so the same seed twice
    gives two different releases. ``progress`` events of one stage are throttled to one per
    ``min_interval`` seconds (the first and last step always pass); ``should_stop`` is checked
    on every call regardless.
    """

    postprocessing_seed: int | None = None
    on_event: Callable[[Event], None] | None = None
    should_stop: Callable[[], bool] | None = None
    device: str = "auto"
    min_interval: float = 0.1
    timings: dict[str, float] = field(default_factory=dict)  # wall seconds per stage
    _last: dict[str, float] = field(default_factory=dict, repr=False)
    _current: tuple[str, float] | None = field(default=None, repr=False)

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
        if self.on_event is not None:
            self.on_event(event)

    def check(self) -> None:
        """Raise :class:`Cancelled` if the caller asked to stop."""
        if self.should_stop is not None and self.should_stop():
            raise Cancelled("the run was cancelled")

    def stage(self, name: str, total: int | None = None, description: str = "") -> None:
        self.check()
        self.finish()
        self._current = (name, time.perf_counter())
        self._last.pop(name, None)
        self.emit(StageStarted(name, total, description))

    def finish(self) -> None:
        """Close the current stage's clock (the next :meth:`stage` call does it too)."""
        if self._current is not None:
            name, started = self._current
            self.timings[name] = self.timings.get(name, 0.0) + time.perf_counter() - started
            self._current = None

    def progress(self, stage: str, step: int, total: int | None = None, **metrics: float) -> None:
        self.check()
        now = time.monotonic()
        last = self._last.get(stage)
        if last is None or step == total or now - last >= self.min_interval:
            self._last[stage] = now
            self.emit(Progress(stage, step, total, {k: float(v) for k, v in metrics.items()}))

    def resolve_device(self) -> str:
        """'cuda' when asked for or (with 'auto') available, else 'cpu'."""
        if self.device != "auto":
            return self.device
        import torch  # deferred: only neural methods pay for the import

        return "cuda" if torch.cuda.is_available() else "cpu"


# ---- the interface --------------------------------------------------------------------------


class Synthesizer:
    """Base class: subclasses set the class attributes and implement ``_fit`` and ``_sample``."""

    name: ClassVar[str]
    title: ClassVar[str]
    summary: ClassVar[str]  # two lines for the app: what it does and when to use it
    paper: ClassVar[str]
    stages: ClassVar[Mapping[str, float]]  # the method's own budget shares, summing to 1
    # the accountant each stage's events are composed by (synth.privacy.accounting)
    accountants: ClassVar[Mapping[str, str]]
    # the parameter, if any, that splits the method's budget between its first stage and the
    # rest (the app shows it as a slider next to the other shares)
    share_param: ClassVar[str | None] = None
    # one Param per constructor parameter: what fit, the CLI's --set and the app's widgets
    # accept (synth.validation)
    params: ClassVar[Mapping[str, Param]] = {}

    def get_params(self) -> dict[str, Any]:
        sig = inspect.signature(type(self).__init__)
        return {p: getattr(self, p) for p in sig.parameters if p != "self"}

    @classmethod
    def param_defaults(cls) -> dict[str, Any]:
        sig = inspect.signature(cls.__init__)
        return {p.name: p.default for p in sig.parameters.values() if p.name != "self"}

    def default_shares(self, schema: Schema, domain_share: float = 0.1) -> dict[str, float]:
        """The method's stage shares, with a ``domain`` share when the schema needs one."""
        if schema.releasable:
            return dict(self.stages)
        rest = 1 - domain_share
        return {DOMAIN: domain_share, **{k: v * rest for k, v in self.stages.items()}}

    def check_params(self, n: int | None = None, schema: Schema | None = None
                     ) -> dict[str, Any]:
        """Every parameter checked against its declared :class:`~synth.validation.Param`
        (``params``), then the rules that tie several together (:meth:`_check_rules`; those
        that need the row count or the model-space schema only when given). Refuses the
        first bad one by name; returns the values as plain Python values, leaving the
        attributes as given."""
        values = check_all(self.get_params(), self.params)
        self._check_rules(values, n, schema)
        return values

    def _check_rules(self, values: dict[str, Any], n: int | None,
                     schema: Schema | None) -> None:
        """Rules between parameters, or between a parameter and the row count ``n`` or the
        model-space ``schema`` (public facts: column count and kinds)."""

    def budget_for(self, budget: Budget, schema: Schema) -> Budget:
        """``budget`` as this method spends it: the default single share (``"all"``) becomes
        the method's own split; a split that leaves out a stage, or contradicts the method's
        share parameter (``share.gan`` against ``gan_share``), is refused by name."""
        if not isinstance(budget, Budget):
            raise BudgetError(f"budget must be a Budget(epsilon, delta[, shares]), got "
                              f"{budget!r}")
        if dict(budget.shares) == {ALL: 1.0}:
            return replace(budget, shares=self.default_shares(schema))
        unshared = [s for s in self.stages if s not in budget.shares]
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
        return budget

    def preview(self, n: int, schema: Schema, budget: Budget) -> list[NoiseScale]:
        """The noise every stage would use for an ``n``-row table: no data is read, so the
        trade-offs of a budget split can be shown before anything is spent."""
        n = check_int(n, "n (rows)")
        check_schema(schema)
        self.check_params(n, missing.model_schema(schema))
        budget = self.budget_for(budget, schema)
        scales = []
        if not schema.releasable and DOMAIN in budget.shares:
            scales.append(domain_preview(schema, *budget.allowance(DOMAIN)))
        return scales + self._preview(n, missing.model_schema(schema), budget)

    def _preview(self, n: int, schema: Schema, budget: Budget) -> list[NoiseScale]:
        return []

    def fit(self, table: pd.DataFrame, schema: Schema, budget: Budget,
            ctx: FitContext | None = None) -> Synthesizer:
        ctx = FitContext() if ctx is None else ctx
        if not isinstance(ctx, FitContext):
            raise ParameterError(f"ctx must be a FitContext or None, got {ctx!r}")
        self.__dict__.pop("schema_", None)  # a failed or cancelled fit leaves it unfitted
        check_schema(schema)
        schema.check_declared()
        budget = self.budget_for(budget, schema)
        self.ledger_ = Ledger(budget, {DOMAIN: "basic", **self.accountants},
                              on_spend=lambda e: ctx.emit(
                                  Spent(e, self.ledger_.total_epsilon, self.ledger_.total_delta)))
        self.rng_ = np.random.default_rng(ctx.postprocessing_seed)  # post-processing only
        data = validate(table, schema)
        # before anything is spent (the ledger is empty), from public facts only
        values = self.check_params(len(data), missing.model_schema(schema))
        for name, value in self.get_params().items():  # as the plain Python values they hold
            if type(value) is not type(values[name]):  # (np.int64(8), 64.0 for an integer):
                setattr(self, name, values[name])      # torch and JSON take those
        if not schema.releasable:
            todo = sum(not c.releasable for c in schema)
            ctx.stage(DOMAIN, todo, "learning data-derived domains under DP")
            schema = learn_domains(data, schema, self.ledger_,
                                   progress=lambda i, k: ctx.progress(DOMAIN, i, k))
            data = prepare(table, schema)
        schema = schema.public_view()  # releasable: no flags read off the table
        self.n_rows_ = len(data)  # the public n: no row is ever dropped
        self._fit(missing.encode(data, schema), missing.model_schema(schema), ctx)
        ctx.finish()
        self.timings_ = dict(ctx.timings)
        self.schema_ = schema  # set last: it marks the model as fitted
        return self

    def sample(self, n: int | None = None, seed: int | None = None) -> pd.DataFrame:
        """``n`` synthetic rows (default: as many as the private table had)."""
        if not hasattr(self, "schema_"):
            raise SynthError(f"{type(self).__name__} is not fitted; call fit() first")
        n = self.n_rows_ if n is None else check_rows(n, len(self.schema_), "n (rows to sample)")
        check_seed(seed, "seed")
        rng = self.rng_ if seed is None else np.random.default_rng(seed)
        return missing.decode(self._sample(n, rng), self.schema_)

    def _fit(self, data: pd.DataFrame, schema: Schema, ctx: FitContext) -> None:
        raise NotImplementedError

    def _sample(self, n: int, rng: np.random.Generator) -> pd.DataFrame:
        raise NotImplementedError


BYTES_PER_CELL = 100  # sampling then writing a CSV peaks near 90 bytes a cell (measured)
MAX_SAMPLE_BYTES = 8 * 1024**3


def check_seed(seed: Any, name: str) -> int | None:
    """A seed is None or an integer ≥ 0 (what numpy's generators take)."""
    return None if seed is None else check_int(seed, name, 0)


def sample_bound() -> int:
    """Bytes a sample may take: half this machine's memory, at most MAX_SAMPLE_BYTES."""
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # no sysconf: the fixed bound alone
        return MAX_SAMPLE_BYTES
    return min(MAX_SAMPLE_BYTES, memory // 2)


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


def domain_preview(schema: Schema, epsilon: float, delta: float) -> NoiseScale:
    """Noise of learning the data-derived domains (see :mod:`synth.privacy.domains`)."""
    todo = [c.name for c in schema if not c.releasable]
    eps_c, delta_c = epsilon / len(todo), delta / len(todo)
    keep = f"{keep_threshold(eps_c, delta_c):.0f}" if delta_c > 0 else "∞ (δ = 0)"
    return NoiseScale(
        DOMAIN, "Laplace counts, thresholded", f"scale {laplace_scale(eps_c):.3g} per count",
        f"{len(todo)} columns share ε = {epsilon:.3g}: a category needs about {keep} rows to "
        "be kept, rarer ones fold into 'other'")
