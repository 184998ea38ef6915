"""std.gemm's w4a16 kernels under the options bench/queue/D_w4a16_*.sh times, on the GPU against
NumPy (w4a16_kit's dequantize-then-matmul): what must hold before either becomes the default.
schedule/ring_split_k.py's RING_SPLIT: matmul_w4a16 takes K in parts that meet inside the kernel
(tl::split_k_meet), launched twice in a row (each tile's count back at 0 for the next launch);
codegen/copies.py's ROUND_STEPS and CLIP_ROWS_MAX = 8: tl::copy_g2s's stepped rounds and clipped
rows.  Each option's kernels come from a copy of std.gemm's text at a path of its own, so that
their cache entries are their own (the program cache's keys do not hold the options)."""
import pathlib
import sys

import numpy as np
import pytest


ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "stdlib"))
sys.path.insert(0, str(ROOT / "tests" / "gpu"))
from test_gemm_precisions_gpu import on_arch  # noqa: E402
from w4a16_kit import case, check, loaded_copy, splitk  # noqa: E402

from tlc.codegen import copies  # noqa: E402
from tlc.runtime.grid import evaluate_int  # noqa: E402
from tlc.schedule import ring_split_k  # noqa: E402

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def split_mod(tmp_path_factory):
    return loaded_copy(tmp_path_factory.mktemp("ring_split"))


@pytest.fixture(scope="module")
def forms_mod(tmp_path_factory):
    return loaded_copy(tmp_path_factory.mktemp("copy_forms"))


# (M, N, K, config.json's sm_90a tiles at that M): 8 parts, 2, and ragged N and K
SPLIT_CASES = [(1, 512, 8192, {"BM": 8, "BK": 256, "stages": 3}), (16, 1024, 4096, {"BM": 16, "BK": 512, "stages": 2}),
               (3, 200, 4100, {"BM": 8, "BK": 256, "stages": 3}), (1, 100, 4100, {"BM": 8, "BK": 128, "stages": 3})]


@pytest.mark.parametrize("M,N,K,consts", SPLIT_CASES)
def test_matmul_w4a16_split_inside_the_kernel_against_numpy(split_mod, monkeypatch, M, N, K, consts):
    monkeypatch.setattr(ring_split_k, "RING_SPLIT", True)
    rng = np.random.default_rng(M * N + K)
    for launch in range(2):  # the second launch finds every count back at 0
        A, W4, scales, zeros, C, ref, tol, _ = case(rng, M, N, K)
        if launch == 0:  # the kernel launched is the split one
            kernel = split_mod.matmul_w4a16
            values, constants = kernel.bind((A, W4, scales, zeros, C), dict(consts))
            k = kernel.scheduled(constants, "sm_90a")
            sizes = {"M": M, "N": N, "K": K, "KW": W4.shape[1], "KG": scales.shape[1]}
            assert k.split_k is not None and evaluate_int(k.split_k.parts, sizes) > 1
        on_arch(split_mod, "matmul_w4a16", "sm_90a", [A, W4, scales, zeros, C], consts)
        check(f"matmul_w4a16 split inside, launch {launch}", C, ref, tol)


@pytest.mark.parametrize("M,N,K", [(1, 70, 384), (5, 130, 520), (1, 300, 4100), (16, 64, 640)])
def test_the_decode_kernels_with_the_copy_forms_against_numpy(forms_mod, monkeypatch, M, N, K):
    monkeypatch.setattr(copies, "ROUND_STEPS", True)
    monkeypatch.setattr(copies, "CLIP_ROWS_MAX", 8)
    rng = np.random.default_rng(M + N * K)
    A, W4, scales, zeros, C, ref, tol, _ = case(rng, M, N, K)
    forms_mod.matmul_w4a16(A, W4, scales, zeros, C)
    check("matmul_w4a16 with the copy forms", C, ref, tol)
    check("matmul_w4a16_splitk with the copy forms", splitk(forms_mod, A, W4, scales, zeros, 3), ref, tol)
    if M == 1:
        C[:] = np.nan
        forms_mod.matmul_w4a16_gemv(A, W4, scales, zeros, C)
        check("matmul_w4a16_gemv with the copy forms", C, ref, tol)
