"""The Synthesize page's method parameters, drawn from the methods' declared constraints."""

import pytest
from streamlit.testing.v1 import AppTest

from synth.methods import METHODS
from synth.methods.dpselect.rows import DISTANCES

from .conftest import REPO

SYNTH = "app_pages/synthesize.py"


@pytest.fixture(scope="module")
def page():
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=120)
    at.run()
    at.switch_page(SYNTH).run()
    assert not at.exception
    return at


def widgets(node) -> dict:
    """Every parameter widget under ``node`` by parameter name."""
    found = [*node.number_input, *node.selectbox, *node.checkbox, *node.text_input]
    return {w.key.rsplit(":", 1)[1]: w for w in found if (w.key or "").startswith("param:")}


def advanced(at):
    (box,) = [e for e in at.expander if e.label == "Advanced"]
    return box


def test_dpselect_shows_engine_as_a_choice_and_hides_the_rest(page):
    page.selectbox[0].set_value("dpselect").run()
    engine = page.selectbox(key="param:dpselect:engine")
    assert engine.options == ["measure", "rows", "ga"] and engine.value == "measure"
    assert engine.label == "Selection engine" and "DP simple GA" in engine.help
    assert any("Gaussian, zCDP" in m.value for m in page.markdown)  # the measurements' σ
    assert any("**Time**: about" in m.value for m in page.markdown)  # before a run
    page.selectbox[0].set_value("independent").run()  # a second or so: not rounded up to 5 s
    assert any("**Time**: a few seconds" in m.value for m in page.markdown)
    page.selectbox[0].set_value("dpselect").run()
    inside = widgets(advanced(page))
    assert set(widgets(page)) - set(inside) == {"engine", "pool_multiplier", "gan__epochs"}
    assert inside["distance"].options == list(DISTANCES)  # a select box, not free text
    assert inside["p_c"].label == "Crossover probability (p_c)"
    assert inside["p_c"].min == 0 and inside["p_c"].max == 1  # the declared interval
    assert inside["generations"].value is None  # empty: the paper's table at the ε
    assert "gan_share" not in widgets(page)  # the budget slider sets it
    page.selectbox(key="param:dpselect:engine").set_value("ga").run()
    assert not page.exception and any("selections per section" in m.value
                                      for m in page.markdown)
    assert any("**Time**: no estimate" in m.value for m in page.markdown)  # no cost model


@pytest.mark.parametrize("method", list(METHODS))
def test_every_parameter_has_a_widget_with_words_and_help(page, method):
    page.selectbox[0].set_value(method).run()
    cls = METHODS[method]
    shown = widgets(page)
    assert set(shown) == set(cls.params) - {cls.share_param}
    for name, w in shown.items():
        assert "_" not in w.label.split(" (")[0] and w.help, (name, w.label)
        assert (name in widgets(advanced(page))) == cls.params[name].advanced
    assert not page.exception
