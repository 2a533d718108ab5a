"""Self-contained HTML reports of a run or a sweep: figures (Plotly, embedded), parameters,
ledger, environment and timing, with the parts that used the real data marked as such."""

from __future__ import annotations

import html
import json
import platform
from collections.abc import Mapping, Sequence
from importlib import metadata
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from synth.errors import DataError
from synth.plots import (
    ledger_chart,
    marginal_charts,
    sweep_chart,
    titled,
    tvd_heatmap,
    utility_chart,
)
from synth.privacy.budget import epsilon_text
from synth.schema import Schema

REAL_DATA = ("Uses the real data: for the data steward's eyes, not part of the release. "
             "Leave this section out before sharing the report.")
RISK = ("Attacks on the release, run with the rows it was made from and real rows it never "
        "saw, each beside the bound the ledger's (ε, δ) places on any attack: the advantage "
        "(true-positive less false-positive rate at the best threshold, or a member's gain in "
        "correct guesses of the sensitive column) is at most (e^ε − 1 + 2δ)/(e^ε + 1) for "
        "membership. A figure under its bound shows how far these attacks get, not that no "
        "attack gets further; one above it means the release is not what its ledger says. "
        "Chance: on rows the release never saw, a figure stays below it 95 % of the time; "
        "a figure within it is no evidence of any leak. Attribute inference is bounded by what "
        "(ε, δ) allows over the held-out rows' rate of correct guesses, so its bound depends "
        "on the column; a negative figure means the guesses were right less often for the "
        "rows the release was made from.")
NO_RISK = ("Not measured: the attacks need real rows the run never saw. A run that held rows "
           "out (the app holds out a sixth of a table with a target by default) is attacked "
           "in this report; from the command line, give synth report those rows with "
           "--holdout.")
STEWARD_ONLY = ("This report compares the release with the private table. Keep it with the "
                "data; share the release report instead.")
LEDGER_KEYS = ("budget", "entries", "total_epsilon", "total_delta")  # what the charts read
SWEEP_COLUMNS = ("method", "epsilon", "value", "accuracy", "logistic_accuracy", "tvd1", "tvd2")
PACKAGES = ("numpy", "pandas", "scikit-learn", "scipy", "torch", "opacus", "plotly",
            "streamlit")


def release_report(record: Mapping[str, Any], synthetic: pd.DataFrame | None = None) -> str:
    """A releasable report of a run's ledger file (as ``synth run --ledger`` writes it):
    parameters, ledger and, given the synthetic table, its own marginals. Nothing in it reads
    the private table, and it holds no runtime or file path."""
    title = f"Release report: {_named(record)}"
    return _page(title, [_h(title, 1), *_released(record, synthetic)])


def steward_report(record: Mapping[str, Any], synthetic: pd.DataFrame, real: pd.DataFrame,
                   schema: Schema, scores: Mapping[str, Any] | None = None,
                   risk: Sequence[Any] | None = None) -> str:
    """The release report plus real-against-synthetic comparisons: for the steward only.
    ``scores`` are the run's utility figures (:func:`synth.evaluation.utility`), drawn
    against their chance and real-data lines when given; ``risk`` the attacks of
    :func:`synth.risk.risk`, each beside its bound."""
    from synth.evaluation import marginal_tvd
    from synth.quality import quality

    title = f"Steward-only report (not for release): {_named(record)}"
    fit = quality(real, synthetic, schema)
    body = [_h(title, 1), _p(STEWARD_ONLY), *_released(record, None),
            _h("Real against synthetic", 2), _p(REAL_DATA),
            _table({"quality (SDMetrics' Quality Report)": f"{fit.overall:.3f}",
                    "column shapes": f"{fit.column_shapes:.3f}",
                    "column pair trends": f"{fit.column_pair_trends:.3f}",
                    "data validity (SDMetrics' Diagnostic Report)": f"{fit.validity:.3f}"})]
    if scores and "accuracy" in scores:
        body.append(_figure(utility_chart({record.get("method", "run"): scores}, scores)))
    body += [_h("Privacy risk", 2), *([_p(RISK), _attacks(risk)] if risk else [_p(NO_RISK)])]
    body += [_figure(tvd_heatmap(marginal_tvd(real, synthetic, schema))),
             *_columns(real, synthetic, schema)]
    return _page(title, body)


def _attacks(attacks: Sequence[Any]) -> str:
    """Each attack's figures beside its bound, a figure above it named so."""
    def figure(value: float | None) -> str:
        return "–" if value is None or value != value else f"{value:.3f}"

    rows = "".join(
        f"<tr><td>{html.escape(a.name)}</td><td>{figure(a.auc)}</td>"
        f"<td>{figure(a.advantage)}</td>"
        f"<td>{figure(a.interval[0])} – {figure(a.interval[1])}</td><td>{figure(a.bound)}</td>"
        f"<td>{figure(a.chance)}</td><td>{a.verdict}</td></tr>" for a in attacks)
    return ("<table><tr><th>attack</th><th>AUC</th><th>advantage</th><th>95 % interval</th>"
            f"<th>bound</th><th>chance</th><th>verdict</th></tr>{rows}</table>")


def _columns(real: pd.DataFrame | None, synthetic: pd.DataFrame, schema: Schema) -> list[str]:
    """Every column's marginal chart, the target first, each a section the contents at the
    top link to: a report left out all but the first six columns, silently."""
    names = ordered(schema)
    contents = " · ".join(f"<a href='#column-{i}'>{html.escape(n)}</a>"
                          for i, n in enumerate(names))
    charts = marginal_charts(real, {"synthetic": synthetic}, schema, names)
    return [f"<p>Columns ({len(names)}): {contents}</p>",
            *(f"<section id='column-{i}'>{_figure(fig)}</section>"
              for i, fig in enumerate(charts))]


def ordered(schema: Schema) -> list[str]:
    """The schema's columns, its target first."""
    return [*([schema.target] if schema.target else []),
            *(n for n in schema.names if n != schema.target)]


def _released(record: Mapping[str, Any], synthetic: pd.DataFrame | None) -> list[str]:
    """The run's guarantee, ledger and configuration, and ``synthetic``'s own marginals."""
    check_ledger(record)
    body = [_p(f"Privacy: {record.get('guarantee') or _guarantee(record)}."),
            _figure(ledger_chart(record)),
            _table({"method": record.get("method"),
                    "post-processing seed": (
                        "none" if record.get("postprocessing_seed") is None
                        else record["postprocessing_seed"]),
                    "rows": record.get("rows"), "command": record.get("command")}),
            _h("Parameters", 3), _table(record.get("params", {})),
            _h("Ledger", 3), _p(f"Neighbouring relation: {record.get('relation', '')}. "
                                "Every entry was charged before its mechanism ran."),
            _entries(record["entries"]),
            _details("The ledger file as written (JSON)", _pre(
                {k: v for k, v in record.items() if k not in ("schema", "params", "command")}))]
    if synthetic is not None and record.get("schema"):
        body += [_h("The synthetic table", 2),
                 *_columns(None, synthetic, Schema.from_dict(record["schema"]))]
    return body


def _named(record: Mapping[str, Any]) -> str:
    """The run as a person reads it: its method's title and ε, "a run" if the record has no
    method."""
    method = record.get("method")
    if not method:
        return "a run"
    eps = (record.get("budget") or {}).get("epsilon")
    return titled(method) + ("" if eps is None else f", ε = {epsilon_text(eps)}")


def _entries(entries: list[Mapping[str, Any]]) -> str:
    """The ledger's entries as a table a person reads: what each measured, by which
    mechanism, at what cost."""
    rows = "".join(
        f"<tr><td>{html.escape(str(e.get('stage')))}</td>"
        f"<td>{html.escape(str(e.get('description') or ''))}</td>"
        f"<td>{html.escape(str((e.get('event') or {}).get('type', '–')))}</td>"
        f"<td>{epsilon_text(e.get('epsilon'))}</td><td>{e.get('delta') or 0:.3g}</td>"
        f"<td>{html.escape(str(e.get('status') or ''))}</td></tr>" for e in entries)
    return ("<table><tr><th>stage</th><th>what</th><th>mechanism</th><th>ε</th><th>δ</th>"
            f"<th>status</th></tr>{rows}</table>")


def _details(summary: str, body: str) -> str:
    return f"<details><summary>{html.escape(summary)}</summary>{body}</details>"


def check_ledger(record: Any) -> None:
    """Refuse, by what it lacks, a record that is not a run's ledger."""
    lacks = [k for k in LEDGER_KEYS if k not in record] if isinstance(record, Mapping) else []
    if not isinstance(record, Mapping) or lacks:
        raise DataError(f"not a run's ledger (as `synth run --ledger` writes it): it lacks "
                        f"{lacks or list(LEDGER_KEYS)}")


def sweep_report(rows: pd.DataFrame, rehearsal: bool = False) -> str:
    """A sweep's table (as ``synth sweep`` writes it): metrics against ε, and every run; a
    ``rehearsal``'s runs were made from and scored against a DP stand-in, not the table."""
    lacks = [c for c in SWEEP_COLUMNS if c not in rows.columns]
    if lacks:
        raise DataError(f"not a sweep's table (as `synth sweep --out` writes it): it lacks "
                        f"columns {lacks}")
    title = (f"Sweep report: {len(rows)} runs of "
             f"{', '.join(sorted(titled(m) for m in set(rows['method'])))}")
    body = [_h(title, 1), _p(
        "A rehearsal: every run was made from a DP stand-in of the table and is scored "
        "against the stand-in (a release), not against the real table; the ε in the runs "
        "was not charged, only the stand-in's. For the data steward, who decides from it."
        if rehearsal else REAL_DATA + " (every figure here measures synthetic tables against "
                                      "the real one).")]
    tested = "stand-in test" if rehearsal else "real test"
    for metric, label in (("accuracy", f"tree accuracy ({tested})"),
                          ("logistic_accuracy", f"logistic accuracy ({tested})"),
                          ("tvd1", "1-way TVD"), ("tvd2", "2-way TVD")):
        if rows[metric].notna().any():
            body.append(_figure(sweep_chart(rows, metric, label)))
    body += [_h("Runs", 2), rows.to_html(index=False, float_format=lambda v: f"{v:.4g}")]
    return _page(title, body)


def environment() -> dict[str, str]:
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return {"python": platform.python_version(), "platform": platform.platform(), **versions}


def _guarantee(record: Mapping[str, Any]) -> str:
    return f"ε = {epsilon_text(record.get('total_epsilon'))}, δ = {record.get('total_delta')}"


def _page(title: str, body: list[str]) -> str:
    body += [_h("Environment", 2), _table(environment())]
    return ("<!doctype html><html><head><meta charset='utf-8'>"
            f"<title>{html.escape(title)}</title><script>{_plotly_js()}</script>"
            "<style>body{font-family:sans-serif;max-width:1100px;margin:auto}"
            "pre{background:#f6f6f6;padding:8px;overflow:auto}td,th{padding:2px 8px}</style>"
            "</head><body>" + "\n".join(body) + "</body></html>")


def _plotly_js() -> str:
    from plotly.offline import get_plotlyjs

    return get_plotlyjs()


def _figure(fig: go.Figure) -> str:
    """The figure in Plotly's own colours: inside Streamlit the default template is
    Streamlit's, whose colours a page outside it does not have (the bars came out black)."""
    return fig.update_layout(template="plotly").to_html(full_html=False,
                                                        include_plotlyjs=False)


def _h(text: str, level: int) -> str:
    return f"<h{level}>{html.escape(text)}</h{level}>"


def _p(text: str) -> str:
    return f"<p>{html.escape(text)}</p>"


def _pre(value: Any) -> str:
    return f"<pre>{html.escape(json.dumps(value, indent=2, default=str, ensure_ascii=False))}</pre>"


def _table(values: Mapping[str, Any]) -> str:
    rows = "".join(f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(str(v))}</td></tr>"
                   for k, v in values.items())
    return f"<table>{rows}</table>"
