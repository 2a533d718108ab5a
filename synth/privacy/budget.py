"""A privacy budget (ε, δ) split into named shares, and the ledger that spends it.

Stages compose by basic composition: the run is (Σ ε_i, Σ δ_i)-DP, and each stage may account
its own mechanisms more tightly (zCDP, RDP, bounded range) inside its share. The ledger keeps
what each mechanism ran (noise scale, sensitivity, count) next to the (ε, δ) it was charged, so
an entry reads like a line of a proof and can be re-accounted later.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from synth.errors import BudgetError

ADD_REMOVE = "add/remove one record"
REPLACE_ONE = "replace one record (the row count is public)"
NO_GUARANTEE = "no guarantee"
_TOLERANCE = 1e-9  # relative slack for floating-point sums of shares and entries


def check_positive(value: float, name: str, error: type[Exception] = BudgetError) -> float:
    """``value`` as a finite float > 0, or ``error`` naming the parameter."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise error(f"{name} must be a number > 0, got {value!r}") from None
    if not (number > 0 and math.isfinite(number)):
        raise error(f"{name} must be a finite number > 0, got {value!r}")
    return number


def check_epsilon(epsilon: float, name: str = "epsilon") -> float:
    return check_positive(epsilon, name)


def check_delta(delta: float, name: str = "delta", allow_zero: bool = True) -> float:
    """δ in [0, 1) (or (0, 1) without ``allow_zero``), or a BudgetError naming it."""
    interval = "[0, 1)" if allow_zero else "(0, 1)"
    try:
        value = float(delta)
    except (TypeError, ValueError):
        raise BudgetError(f"{name} must be a number in {interval}, got {delta!r}") from None
    if not (0 <= value < 1) or (value == 0 and not allow_zero):
        raise BudgetError(f"{name} must lie in {interval}, got {delta!r}")
    return value


def default_delta(n: int) -> float:
    """δ = 1/n^1.1: below 1/n, so no single record is likely to be exposed."""
    if n < 1:
        raise BudgetError(f"row count must be ≥ 1 to choose a default delta, got {n}")
    return float(n) ** -1.1


@dataclass(frozen=True)
class Budget:
    """Total (ε, δ) for a run and the fraction of it each stage may spend."""

    epsilon: float
    delta: float
    shares: Mapping[str, float] = field(default_factory=lambda: {"all": 1.0})

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "delta", check_delta(self.delta))
        shares = dict(self.shares)
        if not shares:
            raise BudgetError("a budget needs at least one share")
        for name, frac in shares.items():
            try:
                frac = float(frac)
            except (TypeError, ValueError):
                raise BudgetError(f"share {name!r} must be a number, got {frac!r}") from None
            if not (0 <= frac <= 1):
                raise BudgetError(f"share {name!r} must lie in [0, 1], got {frac!r}")
            shares[name] = frac
        total = sum(shares.values())
        if abs(total - 1) > 1e-6:
            listed = ", ".join(f"{k}={v:g}" for k, v in shares.items())
            raise BudgetError(f"budget shares must sum to 1, got {total:g} ({listed})")
        object.__setattr__(self, "shares", shares)

    def allowance(self, stage: str) -> tuple[float, float]:
        """(ε, δ) that ``stage`` may spend."""
        if stage not in self.shares:
            raise BudgetError(f"no budget share named {stage!r}; shares are {sorted(self.shares)}")
        frac = self.shares[stage]
        return self.epsilon * frac, self.delta * frac

    def to_dict(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "delta": self.delta, "shares": dict(self.shares)}


@dataclass(frozen=True)
class LedgerEntry:
    """One mechanism run on the private table."""

    stage: str
    mechanism: str
    epsilon: float
    delta: float
    accounting: str
    description: str = ""
    neighbouring: str = ADD_REMOVE
    params: Mapping[str, Any] = field(default_factory=dict)
    guarantee: bool = True  # False: the mechanism ran outside any DP theorem (ε is ∞)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["params"] = dict(self.params)
        if not self.guarantee:
            d["epsilon"] = None  # JSON has no ∞: None reads "no finite ε"
        return d


class Ledger:
    """Spends a :class:`Budget`; refuses any entry that would exceed its share or the total."""

    def __init__(self, budget: Budget, on_spend: Callable[[LedgerEntry], None] | None = None):
        self.budget = budget
        self.entries: list[LedgerEntry] = []
        self._on_spend = on_spend

    @property
    def total_epsilon(self) -> float:
        """Σ ε of the entries: ∞ once any entry ran without a guarantee."""
        return math.fsum(e.epsilon for e in self.entries)

    @property
    def guaranteed(self) -> bool:
        return all(e.guarantee for e in self.entries)

    @property
    def total_delta(self) -> float:
        return math.fsum(e.delta for e in self.entries)

    def spent(self, stage: str) -> tuple[float, float]:
        mine = [e for e in self.entries if e.stage == stage]
        return math.fsum(e.epsilon for e in mine), math.fsum(e.delta for e in mine)

    def remaining(self, stage: str) -> tuple[float, float]:
        eps, delta = self.budget.allowance(stage)
        used_eps, used_delta = self.spent(stage)
        return max(0.0, eps - used_eps), max(0.0, delta - used_delta)

    def spend(self, entry: LedgerEntry) -> LedgerEntry:
        if not entry.guarantee:  # recorded as it is: the run claims no DP at all
            if entry.epsilon != math.inf:
                raise BudgetError(f"{entry.mechanism}: an entry without a guarantee has ε = ∞")
            return self._record(entry)
        if not (entry.epsilon >= 0 and math.isfinite(entry.epsilon)):
            raise BudgetError(f"{entry.mechanism}: epsilon must be finite and ≥ 0, got "
                              f"{entry.epsilon!r}")
        if not 0 <= entry.delta < 1:
            raise BudgetError(f"{entry.mechanism}: delta must lie in [0, 1), got {entry.delta!r}")
        eps_left, delta_left = self.remaining(entry.stage)
        share_eps, share_delta = self.budget.allowance(entry.stage)
        if entry.epsilon > eps_left + _TOLERANCE * share_eps or (
            entry.delta > delta_left + _TOLERANCE * max(share_delta, 1e-300)
        ):
            raise BudgetError(
                f"{entry.mechanism} ({entry.stage}) would spend ε={entry.epsilon:.4g}, "
                f"δ={entry.delta:.3g} but only ε={eps_left:.4g}, δ={delta_left:.3g} remain "
                f"in that share; refusing to exceed the budget"
            )
        return self._record(entry)

    def _record(self, entry: LedgerEntry) -> LedgerEntry:
        self.entries.append(entry)
        if self._on_spend is not None:
            self._on_spend(entry)
        return entry

    def to_dict(self) -> dict[str, Any]:
        return {
            "total_epsilon": self.total_epsilon if self.guaranteed else None,
            "guarantee": f"({self.total_epsilon:.6g}, {self.total_delta:.3g})-DP"
            if self.guaranteed else NO_GUARANTEE + ": " + "; ".join(
                e.accounting for e in self.entries if not e.guarantee),
            "total_delta": self.total_delta,
            "budget": self.budget.to_dict(),
            "neighbouring": ADD_REMOVE,
            "composition": "basic composition across entries; each entry accounts its own "
                           "mechanisms as stated in 'accounting'",
            "entries": [e.to_dict() for e in self.entries],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Ledger:
        ledger = cls(Budget(**data["budget"]))
        for e in data.get("entries", []):
            ledger.spend(LedgerEntry(**{**e, "epsilon": math.inf if e["epsilon"] is None
                                        else e["epsilon"]}))
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
