"""Issue 49, item 4: defaults that run. A refusal names the way out, and the app takes it in
one click: a domain share, an ε within the slider, columns left out, a batch size."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from synth.errors import BudgetError
from synth.plan import EPSILON_STEPS
from synth.runs import Run

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
    names is on the slider; past the slider it offers leaving the columns out instead."""
    make = script("make_shaped_data")
    for rows, changes in ((2_000, {"domain_share"}), (30, {"leave_out"})):
        table = make.generate("customers", rows=rows)
        schema = make.schema_for(table)
        refusal = Run("independent", schema, 1.0, 1e-5, rows=rows).plan.refusals[0]
        assert isinstance(refusal, BudgetError)
        offered = {name for f in refusal.fixes for name, _ in f.changes}
        assert changes <= offered, refusal.fixes
        for f in refusal.fixes:
            settings = dict(f.changes)
            assert settings.get("epsilon", 1.0) in EPSILON_STEPS
            if "leave_out" in settings:
                schema_after = schema.drop(settings["leave_out"])
                assert not Run("independent", schema_after, 1.0, 1e-5,
                               rows=rows).plan.refusals
            else:
                shares = {"domain": settings["domain_share"]}
                assert not Run("independent", schema, settings.get("epsilon", 1.0), 1e-5,
                               shares=shares, rows=rows).plan.refusals, f


@pytest.mark.parametrize("public", [False, True])
def test_the_customer_tables_refusal_is_one_click_from_a_run(home, public):
    """The walk's customer table at its defaults is refused: every domain private, it needs
    ε = 2 (on the slider); with its categories and known domains public, a larger domain
    share. One click on the first way out, and the plan runs."""
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
    fix(at, "Give the domain share" if public else "Raise ε to 2,")
    assert REFUSED not in texts(at), texts(at)
    assert not next(b for b in at.button if b.label == "Run").disabled


def test_a_thirty_row_table_is_one_click_from_a_plan_that_runs(home):
    """No ε on the slider learns bounds from 30 rows: the button leaves those columns out,
    as the Data page would (and keeps it: the Data page shows them left out). DP-GAN's
    batch size, larger than the table, has its own button."""
    at = opened(customers(30), "tiny.csv")
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
