"""Mechanisms: closed-form behaviour, and statistical audits on neighbouring inputs.

Each audit runs a mechanism 200,000 times on two neighbouring inputs and computes a lower bound
on ε that holds with 99.9% confidence (Clopper–Pearson, Bonferroni over events). A correct
mechanism must not exceed its claimed ε; the same mechanism with half its noise must.
"""

import math

import numpy as np
import pytest
from scipy.stats import chisquare

from synth.errors import ParameterError
from synth.privacy import mechanisms as m
from synth.privacy.audit import epsilon_lower_bound, event_counts
from synth.privacy.composition import zcdp_to_dp

TRIALS = 200_000
EPS = 1.0
K = 20  # candidates: with D′ favouring one by +Δ and the rest by −Δ the ratio nears e^ε


def neighbouring_scores():
    d = np.zeros((TRIALS, K))
    d2 = -np.ones((TRIALS, K))
    d2[:, 0] = 1.0
    return d, d2


def audit_selection(select) -> float:
    rng = np.random.default_rng(12345)
    d, d2 = neighbouring_scores()
    events = np.arange(K)
    return epsilon_lower_bound(event_counts(select(d, rng), events),
                               event_counts(select(d2, rng), events), TRIALS)


# half the noise is the same as twice the ε in the noise scale
SELECTIONS = {
    "exponential": (lambda s, r: m.exponential(s, EPS, 1.0, r),
                    lambda s, r: np.argmax(s * EPS / 2 + 0.5 * r.gumbel(size=s.shape), axis=-1)),
    "permute_and_flip": (lambda s, r: m.permute_and_flip(s, EPS, 1.0, r),
                         lambda s, r: m.permute_and_flip(s, 2 * EPS, 1.0, r)),
    "report_noisy_max": (lambda s, r: m.report_noisy_max(s, EPS, 1.0, r),
                         lambda s, r: m.report_noisy_max(s, 2 * EPS, 1.0, r)),
}


@pytest.mark.parametrize("name", sorted(SELECTIONS))
def test_selection_audit_passes_and_catches_half_noise(name):
    correct, broken = SELECTIONS[name]
    assert audit_selection(correct) <= EPS
    assert audit_selection(broken) > EPS * 1.3


def audit_release(release, noise_factor: float, thresholds, delta: float = 0.0) -> float:
    """Audit a numeric release with sensitivity 1: true value 0 on D, 1 on D′; the noise
    is scaled by ``noise_factor`` (0.5 = half the noise) around the true value."""
    rng = np.random.default_rng(7)
    zeros = np.zeros(TRIALS)
    a = noise_factor * release(zeros, rng)
    b = 1 + noise_factor * release(zeros, rng)
    return epsilon_lower_bound(event_counts(b, thresholds), event_counts(a, thresholds), TRIALS,
                               delta=delta)


def test_laplace_audit_passes_and_catches_half_noise():
    def release(x, rng):
        return m.laplace(x, EPS, 1.0, rng)

    thresholds = np.linspace(0.5, 4.0, 8)
    assert audit_release(release, 1.0, thresholds) <= EPS
    assert audit_release(release, 0.5, thresholds) > EPS * 1.3


def test_gaussian_audit_against_its_zcdp_guarantee():
    rho, delta = 0.5, 1e-3
    eps = zcdp_to_dp(rho, delta)

    def release(x, rng):
        return m.gaussian(x, rho, 1.0, rng)

    thresholds = np.linspace(0.0, 4.0, 17)
    assert audit_release(release, 1.0, thresholds, delta) <= eps
    assert audit_release(release, 0.5, thresholds, delta) > eps


def test_exponential_matches_softmax_and_survives_huge_scores():
    rng = np.random.default_rng(3)
    scores = np.array([0.0, 1.0, 2.0, 3.0]) + 1e12  # exp() of these would overflow
    picks = m.exponential(np.tile(scores, (100_000, 1)), 2.0, 1.0, rng)
    expected = np.exp(scores - scores.max())
    expected /= expected.sum()
    counts = np.bincount(picks, minlength=4)
    assert chisquare(counts, expected * counts.sum()).pvalue > 1e-4


def test_exponential_never_picks_excluded_candidates():
    rng = np.random.default_rng(0)
    scores = np.array([-np.inf, 0.0, -np.inf, 0.0])
    picks = m.exponential(np.tile(scores, (5000, 1)), 1.0, 1.0, rng)
    assert set(np.unique(picks)) == {1, 3}


def test_top_k_equals_sequential_peeling_in_distribution():
    rng = np.random.default_rng(5)
    scores = np.array([3.0, 2.0, 1.0, 0.0])
    first_two = [tuple(m.exponential_top_k(scores, 2, 2.0, 1.0, rng)) for _ in range(20_000)]
    # the probability of the ordered pair (i, j) under two peels is p_i · p_j / (1 − p_i)
    w = np.exp(scores * 2.0 / 2)
    p = w / w.sum()
    pairs = [(i, j) for i in range(4) for j in range(4) if i != j]
    expected = np.array([p[i] * p[j] / (1 - p[i]) for i, j in pairs])
    observed = np.array([first_two.count(pair) for pair in pairs])
    assert chisquare(observed, expected * len(first_two)).pvalue > 1e-4


def test_gaussian_sigma_formula():
    assert m.gaussian_sigma(0.25, math.sqrt(2)) == pytest.approx(math.sqrt(2) / math.sqrt(0.5))


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), "x"])
def test_mechanisms_refuse_bad_epsilon(bad):
    rng = np.random.default_rng(0)
    with pytest.raises(ParameterError, match="epsilon"):
        m.exponential([1.0, 2.0], bad, 1.0, rng)
    with pytest.raises(ParameterError, match="epsilon"):
        m.laplace([1.0], bad, 1.0, rng)


def test_mechanisms_refuse_bad_scores():
    rng = np.random.default_rng(0)
    with pytest.raises(ParameterError, match="at least one candidate"):
        m.exponential([], 1.0, 1.0, rng)
    with pytest.raises(ParameterError, match="finite"):
        m.permute_and_flip([1.0, np.nan], 1.0, 1.0, rng)
    with pytest.raises(ParameterError, match="excluded"):
        m.report_noisy_max([-np.inf, -np.inf], 1.0, 1.0, rng)
