"""Private sampling's bounds against the paper's printed numbers and the note's derivations."""

import json
import math
import subprocess
import sys

import pytest

from synth.errors import ParameterError
from synth.methods.private_sampling.bounds import (
    LOG10_2,
    Setting,
    log10_delta_bound,
    min_p,
    paper_constants,
    show,
    walsh_count,
)

# Table 1 (‖f_n‖∞: Mushroom and Car have distinct rows, 1/n; Adult's printed k needs 0.0177)
DATASETS = {"Asia": (8, 20000, 0.29), "Mushroom": (119, 8124, 1 / 8124),
            "Car": (25, 1727, 1 / 1727), "Adult": (62, 32561, 0.0177)}
TABLE_2 = {"Asia": ("7.3e-4", "2.2e10"), "Mushroom": ("1.1e-49", "5.3e72"),
           "Car": ("2.9e-8", "1.4e16"), "Adult": ("9.5e-27", "1.5e42")}


def paper(p, n, fn_inf, epsilon=1.0):
    log10_n = math.log10(n)
    return Setting(p, 2, log10_n, epsilon, 0.25, 0.125,
                   log10_delta_bound("from ‖f_n‖∞", p, log10_n, fn_inf=fn_inf), empty=False)


@pytest.mark.parametrize("name", DATASETS)
def test_table_2_to_two_significant_figures(name):
    s = paper(*DATASETS[name])
    k_times_m, m_lo = TABLE_2[name]
    assert show(s.log10_k_hi(0.0)) == k_times_m  # k·m^{3/4}: the bound at m = 1
    assert show(s.log10_m_lo) == m_lo
    report = s.check()
    assert not report.feasible
    assert {c.name for c in report.conditions if not c.holds} >= {
        "m_lo ≤ 2^(p/4): the m range is not empty", "k_hi ≥ 1: at least one private sample"}


def test_paper_constants():
    c = paper_constants()
    assert c["m"] == pytest.approx(55908.5, abs=0.1)  # printed 5.6·10⁴
    assert c["k"] == pytest.approx(0.0096671, rel=1e-4)  # printed 9.7·10⁻³
    assert c["ideal"] == pytest.approx(2.6588e-6, rel=1e-4)  # printed 2.7·10⁻⁶


@pytest.mark.parametrize(("epsilon", "crossings"), [(10, [54, 69, 76, 83]),
                                                    (1, [61, 76, 83, 90])])
def test_figure_1_crossings(epsilon, crossings):
    """The ideal cube (n = 2^p, Δ = 1) at m = m_lo: the first p allowing k samples."""
    def first(k):
        return next(p for p in range(2, 400) if Setting(
            p, 2, p * LOG10_2, epsilon, 0.25, 0.125, 0.0, empty=False).log10_k_max >= math.log10(k))
    assert [first(k) for k in (1, 100, 1000, 10000)] == crossings


@pytest.mark.parametrize("empty", [True, False])
def test_frontier_of_a_non_empty_m_range(empty):
    assert [min_p(d, 0.25, 0.125, 0.0, empty) for d in (1, 2, 3, 4)] == [81, 119, 156, 194]


def test_closed_forms_agree_with_the_theorems():
    s = Setting(40, 3, 30.0, 2.0, 0.1, 0.05, 1.3, k=7)
    assert s.log10_k_max == pytest.approx(s.log10_k_hi(s.log10_m_lo), abs=1e-9)
    # n_for(k) is the n at which Theorem 4.1 at m_lo allows exactly k samples
    at = Setting(40, 3, s.log10_n_for(7), 2.0, 0.1, 0.05, 1.3)
    assert at.log10_k_max == pytest.approx(math.log10(7), abs=1e-9)
    # Δ_max closes the m range exactly
    edge = Setting(40, 3, 30.0, 2.0, 0.1, 0.05, s.log10_Delta_max)
    assert edge.log10_m_lo == pytest.approx(edge.log10_m_hi, abs=1e-9)
    assert walsh_count(40, 3) == 1 + 40 + 780 + 9880 == walsh_count(40, 3, False) + 1


def test_the_notes_accuracy_figures():
    asia = paper(*DATASETS["Asia"])
    full = Setting(8, 2, asia.log10_n, 1.0, 0.25, 0.125, asia.log10_Delta)  # ∅ counted
    assert full.k_lo == pytest.approx(408.5, abs=0.1)
    assert show(full.log10_n_lo) == "4.1e6"
    assert asia.success == pytest.approx(0.5 - 2 ** -4)


def test_huge_and_tiny_values_print_without_overflow():
    s = Setting(3000, 4, 900.0, 1.0, 0.25, 0.125, 600.0)
    assert math.isfinite(s.log10_m_lo) and s.log10_m_lo > 1000
    assert show(1234.56) == "3.6e1234" and show(-400.5) == "3.2e-401"
    assert show(math.log10(46340.95)) == "46,341" and show(math.log10(0.0123)) == "0.012"
    assert show(math.inf) == "∞" and show(-math.inf) == "0"


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"p": 0}, "p must be"), ({"d": 5, "p": 3}, "d must be"), ({"epsilon": 0}, "epsilon"),
    ({"delta": -1}, "delta"), ({"gamma": math.inf}, "gamma"), ({"k": 0}, "k must"),
])
def test_bad_settings_are_named(kwargs, message):
    base = {"p": 10, "d": 2, "log10_n": 4.0, "epsilon": 1.0, "delta": 0.25, "gamma": 0.125,
            "log10_Delta": 0.0}
    with pytest.raises(ParameterError, match=message):
        Setting(**{**base, **kwargs})
    with pytest.raises(ParameterError, match="‖f_n‖∞"):
        log10_delta_bound("from ‖f_n‖∞", 10, 4.0, fn_inf=0)


def test_cli_prints_every_bound_as_json():
    res = subprocess.run([sys.executable, "-m", "synth", "feasibility", "--p", "25", "--n",
                          "1727", "--fn-inf", str(1 / 1727), "--paper-mode", "--k", "1"],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["feasible"] is False and out["shown"]["k_hi_at_m_1"] == "2.9e-8"
    assert out["shown"]["m_lo"] == "1.4e16"
    failing = {c["name"] for c in out["conditions"] if not c["holds"]}
    assert "k ≤ k_hi (privacy)" in failing and "0 < δ < Δ" not in failing
    bad = subprocess.run([sys.executable, "-m", "synth", "feasibility", "--p", "25",
                          "--distinct"], capture_output=True, text=True, timeout=600)
    assert bad.returncode == 2 and bad.stderr.startswith("error: --n is required")
