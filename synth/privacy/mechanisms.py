"""Every draw of privacy noise: the one home for it.

Noise comes from **OpenDP's samplers** (OpenSSL's DRBG, seeded by the operating system; there
is no seed to set). They are exact on floats: Laplace and Gaussian noise is a discrete
Laplace or Gaussian draw on the grid of multiples of 2^-1074, on which every float lies, so
rounding costs no privacy; the exponential mechanism is report-noisy-max sampled exactly, with
no float noise at all. So neither the float attacks on textbook samplers (Mironov 2012) nor a
seed can replay them. Randomness that is part of a mechanism but not a scalar noise draw
(DP-SGD's Poisson batches and Gaussian noise, private sampling's draws from its density)
comes from :func:`torch_generator` / :func:`fresh_rng`, seeded from ``os.urandom`` on every
call. Nothing here takes a user's seed.

The callers charge the ledger first (:meth:`synth.privacy.budget.Ledger.charge`), then call a
mechanism with the same parameters. Arguments come in the order: data-derived values, privacy
parameter (ε) or noise scale, sensitivity. Selections work on the last axis of ``scores``, so
a batch of independent selections is one call.

Tests and benchmarks that need byte-identical runs wrap them in :func:`replayable_noise`:
noise then comes from a seeded numpy generator and every ledger entry charged meanwhile says
``"replayable_noise": true`` (a ledger with one says it is no private release). The app and
the CLI never call it.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterator

import numpy as np

from synth.errors import ParameterError, check_positive

__all__ = [
    "exponential",
    "exponential_top_k",
    "fresh_rng",
    "gaussian",
    "laplace",
    "load",
    "replayable",
    "replayable_noise",
    "torch_generator",
]

_test_rng: np.random.Generator | None = None


@contextlib.contextmanager
def replayable_noise(seed: int) -> Iterator[None]:
    """**Tests and benchmarks only**: noise from ``default_rng(seed)`` inside the block, so a
    run can be replayed byte for byte. Every ledger entry charged inside is marked replayable,
    and such a ledger says it is not a private release."""
    global _test_rng
    previous, _test_rng = _test_rng, np.random.default_rng(seed)
    try:
        yield
    finally:
        _test_rng = previous


def replayable() -> bool:
    """Whether the test-only switch is on (the ledger marks what it charges meanwhile)."""
    return _test_rng is not None


def fresh_rng() -> np.random.Generator:
    """A generator seeded from 128 bits of ``os.urandom``: for a mechanism's own randomness
    that is not a scalar noise draw (private sampling's draws from its density). Fresh on
    every call, never stored in a release."""
    if _test_rng is not None:
        return _test_rng
    return np.random.default_rng(int.from_bytes(os.urandom(16), "little"))


def torch_generator(device: str = "cpu"):
    """A torch generator for DP-SGD's Poisson batches or noise, its whole state from
    ``os.urandom`` (torchcsprng, which Opacus's ``secure_mode`` needs, has no build for our
    torch). CPU generators are MT19937, whose ``manual_seed`` keeps only 32 bits of a seed: the
    624-word state is filled from the OS instead. CUDA's Philox takes a 64-bit seed."""
    import torch

    generator = torch.Generator(device=device)
    if _test_rng is not None:
        return generator.manual_seed(int(_test_rng.integers(2**63 - 1)))
    if generator.device.type != "cpu":
        return generator.manual_seed(int.from_bytes(os.urandom(8), "little") >> 1)
    state = generator.manual_seed(_MT_PROBE).get_state().clone()
    words = state[_MT_OFFSET:_MT_OFFSET + 16].numpy().view(np.uint64)
    if list(words) != _MT_PROBE_WORDS:  # a torch whose generator state we do not know
        raise RuntimeError("unknown layout of torch's CPU generator state: cannot seed it "
                           "from the OS")
    fresh = np.frombuffer(os.urandom(4 * _MT_WORDS), dtype=np.uint32).astype(np.uint64)
    state[_MT_OFFSET:_MT_OFFSET + 8 * _MT_WORDS] = torch.from_numpy(fresh.view(np.uint8).copy())
    return generator.set_state(state)  # left = 1: the first draw twists the fresh state


# torch's CPU generator state: seed, left, seeded, next, then MT19937's 624 words as uint64 at
# byte 24; checked against the standard initialisation of a known seed before every use
_MT_WORDS, _MT_OFFSET, _MT_PROBE, _MT_PROBE_WORDS = 624, 24, 12345, [12345, 2003863422]


def _positive(value: float, name: str) -> float:
    return check_positive(value, name, ParameterError)


def _dp():
    import opendp.prelude as dp  # deferred: the app's pages import this module

    dp.enable_features("contrib")
    return dp


def load() -> None:
    """Import OpenDP, a second or two in a fresh interpreter: a fit does it first, in
    :meth:`~synth.methods.FitContext.wait`, so its first draw of noise does not go quiet."""
    _dp()


@functools.lru_cache(maxsize=256)
def _additive(kind: str, scale: float):
    dp = _dp()
    domain = dp.vector_domain(dp.atom_domain(T=float, nan=False))
    if kind == "laplace":
        return dp.m.make_laplace(domain, dp.l1_distance(T=float), scale=scale)
    return dp.m.make_gaussian(domain, dp.l2_distance(T=float), scale=scale)


@functools.lru_cache(maxsize=64)
def _selection(scale: float, k: int):
    dp = _dp()
    space = (dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.linf_distance(T=float))
    if k == 0:  # Gumbel noise: report-noisy-max is then exactly the exponential mechanism
        return dp.m.make_noisy_max(*space, dp.zero_concentrated_divergence(), scale=scale)
    return dp.m.make_noisy_top_k(*space, dp.zero_concentrated_divergence(), k=k, scale=scale)


def _add(kind: str, values, scale: float) -> np.ndarray:
    v = np.asarray(values, dtype=float)
    if not np.isfinite(v).all():
        raise ParameterError(f"{kind} noise needs finite values")
    if v.size == 0:
        return v.copy()
    if _test_rng is not None:
        draw = _test_rng.laplace if kind == "laplace" else _test_rng.normal
        return v + draw(0.0, scale, size=v.shape)
    noisy = _additive(kind, float(scale))(np.ascontiguousarray(v.ravel()))
    return np.asarray(noisy, dtype=float).reshape(v.shape)


def laplace(values, scale: float) -> np.ndarray:
    """values + Laplace(b) per coordinate: (Δ₁/b)-DP for a vector of L1 sensitivity Δ₁."""
    return _add("laplace", values, _positive(scale, "Laplace scale"))


def gaussian(values, sigma: float) -> np.ndarray:
    """values + N(0, σ²) per coordinate: Δ₂²/(2σ²)-zCDP for a vector of L2 sensitivity Δ₂."""
    return _add("gaussian", values, _positive(sigma, "Gaussian sigma"))


def _scores(scores) -> np.ndarray:
    s = np.asarray(scores, dtype=float)
    if s.ndim == 0 or s.shape[-1] == 0:
        raise ParameterError("a selection needs at least one candidate score")
    if np.isnan(s).any() or np.isposinf(s).any():
        raise ParameterError("candidate scores must be finite (−inf marks an excluded candidate)")
    if np.isneginf(s).all(axis=-1).any():
        raise ParameterError("every candidate is excluded (all scores are −inf)")
    return s


def _gumbel_scale(epsilon: float, sensitivity: float, monotone: bool = False) -> float:
    """β = 2Δ/ε: argmax(s + Gumbel(β)) draws i with probability ∝ exp(ε·s_i/(2Δ)); Δ/ε for
    scores that all move the same way between neighbours (``monotone``)."""
    factor = 1 if monotone else 2
    return factor * _positive(sensitivity, "sensitivity") / _positive(epsilon, "epsilon")


def exponential(scores, epsilon: float, sensitivity: float, monotone: bool = False):
    """Exponential mechanism, Pr[i] ∝ exp(ε·s_i / (2Δ)), one pick per row of ``scores``
    (exp(ε·s_i/Δ) for ``monotone`` scores: :class:`~synth.privacy.events.Exponential`).

    Report-noisy-max with Gumbel noise of scale 2Δ/ε is exactly this distribution and never
    exponentiates, so huge score ranges cannot overflow. ε-DP, ε-bounded range.
    """
    s = _scores(scores)
    beta = _gumbel_scale(epsilon, sensitivity, monotone)
    rows = s.reshape(-1, s.shape[-1])
    if _test_rng is not None:
        picks = np.argmax(rows + _test_rng.gumbel(0.0, beta, size=rows.shape), axis=-1)
    else:
        pick = _selection(beta, 0)
        picks = np.array([_pick(pick, row) for row in rows], dtype=np.int64)
    return picks.reshape(s.shape[:-1]) if s.ndim > 1 else picks[0]


def _pick(measurement, row: np.ndarray) -> int:
    """OpenDP's noisy max over the finite scores of ``row``, as an index into ``row``."""
    alive = np.flatnonzero(np.isfinite(row))
    return int(alive[measurement(row[alive])])


def exponential_top_k(scores, k: int, epsilon: float, sensitivity: float) -> np.ndarray:
    """k picks without replacement, each an ε-exponential mechanism (peeling).

    One-shot Gumbel top-k equals k sequential peels in distribution (Durfee–Rogers), so the
    cost is k ε-BR selections. Returns indices in pick order.
    """
    s = _scores(scores)
    if s.ndim != 1:
        raise ParameterError("exponential_top_k takes a 1-D score vector")
    alive = np.flatnonzero(np.isfinite(s))
    if not 1 <= k <= alive.size:
        raise ParameterError(f"k must be between 1 and the number of candidates, got {k}")
    beta = _gumbel_scale(epsilon, sensitivity)
    if _test_rng is not None:
        noisy = s + _test_rng.gumbel(0.0, beta, size=s.shape)
        top = np.argpartition(-noisy, k - 1)[:k]
        return top[np.argsort(-noisy[top], kind="stable")]
    return alive[np.asarray(_selection(beta, int(k))(s[alive]), dtype=np.int64)]
