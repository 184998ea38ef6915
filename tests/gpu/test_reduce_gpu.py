"""std.reduce on the GPU against NumPy: tests/stdlib/test_reduce.py's table (every operator,
axis and dtype) at larger ragged shapes than the interpreter's, with the kernels' default tiles:
rows longer than a tile op's one-tile path (8192), many row and column tiles with ragged ends, a
vector; sort of rows of one tile, of several and of issue 13's 32768 (and longer); topk of rows
up to 32768."""
import pathlib
import sys

import numpy as np
import pytest

import tlc

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "stdlib"))  # the table
from op_tolerances import NUMPY  # noqa: E402
from test_reduce import (FLOATS, NAN_POOL, OPS, REDUCE_PATH, WITH_INTS, cases, check_op, normal,  # noqa: E402
                         sorted_rows, sorted_specials, topk_rows)

pytestmark = pytest.mark.gpu

# Every dtype at one ragged shape of several kernel tiles; f32 and bf16 also at the shapes that
# take other tile-op paths (rows past the one-tile path's 8192, columns past 2048 rows a tile, a
# long vector).  The kernels run their default tiles (compiled once per dtype); a tile op is
# compiled per shape bucket, so the shapes are few.
LARGE = [(1000, 3001)]
PATHS = [(3, 9000), (4097, 33), (1, 100003)]


@pytest.fixture(scope="module")
def mod():
    return tlc.load(REDUCE_PATH, target="cuda")


@pytest.mark.parametrize("op,dtype,axis", list(cases(OPS)))
def test_against_numpy(mod, op, dtype, axis):
    for M, N in LARGE + (PATHS if dtype in ("f32", "bf16") else []):
        check_op(mod, op, dtype, axis, M, N, {})


@pytest.mark.parametrize("dtype", WITH_INTS)
def test_sort_and_topk_against_numpy(mod, dtype):
    rng = np.random.default_rng(11)
    for M, N, consts in [(1000, 1000, {}), (7, 3, {}), (300, 32768, {}), (3, 70001, {}),
                         (200, 5000, dict(THREADS=256, E=16))]:
        x = normal(rng, (M, N), dtype) if dtype != "i32" else rng.integers(-5, 5, (M, N)).astype(np.int32)
        for descending in (False, True):
            for K in sorted({N, min(N, 7)}):
                sorted_rows(mod, x, K, descending, consts)


@pytest.mark.parametrize("dtype", FLOATS)
def test_sort_orders_nan_zeros_and_infinities(mod, dtype):
    """As the CPU test: nan above +inf, -0 equal to 0, the values' bits kept."""
    sorted_specials(mod, np.random.default_rng(13).choice(NAN_POOL, (20, 9000)).astype(NUMPY[dtype]), {})


@pytest.mark.parametrize("dtype", WITH_INTS)
def test_topk_against_numpy(mod, dtype):
    """Rows of 32768 (issue 13's benchmark rows), of 5000 and of one tile, K up to 512; the elements
    left after the first byte in shared memory, and (CAP=64) streamed for every byte."""
    rng = np.random.default_rng(12)
    for M, N, ks, consts in [(37, 32768, (64, 8), {}), (5, 5000, (512, 1), {}), (300, 100, (100, 7), {}),
                             (20, 9000, (64, 8), dict(CAP=64))]:
        x = normal(rng, (M, N), dtype) if dtype != "i32" else rng.integers(-5, 5, (M, N)).astype(np.int32)
        for largest in (True, False):
            for K in ks:
                topk_rows(mod, x, K, largest, consts)
