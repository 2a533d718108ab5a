"""Issue 49, item 4: defaults that run. A refusal names the way out, and the app takes it in
one click: a domain share, an ε within the slider, columns left out, a batch size."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from synth.errors import BudgetError
from synth.plan import EPSILON_STEPS
from synth.runs import Run
from synth.schema import infer_schema

from .conftest import REPO, script
from .test_app import SYNTH, texts

REFUSED = "would be refused before spending anything"


def customers(rows: int) -> bytes:
    return script("make_shaped_data").generate("customers", rows=rows).to_csv(
        index=False).encode()


def opened(data: bytes, name: str = "customers.csv") -> AppTest:
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=600).run()
    at.sidebar.file_uploader[0].set_value((name, data, "text/csv")).run()
    at.switch_page("app_pages/data.py").run()
    next(c for c in at.checkbox if c.label.startswith("I have checked")).check().run()
    at.switch_page(SYNTH).run()
    assert not at.exception, at.exception
    return at


def fix(at: AppTest, starts: str) -> None:
    next(b for b in at.button if b.label.startswith(starts)).click().run()
    assert not at.exception, at.exception


@pytest.fixture
def home(monkeypatch, tmp_path):
    monkeypatch.setenv("SYNTH_HOME", str(tmp_path / "home"))


def test_a_refusal_carries_the_ways_out_within_the_sliders():
    """The plan's own figures: the share it names clears the refusal at this ε; an ε it
    names is on the slider; past the slider it offers leaving the columns out instead. Each
    way out clears its own refusal (30 rows have a second: categories none could keep)."""
    make = script("make_shaped_data")
    for rows, changes in ((2_000, {"domain_share"}), (30, {"leave_out"})):
        table = make.generate("customers", rows=rows)
        schema = make.schema_for(table)
        refusals = Run("independent", schema, 1.0, 1e-5, rows=rows).plan.refusals
        refusal = refusals[0]
        assert isinstance(refusal, BudgetError)
        offered = {name for f in refusal.fixes for name, _ in f.changes}
        assert changes <= offered, refusal.fixes
        for f in (f for r in refusals for f in r.fixes):
            settings = dict(f.changes)
            assert settings.get("epsilon", 1.0) in EPSILON_STEPS
            if "leave_out" in settings:
                after = Run("independent", schema.drop(settings["leave_out"]), 1.0, 1e-5,
                            rows=rows)
            else:
                after = Run("independent", schema, settings.get("epsilon", 1.0), 1e-5,
                            shares={"domain": settings["domain_share"]}, rows=rows)
            assert len(after.plan.refusals) < len(refusals), (f, after.plan.refusals)


@pytest.mark.parametrize("public", [False, True])
def test_the_customer_tables_refusal_is_one_click_from_a_run(home, public):
    """The walk's customer table at its defaults is refused: every domain private, it needs
    ε = 2 (on the slider); with its categories and known domains public, ε = 4, which leaves
    no doubt about the bounds. One click on the way out, and the plan runs."""
    at = opened(customers(2_000))
    if public:  # as `schema confirm --public categories,known` declares them
        make = script("make_shaped_data")
        declared = [c.name for c in make.schema_for(make.generate("customers", rows=2_000))
                    if c.public]
        at.switch_page("app_pages/data.py").run()
        next(m for m in at.multiselect if m.label.startswith("Columns whose domain")
             ).set_value(declared).run()
        at.switch_page(SYNTH).run()
    assert REFUSED in texts(at)
    fix(at, "Raise ε to 4," if public else "Raise ε to 2,")
    assert REFUSED not in texts(at), texts(at)
    assert not next(b for b in at.button if b.label == "Run").disabled


def test_categories_none_of_which_could_be_kept_are_refused_not_spent_on():
    """On 30 rows no category learned privately clears its threshold at any ε the slider
    offers: the run would release those columns as 'other' alone, so it is refused with the
    columns to leave out; on 2,000 rows a larger domain share keeps them, and is offered."""
    make = script("make_shaped_data")
    for rows, way_out in ((30, "leave_out"), (2_000, "domain_share")):
        private = infer_schema(make.generate("customers", rows=rows)).confirm()
        refusals = Run("independent", private, 1.0, 1e-5, rows=rows).plan.refusals
        kept = [r for r in refusals if "could be kept" in r.brief]
        assert kept, rows
        offered = {name for r in refusals for f in r.fixes for name, _ in f.changes}
        assert way_out in offered, [r.fixes for r in refusals]
        assert "'other'" in str(kept[0])


def test_a_thirty_row_table_is_one_click_from_a_plan_that_runs(home):
    """No ε on the slider learns bounds from 30 rows: the button leaves those columns out,
    as the Data page would (and keeps it: the Data page shows them left out). DP-GAN's
    batch size, larger than the table, has its own button. The steward has declared the
    categories public (none could be learned from 30 rows)."""
    at = opened(customers(30), "tiny.csv")
    at.switch_page("app_pages/data.py").run()
    categories = ["segment", "region", "channel", "newsletter", "churned", "visits",
                  "children", "support_calls"]
    next(m for m in at.multiselect if m.label.startswith("Columns whose domain")
         ).set_value(categories).run()
    at.switch_page(SYNTH).run()
    assert REFUSED in texts(at)
    fix(at, "Leave out")
    assert REFUSED not in texts(at), texts(at)
    at.switch_page("app_pages/data.py").run()
    left = next(m for m in at.multiselect if m.label.startswith("Columns to leave out"))
    assert "monthly_income" in left.value
    at.switch_page(SYNTH).run()
    at.selectbox(key="choice:method").set_value("dpgan").run()
    assert "must be smaller than the table" in texts(at)
    fix(at, "Use batch size")
    assert "must be smaller than the table" not in texts(at), texts(at)
    assert not next(b for b in at.button if b.label == "Run").disabled


def test_private_sampling_on_a_real_table_offers_another_method(home):
    """A demonstration on small Boolean cubes: on the census sample's 51 bits it is refused,
    and the way out the app takes in one click is another method."""
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=600).run()
    at.switch_page(SYNTH).run()
    at.selectbox(key="choice:method").set_value("private_sampling").run()
    assert REFUSED in texts(at)
    fix(at, "Use MST instead")
    assert at.selectbox(key="choice:method").value == "mst"
    assert REFUSED not in texts(at), texts(at)


def test_two_refusals_share_one_way_out_through_the_budget_and_it_clears_both():
    """The walk's customer table with nothing public is refused twice (bounds, categories):
    two budget buttons at odds (ε = 2 with a share of 0.9, a share of 0.45) left the steward
    to guess; one joint way out clears both refusals, and says what doubt it leaves."""
    make = script("make_shaped_data")
    schema = infer_schema(make.generate("customers", rows=2_000)).confirm()
    refusals = Run("independent", schema, 1.0, 1e-5, rows=2_000).plan.refusals
    assert len(refusals) == 2
    budgeted = [f for r in refusals for f in r.fixes
                if {name for name, _ in f.changes} <= {"epsilon", "domain_share"}]
    assert len(budgeted) == 1, budgeted
    settings = dict(budgeted[0].changes)
    after = Run("independent", schema, settings.get("epsilon", 1.0), 1e-5,
                shares={"domain": settings["domain_share"]}, rows=2_000).plan
    assert not after.refusals
    assert budgeted[0].caveat and after.doubts  # the doubt it leaves is said before and after
