"""Tile atomics on the GPU (tests/codegen/test_tile_atomics.py checks the code): ordered adds
land in block order, so the sums are a loop's over the blocks in order, the same bits run after
run; split-K's vector reds against NumPy."""
import pathlib
import sys

import numpy as np
import pytest

import tlc

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "codegen"))
from test_tile_atomics import PROGRAM, ordered_inputs, splitk_inputs  # noqa: E402

pytestmark = pytest.mark.gpu


def test_ordered_adds_are_the_block_order_sum_bit_for_bit_every_run():
    import cupy as cp

    x, want, tiles = ordered_inputs(NB=40, R=300, C=200)
    mod = tlc.load(PROGRAM, target="cuda")
    for _ in range(3):
        y = cp.zeros(want.shape, cp.float32)
        counts = cp.zeros(tiles, cp.int32)
        mod.ordered_sum(cp.asarray(x), y, counts)
        assert np.array_equal(y.get(), want) and (counts.get() == x.shape[0]).all()


def test_split_k_against_numpy():
    import cupy as cp

    a, b, want = splitk_inputs(2, 300, 1000, 200)
    c = cp.zeros(want.shape, cp.float32)
    tlc.load(PROGRAM, target="cuda").splitk(cp.asarray(a), cp.asarray(b), c)
    assert np.abs(c.get() - want).max() < 1e-4 * np.abs(want).max()
