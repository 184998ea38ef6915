"""std.gemm's shape kernels on the interpreter against NumPy: skinny (C.T = W @ A.T), split-K
with its reduction, grouped GEMM with empty groups; ragged shapes everywhere."""
import numpy as np
import pytest

import tlc
from tlc.dtypes import BF16, F16
from gemm_shapes_kit import GROUP_SIZES, SHAPE_KERNELS, f32, grouped_case, grouped_f8_case, rand, skinny_cases, splitk
from stdlib_kit import GEMM_PATH, rel_err

TOL = {F16: 2e-3, BF16: 1.5e-2}


@pytest.fixture(scope="module")
def mod():
    return tlc.load(GEMM_PATH, target="cpu")


def test_the_shape_kernels_are_there(mod):
    assert set(SHAPE_KERNELS) <= set(mod.kernels)


@pytest.mark.parametrize("dtype", [F16, BF16])
def test_skinny_against_numpy(mod, dtype):
    for A, W, consts in skinny_cases(np.random.default_rng(5), dtype.numpy()):
        C = np.full((A.shape[0], W.shape[0]), np.nan, dtype.numpy())
        mod.matmul_skinny(A, W, C, **consts)
        assert rel_err(C, f32(A) @ f32(W).T) < TOL[dtype], (A.shape, W.shape, consts)


@pytest.mark.parametrize("S", [1, 3, 7])
def test_skinny_splitk_against_numpy(mod, S):
    # K = 300 is 5 steps of 64: S = 3 gives splits of 2, 2, 1 steps, S = 7 leaves splits empty
    rng = np.random.default_rng(6)
    A, W = rand(rng, np.float16, 13, 300), rand(rng, np.float16, 150, 300)
    C = splitk(mod, "matmul_skinny_splitk", A, W, S, np.float16, BK=64)
    assert rel_err(C, f32(A) @ f32(W).T) < 2e-3


@pytest.mark.parametrize("dtype", [F16, BF16])
def test_splitk_few_tiles_against_numpy(mod, dtype):
    rng = np.random.default_rng(7)
    A, B = rand(rng, dtype.numpy(), 70, 1000), rand(rng, dtype.numpy(), 1000, 90)
    C = splitk(mod, "matmul_splitk", A, B, 4, dtype.numpy(), BM=64, BN=64, BK=64, THREADS=128)
    assert rel_err(C, f32(A) @ f32(B)) < TOL[dtype]


def test_splitk_reduce_sums_in_f32_and_converts(mod):
    P = np.random.default_rng(8).standard_normal((5, 37, 300)).astype(np.float32)
    C = np.full((37, 300), np.nan, np.float32)
    mod.splitk_reduce(P, C)
    np.testing.assert_allclose(C, P.sum(0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("sizes", GROUP_SIZES)
def test_grouped_against_numpy(mod, sizes):
    A, W, offsets, ref = grouped_case(np.random.default_rng(9), np.float16, sizes)
    C = np.full(ref.shape, np.nan, np.float16)
    mod.matmul_grouped(A, W, offsets, C, BM=64, BN=64, BK=32, THREADS=128)
    assert rel_err(C, ref) < 2e-3


@pytest.mark.parametrize("sizes", GROUP_SIZES)
def test_grouped_f8_blockscaled_against_numpy(mod, sizes):
    """Small tiles (BN 64: half a scale block of W), the default ones (a tile a scale block) and
    BN = 256 (two 128-column halves, two scale blocks; N = 200: the second half partly outside)."""
    import ml_dtypes

    A, W, offsets, SA, SB, ref = grouped_f8_case(np.random.default_rng(12), sizes)
    for consts in (dict(BM=64, BN=64, stages=2, THREADS=128), {}, dict(BN=256)):
        C = np.full(ref.shape, np.nan, ml_dtypes.bfloat16)
        mod.matmul_grouped_f8_blockscaled(A, W, offsets, C, SA, SB, **consts)
        if ref.size:
            assert rel_err(C, ref) < 1e-2


def test_grouped_bf16_default_tiles(mod):
    A, W, offsets, ref = grouped_case(np.random.default_rng(10), BF16.numpy(), [3, 0, 140], N=300, K=70)
    C = np.full(ref.shape, np.nan, BF16.numpy())
    mod.matmul_grouped(A, W, offsets, C)
    assert rel_err(C, ref) < 1.5e-2


def test_grouped_leaves_rows_of_no_group_alone(mod):
    # offsets ending before TOTAL_M: the rows past the last group are nobody's and stay as they were
    A, W, offsets, ref = grouped_case(np.random.default_rng(11), np.float16, [5, 7])
    C = np.full((20, ref.shape[1]), 7.0, np.float16)
    mod.matmul_grouped(np.concatenate([A, A[:8]]), W, offsets, C, BM=64, BN=64, BK=32, THREADS=128)
    assert rel_err(C[:12], ref) < 2e-3 and (C[12:] == 7.0).all()
