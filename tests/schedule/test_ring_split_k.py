"""Split-K of a cp.async ring (schedule/ring_split_k.py, #18), an option off by default: with it,
std.gemm's matmul_w4a16 (a ring warp specialization leaves alone: its weight is dequantized in
registers) takes K in parts along the grid's z, the rule counting the blocks an SM holds, and the
parts meet after the loop (codegen/ring_split_k.py, tl::split_k_meet): the interpreter runs the
parts and the meeting as recorded and matches NumPy; the same IR without the meeting does not;
the CUDA stores, counts and adds in part order, and builds without spills; the cpu target
refuses it."""
from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest

from tlc.interp import run_kernel
from tlc.ir.printer import print_kernel
from tlc.runtime.grid import evaluate_int
from tlc.schedule import ring_split_k
from tlc.schedule.split_k import WAVE, parts_value

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "stdlib"))
from w4a16_kit import case, check, scheduled  # noqa: E402

M1 = {"BM": 8, "BK": 256, "stages": 3}  # config.json's matmul_w4a16 tiles at M = 1 on sm_90a



@pytest.fixture
def on(monkeypatch):
    monkeypatch.setattr(ring_split_k, "RING_SPLIT", True)


def _parts(k, M, N, K):
    return evaluate_int(k.split_k.parts, {"M": M, "N": N, "K": K, "KW": 4 * -(-K // 32), "KG": -(-K // 128)})


def test_off_by_default():
    assert ring_split_k.RING_SPLIT is False
    k = scheduled("matmul_w4a16", M1)
    assert k.split_k is None and len(k.grid) == 2 and "kpart" not in print_kernel(k)


def test_the_decode_kernel_takes_k_in_parts_counting_the_blocks_an_sm_holds(on):
    k = scheduled("matmul_w4a16", M1)
    assert k.smem_bytes == 49152 and ring_split_k.blocks_per_sm(k, _target()) == 4
    assert k.split_k is not None and k.split_k.slots == 4 * WAVE and k.split_k.acc == "acc"
    assert k.block_vars[2] == "kpart" and len(k.grid) == 3
    # N = K = 8192: 128 tiles of 64 rows, 32 K steps: 4 parts (528 // 128); a short K or many
    # tiles keep one
    assert _parts(k, 1, 8192, 8192) == 4 == parts_value(128, 32, 16, 528)
    assert _parts(k, 1, 8192, 512) == 1 and _parts(k, 64, 65536, 8192) == 1
    text = print_kernel(k)
    assert ("# note: split-K of the cp.async ring (ring_split_k.py): the grid's z counts the parts of K (kpart), "
            "at most 528 blocks' worth of tiles and parts (WAVE x 4 blocks an SM); the last part to arrive adds "
            "acc's slots in part order and runs the epilogue") in text
    assert "copy W4[bx * 64, (kpart * kchunk + k) * 32]<64, 32> -> Wq" in text


def test_kernels_it_cannot_take_are_left_alone(on):
    # three grid dimensions already (the author's own split), and a warp-specialized ring
    assert scheduled("matmul_w4a16_splitk", {"BM": 8, "BK": 512, "stages": 2}).split_k is None
    k = scheduled("matmul", {})
    assert k.warp_spec is not None and k.split_k is None


SKINNY_RULE0 = {"BM": 16, "BN": 32, "BK": 256, "stages": 4, "THREADS": 64}  # config.json's: a cp.async ring on sm_90a


@pytest.mark.parametrize("name,arch,consts", [
    ("matmul", "sm_80", {}), ("matmul_tf32", "sm_80", {}), ("matmul_epilogue", "sm_80", {}),
    ("matmul_skinny", "sm_80", {}), ("matmul_f8_rowwise", "sm_80", {}), ("matmul_skinny", "sm_90a", SKINNY_RULE0),
    ("matmul_w8a16", "sm_80", {}), ("matmul_w8a16", "sm_90a", {}), ("matmul_w4a16_prefill", "sm_90a", {})])
def test_only_a_ring_that_dequantizes_packed_weights_in_registers_splits(on, name, arch, consts):
    # cp.async rings the rule took before it was narrowed to the kernels it was meant for (sm_80's
    # GEMMs spilled, scripts/options-flip): each has a cleared f32 accumulator and one loop, but
    # no gemm operand computed in registers from a tile of words holding several weights
    # (w8a16: a weight a byte; the prefill dequantizes into shared memory)
    k = scheduled(name, consts, arch)
    assert k.warp_spec is None and len(k.grid) == 2
    loop = next(s for s in k.body if getattr(s, "kind", None) == "pipelined")
    assert ring_split_k.dequantized_operand(k, loop) is None
    assert k.split_k is None and "kpart" not in print_kernel(k)
    w4 = scheduled("matmul_w4a16", M1, arch)
    assert w4.split_k is not None and w4.split_k.acc == "acc"


def test_the_split_is_a_pass_of_its_own_after_warp_specialization(on):
    from tlc import package_data
    from tlc.driver import check_file
    from tlc.schedule import PASSES, observing_passes, schedule

    assert PASSES[PASSES.index("specialize_warps") + 1] == "split_ring"
    seen = {}
    with observing_passes(lambda name, k: seen.setdefault(name, k)):
        schedule(check_file(str(package_data.stdlib().joinpath("gemm.tl"))).program, "matmul_w4a16", M1,
                 target="sm_80")
    assert seen["specialize_warps"].split_k is None and len(seen["specialize_warps"].grid) == 2
    assert seen["split_ring"].split_k is not None and len(seen["split_ring"].grid) == 3
    assert "# note: split-K of the cp.async ring" in print_kernel(seen["split_ring"])


@pytest.mark.parametrize("M,N,K,consts", [(1, 100, 4100, M1), (3, 70, 2000, {"BM": 8, "BK": 128, "stages": 3}),
                                          (16, 130, 3000, {"BM": 16, "BK": 256, "stages": 2})])
def test_the_interpreter_runs_the_parts_and_matches_numpy(on, M, N, K, consts):
    k = scheduled("matmul_w4a16", consts)
    assert _parts(k, M, N, K) > 1
    A, W4, scales, zeros, C, ref, tol, _ = case(np.random.default_rng(M + K), M, N, K)
    run_kernel(k, {"A": A, "W4": W4, "scales": scales, "zeros": zeros, "C": C})
    check(f"split matmul_w4a16 {M}x{N}x{K}", C, ref, tol)


def test_without_the_meeting_each_part_stores_only_its_share(on):
    k = scheduled("matmul_w4a16", M1)
    k = dataclasses.replace(k, split_k=None)  # the split grid and loop, no meeting
    A, W4, scales, zeros, C, ref, tol, _ = case(np.random.default_rng(7), 1, 100, 4100)
    run_kernel(k, {"A": A, "W4": W4, "scales": scales, "zeros": zeros, "C": C})
    assert np.abs(C.astype(np.float64) - ref).max() > 0.1 * np.abs(ref).max()


def test_the_cuda_stores_counts_and_adds_in_part_order_before_the_epilogue(on):
    from tlc.codegen import generate

    src = generate(scheduled("matmul_w4a16", M1), "sm_90a").source
    assert "__device__ float4 tl_rsk_slots_matmul_w4a16[67584];" in src  # 528 tiles' worth of 64 x 8 f32
    assert "__device__ int tl_rsk_counts_matmul_w4a16[528];" in src
    body = src[src.index("extern \"C\" __global__"):]
    order = ["tl::gemm_mma_sm80_rs<", "tl::cp_async_wait<0>();",
             "// split-K (schedule/ring_split_k.py)", "const int tl_sk_tile = blockIdx.y * gridDim.x + blockIdx.x;",
             "if (gridDim.z == 1 || tl::split_k_meet<tl_matmul_w4a16_layout_1::REGS, 128>(acc, "
             "tl_rsk_slots_matmul_w4a16 + static_cast<long long>(tl_sk_tile) * gridDim.z * 128, "
             "tl_rsk_counts_matmul_w4a16 + tl_sk_tile, blockIdx.z, gridDim.z)) {",
             "C[("]
    at = 0
    for x in order:  # each after the one before
        at = body.find(x, at)
        assert at >= 0, f"{x!r} is not after the statements before it"


@pytest.mark.slow  # nvcc builds of an off switch (untimed): CI's slow run, the README's run stays under 5 minutes
@pytest.mark.nvcc
@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
def test_the_split_kernel_builds_without_spills(on, arch, tmp_path):
    sys.path.insert(0, str(ROOT / "tests" / "codegen"))
    from nvcc import cubin_sass
    from tlc.codegen import generate

    sass, log = cubin_sass(generate(scheduled("matmul_w4a16", M1, arch), arch).source, arch, tmp_path)
    assert "0 bytes spill stores" in log
    # the count's acquire-release add, the barrier's OR that tells the last part, the slots
    # read through L2
    assert "ATOMG.E.ADD.S32.STRONG.GPU" in sass and "BAR.RED.OR" in sass and "LDG.E.128.STRONG.GPU" in sass


@pytest.mark.nvcc
def test_a_large_accumulator_meets_without_a_second_copy_of_it(on, monkeypatch, tmp_path):
    """sm_80's matmul_tf32 (a 128-register accumulator a thread, 252 registers before the
    meeting) split: the last part reads its own slot back rather than keeping a copy of its
    registers for its turn in the sum (the same bits), which spilled 19 KB (nvcc 13.0)."""
    sys.path.insert(0, str(ROOT / "tests" / "codegen"))
    from nvcc import cubin_sass
    from tlc.codegen import generate

    # (the rule takes only w4a16 decode kernels: the meeting's code is tested here on a kernel
    # it leaves alone, told that the accumulator's ring dequantizes)
    monkeypatch.setattr(ring_split_k, "dequantized_operand", lambda kernel, loop: "As")
    k = scheduled("matmul_tf32", {}, "sm_80")
    assert k.split_k is not None
    sass, log = cubin_sass(generate(k, "sm_80").source, "sm_80", tmp_path)
    assert "0 bytes spill stores" in log


def test_the_cpu_target_refuses_it(on):
    from tlc.codegen import generate
    from tlc.diagnostics import DiagnosticError

    with pytest.raises(DiagnosticError) as e:
        generate(scheduled("matmul_w4a16", M1), "cpu")
    assert [(d.code, d.message) for d in e.value.diagnostics] == [
        ("E345", "the cpu target does not generate a kernel split along K for a GPU (schedule it for the cpu target) yet")]


def _target():
    from tlc import targets
    return targets.get("sm_90a")
