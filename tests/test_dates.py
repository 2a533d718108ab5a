"""Dates and times as a column kind: inference, encoding, release, learned bounds."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from synth import dates, missing
from synth.data import read_table
from synth.declarations import declaration, nice_dates, round_bounds, warnings
from synth.errors import SchemaError
from synth.methods import FitContext, make
from synth.privacy.budget import Budget
from synth.runs import run
from synth.schema import (
    DATE_FIELDS,
    DATE_VALUES,
    DATETIME,
    Column,
    Schema,
    edit_column,
    infer_schema,
    prepare,
)

STAMPS = st.datetimes(min_value=pd.Timestamp("1900-01-01").to_pydatetime(),
                      max_value=pd.Timestamp("2100-12-31").to_pydatetime())


def signups(n: int, seed: int = 0, fmt: str = "%Y-%m-%d") -> pd.DataFrame:
    """A customer table: a sign-up date over 2020–2021, busier in the second year, with a
    plan that depends on it and an age."""
    rng = np.random.default_rng(seed)
    days = np.where(rng.random(n) < 0.3, rng.integers(0, 366, n), rng.integers(366, 731, n))
    when = pd.Timestamp("2020-01-01") + pd.to_timedelta(days, unit="D")
    plan = np.where(days > 500, rng.choice(["pro", "basic"], n, p=[0.7, 0.3]),
                    rng.choice(["pro", "basic"], n, p=[0.2, 0.8]))
    return pd.DataFrame({"signup_date": when.strftime(fmt), "plan": plan,
                         "age": rng.integers(18, 80, n)})


def public(schema: Schema, lower: str, upper: str) -> Schema:
    col = replace(schema["signup_date"], lower=lower, upper=upper)
    return schema.replace_column(col).confirm().declare_public()


@settings(max_examples=60, deadline=None)
@given(st.lists(STAMPS, min_size=1, max_size=30), st.sampled_from(dates.GRANULARITIES),
       st.sampled_from(dates.TIMEZONES))
def test_a_date_column_round_trips_through_model_space_at_its_granularity(stamps, granularity,
                                                                          timezone):
    unit = {'day': 'D', 'month': 'M', 'year': 'Y', 'hour': 'h', 'minute': 'm',
            'second': 's'}[granularity]
    floored = pd.DatetimeIndex(stamps).to_numpy().astype(f"datetime64[{unit}]")
    whole = pd.DatetimeIndex(floored.astype("datetime64[s]"))
    col = Column("d", DATETIME, lower="1899-01-01", upper="2101-12-31", public=True,
                 granularity=granularity, timezone=timezone)
    schema = Schema((col,))
    finer = [s for s, w in zip(stamps, whole, strict=True) if s != w]
    if finer:  # a value finer than the granularity is refused, never cut to its unit
        with pytest.raises(SchemaError, match=f"finer than a {granularity}"):
            prepare(pd.DataFrame({"d": [s.isoformat() for s in stamps]}), schema)
    text = pd.Series([s.isoformat() for s in whole])
    prepared = prepare(pd.DataFrame({"d": text}), schema)
    # the model sees whole units counted from the origin (the lower bound), from 0 upward
    model = missing.encode(prepared, schema)
    assert missing.model_schema(schema)["d"].kind == "numeric"
    assert (model["d"] >= 0).all() and (model["d"] == model["d"].round()).all()
    back = dates.released(missing.decode(model, schema), schema)
    want = pd.Series(whole)
    if timezone == "UTC":
        want = want.dt.tz_localize("UTC")
    assert list(back["d"]) == list(want.dt.strftime(dates.release_format(col)))
    again = prepare(back, schema)  # a release reads back as the very same units
    assert (again["d"] == prepared["d"]).all()


def test_inference_proposes_dates_and_flags_an_ambiguous_day_month_order():
    table = pd.DataFrame({
        "iso": ["2021-03-04", "2021-11-30", "", "2020-02-29"],
        "dmy": ["04/03/2021", "30/11/2021", "", "29/02/2020"],  # 30 and 29: day first
        "either": ["04/03/2021", "05/11/2021", "", "01/02/2020"],
        "stamp": ["2021-03-04T10:15:00Z", "2021-03-04T11:00:00+01:00", "", "2021-03-05"],
        "month": ["2021-03", "2021-04", "2021-05", "2021-07"],
        "year": [1990, 2005, 2010, 2020],  # numbers stay numbers
        "code": ["A-1", "B-2", "C-3", "D-4"],
        "version": ["1.2.3", "1.10.2", "2.0.1", "12.4.30"]})
    schema = infer_schema(table)
    assert {c.name for c in schema if c.kind == DATETIME} == {"iso", "dmy", "either", "stamp",
                                                               "month"}
    assert all(c.proposed and not c.public for c in schema)  # proposals, data-derived
    assert schema["dmy"].input_format == "%d/%m/%Y" and not any(
        "ambiguous" in f for f in schema["dmy"].flags)
    assert any("day/month order is ambiguous" in f for f in schema["either"].flags)
    # the coarsest unit that holds every value: 10:15 and 10:00 are whole minutes
    assert (schema["stamp"].granularity, schema["stamp"].timezone) == ("minute", "UTC")
    assert schema["month"].granularity == "month"
    assert schema["iso"].missing == "indicator"
    assert schema["year"].kind != DATETIME
    assert schema["code"].kind == schema["version"].kind == "categorical"
    frame = prepare(table, schema)
    assert frame["stamp"].iloc[1] == frame["stamp"].iloc[0] - 15  # 11:00+01 is 10:00 UTC (minutes)
    # a date column with a few typos stays a category, and says why
    typos = [f"2021-{m:02d}-{d:02d}" for m in range(1, 13) for d in range(1, 29)] + ["2021-13-x"]
    noted = infer_schema(pd.DataFrame({"d": typos}))["d"]
    assert noted.kind == "categorical" and any(
        "mostly dates, but 1 of its 337 distinct values" in f for f in noted.flags)
    # zoned values in a column switched to naive are refused when the edit is applied
    with pytest.raises(SchemaError, match=r"'stamp': 2 of its 3 present values carry a time "):
        edit_column(schema["stamp"], table["stamp"], DATETIME, timezone="naive")
    # switched to a category and back with the page's blank format box: read as proposed
    dmy = schema["dmy"]
    again = edit_column(edit_column(dmy, table["dmy"], "categorical"), table["dmy"], DATETIME,
                        input_format=None, origin=None, format=None)
    assert again.input_format == "%d/%m/%Y" and (again.lower, again.upper) == (dmy.lower,
                                                                               dmy.upper)
    # keeping the proposed order on the Data page is the steward's choice: the flag goes
    either = schema["either"]
    kept = edit_column(either, table["either"], DATETIME, input_format=either.input_format)
    assert not any("day/month" in f for f in kept.flags) and kept.lower == either.lower


def test_inference_reads_parquet_timestamps_and_dates():
    import datetime as dt
    import io

    frame = pd.DataFrame({
        "day": [dt.date(2021, 3, 4), None, dt.date(2022, 1, 1)],
        "utc": pd.to_datetime(["2021-03-04T10:00:00", "2021-03-05T00:00:00",
                               "2021-03-06T00:00:00"]).tz_localize("UTC"),
        "naive": pd.to_datetime(["2021-03-04T10:00:00", "2021-03-05T00:00:00", None])})
    raw = io.BytesIO()
    frame.to_parquet(raw)
    schema = infer_schema(read_table(raw.getvalue()))
    assert [c.kind for c in schema] == [DATETIME] * 3
    assert (schema["day"].granularity, schema["day"].shown(schema["day"].upper)) == (
        "day", "2022-01-01")
    assert (schema["utc"].timezone, schema["naive"].timezone) == ("UTC", "naive")
    assert schema["utc"].granularity == "hour"  # always on the hour: released on the hour
    assert schema["utc"].shown(schema["utc"].lower) == "2021-03-04T10:00Z"


def test_the_schema_file_writes_dates_and_reads_them_back(tmp_path):
    col = Column("d", DATETIME, lower="2020-01-01", upper="2021-12-31", public=True,
                 origin="2020-01-01", format="%d.%m.%Y", input_format="%d/%m/%Y",
                 missing="fill", fill_value="2020-06-30")
    path = tmp_path / "s.json"
    Schema((col,)).save(path)
    written = json.loads(path.read_text())["columns"][0]
    assert {k: written[k] for k in ("lower", "upper", "origin", "fill_value", "granularity",
                                    "timezone", "format", "input_format")} == {
        "lower": "2020-01-01", "upper": "2021-12-31", "origin": "2020-01-01",
        "fill_value": "2020-06-30", "granularity": "day", "timezone": "naive",
        "format": "%d.%m.%Y", "input_format": "%d/%m/%Y"}
    assert Schema.load(path)["d"] == col
    plain = Schema((Column("n", "numeric", 0, 1, public=True),)).to_dict()["columns"][0]
    assert "granularity" not in plain  # a number's file says nothing of dates


def test_the_steward_switches_a_column_to_dates_and_back():
    values = pd.Series(["2021-03-04", "2021-05-06", None, "2020-01-01"])
    col = infer_schema(pd.DataFrame({"d": values, "x": [1, 2, 3, 4]}))["d"]
    as_text = edit_column(col, values, "categorical")
    assert as_text.kind == "categorical" and "2021-03-04" in as_text.categories
    back = edit_column(as_text, values, DATETIME)
    assert back.kind == DATETIME and back.proposed
    assert (back.shown(back.lower), back.shown(back.upper)) == ("2020-01-01", "2021-05-06")
    with pytest.raises(SchemaError, match="finer than a month"):  # days are never cut
        edit_column(back, values, DATETIME, granularity="month")
    monthly = edit_column(back, values.str[:7], DATETIME, granularity="month",
                          origin="2019-12-01")
    assert (monthly.shown(monthly.lower), monthly.shown(monthly.origin)) == ("2020-01",
                                                                            "2019-12")
    bounded = edit_column(monthly, values, DATETIME, lower=pd.Timestamp("2019-01-01"),
                          upper="2022-12")
    assert (bounded.shown(bounded.lower), bounded.shown(bounded.upper)) == ("2019-01",
                                                                            "2022-12")
    with pytest.raises(SchemaError, match="column 'x' cannot be datetime"):
        edit_column(Column("x", "categorical", categories=("a", "b")),
                    pd.Series(["a", "b"]), DATETIME)


def test_one_bound_edited_alone_keeps_the_other():
    """The Data page passes on only the bound a steward changed: the other one stays (it
    was refused as 'give both bounds', and the box kept showing the refused value)."""
    values = pd.Series(["2021-03-04", "2021-05-06", "2020-01-01"])
    col = infer_schema(pd.DataFrame({"d": values, "x": [1, 2, 3]}))["d"]
    wider = edit_column(col, values, DATETIME, upper="2021-12-31")
    assert (wider.shown(wider.lower), wider.shown(wider.upper)) == ("2020-01-01",
                                                                    "2021-12-31")
    number = Column("n", "numeric", lower=0, upper=10)
    assert edit_column(number, pd.Series([1.0]), "numeric", lower=-5).upper == 10


def test_a_format_that_loses_the_granularity_is_refused():
    with pytest.raises(SchemaError, match="column 'd': format '%Y-%m' does not write a day"):
        Column("d", DATETIME, granularity="day", format="%Y-%m")
    with pytest.raises(SchemaError, match="column 'd': granularity must be one of"):
        Column("d", DATETIME, granularity="week")
    with pytest.raises(SchemaError, match=r"column 'n': \['granularity'\] apply to datetime"):
        Column("n", "numeric", granularity="day")


def test_the_monthly_marginal_of_a_release_matches_the_real_one_within_the_noise():
    table = signups(20_000)
    schema = public(infer_schema(table), "2020-01-01", "2021-12-31")
    model = make("independent", {"exact_integers": 731}).fit(  # a cell per day
        table, schema, Budget(2.0, 1e-5), FitContext(postprocessing_seed=0))
    out = model.sample()
    sigma = next(e.event.sigma for e in model.ledger_.entries
                 if e.stage == "measure")  # each day's count's noise
    real, synth = (pd.to_datetime(t["signup_date"]).dt.to_period("M").value_counts(
        normalize=True).sort_index() for t in (table, out))
    assert list(synth.index) == list(real.index)  # every month, none outside 2020–2021
    days = pd.Series(real.index.days_in_month, index=real.index)
    n = len(table)
    # a month sums its days' noise; sampling n rows adds the multinomial spread
    spread = np.sqrt(days * sigma**2 / n**2 + real * (1 - real) / n)
    assert (np.abs(synth - real) < 5 * spread + 1e-3).all(), (synth - real).abs().max()
    assert out["signup_date"].str.fullmatch(r"\d{4}-\d\d-\d\d").all()


def test_a_public_date_range_is_the_only_range_released():
    table = signups(3000)  # data from 2020-01-01 to 2021-12-31
    schema = public(infer_schema(table, target="plan"), "2018-01-01", "2023-12-31")
    release = run(table, schema, "mst", 1.0, 1e-5, postprocessing_seed=0,
                  measure=False).release
    files = release.files()
    stated = json.loads(next(v for k, v in files.items() if k.endswith(".json")))
    col = next(c for c in stated["schema"]["columns"] if c["name"] == "signup_date")
    assert (col["lower"], col["upper"]) == ("2018-01-01", "2023-12-31")
    assert not any(e["stage"] == "domain" and "bounds" in e["description"]
                   for e in stated["entries"])  # nothing was learned about the range
    told = b"".join(v for k, v in files.items() if not k.endswith(".csv"))
    for extreme in (table["signup_date"].min(), table["signup_date"].max()):
        assert extreme.encode() not in told
    out = release.synthetic["signup_date"].dropna()
    assert out.between("2018-01-01", "2023-12-31").all()


def test_learned_date_bounds_count_from_a_public_origin():
    table = signups(3000)
    schema = infer_schema(table).confirm().declare_public(["plan", "age"])
    with pytest.raises(SchemaError, match=r"date column 'signup_date' has bounds to "
                                          "learn privately.*origin"):
        make("independent").fit(table, schema, Budget(4.0, 1e-5))
    anchored = schema.replace_column(replace(schema["signup_date"], origin="2019-07-01"))
    model = make("independent").fit(table, anchored, Budget(4.0, 1e-5))
    col = model.schema_["signup_date"]
    assert col.learned and col.origin == anchored["signup_date"].origin
    # near the data (2020-01-01 to 2021-12-31, 184 to 914 days from the origin): an end may
    # overshoot by an octave of days (40 draws reached 2019-04 and 2025-02), never by decades,
    # and cuts off few rows
    lo, hi = (pd.Timestamp(col.shown(v)) for v in (col.lower, col.upper))
    assert pd.Timestamp("2015-01-01") < lo and hi < pd.Timestamp("2030-01-01")
    real = pd.to_datetime(table["signup_date"])
    assert ((real < lo) | (real > hi)).mean() <= 0.05
    assert model.sample(200)["signup_date"].between(col.shown(col.lower),
                                                    col.shown(col.upper)).all()


def test_a_release_holds_no_input_format_and_its_declaration_names_every_date_field():
    table = signups(1000, fmt="%d.%m.%Y")
    schema = infer_schema(table).confirm().declare_public(["plan", "age"])
    assert schema["signup_date"].input_format == "%d.%m.%Y"  # read off the private file
    schema = schema.replace_column(replace(schema["signup_date"], origin="2019-01-01"))
    record = run(table, schema, "independent", 1.0, 1e-5, postprocessing_seed=0)
    assert "error" not in record.scores
    assert not any("could not" in c.text for c in record.checklist)
    files = record.release.files(report=True)
    assert "run.json" in files and "ledger.json" in files
    for name, blob in files.items():
        assert b"%d.%m.%Y" not in blob, name
    stated = json.loads(files["ledger.json"])["schema"]["columns"]
    released = Schema.from_dict({"columns": stated})
    assert released["signup_date"].input_format is None
    # the private file was still read as it is written (else the run refuses its dates)
    assert record.synthetic["signup_date"].notna().any()
    public = Column("d", DATETIME, lower="2019-01-01", upper="2022-12-31", public=True,
                    origin="2018-06-01", format="%d/%m/%Y", timezone="UTC",
                    missing="fill", fill_value="2020-06-30")
    for col in (public, released["signup_date"]):
        line = declaration(col)
        written = Schema((col,)).public_view().to_dict()["columns"][0]
        for field in (*DATE_FIELDS, *DATE_VALUES):
            if written[field] is not None:
                assert str(written[field]) in line, (field, line)


def test_an_origin_or_fill_date_the_table_holds_is_warned_about_with_a_round_date():
    table = signups(500)
    table.loc[0, "signup_date"] = "1987-04-22"  # one person's early record
    base = infer_schema(table).confirm().declare_public(["plan", "age"])
    col = base["signup_date"]
    earliest = col.lower
    some = dates.unit_of(table["signup_date"].iloc[5], "day", "naive", "a date")
    for public in (False, True):
        for origin, fill in ((earliest, None), (None, some), (col.upper, some)):
            declared = replace(col, origin=origin, public=public,
                               missing="fill" if fill is not None else "indicator",
                               fill_value=fill)
            said = [w for w in warnings(base.replace_column(declared), table)
                    if "'signup_date'" in w]
            for name, value in (("origin", origin), ("fill date", fill)):
                if value is None:
                    continue
                line = next(w for w in said if f"the {name} {col.shown(value)}" in w)
                suggested = line.split("such as ")[1].split(" ")[0]
                assert suggested.endswith("-01-01"), line  # a year's start
                units = dates.unit_of(suggested, "day", "naive", "a date")
                assert units <= value
                assert suggested not in set(table["signup_date"])
    # a round origin the table does not hold says nothing
    calm = replace(col, origin="1980-01-01")
    assert not any("origin" in w for w in warnings(base.replace_column(calm), table))


STEPS = [m * 10**k for k in range(4) for m in (1, 2, 5)]  # 1, 2 or 5 × 10^k years


@settings(max_examples=80, deadline=None)
@given(st.lists(st.datetimes(min_value=pd.Timestamp("0001-01-01").to_pydatetime(),
                             max_value=pd.Timestamp("9999-12-31").to_pydatetime()),
                min_size=2, max_size=2), st.sampled_from(dates.GRANULARITIES))
def test_nice_dates_step_with_the_span_and_stay_within_the_limits(stamps, granularity):
    lower, upper = sorted(dates.unit_of(s.isoformat(), granularity, "naive", "a date")
                          for s in stamps)
    lo, hi = nice_dates(lower, upper, granularity)
    first, last = dates.limits(granularity)
    assert first <= lo <= lower and upper <= hi <= last
    assert lo < lower or lower == first
    assert hi > upper or upper == last
    start, end = (pd.Timestamp(dates.stamps_of(np.array([v]), granularity)[0])
                  for v in (lower, upper))
    span = (end - start) / pd.Timedelta(days=365.25)
    years = [dates.stamps_of(np.array([lo]), granularity)[0]]
    if hi < last:
        years.append(dates.stamps_of(np.array([hi + 1]), granularity)[0])
    assert all((y.month, y.day, y.hour) == (1, 1, 0) for y in years)  # years' starts
    if lo > first:  # about a tenth of the span, at least a year: extremes' years hidden
        assert any(all(y.year % step == 0 for y in years) and span / step <= 10
                   and (step == 1 or span / step > 4) for step in STEPS), (years, span)


def test_a_sentinel_date_is_warned_about_and_rounds_within_the_limits():
    for sentinel, side in (("9999-12-31", "upper"), ("0001-01-01", "lower")):
        table = pd.DataFrame({"valid_to": ["2020-05-01", "2021-03-02", sentinel],
                              "x": ["a", "b", "a"]})
        schema = infer_schema(table).confirm().declare_public(["valid_to", "x"])
        said = [w for w in warnings(schema, table) if "'valid_to'" in w]
        assert any(f"no {side} bound lies beyond {sentinel}" in w for w in said), said
        rounded = round_bounds(schema, table, ["valid_to"])["valid_to"]
        assert rounded.shown(getattr(rounded, side)) == sentinel
        said = [w for w in warnings(schema.replace_column(rounded), table)
                if "'valid_to'" in w]
        assert any(f"no {side} bound lies beyond {sentinel}" in w for w in said), said


@pytest.mark.parametrize("text", ["2020-06-01T10+05:00", "2020-06-01T1000+0500",
                                  "20200601T100000+0500", "2020-06-01T10Z"])
def test_a_naive_column_refuses_every_zoned_form(text):
    values = pd.Series(["2020-01-01T10:00:00", text, "2020-01-02T00:00:00"])
    naive = Column("d", DATETIME, granularity="second", public=False)
    with pytest.raises(SchemaError, match=r"column 'd': 1 values carry a time zone") as err:
        prepare(pd.DataFrame({"d": values}), Schema((naive,)))
    assert "2020-06" not in str(err.value)  # counted, never shown
    utc = replace(naive, timezone="UTC")
    read = prepare(pd.DataFrame({"d": values}), Schema((utc,)))["d"]
    assert read.notna().all()
    wall = dates.unit_of("2020-06-01T10:00:00", "second", "UTC", "a date")
    assert wall - 5 * 3600 <= read[1] <= wall  # converted to UTC, not taken as wall time


def test_a_release_is_read_in_its_own_format_and_the_private_table_in_its_input_format():
    from synth.checklist import release_checklist
    from synth.evaluation import marginal_tvd
    from synth.plots import marginal_charts
    from synth.quality import quality

    real = signups(1500, fmt="%m/%d/%Y")  # US order: 01/06/2021 is the 6th of January
    col = Column("signup_date", DATETIME, "2020-01-01", "2021-12-31", public=True,
                 input_format="%m/%d/%Y", format="%d/%m/%Y")
    schema = Schema((col, Column("plan", "categorical", categories=("basic", "pro"),
                                 public=True)))
    units = prepare(real, schema)["signup_date"]
    # the same rows as a release writes them: day first
    release = real.assign(signup_date=dates.released(
        pd.DataFrame({"signup_date": units}), schema)["signup_date"])
    assert (release["signup_date"] != real["signup_date"]).any()
    back = prepare(release, schema, released=True)["signup_date"]
    assert (back == units).all()
    fidelity = marginal_tvd(real, release, schema)
    assert fidelity.per_column["signup_date"] == 0  # the same dates, read alike
    assert quality(real, release, schema).shapes["signup_date"] == 1
    assert not any("outside" in c.text for c in release_checklist(real, release, schema))
    chart = marginal_charts(real, {"release": release}, schema, ["signup_date"])[0]
    assert list(chart.data[0].y) == list(chart.data[1].y)


@pytest.mark.parametrize("granularity, input_format, value", [
    ("day", None, "2020"), ("day", None, "2020-05"), ("day", None, 2020),
    ("day", None, 2020.0), ("second", None, "2020-05"), ("month", None, "2020"),
    ("day", "%d/%m/%Y", "2020-05-01"), ("day", "%d/%m/%Y", 2020),
    ("day", "%m/%d/%Y", "13/01/2020"), ("day", "%d/%m/%Y", "2020")])
def test_a_private_value_is_read_in_its_declared_format_or_counted_as_not_a_date(
        granularity, input_format, value):
    col = Column("d", DATETIME, granularity=granularity, input_format=input_format,
                 format="%d/%m/%Y" if granularity == "day" else None, missing="indicator")
    good = {"day": "2020-05-01", "month": "2020-05", "second": "2020-05-01T10:00:00"}[
        granularity]
    if input_format is not None:
        good = pd.Timestamp(good).strftime(input_format)
    table = pd.DataFrame({"d": pd.Series([good, value, good], dtype=object)})
    with pytest.raises(SchemaError, match=r"column 'd': 1 values are not dates") as err:
        prepare(table, Schema((col,)))
    assert str(value) not in str(err.value)  # counted, never shown
    assert prepare(table.iloc[[0, 2]], Schema((col,)))["d"].notna().all()


@pytest.mark.parametrize("start", dates.GRANULARITIES)
@pytest.mark.parametrize("to", dates.GRANULARITIES)
def test_a_granularity_change_keeps_every_instant_of_the_public_range(start, to):
    bounds = {"day": ("2020-01-01", "2021-12-31"), "month": ("2020-01", "2021-12"),
              "year": ("2020", "2021"), "hour": ("2020-01-01T00:00", "2021-12-31T23:00"),
              "minute": ("2020-01-01T00:00", "2021-12-31T23:59"),
              "second": ("2020-01-01T00:00:00", "2021-12-31T23:59:59")}[start]
    col = Column("d", DATETIME, granularity=start, lower=bounds[0], upper=bounds[1],
                 public=True)
    edges = pd.Series(["2020-01-01T00:00:00", {  # the range's ends, at the new granularity
        "day": "2021-12-31", "month": "2021-12-01", "year": "2021-01-01",
        "hour": "2021-12-31T23:00:00", "minute": "2021-12-31T23:59:00",
        "second": "2021-12-31T23:59:59"}[to]])
    new = edit_column(col, edges, DATETIME, granularity=to)
    read = prepare(pd.DataFrame({"d": edges}), Schema((new,)))["d"]
    assert [dates.unit_of(e, to, "naive", "a date") for e in edges] == list(read)  # no clip
    assert (new.lower, new.upper) == tuple(read)  # and no wider


def test_declaring_the_input_format_reads_data_derived_bounds_again():
    values = pd.Series(["01/02/2020", "03/04/2020", "12/11/2020", "02/01/2020", None])
    col = infer_schema(pd.DataFrame({"d": values, "x": list("ababa")}))["d"]
    assert any("day/month order" in f for f in col.flags)  # either order reads them all
    confirmed = replace(col, proposed=False, origin="2019-01-01")
    fixed = edit_column(confirmed, values, DATETIME, input_format="%m/%d/%Y")
    read = prepare(pd.DataFrame({"d": values}), Schema((replace(
        fixed, lower=None, upper=None),)))["d"].dropna()
    assert (fixed.lower, fixed.upper) == (read.min(), read.max())  # the file's order
    assert fixed.proposed and not any("day/month order" in f for f in fixed.flags)
    assert fixed.origin == confirmed.origin  # the steward's other choices stay
    public = replace(col, public=True)  # a declared domain is the steward's: kept
    kept = edit_column(public, values, DATETIME, input_format="%m/%d/%Y")
    assert (kept.lower, kept.upper) == (public.lower, public.upper)
    with pytest.raises(SchemaError, match=r"column .d. cannot be datetime by day: 4 of its 4 "
                                          "present values do not read as dates in .%Y-%m-%d."):
        edit_column(col, values, DATETIME, input_format="%Y-%m-%d")


def test_a_two_digit_year_release_format_is_refused():
    with pytest.raises(SchemaError, match=r"column 'd': format '%d/%m/%y' writes two-digit "
                                          "years"):
        Column("d", DATETIME, lower="1940-01-01", upper="1965-12-31", format="%d/%m/%y")
    assert Column("d", DATETIME, format="%d/%m/%Y").format == "%d/%m/%Y"


@pytest.mark.parametrize(("granularity", "lower", "upper", "ticks"),
                         [("month", "2019-01", "2023-12", "%b %Y"), ("year", "1990", "2023", "%Y"),
                          ("day", "2020-01-01", "2021-12-31", None)])
def test_a_month_or_year_axis_names_months_or_years_not_a_day_inside(granularity, lower, upper,
                                                                   ticks):
    """Issue 49: bars of a month column stand at their middle day; the axis names months."""
    from synth.plots import marginal_charts

    col = Column("joined", DATETIME, lower, upper, public=True, granularity=granularity)
    schema = Schema((col,))
    table = pd.DataFrame({"joined": [lower, upper]})
    chart = marginal_charts(table, {"release": table}, schema, ["joined"])[0]
    assert chart.layout.xaxis.type == "date" and chart.layout.xaxis.tickformat == ticks
