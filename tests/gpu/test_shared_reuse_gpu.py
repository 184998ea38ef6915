"""A shared buffer placed on the bytes of a dead one, on the GPU: the barrier before the second
buffer's copy keeps a fast warp from overwriting bytes a slow warp still reads (fuzz diff seed
5078 on the H200: 1,464 of 17,000 elements wrong before the barrier pass saw shared bytes)."""
from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "schedule"))
from test_barriers import REUSED_BYTES  # noqa: E402

from tlc.api import compile_source  # noqa: E402

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("shape", [(4096, 4096), (1001, 333)])
def test_a_reused_shared_buffer_is_read_before_it_is_overwritten(shape):
    rng = np.random.default_rng(5078)
    x = rng.integers(0, 60000, size=shape).astype(np.uint16)
    y = rng.integers(0, 256, size=shape).astype(np.uint8)
    mod = compile_source(REUSED_BYTES, target="cuda", path="reuse.tl")
    for _ in range(5):  # a race shows on some runs only
        out = np.zeros(shape, np.float32)
        mod.t(x, y, out)
        np.testing.assert_array_equal(out, x.astype(np.float32) + y.astype(np.float32))
