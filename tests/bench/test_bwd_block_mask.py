"""bench/attention_bwd_fused.tl's BLOCK_MASK: the one-grid backward's dK/dV step written as
std.attention's flash_bwd's (the exponentials whole, the mask only in blocks that cross S, SK or
the causal diagonal, the LSE in log2 units from grid0; std's own tests:
tests/stdlib/test_attention_bwd_ring.py), on the interpreter against NumPy, and its SASS."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "codegen"))
FUSED = str(ROOT / "bench" / "attention_bwd_fused.tl")


@pytest.mark.parametrize("B, H, HK, S, SK, causal, consts", [
    (1, 4, 2, 100, 70, True, {}), (1, 2, 1, 70, 130, False, {"DETERMINISTIC": True}),
    (2, 2, 2, 128, 128, True, {"DETERMINISTIC": True}), (1, 2, 2, 150, 300, False, {"ROTATE": False})])
def test_the_one_grid_backward_masks_blocks_alike(B, H, HK, S, SK, causal, consts):
    # bench/attention_bwd_fused.tl's BLOCK_MASK: its step as std's flash_bwd's (whole exponentials,
    # the mask a block's, the LSE in log2 units from grid0), on the interpreter against NumPy
    sys.path.insert(0, str(ROOT / "tests" / "stdlib"))
    import tlc
    from attention_kit import ATTENTION_PATH
    from test_attention import check_bwd

    fwd = tlc.load(ATTENTION_PATH, target="cpu").flash_fwd
    fused = tlc.load(FUSED, target="cpu").flash_bwd_fused
    check_bwd(fwd, fused, "f16", B, H, HK, S, SK, 64, causal, {"BKV": 64, "BQ": 32, "KV_THREADS": 128,
                                                               "BLOCK_MASK": True, **consts}, seed=S + SK)


@pytest.mark.slow  # nvcc builds of an off-by-default switch (untimed): CI's slow run
@pytest.mark.nvcc
def test_the_one_grid_backward_with_block_mask_has_no_per_element_mask(tmp_path, monkeypatch):
    from nvcc import cubin_sass
    from tlc.codegen import half_pairs
    from tlc.runner import build
    from tlc.schedule import scale_d_clears

    monkeypatch.setattr(half_pairs, "CAST_PAIRS", True)
    monkeypatch.setattr(scale_d_clears, "RING_SCALE_D_CLEARS", "all")
    source, _ = build(FUSED, kernels=("flash_bwd_fused",), defines=("D=128", "BLOCK_MASK=True"), arch="sm_90a")
    sass, log = cubin_sass(source, "sm_90a", tmp_path, "fused")
    grid = dict(zip(*[iter(re.split(r"Function : (\w+)", sass)[1:])] * 2))["flash_bwd_fused_grid1"]
    assert not re.search(r"@!?P\d+ (MUFU\.EX2|LDS)", grid) and grid.count("MUFU.EX2") == 32
    assert " 0 bytes spill stores" in log and "C75" not in log
