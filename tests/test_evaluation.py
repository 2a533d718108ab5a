"""The measuring protocol against DESIGN.md's reference figures."""

import numpy as np
import pandas as pd
import pytest

from synth.evaluation import (
    chance,
    evaluate,
    majority_rate,
    marginal_tvd,
    tree_utility,
)
from synth.protocol import protocol_split
from synth.quality import quality
from synth.schema import CATEGORICAL, NUMERIC, Column, Schema


def test_split_sizes_follow_the_protocol(adult_parts):
    train, val, test = adult_parts
    n = 32561
    assert (len(train), len(val), len(test)) == (4 * n // 6, 5 * n // 6 - 4 * n // 6,
                                                 n - 5 * n // 6)


def test_reference_figures(adult_parts, adult_public):
    train, val, test = adult_parts
    assert majority_rate(test, "income") == pytest.approx(0.7575, abs=5e-4)
    assert tree_utility(train, test, adult_public)["accuracy"] == pytest.approx(0.851, abs=2e-3)
    # DESIGN.md: a 5.4k real sample vs train has 2-way TVD 0.028
    assert marginal_tvd(train, val, adult_public).tvd2 == pytest.approx(0.028, abs=2e-3)


def test_tvd_is_zero_on_itself_and_one_on_disjoint_supports():
    a = pd.DataFrame({"c": ["x"] * 10, "d": ["u", "v"] * 5})
    b = pd.DataFrame({"c": ["y"] * 10, "d": ["u", "v"] * 5})
    from synth.schema import Column, Schema

    schema = Schema((Column("c", "categorical", categories=("x", "y"), public=True),
                     Column("d", "categorical", categories=("u", "v"), public=True)))
    assert marginal_tvd(a, a, schema).tvd2 == 0
    fid = marginal_tvd(a, b, schema)
    assert fid.per_column.to_dict() == {"c": 1.0, "d": 0.0}
    assert fid.tvd2 == 1.0 and np.isnan(fid.per_pair.loc["c", "c"])


def test_unknown_synthetic_categories_count_as_distance(adult_parts, adult_public):
    train, _, test = adult_parts
    synth = train.head(2000).copy()
    synth["race"] = "other"
    result = evaluate(test, synth, adult_public, real_train=train)
    assert result["tvd1"] > marginal_tvd(train, train.head(2000), adult_public).tvd1
    assert result["real_accuracy"] == pytest.approx(0.851, abs=2e-3)  # unaffected by synth


def test_evaluate_on_the_sample(sample):
    table, schema = sample
    train, _, test = protocol_split(table)
    result = evaluate(test, train, schema, real_train=train)
    assert result["tvd1"] == 0 and result["tvd2"] == 0
    assert result["accuracy"] == result["real_accuracy"] > result["majority"] + 0.05


def quality_tables():
    schema = Schema((Column("x", NUMERIC, 0, 10, public=True, integer=True),
                     Column("y", NUMERIC, 0, 10, public=True, integer=True),
                     Column("c", CATEGORICAL, categories=("a", "b"), public=True)))
    real = pd.DataFrame({"x": [1, 2, 3, 4], "y": [1, 2, 3, 4], "c": ["a", "a", "b", "b"]})
    synth = pd.DataFrame({"x": [1, 1, 2, 2], "y": [2, 2, 1, 1], "c": ["a", "a", "a", "b"]})
    return real, synth, schema


def test_quality_matches_sdmetrics_definitions_computed_by_hand():
    """SDMetrics 0.32's Quality Report, figures worked by hand:
    shapes: x and y, KS = sup|F_real − F_synth| = 0.5 at 2 (0.5 against 1.0), so 0.5 each;
    c, TVD of (½, ½) against (¾, ¼) = 0.25, so 0.75; mean 7/12.
    trends: x–y, ρ_real 1 (over 0.5: counted) against −1, so 1 − 2/2 = 0; x–c, each table's
    x in 10 bins over its own range, numbered as numpy.digitize does (real 1, 2, 3, 4 → 1,
    4, 7, 11; synthetic 1, 2 → 1, 11): real (1,a) (4,a) (7,b) (11,b) a quarter each,
    synthetic (1,a) ½, (11,a) ¼, (11,b) ¼, TVD ½, so 0.5 (Cramér's V of the real pair 1,
    over 0.3: counted); y–c, synthetic y 2, 2, 1, 1 → (11,a) ½, (1,a) ¼, (1,b) ¼, TVD ¾, so
    0.25; mean 0.25. Overall (7/12 + 1/4)/2 = 5/12. Every synthetic value lies within the
    real range and categories: data validity 1."""
    real, synth, schema = quality_tables()
    q = quality(real, synth, schema)
    assert q.shapes.to_dict() == pytest.approx({"x": 0.5, "y": 0.5, "c": 0.75})
    assert q.trends.loc["x", "y"] == pytest.approx(0.0)
    assert q.trends.loc["x", "c"] == pytest.approx(0.5)
    assert q.trends.loc["c", "y"] == pytest.approx(0.25)
    assert q.column_shapes == pytest.approx(7 / 12)
    assert q.column_pair_trends == pytest.approx(1 / 4)
    assert q.overall == pytest.approx(5 / 12)
    assert q.validity == 1.0
    same = quality(real, real, schema)
    assert same.overall == pytest.approx(1.0)


def test_pairs_without_a_real_trend_do_not_count():
    """SDMetrics scores a pair of numbers only where |ρ_real| > 0.5 and any other pair only
    where the real Cramér's V > 0.3: the flights table's overall read 0.20–0.23 higher when
    every pair counted."""
    schema = Schema((Column("x", NUMERIC, 0, 10, public=True),
                     Column("y", NUMERIC, 0, 10, public=True),
                     Column("c", CATEGORICAL, categories=("a", "b"), public=True)))
    real = pd.DataFrame({"x": [1, 2, 3, 4] * 5, "y": [2, 4, 1, 3] * 5,  # ρ = 0.2
                         "c": ["a"] * 10 + ["b"] * 10})
    q = quality(real, real.sample(frac=1, random_state=0), schema)
    assert np.isnan(q.trends.loc["x", "y"])  # |ρ_real| 0.2: left out
    assert np.isnan(q.trends.loc["x", "c"])  # x and c independent: V = 0
    assert np.isnan(q.column_pair_trends) and q.overall == q.column_shapes


def test_quality_counts_missing_values_as_sdmetrics_does():
    """KSComplement ignores missing values; a contingency table counts them as a label (in
    the bin past the last edge, with the largest value); boundary adherence counts a blank
    as outside where the real column has none."""
    real, _, schema = quality_tables()
    schema = schema.replace_column(Column("x", NUMERIC, 0, 10, public=True, integer=True,
                                          missing="indicator"))
    blanks = real.assign(x=[1, 2, None, None])
    q = quality(real, blanks, schema)
    # present x: [1, 2] against [1, 2, 3, 4]: KS 0.5
    assert q.shapes["x"] == pytest.approx(0.5)
    # x–c: real (1,a) (4,a) (7,b) (11,b); blanked x over [1, 2]: (1,a) (11,a) (11,b) ×2
    assert q.trends.loc["x", "c"] == pytest.approx(0.5)
    assert q.adherence["x"] == 0.5 and q.adherence["c"] == 1.0


def test_learned_bounds_that_clip_show_in_the_shapes():
    """Real values beyond a run's bounds are measured as they are, not clipped first."""
    real, _, schema = quality_tables()
    narrow = schema.replace_column(Column("x", NUMERIC, 1, 2, learned=True, integer=True))
    assert quality(real, real.assign(x=[1, 2, 2, 2]), narrow).shapes["x"] == pytest.approx(
        0.5)


def test_chance_lines_of_an_imbalanced_target():
    """Always answering the majority class of (a, a, a, b): accuracy ¾, balanced accuracy
    ½ = 1/K, macro F1 (F1 of a = 2·¾·1/(¾ + 1) = 6/7, of b 0) / 2 = 3/7."""
    test = pd.DataFrame({"t": ["a", "a", "a", "b"]})
    assert chance(test, "t") == pytest.approx(
        {"majority": 0.75, "chance_balanced_accuracy": 0.5, "chance_macro_f1": 3 / 7})


def test_an_indicator_is_compared_only_where_either_table_has_blanks():
    """Compare's heatmap showed "(missing)" rows for numbers that had no blanks at all."""
    real, synth, schema = quality_tables()
    schema = schema.replace_column(Column("x", NUMERIC, 0, 10, public=True, integer=True,
                                          missing="indicator"))
    assert "x (missing)" not in marginal_tvd(real, synth, schema).per_pair.columns
    blanked = synth.assign(x=[1, None, 2, 2])
    assert "x (missing)" in marginal_tvd(real, blanked, schema).per_pair.columns
