"""std.broadcast on the GPU: tests/stdlib/test_broadcast.py's table (every operator and dtype) at
its operand shapes and at larger ones of several default tiles (256 columns, rows past a block's
4), against NumPy."""
import pathlib
import sys
import zlib

import numpy as np
import pytest

import tlc

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "stdlib"))  # the table
from broadcast_kit import BROADCAST_PATH, OPS, check, shapes  # noqa: E402

pytestmark = pytest.mark.gpu

LARGER = {2: [((8, 16, 33, 515), (1, 16, 1, 515)), ((1, 1, 1001, 1), (1, 1, 1, 777))],
          3: [((2, 1, 300, 1000), (1, 7, 1, 1000), (2, 7, 300, 1))]}


@pytest.fixture(scope="module")
def mod():
    return tlc.load(BROADCAST_PATH, target="cuda")


@pytest.mark.parametrize("op,dtype", [pytest.param(op, d, id=f"{op.name}-{d}") for op in OPS for d in op.dtypes])
def test_against_numpy(mod, op, dtype):
    rng = np.random.default_rng(zlib.crc32(f"{op.name}{dtype}".encode()))
    for shape_set in shapes(op) + LARGER[len(op.domains)]:
        check(mod, op, dtype, rng, shape_set, {})
