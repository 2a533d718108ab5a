"""Every kind of bad input gets a clear message that names the file, column or parameter.

Nothing here may crash with an unrelated exception: each case asserts the error type (a
SynthError, which the CLI and app show as one line) and the words that tell the user what to do.
"""

import io
import json
import os

import numpy as np
import pandas as pd
import pytest

from synth.data import read_table
from synth.errors import BudgetError, DataError, ParameterError, SchemaError
from synth.methods import make, parse_settings
from synth.privacy.budget import Budget
from synth.schema import Column, Schema, infer_schema, prepare, validate

GOOD = b"age,colour,income\n30,red,low\n41,blue,high\n52,red,low\n"


def read_bytes(data: bytes, **kw):
    return read_table(data, **kw)


# ---- files ----------------------------------------------------------------------------------

def test_empty_file(tmp_path):
    path = tmp_path / "empty.csv"
    path.write_bytes(b"")
    with pytest.raises(DataError, match=r"'empty\.csv' is empty"):
        read_table(path)


def test_whitespace_only_file():
    with pytest.raises(DataError, match="is empty"):
        read_bytes(b"\n\n   \n")


def test_header_only():
    with pytest.raises(DataError, match="header but no data rows"):
        read_bytes(b"a,b,c\n")


def test_one_column():
    with pytest.raises(DataError, match=r"only 1 column \('value'\).*delimiter"):
        read_bytes(b"value\n1\n2\n")


def test_ragged_row_too_long():
    with pytest.raises(DataError, match="row 3 has 4 fields but the header has 3"):
        read_bytes(b"a,b,c\n1,2,3\n1,2,3,4\n")


def test_ragged_row_too_short():
    with pytest.raises(DataError, match=r"row 2 has 2 fields but the header has 3 \(and 1 more"):
        read_bytes(b"a,b,c\n1,2\n1,2,3\n5,6\n")


def test_binary_garbage():
    garbage = np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8).tobytes()
    with pytest.raises(DataError, match="binary data"):
        read_bytes(garbage)


def test_binary_without_nul_bytes():
    junk = bytes(range(1, 32)) * 200
    with pytest.raises(DataError, match="binary data"):
        read_bytes(junk)


def test_wrong_explicit_encoding():
    latin = "name,city\nJosé,Zürich\nRenée,Genève\n".encode("latin-1")
    with pytest.raises(DataError, match=r"not valid utf-8 \(byte 0xe9 at position 13\)"):
        read_bytes(latin, encoding="utf-8")


def test_unknown_encoding_name():
    with pytest.raises(DataError, match="unknown encoding 'klingon'"):
        read_bytes(GOOD, encoding="klingon")


def test_file_over_the_size_limit_is_refused_before_reading(tmp_path):
    path = tmp_path / "huge.csv"
    with open(path, "wb") as f:  # a sparse 1 GB file: no disk is used, nothing is read
        f.truncate(1024**3)
    with pytest.raises(DataError, match=r"'huge.csv' is 1.0 GB, over the 200.0 MB limit; "
                                        "raise max_bytes"):
        read_table(path)


def test_upload_over_a_raised_limit_still_refused():
    with pytest.raises(DataError, match="over the 10 bytes limit"):
        read_bytes(GOOD, max_bytes=10)
    assert read_bytes(GOOD, max_bytes=len(GOOD)).shape == (3, 3)


def test_duplicate_column_names():
    with pytest.raises(DataError, match=r"duplicate column names: \['a'\]"):
        read_bytes(b"a,b,a\n1,2,3\n")


def test_empty_column_name():
    with pytest.raises(DataError, match="column 2 has an empty name"):
        read_bytes(b"a,,c\n1,2,3\n")


def test_missing_file():
    with pytest.raises(DataError, match=r"no such file: 'nope\.csv'"):
        read_table("nope.csv")


def test_folder_instead_of_file(tmp_path):
    with pytest.raises(DataError, match="is a folder"):
        read_table(tmp_path)


def test_corrupt_parquet():
    with pytest.raises(DataError, match="looks like Parquet but cannot be read"):
        read_bytes(b"PAR1" + b"\x01\x02" * 100)


def test_unterminated_quote_reports_row_count_mismatch():
    with pytest.raises(DataError):
        read_bytes(b'a,b\n"x,1\n2,3\n')


# ---- schema files and schema vs table ----------------------------------------------------

def test_schema_file_not_json(tmp_path):
    path = tmp_path / "s.json"
    path.write_text("{columns: oops")
    with pytest.raises(SchemaError, match="not valid JSON"):
        Schema.load(path)


def test_schema_file_without_columns():
    with pytest.raises(SchemaError, match="'columns' list"):
        Schema.from_json(json.dumps({"target": "x"}))


def test_schema_column_with_bad_kind():
    with pytest.raises(SchemaError, match="column 'age': kind must be 'numeric' or 'categorical', "
                                          "got 'number'"):
        Schema.from_json(json.dumps({"columns": [{"name": "age", "kind": "number"}]}))


def test_schema_bounds_reversed():
    with pytest.raises(SchemaError, match="column 'age': lower bound 90 is above upper 17"):
        Column("age", "numeric", lower=90, upper=17)


def test_public_numeric_without_bounds():
    with pytest.raises(SchemaError, match="column 'age': a public numeric column needs"):
        Column("age", "numeric", public=True)


def test_public_categorical_without_categories():
    with pytest.raises(SchemaError, match="column 'c': a public categorical column needs"):
        Column("c", "categorical", public=True)


def test_schema_disagrees_with_table_missing_columns():
    table = read_bytes(GOOD)
    schema = Schema((Column("age", "numeric", 0, 100, public=True),
                     Column("height", "numeric", 0, 3, public=True)))
    with pytest.raises(SchemaError, match=r"lacks schema columns \['height'\]"):
        prepare(table, schema)


def test_schema_disagrees_with_table_non_numbers():
    table = read_bytes(b"age,colour\n30,red\nthirty,blue\n41,red\n")
    schema = Schema((Column("age", "numeric", 0, 100, public=True),
                     Column("colour", "categorical", categories=("red", "blue"), public=True)))
    with pytest.raises(SchemaError, match=r"column 'age': 1 values are not numbers \(e\.g\. "
                                          r"\['thirty'\]\)"):
        prepare(table, schema)


def test_category_unseen_in_schema():
    table = read_bytes(GOOD)
    schema = infer_schema(table).replace_column(
        Column("colour", "categorical", categories=("red",), public=True))
    with pytest.raises(SchemaError, match=r"column 'colour': 1 values are not among its 1 "
                                          r"categories \(e\.g\. \['blue'\]\)"):
        prepare(table, schema)


def test_infinite_numbers():
    table = pd.DataFrame({"x": [1.0, np.inf], "c": ["a", "b"]})
    schema = Schema((Column("x", "numeric", 0, 2, public=True),
                     Column("c", "categorical", categories=("a", "b"), public=True)))
    with pytest.raises(SchemaError, match="column 'x': 1 values are infinite"):
        prepare(table, schema)


def test_all_missing_column_is_flagged():
    table = pd.DataFrame({"a": [np.nan] * 30, "b": list("xy") * 15})
    col = infer_schema(table)["a"]
    assert any("all values are missing" in f for f in col.flags)


def test_missing_numbers_without_a_policy_are_named_not_dropped():
    table = pd.DataFrame({"a": [np.nan] * 30, "b": list("xy") * 15})
    schema = Schema((Column("a", "numeric", 0, 1, public=True),
                     Column("b", "categorical", categories=("x", "y"), public=True)))
    with pytest.raises(SchemaError, match=r"column 'a': 30 values are missing.*'indicator'"):
        validate(table, schema)


def test_unique_id_column_is_flagged():
    table = pd.DataFrame({"id": [f"u{i:04d}" for i in range(500)], "b": list("xy") * 250,
                          "num_id": range(500)})
    schema = infer_schema(table)
    assert any("identifier-like: 100%" in f for f in schema["id"].flags)
    assert any("identifier-like" in f for f in schema["num_id"].flags)
    assert not schema["b"].flags


def test_target_missing_from_table():
    with pytest.raises(SchemaError, match="target column 'salary' is not in the table"):
        infer_schema(read_bytes(GOOD), target="salary")


def test_target_with_one_class():
    table = read_bytes(b"age,income\n30,low\n41,low\n52,low\n")
    schema = infer_schema(table, target="income")
    with pytest.raises(SchemaError, match="target column 'income' has a single class \\('low'\\)"):
        validate(table, schema)


# ---- budgets and parameters -----------------------------------------------------------------

@pytest.mark.parametrize("eps", [0, -0.5, float("nan")])
def test_epsilon_not_positive(eps):
    with pytest.raises(BudgetError, match="epsilon must be a finite number > 0"):
        Budget(eps, 1e-5)


def test_delta_one_or_more():
    with pytest.raises(BudgetError, match=r"delta must lie in \[0, 1\), got 1"):
        Budget(1.0, 1)


def test_shares_not_summing_to_one():
    with pytest.raises(BudgetError, match=r"shares must sum to 1, got 0\.9"):
        Budget(1.0, 1e-5, {"domain": 0.1, "measure": 0.8})


def test_unknown_method_and_parameter():
    with pytest.raises(ParameterError, match="unknown method 'gan2'"):
        make("gan2")
    with pytest.raises(ParameterError, match="unknown parameter 'bnis' for method 'independent'"):
        make("independent", {"bnis": 3})


def test_bad_settings():
    with pytest.raises(ParameterError, match="--set expects key=value, got 'bins'"):
        parse_settings(["bins"])
    with pytest.raises(ParameterError, match="share 'gan' must be a number"):
        parse_settings(["share.gan=lots"])


def test_bad_method_parameter_value(sample):
    table, schema = sample
    with pytest.raises(ParameterError, match="bins must be a positive integer, got 0"):
        make("independent", {"bins": 0}).fit(table, schema, Budget(1, 1e-5, {"measure": 1}))


def test_sample_size_must_be_positive(sample):
    table, schema = sample
    model = make("independent").fit(table, schema, Budget(1, 1e-5, {"measure": 1}))
    with pytest.raises(ParameterError, match="positive integer, got -3"):
        model.sample(-3)


def test_file_like_upload_with_size():
    upload = io.BytesIO(GOOD)
    upload.size = len(GOOD)
    upload.name = "up.csv"
    assert read_table(upload).shape == (3, 3)
    upload = io.BytesIO(GOOD)
    upload.size = 10**10
    upload.name = "big.csv"
    with pytest.raises(DataError, match=r"'big\.csv' is 9\.3 GB"):
        read_table(upload)


def test_reading_refuses_nothing_good(tmp_path):
    # the counterpart: a clean file in each supported encoding and delimiter reads the same
    text = "name;city;n\nJosé;Zürich;1\nRenée;Genève;2\n"
    for enc, bom in (("utf-8", b""), ("utf-8", b"\xef\xbb\xbf"), ("latin-1", b"")):
        path = tmp_path / f"t{enc}{len(bom)}.csv"
        path.write_bytes(bom + text.encode(enc))
        table = read_table(path)
        assert list(table.columns) == ["name", "city", "n"]
        assert table["city"].tolist() == ["Zürich", "Genève"]
    assert os.path.getsize(path) > 0
