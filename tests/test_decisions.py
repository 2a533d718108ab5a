"""Issue 49, item 1: the steward's declarations are kept per table and restored when the same
table is opened again (a reload, a new tab, a server restart), and the store keeps no value
of the table: a domain not declared public is read again from the table."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from synth.decisions import Decisions, restore
from synth.errors import SchemaError
from synth.privacy.unit import PrivacyUnit
from synth.schema import as_numbers, edit_column, infer_schema, read_as_numbers

from .conftest import REPO
from .test_app import COMPARE, SYNTH, finished, run, texts

DATA = "app_pages/data.py"


def shaped(n: int = 600, seed: int = 0) -> pd.DataFrame:
    """The shapes a steward's table has: an identifier, an amount written with separators,
    a heavy-tailed delay with blanks, a month (known from its name), a private category, a
    date and a customer id repeated over rows."""
    rng = np.random.default_rng(seed)
    delay = np.where(rng.random(n) < 0.6, rng.integers(-20, 1, n),
                     np.round(15 * rng.pareto(1.2, n))).astype(float)
    delay[rng.random(n) < 0.03] = np.nan
    return pd.DataFrame({
        "ticket": [f"T{i:06d}" for i in range(n)],
        "amount": [f"{x:,}" for x in rng.integers(1_000, 250_000, n)],
        "delay": delay,
        "month": rng.integers(3, 10, n),
        "segment": rng.choice(["Orchid", "Basalt", "Quill"], n, p=[0.6, 0.3, 0.1]),
        "joined": [f"2023-{m:02d}-{d:02d}" for m, d in zip(rng.integers(1, 13, n),
                                                           rng.integers(1, 29, n), strict=True)],
        "customer": rng.integers(0, n // 3, n),
    })


def decided(table: pd.DataFrame) -> tuple[pd.DataFrame, Decisions]:
    """A steward's decisions: amount read as numbers, the month's known domain and the
    segment list declared public, segment the target, ticket left out, customers protected
    with k = 3, all confirmed."""
    inferred = infer_schema(table)
    converted = table.assign(amount=as_numbers(table["amount"]))
    base = inferred.replace_column(read_as_numbers(inferred["amount"], table["amount"]))
    base = base.declare_public(["month", "segment"]).confirm()
    from dataclasses import replace
    return converted, Decisions(replace(base, target="segment"), ("ticket",),
                                PrivacyUnit("customer", 3))


def test_kept_decisions_hold_no_value_of_the_table_and_restore_exactly():
    table = shaped()
    converted, decisions = decided(table)
    proposal = infer_schema(table)
    kept = json.dumps(decisions.to_dict(proposal))
    for private in ("T000001", table["amount"][0], str(int(converted["amount"].max())),
                    str(float(np.nanmax(table["delay"]))), "2023-", "Basalt"):
        assert private not in kept, private  # identifiers, bounds, dates, categories
    again, back = restore(json.loads(kept), table, proposal)
    pd.testing.assert_frame_equal(again, converted)
    assert back == decisions  # the public domains proposed again, the others read again
    assert back.working().names == [c for c in table.columns
                                     if c not in ("ticket", "customer")]


def test_what_inference_read_never_reaches_the_store():
    """An auditor's finds: a month's proposed list says whether the column has blanks, a
    single value decides a date's day/month order, and a kind no one confirmed is read off
    the rows. None of them is kept; the steward's own choices are."""
    rng = np.random.default_rng(3)
    days = [f"{d:02d}/{m:02d}/2020" for d, m in zip(rng.integers(1, 13, 60),
                                                    rng.integers(1, 13, 60), strict=True)]
    clean = pd.DataFrame({"weekday": rng.integers(0, 7, 60), "when": days,
                          "age": rng.integers(20, 70, 60)})
    odd = clean.astype(object)  # a blank, a fraction, and a date only month-first reads
    odd.loc[0, ["weekday", "age", "when"]] = [None, 30.5, "02/13/2020"]
    assert infer_schema(clean)["when"].input_format != infer_schema(odd)["when"].input_format

    def kept(table: pd.DataFrame, confirm: bool = False) -> dict:
        proposal = infer_schema(table)
        schema = proposal.confirm() if confirm else proposal
        return Decisions(schema).to_dict(proposal)

    assert kept(clean) == kept(odd)  # blanks, a fraction: the proposal's, not kept
    assert kept(clean, confirm=True) == kept(odd, confirm=True)
    assert "input_format" not in json.dumps(kept(clean, confirm=True))
    proposal = infer_schema(clean)  # day first, flagged: the steward says month first
    reordered = proposal.replace_column(edit_column(proposal["when"], clean["when"], "datetime",
                                                    input_format="%m/%d/%Y"))
    body = Decisions(reordered).to_dict(proposal)
    assert '"%m/%d/%Y"' in json.dumps(body)  # the steward's word is kept
    assert restore(body, clean, proposal)[1].schema == reordered
    # a known domain edited is the steward's, no longer the meaning's (a default not written)
    edited = proposal.replace_column(edit_column(proposal["age"], clean["age"], "numeric",
                                                 lower=18, upper=99)).declare_public(["age"])
    back = restore(Decisions(edited).to_dict(proposal), clean, proposal)[1].schema
    assert back == edited and back["age"].meaning is None


def test_decisions_that_no_longer_fit_the_table_are_refused_by_name():
    table = shaped()
    kept = decided(table)[1].to_dict(infer_schema(table))
    other = table.rename(columns={"delay": "late"})
    with pytest.raises(SchemaError, match="other columns"):
        restore(kept, other, infer_schema(other))
    with pytest.raises(SchemaError, match="another version"):
        restore({**kept, "version": 0}, table, infer_schema(table))
    # a public fill value the re-read domain no longer holds: the column is named, no value
    from dataclasses import replace
    proposal = infer_schema(table)
    amounts = replace(edit_column(proposal["delay"], table["delay"], "numeric", lower=-1e6,
                                  upper=1e6, missing="fill", fill_value=-999_999.0))
    body = Decisions(proposal.replace_column(amounts)).to_dict(proposal)
    with pytest.raises(SchemaError, match=r"^column 'delay' no longer reads") as refused:
        restore(body, table, proposal)
    assert not any(ch.isdigit() for ch in str(refused.value))


def test_the_store_keeps_a_tables_decisions_and_its_split_seed(tmp_path):
    """One row per table: the latest decisions replace the former; the held-out units' seed
    is drawn once and then the same, and another table's is its own."""
    from synth.store import RunStore

    store = RunStore(tmp_path / "runs.sqlite")
    assert store.decisions("a") is None
    seed = store.split_seed("a")
    store.keep_decisions("a", {"version": 1, "left_out": ["x"]})
    store.keep_decisions("a", {"version": 1, "left_out": ["y"]})
    assert store.decisions("a")[0] == {"version": 1, "left_out": ["y"]}
    again = RunStore(tmp_path / "runs.sqlite")  # another process, or a restart
    assert again.split_seed("a") == seed and again.split_seed("b") != seed
    assert again.decisions("b") is None


def labelled(widgets, label: str):
    return next(w for w in widgets if w.label.startswith(label))


def upload(at: AppTest, data: bytes) -> AppTest:
    at.sidebar.file_uploader[0].set_value(("shaped.csv", data, "text/csv")).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    return at


def test_the_data_page_is_as_the_steward_left_it_after_a_reload_and_a_restart(app):
    """The walk that lost everything: amounts read as numbers, domains declared, customers
    protected, a run; after a reload (a new session, the table uploaded again) and a server
    restart the Data page is as it was and Compare measures the run as it did."""
    data = shaped(3_000).to_csv(index=False).encode()
    upload(app, data)
    app.switch_page(DATA).run()
    next(b for b in app.button if b.label == "Read amount as numbers").click().run()
    public = ["delay", "month", "segment", "joined"]  # amount's bounds are learned
    labelled(app.multiselect, "Columns to leave out").set_value(["ticket"]).run()
    labelled(app.multiselect, "Columns whose domain").set_value(public).run()
    labelled(app.selectbox, "Target column").set_value("segment").run()
    labelled(app.selectbox, "Column naming the person").set_value("customer").run()
    labelled(app.number_input, "At most k rows").set_value(3).run()
    labelled(app.checkbox, "I have checked each column").check().run()
    assert not app.exception and not app.error, [e.value for e in app.error]
    left = app.session_state["dataset"]
    app.switch_page(SYNTH).run()
    app.select_slider[0].set_value(8.0).run()
    run(app)
    assert not app.exception and not app.error, [e.value for e in app.error]
    made = finished(app)[0]
    checklist = [c.text for c in made.checklist]
    for restarted in (False, True):
        if restarted:  # what a server restart leaves: SYNTH_HOME, none of its memory
            st.cache_resource.clear()
            st.cache_data.clear()
        again = upload(AppTest.from_file(str(REPO / "app.py"), default_timeout=600).run(), data)
        ds = again.session_state["dataset"]
        assert ds.schema == left.schema and ds.unit == PrivacyUnit("customer", 3)
        assert ds.schema["amount"].written_as_text and ds.table["amount"].dtype.kind in "if"
        again.switch_page(DATA).run()
        assert not again.exception and not again.error, [e.value for e in again.error]
        assert "are restored" in " ".join(i.value for i in again.info)
        assert labelled(again.multiselect, "Columns to leave out").value == ["ticket"]
        assert labelled(again.multiselect, "Columns whose domain").value == public
        assert labelled(again.selectbox, "Target column").value == "segment"
        assert labelled(again.selectbox, "Column naming the person").value == "customer"
        assert not any(c.label.startswith("I have checked") for c in again.checkbox)
        assert not any(b.label == "Read amount as numbers" for b in again.button)
        # month, known from its name, is declared already: nothing left to declare in a click
        assert not any(b.label.startswith("Declare the") for b in again.button)
        assert again.session_state["dataset"].schema == left.schema  # the page changed nothing
        again.switch_page(SYNTH).run()  # (ε is the session's choice: 1 again, refused)
        assert not again.exception and "still proposals" not in texts(again)
        again.switch_page(COMPARE).run()  # the run's figures, measured again on the table
        assert not again.exception and not again.error, [e.value for e in again.error]
        assert list(again.table[0].value["2-way TVD"]) == pytest.approx(
            [made.record.fidelity.tvd2])
        assert [c.text for c in finished(again)[0].checklist] == checklist


def test_another_table_opens_as_read(app):
    """Decisions are the table's: a table with another row opens with none of them."""
    upload(app, shaped().to_csv(index=False).encode())
    app.switch_page(DATA).run()
    labelled(app.multiselect, "Columns to leave out").set_value(["ticket"]).run()
    other = shaped(seed=1).to_csv(index=False).encode()
    again = upload(AppTest.from_file(str(REPO / "app.py"), default_timeout=600).run(), other)
    again.switch_page(DATA).run()
    assert labelled(again.multiselect, "Columns to leave out").value == []
    assert not again.info or "restored" not in " ".join(i.value for i in again.info)


def test_a_changed_file_under_a_known_name_is_told_its_budget_starts_afresh(app):
    """Issue 49: a file named like a table the account has charged, with other rows, opens
    under an account of its own, and the Data page says so (the same people's budget would
    otherwise be spent twice without a hint)."""
    from synth.account import Store
    from synth.status import FINISHED

    upload(app, shaped().to_csv(index=False).encode())
    ds = app.session_state["dataset"]
    store = Store()
    key = store.key(ds.read_as, ds.former)
    store.settle(store.reserve(key, ds.name, 0.5, 1e-6, "a run"), 0.5, 1e-6, FINISHED)
    again = upload(AppTest.from_file(str(REPO / "app.py"), default_timeout=600).run(),
                   shaped().to_csv(index=False).encode())
    again.switch_page(DATA).run()
    assert not any("Another table named" in w.value for w in again.warning)  # the same rows
    other = upload(AppTest.from_file(str(REPO / "app.py"), default_timeout=600).run(),
                   shaped(seed=1).to_csv(index=False).encode())
    other.switch_page(DATA).run()
    said = " ".join(w.value for w in other.warning)
    assert "Another table named shaped.csv has a privacy account here (ε = 0.5 spent" in said
