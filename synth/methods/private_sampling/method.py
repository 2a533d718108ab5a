"""Private sampling behind the method interface, at demo scale (p ≤ 20 bits).

The table is binarised from its public schema (each categorical one-hot, each number one-hot
over ``bins`` equal-width bins), mapped to {−1, 1}^p, and :func:`.algorithm.
fit_density` finds the density whose k draws are the release. The run is ε-DP only when
Theorem 4.1 allows k samples for (p, d, n, m, ε, δ, Δ); everything in that check is public
(the schema, the row count, the parameters), so it is made before the data is read. When it
fails the method refuses, unless ``allow_no_guarantee`` asks for a demonstration run, whose
ledger then says "no guarantee" rather than a number.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from synth.encoding import Discretizer, finalize, model_width
from synth.errors import BudgetError, Fix, ParameterError
from synth.methods.base import FitContext, Synthesizer, resample
from synth.methods.private_sampling.algorithm import fit_density
from synth.methods.private_sampling.bounds import Setting, show, walsh_count
from synth.plan import Recipe, Step
from synth.privacy.budget import Budget
from synth.privacy.events import NoGuarantee, PureDP, describe
from synth.privacy.mechanisms import fresh_rng
from synth.privacy.unit import Population, PrivacyUnit
from synth.schema import Schema
from synth.validation import Param, specs

SAMPLE = "sample"
MAX_BITS = 20  # demo scale: the LP has m variables and the Walsh matrix C(p, ≤d) rows
# a demonstration at up to 20 bits: a real table's way out is another method
ANOTHER = Fix("Use MST instead (private sampling is a demonstration on small cubes)",
              (("method", "mst"),))


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
    when = ("To see the paper's guarantee, not to release a real table: its feasibility bounds "
            "hold only on small Boolean cubes (the Feasibility page checks a table first).")
    stages: ClassVar[Mapping[str, float]] = {SAMPLE: 1.0}
    accountants: ClassVar[Mapping[str, str]] = {SAMPLE: "basic"}
    pure_stages: ClassVar[frozenset[str]] = frozenset({SAMPLE})  # Theorem 4.1: ε-DP
    quick: ClassVar[Mapping[str, Any]] = {"bins": 2, "k": 200, "allow_no_guarantee": True}
    params: ClassVar[Mapping[str, Param]] = specs(
        Param("d", int, low=1, advanced=False, label="Marginal degree",
              help="Marginals of up to this many bits are matched; at most the bits of the "
                   "binarised table."),
        Param("m", int, low=1, optional=True, label="Reduced space size",
              help="Points of the reduced space S; empty takes 8·C(p, ≤d)."),
        Param("k", int, low=1, optional=True, advanced=False, label="Samples released",
              help="Rows released; empty takes the table's row count."),
        Param("accuracy_delta", float, low=0, high=0.5, low_open=True, symbol="δ",
              label="Accuracy margin",
              help="Algorithm 1's δ, an accuracy margin and not the δ of (ε, δ)-DP: the "
                   "density keeps at least δ/m at every point of S."),
        Param("Delta", float, low=1, optional=True, symbol="Δ", label="Density cap",
              help="The cap on the density, at least 1 + the accuracy margin; empty takes "
                   "four times the density of a table spread evenly over the valid patterns."),
        Param("bins", int, low=1, label="Bins per numeric column",
              help="One-hot bins per numeric column: each adds bits to the cube."),
        Param("allow_no_guarantee", bool, advanced=False,
              label="Run without a guarantee (demonstration)",
              help="Run even where Theorem 4.1 does not cover k; the ledger then says "
                   "'no guarantee' instead of an ε."))

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

    def check_unit(self, unit: PrivacyUnit) -> None:
        if unit.max_rows > 1:
            raise ParameterError(
                f"private sampling's Theorem 4.1 protects one row of a table whose row count "
                f"is public; it has no calibration for units of up to {unit.max_rows} rows. "
                "Keep one row per unit (max rows per unit = 1) or choose another method",
                fixes=(ANOTHER,))

    def _check_rules(self, values: dict, population: Population | None,
                     schema: Schema | None) -> None:
        Delta = values["Delta"]
        if Delta is not None and Delta < 1 + values["accuracy_delta"]:
            raise ParameterError(f"Delta must be a number ≥ 1 + accuracy_delta (the shrinkage "
                                 f"LP needs it), got {Delta!r}")

    def _setting(self, n: int, schema: Schema, epsilon: float) -> tuple[Discretizer, Setting]:
        """The binarisation and Theorem 4.1's setting, from public facts only."""
        coder = Discretizer(schema, bins=self.bins, exact_integers=0)
        p = int(coder.sizes.sum())
        delta, Delta = self.accuracy_delta, self._Delta(coder, p)
        if p > MAX_BITS:
            raise ParameterError(f"private sampling runs at demo scale (p ≤ {MAX_BITS} bits), "
                                 f"but this schema binarises to p = {p}: leave columns out "
                                 "(the Data page) or use fewer bins", fixes=(ANOTHER,))
        d = self.d
        if d > p:
            raise ParameterError(f"d (= {d}) cannot exceed the {p} bits of the binarised table")
        m = 8 * walsh_count(p, d) if self.m is None else self.m
        k = n if self.k is None else self.k
        setting = Setting(p, d, math.log10(n), epsilon, delta, 0.125,
                          math.log10(Delta), math.log10(m), k)
        return coder, setting

    def _Delta(self, coder: Discretizer, p: int) -> float:
        if self.Delta is not None:
            return self.Delta
        patterns = math.prod(int(s) for s in coder.sizes)
        return max(1 + self.accuracy_delta, 4 * 2.0 ** p / patterns)

    def _event(self, setting: Setting, epsilon: float) -> PureDP | NoGuarantee:
        """ε-DP by Theorem 4.1 when it covers k; otherwise a refusal, unless a demonstration
        was asked for (then an event without a guarantee)."""
        allowed = setting.log10_k_hi(setting.log10_m)
        if allowed >= math.log10(setting.k):
            return PureDP(epsilon, "Theorem 4.1 (Boedihardjo–Strohmer–Vershynin): k within "
                                   "its bound")
        if not self.allow_no_guarantee:
            raise BudgetError(
                f"Theorem 4.1 allows at most k = {show(allowed)} private samples here "
                f"(p = {setting.p}, d = {setting.d}, m = {show(setting.log10_m)}, "
                f"Δ = {show(setting.log10_Delta)}), so k = {setting.k:,.0f} would carry no DP "
                "guarantee. "
                "Set allow_no_guarantee=true to run it as a demonstration (the ledger then "
                "says 'no guarantee'), or see the Feasibility page")
        return NoGuarantee(f"k = {setting.k:,.0f} exceeds Theorem 4.1's bound {show(allowed)}: "
                           "a demonstration run")

    def _memory(self, values: dict, population: Population | None, schema: Schema | None
                ) -> dict[str, int]:
        """Float64 bytes of the Walsh matrix of the m support points (l = C(p, ≤d) rows) and
        the LP HiGHS solves on it (about three copies), the n rows' Walsh features and the k
        released samples. p counts one bit per column when the schema is unknown."""
        p = 1 if schema is None else max(model_width(schema, values["bins"]), 1)
        d = min(values["d"], p)
        lines = walsh_count(min(p, MAX_BITS), d)  # p past 20 bits is refused by name anyway
        m = 8 * lines if values["m"] is None else values["m"]
        n = 1 if population is None else population.units  # one row per unit
        k = n if values["k"] is None else values["k"]
        cube = f"a {p}-bit cube, {lines:,} marginal coefficients"
        return {f"m ({cube})": 32 * lines * m, f"bins ({cube})": 8 * n * lines, "k": 2 * k * p}

    def _recipe(self, population: Population, schema: Schema, budget: Budget) -> Recipe:
        """With every domain public the cube is known up front, and so is the one event (or
        the refusal: over 20 bits, or k beyond Theorem 4.1 without a demonstration asked
        for). With private domains it waits for them: the share bounds it. A demonstration
        run may carry no guarantee: certainly when Theorem 4.1 does not cover k on a public
        cube, possibly when the cube waits for learned domains. No cost model."""
        mechanism = "private sampling (no added noise)"
        if not schema.releasable:
            private = [c.name for c in schema if not c.releasable]
            known = schema.drop(private)  # each private column binarises to a bit at least
            fewest = len(private) + (int(Discretizer(known, bins=self.bins).sizes.sum())
                                     if known.names else 0)
            if fewest > MAX_BITS:  # refused before the domain share is spent on a doomed run
                raise ParameterError(
                    f"private sampling runs at demo scale (p ≤ {MAX_BITS} bits), but this "
                    f"schema binarises to p ≥ {fewest} whatever its learned domains: leave "
                    "columns out (the Data page) or use fewer bins", fixes=(ANOTHER,))
            return Recipe((Step(SAMPLE, None, exact=False, mechanism=mechanism,
                                meaning="the cube's size, and so whether Theorem 4.1 covers "
                                        "k, waits for the learned domains"),),
                          unbounded="allow_no_guarantee is set and the cube's size waits for "
                                    "the learned domains, so Theorem 4.1 may not cover k"
                          if self.allow_no_guarantee else "")
        eps = budget.allowance(SAMPLE)[0]
        coder, s = self._setting(population.rows, schema, eps)
        event = self._event(s, eps)
        allowed = s.log10_k_hi(s.log10_m)
        verdict = ("within Theorem 4.1: ε-DP" if isinstance(event, PureDP) else
                   "beyond Theorem 4.1: no DP guarantee")
        step = Step(SAMPLE, event, mechanism=mechanism,
                    scale=f"p = {s.p} bits, m = {show(s.log10_m)}, k = {s.k:,.0f}"
                    + (f"; {describe(event)}" if isinstance(event, PureDP) else ""),
                    meaning=f"Theorem 4.1 allows k ≤ {show(allowed)} at ε = {eps:.3g}: "
                            f"{verdict}")
        return Recipe((step,), {"coder": coder, "setting": s},
                      unbounded=event.reason if isinstance(event, NoGuarantee) else "")

    def _fit(self, data: pd.DataFrame, schema: Schema, recipe: Recipe, ctx: FitContext
             ) -> None:
        self.coder_, setting = recipe["coder"], recipe["setting"]
        (step,) = recipe.steps  # from public facts only, before the data is read
        event = step.event
        ctx.stage(SAMPLE, 3, f"{setting.p} bits, m = {show(setting.log10_m)}: LP, QP, "
                             f"{setting.k:,.0f} samples")
        Delta = 10 ** setting.log10_Delta
        self.ledger_.charge(SAMPLE, event,
                            f"{setting.k:,.0f} samples from a density on the {setting.p}-bit "
                            f"cube matching degree-≤{setting.d} marginals (m = "
                            f"{round(10 ** setting.log10_m):,}, accuracy δ = {setting.delta:g}, "
                            f"Δ = {Delta:.3g})")
        codes = self.coder_.codes(data)
        bits = self._bits(codes)
        ctx.progress(SAMPLE, 1, 3)
        density = fit_density(bits, setting.d, round(10 ** setting.log10_m),
                              setting.delta, Delta, self.rng_)
        ctx.progress(SAMPLE, 2, 3, shrinkage=density.shrinkage)
        self.density_ = density
        # the k draws from the private density are the mechanism: fresh OS entropy
        self.release_ = self._decode(density.sample(int(setting.k), fresh_rng()), schema)
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
