"""The one marginal primitive: cells are a row-major bijection, counts match pandas."""

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from synth.encoding import cell_index, marginal
from synth.errors import SchemaError


@st.composite
def tables(draw):
    """Random codes over 1–4 columns of 1–5 values, and a column tuple of them."""
    sizes = np.array(draw(st.lists(st.integers(1, 5), min_size=1, max_size=4)))
    n = draw(st.integers(0, 60))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    codes = np.column_stack([rng.integers(0, s, n) for s in sizes]).reshape(n, len(sizes))
    columns = draw(st.permutations(range(len(sizes))))
    k = draw(st.integers(1, len(sizes)))
    return codes, sizes, tuple(columns[:k])


@settings(max_examples=60, deadline=None)
@given(tables())
def test_marginal_counts_equal_a_pandas_group_count(table):
    codes, sizes, columns = table
    counts = marginal(codes, sizes, columns)
    assert counts.dtype.kind == "i"
    assert len(counts) == math.prod(sizes[list(columns)])
    frame = pd.DataFrame(codes[:, list(columns)], columns=list(columns))
    expected = frame.groupby(list(columns)).size()
    table = counts.reshape(sizes[list(columns)])
    for key, count in expected.items():
        key = key if isinstance(key, tuple) else (key,)
        assert table[key] == count
    assert counts.sum() == len(codes)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 5), min_size=1, max_size=4))
def test_cells_are_a_row_major_bijection(sizes):
    sizes = np.array(sizes)
    every = np.array(list(itertools.product(*(range(s) for s in sizes)))).reshape(-1, len(sizes))
    cells = cell_index(every, sizes)
    assert cells.dtype == np.int64
    assert np.array_equal(cells, np.arange(math.prod(sizes)))  # product order is row-major
    assert np.array_equal(np.ravel_multi_index(every.T, sizes), cells)


def test_weights_and_per_slot_sizes():
    codes = np.array([[0, 1], [1, 2], [1, 2]])
    sizes = np.array([2, 3])
    assert marginal(codes, sizes, weights=np.array([0.5, 1.0, 2.0])).tolist() == [
        0, 0.5, 0, 0, 0, 3.0]
    assert marginal(codes, sizes, (1,)).tolist() == [0, 1, 2]
    # one marginal per leading index: sizes broadcast against (n, slots, k) codes
    slots = np.stack([codes, codes[:, ::-1]], axis=1)
    got = cell_index(slots, np.array([[2, 3], [3, 2]]))
    assert got.tolist() == [[1, 2], [5, 5], [5, 5]]


def test_a_marginal_too_large_to_index_is_refused():
    with pytest.raises(SchemaError, match="too large to count"):  # 3^64 cells: int64 wraps
        cell_index(np.zeros((2, 64), dtype=int), np.full(64, 3))
