"""Composition theorems and zCDP conversions against the values in ../shared/notes/."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from synth.errors import BudgetError
from synth.privacy.composition import (
    THEOREMS,
    bounded_range,
    dp_to_zcdp,
    per_step_epsilon,
    zcdp_delta,
    zcdp_to_dp,
)

# dp-simple-ga.md §1.6: per-selection ε_s at n = 1000, δ = 1e-5
NOTE_TABLE = {
    0.01: {"basic": 1.0e-5, "advanced": 6.59e-5, "kairouz": 9.36e-5, "renyi": 6.60e-5,
           "bounded_range": 1.32e-4},
    0.1: {"basic": 1.0e-4, "advanced": 6.56e-4, "kairouz": 7.96e-4, "renyi": 6.59e-4,
          "bounded_range": 1.32e-3},
    1: {"basic": 1.0e-3, "advanced": 6.33e-3, "kairouz": 6.91e-3, "renyi": 6.47e-3,
        "bounded_range": 1.29e-2},
    10: {"basic": 1.0e-2, "advanced": 4.94e-2, "kairouz": 5.57e-2, "renyi": 5.58e-2,
         "bounded_range": 1.11e-1},
}


@pytest.mark.parametrize("epsilon", sorted(NOTE_TABLE))
@pytest.mark.parametrize("theorem", sorted(THEOREMS))
def test_per_step_epsilon_matches_note_table(epsilon, theorem):
    expected = NOTE_TABLE[epsilon][theorem]
    got = per_step_epsilon(epsilon, 1000, 1e-5, theorem)
    assert got == pytest.approx(expected, rel=6e-3)  # the note prints three digits


def test_bounded_range_issue_values():
    assert per_step_epsilon(1, 1000, 1e-5) == pytest.approx(1.29e-2, rel=5e-3)
    assert per_step_epsilon(0.1, 1000, 1e-5) == pytest.approx(1.32e-3, rel=5e-3)


def test_simple_ga_appendix_a_adult_defaults():
    # |D| = 39,074, δ = 1/|D|^1.1, n = N_g·10 + 1 (dp-simple-ga.md Appendix A)
    delta = 39074 ** -1.1
    assert per_step_epsilon(1, 751, delta) == pytest.approx(1.48e-2, rel=1e-2)
    assert per_step_epsilon(1, 751, delta, "kairouz") == pytest.approx(7.93e-3, rel=1e-2)
    assert per_step_epsilon(10, 1201, delta) == pytest.approx(0.101, rel=1e-2)


def test_bounded_range_puts_log_inside_the_square_root():
    eps_s, n, delta = 0.01, 1000, 1e-5
    x = eps_s / (1 - math.exp(-eps_s))
    inside = n * (x - 1 - math.log(x)) + math.sqrt(n * eps_s**2 / 2 * math.log(1 / delta))
    outside = n * (x - 1 - math.log(x)) + math.sqrt(n * eps_s**2 / 2) * math.log(1 / delta)
    assert bounded_range(eps_s, n, delta) == pytest.approx(inside, rel=1e-12)
    assert inside != pytest.approx(outside, rel=0.1)


@settings(max_examples=60, deadline=None)
@given(epsilon=st.floats(0.01, 20), n=st.integers(1, 100_000),
       log_delta=st.floats(-12, -2), theorem=st.sampled_from(sorted(THEOREMS)))
def test_per_step_epsilon_is_feasible_and_tight(epsilon, n, log_delta, theorem):
    delta = 10.0**log_delta
    eps_s = per_step_epsilon(epsilon, n, delta, theorem)
    compose = THEOREMS[theorem]
    assert 0 < eps_s <= epsilon
    assert compose(eps_s, n, delta) <= epsilon * (1 + 1e-12)
    if eps_s < epsilon:  # a hair more would overspend
        assert compose(eps_s * (1 + 1e-6), n, delta) > epsilon * (1 - 1e-9)


def test_bounded_range_beats_general_theorems_for_the_exponential_mechanism():
    for eps in (0.1, 1, 10):
        br = per_step_epsilon(eps, 1000, 1e-5)
        assert all(br > per_step_epsilon(eps, 1000, 1e-5, t) for t in THEOREMS
                   if t != "bounded_range")


# private-gsd.md §1.7, ACSMOB-CA (N = 64,263), δ = 1/N²: simple / tight ρ
GSD_RHO = {0.07: (5.52e-5, 8.12e-5), 0.23: (5.94e-4, 8.12e-4), 0.52: (3.02e-3, 3.93e-3),
           0.74: (6.08e-3, 7.76e-3), 1.0: (1.104e-2, 1.386e-2)}


@pytest.mark.parametrize("epsilon", sorted(GSD_RHO))
def test_rho_from_epsilon_matches_note(epsilon):
    delta = 1 / 64263**2
    simple, tight = GSD_RHO[epsilon]
    assert dp_to_zcdp(epsilon, delta, tight=False) == pytest.approx(simple, rel=3e-3)
    assert dp_to_zcdp(epsilon, delta) == pytest.approx(tight, rel=3e-3)


@settings(max_examples=40, deadline=None)
@given(rho=st.floats(1e-5, 10), log_delta=st.floats(-12, -2))
def test_tight_conversion_is_valid_and_no_worse(rho, log_delta):
    delta = 10.0**log_delta
    eps = zcdp_to_dp(rho, delta)
    assert eps <= zcdp_to_dp(rho, delta, tight=False) + 1e-12
    assert zcdp_delta(rho, eps) <= delta * (1 + 1e-9)
    if eps > 0:  # ε = 0 is right when the Gaussian's total variation is already below δ
        assert dp_to_zcdp(eps, delta) == pytest.approx(rho, rel=1e-6)


def test_zcdp_delta_minimum_found_against_a_dense_grid():
    rho, eps = 0.02, 1.0
    best = math.exp(min((a - 1) * (a * rho - eps) + a * math.log1p(-1 / a) - math.log(a - 1)
                        for a in (1 + 10 ** (k / 400) for k in range(-1600, 2000))))
    assert zcdp_delta(rho, eps) == pytest.approx(best, rel=1e-4)
    assert zcdp_delta(rho, eps) <= best * (1 + 1e-9)


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf")])
def test_inverse_refuses_bad_epsilon(bad):
    with pytest.raises(BudgetError, match="epsilon"):
        per_step_epsilon(bad, 10, 1e-5)


def test_inverse_refuses_unknown_theorem_and_bad_delta():
    with pytest.raises(BudgetError, match="unknown composition theorem 'magic'"):
        per_step_epsilon(1, 10, 1e-5, "magic")
    with pytest.raises(BudgetError, match="delta"):
        per_step_epsilon(1, 10, 1.5, "advanced")


def test_explore_gives_each_theorems_per_step_epsilon():
    from synth.privacy.composition import explore

    curves = explore(1.0, 1e-5, [1, 1000, 100_000])
    assert set(curves) == set(THEOREMS)
    assert curves["bounded_range"][1] == pytest.approx(1.29e-2, rel=5e-3)
    assert curves["kairouz"][1] == pytest.approx(6.91e-3, rel=5e-3)
    assert curves["basic"].tolist() == pytest.approx([1.0, 1e-3, 1e-5])
    for values in curves.values():  # more steps, less each
        assert values[0] > values[1] > values[2]
    # bounded range allows the most for the exponential mechanism, basic the least
    assert max(curves, key=lambda k: curves[k][1]) == "bounded_range"
    assert min(curves, key=lambda k: curves[k][1]) == "basic"
