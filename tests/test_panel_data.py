"""The bundled person-month panel is made by its script, fits its public schema, and has
several rows per person (the unit-of-protection demo's table)."""

import subprocess
import sys

import pandas as pd
import pytest

from synth.data import read_table
from synth.privacy.unit import PrivacyUnit, population
from synth.runs import run
from synth.schema import Schema, validate

from .conftest import REPO

TABLE = REPO / "sample_data" / "panel_demo.csv"
SCHEMA = REPO / "sample_data" / "panel_demo.schema.json"


@pytest.fixture(scope="module")
def panel():
    return read_table(TABLE), Schema.load(SCHEMA)


def test_script_regenerates_the_committed_files(tmp_path):
    res = subprocess.run([sys.executable, str(REPO / "scripts" / "make_panel_data.py"),
                          "--out-dir", str(tmp_path)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    for path in (TABLE, SCHEMA):
        assert (tmp_path / path.name).read_bytes() == path.read_bytes(), path.name


def test_panel_fits_its_public_schema_without_the_unit_column(panel):
    table, schema = panel
    assert schema.releasable and schema.target == "employed"
    assert "person_id" not in schema.names and "person_id" in table.columns
    assert TABLE.stat().st_size < 1_500_000
    prepared = validate(table.drop(columns="person_id"), schema)
    assert len(prepared) == len(table) and list(prepared.columns) == schema.names


def test_rows_per_person_vary(panel):
    table, _ = panel
    per_person = table["person_id"].value_counts()
    assert 1_000 <= len(per_person) <= 2_000
    assert per_person.min() == 1 and per_person.max() >= 12
    assert (per_person == 1).sum() > 100 and (per_person >= 12).sum() > 100
    # a person's months are distinct, and their person-level traits do not change
    assert not table.duplicated(["person_id", "month"]).any()
    assert (table.groupby("person_id")[["sex", "region"]].nunique() == 1).all().all()
    # hours are 0 when not employed, and mostly 40 otherwise
    hours = pd.to_numeric(table["hours_per_week"])
    assert (hours[table["employed"] == "no"] == 0).all()
    worked = hours[table["employed"] == "yes"]
    assert (worked == 40).mean() > 0.3


def test_a_run_protecting_persons_keeps_at_most_k_rows_each(panel):
    table, schema = panel
    unit = PrivacyUnit("person_id", 3)
    kept = population(table, unit)
    assert kept.units == table["person_id"].nunique() and kept.rows < len(table)
    record = run(table, schema, "independent", 1.0, unit=unit, postprocessing_seed=0,
                 measure=False)
    assert "person_id" not in record.synthetic.columns
    assert kept.units <= len(record.synthetic) <= 3 * kept.units  # n̂, within [U, kU]
    assert record.ledger["total_epsilon"] <= 1.0 + 1e-9
