"""std.gemm's table for the registry: every kernel of the module once on the interpreter against
NumPy, at one small ragged shape (no multiple of a tile) in each dtype it is listed with, through
the kits the feature tests use (stdlib_kit, precision_kit, gemm_shapes_kit).  The thorough tests
are beside it (test_gemm_cpu.py, test_gemm_precisions_cpu.py, test_gemm_skinny_precisions_cpu.py,
test_gemm_shapes_cpu.py: tiles, configs, extremes, tensor-core SASS) and on the GPU
(tests/gpu/test_gemm_*_gpu.py); `tlc bench gemm` times every precision against cuBLAS.  This file
records the kernels in stdlib/tested.json (tlc ops counts them) when every row passed."""
from __future__ import annotations

import numpy as np
import pytest

import tlc
from gemm_shapes_kit import f32, grouped_case, grouped_f8_case, rand, splitk
from module_checks import assert_reference_page_is_current
from op_registry import check_or_record
from precision_kit import SKINNY
from precision_kit import cases as precision_cases
from precision_kit import check
from stdlib_kit import GEMM_PATH, rel_err
from stdlib_kit import cases as plain_cases
from tlc.dtypes import BF16
from w4a16_kit import case as w4a16_case
from w4a16_kit import dequantized
from w4a16_kit import splitk as w4a16_splitk
from w4a16_kit import w8_case

FLOAT16S = {"f16": np.dtype(np.float16), "bf16": np.dtype(BF16.numpy())}
TOL = {"f16": 2e-3, "bf16": 1.5e-2}
M, N, K = 37, 45, 70  # one ragged tile of every kernel's defaults


@pytest.fixture(scope="module")
def mod():
    return tlc.load(GEMM_PATH, target="cpu")


def plain(mod, name, dtype):
    for kernel, args, consts, ref in plain_cases(np.random.default_rng(1), FLOAT16S[dtype], M, N, K):
        if kernel == name:
            getattr(mod, kernel)(*args, **consts)
            assert rel_err(args[2].astype(np.float32), ref) < TOL[dtype], (kernel, consts)


def precision(mod, name, dtype, skinny=False):
    for kernel, args, consts, ref, tol in precision_cases(np.random.default_rng(2), M, N, K):
        if kernel == name:
            getattr(mod, SKINNY[kernel] if skinny else kernel)(*args, **consts)
            check(kernel, args[2], ref, tol)


def skinny(mod, name, dtype):
    rng = np.random.default_rng(3)
    A, W = rand(rng, FLOAT16S[dtype], 5, K), rand(rng, FLOAT16S[dtype], N, K)
    C = np.full((5, N), np.nan, FLOAT16S[dtype])
    mod.matmul_skinny(A, W, C)
    assert rel_err(C, f32(A) @ f32(W).T) < TOL[dtype]


def split(mod, name, dtype):
    rng = np.random.default_rng(4)
    A = rand(rng, FLOAT16S[dtype], 13 if name == "matmul_skinny_splitk" else M, 300)
    B = rand(rng, FLOAT16S[dtype], N, 300) if name == "matmul_skinny_splitk" else rand(rng, FLOAT16S[dtype], 300, N)
    C = splitk(mod, name, A, B, 3, FLOAT16S[dtype], BK=64)
    want = f32(A) @ (f32(B).T if name == "matmul_skinny_splitk" else f32(B))
    assert rel_err(C, want) < TOL[dtype]


def reduce_parts(mod, name, dtype):
    P = np.random.default_rng(5).standard_normal((3, M, N)).astype(np.float32)
    C = np.full((M, N), np.nan, FLOAT16S[dtype])
    mod.splitk_reduce(P, C)
    assert rel_err(C, P.sum(0)) < TOL[dtype]


def grouped(mod, name, dtype):
    A, W, offsets, ref = grouped_case(np.random.default_rng(6), FLOAT16S[dtype], [0, 30, 1, 0, 20], N=N, K=K)
    C = np.full(ref.shape, np.nan, FLOAT16S[dtype])
    mod.matmul_grouped(A, W, offsets, C, BM=64, BN=64, BK=32, THREADS=128)
    assert rel_err(C, ref) < TOL[dtype]


def grouped_f8(mod, name, dtype):
    A, W, offsets, SA, SB, ref = grouped_f8_case(np.random.default_rng(6), [0, 30, 1, 0, 20], N=N, K=K)
    C = np.full(ref.shape, np.nan, np.float32)
    mod.matmul_grouped_f8_blockscaled(A, W, offsets, C, SA, SB, BM=64, BN=64, stages=2, THREADS=128)
    assert rel_err(C, ref) < 1e-3


def w4a16(mod, name, dtype):
    # a ragged shape of the kit's kind; the f16 row with f32 scales, the bf16 one with bf16
    # scales (repack_int4's u8 row: of an f16 case)
    dt = FLOAT16S.get(dtype, FLOAT16S["f16"])
    A, W4, scales, zeros, C, ref, tol, q = w4a16_case(np.random.default_rng(8), 17, 100, 300, 128, dt,
                                                      np.float32 if dtype == "f16" else dt)
    if name == "repack_int4":
        W = np.full(W4.shape, 0xDEADBEEF, np.uint32)
        mod.repack_int4(q, W)
        assert np.array_equal(W, W4)
        return
    if name == "dequantize_w4a16":  # the weight itself, exactly as the kernels compute with it
        W = np.full((W4.shape[0], A.shape[1]), np.nan, dt)
        mod.dequantize_w4a16(W4, scales, zeros, W)
        nib = np.stack([q & 15, q >> 4], 2).reshape(q.shape[0], -1)[:, :A.shape[1]]
        assert np.array_equal(W.view(np.uint16), dequantized(nib, scales, zeros, 128, dt).view(np.uint16))
        return
    if name == "matmul_w4a16_splitk":
        C = w4a16_splitk(mod, A, W4, scales, zeros, 3)
    else:
        getattr(mod, name)(A, W4, scales, zeros, C)
    assert rel_err(C, ref) < tol, name


def w8a16(mod, name, dtype):
    # one call runs both weight formats listed: i8 with f16 activations, f8e4m3 with bf16
    for q, dt in (("i8", FLOAT16S["f16"]), ("f8e4m3", FLOAT16S["bf16"])):
        A, W, scales, C, ref, tol = w8_case(np.random.default_rng(9), 17, 100, 300, q, dt)
        getattr(mod, name)(A, W, scales, C, **({"BM": 32} if name == "matmul_w8a16" else {}))
        assert rel_err(C, ref) < tol, (name, q)


HALVES = ("f16", "bf16")
# kernel -> (the dtypes its row runs: of the operands, f8 and i8 formats by their kits' cases, check)
TABLE = {
    **{k: (HALVES, plain) for k in ("matmul", "matmul_nt", "matmul_tn", "matmul_epilogue", "matmul_batched")},
    "matmul_skinny": (HALVES, skinny),
    "matmul_skinny_splitk": (("f16",), split),
    "matmul_splitk": (HALVES, split),
    "splitk_reduce": (HALVES, reduce_parts),
    "matmul_grouped": (HALVES, grouped),
    "matmul_grouped_f8_blockscaled": (("f8e4m3",), grouped_f8),
    "matmul_tf32": (("f32",), precision),
    "matmul_f8": (("f8e4m3", "f8e5m2"), precision),
    "matmul_f8_blockscaled": (("f8e4m3",), precision),
    "matmul_i8": (("i8",), precision),
    "matmul_i8_scaled": (("i8",), precision),
    "matmul_f8_rowwise": (("f8e4m3", "f8e5m2"), precision),
    "repack_int4": (("u8",), w4a16),
    **{k: (HALVES, w4a16) for k in ("matmul_w4a16", "matmul_w4a16_prefill", "matmul_w4a16_splitk", "dequantize_w4a16",
                                          "matmul_w4a16_gemv")},
    **{k: (("f8e4m3", "i8"), w8a16) for k in ("matmul_w8a16", "matmul_w8a16_prefill")},
    **{SKINNY[k]: (dtypes, lambda m, n, d, k=k: precision(m, k, d, skinny=True))
       for k, dtypes in (("matmul_tf32", ("f32",)), ("matmul_f8", ("f8e4m3", "f8e5m2")),
                         ("matmul_f8_blockscaled", ("f8e4m3",)), ("matmul_i8", ("i8",)),
                         ("matmul_i8_scaled", ("i8",)), ("matmul_f8_rowwise", ("f8e4m3", "f8e5m2")))},
}

PASSED: dict[str, set] = {}


def test_the_table_holds_every_kernel_of_the_module(mod):
    assert set(TABLE) == set(mod.kernels)


@pytest.mark.parametrize("name", TABLE)
def test_against_numpy(mod, name):
    """Each dtype of the row (the f8 and i8 kernels: one call of their kit's cases, which mix
    the formats listed)."""
    dtypes, run = TABLE[name]
    for dtype in dtypes if dtypes[0] in FLOAT16S else dtypes[:1]:
        run(mod, name, dtype)
    PASSED[name] = set(dtypes)


def test_registry():
    """stdlib/tested.json lists exactly the kernels of this table, each of whose rows passed in
    this run (TLC_RECORD_TESTED=1 rewrites it; tests/stdlib/op_registry.py)."""
    table = {k: set(ds) for k, (ds, _) in TABLE.items()}
    check_or_record("std.gemm", table, {k: v for k, v in PASSED.items() if v == table.get(k)}, __file__)


def test_the_reference_page_is_generated_from_the_sources():
    """docs/stdlib/gemm.md is what scripts/stdlib-docs writes (rerun it after editing the .tl)."""
    assert_reference_page_is_current(GEMM_PATH)
