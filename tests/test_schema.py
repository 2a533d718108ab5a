"""Schema inference, JSON round-trip and preparing a table against a schema."""

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from synth.data import read_table
from synth.errors import SchemaError
from synth.schema import MISSING, OTHER, Column, Schema, edit_column, infer_schema, prepare


def test_inference_on_text_cells():
    rows = [f"{20 + i},{1 + i % 3},{'yes' if i % 2 else 'no'},{['Paris', 'Lyon', ''][i % 3]},"
            f"{'' if i % 7 == 0 else i / 4},{75001 + 17 * i}" for i in range(40)]
    csv = ("age,code,flag,city,score,zip\n" + "\n".join(rows) + "\n").encode()
    schema = infer_schema(read_table(csv))
    kinds = {c.name: c.kind for c in schema}
    assert kinds == {"age": "numeric", "code": "categorical", "flag": "categorical",
                     "city": "categorical", "score": "numeric", "zip": "numeric"}
    # an age's domain by its name (synth.meaning), never the table's 20–59
    assert schema["age"].integer and (schema["age"].lower, schema["age"].upper) == (0, 120)
    assert schema["age"].meaning == "an age in years is 0–120"
    assert (schema["zip"].lower, schema["zip"].upper) == (75001, 75001 + 17 * 39)
    assert not schema["score"].integer
    assert schema["code"].categories == ("1", "2", "3")
    assert schema["flag"].categories == ("no", "yes")
    assert schema["city"].categories == ("Lyon", "Paris", MISSING)
    assert any("missing values" in f for f in schema["score"].flags)
    assert all(not c.public for c in schema)  # inferred domains are data-derived


def test_inference_on_typed_columns():
    table = pd.DataFrame({"b": [True, False] * 20, "f": np.linspace(0, 1, 40),
                          "i": np.arange(40) % 4, "k": ["x"] * 40})
    schema = infer_schema(table)
    assert schema["b"].kind == "categorical" and schema["b"].categories == ("False", "True")
    assert schema["f"].kind == "numeric"
    assert schema["i"].kind == "categorical" and schema["i"].categories == ("0", "1", "2", "3")
    assert any("constant" in f for f in schema["k"].flags)


def test_adult_inference_matches_the_protocol_kinds(adult):
    schema = infer_schema(adult, target="income")
    numeric = {c.name for c in schema if c.kind == "numeric"}
    assert numeric == {"age", "fnlwgt", "education-num", "capital-gain", "capital-loss",
                       "hours-per-week"}
    assert "?" in schema["workclass"].categories  # "?" is a category of its own
    assert schema.target == "income"


def test_json_round_trip_keeps_extra_keys(tmp_path):
    schema = Schema((Column("age", "numeric", 17, 90, public=True, integer=True),
                     Column("c", "categorical", categories=("a", "b"), flags=("note",))),
                    target="c", extra={"source": "survey 2024"})
    path = tmp_path / "s.json"
    schema.save(path)
    again = Schema.load(path)
    assert again == schema and again.extra["source"] == "survey 2024"


def test_contract_json_form_loads():
    text = ('{"target": "y", "columns": ['
            '{"name": "x", "kind": "numeric", "lower": 0, "upper": 10, "public": true, '
            '"comment": "extra keys are fine"},'
            '{"name": "y", "kind": "categorical", "categories": [0, 1], "public": false}]}')
    schema = Schema.from_json(text)
    assert schema["x"].lower == 0.0 and schema["y"].categories == ("0", "1")


@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", " c ", "", None]), min_size=1, max_size=30))
def test_prepare_is_idempotent_for_categoricals(values):
    table = pd.DataFrame({"x": values, "y": [1.0] * len(values)})
    schema = infer_schema(table)
    once = prepare(table, schema)
    assert prepare(once, schema).equals(once)
    assert set(once["x"]) <= set(schema["x"].categories)


def test_prepare_clips_rounds_fills_and_keeps_every_row():
    table = pd.DataFrame({"n": ["5", "200", "", "-3", "7.6"], "m": ["1", "", "2", "3", "4"],
                          "c": ["a", "zz", None, "a", "a"]})
    schema = Schema((Column("n", "numeric", 0, 100, integer=True, public=True,
                            missing="indicator"),
                     Column("m", "numeric", 0, 10, missing="fill", fill_value=0, public=True),
                     Column("c", "categorical", categories=("a", OTHER, MISSING), public=True)))
    out = prepare(table, schema)
    assert out["n"].tolist()[:2] + out["n"].tolist()[3:] == [5, 100, 0, 8]  # clipped, rounded
    assert np.isnan(out["n"][2])  # kept: its indicator is learned
    assert out["m"].tolist() == [1, 0, 2, 3, 4]
    assert out["c"].tolist() == ["a", OTHER, MISSING, "a", "a"]  # unseen folds into "other"


def test_declare_public_and_drop():
    schema = infer_schema(pd.DataFrame({"a": ["x", "y"] * 5, "b": range(10), "t": [0, 1] * 5}),
                          target="t")
    assert not schema.releasable
    public = schema.declare_public()
    assert public.releasable
    assert [c.public for c in public.declare_public(["a"])] == [True, False, False]
    dropped = public.drop(["t"])
    assert dropped.names == ["a", "b"] and dropped.target is None
    with pytest.raises(Exception, match="unknown columns"):
        schema.drop(["zz"])


def test_public_view_keeps_only_what_may_be_released():
    schema = infer_schema(pd.DataFrame({"secret": ["x", "y", "z"] * 10, "n": range(30),
                                        "open": ["a", "b", "c"] * 10}))
    schema = schema.declare_public(["open"])
    view = schema.public_view()
    assert view["secret"].categories is None and view["n"].lower is None
    assert view["open"].categories == ("a", "b", "c")
    assert all(not c.flags for c in view)
    assert Schema.from_json(json.dumps(view.to_dict())) == view


def test_edit_column_changes_kind_and_domain():
    values = pd.Series([1, 2, 2, 7])
    col = Column("x", "numeric", lower=1, upper=7, integer=True, public=True)
    as_cats = edit_column(col, values, "categorical")
    assert as_cats.kind == "categorical" and as_cats.categories == ("1", "2", "7")
    assert not as_cats.public  # a domain read off the table is data-derived again
    back = edit_column(as_cats, values, "numeric")
    assert (back.lower, back.upper, back.integer) == (1.0, 7.0, True)
    widened = edit_column(col, values, "numeric", lower=0, upper=100)
    assert (widened.lower, widened.upper, widened.public) == (0.0, 100.0, True)
    renamed = edit_column(as_cats, values, "categorical", categories=["1", "2", "7", "9"])
    assert renamed.categories == ("1", "2", "7", "9")
    with pytest.raises(SchemaError, match="'x' cannot be numeric"):
        edit_column(as_cats, pd.Series(["a", "b"]), "numeric")
    with pytest.raises(SchemaError, match="lower bound 5 is above upper 1"):
        edit_column(col, values, "numeric", lower=5, upper=1)
    with pytest.raises(SchemaError, match="kind must be"):
        edit_column(col, values, "text")


def test_months_and_weekdays_are_proposed_in_calendar_order():
    """The steward's walk: months sorted alphabetically (apr, aug, dec, …)."""
    table = pd.DataFrame({"month": ["may", "jan", "dec", "feb", "oct"] * 20,
                          "day": ["Tue", "Mon", "Sun", "Fri", "Wed"] * 20,
                          "city": ["Porto", "Braga", "Aveiro", "Faro", "Lisbon"] * 20})
    schema = infer_schema(table)
    assert schema["month"].categories == ("jan", "feb", "may", "oct", "dec")
    assert schema["day"].categories == ("Mon", "Tue", "Wed", "Fri", "Sun")
    assert schema["city"].categories == ("Aveiro", "Braga", "Faro", "Lisbon", "Porto")


def test_a_kinds_warning_goes_when_the_column_changes_kind():
    """The steward's walk: a "1,668 categories" warning stayed after the column was made
    numeric; a warning true of any kind (identifier-like) stays."""
    values = pd.Series([f"{i:,}" for i in range(1000, 3000)] * 2)
    col = infer_schema(pd.DataFrame({"balance": values, "other": "x"}))["balance"]
    assert any("categories" in f for f in col.flags)
    numeric = edit_column(col, values.str.replace(",", ""), "numeric")
    assert not any("categories" in f or "stored as text" in f for f in numeric.flags)
    ids = pd.Series([str(i) for i in range(500)])
    col = infer_schema(pd.DataFrame({"id": ids, "other": "x"}))["id"]
    back = edit_column(col, ids, "categorical")
    assert any("identifier-like" in f for f in back.flags)
    assert not any("missing values" in f for f in back.flags)
