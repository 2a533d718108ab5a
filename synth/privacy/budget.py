"""A privacy budget (ε, δ) split into named shares, and the ledger that spends it.

The ledger holds typed events (:mod:`synth.privacy.events`: what each mechanism ran) and
derives every (ε, δ) from them: one accountant per stage (:mod:`synth.privacy.accounting`),
basic composition across stages. It charges an event before its mechanism runs, so a refused
charge means the mechanism never ran, and its JSON round-trips the events, so a saved ledger
can be re-accounted. All of it is for one neighbouring relation: :data:`RELATION` (one
record), or one unit of protection when the budget names one (:mod:`synth.privacy.unit`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from synth.errors import BudgetError, as_float, check_delta, check_epsilon
from synth.privacy.accounting import account
from synth.privacy.events import RELATION, Event, NoGuarantee, event_from_dict
from synth.privacy.unit import PrivacyUnit

NO_GUARANTEE = "no guarantee"
NOISE = "fresh OS entropy (OpenDP's samplers; DP-SGD's generators seeded from os.urandom)"
CHARGED, STOPPED = "charged", "stopped early: settled to what ran"
_TOLERANCE = 1e-9  # relative slack for floating-point sums of shares and entries
ALL = "all"  # the default single share: a method spending it splits it by its own defaults
# a run's total ε: below MIN every answer is noise; above MAX DP promises nothing (private
# sampling's demo needs ε = 1e8), and the accountants' grids run out of memory or time
MIN_EPSILON, MAX_EPSILON = 1e-9, 1e9


def default_delta(n: int) -> float:
    """δ = the largest power of ten at most 1/(10n) (n = 5,000: 1e-5): well below 1/n, so no
    record is likely to be exposed (see :func:`cautions`), and a number a steward can read."""
    if n < 1:
        raise BudgetError(f"row count must be ≥ 1 to choose a default delta, got {n}")
    digits = math.ceil(math.log10(10 * n))
    return 10.0 ** -(digits + (10.0 ** -digits > 1 / (10 * n)))  # log10 may round down


WEAK_EPSILON = 5.0  # from here on a guarantee is weak (DP Wizard warns from 5 too)
# rows (times ε, past 1): below this the noise that hides one row is as large as the counts
SMALL_TABLE = 1000


def cautions(epsilon: float, delta: float, n: int, units: str = "rows") -> list[str]:
    """What a steward should hear before spending (ε, δ) on n rows (or n people, ``units``):
    a weak ε, a δ that could expose them, a table too small for much to survive the noise.
    Advice, not refusals."""
    said = []
    if epsilon >= WEAK_EPSILON:
        factor = (f"{math.exp(epsilon):,.0f}" if epsilon < 50
                  else f"10^{epsilon / math.log(10):.0f}")  # e^710 overflows a float
        said.append(f"ε = {epsilon:g} is a weak guarantee: what is released may be e^ε ≈ "
                    f"{factor} times likelier with one person in the table than "
                    f"without; ε ≤ 1 is the usual choice and ε ≥ {WEAK_EPSILON:g} rarely "
                    "defensible.")
    if n >= 1 and delta > 1 / (10 * n):
        said.append(f"δ = {delta:.2g} is above 1/(10n) = {1 / (10 * n):.2g}: a mechanism that "
                    f"publishes each row outright with probability δ meets (ε, δ)-DP, and would "
                    f"publish about {n * delta:.3g} of these {n:,} {units}. Keep δ well below 1/n "
                    "(the default is the largest power of ten at most 1/(10n)).")
    if n * max(epsilon, 1.0) < SMALL_TABLE:  # a noise of about 1/ε of a count hides one
        said.append(f"Only {n:,} {units}: one of them is 1/{n:,} of every count, so the noise that "
                    "hides them is about as large as the counts themselves. Expect a synthetic "
                    "table that keeps only the coarsest patterns.")
    return said


@dataclass(frozen=True)
class Budget:
    """Total (ε, δ) for a run and the fraction of it each stage may spend.

    Without ``shares`` the budget has the single share ``"all"``, which a method's ``fit``
    replaces by the method's own default split (``Synthesizer.default_shares``). ``unit`` is
    whom (ε, δ) protect: one row by default, or every row of one person (household, …).
    ``delta_shares`` split δ where that differs from ε's split (a pure ε-DP stage takes no
    δ: see :meth:`pure`); ``None``, as in ledgers written before it existed, splits δ as ε."""

    epsilon: float
    delta: float
    shares: Mapping[str, float] = field(default_factory=lambda: {ALL: 1.0})
    unit: PrivacyUnit = field(default_factory=PrivacyUnit)
    delta_shares: Mapping[str, float] | None = None

    def __post_init__(self) -> None:
        epsilon = check_epsilon(self.epsilon)
        if not MIN_EPSILON <= epsilon <= MAX_EPSILON:
            raise BudgetError(f"epsilon must lie in [{MIN_EPSILON:g}, {MAX_EPSILON:g}], got "
                              f"{self.epsilon!r}: below it every answer is noise, above it DP "
                              "promises nothing")
        object.__setattr__(self, "epsilon", epsilon)
        object.__setattr__(self, "delta", check_delta(self.delta))
        shares = _fractions(self.shares, "shares")
        object.__setattr__(self, "shares", shares)
        if self.delta_shares is not None:
            split = _fractions(self.delta_shares, "delta_shares")
            if set(split) != set(shares):
                raise BudgetError(f"delta_shares must name the stages of shares, "
                                  f"{sorted(shares)}; got {sorted(split)}")
            object.__setattr__(self, "delta_shares", None if all(
                abs(split[k] - shares[k]) <= _TOLERANCE for k in shares) else split)
        if isinstance(self.unit, Mapping):  # as to_dict wrote it
            object.__setattr__(self, "unit", PrivacyUnit.from_dict(dict(self.unit)))
        if not isinstance(self.unit, PrivacyUnit):
            raise BudgetError(f"unit must be a PrivacyUnit, got {self.unit!r}")

    def allowance(self, stage: str) -> tuple[float, float]:
        """(ε, δ) that ``stage`` may spend."""
        if stage not in self.shares:
            raise BudgetError(f"no budget share named {stage!r}; shares are {sorted(self.shares)}")
        return (self.epsilon * self.shares[stage],
                self.delta * (self.delta_shares or self.shares)[stage])

    def pure(self, stages: Iterable[str]) -> Budget:
        """This budget with ``stages`` taking no δ (their mechanisms are pure ε-DP, so δ there
        would go unused): the other stages share all of δ, in the proportions they had. When
        no other stage has any, nothing could spend δ, and the split stays as it was."""
        stages, split = set(stages), dict(self.delta_shares or self.shares)
        rest = math.fsum(v for k, v in split.items() if k not in stages)
        if rest <= 0 or not any(split.get(k, 0) > 0 for k in stages):
            return self
        return replace(self, delta_shares={k: 0.0 if k in stages else v / rest
                                           for k, v in split.items()})

    def to_dict(self) -> dict[str, Any]:
        unit = {"unit": self.unit.to_dict()} if self.unit.declared else {}
        split = {} if self.delta_shares is None else {"delta_shares": dict(self.delta_shares)}
        return {"epsilon": self.epsilon, "delta": self.delta, "shares": dict(self.shares),
                **split, **unit}


def _fractions(shares: Any, name: str) -> dict[str, float]:
    """``shares`` checked, as fractions of a whole per stage, summing to 1 exactly enough that
    rounding slack never becomes budget."""
    if not isinstance(shares, Mapping):
        raise BudgetError(f"{name} must be a mapping of stage name to fraction, got "
                          f"{shares!r}; leave it out to let the method split the budget")
    fracs = dict(shares)
    if not fracs:
        raise BudgetError(f"a budget needs at least one share in {name}")
    for stage, frac in fracs.items():
        if not isinstance(stage, str) or not stage:
            raise BudgetError(f"share names must be non-empty strings, got {stage!r}")
        frac = as_float(frac, f"share {stage!r}", BudgetError)
        if not (0 <= frac <= 1):
            raise BudgetError(f"share {stage!r} must lie in [0, 1], got {frac!r}")
        fracs[stage] = frac
    total = math.fsum(fracs.values())
    if abs(total - 1) > 1e-6:
        listed = ", ".join(f"{k}={v:g}" for k, v in fracs.items())
        label = "budget shares" if name == "shares" else name
        raise BudgetError(f"{label} must sum to 1, got {total:g} ({listed})")
    return {k: v / total for k, v in fracs.items()}


@dataclass(frozen=True)
class LedgerEntry:
    """One mechanism charged to the ledger before it ran: what it is (its event) and what the
    stage's accountant said it added to the stage's (ε, δ) when it was charged."""

    stage: str
    event: Event
    description: str = ""
    epsilon: float = 0.0  # the stage's ε rose by this much (derived: for charts and people)
    delta: float = 0.0
    status: str = CHARGED
    replayable: bool = False  # charged while the test-only replayable-noise switch was on

    @property
    def guarantee(self) -> bool:
        return not isinstance(self.event, NoGuarantee)

    def to_dict(self, relation: str = RELATION) -> dict[str, Any]:
        return {"stage": self.stage, "event": self.event.to_dict(), "relation": relation,
                "description": self.description,
                "epsilon": self.epsilon if self.guarantee else None,  # JSON has no ∞
                "delta": self.delta, "status": self.status,
                **({"replayable_noise": True} if self.replayable else {})}


class Ledger:
    """Charges events to a :class:`Budget` **before** their mechanisms run.

    Each stage has one accountant (see :mod:`synth.privacy.accounting`) that derives the
    stage's (ε, δ) from all its events; stages compose by basic composition. A charge that
    would take a stage over its share, or the run over its total, is refused and nothing is
    recorded, so the mechanism never runs.
    """

    def __init__(self, budget: Budget, accountants: Mapping[str, str] | None = None,
                 on_spend: Callable[[LedgerEntry], None] | None = None):
        self.budget = budget
        self.accountants = {stage: (accountants or {}).get(stage, "basic")
                            for stage in budget.shares}
        self.entries: list[LedgerEntry] = []
        self._on_spend = on_spend
        # called with (self, stage, event) before a charge is recorded; raises to refuse a
        # charge its run's plan does not hold (synth.plan.Plan.guard)
        self.guard: Callable[[Ledger, str, Event], None] | None = None
        self._costs: dict[tuple, tuple[float, float]] = {}  # events are immutable: cache

    def cost(self, stage: str, events: list[Event]) -> tuple[float, float]:
        """(ε, δ) ``events`` cost together in ``stage``, by its accountant."""
        key = (stage, *events)
        if key not in self._costs:
            self._costs[key] = account(events, self.accountants[stage],
                                       self.budget.allowance(stage)[1])
        return self._costs[key]

    def _events(self, stage: str) -> list[Event]:
        return [e.event for e in self.entries if e.stage == stage]

    def spent(self, stage: str) -> tuple[float, float]:
        """(ε, δ) the stage's accountant derives from its events so far."""
        self.budget.allowance(stage)  # an unknown stage is refused by name
        return self.cost(stage, self._events(stage))

    @property
    def stages(self) -> dict[str, tuple[float, float]]:
        return {stage: self.spent(stage) for stage in self.budget.shares}

    @property
    def total_epsilon(self) -> float:
        """Σ ε over stages: ∞ once any entry ran without a guarantee."""
        return math.fsum(eps for eps, _ in self.stages.values())

    @property
    def total_delta(self) -> float:
        return math.fsum(delta for _, delta in self.stages.values())

    @property
    def guaranteed(self) -> bool:
        return all(e.guarantee for e in self.entries)

    def charge(self, stage: str, event: Event, description: str = "") -> LedgerEntry:
        """Record ``event`` in ``stage`` before its mechanism runs, or refuse it."""
        before = self.spent(stage)
        if self.guard is not None:
            self.guard(self, stage, event)
        after = self.cost(stage, [*self._events(stage), event])
        if math.isfinite(after[0]):
            share = self.budget.allowance(stage)
            if after[0] > share[0] * (1 + _TOLERANCE) or (
                    after[1] > share[1] * (1 + _TOLERANCE)):
                raise BudgetError(
                    f"{event.kind} ({stage}) would bring the stage to ε={after[0]:.4g}, "
                    f"δ={after[1]:.3g} but its share is ε={share[0]:.4g}, δ={share[1]:.3g}; "
                    "refusing to exceed the budget")
            others = [cost for s, cost in self.stages.items() if s != stage]
            total = (math.fsum(c[0] for c in others) + after[0],
                     math.fsum(c[1] for c in others) + after[1])
            if total[0] > self.budget.epsilon * (1 + _TOLERANCE) or (
                    total[1] > self.budget.delta * (1 + _TOLERANCE)):
                raise BudgetError(f"{event.kind} ({stage}) would bring the run to "
                                  f"ε={total[0]:.4g}, δ={total[1]:.3g}, over its budget "
                                  f"ε={self.budget.epsilon:g}, δ={self.budget.delta:.3g}")
        from synth.privacy.mechanisms import replayable  # the test-only switch, if it is on

        entry = LedgerEntry(stage, event, description, after[0] - before[0],
                            after[1] - before[1], replayable=replayable())
        self.entries.append(entry)
        if self._on_spend is not None:
            self._on_spend(entry)
        return entry

    def settle(self, entry: LedgerEntry, ran: Event) -> LedgerEntry:
        """Replace a charged entry by what its mechanism actually ran before the run stopped
        (fewer steps or selections): never more than was charged."""
        i = next(i for i, e in enumerate(self.entries) if e is entry)
        others = [e.event for e in self.entries if e.stage == entry.stage and e is not entry]
        before = self.cost(entry.stage, others)
        now = self.cost(entry.stage, [*others, ran])
        if now[0] > self.spent(entry.stage)[0] * (1 + _TOLERANCE):
            raise BudgetError("a settled entry cannot cost more than was charged")
        self.entries[i] = replace(entry, event=ran, status=STOPPED,
                                  epsilon=now[0] - before[0], delta=now[1] - before[1])
        return self.entries[i]

    def to_dict(self) -> dict[str, Any]:
        stages = self.stages  # accounted once: a PLD accounting takes up to a second
        eps = math.fsum(e for e, _ in stages.values())
        delta = math.fsum(d for _, d in stages.values())
        return {
            "total_epsilon": eps if self.guaranteed else None,
            "total_delta": delta,
            "guarantee": f"({eps:.6g}, {delta:.3g})-DP"
            if self.guaranteed else NO_GUARANTEE + ": " + "; ".join(
                e.event.reason for e in self.entries if not e.guarantee),
            "relation": self.budget.unit.relation,
            "noise": "REPLAYABLE test noise: not a private release" if any(
                e.replayable for e in self.entries) else NOISE,
            "budget": self.budget.to_dict(),
            "composition": "basic composition across stages; within a stage, its accountant",
            "stages": {s: {"accountant": self.accountants[s],
                           "epsilon": eps if math.isfinite(eps) else None, "delta": delta}
                       for s, (eps, delta) in stages.items()},
            "entries": [e.to_dict(self.budget.unit.relation) for e in self.entries],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Ledger:
        """A saved ledger, re-accounted from its events (the derived figures are recomputed,
        never read back). One written before δ had a split of its own has no
        ``delta_shares``: its δ is split as its ε, as it was when it was written."""
        if not isinstance(data, Mapping) or not isinstance(data.get("budget"), Mapping):
            raise BudgetError("a ledger must be a JSON object with a 'budget' object (epsilon, "
                              "delta, shares), as `synth run --ledger` writes it")
        where = "the ledger's budget or stages"
        try:
            accountants = {s: v["accountant"] for s, v in data.get("stages", {}).items()}
            ledger = cls(Budget(**data["budget"]), accountants)
            for i, e in enumerate(data.get("entries", []), 1):
                where = f"ledger entry {i}"
                entry = ledger.charge(e["stage"], event_from_dict(e["event"]),
                                      e.get("description", ""))
                ledger.entries[-1] = replace(entry, status=e.get("status", CHARGED),
                                             replayable=bool(e.get("replayable_noise")))
        except (KeyError, TypeError, AttributeError) as exc:
            raise BudgetError(f"{where} is malformed ({type(exc).__name__}: {exc}); give a "
                              "ledger as `synth run --ledger` writes it") from None
        return ledger


def epsilon_text(epsilon: float | None, digits: int = 4) -> str:
    """ε for people: 'no guarantee' where a run claims none (∞, or None in a ledger file)."""
    return NO_GUARANTEE if epsilon is None or epsilon == math.inf else f"{epsilon:.{digits}g}"


def merge_shares(defaults: Mapping[str, float], given: Mapping[str, float]) -> dict[str, float]:
    """``defaults`` with the shares the user gave; the stages they left out keep their
    proportions within what remains. Unknown names and overspending are refused."""
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        raise BudgetError(f"unknown budget share {unknown[0]!r}; this run has shares "
                          f"{sorted(defaults)}")
    rest = [k for k in defaults if k not in given]
    if not rest:
        return {k: float(given[k]) for k in defaults}
    left = 1 - sum(given.values())
    if left <= 0:
        raise BudgetError(f"shares {dict(given)} leave nothing for {rest}; shares must sum to 1")
    weight = sum(defaults[k] for k in rest)
    return {k: float(given[k]) if k in given else
            (defaults[k] / weight * left if weight > 0 else left / len(rest)) for k in defaults}
