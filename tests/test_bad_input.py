"""Every kind of bad input gets a clear message that names the file, column or parameter.

Nothing here may crash with an unrelated exception: each case asserts the error type (a
SynthError, which the CLI and app show as one line) and the words that tell the user what to do.
"""

import io
import json
import re
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from synth.cli import main
from synth.data import read_table, sample_paths
from synth.errors import BudgetError, DataError, ParameterError, SchemaError, SynthError
from synth.methods import FitContext, make, parse_settings
from synth.privacy.budget import Budget, Ledger
from synth.schema import Column, Schema, infer_schema, prepare, validate

from .conftest import within

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


def test_unterminated_quote_names_the_row_it_swallowed():
    # the open quote runs to the end of the file: row 2 is one field holding everything
    with pytest.raises(DataError, match="row 2 has 1 fields but the header has 2"):
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
    with pytest.raises(SchemaError, match="column 'age': kind must be 'numeric', 'categorical' "
                                          "or 'datetime', got 'number'"):
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


def test_unparseable_dates_are_refused_by_count_before_anything_is_spent():
    table = read_bytes(b"seen,colour\n2021-03-04,red\n31/02/2021,blue\nsoon,red\n"
                       b"2021-05-06,red\n,blue\n")
    schema = Schema((Column("seen", "datetime", "2020-01-01", "2022-12-31", public=True,
                            missing="indicator"),
                     Column("colour", "categorical", categories=("red", "blue"), public=True)))
    model = make("independent")
    with pytest.raises(SchemaError, match=r"column 'seen': 2 values are not dates in its "
                                          r"format \(ISO 8601\)") as caught:
        model.fit(table, schema, Budget(1.0, 1e-5))
    assert "soon" not in str(caught.value) and "31/02" not in str(caught.value)  # no value
    assert not model.ledger_.entries  # refused before the first charge
    zoned = read_bytes(b"seen,colour\n2021-03-04T10:00:00+02:00,red\n2021-03-04,blue\n")
    with pytest.raises(SchemaError, match=r"column 'seen': 1 values carry a time zone, but "
                                          "its timezone is 'naive'"):
        prepare(zoned, schema)


@pytest.mark.parametrize("bound, value", [("lower", 5), ("upper", "next year"),
                                          ("origin", True), ("fill_value", 20200101)])
def test_a_date_bound_that_is_not_a_date_is_refused_by_name(bound, value):
    column = {"name": "seen", "kind": "datetime", "lower": "2020-01-01",
              "upper": "2022-12-31", "public": True, bound: value}
    if bound == "fill_value":
        column["missing"] = "fill"
    what = {"lower": "lower bound", "upper": "upper bound"}.get(bound, bound.replace("_", " "))
    with pytest.raises(SchemaError, match=f"column 'seen': {what} must be a date"):
        Schema.from_json(json.dumps({"columns": [column]}))


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
    # a steward's walk: on a 30-row table, ages and balances are nearly all distinct too,
    # but spread wide, not a dense run of numbers: measurements, not identifiers
    rng = np.random.default_rng(0)
    small = pd.DataFrame({"age": rng.choice(np.arange(18, 90), 30, replace=False),
                          "balance": rng.choice(np.arange(-5000, 50_000), 30, replace=False),
                          "id": np.arange(1000, 1030)})
    flagged = infer_schema(small)
    assert not any("identifier" in f for f in flagged["age"].flags)
    assert not flagged["balance"].flags
    assert any("identifier-like" in f for f in flagged["id"].flags)


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
        table = read_table(path, encoding="latin-1" if enc == "latin-1" else None)
        assert list(table.columns) == ["name", "city", "n"]
        assert table["city"].tolist() == ["Zürich", "Genève"]


# ---- issue 16, item 6: one table per class of bad input --------------------------------------

RUN = ["run", "{table}", "--schema", "{schema}", "--method", "independent", "--epsilon", "1",
       "--out", "{tmp}/o.csv", "--ledger", "{tmp}/l.json", "--quiet"]


@pytest.fixture
def files(tmp_path):
    """Paths the CLI rows name: the bundled sample and a few broken files beside it."""
    table, schema = sample_paths()
    fill = json.loads(schema.read_text())
    fill["columns"][0].update(missing="fill", fill_value="zero")
    (tmp_path / "fill.json").write_text(json.dumps(fill))
    (tmp_path / "one.csv").write_text("a,b\n1,x\n")
    (tmp_path / "latin.csv").write_bytes(b"a,b\n1,x\n2,caf\xe9\n3,y\n")
    (tmp_path / "empty.csv").write_bytes(b"")
    (tmp_path / "folder").mkdir()
    return {"table": table, "schema": schema, "tmp": tmp_path}


def cli(argv: list[str], files: dict, capsys) -> tuple[int, str]:
    """(exit code, stderr) of the CLI run in-process on ``argv`` with {placeholders} filled."""
    code = main([a.format(**files) for a in argv])
    return code, capsys.readouterr().err


@pytest.mark.parametrize(("argv", "message"), [
    # a parameter of the wrong type (every parameter's bad values: tests/test_validation.py)
    ([*RUN, "--set", "bins=abc"], r"bins must be an integer, got 'abc'"),
    ([*RUN, "--postprocessing-seed", "-1"], r"postprocessing_seed must be an integer ≥ 0"),
    ([*RUN[:3], "{tmp}/fill.json", *RUN[4:]], r"column 'age': fill_value must be a number, got "
                                               r"'zero'"),
    ([*RUN[:3], "{tmp}/folder", *RUN[4:]], r"cannot read schema file .*folder"),
    # a share that contradicts the method's own split parameter
    ([*RUN[:5], "dpselect", *RUN[6:], "--set", "share.gan=0.5"],
     r"share 'gan' \(0\.5 of the budget\) contradicts gan_share=0\.2.*set gan_share"),
    # report on what is not a ledger or a sweep
    (["report", "{table}", "--out", "{tmp}/r.html"],
     r"'census_demo\.csv': not a sweep's table .*lacks columns \['method'"),
    (["report", "{schema}", "--out", "{tmp}/r.html"],
     r"'census_demo\.schema\.json': not a run's ledger .*lacks \['budget'"),
    (["report", "{tmp}/nope.json", "--out", "{tmp}/r.html"], r"no such file: '.*nope\.json'"),
    (["report", "{tmp}/folder", "--out", "{tmp}/r.html"], r"cannot read '.*folder'"),
    (["report", "{tmp}/empty.csv", "--out", "{tmp}/r.html"], r"'empty\.csv' is not a "
                                                              r"well-formed CSV"),
    # tables that cannot be split or read
    (["split", "{tmp}/one.csv", "--out-dir", "{tmp}/parts"],
     r"the protocol split needs at least 4 rows .* has 1"),
    (["schema", "infer", "{tmp}/folder", "--out", "{tmp}/s.json"], r"is a folder"),
    (["schema", "infer", "{tmp}/empty.csv", "--out", "{tmp}/s.json"], r"'empty\.csv' is empty"),
    (["schema", "infer", "{table}", "--out", "{tmp}/s.json", "--max-bytes", "0"],
     r"max_bytes must be an integer ≥ 1, got 0"),
    (["evaluate", "{table}", "{tmp}/one.csv", "--schema", "{schema}"],
     r"the table lacks schema columns \['age'"),
    # sweeps
    (["sweep", "{table}", "--schema", "{schema}", "--methods", "independent", "--epsilons", "1",
      "--jobs", "0", "--out", "{tmp}/s.csv"], r"--jobs must be ≥ 1, or negative"),
    (["sweep", "{table}", "--schema", "{schema}", "--methods", "independent", "--epsilons", "1",
      "--set", "bins=4", "--out", "{tmp}/s.csv"], r"--set expects METHOD\.KEY=VALUE, got "
                                                   r"'bins=4'"),
])
def test_the_cli_refuses_bad_input_in_one_line(files, capsys, argv, message):
    code, err = cli(argv, files, capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), err
    assert re.search(message, lines[0]), lines[0]
    assert not (files["tmp"] / "o.csv").exists() and not (files["tmp"] / "l.json").exists()


@pytest.mark.parametrize(("argv", "message"), [
    ([*RUN[:7], "1e-300", *RUN[8:]], r"epsilon must lie in \[1e-09, 1e\+09\], got 1e-300"),
    ([*RUN[:7], "1e300", *RUN[8:]], r"epsilon must lie in \[1e-09, 1e\+09\], got 1e\+300"),
    ([*RUN[:5], "dpselect", "--epsilon", "1e7", *RUN[8:]],
     r"the 'gan' share's ε = 2e\+06 is over 1000, .*give a smaller epsilon"),
    ([*RUN, "--rows", "2000000000"], r"--rows = 2,000,000,000 would need about 2\.4 TB of "
                                     r"memory \(13 columns × 100 bytes a cell\), over the .* "
                                     r"bound .*; ask for at most [\d,]+ rows"),
    ([*RUN[:5], "gsd", *RUN[6:], "--set", "rows=2000000000"], r"rows = 2,000,000,000 would "
                                                               r"need about 2\.4 TB"),
    ([*RUN[:5], "dpselect", *RUN[6:], "--set", "pool_multiplier=1e9"],
     r"pool_multiplier × rows with as many support rows = 10,000,000,000,000 would need"),
])
def test_what_would_hang_or_exhaust_memory_is_refused_up_front(files, capsys, argv, message):
    code, err = within(60.0, cli, argv, files, capsys)  # each took minutes, or all memory
    assert code == 2 and re.search(message, err), err
    assert "charged" not in err and not (files["tmp"] / "l.json").exists()


@pytest.mark.parametrize(("source", "encoding", "outcome"), [
    (b"a,b\n1,x\n2,caf\xe9\n3,y\n", None,
     r"not valid UTF-8: line 3 has byte 0xe9 at character 6; .*--encoding latin-1 in the CLI"),
    (b"a,b\n1,x\n2,caf\xe9\n3,y\n", "latin-1", ["x", "café", "y"]),
    (b"a,b\r\n1,x\r\n\xff,y\r\n", None, r"line 3 has byte 0xff at character 1"),
    ("a,b\n1,x\n2,café\n".encode(), None, ["x", "café"]),
    (b"\xef\xbb\xbfa,b\n1,x\n2,caf\xc3\xa9\n", None, ["x", "café"]),
    ("a,b\n1,x\n2,café\n".encode("latin-1"), "utf-8", r"not valid utf-8 \(byte 0xe9"),
])
def test_invalid_utf8_names_its_line_or_reads_with_an_explicit_encoding(source, encoding,
                                                                        outcome):
    if isinstance(outcome, str):
        with pytest.raises(DataError, match=outcome):
            read_table(source, encoding=encoding)
    else:
        assert read_table(source, encoding=encoding)["b"].tolist() == outcome


def test_the_cli_reads_latin1_only_when_asked(files, capsys):
    argv = ["schema", "infer", "{tmp}/latin.csv", "--out", "{tmp}/s.json"]
    code, err = cli(argv, files, capsys)
    assert code == 2 and "line 3 has byte 0xe9" in err and "--encoding latin-1" in err
    assert cli([*argv, "--encoding", "latin-1"], files, capsys)[0] == 0
    assert "café" in Schema.load(files["tmp"] / "s.json")["b"].categories


@pytest.fixture(scope="module")
def api(sample):
    table, schema = sample
    model = make("independent").fit(table, schema, Budget(1.0, 1e-5))  # the default shares
    return SimpleNamespace(table=table, schema=schema, model=model)


@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda a: FitContext(postprocessing_seed=-1), ParameterError,
     r"postprocessing_seed must be an integer ≥ 0, got -1"),
    (lambda a: FitContext(postprocessing_seed=True), ParameterError, r"postprocessing_seed"),
    (lambda a: FitContext(on_event=3), ParameterError, r"on_event must be a function"),
    (lambda a: make("independent").fit([1, 2], a.schema, Budget(1, 1e-5)), DataError,
     r"table must be a pandas DataFrame .*got list"),
    (lambda a: make("independent").fit(a.table, None, Budget(1, 1e-5)), SchemaError,
     r"schema must be a Schema .*got None"),
    (lambda a: make("independent").fit(a.table, a.schema, 1.0), BudgetError,
     r"budget must be a Budget\(epsilon, delta\[, shares\]\), got 1\.0"),
    (lambda a: make("independent").fit(a.table, a.schema, Budget(1, 1e-5), ctx={}),
     ParameterError, r"ctx must be a FitContext or None"),
    (lambda a: make("independent", [("bins", 4)]), ParameterError, r"params must be a mapping"),
    (lambda a: make("independent").fit(a.table, a.schema, Budget(1, 1e-5, {"gan": 1})),
     BudgetError, r"needs budget shares for \['measure'\].*leave shares out"),
    (lambda a: make("dpselect").fit(a.table, a.schema, Budget(1, 1e-5, {"gan": 0.5,
                                                                      "select": 0.5})),
     BudgetError, r"share 'gan' \(0\.5 of the budget\) contradicts gan_share=0\.2"),
    (lambda a: a.model.sample(float("nan")), ParameterError, r"n \(rows to sample\) must be "
                                                             r"an integer ≥ 1, got nan"),
    (lambda a: a.model.sample(True), ParameterError, r"n \(rows to sample\).*got True"),
    (lambda a: a.model.sample(-3), ParameterError, r"must be an integer ≥ 1, got -3"),
    (lambda a: a.model.sample(10**12), ParameterError, r"would need about .* TB of memory"),
    (lambda a: a.model.sample(5, seed=-1), ParameterError, r"seed must be an integer ≥ 0"),
    (lambda a: make("independent").preview(-1, a.schema, Budget(1, 1e-5)), ParameterError,
     r"n \(rows\) must be an integer ≥ 1, got -1"),
    (lambda a: read_table(None), DataError, r"source must be a file path, bytes or a binary "
                                            r"file object, got None"),
    (lambda a: read_table(io.StringIO("a,b\n1,2\n")), DataError, r"open it in binary mode"),
    (lambda a: read_table(GOOD, max_bytes="big"), ParameterError, r"max_bytes must be an "
                                                                  r"integer ≥ 1, got 'big'"),
    (lambda a: read_table(GOOD, encoding=8), DataError, r"encoding must be a name"),
    (lambda a: infer_schema([[1, 2]]), DataError, r"table must be a pandas DataFrame"),
    (lambda a: prepare(a.table, None), SchemaError, r"schema must be a Schema"),
    (lambda a: Schema(None), SchemaError, r"columns must be a list of Column, got None"),
    (lambda a: Schema.load(None), SchemaError, r"path must be a string or Path, got None"),
    (lambda a: Column("c", "categorical", categories=5), SchemaError,
     r"column 'c': categories must be a list of strings, got 5"),
    (lambda a: Column("x", "numeric", lower=True, upper=2), SchemaError,
     r"column 'x': lower bound must be a number, got True"),
    (lambda a: Budget(1, 1e-5, shares=None), BudgetError, r"shares must be a mapping .*leave "
                                                          r"it out"),
    (lambda a: Budget(True, 1e-5), BudgetError, r"epsilon must be a number > 0, got True"),
    (lambda a: Budget(1, False), BudgetError, r"delta must be a number in \[0, 1\), got False"),
    (lambda a: Budget(1, 1e-5, {"measure": True}), BudgetError, r"share 'measure' must be a "
                                                                r"number, got True"),
    (lambda a: Budget(1e-10, 1e-5), BudgetError, r"epsilon must lie in \[1e-09, 1e\+09\]"),
    (lambda a: Ledger.from_dict({}), BudgetError, r"a ledger must be a JSON object with a "
                                                  r"'budget' object"),
    (lambda a: Ledger.from_dict({"budget": {"epsilon": 1, "delta": 0}, "entries": [{}]}),
     BudgetError, r"ledger entry 1 is malformed \(KeyError: 'stage'\)"),
])
def test_the_api_refuses_wrong_types_by_name(api, call, error, message):
    with pytest.raises(error, match=message) as caught:
        call(api)
    assert isinstance(caught.value, SynthError) and "\n" not in str(caught.value)


def test_the_default_budget_takes_the_methods_own_split(api):
    assert api.model.ledger_.budget.shares == {"measure": 1.0}
    private = infer_schema(api.table)  # data-derived domains: the method's split has a domain
    # (0.2 of ε: numeric bounds are among them)
    assert make("dpselect").budget_for(Budget(1.0, 1e-5), private).shares == pytest.approx(
        {"domain": 0.2, "gan": 0.16, "select": 0.64})
    # shares that agree with gan_share pass, as `synth run --set share.…` replays them
    agreed = Budget(1.0, 1e-5, {"domain": 0.1, "gan": 0.45, "select": 0.45})
    assert make("dpselect", {"gan_share": 0.5}).budget_for(agreed, private) is agreed
