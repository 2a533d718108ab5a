"""The DP simple genetic algorithm (Humphries & Kerschbaum 2023, Algorithm 4.1): private
selection over a candidate set too large to enumerate.

Each of N_g generations scores the population (the only access to private data), keeps N_s
parents by peeling (Gumbel top-N_s, one ε_s exponential mechanism per parent), copies them
unchanged (elitism) and fills the population with children of uniformly drawn parent pairs:
crossover with probability p_c, then each gene mutated with probability p_m. A final
exponential mechanism picks the output from the last population. That is n = N_g·N_s + 1
selections, and ε_s is the largest per-selection ε whose bounded-range composition over n
stays within (ε, δ) (ln(1/δ) inside the square root). Everything but the selections is
post-processing.

A chromosome is one row of an array and :class:`Genes` holds the breeding every encoding
shares: :class:`RealGenes` is the paper's weights in a box (Gaussian mutation); subsets of a
public pool are DP-Select's ``Subsets`` (:mod:`synth.methods.dpselect.ga`), the one subset
encoding. ``utility`` scores a whole population at once, so it can be vectorised; an
encoding may override :meth:`Genes.breed` (``Subsets`` does, to keep cached counts exact).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from synth.errors import ParameterError, check_epsilon
from synth.privacy.composition import bounded_range, per_step_epsilon
from synth.privacy.mechanisms import exponential, exponential_top_k
from synth.validation import Param, check_all, specs

# the paper's defaults: N_g by ε ∈ {10^-2, 10^-1.5, …, 10^1.5} (its §5, averaged optima)
GENERATIONS = ((10**-2, 10), (10**-1.5, 10), (10**-1, 20), (10**-0.5, 50), (1.0, 75),
               (10**0.5, 100), (10.0, 120), (10**1.5, 120))


def default_generations(epsilon: float) -> int:
    """N_g from the paper's table: the entry of the nearest tabulated ε (in log scale)."""
    logs = np.log10([e for e, _ in GENERATIONS])
    return GENERATIONS[int(np.argmin(np.abs(logs - np.log10(epsilon))))][1]


class Genes:
    """An encoding: ``length`` genes per chromosome, ``random``, ``crossover`` and ``mutate``."""

    length: int

    def breed(self, parents: np.ndarray, count: int, p_c: float, p_m: float,
              rng: np.random.Generator) -> np.ndarray:
        """The next population: the parents unchanged (elitism), then ``count`` children of
        uniformly drawn pairs of distinct parents, crossed over with probability p_c (else
        copied), then every gene mutated with probability p_m."""
        pairs = -(-count // 2)
        a = rng.integers(len(parents), size=pairs)
        b = (a + rng.integers(1, len(parents), size=pairs)) % len(parents)
        x, y = self.crossover(parents[a], parents[b], rng)
        cross = (rng.random(pairs) < p_c)[:, None]
        kids = np.concatenate([np.where(cross, x, parents[a]), np.where(cross, y, parents[b])])
        return np.concatenate([parents, self.mutate(kids, p_m, rng)[:count]])


class RealGenes(Genes):
    """Genes in [low, high]: uniform crossover, Gaussian mutation (variance 0.1), clipping."""

    def __init__(self, length: int, low: float = -1.0, high: float = 1.0,
                 variance: float = 0.1):
        self.length, self.low, self.high, self.sigma = length, low, high, float(np.sqrt(variance))

    def random(self, count: int, rng: np.random.Generator) -> np.ndarray:
        return rng.uniform(self.low, self.high, (count, self.length))

    def crossover(self, a: np.ndarray, b: np.ndarray, rng) -> tuple[np.ndarray, np.ndarray]:
        take = rng.random(a.shape) < 0.5
        return np.where(take, a, b), np.where(take, b, a)

    def mutate(self, pop: np.ndarray, p_m: float, rng) -> np.ndarray:
        hit = rng.random(pop.shape) < p_m
        noisy = pop + np.where(hit, rng.normal(0, self.sigma, pop.shape), 0.0)
        return np.clip(noisy, self.low, self.high)


@dataclass(frozen=True)
class Result:
    best: np.ndarray  # the chromosome chosen by the final selection
    epsilon_per_selection: float
    selections: int
    epsilon: float  # the bounded-range total of the selections (≤ the budget)
    history: list[float]  # the best utility of each generation (not private: for the owner)


# the GA's settings, as every caller (DP-Select's ga engine) declares them
GA_PARAMS = specs(
    Param("generations", int, low=0, optional=True, symbol="N_g", label="Generations",
          help="Generations of the GA; empty takes the paper's table at the selection's ε."),
    Param("population", int, low=2, symbol="N_p", label="Population",
          help="Chromosomes in each generation."),
    Param("parents", int, low=2, symbol="N_s", label="Parents",
          help="Parents kept in each generation, one private selection each: at most the "
               "population."),
    Param("p_c", float, low=0, high=1, label="Crossover probability", symbol="p_c",
          help="Probability that a pair of parents is crossed over rather than copied."),
    Param("p_m", float, low=0, high=1, optional=True, label="Mutation probability",
          symbol="p_m",
          help="Probability that each gene mutates; empty takes 1/(genes + 1)."))


def check_settings(generations: int | None, population: int, parents: int, p_c: float,
                   p_m: float | None) -> None:
    """Name the first bad GA setting in a ParameterError (None: the paper's default)."""
    values = check_all({"generations": generations, "population": population,
                        "parents": parents, "p_c": p_c, "p_m": p_m}, GA_PARAMS)
    if values["parents"] > values["population"]:
        raise ParameterError(f"parents (N_s={values['parents']}) cannot exceed the population "
                             f"(N_p={values['population']})")


def dpsga(utility: Callable[[np.ndarray], np.ndarray], sensitivity: float, genes: Genes,
          epsilon: float, delta: float, rng: np.random.Generator, *,
          generations: int | None = None, population: int = 200, parents: int = 10,
          p_c: float = 0.5, p_m: float | None = None, init: np.ndarray | None = None,
          progress: Callable[[int, int, float], None] | None = None) -> Result:
    """Privately choose a chromosome with high ``utility`` (sensitivity ``sensitivity``).

    ``rng`` steers only the search (initial population, breeding): the selections draw their
    noise from :mod:`synth.privacy.mechanisms`."""
    check_epsilon(epsilon)
    check_settings(generations, population, parents, p_c, p_m)
    generations = default_generations(epsilon) if generations is None else int(generations)
    population, parents = int(population), int(parents)
    p_m = 1 / (genes.length + 1) if p_m is None else p_m
    n = generations * parents + 1
    eps_s = per_step_epsilon(epsilon, n, delta, "bounded_range")
    pop = genes.random(population, rng)
    if init is not None:
        pop[:len(init)] = init[:population]
    history = []
    for g in range(generations):
        scores = np.asarray(utility(pop), dtype=float)
        history.append(float(scores.max()))
        chosen = pop[exponential_top_k(scores, parents, eps_s, sensitivity)]
        pop = genes.breed(chosen, population - parents, p_c, p_m, rng)
        if progress is not None:
            progress(g + 1, generations, history[-1])
    scores = np.asarray(utility(pop), dtype=float)
    best = pop[exponential(scores, eps_s, sensitivity)]
    return Result(best, eps_s, n, bounded_range(eps_s, n, delta), history)
