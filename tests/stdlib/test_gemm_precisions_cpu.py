"""std.gemm's precision kernels (tf32, f8 with per-tensor or per-block scales, i8) on the
interpreter against NumPy, ragged shapes; and compiled by nvcc for sm_80 and sm_90a: the
tensor-core instructions each one must use, and no local memory."""
import numpy as np
import pytest

import tlc
from precision_kit import PRECISION_KERNELS, E4M3, cases, check, check_tensor_cores
from stdlib_kit import GEMM_PATH


def test_the_kernels_are_there():
    mod = tlc.load(GEMM_PATH, target="cpu")
    assert set(PRECISION_KERNELS) <= set(mod.kernels)


def test_every_kernel_against_numpy():
    mod = tlc.load(GEMM_PATH, target="cpu")
    for name, args, consts, ref, tol in cases(np.random.default_rng(1)):
        getattr(mod, name)(*args, **consts)
        check(name, args[2], ref, tol)


@pytest.mark.slow
@pytest.mark.parametrize("name,consts", [
    ("matmul_tf32", dict(BM=64, BN=32, BK=32, stages=2, THREADS=128)),
    ("matmul_f8", dict(BM=64, BN=64, BK=64, stages=2, THREADS=128)),
    ("matmul_f8_blockscaled", dict(BM=64, BN=64, stages=2, THREADS=128)),   # BN < 128: part of a scale block
    ("matmul_f8_blockscaled", dict(BM=64, BN=256, stages=2, THREADS=128)),  # BN > 128: two scale blocks
    ("matmul_i8", dict(BM=64, BN=64, BK=32, stages=4, THREADS=64)),
    ("matmul_i8_scaled", dict(BM=64, BN=32, BK=32, stages=3, THREADS=64)),
    ("matmul_f8_rowwise", dict(BM=64, BN=64, BK=64, stages=2, THREADS=128)),
])
def test_other_tiles_and_tiny_shapes(name, consts):
    mod = tlc.load(GEMM_PATH, target="cpu")
    for M, N, K in ((1, 1, 1), (67, 300, 129), (200, 45, 513)):
        for kname, args, _, ref, tol in cases(np.random.default_rng(M + N + K), M, N, K):
            if kname == name:
                getattr(mod, name)(*args, **consts)
                check(name, args[2], ref, tol)


def test_f8_scales_and_extremes():
    """Per-tensor scales multiply the product; f8's largest values and subnormals stay exact."""
    mod = tlc.load(GEMM_PATH, target="cpu")
    A = np.array([[448, -448, 2.0 ** -9, 0]], np.float32).astype(E4M3)
    B = np.array([[1, 1, 1, 1], [2.0 ** -9, 0, 448, 1]], np.float32).astype(E4M3)
    C = np.zeros((1, 2), np.float32)
    mod.matmul_f8(A, B, C, 2.0, 0.25)
    assert C.tolist() == [[0.5 * 2.0 ** -9, 0.5 * (448 * 2.0 ** -9 + 448 * 2.0 ** -9)]]


def test_i8_wraps_like_torch_int_mm():
    mod = tlc.load(GEMM_PATH, target="cpu")
    K = 140000  # 127 * 127 * K > 2**31 (70000 did not wrap); small tiles with a long BK: 70 k-steps
    A = np.full((1, K), 127, np.int8)
    C = np.zeros((1, 1), np.int32)
    mod.matmul_i8(A, A, C, BM=16, BN=16, BK=2048, stages=2, THREADS=32)
    assert 127 * 127 * K > 2 ** 31 and C[0, 0] == np.int32(np.int64(127 * 127 * K) - 2 ** 32)


# (kernel, constants, arch, the tensor-core instruction and how many a k-tile takes).  The default
# tiles serve both targets; sm_80 also with four-warp 64 x 32 warp tiles.
SM80 = dict(BM=128, BN=128, stages=3, THREADS=256)
SASS_CASES = [
    ("matmul_i8", {}, "sm_90a", "IGMMA.64x256x32.S8.S8", 4),
    ("matmul_f8", {}, "sm_90a", "QGMMA.64x256x32.F32.E4M3.E4M3", 4),
    ("matmul_f8", {"TB": "f8e5m2"}, "sm_90a", "QGMMA.64x256x32.F32.E4M3.E5M2", 4),
    ("matmul_tf32", {}, "sm_90a", "HGMMA.64x256x8.F32.TF32", 4),
    ("matmul_f8_blockscaled", {}, "sm_90a", "QGMMA.64x128x32.F32.E4M3.E4M3", 4),
    ("matmul_i8_scaled", {}, "sm_90a", "IGMMA.64x256x32.S8.S8", 4),
    ("matmul_f8_rowwise", {}, "sm_90a", "QGMMA.64x256x32.F32.E4M3.E4M3", 4),
    ("matmul_i8_scaled", {}, "sm_80", "IMMA.16832.S8.S8", 128),
    ("matmul_f8_rowwise", {}, "sm_80", "HMMA.16816.F32", 256),
    ("matmul_i8", {}, "sm_80", "IMMA.16832.S8.S8", 128),
    ("matmul_i8", SM80, "sm_80", "IMMA.16832.S8.S8", 64),
    ("matmul_f8", {}, "sm_80", "HMMA.16816.F32", 256),  # f8 converted to f16: two per 32 of K
    ("matmul_f8", SM80, "sm_80", "HMMA.16816.F32", 128),
    ("matmul_tf32", {}, "sm_80", "HMMA.1688.F32.TF32", 128),
    ("matmul_tf32", SM80, "sm_80", "HMMA.1688.F32.TF32", 64),
    ("matmul_f8_blockscaled", {}, "sm_80", "HMMA.16816.F32", 128),
]


# each kernel's default tiles for sm_90a in the default run; the other tiles, and sm_80's
# mma.sync paths, under -m slow (which CI makes)
@pytest.mark.parametrize("name,consts,arch,instruction,n",
                         [pytest.param(*case, marks=[pytest.mark.slow] if case[1] or case[2] == "sm_80" else [])
                          for case in SASS_CASES])
def test_tensor_cores_and_no_local_memory(name, consts, arch, instruction, n, tmp_path):
    check_tensor_cores(name, consts, arch, instruction, n, tmp_path)


def test_blockscaled_tiles_of_256_columns_against_numpy():
    """BN = 256: two 128-column halves, each its own scale block of B, summed one after the other
    into one partial-sum fragment; N ragged (the second half of the last tile partly outside)."""
    mod = tlc.load(GEMM_PATH, target="cpu")
    for M, N, K in ((67, 300, 129), (130, 200, 384)):
        for kname, args, _, ref, tol in cases(np.random.default_rng(M + N + K), M, N, K):
            if kname == "matmul_f8_blockscaled":
                mod.matmul_f8_blockscaled(*args, BM=128, BN=256, stages=2, THREADS=256)
                check(kname, args[2], ref, tol)
