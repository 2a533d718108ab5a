"""The private table's codes as DP-SGD's Poisson batches need them, without holding a large
table in memory.

A table of at most :data:`CODES` codes is encoded once and kept. A larger one (a file read
where it lies) is read once to check it, before anything is spent, and then once per window of
steps: the steps' Poisson batches are drawn first (the draws do not look at the data), and a
pass over the file keeps only the rows they hold. Memory holds a chunk and a window's rows,
never the table; the batches, and so the mechanism, are the same as over the table in memory.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from synth.errors import DataError, SchemaError
from synth.source import READ, Chunks

CODES = 2**24  # codes held at once (8 bytes each): the table's, or a window's rows'


class PrivateCodes:
    """(rows, width) integer codes of the private rows, taken a few rows at a time."""

    def __init__(self, rows: int, width: int, take: Callable[[np.ndarray], np.ndarray]):
        self.rows, self.width, self._take = rows, width, take

    @classmethod
    def of_array(cls, codes: np.ndarray) -> PrivateCodes:
        return cls(len(codes), codes.shape[1], lambda rows: codes[rows])

    @classmethod
    def of_chunks(cls, data: Chunks, encode: Callable[[pd.DataFrame], np.ndarray],
                  width: int, ctx, check: Callable[[], None] = lambda: None) -> PrivateCodes:
        """``data`` encoded by ``encode`` (a frame's (rows, width) codes), read once now in
        full, so that a bad value anywhere is refused before the first charge; kept when it
        fits in :data:`CODES`, else read again for each :meth:`take`. ``check`` runs
        between the chunks of a later pass (a cancelled run stops there)."""
        small = len(data) * width <= CODES
        kept = []
        for frame in data.scan(ctx, READ, "reading and checking the table before DP-SGD "
                                          "spends anything"):
            codes = encode(frame)
            if small:
                kept.append(codes)
        if small:
            return cls.of_array(np.concatenate(kept))  # a table with no rows is refused

        def take(rows: np.ndarray) -> np.ndarray:
            out, start = np.empty((len(rows), width), dtype=np.int64), 0
            try:
                for frame in data:
                    check()
                    lo, hi = np.searchsorted(rows, [start, start + len(frame)])
                    if hi > lo:
                        out[lo:hi] = encode(frame.iloc[rows[lo:hi] - start])
                    start += len(frame)
            except SchemaError:  # the first pass checked every value: the file has changed
                raise DataError("the table changed while it was read: a value the first "
                                "pass did not hold") from None  # quoting none of them
            return out

        return cls(len(data), width, take)

    def take(self, rows: np.ndarray) -> np.ndarray:
        """The codes of ``rows``, sorted distinct positions in the table."""
        return self._take(rows)

    def steps_per_window(self, rows_per_step: float) -> int:
        """How many steps' batches of about ``rows_per_step`` rows fit in :data:`CODES`."""
        return max(1, int(CODES // (self.width * max(1.0, 2 * rows_per_step))))
