"""The sm_90a warp-specialized pipeline on the GPU: TMA copies where the tensors allow them
(ragged but 16-byte aligned rows), the producer's element-by-element copies where they do
not, rank-3 tensor maps, and rings that wrap many times — each against NumPy."""
import pathlib
import sys

import numpy as np
import pytest

import tlc

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "stdlib"))  # the shared kit
from stdlib_kit import GEMM_PATH, rel_err  # noqa: E402

pytestmark = pytest.mark.gpu


def _hopper():
    import cupy

    return cupy.cuda.Device().compute_capability >= "90"


def _data(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32).astype(np.float16)


def _kernel(name):
    return getattr(tlc.load(GEMM_PATH, target="cuda"), name)


@pytest.mark.parametrize("M, N, K", [(130, 264, 104), (256, 512, 64 * 11), (1, 8, 8), (300, 136, 1000)])
def test_tma_path_on_ragged_aligned_shapes(M, N, K):
    import cupy as cp

    if not _hopper():
        pytest.skip("the warp-specialized pipeline is sm_90a's")
    rng = np.random.default_rng(M + N + K)
    A, B = _data(rng, M, K), _data(rng, K, N)
    kernel = _kernel("matmul")
    compiled = kernel.compiled({})
    assert compiled.generated.tensor_maps, "std.gemm.matmul is warp-specialized on sm_90a"
    dA, dB, dC = cp.asarray(A), cp.asarray(B), cp.zeros((M, N), cp.float16)
    assert [m.param for m in compiled.generated.tensor_maps] == ["A", "B", "C"]
    extra = compiled.tensor_maps((dA.data.ptr, dB.data.ptr, dC.data.ptr), ((M, K), (K, N), (M, N)))
    assert int(extra[-1]) == 3, "the driver encoded every map: this shape loads and stores through the TMA"
    C = np.full((M, N), np.nan, np.float16)
    kernel(A, B, C)
    assert rel_err(C.astype(np.float32), A.astype(np.float32) @ B.astype(np.float32)) < 2e-3


def test_unaligned_rows_take_the_producer_copies():
    if not _hopper():
        pytest.skip("the warp-specialized pipeline is sm_90a's")
    rng = np.random.default_rng(5)
    for M, N, K in [(130, 270, 100), (64, 264, 99), (70, 255, 64)]:
        A, B = _data(rng, M, K), _data(rng, K, N)
        C = np.full((M, N), np.nan, np.float16)
        _kernel("matmul")(A, B, C)
        assert rel_err(C.astype(np.float32), A.astype(np.float32) @ B.astype(np.float32)) < 2e-3, (M, N, K)


def test_an_unaligned_result_is_stored_from_registers_while_the_copies_keep_the_tma():
    if not _hopper():
        pytest.skip("the warp-specialized pipeline is sm_90a's")
    rng = np.random.default_rng(7)
    A, Bt = _data(rng, 200, 328), _data(rng, 135, 328)  # C's rows are 270 bytes; A's and B's 656
    compiled = _kernel("matmul_nt").compiled({})
    assert int(compiled.tensor_maps((0x10000, 0x20000, 0x30000), ((200, 328), (135, 328), (200, 135)))[-1]) == 1
    C = np.full((200, 135), np.nan, np.float16)
    _kernel("matmul_nt")(A, Bt, C)
    assert rel_err(C.astype(np.float32), A.astype(np.float32) @ Bt.astype(np.float32).T) < 2e-3


def test_rank3_tensor_maps_and_nt_layout():
    if not _hopper():
        pytest.skip("the warp-specialized pipeline is sm_90a's")
    rng = np.random.default_rng(6)
    Ab, Bb = _data(rng, 3, 136, 200), _data(rng, 3, 200, 264)
    Cb = np.full((3, 136, 264), np.nan, np.float16)
    _kernel("matmul_batched")(Ab, Bb, Cb)
    assert rel_err(Cb.astype(np.float32), Ab.astype(np.float32) @ Bb.astype(np.float32)) < 2e-3
    A, Bt = _data(rng, 200, 328), _data(rng, 136, 328)
    C = np.full((200, 136), np.nan, np.float16)
    _kernel("matmul_nt")(A, Bt, C)
    assert rel_err(C.astype(np.float32), A.astype(np.float32) @ Bt.astype(np.float32).T) < 2e-3


def test_stage_counts_and_device_arrays():
    import cupy as cp

    if not _hopper():
        pytest.skip("the warp-specialized pipeline is sm_90a's")
    rng = np.random.default_rng(7)
    M, N, K = 384, 512, 64 * 9
    A, B = cp.asarray(_data(rng, M, K)), cp.asarray(_data(rng, K, N))
    want = A.get().astype(np.float32) @ B.get().astype(np.float32)
    for stages in (2, 3, 4):
        C = cp.full((M, N), cp.nan, cp.float16)
        _kernel("matmul")(A, B, C, stages=stages)
        assert rel_err(C.get().astype(np.float32), want) < 2e-3, stages


# 128 accumulator rows per warpgroup: two m64 wgmma a K step (tl::MmaAcc's WGMMA_BANDS)
BANDS = [dict(BM=128, BN=128, BK=64, stages=4, THREADS=128), dict(BM=256, BN=128, BK=64, stages=3, THREADS=256),
         dict(BM=128, BN=64, BK=64, stages=6, THREADS=128)]


@pytest.mark.parametrize("consts", BANDS)
def test_two_bands_a_warpgroup_against_numpy(consts):
    if not _hopper():
        pytest.skip("wgmma is sm_90a's")
    rng = np.random.default_rng(consts["BM"] + consts["BN"])
    kernel = _kernel("matmul")
    assert "tl::gemm_wgmma<" in kernel.compiled(consts).generated.source.split("TL_PRIMITIVES")[-1]
    # ragged and aligned (TMA loads and stores), unaligned rows (element copies, register
    # stores), one tile, and enough tiles that blocks reuse their staging buffer
    for M, N, K in [(130, 264, 104), (300, 136, 1000), (1, 8, 8), (70, 255, 99), (2048, 1024, 256)]:
        A, B = _data(rng, M, K), _data(rng, K, N)
        C = np.full((M, N), np.nan, np.float16)
        kernel(A, B, C, **consts)
        assert rel_err(C.astype(np.float32), A.astype(np.float32) @ B.astype(np.float32)) < 2e-3, (M, N, K)
        nt = np.ascontiguousarray(B.T)
        C = np.full((M, N), np.nan, np.float16)
        _kernel("matmul_nt")(A, nt, C, **consts)
        assert rel_err(C.astype(np.float32), A.astype(np.float32) @ B.astype(np.float32)) < 2e-3, (M, N, K)


def test_two_bands_an_epilogue_reads_rows_and_columns_where_the_bands_put_them():
    if not _hopper():
        pytest.skip("wgmma is sm_90a's")
    rng = np.random.default_rng(7)
    M, N, K = 300, 200, 136
    A, B, C0 = _data(rng, M, K), _data(rng, K, N), _data(rng, M, N)
    bias = rng.standard_normal(N).astype(np.float32)
    C = C0.copy()
    _kernel("matmul_epilogue")(A, B, C, bias, 1.5, 0.5, ACT=2, **BANDS[0])  # relu(1.5 AB + 0.5 C + bias)
    want = np.maximum(1.5 * (A.astype(np.float32) @ B.astype(np.float32)) + 0.5 * C0.astype(np.float32) + bias, 0)
    assert rel_err(C.astype(np.float32), want) < 2e-3
