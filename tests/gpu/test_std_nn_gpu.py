"""std.nn on the GPU against NumPy: the interpreter's cases, and the shapes and constants the
row-wise benchmark uses (one tile of 8192 columns), ragged rows and several tiles."""
import pathlib
import sys

import numpy as np
import pytest

import tlc
from tlc.dtypes import BF16, F16

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "stdlib"))  # the shared kit
from nn_kit import NN_PATH, SHAPES, elementwise_case, rel_err, rowwise_cases  # noqa: E402

pytestmark = pytest.mark.gpu

TOL = {F16: 2e-3, BF16: 1.5e-2}
BENCH = [(64, 8192, dict(BN=8192, THREADS=512)), (33, 8000, dict(BN=8192, THREADS=1024)),
         (20, 10000, {}), (16, 4096, dict(BM=2, BN=4096, THREADS=256))]


@pytest.mark.parametrize("dtype", [F16, BF16])
@pytest.mark.parametrize("M,N,consts", SHAPES + BENCH)
def test_rowwise_kernels_against_numpy(dtype, M, N, consts):
    mod = tlc.load(NN_PATH, target="cuda")
    for name, args, c, out, ref in rowwise_cases(np.random.default_rng(M + N), dtype.numpy(), M, N, consts):
        getattr(mod, name)(*args, **c)
        assert rel_err(args[out].astype(np.float32), ref) < TOL[dtype], (name, c)


@pytest.mark.parametrize("dtype", [F16, BF16])
@pytest.mark.parametrize("n,consts", [(1000, dict(BLOCK=256, THREADS=32)), (1 << 20, {}), (100003, {}),
                                      (77, dict(BLOCK=64, THREADS=32))])
def test_elementwise_against_numpy(dtype, n, consts):
    mod = tlc.load(NN_PATH, target="cuda")
    name, args, c, out, ref = elementwise_case(np.random.default_rng(n), dtype.numpy(), n, consts)
    getattr(mod, name)(*args, **c)
    assert rel_err(args[out].astype(np.float32), ref) < TOL[dtype]


def test_unaligned_rows_take_the_element_path():
    """A row stride that is not a multiple of 8 halves: the vector path's alignment check fails
    and every element still lands where it should."""
    mod = tlc.load(NN_PATH, target="cuda")
    for name, args, c, out, ref in rowwise_cases(np.random.default_rng(5), np.float16, 6, 1003,
                                                 dict(BN=1024, THREADS=128)):
        getattr(mod, name)(*args, **c)
        assert rel_err(args[out].astype(np.float32), ref) < 2e-3, name
