"""Split-K on the GPU (tests/schedule/test_split_k.py checks the schedule and the code): std.gemm's
matmul at few output tiles and a long K takes K in parts (schedule/split_k.py), the last part of
each tile adding the others' partial tiles in order, so the result is right, the same bits run
after run, and a launch after it (another shape, or no split) finds the counters back at 0;
matmul_epilogue's bias and activation run on the sum."""
import numpy as np
import pytest

import tlc
from tlc.schedule.split_k import max_parts, parts_value

pytestmark = pytest.mark.gpu


def _inputs(M, N, K, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    return a, b, a.astype(np.float64) @ b.astype(np.float64)


@pytest.mark.parametrize("M, N, K, constants", [(512, 512, 16384, {}), (300, 200, 5000, {}),
                                                (512, 512, 16384, {"BN": 128, "stages": 4}), (1000, 700, 333, {})],
                         ids=["512x512x16384", "ragged", "128x128", "no-split"])
def test_matmul_split_k_is_right_and_the_same_every_run(M, N, K, constants):
    import cupy as cp

    bn = constants.get("BN", 256)
    parts = parts_value(-(-M // 128) * -(-N // bn), -(-K // 64), max_parts(128, bn))
    assert (parts > 1) == (K > 1000)
    a, b, want = _inputs(M, N, K)
    mod = tlc.load("std.gemm", target="cuda")
    A, B = cp.asarray(a), cp.asarray(b)
    runs = []
    for _ in range(3):
        c = cp.full((M, N), np.nan, cp.float16)
        mod.matmul(A, B, c, **constants)
        runs.append(c.get())
    err = np.abs(runs[0].astype(np.float64) - want).max() / np.abs(want).max()
    assert err < 2e-3, err
    assert all(np.array_equal(r, runs[0]) for r in runs[1:])


def test_matmul_epilogue_runs_on_the_sum():
    import cupy as cp

    M, N, K = 256, 384, 8192
    a, b, want = _inputs(M, N, K, seed=1)
    bias = np.random.default_rng(2).standard_normal(N).astype(np.float32)
    x = want + bias
    ref = np.maximum(x, 0)  # ACT=2: relu
    c = cp.zeros((M, N), cp.float16)
    tlc.load("std.gemm", target="cuda").matmul_epilogue(cp.asarray(a), cp.asarray(b), c, cp.asarray(bias), 1.0, 0.0, ACT=2)
    assert np.abs(c.get().astype(np.float64) - ref).max() < 2e-3 * np.abs(ref).max()
