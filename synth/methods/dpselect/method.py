"""DP-Select: a DP-GAN pool, then private selection of the output rows from it.

A share of the budget trains a :class:`~synth.methods.dpgan.DPGAN`; its generator draws a pool
of ``pool_multiplier`` × n rows (post-processing, free). The output's n rows are then chosen
from the pool so that their marginals approach the private table's. The thesis chooses them
by the exponential mechanism (the ``rows`` engine, :mod:`.rows`); corrections to it, after
its notes:

* the marginals and their weights come from mutual information **on the pool** (free), not on
  the private table, whose use was unaccounted (G1);
* per-step ε inverts the bounded-range composition with ln(1/δ) inside the square root (G2);
* with S sections the private table and the pool are split into S disjoint parts and each
  section is a separate selection under parallel composition, with the sensitivity of its own
  size, 2/n_s (G6); T candidates are distinct rows not chosen before (G5).

Three engines choose the rows (:mod:`.engines`, each owning the selection stage's parameters,
accountant and plan): ``measure`` (the default) spends the selection share on Gaussian
measurements of the private table's marginals, chosen adaptively, and then weights the pool to
fit them, which is post-processing (:mod:`.measure`); ``rows`` picks the rows one at a time (the
thesis); ``ga`` chooses a section's whole output at once with the DP simple GA (:mod:`.ga`),
N_g·N_s + 1 strong selections instead of n_s weak ones. The method holds a DP-GAN for the pool
(its ``gan``, whose parameters are named ``gan__epochs`` and so on) and one engine, whose
parameters are the method's own (``--set engine=ga``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from synth.encoding import Discretizer
from synth.methods.base import FitContext, Synthesizer, check_rows, inner, resample
from synth.methods.dpgan.codes import PrivateCodes
from synth.methods.dpgan.method import DPGAN, GAN
from synth.methods.dpselect.engines import ENGINES, SELECT, Engine
from synth.plan import Recipe
from synth.privacy.budget import Budget
from synth.privacy.unit import Population, PrivacyUnit
from synth.schema import Schema
from synth.validation import Param, nest, specs


class DPSelect(Synthesizer):
    """DP-GAN pool + private selection of rows: by measured marginals, or picks.

    Parameters
    ----------
    gan_share : fraction of the method's budget spent on the DP-GAN (the rest on selection).
    pool_multiplier : pool size as a multiple of the private table's row count (default 20,
        and for ``measure`` 2, or 20,000 rows if more: it weighs every pool row in every
        round, and adds as many rows drawn from its measured 1-way marginals).
    engine : "measure" (Gaussian measurements of marginals, then weights over the pool),
        "rows" (one exponential-mechanism pick per output row) or "ga" (the DP simple GA
        chooses a section's whole output); each engine's parameters are in :mod:`.engines`:
    rounds : T, the ``measure`` engine's rounds of select and measure (default 40, fewer on
        a small table, as Private-GSD's plan allows).
    candidates : T, candidates per step of the ``rows`` engine (default: ``pool_multiplier``,
        note G3).
    sections : S, disjoint sections of the table and the pool (parallel composition); default
        5 for ``rows`` and 1 for ``ga``, whose cost does not grow with a section's size.
    distance : "l1" (default), "l2" or "kolmogorov" (the ``ga`` engine: "l1" only).
    marginal_fraction : share of all column pairs used, the top ones by mutual information.
    generations, population, parents, p_c, p_m : the ``ga`` engine's N_g (default: the
        paper's table at the selection ε), N_p, N_s, crossover and per-gene mutation
        probabilities (p_m default 1/(n_s + 1)).
    gan : the pool's DP-GAN, configured (a :class:`DPGAN`; None: its defaults). Its
        parameters are named ``gan__epochs``, ``gan__batch_size`` and so on wherever
        parameters are named (``make``, ``--set``, saved configurations).
    """

    name = "dpselect"
    streams = False  # selection weighs the pool against the private rows in memory
    title = "DP-Select"
    summary = ("Trains a DP-GAN on a small share of the budget, draws a large pool from it, then "
               "chooses output rows from the pool to match privately measured marginals.")
    paper = "Ebrahimianghazani 2023 (MMath thesis, Waterloo)"
    when = ("Close pairs with a strong model of the target when a minute is fine and the "
            "table fits in memory: on Adult at ε = 1 (measure engine), 2-way TVD 0.047 and "
            "tree accuracy 0.804 in 87 s, second to AIM on pairs at ε = 0.5 (0.062).")
    share_param = "gan_share"
    quick: ClassVar[Mapping[str, Any]] = {"gan__epochs": 0.2, "rounds": 2}
    params: ClassVar[Mapping[str, Param]] = specs(
        Param("engine", str, choices=tuple(ENGINES), advanced=False, label="Selection engine",
              help="measure: Gaussian measurements of every column's marginal, every pair "
                   "with the target and the worst-matched other pairs, then the pool's rows "
                   "(and rows drawn from the 1-way measurements) weighted to fit them (free "
                   "post-processing); "
                   "rows: one exponential-mechanism pick per output row (the thesis); ga: "
                   "the DP simple GA chooses a section's whole output at once."),
        Param("gan_share", float, low=0, high=1, low_open=True, high_open=True,
              label="GAN share", help="Fraction of the method's budget spent on training "
                                      "the DP-GAN; the rest pays for the selection."),
        Param("pool_multiplier", float, low=1, optional=True, advanced=False,
              label="Pool size (× rows)",
              help="The generator draws this many times the table's rows; the output is "
                   "chosen from them. Empty takes 20 for rows and ga, and for measure 2 or "
                   "20,000 rows if more (it adds as many rows drawn from its measured 1-way "
                   "marginals). A "
                   "smaller pool makes a quicker trial."),
        *(p for engine in ENGINES.values() for p in engine.params.values()),
        *nest("gan", DPGAN.params))
    nested: ClassVar[Mapping[str, type[Synthesizer]]] = {"gan": DPGAN}

    def __init__(self, gan_share: float = 0.2, pool_multiplier: float | None = None,
                 engine: str = "measure", rounds: int | None = None,
                 candidates: int | None = None, sections: int | None = None,
                 distance: str = "l1", marginal_fraction: float = 0.1,
                 generations: int | None = None, population: int = 200, parents: int = 10,
                 p_c: float = 0.5, p_m: float | None = None, gan: DPGAN | None = None):
        self.gan_share = gan_share
        self.pool_multiplier = pool_multiplier
        self.engine = engine
        self.rounds = rounds
        self.candidates = candidates
        self.sections = sections
        self.distance = distance
        self.marginal_fraction = marginal_fraction
        self.generations = generations
        self.population = population
        self.parents = parents
        self.p_c = p_c
        self.p_m = p_m
        self.gan = gan

    @property
    def stages(self) -> dict[str, float]:  # type: ignore[override]
        share = self.params["gan_share"].check(self.gan_share)
        return {GAN: share, SELECT: 1 - share}

    @property
    def accountants(self) -> dict[str, str]:  # type: ignore[override]
        """The GAN's PLD, and the selection's: its engine's (the default engine's for an
        engine not known, which the parameter checks then refuse by name)."""
        engine = next((e for name, e in ENGINES.items() if name == self.engine),
                      ENGINES[self.param_defaults()["engine"]])
        return {GAN: "pld", SELECT: engine.accountant}

    @property
    def selector(self) -> Engine:
        """The engine these parameters name, holding its own of them."""
        return self._parts(self.get_params())[1]

    def _parts(self, values: Mapping[str, Any]) -> tuple[DPGAN, Engine]:
        """The DP-GAN that draws the pool (a fresh one, configured as ``gan``) and the engine
        that chooses from it."""
        engine = ENGINES[self.params["engine"].check(values["engine"])]
        return DPGAN(**inner(values, "gan")), engine(values)

    def check_unit(self, unit: PrivacyUnit) -> None:
        self.selector.check_unit(unit)

    def _check_rules(self, values: dict, population: Population | None,
                     schema: Schema | None) -> None:
        engine = self._parts(values)[1]
        engine.check_rules(values, population, schema)
        # the pool's memory bound from public facts: n, or k·U for units (n̂ comes later)
        if population is not None and schema is not None:
            check_rows(engine.held_rows(population.units * population.max_rows), len(schema),
                       engine.held)

    def _memory(self, values: dict, population: Population | None, schema: Schema | None
                ) -> dict[str, int]:
        """The engine's working arrays (the DP-GAN's networks: the base's, as nested)."""
        return self._parts(values)[1].memory(population, schema)

    def selections(self, n: int, epsilon: float) -> int:
        """How many private selections share the selection budget ``epsilon`` (the app's
        composition explorer starts there)."""
        return self.selector.selections(n, epsilon)

    def _recipe(self, population: Population, schema: Schema, budget: Budget) -> Recipe:
        """The GAN's recipe, then the engine's; time where the engine has a cost model."""
        gan, engine = self._parts(self.get_params())
        pool = gan._recipe(population, schema, budget)
        selection = engine.recipe(population, schema, *budget.allowance(SELECT))
        return Recipe((*pool.steps, *selection.steps), {GAN: pool, SELECT: selection},
                      seconds=None if selection.seconds is None else
                      pool.seconds + selection.seconds)

    def _fit(self, data: pd.DataFrame, schema: Schema, recipe: Recipe, ctx: FitContext
             ) -> None:
        gan, engine = self._parts(self.get_params())
        discretizer = Discretizer(schema, bins=gan.bins, exact_integers=gan.exact_integers)
        codes = ctx.wait(lambda: discretizer.codes(data))  # before the GAN's stage begins
        self.gan_ = gan.train(PrivateCodes.of_array(codes), discretizer, recipe[GAN]["sgd"],
                              self.ledger_, self.rng_, ctx, self._units)
        # n for one row per unit, n̂ for the measure engine
        m = engine.pool_rows(self.population_.rows)
        ctx.stage("pool", 1, f"drawing a pool of {m:,} rows from the generator")
        rng = self.rng_  # this fit's: a helper left behind by a cancel never draws another's
        pool = ctx.wait(lambda: discretizer.decode(gan.sample_codes(m, rng), rng))
        ctx.progress("pool", 1, 1)
        chosen = engine.choose(data, schema, pool, self.ledger_, self.population_,
                               recipe[SELECT], self.rng_, ctx)
        self.selector_ = engine
        self.selection_distance_ = chosen.distance
        self.synthetic_ = chosen.rows

    def _sample(self, n: int, rng: np.random.Generator) -> pd.DataFrame:
        """Rows of the selected table (post-processing)."""
        order = resample(len(self.synthetic_), n, rng)
        return self.synthetic_.iloc[order].reset_index(drop=True)
