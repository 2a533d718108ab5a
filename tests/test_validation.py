"""Declared parameter constraints (synth.validation): one table per method, checked by fit
before anything is spent, read by the CLI's --set and by the app."""

import math
import re

import numpy as np
import pytest

from synth.cli import main
from synth.data import sample_paths
from synth.errors import ParameterError
from synth.methods import METHODS, make, parse_settings
from synth.privacy.budget import Budget
from synth.schema import infer_schema
from synth.validation import Param, check_all, specs


def bad_values(p: Param) -> list:
    """Values ``p`` must refuse: outside its interval or choices, of the wrong type, a bool
    for a number, None where it is not optional."""
    if p.kind is bool:
        return ["yes", 1, None]
    if p.kind is str:
        return [3, None] + (["nope"] if p.choices else [])
    step = 1 if p.kind is int else 0.5
    out = ["abc", True, np.bool_(False), [1], math.inf, math.nan] + ([] if p.optional else [None])
    if p.kind is int:
        out.append((p.low or 0) + 1.5)  # not a whole number
    if p.low is not None:
        out.append(p.low if p.low_open else p.low - step)
    if p.high is not None:
        out.append(p.high if p.high_open else p.high + step)
    return out


CASES = [(name, p, value) for name, cls in METHODS.items() for p in cls.params.values()
         for value in bad_values(p)]


@pytest.fixture(scope="module")
def private(sample):
    """300 rows whose domains are learned privately: a check made after that would find the
    ledger already charged."""
    table = sample[0].iloc[:300]
    return table, infer_schema(table).confirm()


@pytest.mark.parametrize(("method", "param", "value"), CASES,
                         ids=[f"{m}-{p.name}-{v!r}" for m, p, v in CASES])
def test_every_bad_parameter_is_refused_by_name_before_anything_is_spent(private, method,
                                                                          param, value):
    table, schema = private
    model = make(method, {param.name: value})
    with pytest.raises(ParameterError) as caught:
        model.fit(table, schema, Budget(1.0, 1e-5))
    message = str(caught.value)
    shown = f"{param.name} ({param.symbol})" if param.symbol not in ("", param.name) \
        else param.name
    assert message.startswith(f"{shown} must ") and "\n" not in message, message
    ledger = getattr(model, "ledger_", None)  # gan_share is refused before the ledger exists
    assert ledger is None or (ledger.entries == [] and ledger.total_epsilon == 0)
    with pytest.raises(ParameterError, match=f"^{re.escape(shown)} must "):  # and the preview
        model.preview(len(table), schema, Budget(1.0, 1e-5))


@pytest.mark.parametrize(("p", "value", "message"), [
    (Param("p_c", float, low=0, high=1), 1.5, "p_c must lie in [0, 1], got 1.5"),
    (Param("share", float, low=0, high=1, low_open=True, high_open=True), 1,
     "share must lie in (0, 1), got 1"),
    (Param("bins", int, low=1), 0, "bins must be an integer ≥ 1, got 0"),
    (Param("epochs", float, low=0, low_open=True), np.int64(0),
     "epochs must be a number > 0, got 0"),
    (Param("rounds", int, low=1, optional=True, symbol="T"), "many",
     "rounds (T) must be an integer or null, got 'many'"),
    (Param("engine", str, choices=("rows", "ga")), "genetic",
     "engine must be one of 'rows', 'ga', got 'genetic'"),
    (Param("one_shot", bool), 1, "one_shot must be true or false, got 1"),
])
def test_messages_name_the_parameter_and_what_it_accepts(p, value, message):
    with pytest.raises(ParameterError) as caught:
        p.check(value)
    assert str(caught.value) == message


@pytest.mark.parametrize("cls", list(METHODS.values()), ids=list(METHODS))
def test_each_method_declares_every_parameter_and_its_defaults_pass(cls):
    defaults = cls.param_defaults()
    assert set(cls.params) == set(defaults)
    assert check_all(defaults, cls.params) == pytest.approx(defaults)
    assert all(p.help.endswith(".") and p.title for p in cls.params.values())
    assert [p.name for p in cls.params.values() if not p.advanced]  # something up front
    cls().check_params()


def test_dpselect_extends_the_gan_and_the_ga():
    from synth.methods.dpgan import DPGAN
    from synth.privacy.dpsga import GA_PARAMS

    select = METHODS["dpselect"].params
    assert all(select[k] is p for k, p in GA_PARAMS.items())
    # the GAN's own constraints and words, under its nested names
    for k, p in DPGAN.params.items():
        mine = select[f"gan__{k}"]
        assert (mine.kind, mine.low, mine.high, mine.help, mine.title, mine.advanced) == (
            p.kind, p.low, p.high, p.help, p.title, p.advanced), k
    assert specs(Param("a", int), Param("a", str))["a"].kind is int  # the first one wins


def numpy_twin(value):
    """``value`` as a numpy scalar of the same kind (float32: not a subclass of float)."""
    if isinstance(value, bool):
        return np.bool_(value)
    return np.int64(value) if isinstance(value, int) else np.float32(value) if isinstance(
        value, float) else value


@pytest.mark.parametrize("cls", list(METHODS.values()), ids=list(METHODS))
def test_numpy_scalars_pass_wherever_python_numbers_do(cls):
    given = {k: numpy_twin(v) for k, v in cls.param_defaults().items() if v is not None}
    values = cls().set_params(**given).check_params()
    for name, value in given.items():
        assert values[name] == pytest.approx(value) if not isinstance(value, str) else \
            values[name] == value
        assert not isinstance(values[name], np.generic), name  # plain Python values back
    for p in cls.params.values():
        if p.kind is int:  # a whole float, numpy's too, is an integer
            assert p.check(np.float32(3)) == 3 and type(p.check(np.float32(3))) is int


def test_a_fit_with_numpy_parameters_releases(sample):
    table, schema = sample[0].iloc[:300], sample[1]
    for method, params in {
        "independent": {"bins": np.int64(8), "exact_integers": np.int32(0)},
        "gsd": {"rounds": np.int64(2), "rows": np.int64(100), "max_generations": np.int64(50),
                "one_shot": np.bool_(False)},
        "dpselect": {"gan__epochs": np.int64(1), "gan__batch_size": np.int64(64),
                     "gan__components": np.int64(4), "gan__critic_hidden": np.int64(8),
                     "gan__generator_batch": np.int64(64), "pool_multiplier": np.int64(2),
                     "engine": "ga", "generations": np.int64(2), "population": np.int64(10),
                     "parents": np.int64(2), "p_c": np.float32(0.5)},
    }.items():
        model = make(method, params).fit(table, schema, Budget(1.0, 1e-5))
        assert len(model.sample(10)) == 10
        assert model.ledger_.total_epsilon <= 1.0 + 1e-9


def test_cross_parameter_rules_stay_explicit(private):
    table, schema = private  # domains learned privately: a late refusal would find them paid
    for method, params, message in [
        ("dpselect", {"engine": "ga", "parents": 300},
         r"parents \(N_s=300\) cannot exceed the population"),
        ("dpselect", {"engine": "ga", "distance": "l2"}, "l1 distance only"),
        ("dpselect", {"engine": "rows", "sections": 10**6},
         r"sections \(S=1000000\) cannot exceed the table"),
        ("dpselect", {"sections": 3}, "the measure engine measures the whole table"),
        ("dpselect", {"engine": "rows", "pool_multiplier": 2.5},
         r"candidates \(T\) must be an integer"),
        ("dpgan", {"batch_size": 10**6}, r"batch_size \(1000000\) must be smaller"),
        ("gsd", {"mutations": 0, "crossovers": 0}, r"mutations \+ crossovers must be ≥ 1"),
        ("gsd", {"queries": "cat2+cat9"}, "queries must be classes joined by '\\+'"),
        ("private_sampling", {"Delta": 1.001}, r"Delta must be a number ≥ 1 \+ accuracy_delta"),
        ("gsd", {"rows": 10**12}, r"rows = 1,000,000,000,000 would need about"),
        ("gsd", {"rounds": 10**6}, r"rounds × per_round = 1000000 exceeds the \d+ workloads"),
        ("dpselect", {"pool_multiplier": 10**10},
         "pool_multiplier × rows with as many support rows = .* would need"),
    ]:
        model = make(method, params)
        with pytest.raises(ParameterError, match=message):
            model.fit(table, schema, Budget(1.0, 1e-5))
        assert model.ledger_.entries == []


def test_whole_floats_reach_the_method_as_integers(sample):
    table, schema = sample[0].iloc[:300], sample[1]
    rows, rounds = 100.0, np.float64(2)  # JSON's 100.0: range(), numpy and torch take
    model = make("gsd", {"rows": rows, "rounds": rounds, "max_generations": 50})
    model.fit(table, schema, Budget(1.0, 1e-5))  # integers only
    assert type(model.rows_) is int and model.rows_ == 100 and len(model.measured_) == 2
    assert model.rows is rows and model.rounds is rounds  # stored as given (scikit-learn)


# ---- the CLI's --set reads the declared types ----------------------------------------------

def test_set_parses_by_the_declared_type():
    params, shares = parse_settings(["engine=ga", "p_c=0.5", "generations=null", "gan__epochs=1",
                                     "queries=3", "share.gan=0.3"], "dpselect")
    assert params == {"engine": "ga", "p_c": 0.5, "generations": None, "gan__epochs": 1,
                      "queries": 3} and shares == {"gan": 0.3}  # queries: not dpselect's
    assert parse_settings(['engine="ga"'], "dpselect")[0] == {"engine": "ga"}  # run_command's
    assert parse_settings(["queries=cat2+bt"], "gsd")[0] == {"queries": "cat2+bt"}
    with pytest.raises(ParameterError, match=r"^p_m must lie in \[0, 1\], got 2$"):
        parse_settings(["p_m=2"], "dpselect")
    with pytest.raises(ParameterError,
                       match=r"^engine must be one of 'measure', 'rows', 'ga', got '3'$"):
        parse_settings(["engine=3"], "dpselect")


@pytest.mark.parametrize(("setting", "message"), [
    ("p_c=2", r"p_c must lie in \[0, 1\], got 2"),
    ("engine=genetic", r"engine must be one of 'measure', 'rows', 'ga', got 'genetic'"),
    ("population=true", r"population \(N_p\) must be an integer, got True"),
])
def test_the_cli_refuses_a_bad_setting_in_one_line(tmp_path, capsys, setting, message):
    table, schema = sample_paths()
    code = main(["run", str(table), "--schema", str(schema), "--method", "dpselect",
                 "--epsilon", "1", "--out", str(tmp_path / "o.csv"),
                 "--ledger", str(tmp_path / "l.json"), "--quiet", "--set", setting])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), lines
    assert re.search(message, lines[0]), lines[0]
    assert not list(tmp_path.iterdir())  # refused before anything ran or was written


def test_a_nested_methods_refusal_names_its_owners_parameter():
    """DP-Select's GAN is a DPGAN configured as ``gan``: its rules refuse in DP-Select's
    names, so the message and the app's one-click fix set ``gan__batch_size``, which exists,
    and a caller's DPGAN is never changed by a fit's settings."""
    from synth.methods.dpgan import DPGAN

    given = DPGAN(epochs=2)
    model = METHODS["dpselect"](gan=given)
    with pytest.raises(ParameterError, match=r"^gan__batch_size \(128\) must be smaller") as err:
        model.check_params(60)
    ((setting, value),) = err.value.fixes[0].changes
    assert setting == "gan__batch_size" and setting in model.param_defaults() and value == 15
    model.set_params(gan__batch_size=16)
    assert model.check_params(60)["gan__batch_size"] == 16 and given.batch_size == 128
    with pytest.raises(ParameterError, match="did you mean 'gan__epochs'"):
        model.set_params(epochs=3)
    # a configured GAN, then its parameters; anything but a DPGAN is refused by name
    model.set_params(gan=DPGAN(epochs=4), gan__batch_size=16)
    assert (model.gan.epochs, model.gan.batch_size) == (4, 16)
    for wrong in ({"epochs": 5}, DPGAN):
        with pytest.raises(ParameterError, match=r"^gan must be a configured DPGAN"):
            METHODS["dpselect"](gan=wrong).check_params()
