"""Privacy as data: every mechanism run on the private table is a small immutable event.

An event says *what ran* (noise scale, sensitivity, sampling rate, count), never what it
cost: :mod:`synth.privacy.accounting` turns a stage's events into (ε, δ), so a saved ledger can
be re-accounted by a tighter accountant later (the habit of dp-accounting's ``DpEvent``).

Every sensitivity is for the one neighbouring relation of this package, :data:`RELATION`:
two tables are neighbours when one record is **replaced** by another and the row count n,
which the release shows anyway, is public. The functions at the end derive the
sensitivities the methods use; the tests check each against its closed form.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any, ClassVar

from synth.errors import BudgetError

RELATION = "replace one record (the row count n is public)"

__all__ = [
    "RELATION",
    "ZCDP",
    "Event",
    "Exponential",
    "Gaussian",
    "Laplace",
    "LaplaceThreshold",
    "NoGuarantee",
    "PoissonSampledGaussian",
    "PureDP",
    "event_from_dict",
]


def _positive(value: float, name: str) -> float:
    number = float(value)
    if not (number > 0 and math.isfinite(number)):
        raise BudgetError(f"{name} must be a finite number > 0, got {value!r}")
    return number


@dataclass(frozen=True)
class _Event:
    kind: ClassVar[str]

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.kind, **asdict(self)}


@dataclass(frozen=True)
class Laplace(_Event):
    """values + Laplace(scale) on a vector whose L1 sensitivity is ``sensitivity``:
    (Δ₁/b)-DP (Dwork, McSherry, Nissim, Smith 2006)."""

    scale: float
    sensitivity: float
    kind: ClassVar[str] = "laplace"

    def __post_init__(self) -> None:
        _positive(self.scale, "Laplace scale")
        _positive(self.sensitivity, "Laplace sensitivity")

    @property
    def epsilon(self) -> float:
        return self.sensitivity / self.scale


@dataclass(frozen=True)
class LaplaceThreshold(_Event):
    """Laplace(scale) counts of the keys present in the data, released above ``threshold``
    (the stability-based histogram, Korolova et al. 2009; Bun–Nissim–Stemmer).

    Replacing a record moves two counts by one each (L1 ``sensitivity`` 2; a unit of k rows,
    2k): on keys both tables hold that is (Δ₁/b)-DP. The keys only one table holds are the
    changed unit's own, released with probability Pr[c + Lap(b) > τ] = ½·exp(−(τ − c)/b)
    each. A record holds one such key (c = 1): δ = ½·exp(−(τ − 1)/b). A unit's keys have
    counts c_j ≥ 1 summing to at most k; the union bound Σ_j ½·exp(−(τ − c_j)/b) is convex in
    the counts, so it peaks at a vertex: one key of count k, or k keys of count 1, whichever
    is larger.
    """

    scale: float
    sensitivity: float
    threshold: float
    rows_per_unit: int = 1
    kind: ClassVar[str] = "laplace-threshold"

    def __post_init__(self) -> None:
        _positive(self.scale, "Laplace scale")
        _positive(self.sensitivity, "Laplace sensitivity")
        if int(self.rows_per_unit) != self.rows_per_unit or self.rows_per_unit < 1:
            raise BudgetError(f"rows per unit must be an integer ≥ 1, got "
                              f"{self.rows_per_unit!r}")
        if not (self.threshold > self.rows_per_unit and math.isfinite(self.threshold)):
            raise BudgetError(f"release threshold must be a finite number > "
                              f"{self.rows_per_unit} (rows per unit), got {self.threshold!r}")

    def to_dict(self) -> dict[str, Any]:  # a record-level ledger as it always was
        data = super().to_dict()
        if self.rows_per_unit == 1:
            del data["rows_per_unit"]
        return data

    @property
    def epsilon(self) -> float:
        return self.sensitivity / self.scale

    @property
    def delta(self) -> float:
        k, b, tau = self.rows_per_unit, self.scale, self.threshold
        return max(0.5 * math.exp(-(tau - k) / b), 0.5 * k * math.exp(-(tau - 1) / b))


@dataclass(frozen=True)
class Gaussian(_Event):
    """values + N(0, σ²) on a vector whose L2 sensitivity is ``sensitivity``:
    Δ₂²/(2σ²)-zCDP (Bun–Steinke 2016, Prop. 1.6)."""

    sigma: float
    sensitivity: float
    kind: ClassVar[str] = "gaussian"

    def __post_init__(self) -> None:
        _positive(self.sigma, "Gaussian σ")
        _positive(self.sensitivity, "Gaussian sensitivity")

    @property
    def rho(self) -> float:
        return self.sensitivity**2 / (2 * self.sigma**2)


@dataclass(frozen=True)
class PoissonSampledGaussian(_Event):
    """DP-SGD: ``steps`` steps, each a Poisson sample of rate q of the records, per-record
    gradients clipped to norm C and summed, plus N(0, (σC)²) per coordinate.

    ``noise_multiplier`` is σ, the noise's std in units of the clipping norm C. Under
    replacement one record's clipped gradient is swapped for another's in the batches that
    sample it (:func:`clipped_sum_l2`: the sum moves by ≤ 2C); the ``pld`` accountant takes
    the exact worst case of that (:func:`synth.privacy.accounting.pld_epsilon`).
    """

    sampling_rate: float
    noise_multiplier: float
    steps: int
    kind: ClassVar[str] = "poisson-sampled-gaussian"

    def __post_init__(self) -> None:
        if not 0 < self.sampling_rate <= 1:
            raise BudgetError(f"sampling rate must lie in (0, 1], got {self.sampling_rate!r}")
        _positive(self.noise_multiplier, "noise multiplier")
        if int(self.steps) != self.steps or self.steps < 0:
            raise BudgetError(f"steps must be an integer ≥ 0, got {self.steps!r}")


@dataclass(frozen=True)
class Exponential(_Event):
    """``count`` selections, each the exponential mechanism Pr[i] ∝ exp(ε·s_i/(2Δ)) for scores
    of sensitivity Δ (McSherry–Talwar 2007). Each is ε-DP, ε-bounded-range and ε²/8-zCDP
    (Durfee–Rogers 2019; Cesar–Rogers 2021); Gumbel top-k is k such selections (peeling).

    ``monotone``: every score moves the same way between neighbouring tables (all up or all
    down, by at most Δ), and Pr[i] ∝ exp(ε·s_i/Δ). The privacy loss of an outcome is then
    ε·(s_i − s'_i)/Δ − ln(Z/Z'), whose first term lies in [0, ε] (or [−ε, 0]) for every i: so
    it too is ε-DP and ε-bounded-range (McSherry–Talwar 2007, Sect. 3)."""

    epsilon: float
    sensitivity: float
    count: int = 1
    monotone: bool = False
    kind: ClassVar[str] = "exponential"

    def __post_init__(self) -> None:
        _positive(self.epsilon, "exponential mechanism's ε")
        _positive(self.sensitivity, "exponential mechanism's sensitivity")
        if int(self.count) != self.count or self.count < 0:
            raise BudgetError(f"count must be an integer ≥ 0, got {self.count!r}")
        if not isinstance(self.monotone, bool):
            raise BudgetError(f"monotone must be true or false, got {self.monotone!r}")

    def to_dict(self) -> dict[str, Any]:  # a ledger without monotone picks as it always was
        data = super().to_dict()
        if not self.monotone:
            del data["monotone"]
        return data


@dataclass(frozen=True)
class ZCDP(_Event):
    """A mechanism proven ρ-zCDP by its own theorem."""

    rho: float
    kind: ClassVar[str] = "zcdp"

    def __post_init__(self) -> None:
        _positive(self.rho, "ρ")


@dataclass(frozen=True)
class PureDP(_Event):
    """A mechanism proven ε-DP by a theorem named in ``theorem`` (e.g. private sampling's
    Theorem 4.1, which adds no noise)."""

    epsilon: float
    theorem: str
    kind: ClassVar[str] = "pure"

    def __post_init__(self) -> None:
        _positive(self.epsilon, "ε")


@dataclass(frozen=True)
class NoGuarantee(_Event):
    """A mechanism run outside every DP theorem (a demonstration): ε is ∞."""

    reason: str
    kind: ClassVar[str] = "no-guarantee"


Event = (Laplace | LaplaceThreshold | Gaussian | PoissonSampledGaussian | Exponential | ZCDP
         | PureDP | NoGuarantee)
_KINDS: dict[str, type] = {cls.kind: cls for cls in (
    Laplace, LaplaceThreshold, Gaussian, PoissonSampledGaussian, Exponential, ZCDP, PureDP,
    NoGuarantee)}


def event_from_dict(data: dict[str, Any]) -> Event:
    """The event a :meth:`to_dict` wrote (unknown types and fields are refused by name)."""
    kind = data.get("type")
    if kind not in _KINDS:
        raise BudgetError(f"unknown privacy event type {kind!r}; known: {sorted(_KINDS)}")
    cls = _KINDS[kind]
    names = {f.name for f in fields(cls)}
    extra = sorted(set(data) - names - {"type"})
    if extra:
        raise BudgetError(f"privacy event {kind!r} has unknown field {extra[0]!r}")
    return cls(**{k: v for k, v in data.items() if k != "type"})


# ---- sensitivities under replacement (derived here, tested against closed forms) ------------
# Each takes ``rows_per_unit`` (k, default 1: the record). Under "replace one unit" a unit's
# 1 … k rows become another's 1 … k rows: at most k single-row steps (a replacement, or an
# addition or removal, which moves a count vector less), so by the triangle inequality every
# norm below is at most k times the one-row figure (see :mod:`synth.privacy.unit`).


def histogram_l1(histograms: int = 1, rows_per_unit: int = 1) -> float:
    """L1 sensitivity of ``histograms`` count vectors, each over all records with one cell per
    record: a replacement takes 1 from one cell and adds 1 to another, in each histogram;
    a unit's k rows, 2k."""
    return 2.0 * histograms * rows_per_unit


def histogram_l2(histograms: int = 1, rows_per_unit: int = 1) -> float:
    """L2 sensitivity of ``histograms`` stacked count vectors: two cells move by 1 in each,
    so √(2·histograms); a unit's k rows can all leave one cell for another (two cells move
    by k), so k·√(2·histograms)."""
    return math.sqrt(2.0 * histograms) * rows_per_unit


def fractions_l2(partitions: int, n: int, rows_per_unit: int = 1) -> float:
    """L2 sensitivity of answers that are fractions of n rows (n public: the row count, or its
    estimate n̂ for units), for a workload made of ``partitions`` partitions of the rows
    (each row in one cell of each): k·√(2·partitions)/n."""
    return histogram_l2(partitions, rows_per_unit) / n


def fraction_linf(n: int, rows_per_unit: int = 1) -> float:
    """Sensitivity of any one fraction-of-rows answer, or of the largest error over such
    answers: a replacement changes a count by at most 1, a unit's k rows by k, so k/n."""
    return rows_per_unit / n


def normalised_marginals_l1(rows: int) -> float:
    """Sensitivity of Σ_j w_j·‖μ_j(D) − μ_j(S)‖ (weights summing to 1, μ_j normalised
    marginals of a ``rows``-row table): one replaced record moves 2/rows of L1 mass in each
    marginal, and the triangle inequality passes that to the distance, so 2/rows. (One row
    per unit only: with more, the real table's own size is not public.)"""
    return 2.0 / rows


def clipped_sum_l2(clip: float) -> float:
    """L2 sensitivity of a sum of per-record vectors clipped to norm C: replacing one swaps a
    vector of norm ≤ C for another, so ≤ 2C. DP-SGD over units clips each unit's summed
    gradient, so the same 2C holds for a unit, whatever k."""
    return 2.0 * clip


def row_count_l1(rows_per_unit: int) -> float:
    """Sensitivity of the row count after bounding to k rows per unit, the number of units
    public: a unit of 1 … k rows becomes one of 1 … k rows, so k − 1."""
    return float(rows_per_unit - 1)


def describe(event: Event) -> str:
    """One line for people: the event's own parameters, formatted (previews and charts)."""
    if isinstance(event, Gaussian):
        return f"Gaussian σ = {event.sigma:.3g}, L2 sensitivity {event.sensitivity:.3g}"
    if isinstance(event, LaplaceThreshold):
        return (f"Laplace scale {event.scale:.3g}, L1 sensitivity {event.sensitivity:g}, "
                f"threshold {event.threshold:.3g}")
    if isinstance(event, Laplace):
        return f"Laplace scale {event.scale:.3g}, L1 sensitivity {event.sensitivity:g}"
    if isinstance(event, PoissonSampledGaussian):
        return (f"noise multiplier σ = {event.noise_multiplier:.3g}, sampling rate "
                f"{event.sampling_rate:.3g}, {event.steps:,} steps")
    if isinstance(event, Exponential):
        return (f"ε per selection = {event.epsilon:.3g}, sensitivity {event.sensitivity:.3g}"
                f"{' (monotone scores)' if event.monotone else ''}, "
                f"{event.count:,} selection{'s' if event.count != 1 else ''}")
    if isinstance(event, ZCDP):
        return f"ρ = {event.rho:.3g}"
    if isinstance(event, PureDP):
        return f"ε = {event.epsilon:.3g} by {event.theorem}"
    return f"no guarantee: {event.reason}"
