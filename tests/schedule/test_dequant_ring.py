"""A dequantizing ring through the TMA (schedule/dequant_ring.py, #18), an option off by default:
with it, warp specialization takes std.gemm's w4a16 decode kernels (whose padded weight tile,
32- and 16-byte-row scale and zero tiles and mma.sync gemm it refused): the weight tile is laid
out 128-byte swizzled, the scales and zeros come as one unswizzled box a stage, the consumers
run the dequantization and the gemm on their stage and issue no copy.  --emit ir shows it; the
interpreter runs the ring as recorded and matches NumPy (ragged K and N, groups straddling the
K steps' edges, several groups a step, split-K's parts); nvcc builds it for sm_90a without
spills, the producer's copies UTMALDG, the consumers' loop without a copy instruction."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from tlc.interp import run_kernel
from tlc.ir.printer import print_kernel
from tlc.schedule import dequant_ring

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "stdlib"))
from w4a16_kit import case, check, scheduled  # noqa: E402

M1 = {"BM": 8, "BK": 256, "stages": 3}  # config.json's matmul_w4a16 tiles at M = 1 on sm_90a
M16 = {"BM": 16, "BK": 512, "stages": 2}  # ... at M = 16 (wgmma with A in registers)
NOTE = ("# note: a dequantizing ring through the TMA (dequant_ring.py): Wq (was pad=4) 128-byte swizzled for the "
        "TMA; Ss, Zs one unswizzled box a stage")
MMA = "; the gemm of Wd on mma.sync from registers in the consumers' loop"
BLOCKS3 = "; up to 3 blocks an SM of 80 registers a thread\n"



@pytest.fixture
def on(monkeypatch):
    monkeypatch.setattr(dequant_ring, "DEQUANT_RING", True)


def test_off_by_default_the_decode_kernel_keeps_its_cp_async_ring():
    assert dequant_ring.DEQUANT_RING is False
    k = scheduled("matmul_w4a16", M1)
    assert k.warp_spec is None and "dequantizing" not in print_kernel(k)
    assert "shared Wq: u32[64, 32] @0 layout=27648 B, stages=3, pad=4" in print_kernel(k)


def test_the_ir_shows_the_ring_its_maps_and_layouts(on):
    text = print_kernel(scheduled("matmul_w4a16", M1))
    assert NOTE + MMA + BLOCKS3 in text
    assert "copies W4 -> Wq, A -> As, scales -> Ss, zeros -> Zs into stage it % 3" in text
    # the weight's 128-byte rows swizzled in the bytes the pad had (24 of 27 KB), one box each
    assert "shared Wq: u32[64, 32] @0 layout=24576 B, stages=3, swizzle=128B" in text
    assert ("tensor maps: #0 W4 box 64x32, #1 A box 8x64, #2 scales box 64x8 (unswizzled), "
            "#3 zeros box 64x16 (unswizzled)") in text
    # one block a cluster (the decode grid's tiles never share a weight tile); 3 blocks an SM
    # (DEQUANT_BLOCKS; 4 by shared memory), each thread 65536 / (3 x 256) registers, no setmaxnreg
    assert ("persistent: the grid counts tiles, each block walks them in groups of 8 rows of tiles; up to 3 blocks "
            "an SM (as many as the SMs hold: no setmaxnreg)\n") in text
    assert "producer: threads 128..255, 80 registers;" in text
    assert "consumers: threads 0..127 (1 warpgroup), 80 registers;" in text
    assert "multicast" not in text


def test_one_block_an_sm_with_setmaxnreg_where_asked_or_the_gemm_is_wgmma(on, monkeypatch):
    text = print_kernel(scheduled("matmul_w4a16", M16))  # wgmma's register A: the whole step's weights
    assert "setmaxnreg 240" in text and "blocks an SM" not in text
    monkeypatch.setattr(dequant_ring, "DEQUANT_BLOCKS", 1)
    text = print_kernel(scheduled("matmul_w4a16", M1))
    assert NOTE + MMA + "\n" in text and "setmaxnreg 40" in text and "setmaxnreg 240" in text
    # by shared memory: 6 stages of 15 KB hold 2 blocks an SM
    monkeypatch.setattr(dequant_ring, "DEQUANT_BLOCKS", 4)
    assert scheduled("matmul_w4a16", {"BM": 8, "BK": 256, "stages": 6}).warp_spec.blocks_per_sm == 2
    assert scheduled("matmul_w4a16", M1).warp_spec.blocks_per_sm == 4


def test_at_m16_the_gemm_stays_on_wgmma_and_k_steps_of_512_swizzle_by_segments(on):
    text = print_kernel(scheduled("matmul_w4a16", M16))
    assert NOTE + "\n" in text  # (wgmma's register-A form: nothing to say of the gemm)
    assert "shared Wq: u32[64, 64] @0 layout=32768 B, stages=2, swizzle=128B" in text  # 34816 B padded
    assert "#0 W4 box 64x32" in text


def test_split_k_kernel_too(on):
    k = scheduled("matmul_w4a16_splitk", {"BM": 8, "BK": 512, "stages": 2})
    assert k.warp_spec is not None and len(k.grid) == 3 and NOTE in print_kernel(k)


def test_k_steps_of_128_take_the_weight_as_an_unswizzled_box(on):
    # 64-byte weight rows: unpadded in the cp.async ring too, nothing to swizzle
    text = print_kernel(scheduled("matmul_w4a16", {"BM": 8, "BK": 128, "stages": 3}))
    assert ("# note: a dequantizing ring through the TMA (dequant_ring.py): Wq, Ss, Zs one unswizzled box a stage"
            + MMA + BLOCKS3) in text
    assert "#0 W4 box 64x16 (unswizzled)" in text


def test_rings_it_took_already_are_planned_as_before(on, monkeypatch):
    on_text = print_kernel(scheduled("matmul", {}))
    monkeypatch.setattr(dequant_ring, "DEQUANT_RING", False)
    assert on_text == print_kernel(scheduled("matmul", {})) and "dequantizing" not in on_text


# (M, N, K, G, constants, dtype): K and N ragged (K // 32 and K // G partial); a group of 128
# over two K steps of 64 (groups straddle the steps' edges); four groups of 32 a K step of 128
# (the last step's groups partly past K); M = 16 on wgmma's register-A form at K steps of 512;
# bf16
SHAPES = [
    (1, 100, 4100, 128, M1, np.float16),
    (3, 70, 2000, 128, {"BM": 8, "BK": 64, "stages": 4}, np.float16),
    (5, 96, 1000, 32, {"BM": 8, "BK": 128, "stages": 3}, np.float16),
    (16, 130, 3000, 128, M16, np.float16),
    (2, 64, 1100, 64, {"BM": 8, "BK": 256, "stages": 2}, ml_dtypes.bfloat16),
]


@pytest.mark.parametrize("M,N,K,G,consts,dtype", SHAPES)
def test_the_interpreter_runs_the_ring_and_matches_numpy(on, M, N, K, G, consts, dtype):
    k = scheduled("matmul_w4a16", {**consts, "G": G, "T": dtype_name(dtype)})
    assert k.warp_spec is not None and all(x.tensor_map >= 0 for x in k.warp_spec.loads)
    A, W4, scales, zeros, C, ref, tol, _ = case(np.random.default_rng(M + K), M, N, K, G, dtype)
    run_kernel(k, {"A": A, "W4": W4, "scales": scales, "zeros": zeros, "C": C})
    check(f"matmul_w4a16 through the TMA {M}x{N}x{K} g{G}", C, ref, tol)


def dtype_name(dtype) -> str:
    return "bf16" if np.dtype(dtype) == np.dtype(ml_dtypes.bfloat16) else "f16"


def test_split_k_parts_through_the_ring_add_up_to_numpy(on):
    M, N, K, S = 1, 100, 4100, 3
    k = scheduled("matmul_w4a16_splitk", {"BM": 8, "BK": 512, "stages": 2})
    assert k.warp_spec is not None
    A, W4, scales, zeros, C, ref, tol, _ = case(np.random.default_rng(5), M, N, K)
    P = np.full((S, M, N), np.nan, np.float32)
    run_kernel(k, {"A": A, "W4": W4, "scales": scales, "zeros": zeros, "P": P})
    run_kernel(scheduled("splitk_reduce", {}), {"P": P, "C": C})
    check("matmul_w4a16_splitk through the TMA, 3 parts", C, ref, tol)


@pytest.mark.nvcc
@pytest.mark.parametrize("name,consts,gemm,most", [
    ("matmul_w4a16", M1, "HMMA.16816.F32", 560), ("matmul_w4a16", M16, "HGMMA", 1200),
    ("matmul_w4a16_splitk", {"BM": 8, "BK": 512, "stages": 2}, "HMMA.16816.F32", 1000)])
@pytest.mark.slow  # nvcc builds of an off-by-default switch (untimed): CI's slow run
def test_nvcc_builds_it_the_producer_on_the_tma_the_consumers_issuing_no_copy(on, tmp_path, name, consts, gemm, most):
    """nvcc 13.0 sm_90a, the sizes assumed as NVRTC's build (TL_ASSUME_SIZES): no spills (M = 1:
    56 registers under launch bounds (256, 3), no setmaxnreg; split-K 71; M = 16 one block an SM
    with setmaxnreg 40 / 240); the
    producer's loop issues UTMALDG (its fallback, where a map does not encode, copies element by
    element); no cp.async anywhere; the consumers' loop (the one holding the gemm) loads only
    shared memory, in at most `most` SASS a K step: 489 at M = 1 (K steps of 256), 1,068 at M =
    16 (512), split-K 907 (512; 1,897 before the ring's loop variable was known not negative:
    codegen/warpspec/emit.py ring_step)."""
    sys.path.insert(0, str(ROOT / "tests" / "codegen"))
    from nvcc import cubin_sass
    from test_data import _innermost_loop_of
    from tlc.codegen import generate

    source = "#define TL_ASSUME_SIZES 1\n" + generate(scheduled(name, consts), "sm_90a").source
    assert "tl::tma_load<2>(" in source  # the scales' and zeros' boxes
    sass, log = cubin_sass(source, "sm_90a", tmp_path)
    assert "0 bytes spill stores" in log, log
    assert ("USETMAXREG" in sass) == (gemm == "HGMMA")  # (several blocks an SM keep their launch bounds' share)
    assert "LDGSTS" not in sass
    assert any("UTMALDG.2D" in x for x in _innermost_loop_of(sass, "UTMALDG.2D"))
    consumer = _innermost_loop_of(sass, gemm)
    assert not [x for x in consumer if re.search(r"\b(LDG|LDGSTS|UTMALDG|STS|STG)\b", x)], consumer
    assert any(re.search(r"\bLDS\b", x) for x in consumer) and len(consumer) <= most, len(consumer)


SPLITK_M1 = {"BM": 8, "BK": 512, "stages": 2}  # config.json's matmul_w4a16_splitk tiles at M = 1 (rule 0)


def test_a_split_k_part_s_k_step_is_not_negative_without_the_sizes(on):
    """In the ring's body `steps` (the stop of `range(steps)`) is at least 1, so the K step
    `(bz * steps + k) * BK + j` of each weight's group is not negative in every build
    (tl::nonneg), not only in those that assume the sizes (tl::sized_nonneg): nvcc's plain build
    kept the group's sign fixups (spills: M = 16's tiles 8 bytes at 240 registers)."""
    from tlc.codegen import generate

    for consts in (SPLITK_M1, M16):
        src = generate(scheduled("matmul_w4a16_splitk", consts), "sm_90a").source
        assert "tl::floordiv<int>(tl::nonneg(((((bz * steps) + k) * 512) + j)), 128)" in src
        assert "sized_nonneg(((((bz * steps) + k)" not in src


@pytest.mark.nvcc
@pytest.mark.parametrize("consts", [SPLITK_M1, M16], ids=["rule0", "rule1"])
@pytest.mark.slow  # nvcc builds of an off-by-default switch (untimed): CI's slow run
def test_nvcc_plain_build_of_the_split_k_ring_does_not_spill(on, tmp_path, consts):
    """nvcc 13.0 sm_90a without TL_ASSUME_SIZES (tlc build's C launcher): no spills (rule 0's
    3 blocks an SM spilled 1,856 bytes at 80 registers, rule 1 8 at 240, with the sign fixups);
    rule 0 within its launch bounds (256, 3) as NVRTC's build (71 registers)."""
    sys.path.insert(0, str(ROOT / "tests" / "codegen"))
    from nvcc import cubin_sass
    from tlc.codegen import generate

    source = generate(scheduled("matmul_w4a16_splitk", consts), "sm_90a").source
    _, log = cubin_sass(source, "sm_90a", tmp_path)
    assert "0 bytes spill stores" in log, log
    if consts is SPLITK_M1:
        assert "__launch_bounds__(256, 3) matmul_w4a16_splitk(" in source
        assert int(re.search(r"Used (\d+) registers", log).group(1)) <= 80, log


def test_m16_on_mma_sync_takes_several_blocks_an_sm(on, monkeypatch):
    from tlc.schedule import operand_layout
    monkeypatch.setattr(operand_layout, "WGMMA_REGISTER_A_MAX", 32)  # (helper D's switch: the gemm on mma.sync)
    text = print_kernel(scheduled("matmul_w4a16", M16))
    assert NOTE + MMA + BLOCKS3 in text


# config.json's sm_90a rules at M <= 16 (the H200 timed them: bench/results/
# q_D2_w4a16_tma_ring-h200-twentyeighth.txt): the ring chosen by matmul_w4a16's TMA constant,
# grid(dequant_ring=TMA), with the switch off
RULE_M1 = {"BM": 8, "BK": 256, "stages": 6, "TMA": True}
RULE_M16 = {"BM": 16, "BK": 512, "stages": 4, "TMA": True}


@pytest.mark.parametrize("M,N,K,consts", [(1, 100, 4100, RULE_M1), (16, 130, 3000, RULE_M16)])
def test_the_tma_constant_takes_the_ring_without_the_switch(M, N, K, consts):
    assert dequant_ring.DEQUANT_RING is False
    k = scheduled("matmul_w4a16", consts)
    assert k.warp_spec is not None and NOTE in print_kernel(k)
    assert scheduled("matmul_w4a16", {**consts, "TMA": False}).warp_spec is None
    assert scheduled("matmul_w4a16", consts, arch="sm_80").warp_spec is None  # (no TMA: the cp.async ring)
    A, W4, scales, zeros, C, ref, tol, _ = case(np.random.default_rng(M + K), M, N, K)
    run_kernel(k, {"A": A, "W4": W4, "scales": scales, "zeros": zeros, "C": C})
    check(f"matmul_w4a16 at the TMA rule {M}x{N}x{K}", C, ref, tol)


def test_the_kits_shapes_at_the_rules_with_callers_constants_match_numpy():
    """A caller's constants complete the rule's (TMA among them): where the ring cannot take the
    loop (K steps of 32, 64 threads) the cp.async ring runs; either way the interpreter, running
    the kernel as scheduled for sm_90a, matches NumPy."""
    import tlc
    from w4a16_kit import SHAPES

    kernel = tlc.load(str(ROOT / "stdlib" / "gemm.tl"), target="cpu").kernels["matmul_w4a16"]
    rings = 0
    for M, N, K, G, decode, _ in SHAPES:
        A, W4, scales, zeros, C, ref, tol, _ = case(np.random.default_rng(M * N + K), M, N, K, G)
        consts = kernel.with_recorded({"A": A, "W4": W4, "C": C}, {**decode, "G": G}, "sm_90a")
        k = scheduled("matmul_w4a16", consts)
        rings += k.warp_spec is not None
        assert (k.warp_spec is not None) <= consts.get("TMA", False)
        run_kernel(k, {"A": A, "W4": W4, "scales": scales, "zeros": zeros, "C": C})
        check(f"matmul_w4a16 {M}x{N}x{K} g{G} at {consts}", C, ref, tol)
    assert rings == 4
