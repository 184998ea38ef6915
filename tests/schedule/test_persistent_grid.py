"""A persistent walk that is the same computation as the grid of its tiles runs, on sm_90a, as
that grid warp-specialized into a persistent kernel (schedule/persistent_grid.py); every walk
that is not (a tile that depends on its block, on what the block ran before, on the order of
the tiles, or a walk that does not visit each tile once) keeps the walk as written.  The
interpreter runs the warp-specialized IR (its ring and persistent tile order) against NumPy."""
import sys
from pathlib import Path

import pytest

import tlc
from tlc.driver import check_source
from tlc.interp import run_kernel
from tlc.ir import print_kernel
from tlc.schedule import schedule

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interp"))
from test_interp_persistent import relu_gemm_matches_numpy  # noqa: E402

PROGRAM = Path(__file__).resolve().parents[1] / "programs" / "persistent.tl"


def test_a_tile_independent_walk_is_warp_specialized_and_persistent_on_sm_90a():
    mod = tlc.load(str(PROGRAM), target="cpu")
    kernel = mod.kernels["gemm_tiles"].scheduled({}, "sm_90a")
    assert kernel.block_vars == ("bx", "by") and kernel.warp_spec.tile_order is not None
    assert ("  # note: line 80: persistent loop over (bx, by): run as the grid of its tiles, which the "
            "warp-specialized kernel walks persistently in its own order (each tile once, as the walk visits "
            "them)\n") in print_kernel(kernel)
    assert "\n  grid (bx, by) in ((M - 1) // 128 + 1, (N - 1) // 128 + 1) threads=128" in print_kernel(kernel)
    assert mod.kernels["gemm_tiles"].scheduled({}, "sm_80").block_vars == ("b",)  # no warp specialization there
    # 3 x 3 tiles, ragged in M, N and K: the recorded ring and tile order, run by the interpreter
    relu_gemm_matches_numpy(lambda A, B, C: run_kernel(kernel, {"A": A, "B": B, "C": C}), 300, 270, 130, 5)


GEMM = """
@kernel
def g(A: f16[M, K], B: f16[K, N], C: f16[M, N], R: i32[1], n: i32, S: const = 4):
    with grid({grid}, threads=128) as b:
        A_s = shared(f16[128, 64])
        B_s = shared(f16[64, 128])
        acc = fragment(f32[128, 128])
{before}        for bx, by in persistent([{rows}, ceildiv(N, 128)], {wave}, {index}):
{clear}            for k in pipelined(ceildiv(K, 64), num_stages=3):
                copy(A[bx * 128, k * 64], A_s)
                copy(B[k * 64, by * 128], B_s)
                gemm(A_s, B_s, acc)
{epilogue}
"""
PLAIN = dict(grid="S", wave="S", index="b", before="", rows="ceildiv(M, 128)", clear="            clear(acc)\n",
             epilogue="            copy(acc, C[bx * 128, by * 128])")


def scheduled(**changes):
    src = GEMM.format(**{**PLAIN, **changes})
    r = check_source(src, "g.tl")
    assert r.ok, r.diagnostics
    return schedule(r.program, "g", {}, target="sm_90a")


def test_the_plain_variant_is_taken():
    assert scheduled().block_vars == ("bx", "by")
    assert scheduled(rows="ceildiv(M, 128) + n").block_vars == ("bx", "by")  # a scalar parameter: the launch has it


@pytest.mark.parametrize("changes", [
    dict(wave="2 * S"),  # more blocks than the walk's waves hold: each tile twice
    dict(grid="2 * S"),
    dict(index="b // 2"),  # two blocks walk the same tiles
    dict(clear=""),  # acc carries the block's earlier tiles
    dict(epilogue="            copy(acc, C[bx * 128, by * 128])\n            if n > 3:\n                break"),
    dict(epilogue="            copy(acc, C[bx * 128 + b, by * 128])"),  # the tile depends on its block
    dict(before="        t = 0\n", epilogue="            t = t + 1\n            copy(acc, C[bx * 128, by * 128 + t])"),
    dict(epilogue="            copy(C[bx * 128, by * 128], acc)\n            copy(acc, C[bx * 128, by * 128])"),  # reads C
    dict(before="        x = b\n", epilogue="            copy(acc, C[bx * 128 + x, by * 128])"),
    dict(rows="R[0]"),  # a tile count in device memory: no launch can compute that grid
], ids=["wave", "grid", "index", "carried_acc", "break", "block_index", "carried_scalar", "reads_output",
        "prelude_reads_block", "count_in_memory"])
def test_a_walk_that_is_not_its_tile_grid_stays_a_walk(changes):
    kernel = scheduled(**changes)
    assert kernel.block_vars == ("b",)
    assert kernel.warp_spec is None
