"""The bounds of private sampling (Boedihardjo–Strohmer–Vershynin, as examined by Pierquin et
al. 2023), and whether a setting can meet them.

Theorem 4.1 (privacy) caps the number k of released samples; Theorem 4.2 (accuracy) needs
enough rows n, a reduced space of m points inside [m_lo, 2^{p/4}], at least k_lo samples and
‖f_n‖∞ ≤ Δ/2^p. Every quantity here is a log₁₀ (values reach 10^±300 and beyond, where floats
overflow); :func:`show` prints one. ``empty`` says whether C(p, ≤d), the number of Walsh
functions of degree ≤ d, counts the empty set: the paper's eq. (3) does not ("paper mode"),
the algorithm does. The δ here is the accuracy margin, not a DP δ.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from synth.errors import ParameterError, check_positive

LOG10E, LOG10_2 = math.log10(math.e), math.log10(2)
DELTA_MODES = ("manual", "from ‖f_n‖∞", "distinct rows", "ideal cube")


def walsh_count(p: int, d: int, empty: bool = True) -> int:
    """C(p, ≤d) = Σ_{i ≤ d} C(p, i), from i = 0 when ``empty`` else from i = 1."""
    return sum(math.comb(p, i) for i in range(0 if empty else 1, d + 1))


def log10_delta_bound(mode: str, p: int, log10_n: float, manual: float | None = None,
                      fn_inf: float | None = None) -> float:
    """log₁₀ Δ: a manual value, 2^p‖f_n‖∞ (the paper's choice, read from private data), the
    best case for distinct rows max(1, 2^p/n), or 1 (every cube point equally often)."""
    if mode == "manual":
        return math.log10(_positive(manual, "Δ"))
    if mode == "from ‖f_n‖∞":
        return p * LOG10_2 + math.log10(_positive(fn_inf, "‖f_n‖∞"))
    if mode == "distinct rows":
        return max(0.0, p * LOG10_2 - log10_n)
    if mode == "ideal cube":
        return 0.0
    raise ParameterError(f"Δ mode must be one of {DELTA_MODES}, got {mode!r}")


@dataclass(frozen=True)
class Setting:
    """A private-sampling configuration; n, Δ and m as log₁₀ (k as a plain count)."""

    p: int
    d: int
    log10_n: float
    epsilon: float
    delta: float  # the accuracy margin (not a DP δ)
    gamma: float
    log10_Delta: float
    log10_m: float | None = None  # None: judge the best admissible m, m_lo
    k: float | None = None
    empty: bool = True

    def __post_init__(self):
        if not (isinstance(self.p, int) and self.p >= 1):
            raise ParameterError(f"p must be an integer ≥ 1, got {self.p!r}")
        if not (isinstance(self.d, int) and 1 <= self.d <= self.p):
            raise ParameterError(f"d must be an integer in [1, p = {self.p}], got {self.d!r}")
        for name in ("epsilon", "delta", "gamma"):
            _positive(getattr(self, name), name)
        if self.k is not None:
            _positive(self.k, "k")

    @property
    def log10_L(self) -> float:
        return math.log10(walsh_count(self.p, self.d, self.empty))

    @property
    def log10_n_lo(self) -> float:
        """Theorem 4.2: n ≥ 16 δ⁻² γ⁻¹ e^{2d} C(p, ≤d)."""
        return (math.log10(16) - 2 * math.log10(self.delta) - math.log10(self.gamma)
                + 2 * self.d * LOG10E + self.log10_L)

    @property
    def log10_m_lo(self) -> float:
        """Theorem 4.2: m ≥ 16 δ⁻² γ⁻¹ Δ² e^{2d} C(p, ≤d)."""
        return self.log10_n_lo + 2 * self.log10_Delta

    @property
    def log10_m_hi(self) -> float:
        """Theorem 4.2: m ≤ 2^{p/4}."""
        return self.p * LOG10_2 / 4

    @property
    def k_lo(self) -> float:
        """Theorem 4.2: k ≥ 4 δ⁻² (ln(2/γ) + ln C(p, ≤d))."""
        return 4 / self.delta ** 2 * (math.log(2 / self.gamma) + self.log10_L / LOG10E)

    def log10_k_hi(self, log10_m: float) -> float:
        """Theorem 4.1: k ≤ ε (δ/Δ)^{3/2} e^{−d/2} C(p, ≤d)^{−1/4} √n / (4√2 m^{3/4})."""
        return (math.log10(self.epsilon) + 1.5 * (math.log10(self.delta) - self.log10_Delta)
                - self.d / 2 * LOG10E - self.log10_L / 4 + self.log10_n / 2 - 0.75 * log10_m
                - math.log10(4 * math.sqrt(2)))

    @property
    def log10_k_max(self) -> float:
        """The largest k Theorem 4.1 allows at an m Theorem 4.2 accepts (m = m_lo), in closed
        form: ε δ³ γ^{3/4} √n / (32√2 Δ³ e^{2d} C(p, ≤d))."""
        return (math.log10(self.epsilon) + 3 * math.log10(self.delta)
                + 0.75 * math.log10(self.gamma) + self.log10_n / 2
                - math.log10(32 * math.sqrt(2)) - 3 * self.log10_Delta
                - 2 * self.d * LOG10E - self.log10_L)

    @property
    def success(self) -> float:
        """Theorem 4.2's success probability 1 − 4γ − 2^{−p/2}."""
        return 1 - 4 * self.gamma - 2 ** (-self.p / 2)

    def log10_n_for(self, k: float) -> float:
        """The n that lets Theorem 4.1 allow k samples at m = m_lo:
        2048 k² Δ⁶ e^{4d} C(p, ≤d)² / (ε² δ⁶ γ^{3/2})."""
        return (math.log10(2048) + 2 * math.log10(k) + 6 * self.log10_Delta
                + 4 * self.d * LOG10E + 2 * self.log10_L - 2 * math.log10(self.epsilon)
                - 6 * math.log10(self.delta) - 1.5 * math.log10(self.gamma))

    @property
    def log10_Delta_max(self) -> float:
        """The largest Δ for which [m_lo, 2^{p/4}] is not empty."""
        return (self.log10_m_hi - self.log10_n_lo) / 2

    def check(self) -> Report:
        return report(self)


@dataclass(frozen=True)
class Condition:
    """One hypothesis: it holds when ``margin`` (log₁₀ of allowed/needed) is ≥ 0."""

    name: str
    margin: float
    source: str

    @property
    def holds(self) -> bool:
        return self.margin >= 0


@dataclass(frozen=True)
class Report:
    """Every bound of a setting (log₁₀ unless named otherwise) and every condition."""

    values: dict[str, float]
    conditions: list[Condition]
    needed: dict[str, float] = field(default_factory=dict)

    @property
    def feasible(self) -> bool:
        return all(c.holds for c in self.conditions)

    def to_dict(self) -> dict:
        return {"feasible": self.feasible, "log10": self.values, "needed_log10": self.needed,
                "conditions": [{"name": c.name, "holds": c.holds, "log10_margin": c.margin,
                                "source": c.source} for c in self.conditions]}


def report(s: Setting) -> Report:
    m = s.log10_m_lo if s.log10_m is None else s.log10_m
    k_hi = s.log10_k_hi(m)
    values = {"L": s.log10_L, "Delta": s.log10_Delta, "n": s.log10_n, "n_lo": s.log10_n_lo,
              "m": m, "m_lo": s.log10_m_lo, "m_hi": s.log10_m_hi, "2^p": s.p * LOG10_2,
              "k_lo": math.log10(s.k_lo), "k_hi": k_hi, "k_hi_at_m_1": s.log10_k_hi(0.0),
              "k_max": s.log10_k_max, "success_probability": s.success,
              "qp_seconds": qp_seconds(m), "dense_bytes": dense_bytes(m, s.log10_L)}
    conditions = [
        Condition("0 < δ < Δ", s.log10_Delta - math.log10(s.delta), "Algorithm 1"),
        Condition("4δ ≤ 1 (a non-vacuous accuracy guarantee)", -math.log10(4 * s.delta),
                  "Theorem 4.2"),
        Condition("success probability 1 − 4γ − 2^(−p/2) > 0",
                  math.log10(1 - 2 ** (-s.p / 2)) - math.log10(4 * s.gamma), "Theorem 4.2"),
        Condition("n ≥ 16 δ⁻² γ⁻¹ e^(2d) C(p,≤d)", s.log10_n - s.log10_n_lo, "Theorem 4.2"),
        Condition("m_lo ≤ 2^(p/4): the m range is not empty", s.log10_m_hi - s.log10_m_lo,
                  "Theorem 4.2"),
    ]
    if s.log10_m is not None:
        conditions += [
            Condition("m ≥ m_lo", m - s.log10_m_lo, "Theorem 4.2"),
            Condition("m ≤ 2^(p/4)", s.log10_m_hi - m, "Theorem 4.2"),
            Condition("m ≥ C(p,≤d) (the matching system has full rank)", m - s.log10_L,
                      "Algorithm 1"),
        ]
    conditions += [
        Condition("k_hi ≥ 1: at least one private sample", k_hi, "Theorem 4.1"),
        Condition("k_lo ≤ k_hi: accuracy and privacy agree on k", k_hi - math.log10(s.k_lo),
                  "Theorems 4.1 and 4.2"),
    ]
    if s.k is not None:
        conditions += [
            Condition("k ≤ k_hi (privacy)", k_hi - math.log10(s.k), "Theorem 4.1"),
            Condition("k ≥ k_lo (accuracy)", math.log10(s.k) - math.log10(s.k_lo),
                      "Theorem 4.2"),
        ]
    needed = {"n_for_k": s.log10_n_for(s.k or 1), "Delta_max": s.log10_Delta_max,
              "p_min": float(min_p(s.d, s.delta, s.gamma, s.log10_Delta, s.empty))}
    return Report(values, conditions, needed)


def min_p(d: int, delta: float, gamma: float, log10_Delta: float = 0.0, empty: bool = True,
          limit: int = 100_000) -> int:
    """The smallest p ≥ d whose m range [m_lo, 2^{p/4}] is not empty, at a fixed Δ (0: none
    below ``limit``)."""
    for p in range(d, limit):
        s = Setting(p, d, 0.0, 1.0, delta, gamma, log10_Delta, empty=empty)
        if s.log10_m_lo <= s.log10_m_hi:
            return p
    return 0


def paper_constants(delta: float = 0.25, gamma: float = 0.125) -> dict[str, float]:
    """Eq. (3)–(4)'s constants at d = 2 with C(p, ≤2) = p(p+1)/2: 5.6·10⁴, 9.7·10⁻³, 2.7·10⁻⁶."""
    m = 16 / delta ** 2 / gamma * math.e ** 4 / 2
    k = delta ** 1.5 * 2 ** 0.25 / (4 * math.sqrt(2) * math.e)
    return {"m": m, "k": k, "ideal": k / m ** 0.75}


def qp_seconds(log10_m: float) -> float:
    """log₁₀ seconds of the paper's heuristic for a dense QP of size m: 0.1 s · (m/1000)²."""
    return -1 + 2 * (log10_m - 3)


def dense_bytes(log10_m: float, log10_L: float) -> float:
    """log₁₀ bytes of a dense float64 W_S (m × C(p, ≤d))."""
    return math.log10(8) + log10_m + log10_L


def show(log10_value: float, digits: int = 2) -> str:
    """10^x as text, for any x (e.g. 42.18 → '1.5e42'), without overflow."""
    if math.isnan(log10_value):
        return "nan"
    if math.isinf(log10_value):
        return "∞" if log10_value > 0 else "0"
    exponent = math.floor(log10_value)
    mantissa = round(10 ** (log10_value - exponent), digits - 1)
    if mantissa >= 10:
        mantissa, exponent = mantissa / 10, exponent + 1
    if -3 <= exponent <= 5:
        return f"{10 ** log10_value:,.{max(0, digits - 1 - exponent)}f}"
    return f"{mantissa:.{digits - 1}f}e{exponent}"


# ---- curves for the feasibility page (vectorised over p and n) -----------------------------

# Table 1 with the paper's printed Table 2 (k·m^{3/4}, m_lo); Adult's ‖f_n‖∞ unrounded (the
# printed 1.8·10⁻² gives 9.2·10⁻²⁷, not the printed 9.5·10⁻²⁷)
PRESETS = {
    "Asia": {"p": 8, "n": 20000, "fn_inf": 0.29, "printed": (7.3e-4, 2.2e10)},
    "Mushroom": {"p": 119, "n": 8124, "fn_inf": 1 / 8124, "printed": (1.1e-49, 5.3e72)},
    "Car": {"p": 25, "n": 1727, "fn_inf": 1 / 1727, "printed": (2.9e-8, 1.4e16)},
    "Adult": {"p": 62, "n": 32561, "fn_inf": 0.0177, "printed": (9.5e-27, 1.5e42)},
}


def log10_walsh_counts(ps: np.ndarray, d: int, empty: bool = True) -> np.ndarray:
    """log₁₀ C(p, ≤d) for an array of p, of its shape."""
    ps = np.asarray(ps)
    return np.log10([float(walsh_count(int(p), d, empty)) for p in ps.ravel()]).reshape(
        ps.shape)


def ideal_k_max(ps: np.ndarray, epsilon: float, delta: float, gamma: float, d: int = 2,
                empty: bool = True) -> np.ndarray:
    """log₁₀ of the largest private k on the ideal cube (n = 2^p, Δ = 1) at m = m_lo: the
    paper's Figure 1."""
    return k_max_grid(ps, np.asarray(ps) * LOG10_2, epsilon, delta, gamma, d,
                      np.zeros(len(ps)), empty)


def k_max_grid(ps: np.ndarray, log10_n: np.ndarray, epsilon: float, delta: float,
               gamma: float, d: int, log10_Delta: np.ndarray, empty: bool = True) -> np.ndarray:
    """:attr:`Setting.log10_k_max`, broadcast over arrays of p, n and Δ."""
    return (math.log10(epsilon) + 3 * math.log10(delta) + 0.75 * math.log10(gamma)
            + np.asarray(log10_n) / 2 - math.log10(32 * math.sqrt(2)) - 3 * log10_Delta
            - 2 * d * LOG10E - log10_walsh_counts(ps, d, empty))


def m_range(ps: np.ndarray, d: int, delta: float, gamma: float, log10_Delta: float = 0.0,
            empty: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(log₁₀ m_lo, log₁₀ 2^{p/4}) for each p at a fixed Δ."""
    lo = (math.log10(16) - 2 * math.log10(delta) - math.log10(gamma) + 2 * log10_Delta
          + 2 * d * LOG10E + log10_walsh_counts(ps, d, empty))
    return lo, np.asarray(ps) * LOG10_2 / 4


def log10_delta_grid(mode: str, ps: np.ndarray, log10_n: np.ndarray,
                     manual: float | None = None, fn_inf: float | None = None) -> np.ndarray:
    """:func:`log10_delta_bound` broadcast over p (last axis) and log₁₀ n (first axis)."""
    ps, log10_n = np.asarray(ps, float)[None, :], np.asarray(log10_n, float)[:, None]
    if mode == "distinct rows":
        return np.maximum(0.0, ps * LOG10_2 - log10_n)
    if mode == "from ‖f_n‖∞":
        return ps * LOG10_2 + math.log10(_positive(fn_inf, "‖f_n‖∞")) + 0 * log10_n
    return log10_delta_bound(mode, 1, 0.0, manual, fn_inf) + 0 * (ps + log10_n)


def _positive(value, name: str) -> float:
    return check_positive(value, name, ParameterError)
