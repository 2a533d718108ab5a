"""The privacy core's arithmetic: sensitivities for the one relation (checked by brute force on
neighbouring tables), accountants (checked against dp-accounting, closed forms and numerical
integration), and the composition theorems over the whole float range."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate
from scipy.stats import norm

from synth.errors import BudgetError
from synth.privacy import composition as c
from synth.privacy.accounting import account, calibrate, pld_epsilon
from synth.privacy.events import (
    ZCDP,
    Exponential,
    Gaussian,
    Laplace,
    LaplaceThreshold,
    PoissonSampledGaussian,
    clipped_sum_l2,
    fraction_linf,
    fractions_l2,
    histogram_l1,
    histogram_l2,
    normalised_marginals_l1,
)

from .conftest import within

RNG = np.random.default_rng(11)


def neighbours(n: int, sizes: list[int], trials: int):
    """Pairs of tables of n coded rows that differ by one replaced record."""
    for _ in range(trials):
        d = np.column_stack([RNG.integers(s, size=n) for s in sizes])
        d2 = d.copy()
        d2[RNG.integers(n)] = [RNG.integers(s) for s in sizes]
        yield d, d2


def histograms(codes: np.ndarray, sizes: list[int]) -> np.ndarray:
    return np.concatenate([np.bincount(codes[:, j], minlength=s) for j, s in enumerate(sizes)])


def test_histogram_sensitivities_are_reached_and_never_exceeded():
    sizes = [3, 4, 2]
    l1 = l2 = 0.0
    for d, d2 in neighbours(12, sizes, 400):
        diff = histograms(d, sizes) - histograms(d2, sizes)
        l1, l2 = max(l1, np.abs(diff).sum()), max(l2, np.sqrt((diff**2).sum()))
    assert l1 == histogram_l1(3) == 6 and l2 == pytest.approx(histogram_l2(3)) and l2 > 2.4
    assert histogram_l1() == 2 and histogram_l2() == pytest.approx(math.sqrt(2))


def test_fraction_and_workload_sensitivities():
    n, sizes = 20, [3, 5]
    worst_answer = worst_workload = 0.0
    for d, d2 in neighbours(n, sizes, 400):
        # a 2-way marginal as fractions: one partition of the rows
        cells = lambda x: np.bincount(x[:, 0] * 5 + x[:, 1], minlength=15) / n  # noqa: E731
        diff = cells(d) - cells(d2)
        worst_answer = max(worst_answer, np.abs(diff).max())
        worst_workload = max(worst_workload, np.sqrt((diff**2).sum()))
    assert worst_answer == pytest.approx(fraction_linf(n))
    assert worst_workload == pytest.approx(fractions_l2(1, n))


def test_normalised_marginal_distance_moves_by_at_most_two_over_rows():
    rows, synthetic = 25, RNG.integers(4, size=25)
    reference = np.bincount(synthetic, minlength=4) / rows
    worst = 0.0
    for d, d2 in neighbours(rows, [4], 300):
        dist = [np.abs(np.bincount(x[:, 0], minlength=4) / rows - reference).sum()
                for x in (d, d2)]
        worst = max(worst, abs(dist[0] - dist[1]))
    assert worst <= normalised_marginals_l1(rows) + 1e-12 and worst > 0.07


def test_clipped_sum_moves_by_at_most_twice_the_clip():
    grads = RNG.normal(size=(50, 8))
    clipped = grads / np.maximum(1, np.linalg.norm(grads, axis=1, keepdims=True) / 0.5)
    other = -clipped[0]  # the worst replacement points the other way
    moved = np.linalg.norm(clipped.sum(0) - (clipped.sum(0) - clipped[0] + other))
    assert moved == pytest.approx(clipped_sum_l2(0.5)) and moved <= 1.0 + 1e-12


# ---- accountants ---------------------------------------------------------------------------


def test_basic_zcdp_and_bounded_range_closed_forms():
    assert account([Laplace(4.0, 2.0), Laplace(2.0, 2.0)], "basic", 0) == (1.5, 0.0)
    threshold = LaplaceThreshold(2.0, 2.0, 1 + 2.0 * math.log(1 / (2 * 1e-6)))
    assert account([threshold], "basic", 0) == pytest.approx((1.0, 1e-6))
    rho = 0.02
    g = Gaussian(math.sqrt(2) / math.sqrt(2 * rho), math.sqrt(2))
    assert g.rho == pytest.approx(rho)
    assert account([g, ZCDP(rho)], "zcdp", 1e-5)[0] == pytest.approx(c.zcdp_to_dp(2 * rho, 1e-5))
    # the exponential mechanism is ε²/8-zCDP
    assert account([Exponential(0.4, 1.0, 5)], "zcdp", 1e-5)[0] == pytest.approx(
        c.zcdp_to_dp(5 * 0.4**2 / 8, 1e-5))
    assert account([Exponential(0.01, 0.1, 300), Exponential(0.01, 0.2, 700)], "bounded_range",
                   1e-6)[0] == pytest.approx(c.bounded_range(0.01, 1000, 1e-6))
    with pytest.raises(BudgetError, match="cannot account"):
        account([g], "basic", 0)
    with pytest.raises(BudgetError, match="cannot account"):
        account([PoissonSampledGaussian(0.1, 1.0, 10)], "zcdp", 1e-5)


@pytest.mark.parametrize("sigma", [1.0, 5.0, 30.0])
def test_gaussian_zcdp_is_above_dp_accountings_tight_pld_within_fifteen_percent(sigma):
    from dp_accounting import dp_event, pld
    from dp_accounting.privacy_accountant import NeighboringRelation

    theirs = pld.PLDAccountant(neighboring_relation=NeighboringRelation.REPLACE_ONE,
                               value_discretization_interval=1e-4)
    # dp-accounting's REPLACE_ONE unit is a record's norm bound; a replacement moves 2 units
    theirs.compose(dp_event.GaussianDpEvent(sigma / (math.sqrt(2) / 2)))
    exact = theirs.get_epsilon(1e-5)
    ours = account([Gaussian(sigma, math.sqrt(2))], "zcdp", 1e-5)[0]
    assert exact <= ours <= 1.15 * exact


def hockey_stick(q: float, sigma: float, eps: float) -> float:
    """δ(ε) of one Poisson-subsampled Gaussian step under replacement, by quadrature over the
    worst-case pair (1−q)N(0,σ²) + qN(−1,σ²) against (1−q)N(0,σ²) + qN(1,σ²)."""
    def p(x):
        return (1 - q) * norm.pdf(x, 0, sigma) + q * norm.pdf(x, -1, sigma)

    def r(x):
        return (1 - q) * norm.pdf(x, 0, sigma) + q * norm.pdf(x, 1, sigma)

    value, _ = integrate.quad(lambda x: max(0.0, p(x) - math.exp(eps) * r(x)),
                              -12 * sigma - 1, 12 * sigma + 1, limit=400, points=[-1, 0, 1])
    return value


@pytest.mark.parametrize(("q", "sigma"), [(0.05, 0.8), (0.01, 0.6), (0.2, 2.0)])
def test_one_dp_sgd_step_matches_numerical_integration(q, sigma):
    delta = 1e-5
    eps = pld_epsilon([PoissonSampledGaussian(q, sigma, 1)], delta)
    assert hockey_stick(q, sigma, eps) <= delta * 1.001  # sound
    assert hockey_stick(q, sigma, 0.95 * eps) > delta  # and not loose by more than 5 %


def test_replacement_costs_more_than_add_remove_and_less_than_the_sigma_halved_bound():
    from opacus.accountants.analysis.rdp import compute_rdp, get_privacy_spent

    orders = [1 + x / 10 for x in range(1, 100)] + list(range(12, 257))
    q, sigma, steps, delta = 0.0059, 1.0, 1700, 1e-5
    ours = pld_epsilon([PoissonSampledGaussian(q, sigma, steps)], delta)

    def rdp_eps(noise: float) -> float:
        rdp = compute_rdp(q=q, noise_multiplier=noise, steps=steps, orders=orders)
        return get_privacy_spent(orders=orders, rdp=rdp, delta=delta)[0]

    assert rdp_eps(sigma) < ours < rdp_eps(sigma / 2)


def test_calibrate_finds_the_least_noise_that_fits():
    sigma = calibrate(lambda s: Gaussian(s, math.sqrt(2)), "zcdp", 1.0, 1e-5, start=1e3)
    assert account([Gaussian(sigma, math.sqrt(2))], "zcdp", 1e-5)[0] <= 1.0
    assert account([Gaussian(sigma * 0.998, math.sqrt(2))], "zcdp", 1e-5)[0] > 1.0
    with pytest.raises(BudgetError, match="too small"):
        calibrate(lambda s: Gaussian(s, 1.0), "zcdp", 1e-9, 1e-12, start=10.0)


# ---- composition over the whole float range -------------------------------------------------

EPSILONS = st.floats(min_value=5e-324, max_value=1.7e308, allow_nan=False,
                     allow_infinity=False)
DELTAS = st.floats(min_value=5e-324, max_value=1.0, exclude_max=True)




@settings(max_examples=150, deadline=None)
@given(EPSILONS, DELTAS)
def test_zcdp_conversions_end_with_a_valid_value_or_a_clear_error(eps, delta):
    try:
        rho = within(60.0, c.dp_to_zcdp, eps, delta)
    except BudgetError:
        return
    assert 0 < rho < math.inf
    # what the conversion promises: checked numerically, or the simple bound (a theorem)
    assert (c.zcdp_delta(rho, eps) <= delta * (1 + 1e-9)
            or rho == c.dp_to_zcdp(eps, delta, tight=False))
    back = within(60.0, c.zcdp_to_dp, rho, delta)
    # the round trip to 1e-9 holds where δ(ρ, ε) is steep enough in ε to resolve: near δ = ½,
    # or at ε ≲ 1e-6, where ρ-zCDP gives (≈0, δ) and the inversions need not agree, or at
    # subnormal δ (checked to 4,000 random cases; a mismatch only makes a ledger refuse)
    if 1e-300 <= delta <= 1e-2 and eps >= 1e-6:
        assert back <= eps * (1 + 1e-9)


@settings(max_examples=60, deadline=None)
@given(EPSILONS, st.integers(min_value=1, max_value=10**6), DELTAS,
       st.sampled_from(sorted(c.THEOREMS)))
def test_per_step_epsilon_is_feasible_for_any_float(eps, n, delta, theorem):
    if theorem != "basic" and delta == 0:
        return
    step = within(60.0, c.per_step_epsilon, eps, n, delta, theorem)
    assert 0 <= step <= eps
    assert c.THEOREMS[theorem](step, n, delta) <= eps * (1 + 1e-9)


@pytest.mark.parametrize("eps", [5e-324, 1e-300, 1e-17, 1e-16, 1e16, 1e300, 1.7e308])
def test_the_two_reported_composition_bugs_end(eps):
    """ε ≲ 1e-16 used to loop forever and ε ≥ 1e16 raised OverflowError."""
    for f in (lambda: c.dp_to_zcdp(eps, 1e-5), lambda: c.per_step_epsilon(eps, 10, 1e-5),
              lambda: c.advanced(eps, 10, 1e-5), lambda: c.kairouz(eps, 10, 1e-5),
              lambda: c.bounded_range(eps, 10, 1e-5), lambda: c.renyi(eps, 10, 1e-5)):
        try:
            value = within(60.0, f)
        except BudgetError:
            continue
        assert value >= 0 and not math.isnan(value)
