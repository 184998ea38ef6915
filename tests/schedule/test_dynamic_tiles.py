"""A dynamic tile order (ir.TileOrder.dynamic, schedule/warpspec.py DYNAMIC_TILES, on since
session 28's H200 timed it): a persistent ring whose tiles' loop lengths grow with x (a causal attention's
query blocks) takes each block's next tile from a counter in device memory, longest first, instead
of in pairs from both ends of x.  What the schedule decides, what --emit ir and the verifier say,
the C (the producer's take, the consumers' read through a two-slot ring, the counters back at 0),
tl::heavy_tile against the interpreter's, nvcc, and the interpreter against NumPy."""
from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tlc
from tlc import ir
from tlc.interp import run_kernel
from tlc.interp.ring import block_walk, heavy_tile
from tlc.ir.printer import print_kernel
from tlc.schedule import warpspec

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "stdlib"))
sys.path.insert(0, str(ROOT / "tests" / "schedule"))
from test_attention import check  # noqa: E402
from test_persistent_grid import attention_walk  # noqa: E402


@pytest.fixture
def dynamic(monkeypatch):
    monkeypatch.setattr(warpspec, "DYNAMIC_TILES", True)


def _walk(tmp_path, **constants) -> ir.Kernel:
    mod = tlc.load(str(attention_walk(tmp_path)), target="cpu")
    return mod.kernels["flash_fwd"].scheduled({"D": 128, **constants}, "sm_90a")


def test_a_causal_walk_takes_its_tiles_from_a_counter(tmp_path, dynamic):
    order = _walk(tmp_path, CAUSAL=True).warp_spec.tile_order
    assert order.dynamic and not order.pairs
    assert not _walk(tmp_path).warp_spec.tile_order.dynamic  # every tile as long: the fixed walk


def test_off_the_causal_walk_takes_pairs(tmp_path, monkeypatch):
    monkeypatch.setattr(warpspec, "DYNAMIC_TILES", False)
    order = _walk(tmp_path, CAUSAL=True).warp_spec.tile_order
    assert order.pairs and not order.dynamic


def test_emit_ir_and_the_verifier(tmp_path, dynamic):
    k = _walk(tmp_path, CAUSAL=True)
    ws = k.warp_spec
    assert ws.ring_end == ws.sched_offset + 48 and ws.sched_offset == ws.barriers + 16 * ws.stages + 16
    assert (f"    persistent: the grid counts tiles, each block takes its next from a counter in device memory (the "
            f"producer's atomic add, handed to the consumers through slots @{ws.sched_offset + 32} behind full[2] "
            f"@{ws.sched_offset} and empty[2] @{ws.sched_offset + 16}), x from its end down then y then z (their loop "
            f"lengths grow with x: the shortest taken last); the last block sets the counter back to 0\n") in print_kernel(k)
    bad = dataclasses.replace(k, warp_spec=dataclasses.replace(ws, tile_order=dataclasses.replace(ws.tile_order, pairs=True)))
    with pytest.raises(ir.IRVerifyError) as info:
        ir.verify(bad)
    assert str(info.value) == ("kernel 'flash_fwd': the dynamic tile order takes tiles in pairs, in clusters, or as "
                               "split-K's or stream-K's units")


def test_the_c_takes_a_count_a_tile_and_sets_the_counter_back(tmp_path, dynamic):
    from tlc.codegen import generate
    text = generate(_walk(tmp_path, CAUSAL=True), "sm_90a").source
    assert "__device__ int tl_dyn_flash_fwd[2];" in text
    take = ["tl::mbar_wait(tl_sched_bar + 2 + tl_q % 2, ((tl_q / 2) & 1) ^ 1);", "tl_tile = atomicAdd(tl_dyn_flash_fwd, 1);",
            "tl_sched[tl_q % 2] = tl_tile;", "tl::mbar_arrive(tl_sched_bar + tl_q % 2);",
            "if (tl_tile >= tl_tiles_x * tl_tiles_y * tl_tiles_z && atomicAdd(tl_dyn_flash_fwd + 1, 1) == gridDim.x - 1) {",
            "tl_dyn_flash_fwd[0] = 0;", "tl_dyn_flash_fwd[1] = 0;", "if (tl_tile >= tl_tiles_x * tl_tiles_y * tl_tiles_z) break;",
            "tl::heavy_tile(tl_tile, tl_tiles_x, tl_tiles_y, bx, h, b);"]
    read = ["tl::mbar_wait(tl_sched_bar + tl_q % 2, (tl_q / 2) & 1);", "const int tl_tile = tl_sched[tl_q % 2];",
            "__syncwarp();", "if (threadIdx.x % 32 == 0) tl::mbar_arrive(tl_sched_bar + 2 + tl_q % 2);",
            "if (tl_tile >= tl_tiles_x * tl_tiles_y * tl_tiles_z) break;"]
    # the TMA path's one thread, the element copies' producer warpgroup (thread 0 takes, all read
    # after their own barrier), the consumers
    lines = [x.strip() for x in text.splitlines()]
    starts = [i for i, x in enumerate(lines) if x.startswith("for (int tl_q = 0;; ++tl_q) {")]
    assert len(starts) == 3
    for s, want in zip(starts, (take, take, read)):
        pos = s
        for x in want:  # in order, each a line of its own (its comment aside)
            pos = next(i for i in range(pos, len(lines)) if lines[i].split("  //")[0] == x) + 1
    assert "tl::bar_sync_named(12, 128);  // the producer's threads read the count" in text
    assert "paired_tile(" not in text.split("extern \"C\" __global__")[1]


@pytest.mark.skipif(shutil.which("g++") is None, reason="no g++")
def test_the_c_heavy_tile_is_the_interpreters_and_a_bijection(tmp_path):
    text = (ROOT / "templates" / "tl" / "tma.cuh").read_text()
    start = text.index("__host__ __device__ __forceinline__ void heavy_tile(")
    fn = text[start:text.index("\n}\n", start) + 3].replace("__host__ __device__ __forceinline__", "inline")
    shapes = [(32, 32, 4), (5, 3, 2), (1, 7, 1), (64, 2, 3)]
    src = ["#include <cstdio>", fn, "int main() {", "  int x, y, z;"]
    for tx, ty, tz in shapes:
        src.append(f"  for (int t = 0; t < {tx * ty * tz}; ++t) {{ heavy_tile(t, {tx}, {ty}, x, y, z); "
                   'printf("%d %d %d\\n", x, y, z); }')
    src.append("}")
    (tmp_path / "h.cpp").write_text("\n".join(src))
    subprocess.run(["g++", "-O1", "-o", str(tmp_path / "h"), str(tmp_path / "h.cpp")], check=True)
    got = subprocess.run([str(tmp_path / "h")], check=True, capture_output=True, text=True).stdout.splitlines()
    want, n = [], 0
    for tx, ty, tz in shapes:
        tiles = [heavy_tile(t, tx, ty) for t in range(tx * ty * tz)]
        assert sorted(tiles) == sorted((x, y, z) for x in range(tx) for y in range(ty) for z in range(tz))
        assert [x for x, _, _ in tiles[:tx]] == list(range(tx - 1, -1, -1))  # a row's longest first
        want += [f"{x} {y} {z}" for x, y, z in tiles]
        n += tx * ty * tz
    assert got == want and len(got) == n


def test_the_interpreters_blocks_take_every_tile_once(tmp_path, dynamic):
    ws = _walk(tmp_path, CAUSAL=True).warp_spec
    extents, blocks = (32, 3, 2), 5
    taken = [t for b in range(blocks) for t, *_ in block_walk(b, blocks, ws, extents)]
    assert sorted(taken) == sorted((x, y, z) for x in range(32) for y in range(3) for z in range(2))


# the second: two batches, two query heads a key head, more queries than keys, the keys one past a
# tile (at S, SK = 700, 513 it was 3 s of the README run's interpreter time, for the same edges)
@pytest.mark.parametrize("case", [(1, 2, 1, 300, 400, True), (2, 4, 2, 400, 257, True), (1, 3, 3, 500, 300, True)])
def test_the_interpreter_against_numpy(tmp_path, dynamic, case):
    B, H, HK, S, SK, causal = case
    k = _walk(tmp_path, CAUSAL=causal)
    assert k.warp_spec.tile_order.dynamic

    def run(q, kk, v, o, lse, scale):
        run_kernel(k, {"Q": q, "K": kk, "V": v, "O": o, "LSE": lse, "scale": np.float32(scale)})
    check(run, "f16", B, H, HK, S, SK, 128, causal, 5)


@pytest.mark.slow  # nvcc builds of an off-by-default switch (untimed): CI's slow run
@pytest.mark.nvcc
def test_nvcc_builds_it_without_local_memory(tmp_path, dynamic):
    from nvcc import cubin_sass
    from tlc.codegen import generate
    sass, log = cubin_sass(generate(_walk(tmp_path, CAUSAL=True), "sm_90a").source, "sm_90a", tmp_path, "dyn")
    assert not re.search(r"\b(LDL|STL)\b", sass) and " 0 bytes spill stores" in log
    assert re.search(r"\bATOMG\.E\.ADD|\bATOMG\b", sass)  # the counter's atomic add
