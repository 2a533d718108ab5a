"""Private-PGM (McKenna, Sheldon, Miklau 2019) as MST and AIM use it: a graphical model fitted
to noisy marginals, and rows sampled from it. Both are post-processing of the measurements.

The estimation is private-pgm's own (``mbi``: mirror descent over the marginal polytope, JAX
on the CPU in float64); the model's total is the public row count n (n̂ under a unit of
protection), so no measurement is spent on it. ``mbi`` samples with numpy's global generator:
:func:`sample` seeds it from the fit's post-processing generator, under a lock, so a seed
gives the same release and no other thread's draws are disturbed by ours.
"""

from __future__ import annotations

import functools
import string
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import opt_einsum

from synth.errors import Cancelled

_SAMPLING = threading.Lock()
BLOCK = 50  # mbi's steps between two callbacks (its CALLBACK_EVERY)
# drawing rows from a fitted model on 2 cores: a compile per column's step, then per cell
# of the rows drawn (benchmarks/progress.py, AIM and MST: 4.9–5.0 s on the census sample's
# 13 columns, 1.5–2.3 s on the panel's 7, 6.3–7.3 s on 20,000 flights, 10–15 s on 300,000)
DRAW_PER_COLUMN, DRAW_PER_CELL = 0.3, 1.5e-6
# how every fit's program is compiled: quickly rather than well (see _descent)
COMPILER = {"xla_backend_optimization_level": 0, "xla_cpu_use_fusion_emitters": False}


def draw_seconds(rows: int, columns: int) -> float:
    """Seconds :meth:`Model.sample` takes for ``rows`` rows of ``columns`` columns."""
    return (DRAW_PER_COLUMN + DRAW_PER_CELL * rows) * columns


def _mbi():
    """Import mbi with JAX in float64 (float32 stalls estimation on large tables) and no
    persistent compilation cache (mbi's many small programs make it counterproductive)."""
    import jax

    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_enable_compilation_cache", False)
    import mbi

    return mbi


@functools.cache
def _descent() -> type:
    """mbi's mirror descent, resumed where the last fit stopped, and ending at its potentials.

    * **Resumed**: the step size carries over, not only the potentials. mbi starts every fit
      at the cautious 2/(L·n), and its line search grows a step by 1 % an accepted
      iteration, so a warm-started refit of AIM's 50 steps moved a marginal barely half as
      far as its measurement asked; AIM read that as a model no longer improving and
      annealed its budget away in a few rounds (issue 51).
    * **Compiled once per model structure**: mbi computes the model's marginals eagerly
      before the first step and after the last, a dozen small programs compiled afresh for
      each new structure. Here the start's come from numpy (below) and the fit ends at its
      state (potentials, their marginals and step), which :meth:`Model.field` hands to
      mbi's sampler as they are. The start is typed as the steps' own state, so that every
      block of a fit, and a later fit of the same structure (AIM's final estimate after its
      last refit), runs the one compiled program.
    * **One marginal oracle a step**: mbi works out the marginals of the step's start, then
      of its trial point for the line search; the trial's are the next start's when the
      step is accepted, and the start's stay when it is not, so the state carries them and
      each step runs the oracle once: half the program to compile and half the work a step
      (the same iterates, to float precision). A fit starts from the marginals of the
      model it resumes (:meth:`Model.marginal`, exact, in numpy), or uniform ones from
      zero potentials.
    * **Compiled quickly** (:data:`COMPILER`: XLA's lowest backend optimisation, without
      its CPU fusion emitters): compiling is most of a fit's time (each of AIM's rounds
      compiles the part of the model its pick joined). On 2 cores a 20-column model's
      program compiled in 5.8 s against 10.4 s at full optimisation, and its 1,000 steps
      ran in 1.0 s against 0.3 s; on one of cliques three times as wide, 6.4 s against
      14.5 s to compile, 9.5 s against 3.0 s to run. A long fit of a large model is slower;
      every fit here runs 50 to a few thousand steps.
    """
    import jax
    import jax.numpy as jnp

    mbi = _mbi()
    estimation = mbi.estimation

    class Resumed(estimation.MirrorDescent):
        def _init(self, domain, loss_fn, known_total, *, warm_start=None, constraints=()):
            """``warm_start``: None, or the resumed fit's state and a function giving that
            model's counts over a clique (flat, row-major)."""
            cliques = loss_fn.cliques
            first = 2.0 / (loss_fn.lipschitz * known_total)  # mbi's own first step
            if warm_start is None:
                potentials = mbi.CliqueVector.zeros(domain, cliques)
                step = first

                def counts(clique):
                    return np.full(domain.size(clique), known_total / domain.size(clique))
            else:
                fitted, counts = warm_start
                # never below mbi's first step: at a part's optimum the line search halves
                # the step at every step, 1e-273 after a thousand, which would freeze the
                # part once a new measurement joins it
                potentials = _expanded(fitted.potentials, cliques)
                step = max(float(fitted.alpha), first)
            mu = mbi.CliqueVector(domain, cliques, {
                c: mbi.Factor(domain.project(c), jnp.asarray(
                    np.reshape(counts(c), domain.project(c).shape))) for c in cliques})
            # the loss of the start is never read, but typed as the steps return it (a
            # float64 array, not a weakly typed float), so that the fit's later blocks
            # reuse its first block's compiled program
            return estimation.MirrorDescentState(mu, potentials, float(step),
                                                 np.float64(np.inf))

        def _step(self, state, loss_fn, known_total, constraints=()):
            """mbi's step (Armijo's line search included) on the carried marginals."""
            oracle = self._oracle(loss_fn.cliques, state.potentials.domain,
                                  constraints=constraints)
            loss, gradient = jax.value_and_grad(loss_fn)(state.mu)
            trial = state.potentials - state.alpha * gradient
            mu = oracle(trial, known_total)
            trial_loss = loss_fn(mu)
            accept = loss - trial_loss >= 0.5 * state.alpha * gradient.dot(state.mu - mu)

            def kept(new, old):
                return jax.lax.cond(accept, lambda: new, lambda: old)

            return estimation.MirrorDescentState(
                kept(mu, state.mu), kept(trial, state.potentials),
                jax.lax.select(accept, 1.01 * state.alpha, 0.5 * state.alpha),
                jax.lax.select(accept, trial_loss, loss))

        def _finalize(self, state, known_total, constraints=()):
            return state

        @functools.partial(jax.jit, static_argnames=["self"], donate_argnames=["state"],
                           compiler_options=COMPILER)
        def _multi_step(self, state, loss_fn, known_total, constraints=()):
            def step(carried, _):
                return self._step(carried, loss_fn, known_total, constraints), None

            return jax.lax.scan(step, state, None, length=estimation.CALLBACK_EVERY)[0]

    return Resumed


def _expanded(potentials, cliques):
    """mbi's ``CliqueVector.expand`` worked out in numpy: the same potentials over a model's
    new cliques, each the sum of the old ones it contains, broadcast. mbi's does it op by op
    in JAX, a few dozen small programs compiled for every new model structure: a quarter
    of an AIM round's time."""
    mbi = _mbi()  # x64 on before anything of mbi's is imported
    import jax.numpy as jnp
    from mbi.clique_utils import reverse_clique_mapping

    domain = potentials.domain
    mapping = reverse_clique_mapping(cliques, potentials.cliques, domain=domain)
    tables = {}
    for clique in cliques:
        target = domain.project(clique)
        values = np.zeros(target.shape)
        for old in mapping[clique]:
            factor = potentials[old]
            held = factor.domain.attributes
            order = [held.index(a) for a in clique if a in held]
            values = values + np.transpose(np.asarray(factor.values), order).reshape(
                [target.config[a] if a in held else 1 for a in clique])
        tables[clique] = mbi.Factor(target, jnp.asarray(values))
    return mbi.CliqueVector(domain, cliques, tables)


@dataclass(frozen=True)
class Measurement:
    """Noisy counts of the marginal over ``columns`` (row-major, as
    :func:`synth.marginals.marginal` lays them out) with Gaussian noise of scale ``sigma``."""

    columns: tuple[int, ...]
    counts: np.ndarray
    sigma: float


class Model:
    """A graphical model over columns of ``sizes`` codes, fitted to measurements.

    The columns fall into parts, connected by the measured marginals, that are independent
    in the model; each part is fitted on its own, in a domain of its own whose columns are
    named 0, 1, … in order. Private-PGM's optimum is the same (the loss is a sum over the
    parts and the marginal polytope a product of theirs), and compiling, most of a fit's
    time, is not: a part no new measurement touched, or shaped as one fitted before, runs
    a program already compiled, so AIM compiles only what its pick joined (on the
    timetable, a run's 25 fits replayed in 27–33 s against 64 s, to the same loss within
    0.2 %).
    """

    def __init__(self, sizes: Sequence[int], total: float):
        mbi = _mbi()
        self.sizes = tuple(int(s) for s in sizes)
        # columns named by their index: mbi takes integers, and draws rows in an order
        # read off sets of names, which for strings Python's per-process hash would reorder
        self.names = tuple(range(len(self.sizes)))
        self.domain = mbi.Domain(self.names, self.sizes)
        self.total = float(total)
        # per part (its columns, in order), the optimiser's last state in the part's names:
        # potentials, marginals, step size
        self._states: dict[tuple[int, ...], Any] = {}
        # per part, the longer of the steps it was resumed from and ended at
        self._peaks: dict[tuple[int, ...], float] = {}
        # per connected part of the model's graph, its potentials as einsum operands
        self._factors: dict[int, tuple[list[str], list[np.ndarray]]] | None = None
        self._part: list[int] = []  # each column's part
        self._field = None
        # marginals within one part, kept until the next fit: AIM's candidate pairs across
        # two parts ask each column's own marginal once per pair (a column is in d - 1)
        self._answered: dict[tuple[int, ...], np.ndarray] = {}

    def estimate(self, measured: Sequence[Measurement], iterations: int,
                 progress: Callable[[int, int], None]) -> None:
        """Fit the model to every measurement so far, part by part (warm-started from the
        last fit); ``progress(steps done, steps)`` runs after each block of steps, the parts'
        steps counted together as one fit's (it raises to cancel)."""
        mbi = _mbi()
        parts = _parts(len(self.sizes), [m.columns for m in measured])
        states, peaks = {}, {}
        for k, part in enumerate(parts):
            local = {j: i for i, j in enumerate(part)}
            domain = mbi.Domain(tuple(range(len(part))), tuple(self.sizes[j] for j in part))
            loss = [mbi.LinearMeasurement(np.asarray(m.counts, dtype=float),
                                          tuple(local[j] for j in m.columns), stddev=m.sigma)
                    for m in measured if m.columns[0] in local]
            blocks = iter(range(BLOCK, 10**12, BLOCK))

            def callback(_, k=k, blocks=blocks):
                done = min(next(blocks), iterations)
                progress((k * iterations + done) // len(parts), iterations)

            resumed = self._resumed(part, domain)
            states[part] = _descent()().estimate(
                domain, loss, known_total=self.total, iters=iterations, callback_fn=callback,
                warm_start=resumed)
            peaks[part] = max(float(states[part].alpha),
                              0.0 if resumed is None else resumed[0].alpha)
        self._states, self._peaks = states, peaks
        self._factors = self._field = None
        self._answered = {}

    def _resumed(self, part: tuple[int, ...], domain) -> tuple[Any, Callable] | None:
        """A part's warm start: the potentials of the parts it holds, renamed into its
        names, a step, and the model's marginals in its names; None for a part of columns
        never fitted. A part near its optimum halves its step at nearly every step (a single
        column's within a few dozen), and AIM refits every part every round, so the step is
        the longest of the steps its parts were resumed from or ended at, and every part's
        step now (one still moving), as one fit of the whole model would carry: the line
        search halves a step too long at the cost of a step, and lengthens one too short by
        1 % a step."""
        held = [old for old in self._states if set(old) <= set(part)]
        if not held:
            return None
        mbi = _mbi()
        local = {j: i for i, j in enumerate(part)}
        tables = {}
        for old in held:
            vector = self._states[old].potentials
            for mine in vector.cliques:
                clique = tuple(local[old[a]] for a in mine)
                tables[clique] = mbi.Factor(domain.project(clique), vector[mine].values)
        potentials = mbi.CliqueVector(domain, list(tables), tables)
        step = max([self._peaks[old] for old in held]
                   + [float(state.alpha) for state in self._states.values()])

        def counts(clique):
            return self.marginal([part[a] for a in clique])

        return mbi.estimation.MirrorDescentState(None, potentials, step, None), counts

    def _whole(self, attribute: str):
        """Every part's potentials or marginals, in the model's names, in the order of the
        fit's cliques (mbi draws rows in an order read off them)."""
        mbi = _mbi()
        tables = {}
        for part, state in self._states.items():
            vector = getattr(state, attribute)
            for mine in vector.cliques:
                clique = tuple(part[a] for a in mine)
                tables[clique] = mbi.Factor(self.domain.project(clique), vector[mine].values)
        return mbi.CliqueVector(self.domain, list(tables), tables)

    @property
    def fitted(self):
        """The fit as one optimiser state in the model's names (the largest step of the
        parts', as a part resumes from several), or None before the first fit."""
        if not self._states:
            return None
        return _mbi().estimation.MirrorDescentState(
            self._whole("mu"), self._whole("potentials"),
            max(float(state.alpha) for state in self._states.values()), None)

    def field(self):
        """The fitted model as mbi's MarkovRandomField: to draw rows or project. Its
        marginals are the fit's last state's, which :func:`_descent` keeps as its
        potentials' own, so no oracle runs for them."""
        if not self._states:
            raise Cancelled("the model has not been fitted")
        if self._field is None:
            self._field = _mbi().MarkovRandomField(
                potentials=self._whole("potentials"), marginals=self._whole("mu"),
                total=self.total)
        return self._field

    def marginal(self, columns: Sequence[int]) -> np.ndarray:
        """The model's counts over ``columns``, flat in row-major order: the product of its
        potentials summed over every other column (exact inference by contraction, ordered
        by opt_einsum: numpy's greedy order could build intermediates of millions
        of cells on a model with loops, 9 s for one of AIM's candidates where opt_einsum
        takes milliseconds). mbi's own query compiles a program per marginal, a hundred
        times slower for AIM's candidates; it answers where the contraction underflows.

        The connected parts of the model's graph are independent in it: each part's columns
        are contracted over that part's potentials alone, and a marginal spanning several
        parts is the product of theirs (divided by n once per extra part). Most of AIM's
        candidates span two parts while its graph has few edges."""
        if not self._states:
            raise Cancelled("the model has not been fitted")
        if self._factors is None:
            self._factors, self._part = self._exponentiated()
        groups: dict[int, list[int]] = {}
        for j in columns:
            groups.setdefault(self._part[j], []).append(j)
        if len(groups) == 1:
            return self._within(columns)
        pieces = [self._within(group).reshape([self.sizes[j] for j in group])
                  for group in groups.values()]
        product = _contract([_symbols(group) for group in groups.values()], pieces,
                            _symbols(columns))
        return product.ravel() / self.total ** (len(pieces) - 1)

    def _within(self, columns: Sequence[int]) -> np.ndarray:
        """The marginal over ``columns``, all of one connected part, from its potentials."""
        key = tuple(columns)
        if key in self._answered:
            return self._answered[key]
        subscripts, arrays = self._factors[self._part[columns[0]]]
        out = _contract(subscripts, arrays, _symbols(columns))
        total = float(out.sum())
        out = out.ravel() * (self.total / total) if np.isfinite(total) and total > 0 else None
        if out is None:
            factor = self.field().project(tuple(self.names[j] for j in columns))
            out = np.asarray(factor.datavector(flatten=True), dtype=float)
        out.flags.writeable = False  # shared by every later answer that asks it
        self._answered[key] = out
        return out

    def _exponentiated(self) -> tuple[dict[int, tuple[list[str], list[np.ndarray]]],
                                      list[int]]:
        """Each potential as exp(θ − max θ) with its einsum subscripts, grouped by the part
        of the model it lies in, named by its first column (a column no potential covers is
        a part of its own, a vector of ones: uniform in the model), and each column's part."""
        part = list(range(len(self.names)))
        grouped: dict[int, tuple[list[str], list[np.ndarray]]] = {}
        for owner, state in self._states.items():
            subscripts, arrays = grouped.setdefault(owner[0], ([], []))
            for factor in state.potentials.tables.values():
                values = np.asarray(factor.values, dtype=float)
                subscripts.append(_symbols([owner[a] for a in factor.domain.attributes]))
                arrays.append(np.exp(values - values.max()))
            for j in owner:
                part[j] = owner[0]
        for j, size in enumerate(self.sizes):
            if part[j] == j and j not in grouped:
                grouped[j] = ([_symbols([j])], [np.ones(size)])
        return grouped, part

    def size(self, cliques: Sequence[tuple[int, ...]]) -> int:
        """Cells of the junction tree a model over ``cliques`` would hold (AIM's limit)."""
        return junction_size(self.sizes, cliques)

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """(n, d) codes drawn from the fitted model, seeded from ``rng``."""
        with _SAMPLING:
            state = np.random.get_state()
            np.random.seed(int(rng.integers(2**32)))
            try:
                data = self.field().synthetic_data(int(n)).to_dict()
            finally:
                np.random.set_state(state)
        return np.column_stack([np.asarray(data[name], dtype=np.int64)
                                for name in self.names])


def _parts(d: int, cliques: Sequence[Sequence[int]]) -> list[tuple[int, ...]]:
    """The columns of ``cliques`` grouped by the connected parts the cliques join, each in
    column order, the parts by their first column (a column in no clique is in none)."""
    part = list(range(d))

    def root(j: int) -> int:
        while part[j] != j:
            part[j] = part[part[j]]
            j = part[j]
        return j

    for clique in cliques:
        for j in clique[1:]:
            part[root(j)] = root(clique[0])
    covered = sorted({j for clique in cliques for j in clique})
    groups: dict[int, list[int]] = {}
    for j in covered:
        groups.setdefault(root(j), []).append(j)
    return sorted(tuple(group) for group in groups.values())


def _contract(subscripts: Sequence[str], arrays: Sequence[np.ndarray], target: str
              ) -> np.ndarray:
    """``arrays`` (einsum ``subscripts``) summed down to ``target``: by opt_einsum's order
    where there is an order to choose, by numpy's einsum for one or two operands (saving
    opt_einsum's parsing, a third of AIM's candidate answers), its letters renamed to
    ASCII ones, the only ones numpy takes (a model's 53rd column is opt_einsum's 'À')."""
    formula = ",".join(subscripts) + "->" + target
    if len(arrays) > 2:
        return _order(formula, tuple(a.shape for a in arrays))(*arrays)
    letters = {c: string.ascii_letters[i]
               for i, c in enumerate(dict.fromkeys(formula.replace(",", "").replace("->", "")))}
    return np.einsum("".join(letters.get(c, c) for c in formula), *arrays)


@functools.lru_cache(maxsize=4096)
def _order(formula: str, shapes: tuple[tuple[int, ...], ...]) -> Callable[..., np.ndarray]:
    """opt_einsum's contraction of ``formula`` over arrays of ``shapes``, its order found
    once: a model's parts mostly outlast a round of AIM, and finding the order was four in
    five of the time its candidates' answers took."""
    return opt_einsum.contract_expression(formula, *shapes)


def _symbols(columns: Sequence[int]) -> str:
    """Einsum subscripts of ``columns``: one letter a column, by its index."""
    return "".join(opt_einsum.get_symbol(j) for j in columns)


def junction_size(sizes: Sequence[int], cliques: Iterable[Sequence[int]]) -> int:
    """Cells of the junction tree mbi builds for a model over ``cliques`` (each of distinct
    columns) of columns of ``sizes`` codes: the same tree as its ``make_junction_tree`` (a
    tree of pairs kept as it is, otherwise its greedy elimination order: the column whose
    neighbourhood spans the fewest cells first, the lowest index on a tie), summed over the
    maximal cliques of the triangulated graph. Worked out on bit sets: AIM asks it of every
    candidate in every round, and mbi's networkx version took a fifth of AIM's time."""
    d = len(sizes)
    adjacent, covered = [0] * d, 0
    for clique in cliques:
        members = 0
        for j in clique:
            members |= 1 << j
        covered |= members
        for j in clique:
            adjacent[j] |= members & ~(1 << j)

    def cells(members: int) -> int:
        out = 1
        while members:
            low = members & -members
            out *= sizes[low.bit_length() - 1]
            members ^= low
        return out

    edges = sum(a.bit_count() for a in adjacent) // 2
    if 0 < edges == d - 1 and _connected(adjacent):  # a tree: its pairs are its cliques
        return sum(sizes[i] * sizes[j] for i in range(d) for j in range(i + 1, d)
                   if adjacent[i] >> j & 1)
    left, eliminated = list(range(d)), []
    # a column in no clique costs 1 to mbi (its neighbourhood is empty); an elimination
    # changes only its neighbours' neighbourhoods, so only their costs are worked out again
    cost = [cells(adjacent[a] | 1 << a) if covered >> a & 1 else 1 for a in range(d)]
    for _ in range(d):
        a = min(left, key=cost.__getitem__)
        left.remove(a)
        others = adjacent[a]
        eliminated.append(others | 1 << a)
        rest = others
        while rest:
            low = rest & -rest
            b = low.bit_length() - 1
            adjacent[b] = (adjacent[b] | others) & ~(1 << b) & ~(1 << a)
            cost[b] = cells(adjacent[b] | 1 << b)
            rest ^= low
    # on a perfect elimination order every maximal clique is some column's elimination clique
    maximal = [c for c in set(eliminated)
               if not any(c != other and c & other == c for other in eliminated)]
    return sum(cells(c) for c in maximal)


def _connected(adjacent: Sequence[int]) -> bool:
    seen, frontier = 1, 1
    while frontier:
        reach = 0
        rest = frontier
        while rest:
            low = rest & -rest
            reach |= adjacent[low.bit_length() - 1]
            rest ^= low
        frontier = reach & ~seen
        seen |= reach
    return seen == (1 << len(adjacent)) - 1
