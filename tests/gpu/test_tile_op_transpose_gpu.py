"""Tile ops on the GPU whose schedule this session changed: x.T through a shared tile
(tests/schedule/tileops/test_tile_op_transpose.py) and the load batch of where's three operands
(test_tile_op_load_batches.py), at shapes past one block in every direction, against NumPy."""
from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "schedule" / "tileops"))
from tileops_kit import module  # noqa: E402
from test_tile_op_load_batches import SRC as BATCHED  # noqa: E402
from test_tile_op_transpose import SRC as TRANSPOSED  # noqa: E402

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("shape", [(1000, 3001), (4096, 4096), (3, 70)])
def test_staged_transposes(shape):
    rng = np.random.default_rng(1)
    mod = module(TRANSPOSED, target="cuda")
    x = rng.standard_normal(shape).astype(np.float32)
    np.testing.assert_array_equal(mod.flip(x), x.T)
    xh, y = x.astype(np.float16), rng.standard_normal(shape[::-1]).astype(np.float16)
    b = rng.standard_normal(shape[0]).astype(np.float16)
    want = (xh.T.astype(np.float32) * 2 + y.astype(np.float32) + b.astype(np.float32)).astype(np.float16)
    np.testing.assert_allclose(mod.mixed(xh, y, b).astype(np.float32), want.astype(np.float32), rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("shape", [(1000, 3001), (4096, 4096)])
def test_batched_where(shape):
    rng = np.random.default_rng(2)
    cond = rng.random(shape) < 0.5
    a, b = (rng.standard_normal(shape).astype(np.float16) for _ in range(2))
    np.testing.assert_array_equal(module(BATCHED, target="cuda").pick(cond, a, b), np.where(cond, a, b))
