"""A persistent walk that is the same computation as the grid of its tiles runs, on sm_90a, as
that grid warp-specialized into a persistent kernel (schedule/persistent_grid.py); every walk
that is not (a tile that depends on its block, on what the block ran before, on the order of
the tiles, or a walk that does not visit each tile once) keeps the walk as written.  The
interpreter runs the warp-specialized IR (its ring and persistent tile order) against NumPy."""
import sys
from pathlib import Path

import pytest

import tlc
from tlc import package_data
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


def test_a_scalar_each_tile_sets_before_reading_it_keeps_the_tile_grid():
    # the lowering declares it at the kernel's top; each tile assigns it anew before any read
    kernel = scheduled(before="        t = 0\n",
                       epilogue="            t = by * 128\n            copy(acc, C[bx * 128, t])")
    assert kernel.block_vars == ("bx", "by") and kernel.warp_spec.tile_order is not None


ROWS = """
@kernel
def r(A: f16[M, K], B: f16[K, N], C: f16[M, N], V: f32[M], S: const = 4):
    with grid(S, threads=128) as b:
        A_s = shared(f16[128, 64])
        B_s = shared(f16[64, 128])
        acc = fragment(f32[128, 128])
        top = fragment(f32[128])
        half_top = fragment(f32[128])
        for bx, by in persistent([ceildiv(M, 128), ceildiv(N, 128)], S, b):
            clear(acc)
            for k in pipelined(ceildiv(K, 64), num_stages=3):
                copy(A[bx * 128, k * 64], A_s)
                copy(B[k * 64, by * 128], B_s)
                gemm(A_s, B_s, acc)
            reduce_max(acc, top, dim=1)
            for i in parallel(128):
{rows}
            copy(half_top, V[bx * 128])
            copy(acc, C[bx * 128, by * 128])
"""


@pytest.mark.parametrize("rows,tiled", [
    # each iteration reads the element it stored (attention's max_log2[i], then rescale[i])
    ("                half_top[i] = top[i] * 0.5\n                half_top[i] = half_top[i] + 1.0", True),
    # read before it is stored: what an earlier tile left there
    ("                half_top[i] = half_top[i] + top[i]", False),
], ids=["stored_then_read", "read_first"])
def test_a_parallel_loops_element_stores_write_the_vector_whole(rows, tiled):
    r = check_source(ROWS.format(rows=rows), "r.tl")
    assert r.ok, r.diagnostics
    kernel = schedule(r.program, "r", {}, target="sm_90a")
    assert (kernel.block_vars == ("bx", "by")) == tiled


def attention_walk(tmp_path) -> Path:
    """std.attention's flash_fwd, statement for statement, as an author's persistent walk over
    its (query block, head, batch) tiles in a grid of SMS blocks."""
    src = package_data.stdlib().joinpath("attention.tl").read_text()  # installed or a checkout's
    kernel = src[src.index("@kernel\ndef flash_fwd("):src.index("@kernel\ndef flash_decode(")]
    head = "    with grid(cdiv(S, BM), H, B, threads=THREADS, persistent_tiles=PERSISTENT) as (bx, h, b):\n"
    assert head in kernel
    before, body = kernel.split(head)
    # (the walk is persistent itself: no PERSISTENT constant, nor its comment)
    before = before[:before.index("    # PERSISTENT:")]
    before = before.replace("THREADS: const = 256,\n              PERSISTENT: const = False):",
                            "THREADS: const = 256, SMS: const = 132):")
    walk = ("    with grid(SMS, threads=THREADS) as blk:\n"
            "        for bx, h, b in persistent([cdiv(S, BM), H, B], SMS, blk):\n"
            + "".join("    " + line if line.strip() else line for line in body.splitlines(keepends=True)))
    path = tmp_path / "flash_fwd_walk.tl"
    path.write_text("LOG2E: const = 1.4426950408889634\n\n\n" + before + walk)
    return path


@pytest.mark.parametrize("causal", [False, True])
def test_an_attention_walk_runs_as_its_persistent_tile_grid(tmp_path, causal, monkeypatch):
    """Its scalars (hk, past, n_blocks) are declared at the kernel's top and set by each tile,
    its row statistics stored element by element: the same computation as the grid of its tiles,
    which warp specialization makes persistent, Q through the producer's TMA once a tile and the
    output staged in K's stage of the tile's last iteration (no room beside the ring)."""
    import numpy as np
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "stdlib"))
    from test_attention import check

    from tlc.schedule import warpspec
    monkeypatch.setattr(warpspec, "DYNAMIC_TILES", False)  # pairs (the dynamic order: test_dynamic_tiles.py)
    mod = tlc.load(str(attention_walk(tmp_path)), target="cpu")
    kernel = mod.kernels["flash_fwd"].scheduled({"D": 128, "CAUSAL": causal}, "sm_90a")
    ws = kernel.warp_spec
    assert kernel.block_vars == ("bx", "h", "b") and kernel.persistent_walk
    assert ws.tile_order.pairs == causal and [x.buffer for x in ws.tile_loads] == ["q_tile"]
    assert ws.store is not None and ws.loads[ws.store.in_stage].buffer == "k_tile"
    # 3 query blocks x 2 heads on the interpreter's 3 blocks, 4 key blocks a tile (ragged): the
    # next tile's copies run into the stage that holds the output once its store has read it

    def run(q, k, v, o, lse, scale):
        run_kernel(kernel, {"Q": q, "K": k, "V": v, "O": o, "LSE": lse, "scale": np.float32(scale)})
    check(run, "f16", 1, 2, 1, 300, 400, 128, causal, 11)
