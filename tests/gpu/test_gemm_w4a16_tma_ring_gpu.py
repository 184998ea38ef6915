"""std.gemm's w4a16 decode kernels with their weight stream through the TMA ring
(schedule/dequant_ring.py's DEQUANT_RING, off by default; session 28's H200 timed it,
bench/results/q_D2_w4a16_tma_ring-h200-twentyeighth.txt) on the GPU against NumPy (w4a16_kit's dequantize-then-matmul): what must hold before it
becomes the default.  Shapes whose maps all encode (the TMA's boxes) and ragged ones whose scale
and zero rows are not 16-byte multiples (KG % 4, KG % 16: the producer copies element by element,
tl_tma's bit 0), the split-K kernel's parts, f16 and bf16.  The kernels come from a copy of
std.gemm's text at a path of its own, so that their cache entries are their own (the program
cache's keys do not hold the option)."""
import pathlib
import sys

import ml_dtypes
import numpy as np
import pytest


ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "stdlib"))
from w4a16_kit import case, check, loaded_copy, splitk  # noqa: E402

from tlc.schedule import dequant_ring  # noqa: E402

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def tma_mod(tmp_path_factory):
    return loaded_copy(tmp_path_factory.mktemp("tma_ring"))


# (M, N, K, G, constants, dtype): config.json's M = 1 and M = 16 tiles with every map encoding
# (KG = 32 / 64); K = 4100 (KG = 33: the scales' and zeros' maps do not encode, the element
# fallback), groups of 128 over two K steps of 64, bf16
CASES = [(1, 512, 8192, 128, {"BM": 8, "BK": 256, "stages": 3}, np.float16),
         (16, 1024, 4096, 128, {"BM": 16, "BK": 512, "stages": 2}, np.float16),
         (3, 200, 4100, 128, {"BM": 8, "BK": 256, "stages": 3}, np.float16),
         (1, 256, 2048, 128, {"BM": 8, "BK": 64, "stages": 4}, np.float16),
         (2, 192, 4096, 128, {"BM": 8, "BK": 256, "stages": 6}, ml_dtypes.bfloat16)]


@pytest.mark.parametrize("M,N,K,G,consts,dtype", CASES)
def test_matmul_w4a16_through_the_tma_ring_against_numpy(tma_mod, monkeypatch, M, N, K, G, consts, dtype):
    monkeypatch.setattr(dequant_ring, "DEQUANT_RING", True)
    _matmul_against_numpy(tma_mod, M, N, K, G, consts, dtype)


@pytest.fixture(scope="module")
def one_block_mod(tmp_path_factory):  # (a cache of its own: the blocks an SM are not in its keys either)
    return loaded_copy(tmp_path_factory.mktemp("tma_ring_one_block"))


def test_the_one_block_setmaxnreg_form_against_numpy(one_block_mod, monkeypatch):
    monkeypatch.setattr(dequant_ring, "DEQUANT_RING", True)
    monkeypatch.setattr(dequant_ring, "DEQUANT_BLOCKS", 1)
    for M, N, K, G, consts, dtype in CASES[:3]:
        _matmul_against_numpy(one_block_mod, M, N, K, G, consts, dtype)


def _matmul_against_numpy(tma_mod, M, N, K, G, consts, dtype):
    A, W4, scales, zeros, C, ref, tol, _ = case(np.random.default_rng(M * N + K), M, N, K, G, dtype)
    kernel = tma_mod.matmul_w4a16
    _, constants = kernel.bind((A, W4, scales, zeros, C), {**consts, "G": G})
    assert kernel.scheduled(constants, "sm_90a").warp_spec is not None  # the ring is the one launched
    kernel(A, W4, scales, zeros, C, G=G, **consts)
    check(f"matmul_w4a16 through the TMA ring {M}x{N}x{K}", C, ref, tol)


@pytest.mark.parametrize("M,N,K,S", [(1, 512, 8192, 4), (16, 300, 4100, 2)])
def test_the_split_k_kernel_through_the_tma_ring_against_numpy(tma_mod, monkeypatch, M, N, K, S):
    monkeypatch.setattr(dequant_ring, "DEQUANT_RING", True)
    A, W4, scales, zeros, _, ref, tol, _ = case(np.random.default_rng(M + N + K), M, N, K)
    consts = {"BM": 8 if M == 1 else 16, "BK": 512, "stages": 2}
    check(f"matmul_w4a16_splitk through the TMA ring, {S} parts", splitk(tma_mod, A, W4, scales, zeros, S, **consts),
          ref, tol)
