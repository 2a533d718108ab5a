"""What a run will do, worked out from public facts before anything is read or spent.

A method says what it will do as a :class:`Recipe`: from its parameters, the schema, the
public population (n rows, or U units of at most k rows) and the budget, its ordered steps
(each a privacy event with its meaning, or a stated bound where the events wait for a private
fact), the settings its fit needs, its time and memory. :func:`plan` adds what every method
shares (the row count's estimate, the learned domains), finds the refusals a run can know up
front (a Gaussian stage with δ = 0, private domains whose noise no bin could clear, memory, a
method's own limits such as private sampling's 20 bits) and what still depends on the data
(to be said before spending). ``fit``, the account's reservation, the app's Run button, the
preview and ``synth plan`` read this one plan: a doomed run is refused before its first
charge, a fit's ledger refuses any charge the plan does not hold (:meth:`Plan.guard`), and the
fit consumes the recipe rather than work any of it out again.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from synth import dates
from synth.data import figure, human_bytes, up_to
from synth.dates import UNITS_PER_YEAR
from synth.errors import BudgetError, Fix, SchemaError, SynthError
from synth.missing import model_schema
from synth.privacy.accounting import gaussian_needs_delta
from synth.privacy.budget import WEAK_EPSILON, Budget, Ledger, LedgerEntry, default_delta
from synth.privacy.domains import (
    BLANKS_SCALES,
    DOMAIN,
    STEPS,
    bounds_loss,
    column_events,
    counted,
    fewest_present,
    missing_origin,
    most_categories,
    scale_miss,
)
from synth.privacy.events import Event, describe
from synth.privacy.unit import ROWS, Population, rows_event
from synth.schema import CATEGORICAL, DATETIME, OTHER, Column, Schema

# a private bound that may cut off half the rows at an end is noise, and one that may cut off
# a tenth is worth a warning (the figures are the mechanism's 95 % worst case): a refusal
# names the shares of both
DOOMED, DOUBTFUL = 1 / 2, 1 / 10
# learned bounds: a run is refused past these (share a bound may cut off on a heavy tail, a
# date's worst case, chance the scale misses the data), and doubted past the second three
REFUSED, DOUBTED = (DOUBTFUL, DOOMED, DOOMED), (0.05, DOUBTFUL, DOUBTFUL)
MOST_DOMAIN_SHARE, SHARE_STEP = 0.9, 0.05  # the app's slider
EPSILON_STEPS = (0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0)  # the app's ε slider


TOLERANCE = 1e-9  # relative, as the ledger's: one cost derived twice may differ in the last bit


@dataclass(frozen=True)
class Step:
    """One event a run will charge, in order, and what it does in words. ``exact``: the
    ledger will hold this very event. Otherwise it is the event at a public bound (a picked
    workload's sensitivity, the public k·U for n̂), and the ledger's event costs no more;
    ``event`` is None where the events wait for a private fact (``waits``: the learned
    domains, AIM's annealing), and the stage's share bounds them. ``mechanism`` and
    ``meaning`` are for people (the preview); ``scale`` says the noise where the event alone
    does not (AIM's first round, GSD's ρ per call)."""

    stage: str
    event: Event | None
    exact: bool = True
    waits: str = "the learned domains"
    mechanism: str = ""
    meaning: str = ""
    scale: str = ""


@dataclass(frozen=True)
class Recipe:
    """What a method will do, from public facts only (its parameters, the schema, the
    population, the budget): the ``steps`` it charges in order, the ``settings`` its fit
    needs (MST's events, GSD's rounds and ρ per round, AIM's schedule), its ``seconds`` on 2
    cores (None: no cost model), the peak bytes of its large parts by what drives them
    (``memory``) and why it may end without a DP guarantee (``unbounded``, "" when it
    cannot). A method builds it in one hook (``Synthesizer._recipe``); the plan, the preview
    and the fit read it."""

    steps: tuple[Step, ...]
    settings: Mapping[str, Any] = field(default_factory=dict)
    seconds: float | None = None
    memory: Mapping[str, int] = field(default_factory=dict)
    unbounded: str = ""

    def __getitem__(self, name: str) -> Any:
        return self.settings[name]


@dataclass(frozen=True)
class NoiseScale:
    """What one stage's mechanism does, for people: its steps of one meaning, in one line."""

    stage: str
    mechanism: str
    scale: str  # the events' parameters, formatted (describe(event))
    meaning: str  # what it does to the result, in words
    # the last of its events, where one is fixed: the bound a stage's later events keep to
    event: Event | None = None


def scales(steps: tuple[Step, ...] | list[Step]) -> tuple[NoiseScale, ...]:
    """The steps as the preview shows them: those of one stage and meaning in one line (MST's
    d − 1 tree picks, the learned domains' columns), in order of first coming."""
    groups: dict[tuple[str, str], list[Step]] = {}
    for step in steps:
        if step.meaning:
            groups.setdefault((step.stage, step.meaning), []).append(step)
    return tuple(NoiseScale(
        stage, "; ".join(dict.fromkeys(s.mechanism for s in group)),
        "; ".join(dict.fromkeys(s.scale or describe(s.event) for s in group
                                if s.scale or s.event is not None)),
        meaning, next((s.event for s in reversed(group) if s.event is not None), None))
        for (stage, meaning), group in groups.items())


@dataclass(frozen=True)
class Plan:
    """What a run will do, from public facts only: its refusals and doubts, whether it keeps
    a DP guarantee, the events it will charge (``steps``, with each stage's planned cost in
    ``bounds``), the method's :class:`Recipe` and its expected seconds and peak bytes;
    ``scales`` shows every step that could be worked out, refused or not."""

    refusals: tuple[SynthError, ...] = ()  # the run cannot succeed: refused before a charge
    doubts: tuple[str, ...] = ()  # success depends on the data: say so before spending
    unbounded: str = ""  # why the run may end without a DP guarantee ("": it has one)
    steps: tuple[Step, ...] = ()
    # stages whose number of events waits for a private fact (n̂, the learned domains): only
    # their total is bounded; every other stage is charged event by event as planned
    loose: frozenset[str] = frozenset()
    bounds: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    entries: tuple[dict[str, Any], ...] = ()  # the steps in the ledger's own format
    seconds: float | None = None  # on 2 cores (the benchmarks' machine); None: no cost model
    memory: int = 0  # peak bytes the method's large parts need (Recipe.memory)
    recipe: Recipe | None = None  # the method's, where it could be made
    scales: tuple[NoiseScale, ...] = ()

    def check(self) -> None:
        """Raise the first refusal, if any."""
        if self.refusals:
            raise self.refusals[0]

    @property
    def exact(self) -> bool:
        """Whether the ledger will hold exactly :attr:`steps`' events, in order."""
        return not self.loose and all(c.exact for c in self.steps)

    def guard(self, ledger: Ledger, stage: str, event: Event) -> None:
        """Refuse, before it runs, a charge this plan does not hold (the ledger calls it): an
        exact stage's next event must be the planned one (a bounded one no dearer), and no
        stage may cost more than planned. A mismatch is our bug; nothing more is spent."""
        done = [e.event for e in ledger.entries if e.stage == stage]
        planned = [c for c in self.steps if c.stage == stage]
        where = f"{event.kind} ({stage!r}, charge {len(done) + 1})"
        if stage not in self.loose:
            if len(done) >= len(planned):
                raise BudgetError(f"{where} is not in the run's plan, which has "
                                  f"{len(planned)} charge(s) there: refusing to spend it")
            want = planned[len(done)]
            if want.exact and event != want.event:
                raise BudgetError(f"{where} differs from the planned {want.event}: refusing "
                                  "to spend it")
            if not want.exact and (type(event) is not type(want.event) or _over(
                    ledger.cost(stage, [event]), ledger.cost(stage, [want.event]))):
                raise BudgetError(f"{where} costs more than the planned {want.event}: "
                                  "refusing to spend it")
        cost = ledger.cost(stage, [*done, event])
        if math.isinf(cost[0]) and self.unbounded:
            return  # planned: a demonstration without a guarantee
        if _over(cost, self.bounds.get(stage, (0.0, 0.0))):
            raise BudgetError(f"{where} would bring the stage to ε = {cost[0]:.4g}, over the "
                              f"planned {self.bounds.get(stage, (0.0, 0.0))[0]:.4g}: refusing "
                              "to spend it")

    def lines(self) -> list[str]:
        """The plan for people: refusals, each distinct charge with how often it comes (in
        order of first coming; ``to_dict`` has the exact order), the bounded stages, doubts,
        and the estimate."""
        out = [f"refused: {r}" for r in self.refusals]
        for charge, times in Counter(
                replace(c, mechanism="", meaning="", scale="") for c in self.steps).items():
            what = (f"events that wait for {charge.waits}" if charge.event is None
                    else describe(charge.event))
            out.append(f"{charge.stage}: {f'{times} × ' if times > 1 else ''}{what}" + (
                "" if charge.exact or charge.event is None else
                " (at the public facts: the events charged follow n̂ and the learned domains, "
                "within the stage's total below)" if charge.stage in self.loose else
                " (a bound: the event charged may differ, costing no more)"))
        out += [f"{stage}: at most ε = {eps:.4g}, δ = {delta:.3g} in all (how many events "
                "waits for a private estimate)" for stage, (eps, delta) in self.bounds.items()
                if stage in self.loose]
        out += [f"doubt: {d}" for d in self.doubts]
        if self.unbounded:
            out.append(f"no guarantee: {self.unbounded}")
        if not self.refusals:
            out.append("time: " + ("a few seconds, or no cost model for this method"
                                   if self.seconds is None else
                                   f"about {self.seconds:,.0f} s on 2 cores")
                       + f"; memory: about {human_bytes(self.memory)} for its large parts")
        return out

    def to_dict(self) -> dict[str, Any]:
        """The plan as JSON: its ``entries`` compare equal to the ledger's (stage, event,
        relation, ε and δ added) wherever it is :attr:`exact`; ``stages`` says what each
        stage's noise does, as the preview does."""
        return {"exact": self.exact, "entries": list(self.entries),
                "bounds": {s: {"epsilon": None if math.isinf(e) else e, "delta": d}
                           for s, (e, d) in self.bounds.items()},
                "loose": sorted(self.loose), "refusals": [str(r) for r in self.refusals],
                "doubts": list(self.doubts), "unbounded": self.unbounded,
                "seconds": self.seconds, "memory_bytes": self.memory,
                "stages": [{"stage": s.stage, "mechanism": s.mechanism, "noise": s.scale,
                            "meaning": s.meaning} for s in self.scales]}


def _over(cost: tuple[float, float], bound: tuple[float, float]) -> bool:
    return any(c > b * (1 + TOLERANCE) + 1e-15 for c, b in zip(cost, bound, strict=True))


def plan(recipe: Callable[[Population, Schema, Budget], Recipe],
         accountants: Mapping[str, str], population: Population, schema: Schema,
         budget: Budget) -> Plan:
    """The plan of a method (its ``recipe`` hook and its stages' ``accountants``) on
    ``population`` under ``budget`` (already the method's split, as
    :meth:`~synth.methods.base.Synthesizer.budget_for` gives it) and the working schema
    (private domains not yet learned). Only the public population is read: with k > 1, k·U
    stands for the rows bounding keeps; the recipe sees the domains still to be learned at
    the most their mechanisms may give (:func:`priced`)."""
    population = population.public()
    refusals: list[SynthError] = []
    for stage, accountant in accountants.items():
        try:
            gaussian_needs_delta(stage, accountant, budget.allowance(stage)[1])
        except BudgetError as exc:
            refusals.append(exc)
    if budget.delta * population.units >= 1:  # each unit published outright meets it
        who = "units" if population.max_rows > 1 else "rows"
        refusals.append(BudgetError(
            f"δ = {budget.delta:.3g} is at least 1/n = {1 / population.units:.3g} for these "
            f"{population.units:,} {who}: a mechanism that publishes each of them outright "
            f"with probability δ meets (ε, δ)-DP; give δ well below 1/n (the default is "
            f"{default_delta(population.units):.0e})"))
    learned, doubts = domain_plan(schema, budget, population)
    refusals += jointly(learned)
    shared = public_steps(schema, budget, population)
    made: Recipe | None = None
    try:
        made = recipe(population, priced(schema, budget, population), budget)
    except SynthError as exc:
        if str(exc) not in {str(r) for r in refusals}:  # δ = 0 is said once
            refusals.append(exc)
    steps = [*shared, *(made.steps if made is not None else ())]
    shown = (*scales(steps), *unspent(schema, budget, shared))
    if refusals or made is None:
        return Plan(tuple(refusals), tuple(doubts), recipe=made, scales=shown)
    loose = frozenset(c.stage for c in steps if c.event is None or (
        not c.exact and population.max_rows > 1))
    ledger = open_ledger(accountants, budget)
    try:
        for c in steps:
            if c.event is not None:
                ledger.charge(c.stage, c.event)
    except BudgetError as exc:  # the method's own plan is over its share: say so first
        return Plan((exc,), tuple(doubts), recipe=made, scales=shown)
    bounds = {s: budget.allowance(s) if s in loose else ledger.spent(s)
              for s in dict.fromkeys(c.stage for c in steps)}
    known, entries = iter(ledger.entries), []
    for c in steps:  # the ledger's format, less what only a run knows
        entry = ({"stage": c.stage, "event": None} if c.event is None else
                 next(known).to_dict(budget.unit.relation))
        entry.pop("description", None)
        entry.pop("status", None)
        entries.append(entry if c.exact else {**entry, "bound": True})
    seconds = None if made.seconds is None else made.seconds + after_fit(population, schema)
    return Plan((), tuple(doubts), made.unbounded, tuple(steps), loose, bounds, tuple(entries),
                seconds, sum(made.memory.values()), made, shown)


# a run's stages after its fit, as the app runs them on 2 cores (benchmarks/progress.py):
# drawing the rows, comparing them with the private table, writing the release; seconds, and
# seconds per cell of the table (0.6 s on the census sample, 7 s on 300,000 rows × 16)
AFTER_FIT, AFTER_FIT_PER_CELL = 0.4, 1.85e-6


def after_fit(population: Population, schema: Schema) -> float:
    """Seconds a run spends after its fit: drawing as many rows as it was given, comparing
    them with them (the steward's figures and checklist) and writing the release."""
    return AFTER_FIT + AFTER_FIT_PER_CELL * population.rows * len(schema)


def priced(schema: Schema, budget: Budget, population: Population) -> Schema:
    """The model-space schema a plan prices (rules, time, memory) from public facts: each
    domain still to be learned at the most its mechanism may give, never the proposal read
    off the table (one outlying age moved the memory estimate). A category list counts
    :func:`~synth.privacy.domains.most_categories` stand-ins and ``other``; bounds are left
    open, which a method's grid prices at its widest."""
    population = population.public()
    eps, delta = budget.allowance(DOMAIN) if DOMAIN in budget.shares else (0.0, 0.0)
    events = column_events(schema, eps, delta, population.rows, population.max_rows) \
        if eps > 0 and delta > 0 else {}

    def stand_in(col: Column) -> Column:
        if col.releasable:
            return col
        if col.kind != CATEGORICAL:
            return replace(col, lower=None, upper=None)
        learning = events.get(col.name)
        most = 0 if learning is None else most_categories(population.rows,
                                                          learning.categories)
        return replace(col, categories=(*(f"learned {i}" for i in range(1, most + 1)), OTHER)
                       if most else None)

    return model_schema(replace(schema, columns=tuple(stand_in(c) for c in schema)))


def open_ledger(accountants: Mapping[str, str], budget: Budget,
                on_spend: Callable[[LedgerEntry], None] | None = None) -> Ledger:
    """The ledger a fit charges (the domain stage composes by basic composition, the
    method's stages by their ``accountants``), and its plan is worked on."""
    return Ledger(budget, {DOMAIN: "basic", **accountants}, on_spend=on_spend)


def public_steps(schema: Schema, budget: Budget, population: Population) -> list[Step]:
    """The row count's estimate (k > 1) and the learned domains' events: the same for
    every method, and public."""
    k = population.max_rows
    steps = [_rows_step(population, budget.allowance(ROWS)[0])] if k > 1 else []
    if schema.to_learn and DOMAIN in budget.shares:
        steps += _domain_steps(schema, *budget.allowance(DOMAIN), population)
    return steps


def _rows_step(population: Population, epsilon: float) -> Step:
    """Estimating the row count after bounding (see :mod:`synth.privacy.unit`)."""
    event = rows_event(epsilon, population.max_rows)
    return Step(
        ROWS, event, mechanism="Laplace count",
        meaning=f"the {population.units:,} units keep up to {population.max_rows} rows each; "
                f"their row count, which sets the release's size and every fraction's "
                f"denominator, is estimated within ±{figure(event.scale * math.sqrt(2))} rows "
                f"(1 σ), {event.scale * math.sqrt(2) / population.rows:.2%} of the most they "
                f"may keep, {population.rows:,}")


def _domain_steps(schema: Schema, epsilon: float, delta: float, population: Population
                  ) -> list[Step]:
    """Learning the data-derived domains and blanks (see :mod:`synth.privacy.domains`), each
    column's events with what the stage does: how many rows a category needs to be kept, how
    much of the table a learned bound may cut off, how many blanks a column needs for any to
    be released."""
    todo = schema.to_learn
    k, rows = population.max_rows, population.units * population.max_rows
    plans = column_events(schema, epsilon, delta, rows, k)
    said = []
    if any(c.kind == CATEGORICAL for c in todo):
        kept = [p.categories.threshold for p in plans.values() if p.categories]
        keep = f"{max(kept):,.0f}" if kept else "∞ (δ = 0)"
        said.append(f"a category needs about {keep} rows to be kept, rarer ones fold into "
                    "'other'")
    bounded = [c for c in todo if plans[c.name].bounds is not None]
    if bounded:
        worst = max(bounds_loss(plans[c.name].bounds, rows, c.integer,
                                missing=c.missing == "indicator") for c in bounded)
        said.append(f"a learned bound may cut off {up_to(worst)} of the rows at each end "
                    "on a tail as heavy as a flight delay's (95 % of draws), less on lighter "
                    "ones")
    blanks = [plans[c.name].blanks for c in todo if plans[c.name].blanks is not None]
    if blanks:
        most = max(BLANKS_SCALES * e.scale for e in blanks)
        said.append(f"a column may have blanks in the release only if its noisy count of "
                    f"them clears about {most:,.0f}")
    learned = [c for c in todo if plans[c.name].events]
    meaning = (f"{len(learned)} columns' domains or blank counts share ε = {epsilon:.3g}: "
               + "; ".join(said))
    return [Step(DOMAIN, e, meaning=meaning, mechanism=(
        "thresholded Laplace counts" if c.kind == CATEGORICAL else
        "exponential mechanisms over a fixed grid" if plans[c.name].bounds else
        "Laplace counts")) for c in learned for e in plans[c.name].events]


def unspent(schema: Schema, budget: Budget, shared: list[Step]) -> tuple[NoiseScale, ...]:
    """The domain share's line where it buys nothing (no event among the ``shared`` public
    steps: every item to learn a blank count that could not tell blanks from none, so none
    is made): the preview says so, where it would otherwise leave the share out without a
    word."""
    if (not schema.to_learn or DOMAIN not in budget.shares
            or any(s.stage == DOMAIN for s in shared)):
        return ()
    epsilon = budget.allowance(DOMAIN)[0]
    return (NoiseScale(DOMAIN, "none", "none",
                       f"nothing is learned: the blank counts of {len(schema.to_learn)} "
                       f"columns are not made at ε = {epsilon:.3g}, and this share goes "
                       "unspent"),)


def domain_plan(schema: Schema, budget: Budget, population: Population
                ) -> tuple[list[SynthError], list[str]]:
    """(refusals, doubts) of learning the schema's private domains and blanks (see
    :mod:`synth.privacy.domains`): each column gets its part of the domain share; a
    numeric column's bounds may cut off up to :func:`~synth.privacy.domains.bounds_loss` of
    the rows at each end, a category is kept when its count clears
    :func:`~synth.privacy.domains.keep_threshold`. The rows are at most k·U (public)."""
    todo = schema.to_learn
    if not todo:
        return [], []
    names = [c.name for c in todo]
    if DOMAIN not in budget.shares or budget.allowance(DOMAIN)[0] <= 0:
        return [BudgetError(f"columns {names[:6]} have data-derived domains or blanks to "
                            f"learn: declare them public or give the budget a {DOMAIN!r} "
                            "share to learn them privately")], []
    eps, delta = budget.allowance(DOMAIN)
    k = population.max_rows
    rows = population.units * k
    bounded = [c for c in todo if c.kind != CATEGORICAL and not c.releasable]
    categorical = [c.name for c in todo if c.kind == CATEGORICAL]
    refusals: list[SynthError] = []
    doubts: list[str] = []
    unanchored = [c.name for c in bounded if c.kind == DATETIME and c.origin is None]
    if unanchored:
        refusals.append(SchemaError(missing_origin(unanchored)))
    doubts += [said for c in bounded if c.kind == DATETIME and c.origin is not None
               and (said := far_origin(c))]
    if categorical and delta <= 0:
        refusals.append(BudgetError(f"columns {categorical[:6]}: learning categories "
                                    "privately needs δ > 0 in the domain share"))
    plans = column_events(schema, eps, delta, rows, k)
    blind = [c.name for c in todo if c.releasable and c.kind != CATEGORICAL
             and not plans[c.name].events]
    if blind:
        doubts.append(f"the blank counts of {_listed(blind)} are not made: at the domain "
                      f"share's ε = {eps:.3g}, a count among {rows:,} rows could not tell a "
                      "column of blanks from one without any, so their blanks are left to "
                      "the model (set the missing policy to none where a column has none)")
    if bounded:
        def risk_at(epsilon: float) -> tuple[float, float, float]:
            """The worst column's (share a bound may cut off on a heavy tail, the same for a
            date's worst case, chance its scale misses the data), at the domain share's
            ``epsilon``."""
            at = column_events(schema, epsilon, delta, rows, k)
            loss = {c.name: bounds_loss(at[c.name].bounds, rows, c.integer,
                                        missing=c.missing == "indicator") for c in bounded}
            dated = [c.name for c in bounded if c.kind == DATETIME]
            return (max([v for name, v in loss.items() if name not in dated], default=0.0),
                    max([loss[name] for name in dated], default=0.0),
                    max(scale_miss(at[c.name].bounds[0],
                                   counted(rows, c.missing == "indicator"), c.integer)
                        for c in bounded))

        def past(risks: tuple[float, float, float], lines: tuple[float, float, float]
                 ) -> float:
            """How far ``risks`` reach past ``lines``: ≥ 1 past."""
            return max(risk / line for risk, line in zip(risks, lines, strict=True))

        def sparse_at(epsilon: float) -> float:
            """How far the values a column that may be blank must have present reach past
            what half the rows give (≥ 1 past: its scale may land far from the data)."""
            at = column_events(schema, epsilon, delta, rows, k)
            return max([fewest_present(at[c.name].bounds[0], c.integer)
                        / (counted(rows, True) + 1) for c in bounded
                        if c.missing == "indicator"], default=0.0)

        risks = risk_at(eps)
        *losses, miss = risks
        loss = max(losses)
        said = (f"the bounds of {_listed([c.name for c in bounded])} are learned privately: "
                f"with the domain share's ε = {eps:.3g} shared by {len(todo)} columns, a "
                f"bound may cut off {up_to(loss)} of the {rows:,} rows at each end "
                + ("on a tail as heavy as a flight delay's (95 % of draws; lighter tails lose "
                   "less)" if losses[0] >= losses[1] else "(a date's, at 95 % confidence; "
                   "usually far less)"))
        if miss > DOUBTFUL:
            said += (f", and the scale they are sought in may land where no values are (a "
                     f"chance of up to {miss:.0%}), which would put them far from the data")
        if past(risks, REFUSED) > 1:
            possible, fix = _advice(budget, lambda e: past(risk_at(e), REFUSED), 1.0)
            likely, sure = _advice(  # and what leaves no doubt, blanks' scales too
                budget, lambda e: max(past(risk_at(e), DOUBTED), sparse_at(e)), 1.0)
            if sure is not None and dict(sure.changes).get("epsilon", 0) < WEAK_EPSILON:
                fix = sure  # the way out that leaves no doubt, short of a weak guarantee
            elif fix is not None and fix != sure:  # it clears the refusal, not the risk
                fix = replace(fix, caveat="bounds may still reach past the data")
            why = ("so the bounds would be noise" if max(loss, miss) >= DOOMED else
                   f"more than the {REFUSED[0]:.0%} a run may lose")
            names = [c.name for c in bounded]
            refusals.append(_refused(
                f"{said}, {why}: declare their bounds public, leave columns out, or "
                f"{possible} ({likely} to keep the loss under {DOUBTED[0]:.0%})", fix, names,
                f"the bounds of {len(names)} column{'s' * (len(names) > 1)} learned privately "
                f"at ε = {eps:.3g} " + ("would be noise" if max(loss, miss) >= DOOMED else
                                        f"could cut off {up_to(loss)} of the rows at each end")))
        elif past(risks, DOUBTED) > 1:
            doubts.append(f"{said}; public bounds avoid the loss")
        sparse = {c.name: fewest_present(plans[c.name].bounds[0], c.integer) for c in bounded
                  if c.missing == "indicator"}  # figures that count every row as a value
        # every scale lands as surely when half the rows have a value (domains.PRESENT):
        # doubted only where the share could not buy that
        sparse = {name: p for name, p in sparse.items() if p > counted(rows, True) + 1}
        if sparse and not refusals:
            need = max(sparse.values())
            doubts.append(
                f"the learned bounds of {_listed(list(sparse))} assume at least {need:,} "
                + (f"of the {rows:,} rows have a value there" if need <= rows
                   else f"values, more than the table's {rows:,} rows")
                + " (how many are blank is private): with fewer they may land far from the "
                "data; declare their bounds, set the missing policy to none for a column "
                "without blanks, or give the domain share more")
    if categorical and delta > 0:
        tau = max(plans[name].categories.threshold for name in categorical)
        said = (f"categories of {_listed(categorical)} are learned privately: a category "
                f"needs about {tau:,.0f} rows to be kept")
        if tau > rows:  # not one could be kept: the columns would be released as 'other'
            def short(epsilon: float) -> float:
                """How far the largest threshold at the domain share's ``epsilon`` is past
                half the rows (≥ 1 past)."""
                at = column_events(schema, epsilon, delta, rows, k)
                return max(at[n].categories.threshold for n in categorical) / (DOOMED * rows)

            possible, fix = _advice(budget, short, 1.0)
            refusals.append(_refused(
                f"{said}, more than the table's {rows:,}, so every category would fold into "
                f"'other': declare them public, leave them out, or {possible}", fix,
                categorical,
                f"no category of {len(categorical)} column{'s' * (len(categorical) > 1)} "
                f"learned privately at ε = {eps:.3g} could be kept (each needs about "
                f"{tau:,.0f} of the {rows:,} rows)"))
        elif tau > DOOMED * rows:
            doubts.append(f"{said}, over half the table's {rows:,}, so most of them will fold "
                          "into 'other'; declare them public or give the domain share more")
        else:  # the walk's flights lost 65 % of their airports to 'other' unwarned
            doubts.append(f"{said} ({tau / rows:.1%} of the {rows:,} rows): rarer ones fold "
                          "into 'other', which may be most of the rows of a column with many "
                          "rare values; declare the lists public to keep every category")
    return refusals, doubts


def _refused(message: str, fix: Fix | None, names: list[str], brief: str) -> BudgetError:
    """A refusal of learning ``names``' domains: the budget's way out, if any, and leaving
    the columns out."""
    leave = Fix(f"Leave out {_listed(names)}", (("leave_out", tuple(names)),))
    return BudgetError(message, fixes=(fix, leave) if fix else (leave,), brief=brief)


def jointly(refusals: list[SynthError]) -> list[SynthError]:
    """``refusals`` with their ways out through ε and the domain share made one, the
    largest of each (every risk falls as either grows, so it clears each refusal it joins):
    two buttons that each clear one refusal, at odds with each other, would leave a steward
    to guess. The joint way out goes with the first refusal that had one."""
    budgeted = [f for r in refusals for f in r.fixes
                if {name for name, _ in f.changes} <= {"epsilon", "domain_share"}]
    if len(budgeted) < 2:
        return refusals
    changes = {name: max(v for f in budgeted for n, v in f.changes if n == name)
               for name in ("epsilon", "domain_share")
               if any(n == name for f in budgeted for n, _ in f.changes)}
    label = (f"Raise ε to {changes['epsilon']:g}, with a domain share of "
             f"{changes['domain_share']:g}" if "epsilon" in changes else
             f"Give the domain share {changes['domain_share']:g} of ε")
    caveat = "; ".join(dict.fromkeys(f.caveat for f in budgeted if f.caveat))
    joint, out = Fix(label, tuple(changes.items()), caveat), []
    for r in refusals:
        own = [f for f in r.fixes if f not in budgeted]
        if joint is not None and len(own) < len(r.fixes):
            own, joint = [joint, *own], None
        out.append(type(r)(str(r), fixes=own, brief=r.brief))
    return out


def far_origin(col: Column) -> str:
    """Why a date column's learned bounds may reach far past recent data, or "": its ends are
    sought in octaves of distance from the public origin (:mod:`synth.privacy.domains`), and
    dates D years from it fill a sliver of an octave, so the ends wander: over 200 draws at
    ε = 0.2 (5 years of dates 318 years after the origin, 5,000 rows) the upper end overshot
    by under D/3 in 95 % of them (0.32·D; at worst 1.4·D), and the lower fell back to the
    origin itself in over 5 % (median 0.26·D). Today is the public stand-in for where the
    dates lie (the plan reads none of them)."""
    today = dates.unit_of(np.datetime64("today"), col.granularity, "naive", "today")
    years = abs(today - col.origin) / UNITS_PER_YEAR[col.granularity]
    if (2 ** (1 / STEPS) - 1) * years < 1:  # edges under a year apart there: close enough
        return ""
    return (f"the bounds of {col.name!r} are sought outward from its origin "
            f"{col.shown(col.origin)}, {years:,.0f} years before today: for recent dates the "
            f"upper end may land up to about {years / 3:,.0f} years past them (95 % of the "
            "time; further at worst) and the lower as far back as the origin, so most "
            "released dates could lie beyond the data's span; declare an origin within a few "
            "years of the data, or public bounds")


def _advice(budget: Budget, loss: Callable[[float], float], target: float
            ) -> tuple[str, Fix | None]:
    """(the domain share, on the app's slider steps, whose ε brings ``loss`` (of the domain
    stage's ε) under ``target``, or the ε that does so at the largest share; the change as
    the app makes it in one click, where its sliders reach it)."""
    steps = round(MOST_DOMAIN_SHARE / SHARE_STEP)
    for step in (round(i * SHARE_STEP, 2) for i in range(1, steps + 1)):
        if loss(budget.epsilon * step) < target:
            return (f"give the domain share {step:g} of ε or more",
                    Fix(f"Give the domain share {step:g} of ε", (("domain_share", step),)))
    low, high = budget.epsilon, budget.epsilon  # the loss falls as ε grows: double, bisect
    while loss(high * MOST_DOMAIN_SHARE) >= target:
        low, high = high, high * 2
    while high - low > 1e-3 * high:
        mid = (low + high) / 2
        low, high = (low, mid) if loss(mid * MOST_DOMAIN_SHARE) < target else (mid, high)
    digits = 2 - math.floor(math.log10(high))  # three significant digits, rounded up
    said = (f"raise ε to {math.ceil(high * 10**digits) / 10**digits:g} or more with a domain "
            f"share of {MOST_DOMAIN_SHARE:g}")
    reach = [e for e in EPSILON_STEPS if e >= high]
    if not reach:  # beyond the slider: the refusal's other ways out
        return said, None
    return said, Fix(f"Raise ε to {reach[0]:g}, with a domain share of {MOST_DOMAIN_SHARE:g}",
                     (("epsilon", reach[0]), ("domain_share", MOST_DOMAIN_SHARE)))


def _listed(names: list[str]) -> str:
    shown = ", ".join(repr(n) for n in names[:6])
    return shown + (f" and {len(names) - 6} more" if len(names) > 6 else "")
