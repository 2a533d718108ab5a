"""The release checklist: what a steward should look at before a synthetic table leaves.

Each item compares the release with the private table, so the checklist itself is for the
steward's eyes (the CLI prints it to the terminal, the app shows it beside the downloads) and
is never part of a release. A release can be correct and still useless: a learned domain that
folded most of a column into ``other``, bounds that clip many values, numbers read as text.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from synth.declarations import present_numbers
from synth.privacy.unit import PrivacyUnit, beyond_cap
from synth.release import formula_cells, formula_like
from synth.schema import (
    CATEGORICAL,
    OTHER,
    Schema,
    category_values,
    numbers_as_text,
)

LOUD = 0.05  # a share above this is a warning, not a note


@dataclass(frozen=True)
class Check:
    """One line of the checklist; ``warn`` when the steward should act before releasing."""

    item: str
    text: str
    warn: bool = False


def release_checklist(real: pd.DataFrame, synthetic: pd.DataFrame,
                      schema: Schema, unit: PrivacyUnit | None = None) -> list[Check]:
    """The checklist for ``synthetic``, released under ``schema`` (the run's public schema),
    from the private table ``real`` it was fitted on (``unit``: its privacy unit, whose cap
    on rows a person may leave rows out of the fit)."""
    capped = beyond_cap(real, unit) if unit is not None else 0
    cap = (f", {capped:,} of them left out of the fit as rows beyond {unit.max_rows} of one "
           f"{unit.column!r}" if capped else "")
    checks = [Check("rows", f"{len(synthetic):,} synthetic rows from {len(real):,} private "
                            f"rows{cap}", warn=len(synthetic) == 0)]
    for col in schema:
        if col.name not in real.columns:
            continue
        values = real[col.name]
        if col.kind == CATEGORICAL:
            checks += _folded(col.name, values, col.categories or ())
        elif col.lower is not None:
            numbers = present_numbers(col, values)
            # of all rows, blanks too: the share Compare's "most lost" shows
            outside = float(((numbers < col.lower) | (numbers > col.upper)).sum()
                            / len(values)) if len(values) else 0.0
            if outside:
                checks.append(Check(
                    "bounds", f"{col.name}: {outside:.1%} of private rows hold a value outside "
                    f"[{col.shown(col.lower)}, {col.shown(col.upper)}] and were clipped to "
                    "the bounds", warn=outside > LOUD))
            synth = pd.Series(present_numbers(col, synthetic[col.name], released=True))
            at = float(synth.isin([col.lower, col.upper]).mean()) if len(synth) else 0.0
            # a pile at a bound beyond what the private values hold there (a month's 1 and 12
            # hold a sixth of a uniform table's rows: that is no pile)
            held = float(np.isin(numbers, [col.lower, col.upper]).mean()) if numbers.size else 0.0
            if at > LOUD and at > 2 * held:
                checks.append(Check("bounds", f"{col.name}: {at:.1%} of synthetic values sit "
                                              f"exactly at a bound", warn=False))
            bounds_learned = col.learned and not col.public  # (not just its blank count)
            beyond = float(((synth < numbers.min()) | (synth > numbers.max())).mean()) if (
                bounds_learned and numbers.size and len(synth)) else 0.0
            if beyond > LOUD:  # a learned end far from the data: an overshoot
                checks.append(Check(
                    "bounds", f"{col.name}: {beyond:.1%} of synthetic values lie beyond every "
                    f"private value; its privately learned bounds [{col.shown(col.lower)}, "
                    f"{col.shown(col.upper)}] reach far past the data: declare public bounds "
                    "or give the domain share more", warn=True))
        example = numbers_as_text(values.dropna().unique()) if col.kind == CATEGORICAL else None
        if example is not None:
            checks.append(Check("numbers as text", f"{col.name}: values such as {example!r} "
                                "are numbers stored as text, synthesized as categories; read "
                                "them as numbers and declare the column numeric", warn=True))
    return checks + _formulas(synthetic)


def _formulas(synthetic: pd.DataFrame) -> list[Check]:
    """Columns whose header or text cells the release's CSV writes with a leading ' (what a
    spreadsheet would run as a formula): the steward should know the file differs there."""
    found = formula_cells(synthetic)
    if not found:
        return []
    named = []
    for name, cells in found.items():
        parts = (["header"] * formula_like(name)
                 + [f"{cells:,} cell{'s' * (cells > 1)}"] * bool(cells))
        named.append(f"{name!r} ({', '.join(parts)})")
    return [Check("formula-like text",
                  f"{'; '.join(named)}: text beginning with =, +, -, @, a tab or a CR is "
                  "written to the CSV with a ' in front, so a spreadsheet shows it instead of "
                  "running it as a formula (numbers are left as they are)")]


def _folded(name: str, values: pd.Series, categories: tuple[str, ...]) -> list[Check]:
    if OTHER not in categories:
        return []
    text = category_values(values)
    lost = text[~text.isin(set(categories))]
    if lost.empty:
        return []
    share = len(lost) / len(text)
    top = ", ".join(f"{k!r} ({v / len(text):.1%})" for k, v in lost.value_counts()[:5].items())
    more = lost.nunique() - min(5, lost.nunique())
    return [Check("folded into other",
                  f"{name}: {share:.1%} of private rows hold categories the release folds into "
                  f"{OTHER!r}: {top}{f' and {more} more' if more else ''}; declare the "
                  "column's categories public, or give the domain share more budget",
                  warn=share > LOUD)]
