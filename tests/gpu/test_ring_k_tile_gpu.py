"""K tiles grown for a warp-specialized ring's lookahead (schedule/fit.py ring_k_tile) on the
GPU against NumPy: 64 x 64 tiles whose BK grows from 32 to 256 (four 128-byte swizzle segments
a row, a TMA box each, 16 wgmma K steps a stage), ragged in M, N and K (a partial last K tile
the TMA fills with zeros).  The plain gemm's BK=128 runs in tests/gpu/test_plain_gpu.py."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import tlc

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "schedule"))
from kit import GEMM  # noqa: E402

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("M, N, K", [(300, 200, 1000), (64, 64, 256)])
def test_a_deeper_k_tile_matches_numpy(tmp_path, M, N, K):
    path = tmp_path / "g.tl"
    path.write_text(GEMM)
    mod = tlc.load(str(path), target="cuda")
    kernel = mod.matmul.scheduled({"BM": 64, "BN": 64}, "sm_90a")
    assert dict(kernel.constants)["BK"] == 256 and kernel.warp_spec is not None
    rng = np.random.default_rng(M)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.full((M, N), np.nan, np.float16)
    mod.matmul(a, b, c, BM=64, BN=64)
    ref = a.astype(np.float32) @ b.astype(np.float32)
    assert np.abs(c.astype(np.float32) - ref).max() <= 2e-3 * np.abs(ref).max()
