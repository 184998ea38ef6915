"""std.reduce on the GPU against NumPy: tests/stdlib/test_reduce.py's table (every operator,
axis and dtype) at the interpreter's ragged shapes with the same tiles, and at larger ones with
the kernels' default tiles: rows longer than a tile op's one-tile path (8192), many row and
column tiles with ragged ends, a vector."""
import pathlib
import sys

import pytest

import tlc

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "stdlib"))  # the table
from test_reduce import OPS, REDUCE_PATH, SHAPES, cases, check_op  # noqa: E402

pytestmark = pytest.mark.gpu

LARGE = [(1000, 3001), (3, 9000), (4097, 33), (1, 100003)]


@pytest.fixture(scope="module")
def mod():
    return tlc.load(REDUCE_PATH, target="cuda")


@pytest.mark.parametrize("op,dtype,axis", list(cases(OPS)))
def test_against_numpy(mod, op, dtype, axis):
    for M, N, tiles in SHAPES:
        check_op(mod, op, dtype, axis, M, N, tiles[axis])
    for M, N in LARGE:
        check_op(mod, op, dtype, axis, M, N, {})
