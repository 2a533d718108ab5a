"""Learning column domains under DP, for columns whose domain the user has not declared public.

Both are histograms, and replacing one record moves it from one cell to another: L1
sensitivity 2 (:func:`~synth.privacy.events.histogram_l1`), so the Laplace scale is b = 2/ε;
a unit of up to k rows moves 2k, so b = 2k/ε (``rows_per_unit`` below).

* Categories: **thresholded noisy counts**. Each category present in the data gets its count
  plus Laplace(b); it is kept when that clears τ = 1 + b·ln(1/(2δ)). A category only one table
  of a neighbouring pair holds (count 1) leaks with probability ½e^{−(τ−1)/b} = δ, so this is
  (ε, δ)-DP (:class:`~synth.privacy.events.LaplaceThreshold`, which derives the δ of a
  unit's up to k keys; the threshold below meets it). ``other`` is always part of
  the learned domain, so its presence says nothing about rare categories; they fold into it.
* Numeric bounds: a **noisy log-scale histogram**. Counts over a fixed grid of signed powers
  of two get Laplace(b) noise; the bounds are the edges of the outermost bins that clear a
  threshold an empty bin is unlikely to reach. Extreme DP quantiles would be tighter in
  theory, but at the small ε a domain share gets they are close to uniform over the grid.

Columns share the domain stage's (ε, δ) equally, composed by basic composition; each learned
column is one ledger entry.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace

import numpy as np
import pandas as pd

from synth.errors import BudgetError
from synth.marginals import marginal
from synth.privacy.budget import Ledger
from synth.privacy.events import Laplace, LaplaceThreshold, histogram_l1
from synth.privacy.mechanisms import laplace
from synth.schema import CATEGORICAL, OTHER, Column, Schema

DOMAIN = "domain"
BETA = 0.01  # chance that some empty grid bin is mistaken for data

# edges 0, ±2^-10 … ±2^62: a data-independent grid for learning numeric bounds
_POW = 2.0 ** np.arange(-10, 63)
GRID = np.concatenate([-_POW[::-1], [0.0], _POW])


def laplace_scale(epsilon: float, rows_per_unit: int = 1) -> float:
    """b = Δ₁/ε for one histogram under replacement (Δ₁ = 2k)."""
    return histogram_l1(1, rows_per_unit) / epsilon


def keep_threshold(epsilon: float, delta: float, rows_per_unit: int = 1) -> float:
    """The noisy count a category must clear to be released: τ = 1 + b·ln(1/(2δ)) for a
    record; for a unit of up to k rows the larger of k + b·ln(1/(2δ)) and 1 + b·ln(k/(2δ)),
    which bring each vertex of :class:`~synth.privacy.events.LaplaceThreshold`'s δ to δ."""
    k, b = rows_per_unit, laplace_scale(epsilon, rows_per_unit)
    return max(k + b * math.log(1 / (2 * delta)), 1 + b * math.log(k / (2 * delta)))


def noisy_categories(values: pd.Series, event: LaplaceThreshold) -> tuple[str, ...]:
    """Categories whose Laplace-noised count clears the event's threshold, then ``other``."""
    return kept_categories(values.value_counts(), event)


def kept_categories(counts: pd.Series, event: LaplaceThreshold) -> tuple[str, ...]:
    """:func:`noisy_categories` from each category's count (the index)."""
    noisy = laplace(counts.to_numpy(dtype=float), event.scale)
    kept = sorted(str(k) for k in counts.index[noisy > event.threshold])
    return (*[k for k in kept if k != OTHER], OTHER)


def bounds_threshold(epsilon: float, bins: int = len(GRID) - 1, beta: float = BETA,
                     rows_per_unit: int = 1) -> float:
    """τ = b·ln(bins/(2β)): an empty bin's Laplace(b) count clears it with probability
    β/bins, so all spurious bins together appear with probability ≤ β."""
    return laplace_scale(epsilon, rows_per_unit) * math.log(bins / (2 * beta))


def grid_counts(values: np.ndarray) -> np.ndarray:
    """How many ``values`` fall in each bin of the power-of-two grid (NaN in none)."""
    x = np.asarray(values, dtype=float)
    x = np.clip(x[~np.isnan(x)], GRID[0], np.nextafter(GRID[-1], 0))
    bins = np.searchsorted(GRID, x, side="right") - 1
    return marginal(bins[:, None], [len(GRID) - 1])


def dp_bounds(values: np.ndarray, epsilon: float, column: str = "", rows_per_unit: int = 1
              ) -> tuple[float, float]:
    """ε-DP bounds from a Laplace histogram over the signed power-of-two grid.

    The grid is fixed in advance and each record lands in one bin, so the noisy histogram
    (scale 2k/ε, L1 sensitivity 2k for units of up to k rows) is ε-DP; the bounds are the
    outer edges of the outermost bins whose noisy count clears :func:`bounds_threshold`.
    They are loose by at most a factor of two, and values beyond them are clipped.
    """
    return grid_bounds(grid_counts(values), epsilon, column, rows_per_unit)


def grid_bounds(counts: np.ndarray, epsilon: float, column: str = "", rows_per_unit: int = 1
                ) -> tuple[float, float]:
    """:func:`dp_bounds` from the grid's counts (:func:`grid_counts`)."""
    noisy = laplace(counts.astype(float), laplace_scale(epsilon, rows_per_unit))
    tau = bounds_threshold(epsilon, rows_per_unit=rows_per_unit)
    present = np.flatnonzero(noisy > tau)
    if present.size == 0:
        raise BudgetError(
            f"column {column!r}: too few rows for the budget to learn its bounds privately "
            f"(a bin needs about {tau:.0f} rows at ε={epsilon:.3g}); "
            "declare its bounds public or give the domain share more budget")
    return float(GRID[present[0]]), float(GRID[present[-1] + 1])


def domain_counts(frames: Iterable[pd.DataFrame], columns: Sequence[Column]
                  ) -> dict[str, pd.Series | np.ndarray]:
    """What learning ``columns``' domains reads, summed over the table's ``frames`` (chunks
    of the prepared table): a categorical column's count per category, a numeric one's
    :func:`grid_counts`. Nothing is spent here."""
    counts: dict[str, pd.Series | np.ndarray] = {}
    for frame in frames:
        for col in columns:
            values = frame[col.name]
            got = values.value_counts() if col.kind == CATEGORICAL else grid_counts(
                values.to_numpy(dtype=float))
            counts[col.name] = got if col.name not in counts else (
                counts[col.name].add(got, fill_value=0).astype(np.int64)
                if col.kind == CATEGORICAL else counts[col.name] + got)
    return counts


def learn_domains(data: pd.DataFrame | Iterable[pd.DataFrame], schema: Schema, ledger: Ledger,
                  stage: str = DOMAIN, progress: Callable[[int, int], None] | None = None,
                  rows_per_unit: int = 1) -> Schema:
    """The schema with every data-derived domain replaced by one learned under DP.

    ``data`` is the table prepared against ``schema``, whole or in chunks. Spends the
    ledger's ``stage`` share, split equally across the columns to learn, and refuses to run
    without one. ``progress`` is called with (columns done, columns to learn). ``data`` holds
    at most ``rows_per_unit`` rows of each unit of protection.
    """
    todo = [c for c in schema if not c.releasable]
    if not todo:
        return schema
    names = [c.name for c in todo]
    if stage not in ledger.budget.shares:
        raise BudgetError(f"columns {names} have data-derived domains: declare them public or "
                          f"give the budget a {stage!r} share to learn them privately")
    eps, delta = ledger.budget.allowance(stage)
    if eps <= 0:
        raise BudgetError(f"the {stage!r} share is empty, but columns {names} need their "
                          "domains learned privately")
    categorical = [c.name for c in todo if c.kind == CATEGORICAL]
    if categorical and delta <= 0:  # refused before any column's domain is charged
        raise BudgetError(f"columns {categorical[:6]}: learning categories privately needs "
                          "δ > 0 in the domain share")
    counts = domain_counts([data] if isinstance(data, pd.DataFrame) else data, todo)
    events = domain_events(schema, eps, delta, rows_per_unit)
    learned = {}
    for i, (col, event) in enumerate(zip(todo, events, strict=True), 1):
        learned[col.name] = _learn(col, counts[col.name], event, eps / len(todo),
                                   rows_per_unit, ledger, stage)
        if progress is not None:
            progress(i, len(todo))
    return replace(schema, columns=tuple(learned.get(c.name, c) for c in schema))


def domain_events(schema: Schema, epsilon: float, delta: float, rows_per_unit: int = 1
                  ) -> list[Laplace | LaplaceThreshold]:
    """The event learning each data-derived domain charges, in schema order, from the
    domain share (ε, δ) split equally over them: public facts only, so a plan states them
    before anything is read."""
    todo = [c for c in schema if not c.releasable]
    eps, delta, k = epsilon / max(len(todo), 1), delta / max(len(todo), 1), rows_per_unit
    return [LaplaceThreshold(laplace_scale(eps, k), histogram_l1(1, k),
                             keep_threshold(eps, delta, k), k) if c.kind == CATEGORICAL
            else Laplace(laplace_scale(eps, k), histogram_l1(1, k)) for c in todo]


def _learn(col: Column, counts: pd.Series | np.ndarray, event: Laplace | LaplaceThreshold,
           eps: float, k: int, ledger: Ledger, stage: str) -> Column:
    if isinstance(event, LaplaceThreshold):
        ledger.charge(stage, event, f"categories of {col.name!r} (rare ones fold into "
                                    f"{OTHER!r})")
        return replace(col, categories=kept_categories(counts, event), learned=True)
    ledger.charge(stage, event, f"bounds of {col.name!r} from a noisy histogram over "
                                f"{len(GRID) - 1} power-of-two bins")
    lo, hi = grid_bounds(counts, eps, col.name, k)
    if col.integer:
        lo, hi = math.floor(lo), math.ceil(hi)
    fill = col.fill_value
    if fill is not None:
        lo, hi = min(lo, fill), max(hi, fill)
    return replace(col, lower=lo, upper=hi, learned=True)
