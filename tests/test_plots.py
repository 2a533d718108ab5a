"""Plotly builders: the right traces, and real-data figures labelled as not releasable."""

import math
import re

import numpy as np
import pytest

from synth.evaluation import marginal_tvd
from synth.methods import Progress, StageStarted
from synth.plots import (
    REAL,
    budget_chart,
    composition_chart,
    k_bound_chart,
    ledger_chart,
    m_range_chart,
    marginal_chart,
    marginal_charts,
    progress_chart,
    tvd_heatmap,
    utility_chart,
)
from synth.privacy.budget import Budget


def test_marginal_chart_has_real_and_each_synthetic_table(sample):
    table, schema = sample
    fig = marginal_chart(table, {"a": table.head(100), "b": table.tail(100)}, schema, "age")
    assert [t.name for t in fig.data] == [REAL, "a", "b"]
    assert len(fig.data[0].x) == 10 and abs(sum(fig.data[0].y) - 1) < 1e-9
    assert "not part of the release" in fig.layout.title.text


def test_tvd_heatmap_and_utility_chart(sample):
    table, schema = sample
    fid = marginal_tvd(table, table.sample(500, random_state=0), schema)
    heat = tvd_heatmap(fid)
    assert heat.data[0].z.shape == (len(schema), len(schema))
    assert "not part of the release" in heat.layout.title.text
    reference = {"majority": 0.75, "chance_balanced_accuracy": 0.5, "chance_macro_f1": 0.43,
                 "real_accuracy": 0.85, "real_balanced_accuracy": 0.7, "real_macro_f1": 0.72}
    util = utility_chart({"run": {"accuracy": 0.8, "balanced_accuracy": 0.6, "macro_f1": 0.7}},
                         reference)
    assert [t.name for t in util.data if t.type == "bar"] == [
        "accuracy", "balanced accuracy", "macro F1"]
    # each score's panel has its own chance and real-data lines, named with their values
    lines = {(s.xref, round(s.y0, 3)) for s in util.layout.shapes}
    assert lines == {("x domain", 0.75), ("x domain", 0.85), ("x2 domain", 0.5),
                     ("x2 domain", 0.7), ("x3 domain", 0.43), ("x3 domain", 0.72)}
    named = [t.name for t in util.data if t.type == "scatter"]
    assert named == ["chance 0.750", "tree trained on the real data 0.850", "chance 0.500",
                     "tree trained on the real data 0.700", "chance 0.430",
                     "tree trained on the real data 0.720"]
    older = utility_chart({"run": {"accuracy": 0.8, "macro_f1": 0.7}}, {"majority": 0.75})
    assert len(older.layout.shapes) == 1  # a record from before the other lines existed


def test_ledger_chart_stacks_stages_against_the_budget():
    ledger = {"total_epsilon": 0.9, "total_delta": 1e-6,
              "budget": {"epsilon": 1.0, "delta": 1e-5, "shares": {}},
              "entries": [{"stage": "domain", "epsilon": 0.1}, {"stage": "measure", "epsilon": 0.5},
                          {"stage": "measure", "epsilon": 0.3}]}
    fig = ledger_chart(ledger)
    assert {t.name: t.x[0] for t in fig.data} == {"domain": 0.1, "measure": 0.8}
    assert "not releasable" not in fig.layout.title.text


def test_budget_chart_shows_the_planned_split():
    fig = budget_chart(Budget(2.0, 1e-5, {"gan": 0.25, "select": 0.75}))
    assert {t.name: t.x[0] for t in fig.data} == {"gan": 0.5, "select": 1.5}


def test_progress_chart_draws_each_metric_and_puts_epsilon_apart():
    events = [StageStarted("gan", 3),
              *(Progress("gan", k, 3, {"critic_loss": 1.0 / k, "epsilon": 0.1 * k})
                for k in (1, 2, 3)),
              Progress("select", 1, 2, {"distance": 0.5})]
    fig = progress_chart(events, "gan")
    lines = {t.name: list(t.y) for t in fig.data}
    assert lines == {"critic loss": [1.0, 0.5, 1 / 3], "ε of the steps taken": [0.1, 0.2, 0.1 * 3]}
    assert fig.data[1].xaxis == "x2"  # ε of the steps taken has its own panel
    assert [t.name for t in progress_chart(events, "select").data] == ["distance"]
    assert len(progress_chart([], "gan").data) == 0  # nothing yet: an empty chart


def test_progress_chart_thins_a_long_run_evenly_and_keeps_the_latest():
    events = [Progress("gan", k, 5000, {"critic_loss": float(k)}) for k in range(1, 5001)]
    (line,) = progress_chart(events, "gan", points=400).data
    steps = list(line.x)
    assert 200 <= len(steps) <= 400 and steps[-1] == 5000
    assert len(set(np.diff(steps))) == 1  # evenly spaced
    assert list(line.y) == [float(k) for k in steps]  # each point keeps its own value


def test_progress_chart_of_a_search_runs_along_its_generations():
    events = [Progress("project", 0, 2, {"loss": 3.0, "generation": 250}),
              Progress("project", 1, 2, {"loss": 1.0, "generation": 900})]
    fig = progress_chart(events, "project")
    assert [(t.name, list(t.x)) for t in fig.data] == [("loss", [250, 900])]
    assert fig.layout.xaxis.title.text == "generation"


def test_composition_chart_has_a_line_per_theorem_and_marks_n():
    from synth.privacy.composition import THEOREMS, explore

    steps = [1, 10, 100, 1000]
    fig = composition_chart(explore(1.0, 1e-5, steps), steps, 1.0, 1e-5, {"n": 100})
    assert sum(list(t.x) == steps for t in fig.data) == len(THEOREMS)  # a curve each
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    assert fig.layout.shapes[0].x0 == 100


def test_marginal_charts_draw_each_column_as_marginal_chart_does(sample):
    table, schema = sample
    synthetic = {"a": table.head(300)}
    columns = ["age", "sex", schema.names[-1]]
    for fig, column in zip(marginal_charts(table, synthetic, schema, columns), columns,
                           strict=True):
        one = marginal_chart(table, synthetic, schema, column)
        assert fig.layout.title.text == one.layout.title.text
        assert [(list(t.x), list(t.y)) for t in fig.data] == \
            [(list(t.x), list(t.y)) for t in one.data]


def line_positions(fig) -> dict[str, float]:
    """Each reference line's legend name (a trace without points) and where its line is
    drawn, matched by its dash."""
    shapes = {s.line.dash: (s.y0 if s.x0 != s.x1 else s.x0) for s in fig.layout.shapes}
    assert len(shapes) == len(fig.layout.shapes), "two lines share a dash"
    return {t.name: shapes[t.line.dash] for t in fig.data
            if t.type == "scatter" and list(t.x) == [None]}


def number(name: str) -> float:
    return float(re.search(r"[\d,.]+$", name).group().replace(",", ""))


@pytest.mark.parametrize("close", [0.0, 0.001, 0.01])
def test_reference_lines_are_named_in_the_legend_where_no_label_can_collide(close):
    """Labels written beside lines overlapped when two lines were close (the majority class
    and the real-data tree; Figure 1's k thresholds): each line is named in the legend, by a
    dash of its own, and says where it is."""
    utility = utility_chart({"run": {"accuracy": 0.8}},
                            {"majority": 0.75, "real_accuracy": 0.75 + close})
    ps = np.arange(2, 60)
    lo, hi = 2.0 * np.log10(ps), ps / 4 * np.log10(2)
    first = int(ps[np.argmax(lo <= hi)])
    m_range = m_range_chart(ps, lo, hi, here=first + round(close * 1000))
    k_bound = k_bound_chart(ps, {"ε = 1": ps / 10 - 3})
    for fig, where in ((utility, number), (m_range, number),
                       (k_bound, lambda name: math.log10(number(name)))):
        assert not fig.layout.annotations  # nothing written beside a line
        lines = line_positions(fig)
        assert len(lines) == len(fig.layout.shapes) >= 2
        assert all(at == pytest.approx(where(name)) for name, at in lines.items()), lines


def test_a_months_bars_stand_on_a_category_axis_so_none_is_dropped():
    """The steward's walk: Compare's month chart showed months 3–10 only; Plotly read the
    labels '1–2' and '11–12' as numbers on a numeric axis and dropped them."""
    import pandas as pd

    from synth.plots import marginal_charts
    from synth.schema import Column, Schema

    schema = Schema((Column("month", "numeric", 1, 12, integer=True, public=True),))
    table = pd.DataFrame({"month": list(range(1, 13)) * 10})
    chart = marginal_charts(table, {"release": table}, schema, ["month"], bins=6)[0]
    assert chart.layout.xaxis.type == "category"
    shown = [x for bar in chart.data for x in bar.x]
    assert "1–2" in shown and "11–12" in shown, shown
