"""The bundled sample is made by the script in the repo and has real structure."""

import subprocess
import sys

import numpy as np

from synth.data import load_sample, sample_paths
from synth.evaluation import majority_rate, marginal_tvd, tree_utility
from synth.protocol import protocol_split
from synth.schema import Schema, validate

from .conftest import REPO


def test_script_regenerates_the_committed_files(tmp_path):
    res = subprocess.run([sys.executable, str(REPO / "scripts" / "make_sample_data.py"),
                          "--out-dir", str(tmp_path)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    table, schema = sample_paths()
    assert (tmp_path / table.name).read_bytes() == table.read_bytes()
    assert (tmp_path / schema.name).read_bytes() == schema.read_bytes()


def test_sample_fits_its_public_schema(sample):
    table, schema = sample
    assert isinstance(schema, Schema) and schema.releasable and schema.target == "income"
    assert 3000 <= len(validate(table, schema)) <= 10_000
    assert {c.kind for c in schema} == {"numeric", "categorical"}


def test_sample_has_dependencies_a_tree_can_learn():
    table, schema = load_sample()
    train, _, test = protocol_split(table)
    accuracy = tree_utility(train, test, schema)["accuracy"]
    assert accuracy > majority_rate(test, "income") + 0.05
    # columns are not independent: shuffling each column separately destroys 2-way structure
    rng = np.random.default_rng(0)
    shuffled = train.apply(lambda c: c.to_numpy()[rng.permutation(len(c))])
    assert marginal_tvd(train, shuffled, schema).tvd2 > 0.05


def test_the_churn_like_table_fits_its_codebook_and_keeps_its_structure():
    """scripts/make_churn_data.py: 7,000 × 20, every value inside the declared domains,
    blanks only in TotalCharges (the first month's), add-ons tied to internet service, and a
    target a tree can learn above its majority rate."""
    from .conftest import script

    make = script("make_churn_data")
    table = make.generate()
    schema = Schema.from_dict(make.public_schema())
    assert table.shape == (7_000, 20) and schema.names == list(table.columns)
    frame = validate(table, schema)
    for col in schema:
        values = table[col.name].dropna()
        if col.kind == "categorical":
            assert set(values.astype(str)) <= set(col.categories), col.name
        else:
            assert values.between(col.lower, col.upper).all(), col.name
    assert table.columns[table.isna().any()].tolist() == ["TotalCharges"]
    assert (table["TotalCharges"].isna() == (table["tenure"] == 0)).all()
    offline = table["InternetService"] == "No"
    for add_on in make.ADD_ONS:
        assert ((table[add_on] == "No internet service") == offline).all(), add_on
    assert 0.2 < (table["Churn"] == "Yes").mean() < 0.35
    train, _, test = protocol_split(frame)
    assert tree_utility(train, test, schema)["accuracy"] > majority_rate(test, "Churn") + 0.02
    learned = Schema.from_dict(make.categories_public())  # no codebook: bounds to learn
    assert all(c.lower is None for c in learned if c.kind == "numeric")
