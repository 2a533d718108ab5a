"""The privacy risk report: bounds from the DP definition, attacks checked by hand, and
controls that show the attacks have power (real rows and a bootstrap of them are flagged; DP
releases stay under their bounds)."""

import json
import math

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score, roc_curve

from synth import Budget, FitContext, make
from synth.protocol import protocol_split
from synth.risk import _curves, attribute_bound, membership_bound, risk
from synth.risk import margin as risk_margin
from synth.schema import Schema

from .test_cli import synth

GRID = np.linspace(0, 1, 401)


@pytest.mark.parametrize("epsilon, delta", [(0.0, 0.0), (0.1, 0.0), (1.0, 1e-5), (1.0, 0.05),
                                            (4.0, 1e-6), (12.0, 0.0)])
def test_the_membership_bound_is_the_largest_gap_dp_allows(epsilon, delta):
    """Over a fine grid of (FPR, TPR) pairs the (ε, δ)-DP region admits (TPR ≤ e^ε·FPR + δ
    and 1 − FPR ≤ e^ε·(1 − TPR) + δ), the largest TPR − FPR is the formula's."""
    fpr, tpr = np.meshgrid(GRID, GRID)
    allowed = (tpr <= math.exp(epsilon) * fpr + delta + 1e-12) & (
        1 - fpr <= math.exp(epsilon) * (1 - tpr) + delta + 1e-12)
    best = float((tpr - fpr)[allowed].max())
    assert membership_bound(epsilon, delta) == pytest.approx(best, abs=3 / len(GRID))


def test_randomized_response_reaches_the_bound_and_a_huge_epsilon_does_not_overflow():
    """Answering one's own membership truthfully with chance e^ε/(1 + e^ε) is ε-DP, and its
    TPR − FPR is exactly the bound; nothing is beyond 1."""
    for epsilon in (0.5, 1.0, 3.0):
        truthful = math.exp(epsilon) / (1 + math.exp(epsilon))
        assert membership_bound(epsilon, 0.0) == pytest.approx(truthful - (1 - truthful))
    assert membership_bound(1e6, 1e-5) == 1.0


@pytest.mark.parametrize("epsilon, delta, rate", [(1.0, 1e-5, 0.3), (1.0, 0.0, 0.85),
                                                  (0.2, 0.01, 0.5), (5.0, 0.0, 0.1)])
def test_the_attribute_bound_is_the_most_a_member_gains(epsilon, delta, rate):
    """A member's rate of correct guesses p may rise over the held-out rate q only as far as
    p ≤ e^ε·q + δ and 1 − p ≥ e^−ε·(1 − q − δ) allow: the grid's largest p − q."""
    allowed = (math.exp(epsilon) * rate + delta + 1e-12 >= GRID) & (
        math.exp(-epsilon) * (1 - rate - delta) - 1e-12 <= 1 - GRID)
    best = float(GRID[allowed].max()) - rate
    assert attribute_bound(epsilon, delta, rate) == pytest.approx(best, abs=3 / len(GRID))


def test_the_roc_figures_agree_with_scikit_learn_ties_included():
    rng = np.random.default_rng(0)
    for size in (5, 40, 300):
        score = rng.integers(0, 7, size).astype(float)  # many ties
        truth = rng.random(size) < 0.5
        truth[:2] = [True, False]
        levels = np.unique(score, return_inverse=True)[1].ravel()
        counts = [np.bincount(levels[side], minlength=levels.max() + 1)[None, :]
                  for side in (truth, ~truth)]
        auc, advantage, _ = _curves(*counts)  # the module's own, vectorised over resamples
        fpr, tpr, _ = roc_curve(truth, score)
        assert auc[0] == pytest.approx(roc_auc_score(truth, score))
        assert advantage[0] == pytest.approx(max(tpr - fpr))


def _toy() -> Schema:
    return Schema.from_dict({"columns": [
        {"name": "x", "kind": "numeric", "lower": 0, "upper": 100, "public": True},
        {"name": "c", "kind": "categorical", "categories": ["a", "b"], "public": True}]})


def test_a_small_case_by_hand():
    """Three members, two of them released verbatim and one 2 units away; six held-out rows,
    each 30 or more units from every released row. By hand: exact copies find 2 of 3
    members and no held-out row (advantage 2/3, AUC (2·3 + ½·3)/9); the closest record
    finds all three at a threshold of 2 units (advantage 1, AUC 1)."""
    members = pd.DataFrame({"x": [10.0, 20.0, 40.0], "c": ["a", "b", "a"]})
    release = pd.DataFrame({"x": [10.0, 20.0, 42.0], "c": ["a", "b", "a"]})
    holdout = pd.DataFrame({"x": [80.0, 85.0, 90.0, 95.0, 100.0, 75.0], "c": ["b"] * 6})
    found = {a.name: a for a in risk(members, release, holdout, _toy(), 1.0, 0.0)}
    assert found["exact copies"].advantage == pytest.approx(2 / 3)
    assert found["exact copies"].auc == pytest.approx(7.5 / 9)
    assert found["closest record"].advantage == pytest.approx(1.0)
    assert found["closest record"].auc == pytest.approx(1.0)
    # 1 > (e − 1)/(e + 1), but three rows a side cannot tell that from chance: not flagged
    assert not found["closest record"].above_bound
    assert found["rare rows reproduced"].detail["why"].startswith("fewer than")


@pytest.fixture(scope="module")
def census():
    from synth.data import load_sample

    table, schema = load_sample()
    train, validation, test = protocol_split(table)
    return train, pd.concat([validation, test], ignore_index=True), schema


def test_real_rows_and_their_bootstrap_are_flagged(census):
    """The controls: the table itself as a 'release' is found nearly perfectly by its
    closest records, and a non-private bootstrap of it (each row kept with chance
    1 − 1/e) well above what ε = 1 allows; both are flagged."""
    train, holdout, schema = census
    itself = {a.name: a for a in risk(train, train, holdout, schema, 1.0, 1e-5)}
    assert itself["closest record"].advantage > 0.9 and itself["closest record"].above_bound
    bootstrap = train.sample(len(train), replace=True, random_state=0)
    resampled = {a.name: a for a in risk(train, bootstrap, holdout, schema, 1.0, 1e-5)}
    assert resampled["exact copies"].above_bound
    assert 0.5 < resampled["exact copies"].advantage < 0.7  # about 1 − 1/e of the rows kept


@pytest.mark.parametrize("method", ["independent", "mst", "aim", "gsd", "dpselect", "dpgan"])
def test_a_dp_release_stays_under_every_bound(census, method):
    """Each method's default release at ε = 1 (private sampling refuses a table this wide):
    no figure above its bound, none flagged, no membership figure past twice chance."""
    train, holdout, schema = census
    model = make(method)
    model.fit(train, schema, Budget(1.0, 1e-5), FitContext(postprocessing_seed=0))
    attacks = risk(train, model.sample(len(train)), holdout, schema, 1.0, 1e-5)
    assert {a.kind for a in attacks} == {"membership", "attribute"}
    for attack in attacks:
        assert not attack.above_bound, attack
        if not math.isnan(attack.advantage):
            assert attack.advantage <= attack.bound, attack
    membership = [a for a in attacks if a.kind == "membership" and a.chance is not None]
    assert all(a.advantage <= 2 * a.chance for a in membership), membership


def test_the_command_prints_each_attack_beside_its_bound(tmp_path, census):
    train, holdout, schema = census
    paths = {}
    for name, frame in (("train", train), ("holdout", holdout),
                        ("copy", train.sample(len(train), replace=True, random_state=1))):
        paths[name] = tmp_path / f"{name}.csv"
        frame.to_csv(paths[name], index=False)
    schema_file = tmp_path / "schema.json"
    schema_file.write_text(json.dumps(schema.to_dict()))
    done = synth("risk", paths["train"], paths["copy"], "--schema", schema_file,
                 "--holdout", paths["holdout"], "--epsilon", "1", "--delta", "1e-5",
                 "--json", "--quiet")
    assert done.returncode == 0, done.stderr
    def refuse(constant):
        raise AssertionError(f"not JSON: {constant}")

    attacks = json.loads(done.stdout, parse_constant=refuse)
    assert all({"name", "advantage", "bound"} <= set(a) for a in attacks)
    assert any(a["above_bound"] for a in attacks)  # a bootstrap is no DP release
    text = synth("risk", paths["train"], paths["copy"], "--schema", schema_file,
                 "--holdout", paths["holdout"], "--epsilon", "1")
    assert "ABOVE ITS BOUND" in text.stdout and "attacking:" in text.stderr


@pytest.mark.parametrize("extra, message", [
    ([], "--ledger or the --epsilon"),
    (["--epsilon", "1", "--sensitive", "age"], "'age' must be categorical"),
    (["--epsilon", "1", "--sensitive", "salary"], "'salary' is not in the schema"),
])
def test_bad_arguments_get_one_line_naming_them(tmp_path, census, extra, message):
    train, holdout, schema = census
    for name, frame in (("train", train), ("holdout", holdout)):
        frame.to_csv(tmp_path / f"{name}.csv", index=False)
    (tmp_path / "schema.json").write_text(json.dumps(schema.to_dict()))
    done = synth("risk", tmp_path / "train.csv", tmp_path / "train.csv", "--schema",
                 tmp_path / "schema.json", "--holdout", tmp_path / "holdout.csv", *extra)
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert message in lines[-1] and not any("Traceback" in line for line in lines)


def test_the_steward_report_shows_the_risk_from_the_runs_ledger(tmp_path, census):
    """`synth report --real --holdout` adds the attacks, bounded by the ledger's own totals;
    a hold-out without the real rows is refused by name."""
    train, holdout, schema = census
    for name, frame in (("train", train), ("holdout", holdout)):
        frame.to_csv(tmp_path / f"{name}.csv", index=False)
    (tmp_path / "schema.json").write_text(json.dumps(schema.to_dict()))
    made = synth("run", tmp_path / "train.csv", "--schema", tmp_path / "schema.json",
                 "--method", "independent", "--epsilon", "4", "--delta", "1e-6", "--out",
                 tmp_path / "synth.csv", "--ledger", tmp_path / "ledger.json",
                 home=tmp_path / "home")
    assert made.returncode == 0, made.stderr
    done = synth("report", tmp_path / "ledger.json", "--synthetic", tmp_path / "synth.csv",
                 "--real", tmp_path / "train.csv", "--holdout", tmp_path / "holdout.csv",
                 "--out", tmp_path / "steward.html")
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "steward.html").read_text()
    assert "Privacy risk" in page and "closest record" in page
    assert f"{membership_bound(4.0, 1e-6):.3f}" in page and "ABOVE ITS BOUND" not in page
    refused = synth("report", tmp_path / "ledger.json", "--synthetic", tmp_path / "synth.csv",
                    "--holdout", tmp_path / "holdout.csv", "--out", tmp_path / "r.html")
    assert refused.returncode != 0 and "--holdout needs --real" in refused.stderr


def _people(table: pd.DataFrame, parts: int) -> list[pd.DataFrame]:
    """``table`` cut into ``parts`` groups of whole people (the panel's person_id)."""
    ids = table["person_id"].unique()
    group = dict(zip(ids, np.random.default_rng(0).permutation(len(ids)) % parts,
                     strict=True))
    return [table[table["person_id"].map(group) == g] for g in range(parts)]


def test_a_release_of_other_people_is_not_flagged_whatever_the_guarantee():
    """A release made from people who are neither members nor held out says nothing about
    membership: even at ε = 0 (every bound 0) no figure is flagged, for hold-outs of any
    size. On the panel, a person's months are near copies of each other, so the hold-out is
    cut by person (the ledger's unit): cut by row, the density ratio would find the
    held-out rows in the reference and read the release as leaking."""
    from synth.data import load_sample

    table, schema = load_sample("panel")
    members, holdout, others = _people(table, 3)
    for seed in range(3):
        for held in (holdout, holdout[holdout["person_id"].isin(
                holdout["person_id"].unique()[:3])]):
            attacks = risk(members, others, held, schema, 0.0, 0.0, unit="person_id",
                           seed=seed)
            assert not any(a.above_bound for a in attacks), attacks
    by_row = {a.name: a for a in risk(members, others, holdout, schema, 0.0, 0.0)}
    by_person = {a.name: a for a in risk(members, others, holdout, schema, 0.0, 0.0,
                                         unit="person_id")}
    assert by_row["density ratio"].above_bound and not by_person["density ratio"].above_bound


def test_the_margin_holds_a_null_attack_to_its_rate():
    """The flag's margin: over many pairs of samples from one distribution, the best
    TPR − FPR exceeds margin(m, n, 5 %) about 5 % of the time, not more."""
    rng = np.random.default_rng(1)
    m = n = 300
    truth = np.arange(m + n) < m
    over = 0
    for _ in range(400):
        score = rng.random(m + n)
        levels = np.unique(score, return_inverse=True)[1].ravel()
        counts = [np.bincount(levels[side], minlength=m + n)[None, :]
                  for side in (truth, ~truth)]
        over += _curves(*counts)[1][0] > risk_margin(m, n, 0.05)
    assert over / 400 <= 0.08


def test_a_schema_without_bounds_is_refused_naming_the_column(census):
    train, holdout, schema = census
    from dataclasses import replace

    unbounded = replace(schema, columns=tuple(
        replace(c, lower=None, upper=None, public=False) if c.name == "age" else c
        for c in schema))
    with pytest.raises(Exception, match="column 'age' has no bounds"):
        risk(train, train, holdout, unbounded, 1.0, 1e-5)
