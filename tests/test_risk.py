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
from synth.risk import (
    _attacks,
    _curves,
    _prepare,
    _rare,
    _Tables,
    attribute_bound,
    membership_bound,
    risk,
)
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


def _points(values) -> np.ndarray:
    return np.array(values, dtype=float)[:, None]


def test_every_membership_attack_on_points_worked_by_hand():
    """Points on a line (whole numbers: distances exact). Members 0, 10, 30; held-out
    targets 40, 60, 90; reference 55, 65, 75; release 0, 0, 0, 11, 40 (k = 3).

    Closest record (−distance): members 0, −1, −10 against held-out 0 (a copy), −20, −50:
    AUC (2.5 + 2 + 2)/9, best TPR − FPR 1 − 1/3 (at −10). Density ratio, log of the 3rd
    nearest reference distance over the 3rd nearest release distance: members
    log(75/0), log(65/10), log(45/30); held-out log(35/40), log(15/60), log(35/90): every
    member above every held-out row (AUC 1, advantage 1): one copy of a held-out row is no
    crowd of release rows. Exact copies: 0 and 40, one a side (advantage 0, AUC ½). Near
    copies: closer than the reference's 1 % quantile of nearest-release distances 15, 25,
    35 (15.2): all members and the held-out 40 (advantage 2/3, AUC (3·½ + 6)/9)."""
    tables = _Tables(3, _points([0, 10, 30, 40, 60, 90]), _points([55, 65, 75]),
                     _points([0, 0, 0, 11, 40]), np.arange(6)[:, None],
                     np.arange(5)[:, None])
    found = {a.name: a for a in _attacks(tables, 1.0, 0.0, np.random.default_rng(0),
                                          lambda _: None)}
    expected = {"closest record": (6.5 / 9, 2 / 3), "density ratio": (1.0, 1.0),
                "exact copies": (0.5, 0.0), "near copies": (7.5 / 9, 2 / 3)}
    for name, (auc, advantage) in expected.items():
        assert (found[name].auc, found[name].advantage) == pytest.approx((auc, advantage)), name
    assert found["near copies"].detail["distance"] == pytest.approx(15.2)
    assert found["density ratio"].detail["k"] == 3
    assert found["closest record"].detail["tpr_at_1pct_fpr"] == 0.0  # no threshold that low
    assert "attribute" not in {a.kind for a in found.values()}  # nothing sensitive named


def test_rare_rows_reproduced_worked_by_hand():
    """30 members and 30 held-out rows, each side 25 unique codes and 5 sharing one; the
    release holds 15 of the members' unique codes, 5 of the held-out rows' and the shared
    one. Rare rows: 25 a side, reproduced 15/25 against 5/25 (advantage 0.4, AUC ½ + 0.4/2);
    the shared code, reproduced on both sides, is not rare and does not count."""
    codes = np.r_[np.arange(25), [200] * 5, np.arange(100, 125), [200] * 5][:, None]
    release = np.r_[np.arange(15), np.arange(100, 105), [200]][:, None]
    tables = _Tables(30, np.zeros((60, 1)), np.zeros((2, 1)), np.zeros((21, 1)), codes,
                     release)
    found = _rare(tables, tables.truth, 0.46, np.random.default_rng(0))
    assert (found.auc, found.advantage) == pytest.approx((0.7, 0.4))
    assert found.detail == {"rare_members": 25, "rare_holdout": 25}


def test_attribute_inference_worked_by_hand_on_a_category_and_a_number():
    """The release says a → yes and x about 52, b → no and x about 5 (every column agrees, so
    the tree's guess does not hang on which it splits on). Guessing y: members (a, 50, yes)
    twice and (b, 3, yes), held-out rows all (b, 3, yes): 2 of 3 members right, no held-out
    row (advantage 2/3; its bound over a held-out rate of 0 is δ). Guessing x to its bin of
    ten (FIDELITY_BINS over 0–100): members (a, 50, yes) twice and (b, 95, no), held-out rows
    all (b, 95, no): 50 and 52 share a bin, 95 and 5 do not: again 2/3 against 0."""
    schema = Schema.from_dict({"columns": [
        {"name": "x", "kind": "numeric", "lower": 0, "upper": 100, "public": True},
        {"name": "c", "kind": "categorical", "categories": ["a", "b"], "public": True},
        {"name": "y", "kind": "categorical", "categories": ["yes", "no"], "public": True}]})
    release = pd.DataFrame({"x": [52.0] * 3 + [5.0] * 3, "c": ["a"] * 3 + ["b"] * 3,
                            "y": ["yes"] * 3 + ["no"] * 3})
    for sensitive, (x, y) in {"y": (3.0, "yes"), "x": (95.0, "no")}.items():
        members = pd.DataFrame({"x": [50.0, 50.0, x], "c": ["a", "a", "b"],
                                "y": ["yes", "yes", y]})
        holdout = pd.DataFrame({"x": [x] * 6, "c": ["b"] * 6, "y": [y] * 6})
        found = risk(members, release, holdout, schema, 1.0, 1e-3, sensitive=sensitive)[-1]
        assert found.name == f"attribute inference of {sensitive!r}"
        assert found.detail == pytest.approx({"member_accuracy": 2 / 3,
                                              "holdout_accuracy": 0.0})
        assert found.advantage == pytest.approx(2 / 3)
        assert found.bound == pytest.approx(1e-3)  # min(e·0 + δ, 1 − e^−1·(1 − δ))
        assert not found.above_bound  # three rows a side prove nothing


def test_a_blank_or_a_date_is_guessed_without_its_indicator():
    """A number with blanks is guessed to its bin or to "missing", and the tree is not shown
    where it is missing (its indicator leaves with it); a date is guessed to its bin; a
    column with nothing to guess it from is not measured."""
    schema = Schema.from_dict({"columns": [
        {"name": "x", "kind": "numeric", "lower": 0, "upper": 100, "public": True,
         "missing": "indicator"},
        {"name": "d", "kind": "datetime", "lower": "2020-01-01", "upper": "2020-12-31",
         "public": True},
        {"name": "c", "kind": "categorical", "categories": ["a", "b"], "public": True}]})
    rows = pd.DataFrame({"x": [1.0, None, 55.0, None, 99.0, 12.0] * 4,
                         "d": ["2020-01-05", "2020-06-01", "2020-12-30"] * 8,
                         "c": ["a", "b"] * 12})
    tables = _prepare(rows[:12], rows[12:], rows[12:], schema, None, "x",
                      np.random.default_rng(0))
    guessed, released = tables.frames
    assert "x (missing)" not in guessed.columns and tables.schema["x"].kind == "categorical"
    # 1, blank, 55, blank, 99, 12 in bins of ten over 0–100, numbered from 0
    assert list(released["x"]) == ["0", "missing", "5", "missing", "9", "1"] * 2
    for sensitive in ("x", "d"):
        found = risk(rows[:12], rows[12:], rows[12:], schema, 1.0, 1e-5,
                     sensitive=sensitive)[-1]
        assert -1 <= found.advantage <= 1 and not found.above_bound, found
    alone = Schema.from_dict({"columns": [schema.to_dict()["columns"][0]]})
    found = risk(rows[["x"]][:12], rows[["x"]][12:], rows[["x"]][12:], alone, 1.0, 1e-5,
                 sensitive="x")[-1]
    assert math.isnan(found.advantage) and "no other column" in found.detail["why"]


@pytest.fixture(scope="module")
def census():
    from synth.data import load_sample

    table, schema = load_sample()
    train, validation, test = protocol_split(table)
    return train, pd.concat([validation, test], ignore_index=True), schema


@pytest.fixture(scope="module", params=["census", "adult"])
def protocol_table(request):
    """(train, hold-out, schema) of the census sample and of Adult, by the protocol's split:
    the release is made from the train split, its validation and test splits held out."""
    if request.param == "census":
        return request.getfixturevalue("census")
    train, validation, test = request.getfixturevalue("adult_parts")
    return (train, pd.concat([validation, test], ignore_index=True),
            request.getfixturevalue("adult_public"))


def test_real_rows_and_their_bootstrap_are_flagged(protocol_table):
    """The controls: the table itself as a 'release' is found nearly perfectly by its
    closest records, and a non-private bootstrap of it (each row kept with chance
    1 − 1/e) well above what ε = 1 allows; both are flagged."""
    train, holdout, schema = protocol_table
    itself = {a.name: a for a in risk(train, train, holdout, schema, 1.0, 1e-5)}
    assert itself["closest record"].advantage > 0.9 and itself["closest record"].above_bound
    bootstrap = train.sample(len(train), replace=True, random_state=0)
    resampled = {a.name: a for a in risk(train, bootstrap, holdout, schema, 1.0, 1e-5)}
    assert resampled["exact copies"].above_bound
    assert 0.5 < resampled["exact copies"].advantage < 0.7  # about 1 − 1/e of the rows kept


METHODS = ["independent", "mst", "aim", "gsd", "dpselect", "dpgan"]


@pytest.mark.parametrize("protocol_table, method",
                         [*(("census", m) for m in METHODS),
                          *(("adult", m) for m in ("independent", "mst", "aim"))],
                         indirect=["protocol_table"])
def test_a_dp_release_stays_under_every_bound(protocol_table, method):
    """Each method's default release at ε = 1 (private sampling refuses tables this wide):
    no figure above its bound, none flagged, no figure past twice chance. Every method on
    the census sample, the quick ones on Adult too: GSD, DP-Select and DP-GAN on Adult took
    six of the suite's 56 minutes on 2 cores; benchmarks/risk.py attacks every method there
    at three ε."""
    train, holdout, schema = protocol_table
    model = make(method)
    model.fit(train, schema, Budget(1.0, 1e-5), FitContext(postprocessing_seed=0))
    attacks = risk(train, model.sample(len(train)), holdout, schema, 1.0, 1e-5)
    assert {a.kind for a in attacks} == {"membership", "attribute"}
    for attack in attacks:
        assert not attack.above_bound, attack
        if not math.isnan(attack.advantage):
            assert attack.advantage <= attack.bound, attack
    measured = [a for a in attacks if a.chance is not None]
    assert all(a.advantage <= 2 * a.chance for a in measured), measured


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
