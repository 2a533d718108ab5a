"""Plotly figure builders shared by the app, CLI reports and notebooks.

Every figure that shows real data says so in its title: those figures are for the steward's
eyes and are not part of a release.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from synth import dates
from synth.encoding import Discretizer
from synth.evaluation import FIDELITY_BINS, Fidelity, outside
from synth.marginals import marginal
from synth.methods.base import Event, Progress
from synth.missing import model_frame, model_schema
from synth.privacy.budget import Budget, epsilon_text
from synth.quality import comparable
from synth.schema import DATETIME, Column, Schema

REAL = "real (not releasable)"
_NOT_RELEASABLE = "uses the real data: for your eyes, not part of the release"
DASHES = ("dot", "dash", "dashdot", "longdashdot", "longdash")


def reference_lines(fig: go.Figure, lines: Mapping[str, float], vertical: bool = False
                    ) -> go.Figure:
    """Horizontal (or vertical) lines across the plot, each named in the legend and drawn
    with its own dash: labels written beside the lines collided where two were close."""
    for (name, at), dash in zip(lines.items(), itertools.cycle(DASHES)):
        style = {"dash": dash, "color": "black", "width": 1.5}
        (fig.add_vline if vertical else fig.add_hline)(at, line=style)
        fig.add_scatter(x=[None], y=[None], mode="lines", line=style, name=name,
                        hoverinfo="skip")  # the line's legend entry: it has no points
    return fig


def marginal_chart(real: pd.DataFrame | None, synthetic: Mapping[str, pd.DataFrame],
                   schema: Schema, column: str, bins: int = FIDELITY_BINS) -> go.Figure:
    """Grouped bars of one column's distribution: real (unless None) next to each synthetic
    table."""
    return marginal_charts(real, synthetic, schema, [column], bins)[0]


def marginal_charts(real: pd.DataFrame | None, synthetic: Mapping[str, pd.DataFrame],
                    schema: Schema, columns: Iterable[str], bins: int = FIDELITY_BINS
                    ) -> list[go.Figure]:
    """:func:`marginal_chart` of each of ``columns``, the tables prepared once for them all
    and only in those columns (preparing whole tables per chart made a report of a
    Bank-sized run take 7 s). Real values are binned where they lie, never clipped into the
    release's range, and the title says what share of them the release cannot hold."""
    columns = list(columns)
    tables = {**({REAL: real} if real is not None else {}), **synthetic}
    schema = schema.drop(c for c in schema.names if c not in columns)
    lost = outside(real, schema) if real is not None else pd.Series(dtype=float)
    schema = comparable(schema, *tables.values(), real=real)
    disc = Discretizer(model_schema(schema), bins=bins)
    codes = {name: disc.codes(model_frame(table, schema, released=name != REAL or real is None))
             for name, table in tables.items()}
    note = f" ({_NOT_RELEASABLE})" if real is not None else ""
    figures = []
    for column in columns:
        j = disc.schema.names.index(column)
        x, hover = _axis(schema[column], disc, column)
        fig = go.Figure()
        for name, table_codes in codes.items():
            share = marginal(table_codes, disc.sizes, (j,)) / max(len(table_codes), 1)
            fig.add_bar(name=name, x=x, y=share, hovertext=hover)
        share = float(lost.get(column, 0.0))
        lose = f"; {share:.1%} of real rows lie outside the release" if share else ""
        fig.update_layout(barmode="group", title=f"{column}: share of rows{note}{lose}",
                          yaxis_title="share of rows", legend_title="table")
        if schema[column].kind != DATETIME:  # bins are labels: '1–2' is no number to drop
            fig.update_xaxes(type="category")
        else:  # dates on a time axis, each bar its stretch
            fig.update_xaxes(type="date", title=f"{column} (by {schema[column].granularity})",
                             # a month or year is named as such, never by a day inside it
                             **_TICKS.get(schema[column].granularity, {}))
            if schema[column].format in dates.CLOCKS:  # a time of day: its day is no datum
                fig.update_xaxes(tickformat="%H:%M", title=f"{column} (time of day)")
        figures.append(fig)
    return figures


_TICKS = {"month": {"tickformat": "%b %Y"}, "year": {"tickformat": "%Y"}}


def _axis(col: Column, disc: Discretizer, name: str) -> tuple[list, list[str] | None]:
    """(where a column's bars stand, what hovering over one says): a date column's bins at
    their middle dates, each named by its first and last date; another's bin labels."""
    if col.kind != DATETIME:
        return disc.labels(name), None
    edges = disc.edges[name] + (dates.origin_of(col) or 0.0)
    first = np.ceil(edges[:-1])
    last = np.maximum(np.append(np.ceil(edges[1:-1]) - 1, np.floor(edges[-1])), first)
    middle = dates.stamps_of((first + last) // 2, col.granularity)
    return list(middle), [f"{col.shown(a)} to {col.shown(b)}" if b > a else col.shown(a)
                          for a, b in zip(first, last, strict=True)]


def tvd_heatmap(fidelity: Fidelity, title: str = "2-way marginal TVD") -> go.Figure:
    """Per-pair total variation distance; darker is worse."""
    m = fidelity.per_pair
    fig = go.Figure(go.Heatmap(z=m.to_numpy(), x=list(m.columns), y=list(m.index),
                               colorscale="Reds", zmin=0, zmax=max(0.3, np.nanmax(m.to_numpy())),
                               colorbar={"title": "TVD"},
                               hovertemplate="%{y} × %{x}: %{z:.3f}<extra></extra>"))
    # every column named (Plotly skipped every other label), rows tall enough to read
    fig.update_layout(title=f"{title} (avg {fidelity.tvd2:.3f}; {_NOT_RELEASABLE})",
                      yaxis={"autorange": "reversed", "dtick": 1}, xaxis={"dtick": 1},
                      height=max(450, 160 + 22 * len(m)))
    return fig


# a utility figure, the key of its chance line and of the real-data tree's (synth.evaluation)
UTILITY = (("accuracy", "accuracy", "majority", "real_accuracy"),
           ("balanced_accuracy", "balanced accuracy", "chance_balanced_accuracy",
            "real_balanced_accuracy"),
           ("macro_f1", "macro F1", "chance_macro_f1", "real_macro_f1"))


def utility_chart(results: Mapping[str, Mapping[str, float]],
                  reference: Mapping[str, float]) -> go.Figure:
    """Tree accuracy, balanced accuracy and macro F1 per run, each in a panel of its own
    beside its chance line (the majority class; 1/K classes; always answering the majority
    class) and the tree trained on the real data: on a rare target accuracy alone reads
    well when nothing is learned."""
    from plotly.subplots import make_subplots

    shown = [m for m in UTILITY if any(m[0] in r for r in results.values())]
    fig = make_subplots(rows=1, cols=len(shown), shared_yaxes=True)  # titled below the panels
    names = list(results)
    for col, (key, label, chance, real) in enumerate(shown, 1):
        fig.add_bar(x=names, y=[results[n].get(key) for n in names], name=label,
                    showlegend=False, row=1, col=col)
        fig.update_xaxes(title_text=label, row=1, col=col)
        lines = [(f"chance {reference[chance]:.3f}", reference[chance], DASHES[0])
                 if chance in reference else None,
                 (f"tree trained on the real data {reference[real]:.3f}", reference[real],
                  DASHES[1]) if real in reference else None]
        for name, at, dash in filter(None, lines):  # records from before a line existed
            style = {"dash": dash, "color": "black", "width": 1.5}
            fig.add_hline(at, line=style, row=1, col=col)
            fig.add_scatter(x=[None], y=[None], mode="lines", line=style, name=name,
                            legendgroup=label, legendgrouptitle_text=label,
                            hoverinfo="skip", row=1, col=col)
    fig.update_yaxes(range=[0, 1])
    fig.update_yaxes(title_text="score on real test", row=1, col=1)
    fig.update_layout(title=f"Decision-tree utility ({_NOT_RELEASABLE})")
    return fig


def baseline_lines(majority: float, real: float | None = None) -> dict[str, float]:
    """The utility baselines as :func:`reference_lines` names them."""
    lines = {f"majority class {majority:.3f}": majority}
    if real is not None:
        lines[f"tree trained on the real data {real:.3f}"] = real
    return lines


def ledger_chart(ledger: Mapping) -> go.Figure:
    """Stacked bar of ε spent per stage against the budget: this one is releasable."""
    budget = ledger["budget"]
    spent: dict[str, float] = {}
    for e in ledger["entries"]:
        if e["epsilon"] is not None:  # an entry without a guarantee has no finite ε to draw
            spent[e["stage"]] = spent.get(e["stage"], 0.0) + e["epsilon"]
    fig = go.Figure()
    for stage, eps in spent.items():
        fig.add_bar(name=stage, y=["ε"], x=[eps], orientation="h")
    fig.add_vline(x=budget["epsilon"], line_dash="dash",
                  annotation_text=f"budget ε = {budget['epsilon']:g}")
    fig.update_layout(barmode="stack", height=220, xaxis_title="ε spent",
                      legend={"traceorder": "normal"},  # the bars' order, left to right
                      title=f"Privacy ledger: ε = {epsilon_text(ledger['total_epsilon'])}, "
                            f"δ = {ledger['total_delta']:.3g}")
    return fig


def budget_chart(budget: Budget) -> go.Figure:
    """Stacked bar of the planned split of ε between stages, before anything is spent."""
    fig = go.Figure()
    for stage, share in budget.shares.items():
        eps = budget.epsilon * share
        fig.add_bar(name=stage, y=["ε"], x=[eps], orientation="h",
                    hovertemplate=f"{stage}: ε = {eps:.4g} ({share:.0%})<extra></extra>")
    fig.update_layout(barmode="stack", height=220, xaxis_title="ε planned",
                      legend={"orientation": "h", "y": -0.6, "traceorder": "normal"},
                      title=f"Planned split of ε = {budget.epsilon:g}, δ = {budget.delta:.3g}")
    return fig


def progress_chart(events: Iterable[Event], stage: str, points: int = 400) -> go.Figure:
    """Every metric a stage reports against its step (or its ``generation`` metric, for a
    search whose steps are rounds); the ε of the steps taken (DP-SGD) gets a panel of its own.
    At most about ``points`` reports are drawn, evenly spaced and the latest always among
    them: a live view redraws this chart while the run trains, and the browser's work grows
    with its points."""
    from plotly.subplots import make_subplots

    rows = [{"step": e.step, **e.metrics} for e in events
            if isinstance(e, Progress) and e.stage == stage and e.metrics]
    stride = max(1, -(-len(rows) // points))  # ceil
    rows = rows[::-1][::stride][::-1]  # from the latest back
    frame = pd.DataFrame(rows, columns=["step"] if not rows else None)
    steps = frame.pop("step")
    axis = "generation" if "generation" in frame else "step"
    if axis == "generation":
        steps = frame.pop("generation")
    spent = frame.pop("epsilon") if "epsilon" in frame else None
    two = spent is not None
    fig = make_subplots(rows=1, cols=2 if two else 1, column_widths=[0.65, 0.35] if two else None,
                        subplot_titles=(stage, "ε of the steps taken") if two else (stage,))
    for name, values in frame.items():
        fig.add_scatter(x=steps, y=values, name=name.replace("_", " "), mode="lines",
                        row=1, col=1)
    if two:
        fig.add_scatter(x=steps, y=spent, name="ε of the steps taken", mode="lines", row=1,
                        col=2)
        fig.update_yaxes(rangemode="tozero", row=1, col=2)
    fig.update_xaxes(title_text=axis)
    fig.update_layout(height=300, margin={"t": 40, "b": 30}, uirevision=stage)
    return fig


THEOREM_NAMES = {"basic": "basic", "advanced": "advanced (Dwork–Rothblum–Vadhan)",
                 "kairouz": "optimal (Kairouz et al.)", "renyi": "Rényi",
                 "bounded_range": "bounded range (exponential mechanism)"}


def composition_chart(curves: Mapping[str, Iterable[float]], steps: Iterable[int],
                      epsilon: float, delta: float, marks: Mapping[str, int]) -> go.Figure:
    """Per-step ε against the number of steps, one line per theorem (log–log), with a
    vertical line for each marked step count (an engine's number of selections)."""
    steps = list(steps)
    fig = go.Figure()
    for name, values in curves.items():
        fig.add_scatter(x=steps, y=list(values), name=THEOREM_NAMES.get(name, name),
                        mode="lines")
    reference_lines(fig, {f"{label}: {n:,}": n for label, n in marks.items()}, vertical=True)
    fig.update_layout(xaxis={"type": "log", "title": "number of steps n"},
                      yaxis={"type": "log", "title": "ε per step"}, height=380,
                      legend={"orientation": "h", "y": -0.3},
                      title=f"ε each of n steps may spend for a total ε = {epsilon:g}, "
                            f"δ = {delta:.2g}")
    return fig


# ---- private sampling's bounds (the Feasibility page) ---------------------------------------


def k_bound_chart(ps: Iterable[int], curves: Mapping[str, Iterable[float]],
                  thresholds: Iterable[int] = (1, 100, 1000, 10000)) -> go.Figure:
    """log₁₀ of the largest private k against p, one line per setting, with k thresholds
    (the paper's Figure 1 when the curves are the ideal cube's)."""
    ps = list(ps)
    fig = go.Figure()
    for label, values in curves.items():
        fig.add_scatter(x=ps, y=list(values), name=label, mode="lines")
    reference_lines(fig, {f"k = {k:,}": float(np.log10(k)) for k in thresholds})
    fig.update_layout(xaxis_title="p (dimension of the cube)",
                      yaxis_title="log₁₀ of the k Theorem 4.1 allows", height=380,
                      legend={"orientation": "h", "y": -0.3},
                      title="Largest private k on the ideal cube (n = 2^p, Δ = 1, m = m_lo)")
    return fig


def m_range_chart(ps: Iterable[int], m_lo: Iterable[float], m_hi: Iterable[float],
                  here: int | None = None) -> go.Figure:
    """log₁₀ m_lo and log₁₀ 2^{p/4} (with 2^p for reference) against p; the feasible m lie
    between them, shaded where the range is not empty."""
    ps, lo, hi = list(ps), np.asarray(list(m_lo)), np.asarray(list(m_hi))
    ok = lo <= hi
    fig = go.Figure()
    fig.add_scatter(x=ps, y=np.where(ok, hi, None), mode="lines", line={"width": 0},
                    showlegend=False, hoverinfo="skip")
    fig.add_scatter(x=ps, y=np.where(ok, lo, None), mode="lines", line={"width": 0},
                    fill="tonexty", name="feasible m", hoverinfo="skip")
    fig.add_scatter(x=ps, y=lo, name="m_lo (Theorem 4.2)", mode="lines")
    fig.add_scatter(x=ps, y=hi, name="2^(p/4) (Theorem 4.2)", mode="lines")
    fig.add_scatter(x=ps, y=np.asarray(ps) * np.log10(2), name="2^p (the whole cube)",
                    mode="lines", line={"dash": "dash"})
    marks = {}
    if ok.any():
        first = ps[int(np.argmax(ok))]
        marks[f"non-empty from p = {first}"] = first
    if here is not None:
        marks[f"your p = {here}"] = here
    reference_lines(fig, marks, vertical=True)
    fig.update_layout(xaxis_title="p", yaxis_title="log₁₀ m", height=380,
                      legend={"orientation": "h", "y": -0.3},
                      title="Where the reduced space's size m may lie")
    return fig


def table2_chart(rows: Mapping[str, Mapping[str, float]]) -> go.Figure:
    """Per dataset, printed and recomputed log₁₀ k·m^{3/4} and log₁₀ m_lo against log₁₀ 2^{p/4}
    and log₁₀ 2^p (the paper's Table 2)."""
    names = list(rows)
    fig = go.Figure()
    for key, label in (("printed_k", "k·m^¾ as printed"), ("k", "k·m^¾ recomputed"),
                       ("printed_m", "m_lo as printed"), ("m_lo", "m_lo recomputed"),
                       ("m_hi", "2^(p/4)"), ("two_p", "2^p")):
        fig.add_bar(x=names, y=[rows[n][key] for n in names], name=label)
    fig.add_hline(y=0, annotation_text="k = 1")
    fig.update_layout(barmode="group", yaxis_title="log₁₀", height=400,
                      legend={"orientation": "h", "y": -0.2},
                      title="Table 2: the paper's datasets (ε = 1, d = 2, δ = 1/4, γ = 1/8)")
    return fig


def k_heatmap(ps: Iterable[int], log10_ns: Iterable[float], grid: np.ndarray) -> go.Figure:
    """log₁₀ of the largest private k over (p, log₁₀ n), with the k = 1 contour."""
    ps, ns = list(ps), list(log10_ns)
    fig = go.Figure(go.Heatmap(x=ps, y=ns, z=grid, colorscale="RdBu", zmid=0,
                               colorbar={"title": "log₁₀ k"}))
    fig.add_contour(x=ps, y=ns, z=grid, contours={"start": 0, "end": 0, "coloring": "none",
                                                  "showlabels": True}, showscale=False,
                    line={"width": 2, "color": "black"}, name="k = 1")
    fig.update_layout(xaxis_title="p", yaxis_title="log₁₀ n", height=420,
                      title="Largest private k (at m = m_lo) over the cube's dimension and n")
    return fig


# ---- sweeps ----------------------------------------------------------------------------------


def titled(method: str) -> str:
    """A method's display name ("DP-GAN" for ``dpgan``), as the Synthesize page shows it."""
    from synth.methods import METHODS

    return METHODS[method].title if method in METHODS else str(method)


def sweep_chart(rows: pd.DataFrame, metric: str, label: str) -> go.Figure:
    """A metric against ε, one line per method (and swept value): median with its min–max over
    seeds as error bars."""
    fig = go.Figure()
    keys = ["method", "value"] if rows["value"].notna().any() else ["method"]
    rows = rows.assign(method=rows["method"].map(titled))
    for key, group in rows.dropna(subset=[metric]).groupby(keys, dropna=False):
        stats = group.groupby("epsilon")[metric].agg(["median", "min", "max"]).reset_index()
        name = " ".join(str(k) for k in (key if isinstance(key, tuple) else (key,))
                        if not pd.isna(k))
        fig.add_scatter(x=stats["epsilon"], y=stats["median"], name=name, mode="lines+markers",
                        error_y={"type": "data", "symmetric": False,
                                 "array": stats["max"] - stats["median"],
                                 "arrayminus": stats["median"] - stats["min"]})
    fig.update_layout(xaxis={"type": "log", "title": "ε"}, yaxis_title=label, height=380,
                      title=f"{label} against ε (median, min–max over seeds; "
                            f"{_NOT_RELEASABLE})")
    return fig


def pareto_chart(rows: pd.DataFrame, metric: str) -> go.Figure:
    """Privacy spent against a metric's median over seeds, per method and setting; the front
    joins the settings no other beats on both (less ε and a better metric)."""
    higher = metric in ("accuracy", "logistic_accuracy")
    keys = ["method", "epsilon", "value", "share"]
    points = rows.dropna(subset=[metric]).groupby(keys, dropna=False)[metric].median()
    points = points.reset_index()
    points["method"] = points["method"].map(titled)
    points["label"] = points.apply(lambda r: " ".join(
        str(r[k]) for k in ("method", "value", "share") if not pd.isna(r[k])), axis=1)
    fig = go.Figure()
    for label, group in points.groupby("label"):
        fig.add_scatter(x=group["epsilon"], y=group[metric], name=label, mode="markers")
    best = points.sort_values(["epsilon", metric], ascending=[True, not higher])
    front, record = [], None
    for _, r in best.iterrows():
        if record is None or (r[metric] > record if higher else r[metric] < record):
            front.append(r)
            record = r[metric]
    if front:
        frame = pd.DataFrame(front)
        fig.add_scatter(x=frame["epsilon"], y=frame[metric], name="Pareto front",
                        mode="lines", line={"dash": "dash", "color": "black"})
    fig.update_layout(xaxis={"type": "log", "title": "ε spent"}, yaxis_title=metric,
                      height=400, title=f"Privacy against {metric}: the Pareto front "
                                        f"({_NOT_RELEASABLE})")
    return fig
