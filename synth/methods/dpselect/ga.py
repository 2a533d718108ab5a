"""DP-Select's GA engine: the whole output subset chosen by the DP simple GA.

The row-by-row engine (:mod:`.rows`) spends its budget on n weak picks. Here the
output's k rows form one chromosome and :func:`synth.privacy.dpsga.dpsga` spends the same budget on
N_g·N_s + 1 strong selections, whatever k is. The utility is minus the weighted L1 distance
between the private section's marginals and the chromosome's; with the weights summing to 1
and k = n_s public, replacing one private record moves it by at most 2/n_s.

**Encoding.** The pool section is cut, at random and once, into k disjoint *slots* of g rows;
gene i chooses one row of slot i. Every chromosome is then k distinct pool rows by
construction, and the paper's operators need no repair: uniform crossover takes each gene from
either parent, mutation redraws a gene within its slot.

**Tilts** (our addition). With p_m = 1/(k+1) a child differs from its parent in about one row
of thousands, a change the selections cannot see (the note's §5.4 warns of this). So every
child also gets one *tilt*: for a random marginal column and value, a random share of its
genes (0.1 %…5 %, log-uniform) moves toward that value, or away from it, wherever the slot
offers a row that does. The tilt is chosen without the data; the selections keep the good ones.

**Speed.** A chromosome row stores its k choices followed by its marginal counts, a cache the
operators keep exact by adding the cells of the rows that come in and subtracting those that go
out, so a generation costs O(edits), not O(N_p·k).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from synth.marginals import marginal
from synth.privacy.dpsga import Genes, Result, dpsga

TILT_SHARES = (1e-3, 0.05)  # range of the share of genes a tilt tries to move (log-uniform)


class Subsets(Genes):
    """Chromosomes of k = ``slot_cells.shape[0]`` pool rows, one per slot, with cached counts.

    ``slot_cells``: (k, g, J) global cell ids (marginal j's cells offset to be disjoint) of
    slot i's option o; ``slot_values``: (d, k, g) codes of the marginals' columns, for tilts;
    ``columns``: per marginal, its positions in ``slot_values``; ``weights``: per marginal.
    """

    def __init__(self, slot_cells: np.ndarray, slot_values: np.ndarray, n_cells: int,
                 columns: Sequence[Sequence[int]], weights: np.ndarray):
        self.length, self.options = slot_cells.shape[:2]
        self.cells = slot_cells.reshape(-1, slot_cells.shape[2])  # row i·g + o: slot i, option o
        self.values = slot_values.reshape(-1, self.options)  # row c·k + i: column c, slot i
        self.n_cells = n_cells
        self.columns, self.weights = [list(c) for c in columns], np.asarray(weights, float)
        self.order = self.priority = None  # set by random(): see _tilt

    def counts(self, pop: np.ndarray) -> np.ndarray:
        return pop[:, self.length:]

    def random(self, count: int, rng: np.random.Generator) -> np.ndarray:
        """One random assignment, and ``count`` − 1 tilts of it (data-independent)."""
        self.order = rng.permutation(self.length)
        self.priority = rng.integers(0, 256, (self.length, self.options), np.uint8)
        base = rng.integers(self.options, size=self.length)
        cells = self.cells[np.arange(self.length) * self.options + base].ravel()
        first = np.concatenate([base, np.bincount(cells, minlength=self.n_cells)])
        first = first.astype(np.int32)
        pop = np.tile(first, (count, 1))
        self._tilt(pop[1:], rng)
        return pop

    def breed(self, parents: np.ndarray, count: int, p_c: float, p_m: float,
              rng: np.random.Generator) -> np.ndarray:
        pairs = -(-count // 2)
        a = rng.integers(len(parents), size=pairs)
        b = (a + rng.integers(1, len(parents), size=pairs)) % len(parents)
        pop = np.concatenate([parents, parents[a], parents[b]])
        kids = pop[len(parents):]  # a view: edits land in pop
        cross = np.flatnonzero(rng.random(pairs) < p_c)
        if len(cross):  # uniform crossover: each differing gene from either parent
            x, y = parents[a[cross], : self.length], parents[b[cross], : self.length]
            coin = np.unpackbits(np.frombuffer(rng.bytes(-(-x.size // 8)), np.uint8))
            flip = (x != y) & coin[: x.size].reshape(x.shape).view(bool)
            rows, genes = np.nonzero(flip)
            self._edit(kids, cross[rows], genes, y[rows, genes])
            # the pair's genes are swapped, not lost: child 2's counts are x + y − child 1's
            k, twin = self.length, pairs + cross
            kids[twin[rows], genes] = x[rows, genes]
            kids[twin, k:] = parents[a[cross], k:] + parents[b[cross], k:] - kids[cross, k:]
        pop, kids = pop[: len(parents) + count], kids[:count]
        hits = rng.binomial(self.length, p_m, size=count)  # per-gene mutation
        spots = np.unique(np.repeat(np.arange(count), hits) * self.length
                          + rng.integers(self.length, size=hits.sum()))
        self._edit(kids, spots // self.length, spots % self.length,
                   rng.integers(self.options, size=len(spots)))
        self._tilt(kids, rng)
        return pop

    def _tilt(self, pop: np.ndarray, rng: np.random.Generator) -> None:
        """One tilt per chromosome, toward or away from a value of a marginal's column."""
        count, k = len(pop), self.length
        marginal = rng.choice(len(self.weights), size=count, p=self.weights)
        column = np.array([self.columns[m][rng.integers(len(self.columns[m]))]
                           for m in marginal])
        low, high = np.log(TILT_SHARES)
        size = np.maximum(1, (np.exp(rng.uniform(low, high, count)) * k).astype(np.int64))
        rows = np.repeat(np.arange(count), size)
        start = np.repeat(rng.integers(k, size=count) - np.cumsum(size) + size, size)
        genes = self.order[(start + np.arange(len(rows))) % k]  # distinct within a chromosome
        col = column[rows]
        value = self.values[column * k + rng.integers(k, size=count),
                            rng.integers(self.options, size=count)][rows]
        toward = (rng.random(count) < 0.5)[rows]
        options = self.values.take(col * k + genes, axis=0)  # (R, g)
        current = options[np.arange(len(rows)), pop.reshape(-1)[rows * pop.shape[1] + genes]]
        ok = np.where(toward[:, None], options == value[:, None],
                      (options != value[:, None]) & (current == value)[:, None])
        keep = np.flatnonzero(ok.any(axis=1))
        # a random option that does: the highest of the slot's fixed random priorities,
        # reshuffled per edit by XOR with a random byte
        keys = self.priority[genes[keep]] ^ rng.integers(0, 256, len(keep), np.uint8)[:, None]
        pick = np.argmax(ok[keep] * (keys | 1), axis=1)
        self._edit(pop, rows[keep], genes[keep], pick)

    def _edit(self, pop: np.ndarray, rows: np.ndarray, genes: np.ndarray,
              choice: np.ndarray) -> None:
        """Set gene ``genes[e]`` of chromosome ``rows[e]`` to ``choice[e]``, counts included.
        A (row, gene) pair must not repeat within one call."""
        flat = pop.reshape(-1)  # a view: pop is C-contiguous
        at = rows * pop.shape[1] + genes
        slot, base = genes * self.options, (rows * self.n_cells)[:, None]
        size = len(pop) * self.n_cells
        delta = np.bincount((self.cells.take(slot + choice, axis=0) + base).reshape(-1),
                            minlength=size)
        delta -= np.bincount((self.cells.take(slot + flat.take(at), axis=0) + base).reshape(-1),
                             minlength=size)
        flat[at] = choice
        pop[:, self.length:] += delta.reshape(len(pop), self.n_cells).astype(pop.dtype)


def select_subset(reference_cells: np.ndarray, pool_cells: np.ndarray, pool_values: np.ndarray,
                  cell_counts: np.ndarray, columns: Sequence[Sequence[int]], weights: np.ndarray,
                  epsilon: float, delta: float, rng: np.random.Generator, *,
                  sensitivity: float,
                  progress: Callable[[int, int, float], None] | None = None,
                  **ga) -> tuple[np.ndarray, float, Result]:
    """Choose len(reference_cells) distinct rows of the pool section by the DP simple GA.

    ``reference_cells`` / ``pool_cells``: (n_s, J) / (m_s, J) cell indices per marginal (see
    :func:`.rows.cells`); ``pool_values``: (m_s, d) codes of the columns named in
    ``columns``. ``sensitivity``: of the utility, at least 2/n_s (the caller passes one for
    every section, the ledger's). ``ga``: dpsga's keywords (generations, population, parents,
    p_c, p_m). Returns the chosen pool indices, their weighted L1 distance (not private: for
    the owner) and dpsga's result.
    """
    k, m = len(reference_cells), len(pool_cells)
    offsets = np.concatenate([[0], np.cumsum(cell_counts)[:-1]]).astype(np.int64)
    n_cells = int(np.sum(cell_counts))
    reference = np.concatenate([marginal(reference_cells, cell_counts, (j,))
                                for j in range(len(cell_counts))]) / k
    weight = np.repeat(weights, cell_counts)
    options = m // k
    slots = rng.permutation(m)[: k * options].reshape(k, options)
    genes = Subsets((pool_cells + offsets)[slots].astype(np.int32),
                    pool_values.T[:, slots].astype(np.int16), n_cells, columns, weights)

    def utility(pop: np.ndarray) -> np.ndarray:
        return -(np.abs(reference - genes.counts(pop) / k) @ weight)

    result = dpsga(utility, sensitivity, genes, epsilon, delta, rng, progress=progress, **ga)
    return (slots[np.arange(k), result.best[:k]], float(-utility(result.best[None])[0]),
            result)
