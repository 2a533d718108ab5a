"""The plan's recommendation: the benchmarks' order, public facts only, reasons for each skip."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from synth.errors import BudgetError
from synth.recommend import RANKED, WHY, recommend

REPO = Path(__file__).resolve().parent.parent
PEERS = REPO / "benchmarks/results/peers.json"
SAMPLE = REPO / "sample_data/census_demo.csv"


def test_the_order_is_the_benchmarks_at_epsilon_1():
    """RANKED is read off peers.json's medians, not chosen: a rerun that reorders the methods
    fails here until the order (and its reasons) follow."""
    summary = json.loads(PEERS.read_text())["summary"]
    measured = [m for m in RANKED if f"{m} at ε=1" in summary]
    assert len(measured) >= 4
    by_tvd = sorted(measured, key=lambda m: summary[f"{m} at ε=1"]["tvd2"]["median"])
    assert by_tvd == measured
    first = RANKED[0]
    for eps in (0.5, 1, 2, 4, 8):  # the first is first at every ε measured, as WHY says
        cells = {m: summary[f"{m} at ε={eps:g}"]["tvd2"]["median"] for m in measured
                 if f"{m} at ε={eps:g}" in summary}
        assert min(cells, key=cells.get) == first, eps
    assert set(WHY) == set(RANKED)


def test_aim_is_never_behind_mst_and_nothing_worsens_with_epsilon():
    """What WHY and the docs rest on, read off every table of peers.json: AIM's median 2-way
    TVD is at most MST's at every ε both were run at, and no median of 3 seeds rises from one
    ε to a larger one (a rerun that breaks either fails here until the claims follow)."""
    results = json.loads(PEERS.read_text())
    tables = {"adult": results["summary"]} | {
        name: table["summary"] for name, table in results["tables"].items()}
    grid = {0.5, 1.0, 2.0, 4.0, 8.0}
    for name in ("adult", "census", "bank"):  # the grids WHY cites, whole
        assert {float(k.split(" at ε=")[1]) for k in tables[name] if k.startswith("aim ")} \
            >= grid, name
    for name, summary in tables.items():
        medians: dict[str, dict[float, float]] = {}
        for key, cell in summary.items():
            method, eps = key.split(" at ε=")
            if cell["seeds"] >= 3:
                medians.setdefault(method, {})[float(eps)] = cell["tvd2"]["median"]
            if method == "aim" and f"mst at ε={eps}" in summary:
                behind = cell["tvd2"]["median"] - summary[f"mst at ε={eps}"]["tvd2"]["median"]
                assert behind <= 0, (name, eps, behind)
        for method, by_eps in medians.items():
            curve = [by_eps[eps] for eps in sorted(by_eps)]
            assert curve == sorted(curve, reverse=True), (name, method, curve)


def test_adult_gets_the_first_and_a_slow_first_is_passed_over_by_name(adult_public):
    adult = adult_public
    found = recommend(adult, 1.0, 1e-5, 21_707)
    assert found.method == RANKED[0] and not found.passed_over and found.seconds > 0
    hurried = recommend(adult, 1.0, 1e-5, 21_707, patience=found.seconds / 2)
    assert hurried.method != found.method
    skipped = dict(hurried.passed_over)
    assert found.method in skipped and "over" in skipped[found.method]
    assert hurried.seconds <= found.seconds / 2
    assert list(skipped) == list(RANKED[:RANKED.index(hurried.method)])  # in order


def test_pure_dp_is_refused_naming_delta(adult_public):
    with pytest.raises(BudgetError, match="δ"):
        recommend(adult_public, 1.0, 0.0, 21_707)


def test_plan_without_a_method_recommends_one_and_plans_it():
    schema = SAMPLE.with_name("census_demo.schema.json")
    out = subprocess.run([sys.executable, "-m", "synth", "plan", str(SAMPLE), "--schema",
                          str(schema), "--epsilon", "1", "--json"],
                         capture_output=True, text=True, check=True)
    planned = json.loads(out.stdout)
    advice = planned["recommendation"]
    assert advice["method"] == planned["method"] == RANKED[0]
    assert advice["why"] == WHY[RANKED[0]] and advice["seconds"] == planned["seconds"]


def test_one_column_gets_independent_and_settings_need_a_method():
    from synth.recommend import ONE_COLUMN
    from synth.schema import Schema

    one = Schema.from_dict({"columns": [{"name": "a", "kind": "categorical",
                                         "categories": ["x", "y"], "public": True}]})
    found = recommend(one, 1.0, 1e-5, 1_000)
    assert (found.method, found.why) == ("independent", ONE_COLUMN)
    out = subprocess.run([sys.executable, "-m", "synth", "plan", str(SAMPLE), "--schema",
                          str(SAMPLE.with_name("census_demo.schema.json")), "--epsilon", "1",
                          "--set", "bins=8"], capture_output=True, text=True)
    assert out.returncode != 0 and "name it with --method" in out.stderr
    assert "Traceback" not in out.stderr
