"""SDMetrics' Quality Report and its Diagnostic data-validity figure, by their definitions.

SDMetrics itself needs pandas < 3, so these are our own implementations of its definitions
(version 0.32), checked against SDMetrics run side by side in a separate environment
(``benchmarks/sdmetrics_agreement.py``). The tables are read as SDMetrics reads them: numbers
and dates as numbers (a date in any linear unit: every figure here is unchanged by one), a
blank as missing, in a category too.

* **Column shapes**, per column: 1 − the Kolmogorov–Smirnov statistic of a number's present
  values (KSComplement), 1 − the total variation distance of a category's present values'
  frequencies (TVComplement).
* **Column pair trends**, per pair: of two numbers, 1 − |ρ_real − ρ_synthetic|/2 of Pearson's
  correlation over the rows where both are present (CorrelationSimilarity), counted only when
  |ρ_real| > 0.5; of any other pair, 1 − the total variation distance of the two tables'
  normalised contingency tables (ContingencySimilarity), counted only when the real table's
  Cramér's V exceeds 0.3. In a mixed pair the number is cut into 10 equal bins over *each
  table's own* range (so a release's bins are not the real table's), a blank and the largest
  value sharing the bin past the last edge; a blank category is a label of its own. A pair
  with a constant column in either table, or too few labels for Cramér's V, is left out.
* **Overall**, the mean of the two properties (each the mean of its counted scores).
* **Data validity** (the Diagnostic Report's property): per number or date, the share of
  synthetic values within the real minimum and maximum (BoundaryAdherence; blanks left out
  where the real column has any, else counted as outside); per category, the share of
  synthetic values among the real ones (CategoryAdherence; a blank is valid where the real
  column has one). Its score is the columns' mean.

Everything here reads the real table: the figures are for the steward's eyes.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from scipy.stats import pearsonr
from scipy.stats.contingency import association

from synth.declarations import present_numbers
from synth.errors import SchemaError
from synth.schema import (
    CATEGORICAL,
    MISSING,
    Schema,
    category_values,
    check_columns,
    prepare,
)

BINS = 10  # a number's bins in a mixed pair (numpy's default for histogram_bin_edges)
CORRELATION_THRESHOLD = 0.5  # |ρ_real| a pair of numbers must exceed to count
ASSOCIATION_THRESHOLD = 0.3  # Cramér's V of the real pair that any other pair must exceed



def comparable(schema: Schema, *tables: pd.DataFrame, real: pd.DataFrame | None = None
               ) -> Schema:
    """``schema`` with every category that occurs in ``tables`` but not in the schema added,
    so a measurement never fails on them: mass on an unknown category counts as distance.
    Given the ``real`` table, a number's or date's bounds widen to cover its values, so
    they are binned where they lie, never clipped into a release's learned range (a tail
    the release lost shows as lost)."""
    for table in tables:
        check_columns(table, schema)
    columns = []
    for col in schema:
        if col.kind == CATEGORICAL and col.categories is not None:
            seen = set().union(*(category_values(t[col.name]) for t in tables))
            extra = sorted(seen - set(col.categories))
            col = replace(col, categories=(*col.categories, *extra))
        elif real is not None and col.lower is not None and col.name in real.columns:
            values = present_numbers(col, real[col.name])
            if values.size:
                col = replace(col, lower=min(col.lower, float(values.min())),
                              upper=max(col.upper, float(values.max())))
        columns.append(col)
    return replace(schema, columns=tuple(columns))

@dataclass(frozen=True)
class Quality:
    """SDMetrics' Quality Report (see the module): the properties' scores, their mean, and
    the per-column and per-pair scores (NaN for a pair that does not count)."""

    column_shapes: float
    column_pair_trends: float
    overall: float
    shapes: pd.Series  # column → score
    trends: pd.DataFrame  # symmetric matrix of counted pair scores, NaN elsewhere
    validity: float = float("nan")  # the Diagnostic Report's data validity
    adherence: pd.Series | None = None  # column → boundary or category adherence


def ks_complement(real: pd.Series, synth: pd.Series) -> float:
    """1 − sup |F_real − F_synthetic| over the present values (NaN if either has none)."""
    a, b = (np.sort(v.dropna().to_numpy(dtype=float)) for v in (real, synth))
    if len(a) == 0 or len(b) == 0:
        return float("nan")
    points = np.concatenate([a, b])
    gap = np.abs(np.searchsorted(a, points, side="right") / len(a)
                 - np.searchsorted(b, points, side="right") / len(b))
    return float(1 - gap.max())


def tv_complement(real: pd.Series, synth: pd.Series) -> float:
    """1 − ½·Σ|p_real − p_synthetic| over the present labels (NaN if either has none)."""
    a, b = real.dropna(), synth.dropna()
    if len(a) == 0 or len(b) == 0:
        return float("nan")
    p, q = a.value_counts(normalize=True), b.value_counts(normalize=True)
    return float(1 - 0.5 * p.sub(q, fill_value=0).abs().sum())


def correlation_similarity(real: pd.DataFrame, synth: pd.DataFrame) -> float:
    """1 − |ρ_real − ρ_synthetic|/2 where |ρ_real| > 0.5, else NaN (and NaN for a constant
    column in either table, or a correlation that is undefined)."""
    if (real.nunique() < 2).any() or (synth.nunique() < 2).any():
        return float("nan")
    rho = []
    for frame in (real, synth):
        both = frame.dropna().to_numpy(dtype=float)
        rho.append(float(pearsonr(both[:, 0], both[:, 1])[0]) if len(both) > 1 else np.nan)
    if not abs(rho[0]) > CORRELATION_THRESHOLD or np.isnan(rho[1]):
        return float("nan")
    return float(1 - abs(rho[0] - rho[1]) / 2)


def contingency_similarity(real: pd.DataFrame, synth: pd.DataFrame) -> float:
    """1 − ½·Σ|p_real − p_synthetic| over the cells of two labels' contingency tables (a
    blank a label of its own) where the real table's Cramér's V exceeds 0.3, else NaN."""
    counts = real.groupby(list(real.columns), dropna=False).size()
    table = counts.unstack(fill_value=0)
    if table.to_numpy().sum() == 0 or min(table.shape) < 2:
        return float("nan")
    if not association(table.to_numpy(), method="cramer") > ASSOCIATION_THRESHOLD:
        return float("nan")
    p = counts / len(real)
    q = synth.groupby(list(synth.columns), dropna=False).size() / len(synth)
    return float(1 - 0.5 * p.sub(q, fill_value=0).abs().sum())


def binned(values: pd.Series) -> pd.Series:
    """A number as 10 equal bins over its own present range, numbered as numpy.digitize
    numbers them: 1 … 10 inside, 11 for the largest value and for a blank."""
    present = values.dropna().to_numpy(dtype=float)
    if len(present) == 0:
        return pd.Series(np.full(len(values), BINS + 1), index=values.index)
    edges = np.histogram_bin_edges(present, BINS)
    return pd.Series(np.digitize(values.to_numpy(dtype=float), edges), index=values.index)


def _as_read(table: pd.DataFrame, schema: Schema, released: bool) -> pd.DataFrame:
    """``table`` as SDMetrics reads it: numbers and dates as floats, categories as text, a
    blank as missing anywhere."""
    loose = replace(schema, columns=tuple(
        c if c.kind == CATEGORICAL else replace(c, lower=None, upper=None, public=False,
                                                learned=False, missing="indicator",
                                                fill_value=None)
        for c in schema))
    out = prepare(table, loose, released=released)
    for col in schema:
        if col.kind == CATEGORICAL:
            out[col.name] = out[col.name].where(out[col.name] != MISSING)
        else:
            out[col.name] = out[col.name].astype(float)
    return out


def quality(real: pd.DataFrame, synth: pd.DataFrame, schema: Schema) -> Quality:
    """:class:`Quality` of ``synth`` (a release) against ``real`` over ``schema``'s columns
    (the user's: a number's blanks are its missing values, not a column of their own)."""
    schema = comparable(schema, real, synth)
    if len(synth) == 0:
        raise SchemaError("the synthetic table has no rows")
    real, synth = _as_read(real, schema, False), _as_read(synth, schema, True)
    names = schema.names
    numeric = {c.name: c.kind != CATEGORICAL for c in schema}
    shapes = pd.Series([ks_complement(real[n], synth[n]) if numeric[n] else
                        tv_complement(real[n], synth[n]) for n in names], index=names,
                       dtype=float)
    bins = {n: (binned(real[n]), binned(synth[n])) for n in names if numeric[n]}
    trends = np.full((len(names), len(names)), np.nan)
    for i, j in itertools.combinations(range(len(names)), 2):
        a, b = names[i], names[j]
        if numeric[a] and numeric[b]:
            score = correlation_similarity(real[[a, b]], synth[[a, b]])
        else:  # a number in a mixed pair by its bins; two categories as they are
            r = pd.DataFrame({0: bins[a][0] if numeric[a] else real[a],
                              1: bins[b][0] if numeric[b] else real[b]})
            s = pd.DataFrame({0: bins[a][1] if numeric[a] else synth[a],
                              1: bins[b][1] if numeric[b] else synth[b]})
            score = contingency_similarity(r, s)
        trends[i, j] = trends[j, i] = score
    shape = float(shapes.mean())  # pandas' mean leaves a NaN column out
    pairs = trends[np.triu_indices(len(names), 1)]
    trend = float(np.nanmean(pairs)) if np.isfinite(pairs).any() else float("nan")
    overall = float(np.nanmean([shape, trend])) if np.isfinite([shape, trend]).any() \
        else float("nan")
    adherence = pd.Series([boundary_adherence(real[n], synth[n]) if numeric[n] else
                           category_adherence(real[n], synth[n]) for n in names],
                          index=names, dtype=float)
    return Quality(shape, trend, overall, shapes,
                   pd.DataFrame(trends, index=names, columns=names),
                   float(adherence.mean()), adherence)


def boundary_adherence(real: pd.Series, synth: pd.Series) -> float:
    """The share of synthetic values within the real minimum and maximum (blanks left out
    where the real column has any, else counted as outside)."""
    if real.isna().any():
        synth = synth.dropna()
    if len(synth) == 0:
        return float("nan")
    return float(synth.between(real.min(), real.max()).mean())


def category_adherence(real: pd.Series, synth: pd.Series) -> float:
    """The share of synthetic values among the real ones (a blank valid where the real
    column has one)."""
    valid = synth.isin(real.dropna().unique())
    if real.isna().any():
        valid |= synth.isna()
    return float(valid.mean()) if len(synth) else float("nan")
