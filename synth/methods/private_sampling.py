"""Private sampling behind the method interface, at demo scale (p ≤ 20 bits).

The table is binarised from its public schema (each categorical one-hot, each number one-hot
over ``bins`` equal-width bins), mapped to {−1, 1}^p, and :func:`synth.private_sampling.
fit_density` finds the density whose k draws are the release. The run is ε-DP only when
Theorem 4.1 allows k samples for (p, d, n, m, ε, δ, Δ); everything in that check is public
(the schema, the row count, the parameters), so it is made before the data is read. When it
fails the method refuses, unless ``allow_no_guarantee`` asks for a demonstration run, whose
ledger then says "no guarantee" rather than a number.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import ClassVar

import numpy as np
import pandas as pd

from synth.encoding import Discretizer, finalize
from synth.errors import BudgetError, ParameterError, check_int
from synth.feasibility import Setting, show, walsh_count
from synth.methods.base import FitContext, NoiseScale, Synthesizer, resample
from synth.privacy.budget import REPLACE_ONE, Budget, LedgerEntry
from synth.private_sampling import fit_density
from synth.schema import Schema

SAMPLE = "sample"
MAX_BITS = 20  # demo scale: the LP has m variables and the Walsh matrix C(p, ≤d) rows


class PrivateSampling(Synthesizer):
    """Noise-free private sampling on the Boolean cube (Boedihardjo–Strohmer–Vershynin).

    Parameters
    ----------
    d : degree of the matched marginals.
    m : size of the reduced space S (default 8·C(p, ≤d)).
    k : samples released (default: the table's row count).
    accuracy_delta : Algorithm 1's δ, the accuracy margin (not a DP δ). Every point of S
        keeps a density ≥ δ/m, so the one-hot encoding's structural zeros (two categories of
        one column never together) force a shrinkage λ of about δ toward uniform: the
        default 0.01 keeps it small, the paper's 1/4 shrinks half-way.
    Delta : Algorithm 1's Δ, the cap on the density, ≥ 1 + δ (default 4·2^p / the number of
        valid one-hot patterns: four times the density of a table spread evenly over them;
        public, from the schema).
    bins : one-hot bins per numeric column.
    allow_no_guarantee : run even when Theorem 4.1 does not cover k (the ledger then says
        "no guarantee").
    """

    name = "private_sampling"
    title = "Private sampling"
    summary = ("Noise-free sampling from a density that matches the table's low-order "
               "marginals on the Boolean cube. Its theorems almost never hold on real tables: "
               "a demonstration, checked on the Feasibility page.")
    paper = "Boedihardjo, Strohmer, Vershynin 2021; Pierquin et al. 2023"
    stages: ClassVar[Mapping[str, float]] = {SAMPLE: 1.0}

    def __init__(self, d: int = 2, m: int | None = None, k: int | None = None,
                 accuracy_delta: float = 0.01, Delta: float | None = None, bins: int = 2,
                 allow_no_guarantee: bool = False):
        self.d = d
        self.m = m
        self.k = k
        self.accuracy_delta = accuracy_delta
        self.Delta = Delta
        self.bins = bins
        self.allow_no_guarantee = allow_no_guarantee

    def _plan(self, n: int, schema: Schema, epsilon: float) -> tuple[Discretizer, Setting]:
        """The binarisation and Theorem 4.1's setting, from public facts only."""
        check_int(self.bins, "bins")
        coder = Discretizer(schema, bins=int(self.bins), exact_integers=0)
        p = int(coder.sizes.sum())
        delta = self.accuracy_delta
        if isinstance(delta, bool) or not (isinstance(delta, int | float) and 0 < delta <= 0.5):
            raise ParameterError(f"accuracy_delta must lie in (0, 1/2], got {delta!r}")
        Delta = self._Delta(coder, p)
        if isinstance(Delta, bool) or not (isinstance(Delta, int | float) and math.isfinite(Delta)
                                           and Delta >= 1 + delta):
            raise ParameterError(f"Delta must be a number ≥ 1 + accuracy_delta (the shrinkage "
                                 f"LP needs it), got {Delta!r}")
        if p > MAX_BITS:
            raise ParameterError(f"private sampling runs at demo scale (p ≤ {MAX_BITS} bits), "
                                 f"but this schema binarises to p = {p}: leave columns out "
                                 "(the Data page) or use fewer bins")
        d = check_int(self.d, "d")
        if d > p:
            raise ParameterError(f"d (= {d}) cannot exceed the {p} bits of the binarised table")
        m = 8 * walsh_count(p, d) if self.m is None else check_int(self.m, "m")
        k = n if self.k is None else check_int(self.k, "k")
        setting = Setting(p, d, math.log10(n), epsilon, float(delta), 0.125,
                          math.log10(Delta), math.log10(m), k)
        return coder, setting

    def _Delta(self, coder: Discretizer, p: int) -> float:
        if self.Delta is not None:
            return self.Delta
        patterns = math.prod(int(s) for s in coder.sizes)
        return max(1 + self.accuracy_delta, 4 * 2.0 ** p / patterns)

    def _guaranteed(self, setting: Setting) -> bool:
        """Theorem 4.1 covers k; otherwise refuse unless a demonstration was asked for."""
        allowed = setting.log10_k_hi(setting.log10_m)
        if allowed >= math.log10(setting.k):
            return True
        if not self.allow_no_guarantee:
            raise BudgetError(
                f"Theorem 4.1 allows at most k = {show(allowed)} private samples here "
                f"(p = {setting.p}, d = {setting.d}, m = {show(setting.log10_m)}, "
                f"Δ = {show(setting.log10_Delta)}), so k = {setting.k:,.0f} would carry no DP "
                "guarantee. "
                "Set allow_no_guarantee=true to run it as a demonstration (the ledger then "
                "says 'no guarantee'), or see the Feasibility page")
        return False

    def _preview(self, n: int, schema: Schema, budget: Budget) -> list[NoiseScale]:
        eps, _ = budget.allowance(SAMPLE)
        _, s = self._plan(n, schema, eps)
        allowed = s.log10_k_hi(s.log10_m)
        verdict = ("within Theorem 4.1: ε-DP" if allowed >= math.log10(s.k) else
                   "beyond Theorem 4.1: no DP guarantee")
        return [NoiseScale(SAMPLE, "private sampling (no added noise)",
                           f"p = {s.p} bits, m = {show(s.log10_m)}, k = {s.k:,.0f}",
                           f"Theorem 4.1 allows k ≤ {show(allowed)} at ε = {eps:.3g}: "
                           f"{verdict}")]

    def _fit(self, data: pd.DataFrame, schema: Schema, ctx: FitContext) -> None:
        eps, _ = self.ledger_.remaining(SAMPLE)
        self.coder_, setting = self._plan(len(data), schema, eps)
        guaranteed = self._guaranteed(setting)
        ctx.stage(SAMPLE, 3, f"{setting.p} bits, m = {show(setting.log10_m)}: LP, QP, "
                             f"{setting.k:,.0f} samples")
        codes = self.coder_.codes(data)
        bits = self._bits(codes)
        ctx.progress(SAMPLE, 1, 3)
        Delta = 10 ** setting.log10_Delta
        density = fit_density(bits, setting.d, round(10 ** setting.log10_m),
                              setting.delta, Delta, self.rng_)
        ctx.progress(SAMPLE, 2, 3, shrinkage=density.shrinkage)
        self.density_ = density
        self.ledger_.spend(LedgerEntry(
            stage=SAMPLE, mechanism="private sampling (Algorithm 1)",
            epsilon=eps if guaranteed else math.inf, delta=0.0,
            accounting="Theorem 4.1 (Boedihardjo–Strohmer–Vershynin): k within its bound, "
                       "pure ε-DP" if guaranteed else
                       f"k = {setting.k:,.0f} exceeds Theorem 4.1's bound "
                       f"{show(setting.log10_k_hi(setting.log10_m))}: a demonstration run",
            description=f"{setting.k:,.0f} samples from a density on {len(density.h):,} "
                        f"points of the {setting.p}-bit cube matching degree-≤{setting.d} "
                        f"marginals (shrinkage λ = {density.shrinkage:.3g})",
            neighbouring=REPLACE_ONE, guarantee=guaranteed,
            params={"p": setting.p, "d": setting.d, "m": len(density.h), "k": setting.k,
                    "accuracy_delta": setting.delta, "Delta": Delta,
                    "shrinkage": density.shrinkage, "sigma_min": density.sigma_min,
                    "sigma_bound": density.sigma_bound,
                    "log10_k_bound": setting.log10_k_hi(setting.log10_m)}))
        self.release_ = self._decode(density.sample(int(setting.k), self.rng_), schema)
        ctx.progress(SAMPLE, 3, 3)

    def _bits(self, codes: np.ndarray) -> np.ndarray:
        """One-hot codes as ±1 points of the cube."""
        blocks = [np.where(codes[:, [j]] == np.arange(size), 1, -1)
                  for j, size in enumerate(self.coder_.sizes)]
        return np.hstack(blocks).astype(np.int8)

    def _decode(self, points: np.ndarray, schema: Schema) -> pd.DataFrame:
        """Cube points back to rows: per column, a random bit among those set (all, if none)."""
        codes, start = [], 0
        for size in self.coder_.sizes:
            block = points[:, start:start + size] > 0
            block[~block.any(axis=1)] = True
            keys = self.rng_.random(block.shape) * block
            codes.append(np.argmax(keys, axis=1))
            start += size
        return finalize(self.coder_.decode(np.column_stack(codes), self.rng_), schema)

    def _sample(self, n: int, rng: np.random.Generator) -> pd.DataFrame:
        """Rows of the k released samples (post-processing: never new draws)."""
        order = resample(len(self.release_), n, rng)
        return self.release_.iloc[order].reset_index(drop=True)
