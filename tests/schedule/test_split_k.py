"""Split-K as a schedule decision (tlc/schedule/split_k.py, #18): a persistent warp-specialized
GEMM takes its K loop in parts where its output has few tiles (the rule, `parts_expr`), the grid's
z counting them and the IR saying so; the interpreter runs the parts and the last part's fixup
as recorded (tlc/interp/ring.py) and matches NumPy; the same IR without the fixup does not.
The CUDA (tlc/codegen/warpspec/split_k.py): the slots' stores and the count's release before
the last part's acquire and in-order adds; it builds for sm_90a without spills."""
from __future__ import annotations

import dataclasses
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import tlc
from tlc.interp import run_kernel
from tlc.ir.printer import print_kernel
from tlc.schedule.split_k import FIXUP_BYTES, MIN_STEPS, SPLIT_MAX, WAVE, max_parts, parts_expr, parts_value

ROOT = Path(__file__).resolve().parents[2]
GEMM = str(ROOT / "examples" / "gemm.tl")
STD = str(ROOT / "stdlib" / "gemm.tl")
CONV = str(ROOT / "stdlib" / "conv.tl")
SMALL = {"BM": 64, "BN": 64, "BK": 64, "THREADS": 128}


def _kernel(path, name, constants=None, arch="sm_90a"):
    return tlc.load(path, target="cpu").kernels[name].scheduled(constants or {}, arch)


def _product(kernel, M, N, K, seed=3):
    """The kernel's C and NumPy's A @ B (f16 inputs, f32 products)."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((M, K)).astype(np.float16)
    B = rng.standard_normal((K, N)).astype(np.float16)
    C = np.full((M, N), np.nan, np.float16)
    run_kernel(kernel, {"A": A, "B": B, "C": C})
    return C, A.astype(np.float32) @ B.astype(np.float32)


@pytest.mark.parametrize("tiles, steps, most, parts", [
    (8, 256, 9, 9),     # M = N = 512, K = 16384 at 128 x 256: max_parts(128, 256) parts
    (16, 256, 16, 8),   # ... at 128 x 128: one wave
    (40, 256, 16, 3),   # 132 // 40
    (66, 64, 16, 2),    # half a wave
    (67, 64, 16, 1),    # more than half a wave: no split
    (200, 8, 9, 1),     # the 1x1 conv row's 200 tiles
    (4, 7, 16, 1),      # a short K: fewer than 2 * MIN_STEPS steps
    (4, 9, 16, 2),
    (1, 10, 16, 2),     # 10 // 4 parts wanted
    (1, 33, 16, 7),     # 8 wanted, chunk cdiv(33, 8) = 5: 7 parts take it, none empty
    (0, 0, 16, 1),      # an empty problem: one part, no division by zero
])
def test_the_rule_splits_few_tiles_with_a_long_k(tiles, steps, most, parts):
    got = parts_value(tiles, steps, most)
    assert got == parts
    chunk = -(-steps // got) if steps else 1
    assert got * tiles <= max(WAVE, tiles) and got <= most and (got == 1 or chunk >= MIN_STEPS)
    assert steps == 0 or (got - 1) * chunk < steps  # no part is empty


@pytest.mark.parametrize("rows, cols, most", [(128, 256, 9), (128, 128, 16), (64, 64, 16), (256, 256, 5)])
def test_a_tile_is_split_as_far_as_its_fixup_reads_at_most_a_mib(rows, cols, most):
    assert max_parts(rows, cols) == most and (most - 1) * rows * cols * 4 <= FIXUP_BYTES or most == SPLIT_MAX


def test_the_rule_as_ir_is_the_rule_in_python():
    from tlc.dtypes import I32
    from tlc import ir
    from tlc.runtime.grid import compile_grid

    for most in (9, 16):
        expr = parts_expr(ir.Var("T", I32), ir.Var("S", I32), most)
        grid = compile_grid((expr,), {"T": 0, "S": 1})
        for t in (0, 1, 3, 8, 16, 33, 66, 67, 132, 500):
            for s in (0, 1, 4, 7, 8, 9, 33, 64, 256, 1000):
                assert grid((t, s))[0] == parts_value(t, s, most), (t, s, most)


def test_the_ir_takes_k_in_parts_along_the_grids_z():
    k = _kernel(GEMM, "matmul")
    sk = k.warp_spec.split_k
    assert sk is not None and (sk.var, sk.acc, sk.slots) == ("kpart", "acc", WAVE)
    assert k.block_vars == ("bx", "by", "kpart") and k.grid[2] is sk.parts
    text = print_kernel(k)
    assert "  let kchunk: i32 = max(1, ((K - 1) // 64 + 1 - 1) // kparts + 1)\n" in text, text
    assert "for k in pipelined(0, kchunk, 1, stages=3):\n" in text
    assert "copy A[by * 128, (kpart * kchunk + k) * 64]<128, 64> -> As" in text
    assert "    split-K: the walk's z is the part of K (kpart); a part before the last stores acc into its slot of 132 " \
           "partial tiles and counts itself on its tile's counter (release), the last waits for the count (acquire), " \
           "adds the slots of parts 0, 1, ... in order, sets the count back to 0 and runs the epilogue\n" in text
    assert "# note: split-K" not in text  # (the warp specialization's lines say it)


@pytest.mark.parametrize("path, name", [(STD, "matmul_batched"), (STD, "matmul_splitk"), (CONV, "conv2d")])
def test_grids_of_three_dimensions_and_a_split_that_loses_the_im2col_ring_are_not_split(path, name):
    ws = _kernel(path, name, {"C": 64, "K": 3} if name == "conv2d" else None).warp_spec  # conv2d compiles C, K in
    assert ws is not None and ws.split_k is None
    if name == "conv2d":  # kh = (kpart * kchunk + k) // (K * CB) is no im2col box: the ring keeps its own
        assert ws.loads[0].im2col is not None and ws.tile_order.cluster == 1  # (an im2col ring: no cluster)


def _bwd_weight(N, H, W, C, F, K, S, P, seed=0):
    """std.conv's conv2d_bwd_weight at config.json's sm_90a constants (SPLIT 1, 64 x 64), each
    grid scheduled for sm_90a and run on the interpreter: (dw, the NumPy reference, the grids)."""
    sys.path.insert(0, str(ROOT / "tests" / "stdlib"))
    import conv_kit as ck
    return ck.scheduled_bwd_weight(N, H, W, C, F, K, S, P, seed)


def test_conv2d_bwd_weight_at_split_1_is_split_by_the_compiler_and_matches_numpy():
    dw, want, grids = _bwd_weight(16, 9, 9, 64, 64, 3, 1, 1)
    ws = grids[0].warp_spec
    assert ws.split_k is not None and [x.im2col is not None for x in ws.loads] == [True, True]
    assert "grid (bx) in (min(0, 1) * " in print_kernel(grids[1])  # the second grid: no blocks
    # 9 tiles, cdiv(16 * 81, 64) = 21 steps: 5 parts, the last part's loop stops at K
    assert parts_value(9, 21, max_parts(64, 64)) == 5 and "min(kchunk, " in print_kernel(grids[0])
    assert np.abs(dw.astype(np.float32) - want).max() < 2e-3 * np.abs(want).max()


def test_the_sm80_path_is_not_split():
    k = _kernel(GEMM, "matmul", arch="sm_80")
    assert k.warp_spec is None and len(k.grid) == 2


@pytest.mark.parametrize("constants, shape", [(SMALL, (100, 70, 3000)), ({}, (130, 300, 1000)), ({}, (64, 64, 576)),
                                              (SMALL, (200, 320, 200))],
                         ids=["10-parts", "4-parts", "2-parts", "1-part"])
def test_the_interpreter_runs_the_parts_and_matches_numpy(constants, shape):
    M, N, K = shape
    bm, bn = constants.get("BM", 128), constants.get("BN", 256)
    parts = parts_value(-(-M // bm) * -(-N // bn), -(-K // 64), max_parts(bm, bn))
    assert parts == {3000: 10, 1000: 4, 576: 2, 200: 1}[K]
    C, want = _product(_kernel(GEMM, "matmul", constants), M, N, K)
    assert np.abs(C.astype(np.float32) - want).max() < 2e-3 * np.abs(want).max()


def test_without_the_fixup_each_part_stores_only_its_share():
    k = _kernel(GEMM, "matmul", SMALL)
    k = dataclasses.replace(k, warp_spec=dataclasses.replace(k.warp_spec, split_k=None))
    C, want = _product(k, 100, 70, 3000)
    assert np.abs(C.astype(np.float32) - want).max() > 0.1 * np.abs(want).max()


def test_the_cuda_stores_counts_waits_and_adds_in_order():
    from tlc.codegen import generate

    src = generate(_kernel(GEMM, "matmul"), "sm_90a").source
    assert "__device__ float4 tl_sk_slots_matmul[1081344];" in src and "__device__ int tl_sk_counts_matmul[132];" in src
    body = src[src.index("// split-K (schedule/split_k.py)"):]
    order = ["if (tl_tiles_z > 1) {", "if (kpart < tl_tiles_z - 1) {",
             "tl_sk_mine[tl_r * 256 + threadIdx.x] = make_float4(acc[4 * tl_r]",
             "tl::bar_sync_named(5, 256);", "if (threadIdx.x == 0) tl::turn_done(tl_sk_count);",
             "tl_sk_epilogue = false;", "} else {", "if (threadIdx.x == 0) tl::turn_wait(tl_sk_count, tl_tiles_z - 1);",
             "tl::bar_sync_named(5, 256);", "for (int tl_s = 0; tl_s < tl_tiles_z - 1; ++tl_s) {",
             "__ldcg(tl_sk_part + tl_r * 256 + threadIdx.x)", "if (threadIdx.x == 0) *tl_sk_count = 0;",
             "if (tl_sk_epilogue) {", "tl::copy_f2s_staged<"]
    at = 0
    for x in order:  # each after the one before
        at = body.find(x, at)
        assert at >= 0, f"{x!r} is not after the statements before it:\n{body[:3000]}"


@pytest.mark.nvcc
def test_the_split_gemm_builds_for_sm90a_without_spills(tmp_path):
    sys.path.insert(0, str(ROOT / "tests" / "codegen"))
    from nvcc import cubin_sass
    from tlc.runner import build

    source, _ = build(STD, kernels=("matmul",), arch="sm_90a")
    assert re.search(r"tl::turn_wait\(tl_sk_count", source)
    _, log = cubin_sass(source, "sm_90a", tmp_path, "matmul")
    spills = re.findall(r"(\d+) bytes spill stores", log)
    assert spills and set(spills) == {"0"}, log
