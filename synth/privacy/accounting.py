"""Accountants: a stage's events → the (ε, δ) they cost together.

Each stage of a run names one accountant; stages compose by basic composition (ε and δ add).

* ``basic``: pure and approximate DP events add up (Laplace, thresholded Laplace, the
  exponential mechanism, a theorem's ε).
* ``zcdp``: ρ adds up (Gaussian Δ²/(2σ²), the exponential mechanism ε²/8, Laplace ε²/2), then
  the tight conversion to (ε, δ) at the stage's δ (Canonne–Kamath–Steinke 2020).
* ``pld``: privacy loss distributions (dp-accounting's ``PLDAccountant``, pessimistic
  estimate) under **replace-one**: the tight accountant for DP-SGD's Poisson-subsampled
  Gaussian under substitution (see :func:`pld_epsilon`).
* ``bounded_range``: k exponential mechanisms of the same ε, by Dong–Durfee–Rogers 2020
  (ln(1/δ) inside the square root).

An event an accountant cannot take is refused by name, so a ledger never guesses.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence

from synth.errors import BudgetError
from synth.privacy.composition import bounded_range, dp_to_zcdp, zcdp_to_dp
from synth.privacy.events import (
    ZCDP,
    Event,
    Exponential,
    Gaussian,
    Laplace,
    LaplaceThreshold,
    NoGuarantee,
    PoissonSampledGaussian,
    PureDP,
)

# the PLD's loss grid: a coarse pass (1e-2) bounds ε, then a grid of 0.003·ε/√steps refines
# it. Pessimistic estimates are upper bounds on any grid; this one was within 2e-5 of a 1e-5
# grid's ε for 20 to 33,000 DP-SGD steps, in 0.04–0.14 s.
PLD_COARSE, PLD_RELATIVE = 1e-2, 3e-3
ACCOUNTANTS = ("basic", "zcdp", "pld", "bounded_range")


def _refuse(event: Event, accountant: str) -> BudgetError:
    return BudgetError(f"the {accountant!r} accountant cannot account a {event.kind!r} event")


def _pure(event: Event) -> tuple[float, float]:
    """(ε, δ) of one event on its own, for basic composition."""
    if isinstance(event, Laplace | PureDP):
        return event.epsilon, 0.0
    if isinstance(event, LaplaceThreshold):
        return event.epsilon, event.delta
    if isinstance(event, Exponential):
        return event.count * event.epsilon, 0.0
    raise _refuse(event, "basic")


def _rho(event: Event) -> float:
    """ρ with which ``event`` is ρ-zCDP."""
    if isinstance(event, Gaussian | ZCDP):
        return event.rho
    if isinstance(event, Exponential):  # ε-bounded range ⇒ ε²/8-zCDP (Cesar–Rogers 2021)
        return event.count * event.epsilon**2 / 8
    if isinstance(event, Laplace | PureDP):  # ε-DP ⇒ ε²/2-zCDP (Bun–Steinke Prop. 1.4)
        return event.epsilon**2 / 2
    raise _refuse(event, "zcdp")


def _pld_event(event: Event):
    """The dp-accounting event of ``event`` under REPLACE_ONE, whose Gaussian noise
    multiplier is the noise's std over half the replacement sensitivity (its unit is a
    record's norm bound C, and a replacement moves a sum by 2C)."""
    from dp_accounting import dp_event

    if isinstance(event, PoissonSampledGaussian):
        step = dp_event.PoissonSampledDpEvent(event.sampling_rate,
                                              dp_event.GaussianDpEvent(event.noise_multiplier))
        return dp_event.SelfComposedDpEvent(step, int(event.steps))
    if isinstance(event, Gaussian):
        return dp_event.GaussianDpEvent(event.sigma / (event.sensitivity / 2))
    raise _refuse(event, "pld")


def pld_epsilon(events: Sequence[Event], delta: float) -> float:
    """ε at δ of ``events`` by dp-accounting's PLD accountant under REPLACE_ONE.

    For DP-SGD a step is (1−q)·N(S, σ²C²) + q·N(S + g, σ²C²) on one table and the same with
    g′ on its neighbour (‖g‖, ‖g′‖ ≤ C). The worst case is the pair (1−q)N(0, σ²) + qN(−1, σ²)
    against (1−q)N(0, σ²) + qN(1, σ²) (Lebeda, Regehr, Kamath, Steinke 2024, Prop. 13), which
    is what dp-accounting composes. Opacus's own accountants are for add/remove only.
    """
    coarse = _pld(events, delta, PLD_COARSE)
    if not 0 < coarse < math.inf:
        return coarse
    steps = max([e.steps for e in events if isinstance(e, PoissonSampledGaussian)] or [1])
    grid = max(coarse * PLD_RELATIVE / math.sqrt(max(steps, 1)), 1e-7)
    return min(coarse, _pld(events, delta, grid))


def _pld(events: Sequence[Event], delta: float, grid: float) -> float:
    from dp_accounting import pld
    from dp_accounting.privacy_accountant import NeighboringRelation

    accountant = pld.PLDAccountant(neighboring_relation=NeighboringRelation.REPLACE_ONE,
                                   value_discretization_interval=grid)
    for event in events:
        accountant.compose(_pld_event(event))
    return max(0.0, float(accountant.get_epsilon(delta)))


def _needs_delta(accountant: str, delta: float) -> None:
    if not delta > 0:
        raise BudgetError(f"the {accountant!r} accountant converts to (ε, δ) and needs δ > 0 in "
                          "this stage's share")


def gaussian_needs_delta(stage: str, accountant: str, delta: float) -> None:
    """The one refusal of δ = 0 for a stage whose noise is Gaussian (``zcdp``, or ``pld``
    for DP-SGD): no ε alone bounds it. A plan asks before any method does."""
    if accountant in ("zcdp", "pld") and not delta > 0:
        raise BudgetError(f"the {stage!r} share has δ = 0, but its Gaussian noise "
                          f"({accountant} accounting) needs δ > 0: give δ > 0")


def zcdp_rho(epsilon: float, delta: float, stage: str) -> float:
    """The ρ a ``zcdp`` stage's (ε, δ) buys, the one calibration of every Gaussian
    measurement (σ = Δ₂/√(2ρ'), for the part ρ' a method gives it) and exponential pick
    (ε' = √(8ρ')) under that accountant: the conversion back at the stage's δ is exact."""
    gaussian_needs_delta(stage, "zcdp", delta)
    return dp_to_zcdp(epsilon, delta)


def account(events: Sequence[Event], accountant: str, delta: float) -> tuple[float, float]:
    """(ε, δ) that ``events`` cost together under ``accountant``, at the stage's ``delta``
    (the δ at which zCDP, RDP and bounded range are converted). ε is ∞ when any event
    carries no guarantee."""
    if accountant not in ACCOUNTANTS:
        raise BudgetError(f"unknown accountant {accountant!r}; choose from {ACCOUNTANTS}")
    if any(isinstance(e, NoGuarantee) for e in events):
        return math.inf, 0.0
    if not events:
        return 0.0, 0.0
    if accountant == "basic":
        costs = [_pure(e) for e in events]
        return math.fsum(c[0] for c in costs), math.fsum(c[1] for c in costs)
    _needs_delta(accountant, delta)
    if accountant == "zcdp":
        rho = math.fsum(_rho(e) for e in events)
        return (zcdp_to_dp(rho, delta), delta) if rho > 0 else (0.0, 0.0)
    if accountant == "pld":
        if all(isinstance(e, PoissonSampledGaussian) and e.steps == 0 for e in events):
            return 0.0, 0.0
        return _pld_cached(tuple(events), delta), delta
    if not all(isinstance(e, Exponential) for e in events):
        bad = next(e for e in events if not isinstance(e, Exponential))
        raise _refuse(bad, accountant)
    eps = {e.epsilon for e in events}
    if len(eps) > 1:
        raise BudgetError("bounded-range composition here takes selections of one ε; got "
                          f"{sorted(eps)}")
    count = sum(e.count for e in events)
    return (bounded_range(eps.pop(), count, delta), delta) if count else (0.0, 0.0)


@functools.lru_cache(maxsize=64)
def _pld_cached(events: tuple[Event, ...], delta: float) -> float:
    """:func:`pld_epsilon`, once per events and δ: a plan, its ledger's charge and the
    reservation account one DP-SGD event alike, and each PLD takes up to a second."""
    return pld_epsilon(events, delta)


def calibrate(make: Callable[[float], Event], accountant: str, epsilon: float, delta: float,
              start: float, what: str = "noise", tolerance: float = 1e-3) -> float:
    """The smallest noise parameter x (to a relative ``tolerance``) for which ``make(x)``
    costs at most (ε, δ) under ``accountant``, so what the ledger charges is what was planned.

    ``start`` must be enough noise (the cost falls as x grows); the search halves it until
    it no longer fits, then bisects in log space. Starting high keeps every evaluation cheap:
    an accountant is slowest where the noise is far too small.
    """
    def fits(x: float) -> bool:
        return account([make(x)], accountant, delta)[0] <= epsilon

    best = start  # always a value that was tested and fits
    if not fits(best):
        raise BudgetError(f"ε = {epsilon:.3g} at δ = {delta:.3g} is too small: even {what} "
                          f"{best:.3g} spends more")
    for _ in range(64):
        if not fits(best / 2):
            break
        best /= 2
    else:
        return best
    lo, hi = math.log(best / 2), math.log(best)
    while hi - lo > tolerance:
        mid = lo + (hi - lo) / 2
        if fits(math.exp(mid)):
            hi, best = mid, math.exp(mid)
        else:
            lo = mid
    return best
