"""Releases without artefacts the real table lacks (issue 36, item 2): blanks only where a
column may have them and its noisy count says it does, whole numbers as whole numbers,
other numbers at their declared precision."""

from __future__ import annotations

import dataclasses
import io

import numpy as np
import pandas as pd
import pytest

from synth.methods import make
from synth.privacy.budget import Budget
from synth.privacy.domains import BLANKS_SCALES, has_blanks
from synth.privacy.events import Laplace
from synth.privacy.mechanisms import replayable_noise
from synth.release import csv_text
from synth.schema import NUMERIC, Column, Schema

from .conftest import script


@pytest.fixture(scope="module")
def bank_schema():
    """Bank's codebook, every number declared to allow blanks (as `schema infer` proposes
    for every number: which columns have blanks is the table's business)."""
    schema = Schema.from_dict(script("make_bank_data").public_schema())
    return dataclasses.replace(schema, columns=tuple(
        dataclasses.replace(c, missing="indicator") if c.kind == NUMERIC else c
        for c in schema))


@pytest.mark.parametrize("method", ["independent", "mst"])
def test_blanks_only_where_the_noisy_count_finds_them(bank, bank_schema, method):
    """The steward's walk: Bank has no blanks, yet the independent release had 61 blank
    cells and GSD's 377 across 7 columns. Each number's blank count is learned in the
    domain share: here only pdays (82 % blank) keeps blanks in the release."""
    table = bank.iloc[:8000]
    model = make(method, make(method).quick)
    with replayable_noise(11):
        model.fit(table, bank_schema, Budget(1.0, 1e-5))
    released = model.sample()
    blank = {c for c in released.columns if released[c].isna().any()}
    assert blank == {"pdays"}
    assert 0.7 < released["pdays"].isna().mean() < 0.9
    learned = {c.name: c.blanks for c in model.schema_ if c.kind == NUMERIC}
    assert learned == {c: c == "pdays" for c in learned}
    counted = [e for e in model.ledger_.entries if e.stage == "domain"]
    assert len(counted) == 7 and all(isinstance(e.event, Laplace) for e in counted)
    # whole numbers stay whole: int64 where nothing is blank, nullable Int64 in pdays
    assert all(released[c].dtype == np.int64 for c in learned if c != "pdays")
    assert released["pdays"].dtype == "Int64"
    text = csv_text(released.head(50))
    assert ".0," not in text and ".0\r\n" not in text


def test_a_blank_count_within_its_noise_of_zero_says_none_at_the_stated_rate():
    """An empty column passes ``BLANKS_SCALES`` Laplace scales with probability ½·e^−3."""
    event = Laplace(100.0, 1.0)
    with replayable_noise(3):
        empty = np.mean([has_blanks(0, event) for _ in range(20_000)])
        many = np.mean([has_blanks(int(6 * event.scale), event) for _ in range(2_000)])
    assert empty == pytest.approx(0.5 * np.exp(-BLANKS_SCALES), abs=0.006)
    assert many > 0.9


def test_numbers_are_released_at_their_declared_precision(sample):
    table, schema = sample
    table = table.assign(ratio=pd.to_numeric(table["hours_per_week"]) / 7.0,
                         share=pd.to_numeric(table["age"]) / 13.0)
    schema = Schema((*schema.columns,
                     Column("ratio", NUMERIC, 0.0, 15.0, public=True),
                     Column("share", NUMERIC, 0.0, 7.0, public=True, digits=3)),
                    target=schema.target)
    model = make("independent").fit(table, schema, Budget(1.0, 1e-5))
    released = model.sample()
    for name, digits in (("ratio", 6), ("share", 3)):
        x = released[name].to_numpy()
        assert np.all(x == np.array([float(f"{v:.{digits}g}") for v in x]))
        assert x.std() > 0  # not collapsed to a few values
    written = pd.read_csv(io.StringIO(csv_text(released)), dtype=str)
    for name, digits in (("ratio", 6), ("share", 3)):  # no 16-digit tails in the file
        mantissas = written[name].str.split("e").str[0].str.replace(r"[-.]", "", regex=True)
        assert mantissas.str.lstrip("0").str.len().max() <= digits


def test_digits_are_a_declaration_checked_by_name():
    with pytest.raises(Exception, match="column 'x': digits must be a whole number from 1 to 17"):
        Column("x", NUMERIC, 0, 1, public=True, digits=0)
    assert "digits" not in Column("x", NUMERIC, 0, 1, public=True).to_dict()
    assert Column("x", NUMERIC, 0, 1, public=True, digits=4).to_dict()["digits"] == 4
