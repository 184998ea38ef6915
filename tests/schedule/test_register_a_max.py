"""schedule/operand_layout.py's WGMMA_REGISTER_A_MAX (#18), an option off by default (0): a
register-A gemm whose A fragment holds more registers a thread than that runs on mma.sync, not
wgmma.  std.gemm's w4a16 split-K at M = 16's tiles (K steps of 512) dequantizes 128 registers a
thread before its gemm: wgmma keeps them all live (222 registers), mma.sync lets ptxas compute
each K slice right before its mma (100).  Off, the kernel is as before; on, the interpreter still
agrees with NumPy (the layouts are the scheduler's, the values the same)."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

from tlc.interp import run_kernel
from tlc.schedule import operand_layout

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "stdlib"))
from w4a16_kit import case, check, scheduled  # noqa: E402

M16 = {"BM": 16, "BK": 512, "stages": 2}  # config.json's split-K tiles at M = 9 .. 16 on sm_90a



def _gemms(name, consts) -> set:
    from tlc.codegen import generate

    src = generate(scheduled(name, consts), "sm_90a").source
    return set(re.findall(r"tl::gemm_[a-z0-9_]+", src.split('extern "C" __global__')[1]))


def test_off_by_default_the_large_register_a_takes_wgmma():
    assert operand_layout.WGMMA_REGISTER_A_MAX == 0
    assert _gemms("matmul_w4a16_splitk", M16) == {"tl::gemm_wgmma_rs"}


def test_a_register_a_over_the_limit_takes_mma_sync(monkeypatch):
    monkeypatch.setattr(operand_layout, "WGMMA_REGISTER_A_MAX", 32)
    assert _gemms("matmul_w4a16_splitk", M16) == {"tl::gemm_mma_sm80_rs"}  # 128 registers of A
    assert _gemms("matmul_w4a16", {"BM": 64, "BK": 256, "stages": 3}) == {"tl::gemm_mma_sm80_rs"}  # 64
    monkeypatch.setattr(operand_layout, "WGMMA_REGISTER_A_MAX", 128)
    assert _gemms("matmul_w4a16_splitk", M16) == {"tl::gemm_wgmma_rs"}  # within the limit


def test_the_interpreter_agrees_with_numpy_on_mma_sync(monkeypatch):
    monkeypatch.setattr(operand_layout, "WGMMA_REGISTER_A_MAX", 32)
    k = scheduled("matmul_w4a16", M16)
    A, W4, scales, zeros, C, ref, tol, _ = case(np.random.default_rng(16), 16, 130, 1100)
    run_kernel(k, {"A": A, "W4": W4, "scales": scales, "zeros": zeros, "C": C})
    check("matmul_w4a16 on mma.sync", C, ref, tol)


@pytest.mark.slow  # nvcc builds of an off-by-default switch (untimed): CI's slow run
@pytest.mark.nvcc
@pytest.mark.parametrize("limit,most,least", [(0, 256, 200), (32, 110, 0)])
def test_mma_sync_keeps_fewer_registers_live(monkeypatch, tmp_path, limit, most, least):
    """nvcc 13.0 sm_90a with the sizes assumed not negative, as NVRTC's build (TL_ASSUME_SIZES):
    222 registers on wgmma, 100 on mma.sync, no spills either way."""
    sys.path.insert(0, str(ROOT / "tests" / "codegen"))
    from nvcc import cubin_sass
    from tlc.codegen import generate

    monkeypatch.setattr(operand_layout, "WGMMA_REGISTER_A_MAX", limit)
    source = "#define TL_ASSUME_SIZES 1\n" + generate(scheduled("matmul_w4a16_splitk", M16), "sm_90a").source
    _, log = cubin_sass(source, "sm_90a", tmp_path)
    regs = int(re.search(r"Used (\d+) registers", log).group(1))
    assert least <= regs <= most and "0 bytes spill stores" in log, log
