"""std.gemm's skinny (decode) kernels in tf32, f8 (per-tensor and block scales) and i8 on the
interpreter against NumPy, ragged shapes and every config.json rule; and compiled by nvcc for
sm_80 and sm_90a: the tensor-core instructions (wgmma with the rows of A as its N side), no
local memory."""
import numpy as np
import pytest

import tlc
from precision_kit import SKINNY, cases, check, check_tensor_cores
from stdlib_kit import GEMM_PATH


@pytest.fixture(scope="module")
def mod():
    return tlc.load(GEMM_PATH, target="cpu")


def test_the_kernels_are_there(mod):
    assert set(SKINNY.values()) <= set(mod.kernels)


# M below, at and above BM = 16; N and K multiples of no tile; a tile of one row
@pytest.mark.parametrize("M,N,K", [(5, 200, 300), (16, 256, 1024), (1, 1, 1), (17, 70, 520)])
def test_every_kernel_against_numpy(mod, M, N, K):
    for name, args, consts, ref, tol in cases(np.random.default_rng(M + N + K), M, N, K):
        getattr(mod, SKINNY[name])(*args, **consts)
        check(SKINNY[name], args[2], ref, tol)


@pytest.mark.slow
@pytest.mark.parametrize("consts", [dict(BM=32, BN=64, stages=3),   # several row tiles of A
                                    dict(BM=16, BN=128, stages=3, THREADS=256),  # two warpgroups; a scale block per tile
                                    dict(BM=16, BN=256, stages=2, THREADS=256)])  # two scale blocks of W per tile
def test_other_tiles(mod, consts):
    for name, args, _, ref, tol in cases(np.random.default_rng(3), 70, 400, 390):
        getattr(mod, SKINNY[name])(*args, **consts)
        check(SKINNY[name], args[2], ref, tol)


@pytest.mark.slow
def test_every_rule_computes_the_right_thing(mod):
    # each rule's constants on an M of its bucket (the rule's BM); K not a multiple of BK
    for precision, skinny in SKINNY.items():
        rules = mod.kernels[skinny].recorded_rules()
        assert {r.ranges for r in rules} == {(("M", lo, hi),) for lo, hi in ((1, 16), (17, 32), (33, 64), (65, 128))}
        for rule in rules:
            consts = dict(rule.constants)
            for name, args, _, ref, tol in cases(np.random.default_rng(4), consts["BM"] - 3, 130, 600):
                if name == precision:
                    getattr(mod, skinny)(*args, **consts)
                    check(skinny, args[2], ref, tol)


def test_i8_wraps_like_torch_int_mm(mod):
    K = 140000  # 127 * 127 * K > 2**31 (70000 did not wrap); small tiles with a long BK: 70 k-steps
    A = np.full((3, K), 127, np.int8)
    C = np.zeros((3, 2), np.int32)
    mod.matmul_skinny_i8(A, A[:2], C, BN=16, BK=2048, stages=2, THREADS=32)
    assert 127 * 127 * K > 2 ** 31 and (C == np.int32(np.int64(127 * 127 * K) - 2 ** 32)).all()


# (kernel, constants, arch, the tensor-core instruction, how many a K step takes): on sm_90a
# W's 64 rows are wgmma's M and the 16 rows of A its N
SASS_CASES = [
    ("matmul_skinny_tf32", {}, "sm_90a", "HGMMA.64x16x8.F32.TF32", 8),
    ("matmul_skinny_f8", {}, "sm_90a", "QGMMA.64x16x32.F32.E4M3.E4M3", 8),
    ("matmul_skinny_f8", {"TA": "f8e5m2"}, "sm_90a", "QGMMA.64x16x32.F32.E4M3.E5M2", 8),
    ("matmul_skinny_f8_blockscaled", {}, "sm_90a", "QGMMA.64x16x32.F32.E4M3.E4M3", 4),
    ("matmul_skinny_i8", {}, "sm_90a", "IGMMA.64x16x32.S8.S8", 8),
    ("matmul_skinny_i8", {"BM": 128, "BK": 128, "stages": 5}, "sm_90a", "IGMMA.64x128x32.S8.S8", 4),
    ("matmul_skinny_tf32", {}, "sm_80", "HMMA.1688.F32.TF32", 16),
    ("matmul_skinny_f8", {}, "sm_80", "HMMA.16816.F32", 32),  # f8 converted to f16: two per 32 of K
    ("matmul_skinny_f8_blockscaled", {}, "sm_80", "HMMA.16816.F32", 16),
    ("matmul_skinny_i8", {}, "sm_80", "IMMA.16832.S8.S8", 16),
]


# each kernel's default tiles for sm_90a in the default run; the other tiles, and sm_80's
# mma.sync paths, under -m slow (which CI makes)
@pytest.mark.parametrize("name,consts,arch,instruction,n",
                         [pytest.param(*case, marks=[pytest.mark.slow] if case[1] or case[2] == "sm_80" else [])
                          for case in SASS_CASES])
def test_tensor_cores_and_no_local_memory(name, consts, arch, instruction, n, tmp_path):
    check_tensor_cores(name, consts, arch, instruction, n, tmp_path)
