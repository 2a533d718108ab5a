"""Statistical privacy audits: a high-confidence lower bound on ε from observed outputs.

Run a mechanism many times on two neighbouring inputs D and D′ and count, for each event S,
how often its output fell in S. If the mechanism is (ε, δ)-DP then for every S
    Pr[M(D) ∈ S] ≤ e^ε Pr[M(D′) ∈ S] + δ   (and the same with D, D′ swapped),
so ln((p_lower(D) − δ) / p_upper(D′)) with Clopper–Pearson bounds is, with the stated
confidence, a lower bound on the true ε. An audit passes when that bound stays ≤ the claimed ε;
a broken mechanism (say, half the noise) shows up as a bound above it.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import beta

__all__ = ["epsilon_lower_bound", "event_counts"]


def _clopper_pearson(hits: np.ndarray, trials: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """One-sided (1 − alpha) lower and upper bounds on a binomial rate, per event."""
    hits = np.asarray(hits, dtype=float)
    lower = np.where(hits > 0, beta.ppf(alpha, hits, trials - hits + 1), 0.0)
    upper = np.where(hits < trials, beta.ppf(1 - alpha, hits + 1, trials - hits), 1.0)
    return lower, upper


def epsilon_lower_bound(hits_d, hits_d2, trials: int, delta: float = 0.0,
                        confidence: float = 0.999) -> float:
    """Largest ε the counts prove, with probability ≥ ``confidence``, over all events and
    both directions (Bonferroni over every bound used). 0 when nothing is proven."""
    hits_d = np.asarray(hits_d, dtype=float)
    hits_d2 = np.asarray(hits_d2, dtype=float)
    if hits_d.shape != hits_d2.shape:
        raise ValueError("hit counts for D and D′ must have the same events")
    alpha = (1 - confidence) / (4 * hits_d.size)
    lo_d, up_d = _clopper_pearson(hits_d, trials, alpha)
    lo_d2, up_d2 = _clopper_pearson(hits_d2, trials, alpha)
    best = 0.0
    for lo, up in ((lo_d, up_d2), (lo_d2, up_d)):
        ok = (lo - delta > 0) & (up > 0)
        if ok.any():
            best = max(best, float(np.max(np.log((lo[ok] - delta) / up[ok]))))
    return best


def event_counts(outputs: np.ndarray, events: np.ndarray) -> np.ndarray:
    """Counts of outputs in each event.

    Discrete outputs (integers) with integer ``events`` count ``outputs == e``; real outputs
    with real ``events`` count ``outputs > t`` for each threshold t.
    """
    outputs = np.asarray(outputs)
    events = np.asarray(events)
    if np.issubdtype(outputs.dtype, np.integer) and np.issubdtype(events.dtype, np.integer):
        return np.array([(outputs == e).sum() for e in events])
    sorted_out = np.sort(outputs.ravel())
    return sorted_out.size - np.searchsorted(sorted_out, events, side="right")

