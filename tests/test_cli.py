"""The CLI's contract forms, run as a user would: in a subprocess."""

import json
import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from synth.data import sample_paths
from synth.methods import make
from synth.privacy.budget import Budget
from synth.privacy.unit import Population
from synth.schema import Schema

from .conftest import ADULT, REPO


def synth(*args, cwd=None, home=None):
    """The CLI in a subprocess (with its own SYNTH_HOME, given ``home``)."""
    env = {**os.environ, **({"SYNTH_HOME": str(home)} if home is not None else {})}
    return subprocess.run([sys.executable, "-m", "synth", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd or REPO, env=env,
                          timeout=1800)  # a hang, not a slow run


@pytest.fixture(scope="module")
def adult_files(tmp_path_factory):
    out = tmp_path_factory.mktemp("adult")
    assert synth("split", ADULT, "--out-dir", out).returncode == 0
    return out


def test_infer_run_evaluate_round_trip(tmp_path, adult_files):
    schema_path = tmp_path / "schema.json"
    res = synth("schema", "infer", adult_files / "adult_train.csv", "--out", schema_path,
                "--target", "income")
    assert res.returncode == 0, res.stderr
    schema = Schema.load(schema_path)
    assert schema.target == "income" and schema["age"].kind == "numeric"
    assert schema.proposed == schema.names and "schema confirm" in res.stderr
    out, ledger = tmp_path / "synth.csv", tmp_path / "ledger.json"
    res = synth("run", adult_files / "adult_train.csv", "--schema", schema_path, "--method",
                "independent", "--epsilon", 1, "--out", out, "--ledger", ledger)
    assert res.returncode == 2 and "are proposals read from the data" in res.stderr
    assert not out.exists() and not ledger.exists()  # refused before anything ran
    # declare the protocol's public domains, rounded so that no record's value is published
    res = synth("schema", "confirm", schema_path, adult_files / "adult_train.csv", "--public",
                "all", "--nice")
    assert res.returncode == 0, res.stderr
    assert ("age: numeric, whole numbers, a missing value: indicator; public whole numbers "
            "in [0, 120]") in res.stderr  # 17–90 in the table: an age's domain, by its name
    assert ("hours-per-week: numeric, whole numbers, a missing value: indicator; public whole "
            "numbers in [0, 100]") in res.stderr  # 1–99 in the table, rounded
    assert "'hours-per-week': [0, 100] is the table's own range rounded" in res.stderr
    assert "'age': [" not in res.stderr  # public knowledge: nothing about the table to warn of
    # a list of exactly the table's values warns where some are rare (Holand-Netherlands is
    # one person's); sex's two common values identify no one
    assert "warning: column 'native-country': the public categories are exactly the" in (
        res.stderr)
    assert "column 'sex': the public categories" not in res.stderr
    schema = Schema.load(schema_path)
    assert not schema.proposed and schema.releasable


    res = synth("run", adult_files / "adult_train.csv", "--schema", schema_path, "--method",
                "independent", "--epsilon", 1, "--delta", 1e-5, "--postprocessing-seed", 0,
                "--out", out,
                "--ledger", ledger, "--set", "bins=16")
    assert res.returncode == 0, res.stderr
    assert "measure" in res.stderr  # the progress bar
    table = pd.read_csv(out)
    assert list(table.columns) == schema.names and len(table) == 21707
    record = json.loads(ledger.read_text())
    # (ρ-zCDP converted back to (ε, δ) may land a few 1e-13 above the share it was made from)
    assert record["total_epsilon"] <= 1.0 * (1 + 1e-9) and record["total_delta"] <= 1e-5
    # every number may have blanks (as inferred): the domain share counts them, then measure
    stages = [(e["stage"], e["event"]["type"]) for e in record["entries"]]
    assert stages == [("domain", "laplace")] * 6 + [("measure", "gaussian")]
    assert record["params"] == {"bins": 16, "exact_integers": 128}
    assert record["postprocessing_seed"] == 0 and "seed" not in record
    assert record["command"].startswith("python -m synth run DATA.csv --schema schema.json")
    # releasable: no path of the steward's files, no runtime
    text = ledger.read_text()
    assert str(tmp_path) not in text and str(adult_files) not in text
    assert "seconds" not in record

    res = synth("evaluate", adult_files / "adult_test.csv", out, "--schema", schema_path,
                "--target", "income", "--train", adult_files / "adult_train.csv", "--json")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.strip().splitlines()
    assert len(lines) == 1
    figures = json.loads(lines[0])
    assert {"accuracy", "macro_f1", "majority", "tvd1", "tvd2", "real_accuracy"} <= set(figures)
    # the majority-class baseline is the test table's most frequent income, read here
    test_income = pd.read_csv(adult_files / "adult_test.csv")["income"]
    assert figures["majority"] == pytest.approx(test_income.value_counts(normalize=True).max())
    assert 0.7 < figures["majority"] < 0.8  # Adult's ~75 % of incomes ≤50K (notes, thesis §4)
    said = synth("evaluate", adult_files / "adult_test.csv", out, "--schema", schema_path,
                 "--target", "income", "--train", adult_files / "adult_train.csv").stdout
    assert f"2-way TVD {figures['tvd2']:.3f}" in said  # the same figures, in words
    assert f"accuracy {figures['accuracy']:.3f} (the majority class" in said


def test_run_with_data_derived_domains_and_a_share(tmp_path):
    table, _ = sample_paths()
    schema_path = tmp_path / "inferred.json"
    assert synth("schema", "infer", table, "--out", schema_path).returncode == 0
    assert synth("schema", "confirm", schema_path, table).returncode == 0  # nothing public
    res = synth("run", table, "--schema", schema_path, "--method", "independent", "--epsilon",
                4, "--postprocessing-seed", 1, "--out", tmp_path / "o.csv", "--ledger",
                tmp_path / "l.json",
                "--set", "share.domain=0.3", "--quiet")
    assert res.returncode == 0, res.stderr
    record = json.loads((tmp_path / "l.json").read_text())
    assert record["budget"]["shares"] == pytest.approx({"domain": 0.3, "measure": 0.7})
    assert record["total_delta"] <= 1 / (10 * 5000)  # the default δ ≤ 1/(10n)
    assert all(c["learned"] and not c["flags"] for c in record["schema"]["columns"])


def test_run_gsd_with_settings(tmp_path):
    table, schema = sample_paths()
    res = synth("run", table, "--schema", schema, "--method", "gsd", "--epsilon", 1, "--out",
                tmp_path / "o.csv", "--ledger", tmp_path / "l.json", "--set", "rounds=2",
                "--set", "queries=cat2+bt", "--set", "rows=100", "--set", "max_generations=500",
                "--quiet")
    assert res.returncode == 0, res.stderr
    assert len(pd.read_csv(tmp_path / "o.csv")) == len(pd.read_csv(table))
    record = json.loads((tmp_path / "l.json").read_text())
    assert [e["stage"] for e in record["entries"]] == ["queries"] * 4
    assert record["total_epsilon"] == pytest.approx(1.0)


def test_a_table_over_max_bytes_is_read_where_it_lies_and_keeps_its_account(tmp_path):
    """A run on a file over --max-bytes (or a folder of Parquet files) reads it in chunks,
    and charges the same account as the table read whole: switching how it is read cannot
    reset what the table has spent."""
    table, schema = sample_paths()
    frame = pd.read_csv(table)
    (tmp_path / "parts").mkdir()
    frame.iloc[:2000].to_parquet(tmp_path / "parts" / "a.parquet", index=False)
    frame.iloc[2000:].to_parquet(tmp_path / "parts" / "b.parquet", index=False)
    home = {"SYNTH_HOME": str(tmp_path / "home")}

    def run(data, *more):
        return subprocess.run(
            [sys.executable, "-m", "synth", "run", str(data), "--schema", str(schema),
             "--method", "gsd", "--epsilon", "0.5", "--out", str(tmp_path / "o.csv"),
             "--ledger", str(tmp_path / "l.json"), "--set", "rounds=2", "--set",
             "max_generations=200", "--quiet", *more],
            capture_output=True, text=True, cwd=REPO, timeout=1800,
            env={**os.environ, **home})

    res = run(table, "--max-bytes", "1000")
    assert res.returncode == 0, res.stderr
    assert "'census_demo.csv' (CSV, 409.9 KB) where it lies" in res.stderr
    assert "release checklist: not made for a table read where it lies" in res.stderr
    assert len(pd.read_csv(tmp_path / "o.csv")) == len(frame)
    assert json.loads((tmp_path / "l.json").read_text())["total_epsilon"] == pytest.approx(0.5)
    assert run(table).returncode == 0  # read whole: under the limit
    listed = subprocess.run([sys.executable, "-m", "synth", "account"], capture_output=True,
                            text=True, cwd=REPO, env={**os.environ, **home}).stdout
    assert "1 table(s)" in listed and "spent ε=1, " in listed and "2 run(s)" in listed
    res = run(tmp_path / "parts")  # a Parquet dataset: another table (its types differ)
    assert res.returncode == 0, res.stderr
    assert "'parts' (Parquet dataset" in res.stderr


def test_run_dpselect_with_the_ga_engine(tmp_path):
    table, schema = sample_paths()
    res = synth("run", table, "--schema", schema, "--method", "dpselect", "--epsilon", 1, "--out",
                tmp_path / "o.csv", "--ledger", tmp_path / "l.json", "--set", "engine=ga",
                "--set", "gan__epochs=0.5", "--set", "pool_multiplier=3", "--set", "generations=4",
                "--set", "population=40", "--quiet")
    assert res.returncode == 0, res.stderr
    assert len(pd.read_csv(tmp_path / "o.csv")) == len(pd.read_csv(table))
    record = json.loads((tmp_path / "l.json").read_text())
    _, select = record["entries"]
    assert record["params"]["engine"] == "ga" and record["params"]["generations"] == 4
    assert select["event"]["type"] == "exponential"
    assert select["event"]["count"] == 4 * 10 + 1  # N_g·N_s + 1 selections


def test_sweep_writes_one_row_per_run(tmp_path):
    table, schema = sample_paths()
    res = synth("sweep", table, "--schema", schema, "--methods", "independent", "--epsilons",
                "0.5", "2", "--seeds", "2", "--param", "bins", "--values", "4", "16", "--jobs",
                "2", "--out", tmp_path / "sweep.csv", "--quiet")
    assert res.returncode == 0, res.stderr
    rows = pd.read_csv(tmp_path / "sweep.csv")
    assert len(rows) == 8 and set(rows["value"]) == {4, 16} and set(rows["seed"]) == {0, 1}
    assert rows["accuracy"].notna().all()  # the sample's schema has a target: held-out test


def test_a_sweep_keeps_its_runs_past_a_failing_configuration(tmp_path):
    table, schema = sample_paths()
    res = synth("sweep", table, "--schema", schema, "--methods", "independent", "gsd",
                "--epsilons", "1", "--seeds", "1", "--set", "gsd.rounds=1000000", "--jobs", "1",
                "--out", tmp_path / "sweep.csv", "--quiet")
    assert res.returncode == 0, res.stderr
    rows = pd.read_csv(tmp_path / "sweep.csv").set_index("method")
    assert pd.isna(rows.loc["independent", "error"]) and rows.loc["independent", "tvd2"] > 0
    assert "rounds × per_round = 1000000 exceeds" in rows.loc["gsd", "error"]
    assert rows.loc["gsd", "ledger_epsilon"] == 0  # refused before anything was spent
    assert "1 failed" in res.stderr and "gsd ε=1 seed=0: rounds × per_round" in res.stderr


def test_sweep_from_a_preset(tmp_path):
    table, schema = sample_paths()
    res = synth("sweep", table, "--schema", schema, "--preset", "accuracy-vs-epsilon",
                "--methods", "independent", "--seeds", "1", "--demo", "--jobs", "1",
                "--out", tmp_path / "sweep.csv", "--quiet")
    assert res.returncode == 0, res.stderr
    rows = pd.read_csv(tmp_path / "sweep.csv")  # the preset's ε grid, the chosen method
    assert list(rows["epsilon"]) == [0.5, 1, 2, 4, 8] and set(rows["method"]) == {"independent"}


@pytest.mark.parametrize("args, message", [
    (["sweep", "{table}", "--schema", "{schema}", "--methods", "independent", "--out", "o.csv"],
     "error: give --methods and --epsilons, or a --preset"),
    (["run", "missing.csv", "--schema", "s.json", "--method", "independent", "--epsilon", 1,
      "--out", "o.csv", "--ledger", "l.json"], "error: no such file: 'missing.csv'"),
    (["run", "{table}", "--schema", "{schema}", "--method", "independent", "--epsilon", -1,
      "--out", "o.csv", "--ledger", "l.json"], "error: epsilon must be a finite number > 0"),
    (["run", "{table}", "--schema", "{schema}", "--method", "independent", "--epsilon", 1,
      "--delta", 2, "--out", "o.csv", "--ledger", "l.json"], "error: delta must lie in [0, 1)"),
    (["run", "{table}", "--schema", "{schema}", "--method", "independent", "--epsilon", 1,
      "--out", "o.csv", "--ledger", "l.json", "--set", "share.measure=0.5"],
     "error: budget shares must sum to 1"),
    (["run", "{table}", "--schema", "{schema}", "--method", "independent", "--epsilon", 1,
      "--out", "o.csv", "--ledger", "l.json", "--set", "bins"], "error: --set expects key=value"),
    (["evaluate", "{table}", "{table}", "--schema", "{schema}", "--target", "nope"],
     "error: target column 'nope' is not in the schema"),
    (["schema", "infer", "{schema}", "--out", "x.json"], "error: 'census_demo.schema.json'"),
])
def test_failures_exit_non_zero_with_one_line(tmp_path, args, message):
    table, schema = sample_paths()
    args = [str(a).format(table=table, schema=schema) for a in args]
    res = synth(*args, cwd=tmp_path)
    assert res.returncode != 0
    assert res.stderr.strip().splitlines()[-1].startswith(message), res.stderr
    assert "Traceback" not in res.stderr


def test_methods_lists_the_baseline():
    res = synth("methods")
    assert res.returncode == 0 and res.stdout.startswith("independent: Independent marginals")


def test_the_same_command_twice_gives_two_releases(tmp_path):
    """Noise is fresh OS entropy: a recorded seed cannot replay a release."""
    table, schema = sample_paths()
    outs = []
    for i in range(2):
        out, ledger = tmp_path / f"o{i}.csv", tmp_path / f"l{i}.json"
        res = synth("run", table, "--schema", schema, "--method", "independent", "--epsilon", 1,
                    "--postprocessing-seed", 7, "--out", out, "--ledger", ledger, "--quiet")
        assert res.returncode == 0, res.stderr
        outs.append(out.read_bytes())
        record = json.loads(ledger.read_text())
        assert "replayable" not in json.dumps(record) and record["noise"].startswith("fresh")
    assert outs[0] != outs[1]


def test_an_interrupted_run_writes_what_it_spent_and_releases_nothing(tmp_path):
    table, schema = sample_paths()
    out, ledger = tmp_path / "o.csv", tmp_path / "l.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "synth", "run", str(table), "--schema", str(schema), "--method",
         "dpgan", "--epsilon", "1", "--set", "epochs=500", "--out", str(out), "--ledger",
         str(ledger)], stderr=subprocess.PIPE, text=True, cwd=REPO,
        # Ctrl-C as a terminal delivers it: a job started in the background (nohup, some CI
        # runners) inherits SIGINT ignored, and Python then never raises KeyboardInterrupt
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        for line in proc.stderr:  # DP-SGD is charged before its first step
            if "charged" in line:
                break
        seen = ""  # then its own bar starts (a Ctrl-C inside the charge keeps it whole)
        while not ("gan:" in seen and "step" in seen.split("gan:")[-1]) and (
                char := proc.stderr.read(1)):
            seen += char
        proc.send_signal(signal.SIGINT)  # what Ctrl-C sends
        rest = proc.communicate(timeout=1800)[1]  # a hang, not a slow shutdown
    finally:
        proc.kill()
    assert proc.returncode == 130
    assert "no synthetic table was released" in rest and not out.exists()
    record = json.loads(ledger.read_text())
    assert record["status"].startswith("cancelled") and "nothing was released" in record["status"]
    (entry,) = record["entries"]
    assert entry["status"].startswith("stopped early")
    # settled to the steps that ran: fewer than the package plans for 500 epochs on this table
    n, gan, declared = len(pd.read_csv(table)), make("dpgan", {"epochs": 500}), Schema.load(schema)
    planned = gan.plan(Population(n, n), declared,
                       gan.budget_for(Budget(1.0, 1e-5), declared)).steps[-1].event
    assert entry["event"]["steps"] < planned.steps  # 0 when stopped before the first step
    assert record["total_epsilon"] < 1.0


def test_a_release_is_whole_and_its_ledger_names_the_table(tmp_path):
    import hashlib

    table, schema = sample_paths()
    out, ledger = tmp_path / "o.csv", tmp_path / "l.json"
    out.write_text("an older release\n")
    res = synth("run", table, "--schema", schema, "--method", "independent", "--epsilon", 1,
                "--out", out, "--ledger", ledger, "--quiet")
    assert res.returncode == 0, res.stderr
    record = json.loads(ledger.read_text())
    assert record["synthetic_sha256"] == hashlib.sha256(out.read_bytes()).hexdigest()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["l.json", "o.csv"]  # no leftovers


@pytest.mark.parametrize(("out", "ledger", "message"), [
    ("DATA", "l.json", "--out and DATA are the same file"),
    ("o.csv", "o.csv", "--ledger and --out are the same file"),
    ("o.csv", "DATA", "--ledger and DATA are the same file"),
])
def test_a_release_never_overwrites_its_input_or_itself(tmp_path, out, ledger, message):
    table, schema = sample_paths()
    data = tmp_path / "private.csv"
    data.write_bytes(table.read_bytes())
    paths = {"DATA": data}
    res = synth("run", data, "--schema", schema, "--method", "independent", "--epsilon", 1,
                "--out", paths.get(out, tmp_path / out), "--ledger",
                paths.get(ledger, tmp_path / ledger), "--quiet")
    assert res.returncode == 2 and message in res.stderr
    assert data.read_bytes() == table.read_bytes()  # the private table is untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["private.csv"]


def test_an_unwritable_ledger_releases_no_table(tmp_path):
    table, schema = sample_paths()
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    out = tmp_path / "o.csv"
    res = synth("run", table, "--schema", schema, "--method", "independent", "--epsilon", 1,
                "--out", out, "--ledger", blocker / "l.json", "--quiet")
    assert res.returncode == 2 and "cannot write --ledger" in res.stderr
    assert "nothing was spent" in res.stderr  # refused before the run (issue 33, item 4)
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["not-a-folder"]


def test_bad_rows_are_refused_before_anything_is_spent(tmp_path):
    table, schema = sample_paths()
    res = synth("run", table, "--schema", schema, "--method", "independent", "--epsilon", 1,
                "--rows", 0, "--out", tmp_path / "o.csv", "--ledger", tmp_path / "l.json")
    assert res.returncode == 2 and "--rows must be an integer ≥ 1" in res.stderr
    assert "charged" not in res.stderr and not (tmp_path / "l.json").exists()


def test_run_command_is_what_the_cli_parses():
    from synth.cli import build_parser
    from synth.methods import parse_settings
    from synth.runs import run_command

    line = run_command("independent", 0.5, 1e-6, 3, {"bins": 16, "exact_integers": 0},
                       {"domain": 0.1, "measure": 0.9})
    args = build_parser().parse_args(shlex.split(line)[3:])
    assert (args.method, args.epsilon, args.delta, args.postprocessing_seed) == (
        "independent", 0.5, 1e-6, 3)
    params, shares = parse_settings(args.set)
    assert params == {"bins": 16, "exact_integers": 0}
    assert shares == {"domain": 0.1, "measure": 0.9}


def test_plan_json_is_the_ledger_the_run_writes_and_reads_no_value(tmp_path):
    table, schema_path = sample_paths()
    frame = pd.read_csv(table).iloc[:1500]
    schema = Schema.load(schema_path)
    # age's bounds are learned privately: the plan states the domain stage's events too
    private = schema.declare_public([c for c in schema.names if c != "age"])
    private.save(tmp_path / "schema.json")
    frame.to_csv(tmp_path / "data.csv", index=False)
    args = ["--schema", tmp_path / "schema.json", "--method", "dpgan", "--epsilon", 2,
            "--delta", 1e-5, "--set", "epochs=0.3"]
    planned = synth("plan", tmp_path / "data.csv", *args, "--json")
    assert planned.returncode == 0, planned.stderr
    plan = json.loads(planned.stdout)
    assert plan["exact"] and plan["population"]["rows"] == 1500
    ran = synth("run", tmp_path / "data.csv", *args, "--out", tmp_path / "synth.csv",
                "--ledger", tmp_path / "ledger.json", "--quiet")
    assert ran.returncode == 0, ran.stderr
    ledger = json.loads((tmp_path / "ledger.json").read_text())

    def events(entries):
        return [{k: e[k] for k in ("stage", "event", "relation", "epsilon", "delta")}
                for e in entries]

    assert events(plan["entries"]) == events(ledger["entries"])
    # age's bounds: its middle, then both ends, before the GAN
    assert [e["stage"] for e in plan["entries"]][:3] == ["domain", "domain", "gan"]
    # values the run would refuse change nothing: the plan reads the row count alone
    garbled = frame.astype(object)
    garbled[:] = "not a value"
    garbled.to_csv(tmp_path / "garbled.csv", index=False)
    again = synth("plan", tmp_path / "garbled.csv", *args, "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["entries"] == plan["entries"]
    text = synth("plan", tmp_path / "data.csv", *args)
    assert "gan: noise multiplier σ" in text.stdout and "time: about" in text.stdout


def test_a_refused_plan_says_why_and_exits_non_zero(tmp_path):
    table, schema_path = sample_paths()
    res = synth("plan", table, "--schema", schema_path, "--method", "private_sampling",
                "--epsilon", 1)
    assert res.returncode == 2 and "refused: private sampling runs at demo scale" in res.stdout
    assert res.stderr.startswith("error: private sampling runs at demo scale")


def test_every_run_is_in_the_run_store_with_its_release(tmp_path):
    """synth runs lists what synth run made, with its status and the release's files in its
    folder; delete removes the files, never the account's charge."""
    table, schema = sample_paths()

    def cli(*args):
        return synth(*args, home=tmp_path / "home")

    out, ledger = tmp_path / "o.csv", tmp_path / "l.json"
    assert cli("run", table, "--schema", schema, "--method", "independent", "--epsilon", 1,
               "--out", out, "--ledger", ledger, "--quiet").returncode == 0
    refused = cli("run", table, "--schema", schema, "--method", "gsd", "--epsilon", 1,
                  "--delta", 0, "--out", tmp_path / "x.csv", "--ledger", tmp_path / "x.json")
    assert refused.returncode == 2  # refused by its plan: nothing ran, nothing recorded
    declared = json.loads(Path(schema).read_text())  # a category the table holds left out:
    for column in declared["columns"]:  # a failure only the data shows, after the plan
        if column["name"] == "race":
            column["categories"].remove("Other")
    (tmp_path / "wrong.json").write_text(json.dumps(declared))
    failed = cli("run", table, "--schema", tmp_path / "wrong.json", "--method", "independent",
                 "--epsilon", 1, "--out", tmp_path / "x.csv", "--ledger", tmp_path / "x.json",
                 "--quiet")
    assert failed.returncode == 2  # it ran, and failed on the data
    listed = cli("runs").stdout.splitlines()
    assert len(listed) == 2 and " failed " in listed[0] and " finished " in listed[1]
    assert "'race'" in json.loads(cli("runs", "show", listed[0].split()[0]).stdout)["error"]
    run_id = listed[1].split()[0]
    shown = json.loads(cli("runs", "show", run_id[:-1]).stdout)  # a unique prefix will do
    assert shown["status"] == "finished" and shown["charge"] is not None
    folder = Path(shown["folder"])
    assert sorted(p.name for p in folder.iterdir()) == ["ledger.json", "run.json", "synth.csv"]
    assert (folder / "synth.csv").read_bytes() == out.read_bytes()  # the same release
    assert json.loads((folder / "ledger.json").read_text()) == json.loads(ledger.read_text())
    spent = cli("account").stdout
    assert cli("runs", "delete", run_id).returncode == 0
    assert not folder.exists() and "(files deleted)" in cli("runs").stdout
    assert cli("account").stdout == spent  # the charge stays
    missing = cli("runs", "show", "nope")
    assert missing.returncode == 2 and "nope" in missing.stderr


def test_schema_confirm_reads_numbers_written_as_text_and_leaves_columns_out(tmp_path):
    """Issue 49, item 6: what the Data page does (Read as numbers, leave a column out) the
    CLI does too, and a run reads the file as it lies: '3,750' as 3750, the ticket column
    gone from the release; the released schema does not say how the private file writes."""
    from .test_decisions import shaped

    data, schema = tmp_path / "shaped.csv", tmp_path / "schema.json"
    table = shaped(3_000)
    table.to_csv(data, index=False)
    inferred = synth("schema", "infer", data, "--target", "segment", "--out", schema)
    assert "schema confirm --numbers" in inferred.stderr  # the CLI's way, where it warns
    confirmed = synth("schema", "confirm", schema, data, "--numbers", "amount",
                      "--leave-out", "ticket,customer", "--public", "categories,known",
                      "--public", "delay,joined", home=tmp_path)
    assert confirmed.returncode == 0, confirmed.stderr
    declared = Schema.load(schema)
    assert declared.names == ["amount", "delay", "month", "segment", "joined"]
    assert declared["amount"].kind == "numeric" and declared["amount"].written_as_text
    amounts = table["amount"].str.replace(",", "").astype(int)
    assert (declared["amount"].lower, declared["amount"].upper) == (amounts.min(), amounts.max())
    out, ledger = tmp_path / "out.csv", tmp_path / "ledger.json"
    ran = synth("run", data, "--schema", schema, "--method", "independent", "--epsilon", "4",
                "--out", out, "--ledger", ledger, "--quiet", home=tmp_path)
    assert ran.returncode == 0, ran.stderr
    released = pd.read_csv(out)
    assert list(released.columns) == declared.names
    assert pd.api.types.is_numeric_dtype(released["amount"])
    assert "written_as_text" not in ledger.read_text()
    bad = synth("schema", "confirm", schema, data, "--leave-out", "nope", home=tmp_path)
    assert bad.returncode != 0 and "nope" in bad.stderr and "Traceback" not in bad.stderr
