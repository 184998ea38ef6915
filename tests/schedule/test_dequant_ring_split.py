"""Split-K of a dequantizing ring whose wave counts the blocks an SM holds (schedule/dequant_ring.py
DEQUANT_SPLIT, #18), an option off by default: std.gemm's matmul_w4a16 through the TMA ring
(TMA=True) at config.json's M = 1 rule holds 2 blocks an SM, so N = K = 8192's 128 tiles take K
in 2 parts (a wave of 132 x 2 units) where split_k.py's wave of 132 SMs keeps one.  --emit ir
notes it; the interpreter runs the parts through the ring, the last part of each tile adding the
others' f32 tiles, and matches NumPy (ragged N, odd K, groups straddling the parts' edges,
M = 16 on wgmma, bf16); nvcc builds it for sm_90a without spills."""
from __future__ import annotations

import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from tlc.interp import run_kernel
from tlc.ir.printer import print_kernel
from tlc.runtime.grid import evaluate_int
from tlc.schedule import dequant_ring

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "stdlib"))
from w4a16_kit import case, check, scheduled  # noqa: E402

RULE_M1 = {"BM": 8, "BK": 256, "stages": 6, "TMA": True}  # config.json's sm_90a rule at M 1..8
RULE_M16 = {"BM": 16, "BK": 512, "stages": 4, "TMA": True}  # ... at M 9..16 (wgmma: one block an SM)


@pytest.fixture
def on(monkeypatch):
    monkeypatch.setattr(dequant_ring, "DEQUANT_SPLIT", True)


def _parts(k, M, N, K, G=128) -> int:
    sizes = {"M": M, "N": N, "K": K, "KW": 4 * -(-K // 32), "KG": -(-K // G)}
    return evaluate_int(k.warp_spec.split_k.parts, sizes)


def test_off_by_default_the_rule_keeps_one_part():
    assert dequant_ring.DEQUANT_SPLIT is False
    k = scheduled("matmul_w4a16", RULE_M1)
    assert k.warp_spec is not None and k.warp_spec.split_k is None and len(k.grid) == 2


def test_the_m1_rule_takes_k_in_two_parts_counting_two_blocks_an_sm(on):
    k = scheduled("matmul_w4a16", RULE_M1)
    ws = k.warp_spec
    assert ws.blocks_per_sm == 2 and ws.split_k.slots == 264 and len(k.grid) == 3
    assert ("# note: split-K of the dequantizing ring (dequant_ring.py DEQUANT_SPLIT): the grid's z counts the parts "
            "of K (kpart), at most 264 units (WAVE x 2 blocks an SM); the last part adds acc's partial tiles in part "
            "order") in print_kernel(k)
    assert _parts(k, 1, 8192, 8192) == 2  # 128 tiles: 264 // 128
    assert _parts(k, 1, 4096, 8192) == 4 and _parts(k, 1, 16384, 8192) == 1
    # the loads stay the ring's: the weight swizzled, the scales and zeros one box a stage
    assert [(x.buffer, x.flat) for x in ws.loads] == [("Wq", False), ("As", False), ("Ss", True), ("Zs", True)]


def test_one_block_an_sm_counts_a_wave_of_sms(on):
    k = scheduled("matmul_w4a16", RULE_M16)
    assert k.warp_spec.blocks_per_sm == 1 and k.warp_spec.split_k.slots == 132
    assert _parts(k, 16, 8192, 8192) == 1 and _parts(k, 16, 2048, 8192) == 4


def test_rings_that_do_not_dequantize_are_split_as_before(on, monkeypatch):
    on_text = print_kernel(scheduled("matmul", {}))
    monkeypatch.setattr(dequant_ring, "DEQUANT_SPLIT", False)
    assert on_text == print_kernel(scheduled("matmul", {}))


# (M, N, K, G, constants, dtype, parts): N ragged (2 tiles: many parts), K odd (its last words
# partly past K, the last part's steps past K reading zeros); four groups of 32 a K step of 128
# (the last step's groups partly past K); K steps of 64 with groups of 128, each group over two
# steps, whose ring is not persistent (a copy the consumers alone make before it), so not split
# (0 parts) and still right; M = 16 on wgmma's register-A form; bf16
SHAPES = [
    (1, 100, 4097, 128, RULE_M1, np.float16, 4),
    (5, 96, 1001, 32, {"BM": 8, "BK": 128, "stages": 4, "TMA": True}, np.float16, 2),
    (3, 70, 2944, 32, {"BM": 8, "BK": 128, "stages": 4, "TMA": True}, np.float16, 5),
    (3, 70, 2000, 128, {"BM": 8, "BK": 64, "stages": 6, "TMA": True}, np.float16, 0),
    (16, 130, 3000, 128, RULE_M16, np.float16, 1),
    (2, 64, 1100, 64, {"BM": 8, "BK": 256, "stages": 3, "TMA": True}, ml_dtypes.bfloat16, 1),
]


@pytest.mark.parametrize("M,N,K,G,consts,dtype,parts", SHAPES)
def test_the_interpreter_runs_the_parts_and_matches_numpy(on, M, N, K, G, consts, dtype, parts):
    T = "bf16" if np.dtype(dtype) == np.dtype(ml_dtypes.bfloat16) else "f16"
    k = scheduled("matmul_w4a16", {**consts, "G": G, "T": T})
    assert (k.warp_spec.split_k is None) if parts == 0 else (_parts(k, M, N, K, G) == parts)
    A, W4, scales, zeros, C, ref, tol, _ = case(np.random.default_rng(M + K), M, N, K, G, dtype)
    run_kernel(k, {"A": A, "W4": W4, "scales": scales, "zeros": zeros, "C": C})
    check(f"matmul_w4a16 split through the TMA ring {M}x{N}x{K} g{G}, {parts} parts", C, ref, tol)


@pytest.mark.nvcc
@pytest.mark.slow  # nvcc builds of an off-by-default switch (untimed): CI's slow run
@pytest.mark.parametrize("assume", [True, False], ids=["nvrtc", "plain"])
def test_nvcc_builds_the_split_m1_rule_without_spills(on, tmp_path, assume):
    """nvcc 13.0 sm_90a, the sizes assumed as NVRTC's build (TL_ASSUME_SIZES) and not (tlc
    build's C launcher): no spills within the launch bounds of 2 blocks an SM (256 threads, no
    setmaxnreg); the consumers' K loop as the unsplit kernel's (one HMMA chain of 16 a step) and
    the fixup's loads through L2 (LDG.E.128.STRONG.GPU or .CG: another SM wrote the slots)."""
    sys.path.insert(0, str(ROOT / "tests" / "codegen"))
    from nvcc import cubin_sass
    from test_data import _innermost_loop_of
    from tlc.codegen import generate

    source = generate(scheduled("matmul_w4a16", RULE_M1), "sm_90a").source
    assert "__launch_bounds__(256, 2)" in source and "tl_sk_slots_matmul_w4a16" in source
    sass, log = cubin_sass(("#define TL_ASSUME_SIZES 1\n" if assume else "") + source, "sm_90a", tmp_path)
    assert "0 bytes spill stores" in log, log
    assert "USETMAXREG" not in sass
    consumer = _innermost_loop_of(sass, "HMMA.16816.F32")
    assert sum("HMMA.16816.F32" in x for x in consumer) == 16 and len(consumer) <= 560, len(consumer)
