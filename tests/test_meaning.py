"""Issue 48, item 1: domains known from a column's meaning, proposed from names and kinds,
never narrowed to the table's values, declared in one step."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from synth.meaning import meant, words
from synth.schema import DATETIME, Schema, infer_schema, prepare

from .test_cli import synth


def flights(n: int = 2_000, seed: int = 0) -> pd.DataFrame:
    """A sample of a flights table: months 3–9 only, hours, a weekday, a percentage, ages,
    years, a HHMM clock time (not an hour), delays and a carrier."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "month": rng.integers(3, 10, n), "DayOfMonth": rng.integers(1, 29, n),
        "dep_hour": rng.integers(0, 24, n), "dep_time": rng.integers(0, 2360, n),
        "day_of_week": rng.integers(0, 7, n), "pct_full": rng.uniform(20, 95, n).round(1),
        "pilot_age": rng.integers(25, 65, n), "build_year": rng.integers(1990, 2020, n),
        "dep_delay": rng.integers(-20, 300, n), "carrier": rng.choice(["AA", "DL"], n)})


@pytest.mark.parametrize(("name", "said"), [
    ("month", "a month"), ("birthMonth", "a month"), ("DayOfMonth", "a day of the month"),
    ("day_of_week", "a weekday"), ("dep_hour", "an hour"), ("minute", "a minute"),
    ("pct_paid", "a percentage"), ("paid %", "a percentage"), ("age", "an age in years"),
    ("build_year", "a year"), ("dep_delay", None), ("page_views", None), ("usage", None),
    ("days_since", None), ("min_temp", None),
    # a period, not a value in it (the walk's customer table warned spend_last_year a year)
    ("spend_last_year", None), ("trips_per_month", None), ("visitsThisMonth", None)])
def test_a_name_says_its_meaning_by_its_words(name, said):
    meaning = meant(name)
    assert (meaning.name if meaning else None) == said, words(name)


def test_known_domains_are_proposed_whole_never_narrowed_to_the_values():
    """Months 3–9 in the table are still proposed 1–12; a column named like an hour that
    holds clock times (0–2359) is left to be learned, and says why."""
    schema = infer_schema(flights())
    assert schema["month"].categories == tuple(str(m) for m in range(1, 13))
    assert (schema["dep_hour"].lower, schema["dep_hour"].upper) == (0, 23)
    assert (schema["DayOfMonth"].lower, schema["DayOfMonth"].upper) == (1, 31)
    assert (schema["pct_full"].lower, schema["pct_full"].upper) == (0, 100)
    assert (schema["pilot_age"].lower, schema["pilot_age"].upper) == (0, 120)
    assert (schema["build_year"].lower, schema["build_year"].upper) == (1900, 2100)
    assert schema["day_of_week"].categories == tuple(str(d) for d in range(7))
    sundays = infer_schema(pd.DataFrame({"weekday": [1, 7] * 20, "x": ["a"] * 40}))
    assert sundays["weekday"].meaning is None  # its convention is not read off the table
    known = [c.name for c in schema if c.meaning]
    assert sorted(known) == sorted(["month", "DayOfMonth", "dep_hour", "day_of_week",
                                    "pct_full", "pilot_age", "build_year"])
    for name in known:  # marked as coming from meaning, and never declared by inference
        assert schema[name].meaning.startswith("a") and not schema[name].public
    assert schema["dep_time"].meaning is None and schema["dep_delay"].meaning is None
    hours = infer_schema(pd.DataFrame({"hour": [0, 517, 2359] * 10, "x": ["a"] * 30}))
    assert hours["hour"].meaning is None and "named like an hour" in hours["hour"].flags[-1]


def test_public_known_declares_every_domain_a_name_means_and_combines(tmp_path):
    table = flights()
    table.to_csv(tmp_path / "f.csv", index=False)
    assert synth("schema", "infer", tmp_path / "f.csv", "--out",
                 tmp_path / "s.json").returncode == 0
    res = synth("schema", "confirm", tmp_path / "s.json", tmp_path / "f.csv", "--public",
                "known")
    assert res.returncode == 0, res.stderr
    schema = Schema.load(tmp_path / "s.json")
    assert {c.name for c in schema if c.public} == {c.name for c in schema if c.meaning}
    assert "month: categorical" in res.stderr and "'12'" in res.stderr
    both = synth("schema", "confirm", tmp_path / "s.json", tmp_path / "f.csv", "--public",
                 "categories,known")
    assert both.returncode == 0, both.stderr
    schema = Schema.load(tmp_path / "s.json")
    assert schema["carrier"].public and schema["dep_hour"].public
    assert not schema["dep_delay"].public and not schema["dep_time"].public


def test_a_release_of_known_domains_holds_only_valid_values(tmp_path):
    """Hours of 24 and months of 0 came out of learned bounds: declared by meaning, the
    release keeps to 0–23 and 1–12 at no cost to the budget."""
    from synth.runs import run

    table = flights(4_000).drop(columns=["dep_time", "dep_delay"])
    schema = infer_schema(table).confirm()
    schema = schema.declare_public([c.name for c in schema if c.meaning or c.name == "carrier"])
    record = run(table, schema, "independent", 1.0, 1e-6, measure=False)
    out = record.synthetic
    assert out["month"].astype(int).between(1, 12).all()
    assert out["dep_hour"].between(0, 23).all() and (out["dep_hour"] % 1 == 0).all()
    learned = [e["description"] for e in record.ledger["entries"] if e["stage"] == "domain"
               and ("bounds of" in e["description"] or "categories of" in e["description"])]
    assert learned == []  # only the numbers' blanks are counted: no domain is learned


def test_the_data_page_declares_known_domains_in_one_click(app):
    from .test_app import labelled

    app.switch_page("app_pages/data.py").run()
    csv = flights().to_csv(index=False).encode()
    app.sidebar.file_uploader[0].set_value(("flights.csv", csv, "text/csv")).run()
    assert not app.exception and not app.error
    offer = labelled(app.button, "Declare the 7 domains known from column names public")
    assert "month (1–12)" in offer.label and "dep_hour (0–23)" in offer.label
    offer.click().run()
    assert not app.exception and not app.error
    chosen = labelled(app.multiselect, "Columns whose domain").value
    assert set(chosen) == {"month", "DayOfMonth", "dep_hour", "day_of_week", "pct_full",
                           "pilot_age", "build_year"}
    assert not [b for b in app.button if b.label.startswith("Declare the 7 domains")]
    assert not any("created with a default value" in str(w.value) for w in app.warning)


def test_a_meanings_domain_is_neither_warned_about_nor_rounded_and_an_edit_is_yours():
    """A steward's walk: an hour declared 0–23 was warned as 'upper 23 is the table's
    maximum … round it to [0, 25]', and the round button would have allowed an hour of 25."""
    from synth.declarations import round_bounds, warnings
    from synth.schema import edit_column

    table = flights()
    schema = infer_schema(table).confirm().declare_public(["dep_hour", "month"])
    assert not [w for w in warnings(schema, table) if "dep_hour" in w or "month" in w]
    rounded = round_bounds(schema, table, ["dep_hour"])
    assert (rounded["dep_hour"].lower, rounded["dep_hour"].upper) == (0, 23)
    edited = edit_column(schema["dep_hour"], table["dep_hour"], "numeric", upper=30)
    assert edited.meaning is None and edited.upper == 30  # the steward's now, and warned of
    kept = edit_column(schema["dep_hour"], table["dep_hour"], "numeric", integer=True)
    assert kept.meaning == "an hour is 0–23"


def test_clock_times_are_a_time_of_day_released_as_valid_times():
    """Item 1: clock times came out with minutes of 62 and hours of 24 (HHMM integers read as
    numbers: 37 % of dep_time rows had minutes ≥ 60), and a timestamp always on the hour was
    released at second granularity, 100 % off the hour. HH:MM text and HHMM integers named
    like a time are a time of day whose domain is the whole day, known without reading the
    table; a timestamp is proposed at the coarsest unit holding every value."""
    from synth.dates import released

    rng = np.random.default_rng(2)
    n = 3_000
    hours, minutes = rng.integers(5, 24, n), rng.integers(0, 60, n)
    table = pd.DataFrame({
        "dep_time": hours * 100 + minutes,  # 517 is 05:17
        "air_time": rng.integers(15, 600, n),  # a duration named 'time' stays a number
        "clock": [f"{h:02d}:{m:02d}" for h, m in zip(hours, minutes, strict=True)],
        "stamp": [f"2024-05-{d:02d} {h:02d}:00" for d, h in zip(
            rng.integers(1, 29, n), hours, strict=True)]})
    schema = infer_schema(table)
    for name in ("dep_time", "clock"):
        col = schema[name]
        assert col.kind == DATETIME and col.granularity == "minute", name
        assert col.meaning == "a time of day is 00:00–23:59", name
        assert (col.shown(col.lower), col.shown(col.upper)) == (
            ("0000", "2359") if name == "dep_time" else ("00:00", "23:59")), name
    assert schema["air_time"].kind == "numeric" and not schema["air_time"].meaning
    # 2400, a day's end in airline schedules, is read as midnight, not as a number
    schedule = table.assign(dep_time=table["dep_time"].where(table.index % 50 > 0, 2400))
    ends = infer_schema(schedule).confirm().declare_public(["dep_time"])
    assert ends["dep_time"].kind == DATETIME
    assert released(prepare(schedule, ends)[["dep_time"]].head(1), ends)["dep_time"][0] == "0000"
    assert schema["stamp"].granularity == "hour"
    # a sample holding 05:00–23:59 is still proposed the whole day
    assert table["dep_time"].min() >= 500
    declared = schema.confirm().declare_public([c.name for c in schema if c.meaning])
    # any value of the day in model space is released as a valid time of day
    everywhere = pd.DataFrame({name: np.linspace(declared[name].lower, declared[name].upper,
                                                 500).round() for name in ("dep_time", "clock")})
    out = released(everywhere, declared)
    clock = out["clock"].str.split(":", expand=True).astype(int)
    assert clock[0].between(0, 23).all() and clock[1].between(0, 59).all()
    hhmm = out["dep_time"].astype(int)
    assert (hhmm // 100).between(0, 23).all() and (hhmm % 100).between(0, 59).all()
    assert out["dep_time"].str.len().eq(4).all()  # '0517', read back as 05:17
    # Compare draws a time of day on a clock, not as 1 January 1900
    from synth.plots import marginal_chart

    chart = marginal_chart(table, {"release": table}, declared, "clock")
    assert chart.layout.xaxis.tickformat == "%H:%M"
