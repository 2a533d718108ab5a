"""A missing value is a value: no row is dropped, so every n in a fit is the public n."""

import numpy as np
import pandas as pd
import pytest

from synth import missing
from synth.errors import SchemaError
from synth.methods import make
from synth.privacy.budget import Budget
from synth.privacy.mechanisms import replayable_noise
from synth.schema import Column, Schema, prepare


def table(n: int = 2000, share: float = 0.3, seed: int = 0) -> pd.DataFrame:
    """Hours that go missing for most students: missingness correlates with another column."""
    rng = np.random.default_rng(seed)
    student = rng.random(n) < share
    hours = rng.integers(20, 60, n).astype(float)
    hours[student & (rng.random(n) < 0.9)] = np.nan
    return pd.DataFrame({"hours": hours, "role": np.where(student, "student", "staff")})


SCHEMA = Schema((Column("hours", "numeric", 0, 80, integer=True, public=True,
                        missing="indicator"),
                 Column("role", "categorical", categories=("staff", "student"), public=True)))


def test_missing_drop_is_refused_by_name():
    with pytest.raises(SchemaError, match="column 'x': missing='drop' is no longer offered"):
        Column("x", "numeric", 0, 1, missing="drop")


def test_encode_then_decode_gives_back_the_prepared_frame():
    frame = prepare(table(200), SCHEMA)
    model = missing.encode(frame, SCHEMA)
    assert model.columns.tolist() == missing.model_schema(SCHEMA).names
    assert not model.isna().any().any()  # the methods never see a NaN
    back = missing.decode(model, SCHEMA)
    pd.testing.assert_series_equal(back["hours"].astype(float), frame["hours"])


def test_an_indicator_name_never_collides():
    schema = Schema((Column("a", "numeric", 0, 1, missing="indicator"),
                     Column("a (missing)", "categorical", categories=("x",))))
    assert missing.indicator_name(schema, "a") == "a (missing)'"


@pytest.mark.parametrize("method", ["independent", "gsd"])
def test_a_fit_keeps_every_row_and_learns_where_values_are_missing(method):
    real = table()
    model = make(method, {"max_generations": 2000, "one_shot": True} if method == "gsd" else {})
    model.fit(real, SCHEMA, Budget(50.0, 1e-6, model.default_shares(SCHEMA)))
    assert model.n_rows_ == len(real)
    synthetic = model.sample()
    assert len(synthetic) == len(real)
    assert str(synthetic["hours"].dtype) == "Int64"  # whole numbers with blanks
    real_share, synth_share = real["hours"].isna().mean(), synthetic["hours"].isna().mean()
    assert abs(synth_share - real_share) < 0.05, (real_share, synth_share)
    if method == "gsd":  # it learns pairs: the blanks belong to students
        students = synthetic["role"] == "student"
        assert synthetic["hours"][students].isna().mean() > 0.6


def test_neighbours_that_differ_by_a_missing_value_get_the_same_noise():
    real = table(500)
    neighbour = real.copy()
    neighbour.loc[neighbour["hours"].notna().idxmax(), "hours"] = np.nan
    ledgers = []
    for frame in (real, neighbour):
        with replayable_noise(0):
            model = make("independent")
            model.fit(frame, SCHEMA, Budget(1.0, 1e-6, model.default_shares(SCHEMA)))
        assert model.n_rows_ == 500
        ledgers.append([e.event for e in model.ledger_.entries])
    assert ledgers[0] == ledgers[1]


def test_a_real_valued_column_learned_to_have_no_blanks_decodes():
    """pandas 3 hands out read-only views of a float column: the donors' values are
    written into a copy (this crashed sampling any real-valued column with no blanks)."""
    schema = Schema((Column("x", "numeric", 0, 1, public=True, missing="indicator",
                            blanks=False),))
    frame = pd.DataFrame({"x": [0.5, 0.2], "x (missing)": ["missing", "present"]})
    out = missing.decode(frame, schema, np.random.default_rng(0))
    assert list(out["x"]) == [0.2, 0.2]
