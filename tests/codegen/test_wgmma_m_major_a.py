"""gemm(a, b, c, trans_a=True) of 16-bit operands in shared memory on sm_90a: wgmma reads A
M-major (a K x M tile, each warpgroup's 64 rows of M one 128-byte swizzled segment) with its
transpose bit, in each accumulator arrangement (64 or 128 rows a warpgroup, warpgroups side by
side); the interpreter against NumPy; nvcc builds to HGMMA .tnspA without spills.
tests/gpu/test_wgmma_m_major_a_gpu.py runs it on the GPU."""
from pathlib import Path

import numpy as np
import pytest

import tlc
from nvcc import cubin_sass
from tlc.driver import check_file
from tlc.runner import build
from tlc.schedule import schedule_grids
from tlc.schedule.layout import wgmma_accumulator

PROGRAM = str(Path(__file__).resolve().parents[1] / "programs" / "gemm_m_major_a.tl")
# (BM, THREADS): bands of 128 rows, 64 a warpgroup, warpgroups side by side, one warpgroup
ARRANGEMENTS = [(128, 128), (128, 256), (64, 256), (64, 128)]


@pytest.mark.parametrize("bm, threads", ARRANGEMENTS)
def test_the_gemm_runs_on_wgmma_in_a_warp_specialized_ring(bm, threads):
    (k,) = schedule_grids(check_file(PROGRAM).program, "at_b", {"BM": bm, "THREADS": threads}, target="sm_90a")
    c = next(b for b in k.buffers if b.name == "c")
    assert c.layout == wgmma_accumulator((bm, 128), threads) and k.warp_spec is not None


def test_an_a_whose_m_is_not_whole_segments_keeps_mma_sync():
    (k,) = schedule_grids(check_file(PROGRAM).program, "at_b", {"BM": 32, "THREADS": 128}, target="sm_90a")
    assert k.warp_spec is None  # 32 rows of M: half a 128-byte segment


@pytest.mark.parametrize("bm, threads", ARRANGEMENTS)
def test_the_interpreter_matches_numpy(bm, threads):
    rng = np.random.default_rng(bm + threads)
    K, M, N = 200, 150, 130  # ragged in every dimension
    a = rng.standard_normal((K, M)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.full((M, N), np.nan, np.float32)
    tlc.load(PROGRAM, target="cpu").at_b(a, b, c, BM=bm, THREADS=threads)
    want = a.astype(np.float64).T @ b.astype(np.float64)
    assert np.abs(c - want).max() < 1e-3 * np.abs(want).max()


@pytest.mark.nvcc
@pytest.mark.parametrize("bm, threads", ARRANGEMENTS)
def test_nvcc_builds_hgmma_reading_a_transposed(bm, threads, tmp_path):
    source, _ = build(PROGRAM, kernels=("at_b",), defines=(f"BM={bm}", f"THREADS={threads}"), arch="sm_90a")
    assert "wgmma_n" in source and "_mmajor" in source
    sass, log = cubin_sass(source, "sm_90a", tmp_path, "at_b")
    n = 128 // (threads // 128) if bm == 64 and threads == 256 else 128
    assert f"HGMMA.64x{n}x16.F32" in sass and ".tnspA.tnspB" in sass
    assert " 0 bytes spill stores" in log and "LDL" not in sass and "STL" not in sass
