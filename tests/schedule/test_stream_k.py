"""Stream-K as a schedule decision (tlc/schedule/stream_k.py, #18): a persistent warp-specialized
GEMM whose tiles leave the last wave part empty hands the tail's K steps out in even runs.  The
walk (every tile's every step once, a contributor segment first in its run, a finisher last),
the rule (which launches stream), the same rule and walk in templates/tl/tma.cuh's C, the IR
saying so (std.conv's conv2d alone, its grid sized to a wave; conv2d_bwd_weight with split-K),
the interpreter running the segments and the finishers' fixups against NumPy, and the CUDA."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tlc
from tlc.ir.printer import print_kernel
from tlc.schedule import stream_k
from tlc.schedule.split_k import MIN_STEPS

ROOT = Path(__file__).resolve().parents[2]
CONV = str(ROOT / "stdlib" / "conv.tl")
sys.path.insert(0, str(ROOT / "tests" / "stdlib"))
import conv_kit as ck  # noqa: E402

# (tiles, steps, blocks, alone): ResNet-50's r50_s4_1x1_2048 (200 tiles of 8 steps), r50_s4_3x3_512
# (98 of 72: fewer than a wave), conv2d_bwd_weight at 7 x 7 x 512 (144 of 25, with split-K), the
# interpreter's 3 blocks
@pytest.fixture(autouse=True)
def streamed(monkeypatch):
    """Stream-K on (stream_k.STREAM_K: off by default until the H200 has timed it)."""
    monkeypatch.setattr(stream_k, "STREAM_K", True)


WALKS = [(200, 8, 132, True), (98, 72, 132, True), (144, 25, 132, False), (50, 72, 132, True), (9, 112, 132, True),
         (4, 9, 3, True), (70, 4, 3, False), (5, 6, 3, True), (2, 8, 3, True)]


@pytest.mark.parametrize("tiles, steps, blocks, alone", WALKS, ids=str)
def test_the_walk_runs_every_step_once_a_contributor_first_and_a_finisher_last(tiles, steps, blocks, alone):
    r = stream_k.tail(tiles, steps, blocks, alone)
    assert r > 0
    owner = {}
    runs = {b: stream_k.walk(b, blocks, tiles, steps, alone=alone) for b in range(blocks)}
    for b, segs in runs.items():
        for t, k0, k1 in segs:
            assert 0 <= k0 < k1 <= steps
            for k in range(k0, k1):
                assert (t, k) not in owner
                owner[t, k] = b
        whole = len(range(b, tiles - r, blocks))
        assert [t for t, _, _ in segs[:whole]] == list(range(b, tiles - r, blocks))
        contributor = [i for i, (_, k0, _) in enumerate(segs) if k0 > 0]
        finisher = [i for i, (_, k0, k1) in enumerate(segs) if k0 == 0 and k1 < steps]
        assert contributor in ([], [whole]) and finisher in ([], [len(segs) - 1])
    assert len(owner) == tiles * steps
    for b, segs in runs.items():
        for t, k0, k1 in segs:
            if k0 == 0 and k1 < steps:  # the finisher's contributors are the next blocks, in order
                n = stream_k.contributors(b, blocks, tiles, steps, t, alone)
                assert sorted({owner[t, k] for k in range(steps)}) == list(range(b, b + n + 1))
    busiest = max(sum(k1 - k0 for _, k0, k1 in segs) for segs in runs.values())
    assert busiest < -(-tiles // blocks) * steps  # fewer steps than the whole tiles' busiest block


@pytest.mark.parametrize("tiles, steps, blocks, alone, why", [
    (392, 18, 132, True, "the last wave 128 of 132: nothing to save"),
    (784, 9, 132, True, "six waves, the last nearly full"),
    (264, 8, 132, True, "whole waves"),
    (200, 3, 132, True, "a short K loop"),
    (60, 72, 132, False, "split-K's: at most half a wave"),
    (200, 8, 140, True, "more blocks than slots"),
    (133, 1, 132, True, "a block's share under two steps"),
    (0, 8, 132, True, "no tiles"),
    (200, 2 ** 31 // 50, 132, True, "a tail of more steps than tl::StreamWalk's int counts"),
])
def test_the_rule_streams_only_where_the_busiest_block_saves(tiles, steps, blocks, alone, why):
    assert stream_k.tail(tiles, steps, blocks, alone) == 0, why
    runs = [stream_k.walk(b, blocks, tiles, steps, alone=alone) for b in range(blocks)]
    assert sorted(t for segs in runs for t, k0, k1 in segs if (k0, k1) == (0, steps)) == list(range(max(tiles, 0)))


def _c_walk_source() -> str:
    """templates/tl/tma.cuh's stream_tail and StreamWalk, as plain C++."""
    text = (ROOT / "templates" / "tl" / "tma.cuh").read_text()
    start = text.index("__host__ __device__ __forceinline__ int stream_tail(")
    end = text.index("};", text.index("struct StreamWalk")) + 2
    return text[start:end].replace("__host__ __device__ __forceinline__", "inline")


@pytest.mark.skipif(shutil.which("g++") is None, reason="no g++")
def test_the_c_walk_is_the_python_walk(tmp_path):
    cases = WALKS + [(392, 18, 132, True), (264, 8, 132, True), (60, 72, 132, False), (60, 72, 132, True),
                     (200, 8, 140, True), (1, 4, 132, True), (3, 100, 3, True),
                     (199, 20_000_000, 132, True), (200, 2 ** 31 // 50, 132, True)]  # (b * tail past an int)
    src = ["#include <cstdio>", _c_walk_source(), "int main() {", "  int t, k0, k1;"]
    for tiles, steps, blocks, alone in cases:
        src.append(f"  for (int b = 0; b < {blocks}; ++b) {{")
        src.append(f"    StreamWalk w({tiles}, {steps}, {blocks}, b, true, {str(alone).lower()}, {stream_k.SLOTS}, {MIN_STEPS});")
        src.append('    printf("%d %d:", b, w.on ? static_cast<int>(w.whole) : -1);')
        src.append('    while (w.next(t, k0, k1)) printf(" %d,%d,%d,%d", t, k0, k1, '
                   '(w.on && k0 == 0 && k1 < w.steps) ? w.contributors(t) : -1);')
        src.append('    printf("\\n");\n  }')
    src.append("}")
    (tmp_path / "walk.cpp").write_text("\n".join(src))
    subprocess.run(["g++", "-O1", "-o", str(tmp_path / "walk"), str(tmp_path / "walk.cpp")], check=True)
    got = subprocess.run([str(tmp_path / "walk")], check=True, capture_output=True, text=True).stdout.splitlines()
    want = []
    for tiles, steps, blocks, alone in cases:
        r = stream_k.tail(tiles, steps, blocks, alone)
        for b in range(blocks):
            segs = stream_k.walk(b, blocks, tiles, steps, alone=alone)
            want.append(f"{b} {tiles - r if r else -1}:" + "".join(
                f" {t},{k0},{k1},{stream_k.contributors(b, blocks, tiles, steps, t, alone) if r and k0 == 0 and k1 < steps else -1}"
                for t, k0, k1 in segs))
    assert got == want


def _conv(consts):
    return tlc.load(CONV, target="cpu").kernels["conv2d"].scheduled(consts, "sm_90a")


def test_conv2d_alone_streams_with_its_grid_sized_to_a_wave():
    """std.conv's conv2d: the split would lose its im2col ring, so it is streamed alone: the grid's
    z makes a launch of fewer tiles than a wave a wave; the IR says so."""
    k = _conv({"C": 512, "K": 1, "BN": 256, "S": 1, "P": 0})
    sk = k.warp_spec.stream_k
    assert sk is not None and sk.sized and (sk.acc, sk.slots, sk.var) == ("acc", stream_k.SLOTS, "kunit")
    assert k.warp_spec.split_k is None and k.block_vars == ("bx", "by", "kunit")
    text = print_kernel(k)
    assert "grid (bx, by, kunit) in ((F - 1) // 256 + 1, " in text and ", max(1, (132 - 1) // max(" in text
    assert "    stream-K: the blocks take tiles whole, then the tail's K steps (1 * ((512 - 1) // 64 + 1) a tile) in " \
           "even runs (schedule/stream_k.py); a run's first segment that ends a tile stores acc into the block's slot " \
           "of 132 and counts itself on the tile's counter (release), the segment that starts the tile waits for the " \
           "count (acquire), adds the slots in block order and runs the epilogue; the grid's z (kunit) only sizes the " \
           "launch to a wave\n" in text, text
    assert [bool(x.im2col) for x in k.warp_spec.loads] == [True, False]


def test_a_clustered_ring_streams_its_clusters_and_matches_numpy(monkeypatch):
    """An im2col ring in clusters of 2 (w's 256-row tile multicast: conv2d at 128 channels, 18 K
    steps) streams the clusters' tile pairs, both blocks of a cluster on the same K steps, each
    its own tile's slot and counter: on the interpreter's 3 clusters, 4 tiles (2 pairs) streamed,
    the finishers adding the next cluster's same-rank block; against NumPy."""
    from tlc.interp import ring

    k = _conv({"C": 128, "K": 3, "BN": 256, "S": 1, "P": 1})
    assert k.warp_spec.tile_order.cluster == 2 and k.warp_spec.stream_k is not None
    assert [x.multicast for x in k.warp_spec.loads] == [False, True]
    assert stream_k.tail(2, 18, 3, alone=True) == 2
    segments = []
    real = ring._Block.stream_part
    monkeypatch.setattr(ring._Block, "stream_part",
                        lambda self, env, regs, seg: (segments.append((self.block_index, seg)), real(self, env, regs, seg)))
    assert ck.scheduled_conv2d_error(k, (2, 9, 9, 128, 300, 3, 1, 1, 1)) < 2e-3
    ranks = [{}, {}]  # the segments of each cluster unit, by rank
    for b, (t, k0, k1, _) in segments:
        ranks[b % 2].setdefault(b // 2, []).append((t, k0, k1))
    assert ranks[0] and ranks[0] == ranks[1]  # both blocks of a cluster on the same pairs and K steps
    assert {k0 == 0 for segs in ranks[0].values() for _, k0, _ in segs} == {True, False}


def test_the_cuda_of_a_clustered_ring_walks_its_clusters():
    from tlc.codegen import generate

    src = generate(_conv({"C": 256, "K": 3, "BN": 256, "S": 1, "P": 1}), "sm_90a").source
    assert src.count("tl::StreamWalk tl_walk((tl_tiles + 1) / 2, ") == 3
    assert "gridDim.x / 2, blockIdx.x / 2, true, true, 132, 4);" in src
    assert "tl::cluster_tile<8, 2>(tl_tile, tl_tiles_x, tl_tiles_y, tl_tiles, tl_rank, bx, by, kunit);" in src
    assert "tl::turn_done(tl_sk_counts_conv2d + (tl_tile - tl_walk.whole) * 2 + static_cast<int>(tl_rank));" in src
    assert "tl_sk_slots_conv2d + static_cast<long long>(blockIdx.x + tl_s * 2) * 8192;" in src
    assert src.index("if (tl_valid) {") < src.index("if (tl_walk.on && tl_k0 > 0) {")  # a block past the last tile: no fixup


def test_std_gemm_streams_its_clusters_where_split_k_takes_one_part(monkeypatch):
    """std.gemm's matmul (clustered, split-K's): 74 tiles of 128 x 256 (more than half a wave: one
    part) of 4 K steps; on the interpreter's 3 clusters, 37 tile pairs, 4 pairs streamed."""
    from tlc.interp import ring

    k = tlc.load(str(ROOT / "stdlib" / "gemm.tl"), target="cpu").kernels["matmul"].scheduled({}, "sm_90a")
    assert k.warp_spec.tile_order.cluster == 2 and k.warp_spec.split_k is not None and k.warp_spec.stream_k is not None
    assert stream_k.tail(37, 4, 3, alone=False) == 4
    segments = []
    real = ring._Block.stream_part
    monkeypatch.setattr(ring._Block, "stream_part",
                        lambda self, env, regs, seg: (segments.append(seg), real(self, env, regs, seg)))
    rng = np.random.default_rng(5)
    M, N, K = 37 * 128, 512, 256
    A = rng.standard_normal((M, K)).astype(np.float16)
    B = rng.standard_normal((K, N)).astype(np.float16)
    C = np.full((M, N), np.nan, np.float16)
    from tlc.interp import run_kernel
    run_kernel(k, {"A": A, "B": B, "C": C})
    want = A.astype(np.float32) @ B.astype(np.float32)
    assert np.abs(C.astype(np.float32) - want).max() < 2e-3 * np.abs(want).max()
    assert {k0 == 0 for _, k0, _, _ in segments} == {True, False}


def test_a_streamed_ring_of_one_consumer_warpgroup_gives_its_producer_48_registers(monkeypatch):
    """std.gemm's matmul_skinny (64 x 16 tiles, one consumer warpgroup, clustered): streamed, its
    producer keeps stream_k.PRODUCER_REGS (every producer thread walks the segments where the host
    has no map; 40 spilled in matmul_tn), the consumers 240 either way; matmul's two warpgroups
    keep 40 / 232.  74 tiles of 4 K steps, 37 pairs on the interpreter's 3 clusters: 4 streamed."""
    from tlc.interp import ring, run_kernel

    gemm = tlc.load(str(ROOT / "stdlib" / "gemm.tl"), target="cpu")
    k = gemm.kernels["matmul_skinny"].scheduled({}, "sm_90a")
    assert k.warp_spec.stream_k is not None
    text = print_kernel(k)
    assert "producer: threads 128..255, setmaxnreg 48;" in text and "(1 warpgroup), setmaxnreg 240;" in text
    text = print_kernel(gemm.kernels["matmul"].scheduled({}, "sm_90a"))
    assert "producer: threads 256..383, setmaxnreg 40;" in text and "(2 warpgroups), setmaxnreg 232;" in text
    segments = []
    real = ring._Block.stream_part
    monkeypatch.setattr(ring._Block, "stream_part",
                        lambda self, env, regs, seg: (segments.append(seg), real(self, env, regs, seg)))
    rng = np.random.default_rng(7)
    M, N, K = 16, 74 * 64, 4 * 128
    A = rng.standard_normal((M, K)).astype(np.float16)
    W = rng.standard_normal((N, K)).astype(np.float16)
    C = np.full((M, N), np.nan, np.float16)
    run_kernel(k, {"A": A, "W": W, "C": C})
    want = A.astype(np.float32) @ W.astype(np.float32).T
    assert np.abs(C.astype(np.float32) - want).max() < 2e-3 * np.abs(want).max()
    assert {k0 == 0 for _, k0, _, _ in segments} == {True, False}
    monkeypatch.setattr(stream_k, "STREAM_K", False)
    gemm = tlc.load(str(ROOT / "stdlib" / "gemm.tl"), target="cpu")  # (a module's kernels keep their schedules)
    text = print_kernel(gemm.kernels["matmul_skinny"].scheduled({}, "sm_90a"))
    assert "stream" not in text.lower() and "producer: threads 128..255, setmaxnreg 40;" in text


def test_nothing_is_streamed_while_the_switch_is_off(monkeypatch):
    """Off (the default until timed): conv2d's grid and ring as before stream-K, bwd_weight split-K's alone."""
    monkeypatch.setattr(stream_k, "STREAM_K", False)
    k = _conv({"C": 512, "K": 1, "BN": 256, "S": 1, "P": 0})
    assert k.warp_spec.stream_k is None and k.block_vars == ("bx", "by") and len(k.grid) == 2
    grids = tlc.load(CONV, target="cpu").kernels["conv2d_bwd_weight"].scheduled_grids({"SPLIT": 1, "S": 1, "P": 1},
                                                                                        "sm_90a")
    assert grids[0].warp_spec.split_k is not None and grids[0].warp_spec.stream_k is None


def test_the_switch_is_off_by_default(monkeypatch):
    monkeypatch.undo()  # (the fixture's)
    assert stream_k.STREAM_K is False


def test_conv2d_bwd_weight_streams_where_split_k_takes_one_part():
    grids = tlc.load(CONV, target="cpu").kernels["conv2d_bwd_weight"].scheduled_grids({"SPLIT": 1, "S": 1, "P": 1},
                                                                                        "sm_90a")
    ws = grids[0].warp_spec
    assert ws.split_k is not None and ws.stream_k is not None and not ws.stream_k.sized
    assert ws.stream_k.prefer is not None
    text = print_kernel(grids[0])
    assert "stream-K: where the launch has one part of K or instead of its parts where min(1, max(0, " in text
    assert "is 1 (the grid's z then a wave's worth), the blocks take tiles whole" in text


@pytest.mark.parametrize("case, consts", [((2, 9, 7, 64, 70, 3, 1, 1, 1), {}), ((1, 11, 10, 72, 64, 3, 2, 1, 1), {}),
                                          ((1, 8, 8, 256, 256, 1, 1, 0, 1), {})], ids=str)
def test_the_interpreter_streams_conv2d_and_matches_numpy(case, consts, monkeypatch):
    """4 tiles of 9 K steps on the interpreter's 3 blocks: every tile streamed, its finisher adding
    a contributor's slot (ragged pixels and F, stride 2); 1 x 1, 4 tiles of 4 channel steps."""
    from tlc.interp import ring

    N, H, W, C, F, K, S, P, D = case
    kernel = _conv({"S": S, "P": P, "D": D, "C": C, "K": K, "BM": 64, "BN": 64, "THREADS": 128, **consts})
    assert kernel.warp_spec.stream_k is not None
    finishers = []
    real = ring._Block.stream_part

    def spy(self, env, regs, seg):
        finishers.append(seg[1] == 0)
        real(self, env, regs, seg)
    monkeypatch.setattr(ring._Block, "stream_part", spy)
    assert ck.scheduled_conv2d_error(kernel, case) < 2e-3
    assert True in finishers and False in finishers  # finishers and contributors both ran


def test_without_the_fixup_a_finisher_stores_only_its_share(monkeypatch):
    from tlc.interp import ring

    monkeypatch.setattr(ring._Block, "stream_part", lambda self, env, regs, seg: self.m.block(self.after, True))
    case = (2, 9, 7, 64, 70, 3, 1, 1, 1)
    kernel = _conv({"S": 1, "P": 1, "D": 1, "C": 64, "K": 3, "BM": 64, "BN": 64, "THREADS": 128})
    assert not ck.scheduled_conv2d_error(kernel, case, seed=0) < 0.1


@pytest.mark.parametrize("tiles, steps, parts, streams", [
    (36, 196, 3, True),     # dw at 14 x 14 x 256, batch 64: 3 parts of 66 steps, runs of 54
    (36, 98, 3, True),      # batch 32: 33 against 27
    (9, 3136, 14, False),   # dw at 56 x 56 x 64: 224 against 214, under an eighth saved
    (9, 784, 14, False),    # 28 x 28 x 128: 56 against 54
    (8, 40, 10, True), (4, 40, 10, False),  # (under two steps a block)
    (36, 196, 1, False), (0, 8, 2, False),
    (8, 300_000_000, 10, False)])  # the tiles' steps past an int: tl::StreamWalk would not stream
def test_a_split_launch_streams_instead_where_its_busiest_block_saves_an_eighth(tiles, steps, parts, streams):
    from tlc import ir
    from tlc.dtypes import I32
    from tlc.runtime.grid import compile_grid

    assert stream_k.prefer(tiles, steps, parts) is streams
    expr = compile_grid((stream_k.prefer_expr(ir.Var("T", I32), ir.Var("S", I32), ir.Var("P", I32)),),
                        {"T": 0, "S": 1, "P": 2})((tiles, steps, parts))[0]
    assert expr == int(streams)
    units = compile_grid((stream_k.units_expr(ir.Var("T", I32), ir.Var("S", I32), ir.Var("P", I32))[0],),
                         {"T": 0, "S": 1, "P": 2})((tiles, steps, parts))[0]
    assert units == (-(-stream_k.WAVE // tiles) if streams else parts)


def test_the_rule_as_ir_is_the_rule_in_python():
    from tlc import ir
    from tlc.dtypes import I32
    from tlc.runtime.grid import compile_grid

    grid = compile_grid((stream_k.prefer_expr(ir.Var("T", I32), ir.Var("S", I32), ir.Var("P", I32)),),
                        {"T": 0, "S": 1, "P": 2})
    for t in (0, 1, 2, 4, 8, 9, 16, 36, 66, 100, 131, 132):
        for s in (0, 1, 3, 4, 8, 21, 40, 98, 196, 784, 3136):
            for p in (1, 2, 3, 5, 10, 14, 16):
                assert grid((t, s, p))[0] == int(stream_k.prefer(t, s, p)), (t, s, p)


def test_the_interpreter_streams_a_split_launch_instead_and_matches_numpy(monkeypatch):
    """conv2d_bwd_weight at 8 tiles of 40 pixel steps: split-K would take 10 parts of 4 steps;
    streamed instead (runs of 3 on a wave; on the interpreter's 3 blocks, 2 tiles streamed)."""
    from tlc.interp import ring

    parts = []
    monkeypatch.setattr(ring._Block, "split_part", lambda self, env, regs: parts.append(1))
    segments = []
    real = ring._Block.stream_part
    monkeypatch.setattr(ring._Block, "stream_part",
                        lambda self, env, regs, seg: (segments.append(seg), real(self, env, regs, seg)))
    assert stream_k.prefer(8, 40, 10) and stream_k.tail(8, 40, 3, alone=True) == 2
    dw, want, grids = ck.scheduled_bwd_weight(10, 16, 16, 128, 256, 1, 1, 0, seed=2)
    assert grids[0].warp_spec.stream_k.prefer is not None
    assert np.abs(dw.astype(np.float32) - want).max() < 2e-3 * np.abs(want).max()
    assert not parts and {k0 == 0 for _, k0, _, _ in segments} == {True, False}  # no part split; streamed


def test_the_interpreter_streams_conv2d_bwd_weight_where_split_k_takes_one_part(monkeypatch):
    """70 tiles (more than half a wave: one part) of 4 pixel steps on 3 blocks: streamed."""
    from tlc.interp import ring

    segments = []
    real = ring._Block.stream_part
    monkeypatch.setattr(ring._Block, "stream_part",
                        lambda self, env, regs, seg: (segments.append(seg), real(self, env, regs, seg)))
    assert stream_k.tail(70, 4, 3, alone=False) > 0
    dw, want, _ = ck.scheduled_bwd_weight(1, 16, 16, 320, 896, 1, 1, 0, seed=1)
    assert np.abs(dw.astype(np.float32) - want).max() < 2e-3 * np.abs(want).max()
    assert {k0 == 0 for _, k0, _, _ in segments} == {True, False}  # finishers and contributors ran


def test_the_cuda_walks_segments_and_fixes_up_in_block_order():
    from tlc.codegen import generate

    src = generate(_conv({"C": 512, "K": 1, "BN": 256, "S": 1, "P": 0}), "sm_90a").source
    assert "__device__ float4 tl_sk_slots_conv2d[1081344];" in src and "__device__ int tl_sk_counts_conv2d[264];" in src
    assert src.count("tl::StreamWalk tl_walk(tl_tiles_x * tl_tiles_y, ") == 3  # the TMA producer, its fallback, the consumers
    assert src.count("const int k = tl_k0 + tl_k;") == 3
    assert src.count("const int tl_n = tl_walk.on ? tl_k1 - tl_k0 : (1 * CB);") == 3
    # the producer's counters start at the segment's first step
    assert re.search(r"int k_\w+ = k_\w+ > 0 \? tl_k0 / k_\w+ : 0, k_\w+ = k_\w+ > 0 \? tl_k0 % k_\w+ : 0;", src)
    body = src[src.index("// stream-K (schedule/stream_k.py)"):]
    order = ["if (tl_walk.on && tl_k0 > 0) {", "tl_sk_mine[tl_r * 256 + threadIdx.x] = make_float4(acc[4 * tl_r]",
             "tl::bar_sync_named(5, 256);", "tl::turn_done(tl_sk_counts_conv2d + (tl_tile - tl_walk.whole));",
             "} else {", "if (tl_walk.on && tl_k1 - tl_k0 < tl_walk.steps) {", "tl_walk.contributors(tl_tile);",
             "tl::turn_wait(tl_sk_count, tl_sk_parts);", "for (int tl_s = 1; tl_s <= tl_sk_parts; ++tl_s) {",
             "(blockIdx.x + tl_s) * 8192", "__ldcg(tl_sk_part + tl_r * 256 + threadIdx.x)",
             "*tl_sk_count = 0;", "tl::copy_f2s_staged<"]
    at = 0
    for x in order:
        at = body.find(x, at)
        assert at >= 0, f"{x!r} is not after the statements before it:\n{body[:3000]}"


def test_the_cuda_of_a_split_kernel_streams_on_one_part_or_instead_of_its_parts():
    from tlc.codegen import generate

    grids = tlc.load(CONV, target="cpu").kernels["conv2d_bwd_weight"].scheduled_grids({"SPLIT": 1, "S": 1, "P": 1},
                                                                                        "sm_90a")
    src = generate(grids[0], "sm_90a").source
    assert src.count("const bool tl_sk_prefer = (") == 3  # the TMA producer, its fallback, the consumers
    assert src.count("tl::StreamWalk tl_walk(tl_tiles_x * tl_tiles_y * (tl_sk_prefer ? 1 : tl_tiles_z), ") == 3
    assert "gridDim.x, blockIdx.x, tl_sk_prefer || tl_tiles_z == 1, tl_sk_prefer, 132, 4);" in src
    body = src[src.index("// stream-K (schedule/stream_k.py)"):]
    at = body.index("if (tl_walk.on && tl_k0 > 0) {")
    at = body.index("// split-K (schedule/split_k.py)", at)  # split-K's fixup only where the walk does not stream
    assert body.index("if (!tl_walk.on && tl_tiles_z > 1) {", at) > at


@pytest.mark.nvcc
@pytest.mark.parametrize("path, kernel, defines", [(CONV, "conv2d", ("C=512", "K=1", "BN=256", "stages=3")),
                                                   (CONV, "conv2d", ("C=256", "K=3", "BN=256", "P=1")),
                                                   (CONV, "conv2d_bwd_weight", ("SPLIT=1", "P=1")),
                                                   (str(ROOT / "stdlib" / "gemm.tl"), "matmul", ()),
                                                   (str(ROOT / "stdlib" / "gemm.tl"), "matmul_tn", ()),
                                                   (str(ROOT / "stdlib" / "gemm.tl"), "matmul_skinny", ())])
@pytest.mark.slow  # nvcc builds of an off-by-default switch (untimed): CI's slow run
def test_the_streamed_kernels_build_for_sm90a_without_spills(path, kernel, defines, tmp_path):
    """matmul_tn and matmul_skinny (one consumer warpgroup): their producer walks the segments at
    40 registers, where the walk's 64-bit division spilled 48-96 bytes (tl::StreamWalk counts in
    32 bits since)."""
    sys.path.insert(0, str(ROOT / "tests" / "codegen"))
    from nvcc import cubin_sass
    from tlc.runner import build

    source, _ = build(path, kernels=(kernel,), defines=defines, arch="sm_90a")
    assert "tl::StreamWalk tl_walk(" in source
    _, log = cubin_sass(source, "sm_90a", tmp_path, kernel)
    spills = re.findall(r"(\d+) bytes spill stores", log)
    assert spills and set(spills) == {"0"}, log
