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
