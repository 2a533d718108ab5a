"""Declaring a schema: proposals are refused until confirmed, public domains are shown as
published, warned about when they are the table's own values, and rounded on request."""

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from synth.checklist import release_checklist
from synth.declarations import nice_bounds, round_bounds, warnings
from synth.errors import SchemaError
from synth.methods import make
from synth.privacy.budget import Budget
from synth.schema import OTHER, Column, Schema, as_numbers, infer_schema, numbers_as_text

finite = st.floats(-1e9, 1e9, allow_nan=False, allow_infinity=False)


@given(finite, finite)
def test_nice_bounds_hold_the_values_strictly_and_are_round(a, b):
    lo, hi = sorted((a, b))
    nice_lo, nice_hi = nice_bounds(lo, hi)
    assert nice_lo < lo or nice_lo == lo == 0
    assert nice_hi > hi
    for bound in (nice_lo, nice_hi):  # one or two significant digits: 1, 2 or 5 × 10^k steps
        if bound:
            digits = f"{abs(bound):.12e}".split("e")[0].rstrip("0").replace(".", "")
            assert len(digits) <= 2, bound
    assert nice_hi - nice_lo <= max(3 * max(abs(lo), abs(hi), hi - lo), 2)


def test_nice_bounds_of_the_issue_examples():
    assert nice_bounds(17, 90) == (10, 100)
    assert nice_bounds(3, 987_654) == (0, 1_000_000)  # the audit's salary is not published


def test_a_proposal_is_refused_until_confirmed():
    table = pd.DataFrame({"age": np.arange(100) % 60 + 20, "g": list("ab") * 50})
    schema = infer_schema(table)
    assert schema.proposed == ["age", "g"]
    model = make("independent")
    budget = Budget(1.0, 1e-5, dict(model.stages))
    with pytest.raises(SchemaError, match=r"columns \['age', 'g'\] are proposals"):
        model.fit(table, schema, budget)
    # confirmed, it runs (age may have blanks, as every inferred number: the budget needs a
    # domain share to count them)
    confirmed = schema.declare_public().confirm()
    model.fit(table, confirmed, Budget(1.0, 1e-5, model.default_shares(confirmed)))
    assert Schema.from_dict(schema.to_dict()).proposed == ["age", "g"]  # kept in files


def test_warnings_name_public_domains_that_are_the_tables_own_values():
    table = pd.DataFrame({"salary": [3, 50, 987_654], "g": ["a", "b", "b"]})
    exact = Schema((Column("salary", "numeric", 3, 987_654, public=True),
                    Column("g", "categorical", categories=("a", "b"), public=True)))
    found = warnings(exact, table)
    assert any("'salary': lower 3 is the table's minimum and upper 987654 is the table's "
               "maximum" in w and "[0, 1e+06]" in w for w in found)
    assert any("'g': the public categories are exactly the 2 values in the table, 2 of them "
               "held by fewer than 5 rows" in w for w in found)
    rounded = round_bounds(exact, table, ["salary"])
    assert (rounded["salary"].lower, rounded["salary"].upper) == (0, 1_000_000)
    assert round_bounds(rounded, table, ["salary"]) == rounded  # rounding twice: no change
    assert any("'salary': [0, 1e+06] is the table's own range rounded" in w
               for w in warnings(rounded, table))  # still read off the table: said so
    codebook = rounded.replace_column(Column("salary", "numeric", 0, 2e6, public=True))
    assert not any("salary" in w for w in warnings(codebook, table))
    codebook = exact.replace_column(Column("g", "categorical", categories=("a", "b", "c"),
                                           public=True))
    assert not any("'g'" in w for w in warnings(codebook, table))


@pytest.mark.parametrize("values, example", [
    (["3,750", "12,000", "950", None], "3,750"),
    (["$1,200", "$30", "$7"], "$1,200"),
    (["12", "13", "14"], None),  # plain numbers are read as numbers already
    (["red", "3,750", "blue"], None),  # mostly words: a category
])
def test_numbers_stored_as_text_are_detected_and_read(values, example):
    series = pd.Series(values, dtype=object)
    assert numbers_as_text(series.dropna().unique()) == example
    if example is not None:
        numbers = as_numbers(series)
        assert numbers.notna().sum() == series.notna().sum()
        assert math.isclose(numbers.iloc[0], float(example.strip("$").replace(",", "")))


def test_the_checklist_reports_folded_categories_clipping_and_rows():
    real = pd.DataFrame({"job": ["a"] * 40 + ["b"] * 50 + ["c"] * 10,
                         "age": [30] * 90 + [120] * 10})
    released = Schema((Column("job", "categorical", categories=("a", OTHER), learned=True),
                       Column("age", "numeric", 0, 100, integer=True, learned=True)))
    synthetic = pd.DataFrame({"job": ["a"] * 50 + [OTHER] * 50, "age": [30] * 100})
    checks = {c.item: c for c in release_checklist(real, synthetic, released)}
    assert checks["rows"].text == "100 synthetic rows from 100 private rows"
    folded = checks["folded into other"]
    assert folded.warn and "job: 60.0% of private rows" in folded.text
    assert "'b' (50.0%), 'c' (10.0%)" in folded.text
    assert checks["bounds"].warn and (
        "age: 10.0% of private rows hold a value outside [0, 100]" in checks["bounds"].text)


def test_the_checklist_and_compare_count_the_same_loss_on_a_column_with_blanks():
    """The walk saw the checklist and Compare's "most lost" a point apart on a column with
    4 % blanks: one counted present values, the other rows. Both count rows now."""
    from synth.evaluation import outside

    real = pd.DataFrame({"income": [None] * 20 + [50.0] * 70 + [500.0] * 10})
    released = Schema((Column("income", "numeric", 0, 100, learned=True,
                              missing="indicator"),))
    check = next(c for c in release_checklist(real, real.fillna(0), released)
                 if c.item == "bounds")
    assert f"{outside(real, released)['income']:.1%} of private rows" in check.text
    assert "10.0% of private rows" in check.text


def test_the_checklist_warns_when_learned_bounds_overshoot_the_data():
    """A learned interval far past the data (a scale or an end the mechanism put there)
    releases values no record is near: the steward is told, by share, not by value."""
    real = pd.DataFrame({"age": np.arange(20, 80)})
    learned = Schema((Column("age", "numeric", -215, 3_234_251, integer=True, learned=True),))
    public = Schema((Column("age", "numeric", -215, 3_234_251, integer=True, public=True,
                            learned=True),))  # public bounds, a blank count learned
    synthetic = pd.DataFrame({"age": [30] * 50 + [93_472] * 10})
    warned = [c for c in release_checklist(real, synthetic, learned) if "beyond" in c.text]
    assert len(warned) == 1 and warned[0].warn and "16.7% of synthetic values" in warned[0].text
    assert "79" not in warned[0].text and "20" not in warned[0].text.split("[")[0]
    assert not any("beyond" in c.text for c in release_checklist(real, synthetic, public))
    close = pd.DataFrame({"age": [30] * 60})
    assert not any("beyond" in c.text for c in release_checklist(real, close, learned))
