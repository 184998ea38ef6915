"""gemm(a, b, c, trans_a=True) on the GPU against NumPy (tests/codegen/test_wgmma_m_major_a.py
checks the schedule and the SASS): wgmma's M-major A from shared memory in each accumulator
arrangement, f16 and bf16, ragged M, N and K."""
import pathlib
import sys

import numpy as np
import pytest

import tlc

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "codegen"))
from test_wgmma_m_major_a import ARRANGEMENTS, PROGRAM  # noqa: E402

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("bm, threads", ARRANGEMENTS)
def test_at_b_against_numpy(bm, threads, dtype):
    import cupy as cp
    from tlc.dtypes import lookup

    rng = np.random.default_rng(bm * threads)
    K, M, N = 1000, 333, 300
    a = rng.standard_normal((K, M)).astype(lookup(dtype).numpy())
    b = rng.standard_normal((K, N)).astype(lookup(dtype).numpy())
    c = cp.full((M, N), cp.nan, cp.float32)
    tlc.load(PROGRAM, target="cuda").at_b(cp.asarray(a), cp.asarray(b), c, T=dtype, BM=bm, THREADS=threads)
    want = a.astype(np.float64).T @ b.astype(np.float64)
    assert np.abs(c.get() - want).max() < 1e-4 * np.abs(want).max()
