"""Learning column domains under DP, for columns whose domain the user has not declared public.

Replacing one record moves it from one cell of a histogram to another (L1 sensitivity 2,
:func:`~synth.privacy.events.histogram_l1`) and changes any count of rows below or above a
point by at most 1; a unit of up to k rows moves k times that (``rows_per_unit`` below).

* Categories: **thresholded noisy counts**. Each category present in the data gets its count
  plus Laplace(b), b = 2k/ε; it is kept when that clears τ = 1 + b·ln(1/(2δ)). A category
  only one table of a neighbouring pair holds (count 1) leaks with probability
  ½e^{−(τ−1)/b} = δ, so this is (ε, δ)-DP (:class:`~synth.privacy.events.LaplaceThreshold`,
  which derives the δ of a unit's up to k keys; the threshold below meets it). ``other`` is
  always part of the learned domain, so its presence says nothing about rare categories. A
  list keeps at most ⌊2n/τ⌋ of them (the largest noisy counts: post-processing), a public cap
  a plan prices before anything is read (:func:`most_categories`).
* Numeric bounds: **three exponential mechanisms over a fixed grid** of signed edges, 0 and
  ±2^(j/8) (whole numbers for an integer column), so nothing about the grid depends on data.
  First a *scale* s: the octave [2^j, 2^(j+1)] of magnitudes |x| with the most values on
  both sides of it (its depth, min(rows with |x| ≥ 2^j, rows with |x| ≤ 2^(j+1)),
  sensitivity 1), which holds the median magnitude once it has ε ≈ 4·ln(m/β)/n (1 where
  most magnitudes are within 2^-10 of 0: a zero-inflated amount's median says nothing of
  its other values, and octaves of 2^-10 would put them twenty octaves out). Then the
  *upper end*: an edge e ≥ 0 scores −(rows above e − T)₊ − λ·d(e), the rows it would cut off
  (T = n/200 are tolerated) against its distance from 0 in octaves of the scale, d(e) =
  log2(1 + e/s); then the *lower end*, an edge at most the upper end hi scoring −(rows below
  e − T)₊ − λ·(d(hi) − d(e)), d signed (−log2(1 + |e|/s) below 0) and in octaves of the
  larger of s and hi, so it rises towards the data from below as the upper end falls towards
  it from above, and a balance whose tail reaches −10,000 crosses 0 in a few octaves; a
  bound below 0 costs e^6 more, so ages or hours cross 0 only on evidence. λ =
  max(κ/ε, n/200) rows an octave (2k·κ/ε for units of up to k rows, whose picks are not
  monotone): an end follows a tail an octave further only where the octave holds more than λ
  rows, and past the data each further octave is at least e^κ less likely. The scale is of
  magnitudes, not a signed middle: a balance spread both ways around a few hundred has its
  deepest signed octaves near 0, and octaves of 1 would make its tails twenty octaves away.
  The rows beyond an edge all move the same way when a record is replaced, so the ends are
  monotone exponential mechanisms, Pr ∝ exp(ε·s) (McSherry–Talwar). Quantiles by the
  exponential mechanism over the whole grid fail here: at the few thousandths of ε a column
  gets, the hundreds of empty edges outweigh the data's few. The grid cannot tell apart
  values less than about 9 % apart (a year's 1990 from 2005): such columns need public
  bounds. A date column's values are counted from its declared public **origin** (units
  since 1970 would put the grid's fine steps decades away from the data), so a date column
  whose bounds are learned must declare one; its scale is a year of its units, public, so it
  pays for the two ends only.
* Blanks: a number declared to allow them (``missing='indicator'``) gets a **Laplace count**
  of its missing values (sensitivity 1, a unit's k). Where the noisy count is within its
  noise of zero (under 3 scales: an empty column passes with probability 2.5 %) the column
  is learned to have none (``blanks=False``): methods still model its indicator, as their
  plans said, but the release has no blanks there (:func:`synth.missing.decode`).

Columns share the domain stage's (ε, δ) by need, composed by basic composition: a category
list or a number's bounds take a part each, a public column's blank count alone a quarter part
(a number's blank count takes a quarter of its part when its bounds are learned too), and δ
goes to the category lists. A learned category list is one ledger entry, learned bounds two
(the scale, then both ends; a date's only the ends), a blank count one.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from synth.dates import UNITS_PER_YEAR
from synth.errors import BudgetError, SchemaError
from synth.privacy.budget import Ledger
from synth.privacy.events import Event, Exponential, Laplace, LaplaceThreshold, histogram_l1
from synth.privacy.mechanisms import exponential, laplace
from synth.schema import CATEGORICAL, DATETIME, OTHER, Column, Schema

DOMAIN = "domain"
STEPS = 8  # grid edges per octave of magnitude
# κ: an end one octave (of the scale) further is e^κ less likely. At 6 a delay's tail (40 %
# of rows over ten octaves) was cut at a minute and a zero-inflated amount released as 0;
# at 2 they are kept (benchmarks/real_shapes.py) and an interval is wider than 10× the real
# p1–p99 range in about one draw of a hundred on 2,000 rows (at 1.5, far more often)
SPREAD_COST = 2.0
# …for a date, whose octaves are years from a public origin: its values fill a sliver of
# one octave (no tail spans several), and an octave of overshoot is as far again
ANCHORED_SPREAD_COST = 6.0
CROSS_COST = 6.0  # a lower end below 0 is e^this less likely: it crosses only on evidence
SPREAD_ROWS = 5e-3  # …and worth this share of the rows, when that is more than κ/ε rows
TOLERATED = 5e-3  # the share of the rows each end may cut off at no cost
SCALE_MOST = 0.3  # the most of a column's ε its scale takes
# the scale's chance of landing on an octave beyond all values (or in a thin tail): its ends
# then wander far from the data, so it is kept rare (at 1e-3, one Bank balance in 2,000 learned
# [-51,748,008, 35,734]); it costs little, as the ε it needs grows with ln(1/β)
SCALE_BETA = 1e-6
# a column that may have blanks lands its scale as surely as one without when at least this
# share of its rows have a value (how many do is private: the plan counts its scale's miss
# at this share, and says so where the domain share cannot buy it)
PRESENT = 0.5
BLANKS_SHARE = 0.25  # of a number's part, for its blank count when its bounds are learned too
BLANKS_SCALES = 3.0  # a noisy blank count under this many Laplace scales says there are none


def default_share(schema: Schema) -> float:
    """The domain share a run gets unless told otherwise: 0.2 when numeric bounds are to be
    learned (each has a scale and two ends to find; at 0.1 Bank's tails were lost,
    benchmarks/private_domains.py), 0.1 for category lists and blank counts alone."""
    private = [c for c in schema if not c.releasable]
    return 0.2 if any(c.kind != CATEGORICAL for c in private) else 0.1


@functools.lru_cache(maxsize=2)
def grid(integer: bool) -> np.ndarray:
    """The fixed edges bounds are chosen from: 0 and ±2^(j/8) up to 2^62, as whole numbers
    (deduplicated) for an integer column, with ±2^-10 … ±2^-1 below them for any other."""
    magnitudes = 2.0 ** (np.arange(0, 62 * STEPS + 1) / STEPS)
    if integer:
        magnitudes = np.unique(np.round(magnitudes))
    else:
        magnitudes = np.concatenate([2.0 ** np.arange(-10, 0), magnitudes])
    return np.concatenate([-magnitudes[::-1], [0.0], magnitudes])


def laplace_scale(epsilon: float, rows_per_unit: int = 1) -> float:
    """b = Δ₁/ε for one histogram under replacement (Δ₁ = 2k)."""
    return histogram_l1(1, rows_per_unit) / epsilon


def keep_threshold(epsilon: float, delta: float, rows_per_unit: int = 1) -> float:
    """The noisy count a category must clear to be released: τ = 1 + b·ln(1/(2δ)) for a
    record; for a unit of up to k rows the larger of k + b·ln(1/(2δ)) and 1 + b·ln(k/(2δ)),
    which bring each vertex of :class:`~synth.privacy.events.LaplaceThreshold`'s δ to δ."""
    k, b = rows_per_unit, laplace_scale(epsilon, rows_per_unit)
    return max(k + b * math.log(1 / (2 * delta)), 1 + b * math.log(k / (2 * delta)))


def most_categories(rows: int, event: LaplaceThreshold) -> int:
    """The most categories a learned list keeps besides ``other``: ⌊2·rows/τ⌋ (at least 1),
    a function of public facts, so a plan prices a list before it is read. At most that many
    categories hold τ/2 rows or more, and one holding fewer clears τ with probability under
    ½·e^{−(τ/2)/b}: the cap binds only where noise lifted many rare ones."""
    return max(1, int(2 * rows // event.threshold))


def noisy_categories(values: pd.Series, event: LaplaceThreshold) -> tuple[str, ...]:
    """Categories whose Laplace-noised count clears the event's threshold, then ``other``."""
    return kept_categories(values.value_counts(), event)


def kept_categories(counts: pd.Series, event: LaplaceThreshold,
                    most: int | None = None) -> tuple[str, ...]:
    """:func:`noisy_categories` from each category's count (the index)."""
    noisy = laplace(counts.to_numpy(dtype=float), event.scale)
    over = np.flatnonzero(noisy > event.threshold)
    if most is not None and len(over) > most:  # post-processing of the noisy counts
        over = over[np.argsort(-noisy[over], kind="stable")[:most]]
    kept = sorted(str(k) for k in counts.index[over])
    return (*[k for k in kept if k != OTHER], OTHER)


def bounds_events(epsilon: float, rows: int, integer: bool, missing: bool = False,
                  rows_per_unit: int = 1, anchored: bool = False
                  ) -> tuple[Exponential | None, Exponential]:
    """(the scale's pick, the two ends' picks) of a column's bounds learned with ``epsilon``
    from ``rows`` rows (public: n, or k·U). The scale takes what lands it among the data
    (:func:`scale_need`, at most 30 % of ε; 30 % when values may be missing, as how many
    are is private); each end half the rest. A column ``anchored`` at a public origin (a
    date) has a public scale: its ends take it all. Under units a unit's rows may move
    both ways, so the ends' scores are monotone only for one row per unit."""
    k = rows_per_unit
    scale = 0.0 if anchored else min(SCALE_MOST * epsilon,
                                     scale_need(counted(rows, missing), integer, k))
    return (Exponential(scale, float(k)) if scale else None,
            Exponential((epsilon - scale) / 2, float(k), count=2, monotone=k == 1))


def counted(rows: int, missing: bool) -> int:
    """The values a column's scale is bought for: all ``rows``, or :data:`PRESENT` of them
    where blanks may be (how many are is private)."""
    return max(int(rows * PRESENT), 1) if missing else rows


def scale_need(rows: int, integer: bool, rows_per_unit: int = 1) -> float:
    """The ε that keeps the scale off every octave beyond all the values but with
    probability β, whatever the data: the median magnitude's octave has depth ≥ n/2, one
    beyond the values 0, and the pick is not monotone (exponent ε·s/2), so
    m·e^(−ε·n/(4k)) ≤ β (:func:`scale_miss`); the depth moves by k for a unit of k rows, so
    k times the ε lands it as surely. (An empty octave between two clusters of values may
    be deep, and harmless: the ends still find both.)"""
    return rows_per_unit * _landing(integer) / rows


def scale_miss(event: Exponential | None, rows: int, integer: bool) -> float:
    """At most the chance that the scale lands on an octave beyond all of ``rows`` values (a
    union bound over the m octaves, for the worst data: depth n/2 at best); a scale far
    above the data lets the ends wander far from it. 0 for a public scale. With blanks, n
    is the values present: see :func:`fewest_present`."""
    if event is None:
        return 0.0
    exponent = event.epsilon * rows / (4 * event.sensitivity)
    return min(1.0, (len(octaves(integer)) - 1) * math.exp(-exponent))


def fewest_present(event: Exponential | None, integer: bool) -> int:
    """The fewest values a column that may be blank must have present for its scale to miss
    them with probability at most β (:func:`scale_need` solved for n): how many are present
    is private, so a plan can only state this. 0 for a public scale."""
    return 0 if event is None else math.ceil(event.sensitivity * _landing(integer)
                                             / event.epsilon)


def _landing(integer: bool) -> float:
    """ε·n/k at which the scale misses the data with probability β: 4·ln(m/β)."""
    return 4 * math.log((len(octaves(integer)) - 1) / SCALE_BETA)


@functools.lru_cache(maxsize=2)
def octaves(integer: bool) -> np.ndarray:
    """The indices in :func:`grid` of 0 and each 2^j for whole j, in order: the magnitudes'
    octaves the scale is chosen from (a few hundred finer stretches would outweigh the data
    at the few hundredths of ε a column gets)."""
    edges = grid(integer)
    exponent = np.log2(np.where(edges > 0, edges, 0.5))
    return np.flatnonzero((edges == 0) | ((edges > 0) & (exponent == np.round(exponent))))


def grid_counts(values: np.ndarray, integer: bool) -> np.ndarray:
    """How many ``values`` fall on and between the grid's edges (NaN nowhere): cell 2i + 1
    holds the values equal to edge i, cell 2i those between edges i − 1 and i (cell 0 those
    below the first, the last cell those above the last)."""
    edges = grid(integer)
    x = np.asarray(values, dtype=float)
    x = x[~np.isnan(x)]
    i = np.searchsorted(edges, x, side="left")
    on = edges[np.minimum(i, len(edges) - 1)] == x
    return np.bincount(2 * i + on, minlength=2 * len(edges) + 1)


def beyond(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rows below each edge, rows above it) from :func:`grid_counts`."""
    before = np.concatenate([[0], np.cumsum(counts)])
    total = before[-1]
    edges = np.arange((len(counts) - 1) // 2)
    return before[2 * edges + 1], total - before[2 * edges + 2]


def grid_bounds(counts: np.ndarray, events: tuple[Exponential | None, Exponential],
                rows: int, integer: bool, missing: bool = False, scale: float = 1.0
                ) -> tuple[float, float]:
    """Bounds from :func:`grid_counts`: the scale, then the upper end, then the lower (see
    the module's docstring); the caller has charged ``events``. Without a scale's event the
    octaves are of ``scale`` (a date's year of units). A column whose values may be missing
    tolerates no cut-off rows: how many it has present is private, and n/200 may be many of
    them."""
    edges = grid(integer)
    below, above = beyond(counts)
    pick_scale, ends = events
    if pick_scale is not None:
        scale = _scale(counts, pick_scale, integer)
    tolerated = 0.0 if missing else TOLERATED * rows / ends.sensitivity
    per_octave = octave_rows(ends, rows, pick_scale is None)

    def pick(scores: np.ndarray) -> int:
        return int(exponential(scores, ends.epsilon, ends.sensitivity, ends.monotone))

    up, scores = upper_scores(above, scale, tolerated, per_octave, integer)
    hi = int(up[pick(scores)])
    # the lower end's octaves are of the larger of the scale and the upper end: a balance
    # whose magnitudes are mostly a few hundred but whose tail reaches ±10,000 would make
    # crossing 0 cost many octaves of small numbers
    octaves_down = np.sign(edges) * np.log2(1 + np.abs(edges) / max(scale, edges[hi]))
    down = np.arange(hi + 1)
    # a bound of the other sign costs e^6 more (CROSS_COST): a column of ages or hours
    # crosses 0 only on evidence (it did so in one draw of seven without this), a
    # balance's thousands of negative values pay it at once
    lo = pick(-np.maximum(below[down] - tolerated, 0)
              - per_octave * (octaves_down[hi] - octaves_down[down])
              - crossing_rows(ends, rows) * (edges[down] < 0))
    if hi <= lo:  # one value everywhere: the next edge up makes an interval
        hi = min(lo + 1, len(edges) - 1)
    return float(edges[lo]), float(edges[hi])


def upper_scores(above: np.ndarray, scale: float, tolerated: float, per_octave: float,
                 integer: bool) -> tuple[np.ndarray, np.ndarray]:
    """(the upper end's candidates, their scores): each edge e ≥ 0 scores the rows above it
    beyond the tolerated, −(above − T)₊, less λ per octave of its distance from 0 in
    octaves of the scale, log2(1 + e/s)."""
    edges = grid(integer)
    up = np.arange(np.searchsorted(edges, 0.0), len(edges))
    return up, (-np.maximum(above[up] - tolerated, 0)
                - per_octave * np.log2(1 + edges[up] / scale))


def _exponent(ends: Exponential) -> float:
    """What a row of score is worth in the ends' picks, in nats: ε/Δ when monotone, ε/(2Δ)
    for a unit's rows, which may move both ways."""
    return ends.epsilon / (ends.sensitivity * (1 if ends.monotone else 2))


def crossing_rows(ends: Exponential, rows: int) -> float:
    """What a lower end below 0 costs, in rows: :data:`CROSS_COST` nats of the pick."""
    return max(CROSS_COST / _exponent(ends), SPREAD_ROWS * rows / ends.sensitivity)


def octave_rows(ends: Exponential, rows: int, anchored: bool = False) -> float:
    """λ, what an octave further out costs an end, in rows: what makes it e^κ less likely
    whatever the pick's exponent (ε·s/Δ when monotone, ε·s/(2Δ) for a unit's rows, which
    may move both ways), and at least n/200 of the U = rows / k units sure to be there. An
    end follows a tail only as far as an octave holds more than λ rows. κ is
    :data:`ANCHORED_SPREAD_COST` for a date's octaves from its public origin."""
    kappa = ANCHORED_SPREAD_COST if anchored else SPREAD_COST
    return max(kappa / _exponent(ends), SPREAD_ROWS * rows / ends.sensitivity)


def _scale(counts: np.ndarray, event: Exponential, integer: bool) -> float:
    """The scale: the lower edge of the magnitudes' octave [a, b] with the most rows on both
    sides of it, min(rows with |x| ≥ a, rows with |x| ≤ b) (1 for [0, b]: most values are
    about 0 and the rest may lie anywhere); the median magnitude's octave has depth ≥ n/2.
    The grid is symmetric, so −e's index is the mirror of e's."""
    below, above = beyond(counts)
    present, last = below[0] + above[0] + counts[1], len(below) - 1
    at = octaves(integer)
    lower, upper = at[:-1], at[1:]
    at_least = np.where(lower == at[0], present,
                        2 * present - below[lower] - above[last - lower])
    at_most = present - above[upper] - below[last - upper]
    depth = np.minimum(at_least, at_most).astype(float)
    edges = grid(integer)
    picked = lower[exponential(depth, event.epsilon, event.sensitivity)]
    return float(edges[picked]) if picked != at[0] else 1.0


def stand_in(edges: np.ndarray) -> np.ndarray:
    """The share of a public stand-in for a heavy-tailed column above each edge: 60 % of its
    values spread evenly over [0, 16], 40 % in a tail whose share above x is
    0.4·(16/x)^0.9 out to 16·2^10 (a flight delay's, a little heavier: the tail keeps 54 %
    of itself each octave over ten octaves). Its median magnitude, 13.3, lies in the octave
    [8, 16], so its scale is :data:`STAND_IN_SCALE`."""
    x = np.asarray(edges, dtype=float)
    return np.select([x < 0, x < 16, x < 16 * 2.0 ** 10],
                     [1.0, 1 - 0.6 * x / 16, 0.4 * (16 / np.maximum(x, 16)) ** 0.9], 0.0)


STAND_IN_SCALE = 8.0


def bounds_loss(events: tuple[Exponential | None, Exponential], rows: int, integer: bool,
                beta: float = 0.05, missing: bool = False) -> float:
    """The share of the ``rows`` an end may cut off with probability 1 − β, on a column with
    a tail as heavy as :func:`stand_in`'s: the quantile of the upper end's pick there,
    worked out exactly from its distribution (Pr ∝ exp(exponent·score), the scale at the
    stand-in's), from public facts alone. A lighter tail loses less, a heavier one (a
    thicker share spread over more octaves) may lose more. A date's ends, sought from its
    public origin, state the worst case instead: the tolerated 1/200, what the pick may
    score below the best (ln(m/β)/ε, McSherry–Talwar) and an octave's λ."""
    pick_scale, ends = events
    if pick_scale is None:
        factor = 1 if ends.monotone else 2
        slack = factor * ends.sensitivity * math.log(len(grid(integer)) / beta) / ends.epsilon
        return min(1.0, TOLERATED + (slack + octave_rows(ends, rows, True)) / rows)
    edges = grid(integer)
    above = rows * stand_in(edges)
    tolerated = 0.0 if missing else TOLERATED * rows / ends.sensitivity
    up, scores = upper_scores(above, STAND_IN_SCALE, tolerated, octave_rows(ends, rows),
                              integer)
    weights = np.exp(_exponent(ends) * (scores - scores.max()))
    lost = above[up] / rows
    order = np.argsort(-lost, kind="stable")  # the most lost first
    beyond_share = np.cumsum(weights[order]) / weights.sum()
    return float(lost[order][np.searchsorted(beyond_share, beta, side="right")])


@dataclass(frozen=True)
class Learning:
    """What learning one column's domain charges, worked out from public facts: a category
    list's thresholded counts, or a number's bounds (the scale's pick, the ends' picks)
    and, where it may have blanks, their Laplace count."""

    categories: LaplaceThreshold | None = None
    bounds: tuple[Exponential, Exponential] | None = None
    blanks: Laplace | None = None

    @property
    def events(self) -> list[Event]:
        """In the order they are charged."""
        return [e for e in (self.categories, *(self.bounds or ()), self.blanks)
                if e is not None]


def domain_counts(frames: Iterable[pd.DataFrame], columns: Sequence[Column]
                  ) -> dict[str, pd.Series | tuple[np.ndarray, int]]:
    """What learning ``columns``' domains reads, summed over the table's ``frames`` (chunks
    of the prepared table): a categorical column's count per category, a numeric one's
    :func:`grid_counts` and its count of missing values. Nothing is spent here."""
    counts: dict[str, pd.Series | tuple[np.ndarray, int]] = {}
    for frame in frames:
        for col in columns:
            values = frame[col.name]
            if col.kind == CATEGORICAL:
                got = values.value_counts()
                counts[col.name] = got if col.name not in counts else (
                    counts[col.name].add(got, fill_value=0).astype(np.int64))
                continue
            x = values.to_numpy(dtype=float) - _origin(col)
            grid_part, blanks = grid_counts(x, col.integer), int(np.isnan(x).sum())
            if col.name in counts:
                grid_part, blanks = grid_part + counts[col.name][0], blanks + counts[col.name][1]
            counts[col.name] = (grid_part, blanks)
    return counts


def learn_domains(data: pd.DataFrame | Iterable[pd.DataFrame], schema: Schema, ledger: Ledger,
                  rows: int, stage: str = DOMAIN,
                  progress: Callable[[int, int], None] | None = None,
                  rows_per_unit: int = 1) -> Schema:
    """The schema with everything data-derived learned under DP: domains not declared
    public, and whether numbers declared to allow blanks have any
    (:attr:`~synth.schema.Schema.to_learn`).

    ``data`` is the table prepared against ``schema``, whole or in chunks, of ``rows`` rows
    (public: n, or k·U under units). Spends the ledger's ``stage`` share, parted across
    the columns to learn (:func:`column_events`), and refuses to run without one.
    ``progress`` is called with (columns done, columns to learn). ``data`` holds at most
    ``rows_per_unit`` rows of each unit of protection.
    """
    todo = schema.to_learn
    if not todo:
        return schema
    names = [c.name for c in todo]
    if stage not in ledger.budget.shares:
        raise BudgetError(f"columns {names} have data-derived domains or blanks to learn: "
                          f"declare them public or give the budget a {stage!r} share to "
                          "learn them privately")
    eps, delta = ledger.budget.allowance(stage)
    if eps <= 0:
        raise BudgetError(f"the {stage!r} share is empty, but columns {names} need their "
                          "domains learned privately")
    unanchored = [c.name for c in todo if c.kind == DATETIME and not c.releasable
                  and c.origin is None]
    if unanchored:
        raise SchemaError(missing_origin(unanchored))
    categorical = [c.name for c in todo if c.kind == CATEGORICAL]
    if categorical and delta <= 0:  # refused before any column's domain is charged
        raise BudgetError(f"columns {categorical[:6]}: learning categories privately needs "
                          "δ > 0 in the domain share")
    counts = domain_counts([data] if isinstance(data, pd.DataFrame) else data, todo)
    plans = column_events(schema, eps, delta, rows, rows_per_unit)
    learned = {}
    for i, col in enumerate(todo, 1):
        if progress is not None:  # a cancel asked meanwhile stops before the column's charges
            progress(i - 1, len(todo))
        learned[col.name] = _learn(col, counts[col.name], plans[col.name], rows, ledger,
                                   stage)
        if progress is not None:
            progress(i, len(todo))
    return replace(schema, columns=tuple(learned.get(c.name, c) for c in schema))


def column_events(schema: Schema, epsilon: float, delta: float, rows: int,
                  rows_per_unit: int = 1) -> dict[str, Learning]:
    """What learning each column charges (:class:`Learning`), by column in schema order,
    from the domain share (ε, δ): public facts only (``rows`` is n, or k·U), so a plan
    states them before anything is read. ε goes where it is needed: a category list or a
    number's bounds take a part each, a public column's blank count alone a quarter part
    (:data:`BLANKS_SHARE`, what a number's blank count takes beside its bounds), and δ goes
    to the category lists, the only mechanisms that use it."""
    todo, k = schema.to_learn, rows_per_unit
    weight = {c.name: BLANKS_SHARE if c.releasable else 1.0 for c in todo}
    while True:  # a blank count that could not tell blanks from none is not made
        futile = [n for n in blind_counts(schema, epsilon, rows, k, weight) if n in weight]
        if not futile:
            break
        for name in futile:
            del weight[name]
    lists = [c for c in todo if c.kind == CATEGORICAL]
    plans = {}
    for c in todo:
        if c.name not in weight:
            plans[c.name] = Learning()
            continue
        eps = epsilon * weight[c.name] / sum(weight.values())
        if c.kind == CATEGORICAL:
            part = delta / len(lists)
            if part <= 0:  # nothing to learn without δ: learn_domains and the plan refuse
                plans[c.name] = Learning()
                continue
            plans[c.name] = Learning(categories=LaplaceThreshold(
                laplace_scale(eps, k), histogram_l1(1, k), keep_threshold(eps, part, k), k))
            continue
        blanks = eps if c.releasable else BLANKS_SHARE * eps if c.missing == "indicator" else 0
        plans[c.name] = Learning(
            bounds=None if c.releasable else bounds_events(
                eps - blanks, rows, c.integer, c.missing == "indicator", k,
                anchored=_year(c) is not None),
            blanks=Laplace(k / blanks, float(k)) if blanks else None)
    return plans


def blind_counts(schema: Schema, epsilon: float, rows: int, rows_per_unit: int = 1,
                 weight: dict[str, float] | None = None) -> list[str]:
    """The public columns whose blank count, alone to learn, would be blind at the domain
    share's ``epsilon``: its threshold (:data:`BLANKS_SCALES` Laplace scales) at or past
    the ``rows`` themselves, so a column with every value blank would still be read as
    having none. Such a count is not made: the column keeps its blanks as the model learns
    them. ``weight`` is each column's part (by default every column's, as planned)."""
    if weight is None:
        weight = {c.name: BLANKS_SHARE if c.releasable else 1.0 for c in schema.to_learn}
    total = sum(weight.values())
    return [c.name for c in schema.to_learn if c.releasable and c.kind != CATEGORICAL
            and c.name in weight and BLANKS_SCALES * rows_per_unit * total
            >= rows * epsilon * weight[c.name]]


def _learn(col: Column, counts: pd.Series | tuple[np.ndarray, int], plan: Learning, rows: int,
           ledger: Ledger, stage: str) -> Column:
    if plan.categories is not None:
        ledger.charge(stage, plan.categories, f"categories of {col.name!r} (rare ones fold "
                                              f"into {OTHER!r})")
        return replace(col, categories=kept_categories(
            counts, plan.categories, most_categories(rows, plan.categories)), learned=True)
    grid_part, blanks = counts
    if plan.bounds is not None:
        pick_scale, ends = plan.bounds
        if pick_scale is not None:
            ledger.charge(stage, pick_scale, f"the scale of {col.name!r}: the octave of its "
                                             "values' median magnitude")
        ledger.charge(stage, ends, f"the bounds of {col.name!r}: the upper end, then the "
                                   "lower")
        lo, hi = grid_bounds(grid_part, plan.bounds, rows, col.integer,
                             col.missing == "indicator", _year(col) or 1.0)
        lo, hi = lo + _origin(col), hi + _origin(col)
        fill = col.fill_value
        if fill is not None:
            lo, hi = min(lo, fill), max(hi, fill)
        col = replace(col, lower=lo, upper=hi)
    if plan.blanks is not None:
        ledger.charge(stage, plan.blanks, f"how many values of {col.name!r} are missing")
        col = replace(col, blanks=has_blanks(blanks, plan.blanks))
    return replace(col, learned=True)


def _year(col: Column) -> float | None:
    """A date's public scale, a year of its units (its octaves count years from its
    origin); None for a number, whose scale is learned."""
    return UNITS_PER_YEAR[col.granularity] if col.kind == DATETIME else None


def _origin(col: Column) -> float:
    """What a column's values are counted from when its bounds are sought: a datetime
    column's public origin (the grid around 0 lies where its dates do, not at 1970), 0 for
    a number. A date column whose bounds are learned must declare one."""
    if col.kind != DATETIME or col.releasable:
        return 0.0
    if col.origin is None:
        raise SchemaError(missing_origin([col.name]))
    return col.origin


def missing_origin(names: Sequence[str]) -> str:
    """The refusal of date columns whose bounds are to be learned but have no origin."""
    shown = ", ".join(repr(n) for n in list(names)[:6]) + ("…" if len(names) > 6 else "")
    which = f"date columns {shown} have" if len(names) > 1 else f"date column {shown} has"
    return (f"{which} bounds to learn privately, which are "
            "sought outward from a public origin: declare one (origin, a date near the data "
            "that is known without looking at it, such as the start of the collection), or "
            "declare the bounds public")


def has_blanks(count: int, event: Laplace) -> bool:
    """Whether a column's noisy count of missing values says it has any: the count plus
    Laplace noise clears :data:`BLANKS_SCALES` scales (a column without any passes with
    probability ½·e^−3, 2.5 %)."""
    return float(laplace(np.array([float(count)]), event.scale)[0]) > BLANKS_SCALES * event.scale
