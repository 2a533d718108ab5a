"""Composition theorems: n adaptive runs of an ε_s-DP (or ε_s-BR) mechanism → (ε, δ)-DP.

Each function maps a per-step ε_s to the total ε; :func:`per_step_epsilon` inverts any of them
by bisection, returning the largest ε_s whose total does not exceed the target. Formulas follow
../shared/notes/dp-simple-ga.md §1.6 (Lemmas 4.1–4.5); in the bounded-range bound ln(1/δ) sits
inside the square root (the thesis's Lemma 6 prints it outside: a typo).

zCDP conversions follow Bun–Steinke (simple) and Canonne–Kamath–Steinke 2020 (tight).
"""

from __future__ import annotations

import functools
import math
import sys
from collections.abc import Callable

import numpy as np

from synth.errors import BudgetError, check_delta, check_epsilon

__all__ = [
    "THEOREMS",
    "advanced",
    "basic",
    "bounded_range",
    "dp_to_zcdp",
    "explore",
    "kairouz",
    "per_step_epsilon",
    "renyi",
    "zcdp_delta",
    "zcdp_to_dp",
]


def _check(eps_s: float, n: int, delta: float | None = None) -> None:
    if not (eps_s >= 0 and math.isfinite(eps_s)):
        raise BudgetError(f"per-step epsilon must be a finite number ≥ 0, got {eps_s!r}")
    if n < 1 or int(n) != n:
        raise BudgetError(f"number of steps n must be a positive integer, got {n!r}")
    if delta is not None:
        check_delta(delta, allow_zero=False)


def basic(eps_s: float, n: int, delta: float = 0.0) -> float:
    """Sequential composition: ε = n·ε_s (δ plays no part)."""
    _check(eps_s, n)
    return n * eps_s


def advanced(eps_s: float, n: int, delta: float) -> float:
    """Dwork–Rothblum–Vadhan: ε = ε_s·√(2n ln(1/δ)) + n·ε_s·(e^ε_s − 1)."""
    _check(eps_s, n, delta)
    growth = math.expm1(eps_s) if eps_s < 700 else math.inf  # beyond: e^ε overflows
    return eps_s * math.sqrt(2 * n * -math.log(delta)) + n * eps_s * growth


def kairouz(eps_s: float, n: int, delta: float) -> float:
    """Kairouz–Oh–Viswanath Thm 3.4, the closed form of Lemma 4.2 (min of three bounds)."""
    _check(eps_s, n, delta)
    drift = n * eps_s * math.tanh(eps_s / 2)  # (e^ε−1)ε n/(e^ε+1)
    b2 = drift + eps_s * math.sqrt(2 * n * math.log(math.e + math.sqrt(n) * eps_s / delta))
    b3 = drift + eps_s * math.sqrt(2 * n * -math.log(delta))
    return min(n * eps_s, b2, b3)


def _log_cosh(x: np.ndarray) -> np.ndarray:
    x = np.abs(x)
    return x + np.log1p(np.exp(-2 * x)) - math.log(2)


_ALPHAS = 1 + np.logspace(-4, 7, 2000)
_STEPS = 64  # bounded loops: a root-finder's last steps, or doublings of a bracket


def renyi(eps_s: float, n: int, delta: float) -> float:
    """Rényi composition of pure ε_s-DP steps (Bun–Steinke Prop. 19, Lemma 4.3).

    Each step is (α, ε(α))-RDP with ε(α) = ln(cosh((α−½)ε_s)/cosh(ε_s/2))/(α−1), which is the
    note's sinh form rewritten so large α·ε_s does not overflow; minimised over a dense α grid.
    """
    _check(eps_s, n, delta)
    if eps_s == 0:
        return 0.0
    a = _ALPHAS
    with np.errstate(over="ignore", invalid="ignore"):  # huge ε: ∞ terms, basic wins below
        rdp = (_log_cosh((a - 0.5) * eps_s) - _log_cosh(np.array(eps_s / 2))) / (a - 1)
        total = n * rdp + -math.log(delta) / (a - 1)
    return float(min(np.nanmin(total), n * eps_s))


def bounded_range(eps_s: float, n: int, delta: float) -> float:
    """Dong–Durfee–Rogers for ε_s-BR steps (the exponential mechanism):

    ε = min{ n ε_s, n (x − 1 − ln x) + √(n ε_s²/2 · ln(1/δ)) },  x = ε_s / (1 − e^−ε_s).
    """
    _check(eps_s, n, delta)
    if eps_s == 0:
        return 0.0
    denom = -math.expm1(-eps_s)
    u = (eps_s + math.expm1(-eps_s)) / denom  # x − 1, without cancellation for small ε_s
    kl = u - math.log1p(u)
    return min(n * eps_s, n * kl + eps_s * math.sqrt(n / 2 * -math.log(delta)))


THEOREMS: dict[str, Callable[[float, int, float], float]] = {
    "basic": basic,
    "advanced": advanced,
    "kairouz": kairouz,
    "renyi": renyi,
    "bounded_range": bounded_range,
}


def per_step_epsilon(epsilon: float, n: int, delta: float, theorem: str = "bounded_range") -> float:
    """Largest ε_s with THEOREMS[theorem](ε_s, n, δ) ≤ ε, by bisection (the feasible end).

    Every theorem is monotone in ε_s and ≥ ε_s, so the answer lies in [0, ε].
    """
    if theorem not in THEOREMS:
        raise BudgetError(f"unknown composition theorem {theorem!r}; "
                          f"choose from {sorted(THEOREMS)}")
    check_epsilon(epsilon)
    compose = THEOREMS[theorem]
    _check(epsilon, n, delta if theorem != "basic" else None)
    lo, hi = 0.0, epsilon
    if compose(hi, n, delta) <= epsilon:
        return hi
    for _ in range(200):
        mid = lo + (hi - lo) / 2  # (lo + hi) / 2 overflows near the largest float
        if mid in (lo, hi):
            break
        if compose(mid, n, delta) <= epsilon:
            lo = mid
        else:
            hi = mid
    return lo


def explore(epsilon: float, delta: float, steps) -> dict[str, np.ndarray]:
    """Per-step ε each theorem allows for every number of steps in ``steps``, at a total
    (ε, δ): the composition explorer's curves. Bounded range only applies to mechanisms
    that are ε-BR, such as the exponential mechanism; the others hold for any ε-DP step."""
    counts = np.asarray(steps, dtype=np.int64)
    return {name: np.array([per_step_epsilon(epsilon, int(k), delta, name) for k in counts])
            for name in THEOREMS}


# ---- zCDP ⇄ (ε, δ) -------------------------------------------------------------------------


def _check_rho(rho: float) -> None:
    if not (rho >= 0 and math.isfinite(rho)):
        raise BudgetError(f"rho must be a finite number ≥ 0, got {rho!r}")


def zcdp_delta(rho: float, epsilon: float) -> float:
    """Smallest δ such that ρ-zCDP implies (ε, δ)-DP (Canonne–Kamath–Steinke 2020, Prop. 12):

    δ = inf_{α>1} exp((α−1)(αρ − ε) + α·ln(1 − 1/α)) / (α − 1).
    """
    _check_rho(rho)
    return 0.0 if rho == 0 else math.exp(_log_zcdp_delta(rho, epsilon))


@functools.lru_cache(maxsize=4096)
def _log_zcdp_delta(rho: float, epsilon: float) -> float:
    """ln of :func:`zcdp_delta` (ρ > 0), kept in log space so that tiny δ keep their digits.
    Remembered: a ledger converts the same ρ at the same δ again and again (every charge of
    a round's mechanism, every fit of a sweep), and each conversion is a root search over
    searches; this was half of what a small fit of DP-Select's measure engine took."""
    def log_delta(t: float) -> float:  # α = 1 + e^t keeps α > 1 without a constraint
        a = 1 + math.exp(t)
        return (a - 1) * (a * rho - epsilon) + a * math.log1p(-1 / a) - math.log(a - 1)

    # the optimum is near α = (ε + ρ)/(2ρ); search a wide bracket in log(α − 1)
    from scipy.optimize import minimize_scalar  # deferred: 0.4 s that `schema infer` skips

    res = minimize_scalar(log_delta, bounds=(-20.0, 40.0), method="bounded",
                          options={"xatol": 1e-10})
    return min(res.fun, 0.0) if math.isfinite(res.fun) else 0.0


def zcdp_to_dp(rho: float, delta: float, tight: bool = True) -> float:
    """ε such that ρ-zCDP implies (ε, δ)-DP.

    simple: ε = ρ + 2√(ρ ln(1/δ)) (Bun–Steinke Prop. 1.3); tight: invert :func:`zcdp_delta`,
    never worse than the simple bound.
    """
    _check_rho(rho)
    check_delta(delta, allow_zero=False)
    simple = rho + 2 * math.sqrt(rho) * math.sqrt(-math.log(delta))
    if not math.isfinite(simple):
        raise BudgetError(f"rho = {rho!r} is too large to convert to (ε, δ) in floating point")
    if not tight or rho == 0:
        return simple
    # zcdp_delta falls as ε grows: solve δ(ρ, ε) = δ in log space on [0, simple]
    def gap(eps: float) -> float:
        return _log_zcdp_delta(rho, eps) - math.log(delta)

    if gap(0.0) <= 0:
        return 0.0
    if gap(simple) > 0:  # the optimiser cannot resolve δ at this ρ: the simple bound holds
        return simple
    from scipy.optimize import brentq  # deferred, as above

    eps = brentq(gap, 0.0, simple, xtol=simple * 1e-15, rtol=1e-13)
    for _ in range(_STEPS):  # brentq can land a hair on the wrong side: step up
        if gap(eps) <= 0:
            return min(eps, simple)
        eps = math.nextafter(eps, math.inf) * (1 + 1e-12)
    return simple


def dp_to_zcdp(epsilon: float, delta: float, tight: bool = True) -> float:
    """Largest ρ whose ρ-zCDP guarantee implies (ε, δ)-DP (the inverse of :func:`zcdp_to_dp`).

    simple: ρ = (√(ln(1/δ) + ε) − √(ln(1/δ)))²; tight: a root of δ(ρ, ε) = δ, checked to lie
    on the feasible side, so the returned ρ provably gives (ε, δ) at exactly this ε
    (converting back with :func:`zcdp_to_dp` may land a few 1e-13 above it).
    """
    check_epsilon(epsilon)
    check_delta(delta, allow_zero=False)
    log_inv = -math.log(delta)
    # (√(L + ε) − √L)², written without the cancellation that rounds it to 0 for tiny ε
    simple = (epsilon / (math.sqrt(log_inv + epsilon) + math.sqrt(log_inv))) ** 2
    if simple < sys.float_info.min:  # 0 or subnormal: too few digits left to be exact
        raise BudgetError(f"epsilon = {epsilon!r} is too small: the zCDP ρ it allows is below "
                          "the smallest normal float")
    if not tight:
        return simple
    # δ(ρ, ε) grows with ρ; the simple ρ satisfies δ(ρ, ε) ≤ δ, so bracket upwards from it
    def gap(rho: float) -> float:
        return _log_zcdp_delta(rho, epsilon) - math.log(delta)

    lo, hi = simple, 2 * simple
    for _ in range(_STEPS):
        if not math.isfinite(hi) or gap(hi) > 0:
            break
        lo, hi = hi, 2 * hi
    if not math.isfinite(hi) or gap(hi) <= 0 or gap(lo) > 0:
        return lo if gap(lo) <= 0 else simple  # no sign change to solve for: stay feasible
    from scipy.optimize import brentq  # deferred, as above

    rho = brentq(gap, lo, hi, xtol=lo * 1e-15, rtol=1e-13)
    for _ in range(_STEPS):  # land on the feasible side
        if gap(rho) <= 0:
            return max(rho, simple)
        rho = math.nextafter(rho, 0) * (1 - 1e-12)
    return simple
