"""schedule/smem.py's ODD_CHUNK_ROWS (on: the H200's stem 0.53x -> 0.80x cuDNN): a gemm operand whose rows are an even
number of 16-byte chunks, neither swizzled nor a multiple of 128 bytes, padded by 16 bytes a row,
so that the 8 rows an ldmatrix reads fall on 8 different 16-byte bank groups (the ResNet stem's
128 x 160 im2col tile on mma.sync: rows of 320 bytes, 20 chunks, read 4-way conflicted)."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

import tlc
from tlc.schedule import smem

ROOT = Path(__file__).resolve().parents[2]
CONV = str(ROOT / "stdlib" / "conv.tl")
STEM = {"FLAT": True, "BN": 64, "BK": 32, "BLOCKS": 396, "C": 3, "K": 7, "S": 2, "P": 3}  # config.json's stem
sys.path.insert(0, str(ROOT / "tests" / "stdlib"))
import conv_kit as ck  # noqa: E402


def _shared(kernel) -> dict:
    return {b.name: b.layout for b in kernel.buffers if b.scope == "shared"}


def _groups(pitch_bytes: int) -> int:
    """The 16-byte bank groups (of 8) that 8 consecutive rows of this pitch start in."""
    return len({r * pitch_bytes // 16 % 8 for r in range(8)})


def test_on_by_default():
    assert smem.ODD_CHUNK_ROWS is True


def test_the_stems_operands_are_padded_to_an_odd_number_of_chunks(monkeypatch):
    monkeypatch.setattr(smem, "ODD_CHUNK_ROWS", False)
    conv = tlc.load(CONV, target="cpu").kernels["conv2d"]
    off = _shared(conv.scheduled(STEM, "sm_90a"))
    assert (off["cols"].pad, off["wts"].pad, off["rows"].pad) == (0, 0, 0) and _groups(160 * 2) == 2
    monkeypatch.setattr(smem, "ODD_CHUNK_ROWS", True)
    kernel = tlc.load(CONV, target="cpu").kernels["conv2d"].scheduled(STEM, "sm_90a")
    on = _shared(kernel)
    # the gemm's operands: 336-byte rows, 21 chunks; the staged input rows (no gemm reads them) as they were
    assert (on["cols"].pad, on["wts"].pad, on["rows"].pad) == (8, 8, 0) and _groups(168 * 2) == 8
    assert (on["cols"].swizzle_bytes, on["wts"].swizzle_bytes) == (0, 0)
    assert kernel.smem_bytes == 72448 + (128 + 64) * 16  # 3 blocks an SM still fit (BLOCKS = 396)


def test_swizzled_and_128_byte_rows_are_as_before(monkeypatch):
    gemm = str(ROOT / "stdlib" / "gemm.tl")
    monkeypatch.setattr(smem, "ODD_CHUNK_ROWS", False)
    before = _shared(tlc.load(gemm, target="cpu").kernels["matmul"].scheduled({}, "sm_80"))
    monkeypatch.setattr(smem, "ODD_CHUNK_ROWS", True)
    assert _shared(tlc.load(gemm, target="cpu").kernels["matmul"].scheduled({}, "sm_80")) == before


def test_the_padded_stem_computes_the_convolution(monkeypatch):
    monkeypatch.setattr(smem, "ODD_CHUNK_ROWS", True)
    N, H, W, C, F, K, S, P, D = case = (1, 21, 19, 3, 20, 7, 2, 3, 1)
    rng = np.random.default_rng(sum(case))
    x = rng.standard_normal((N, H, W, C)).astype(np.float16)
    w = rng.standard_normal((F, K, K, C)).astype(np.float16)
    want = ck.conv2d(x, w, S, P, D)
    y = np.full(want.shape, np.nan, np.float16)
    tlc.load(CONV, target="cpu").conv2d(x, w, y, S=S, P=P, FLAT=True, BN=64, BK=32, BLOCKS=3)
    assert ck.rel_err(y, want) < 2e-3


@pytest.mark.slow  # two nvcc builds of the stem: CI's slow run
@pytest.mark.nvcc
def test_the_padded_stem_builds_as_the_unpadded_one(monkeypatch, tmp_path):
    """The same registers and spills (the stem's staged kernel, 256 threads, ptxas's 64 registers
    with 12 bytes spilled either way), the gemm's operands read by ldmatrix."""
    sys.path.insert(0, str(ROOT / "tests" / "codegen"))
    from nvcc import cubin_sass
    from tlc.runner import build

    def built(on: bool):
        monkeypatch.setattr(smem, "ODD_CHUNK_ROWS", on)
        source, _ = build(CONV, kernels=("conv2d",), defines=tuple(f"{k}={v}" for k, v in STEM.items()),
                          arch="sm_90a")
        (tmp_path / str(on)).mkdir()
        sass, log = cubin_sass(source, "sm_90a", tmp_path / str(on), "conv2d")
        usage = re.findall(r"(\d+) bytes spill stores|Used (\d+) registers", log)
        return source, sass, usage

    source, sass, padded = built(True)
    assert "tl::smem_index<half, 128, 160, 8, 0>" in source  # the im2col tile's stores, 8 halves of pad a row
    assert "LDSM" in sass
    _, _, unpadded = built(False)
    assert padded and padded == unpadded
