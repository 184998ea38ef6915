"""The loads of a warp-specialized ring (tlc/schedule/ring_loads.py), asked of the loops the pass
sees: std.gemm's matmul (A and B, 128-byte swizzled tiles; B multicast in clusters of two),
std.conv's conv2d (x by the TMA's im2col mode, w's rows along its first dimension) and
std.attention's flash_bwd (its log-sum-exp and dO . O columns, one unswizzled box each).  Each
load comes back with the map index -1 (the planner registers the maps): the same record as the
pass's otherwise."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import tlc
from tlc import ir
from tlc.driver import check_file
from tlc.schedule import schedule_grids
from tlc.schedule.ring_loads import flat_load, im2col_load, tma_load, with_map

ROOT = Path(__file__).resolve().parents[2]


def _ring(path: str, name: str, **constants):
    k = tlc.load(str(ROOT / path), target="cpu").kernels[name].scheduled(constants, "sm_90a")
    return k, k.body[k.warp_spec.loop]


def _resized(k: ir.Kernel, copy: ir.Copy, shape: tuple):
    """`k` with the buffer `copy` fills of `shape`, and the copy of as many elements: (kernel,
    its index in the loop, copy) for tma_load."""
    loop = k.body[k.warp_spec.loop]
    resized = replace(copy, src=replace(copy.src, extents=copy.src.extents[:-len(shape)] + shape))
    buffers = tuple(replace(b, shape=shape) if b.name == copy.dst.name else b for b in k.buffers)
    return replace(k, buffers=buffers), loop.body.index(copy), resized


def test_the_gemms_tiles_go_by_the_tma_b_multicast_in_halves():
    k, loop = _ring("stdlib/gemm.tl", "matmul")
    ws = k.warp_spec
    a, b = (tma_load(k, x.index, loop.body[x.index]) for x in ws.loads)
    assert (a.buffer, a.rows, a.cols, a.tensor_map) == ("As", 128, 64, -1)
    assert [replace(x, tensor_map=-1, multicast=False) for x in (a, b)] == \
        [replace(x, tensor_map=-1, multicast=False) for x in ws.loads]
    shared, spec = with_map(k, loop, b, 2, True)
    assert shared.multicast and (spec.param, spec.box_rows, spec.box_cols) == ("B", 32, 64)  # each block half
    own, spec = with_map(k, loop, b, 2, False)
    assert not own.multicast and spec.box_rows == 64
    assert spec == with_map(k, loop, b, 1, False)[1]
    # a tile of more than 256 rows is not one box
    assert tma_load(*_resized(k, loop.body[a.index], (512, 64))) is None
    assert tma_load(*_resized(k, loop.body[a.index], (256, 64))) is not None


def test_convs_image_tile_by_the_im2col_mode_and_ws_rows_along_its_first_dimension():
    k, loop = _ring("stdlib/conv.tl", "conv2d", C=64, K=3)
    ws = k.warp_spec
    x, w = ws.loads
    got = im2col_load(k, loop, x.index, loop.body[x.index])
    assert got == replace(x, tensor_map=-1) and got.im2col is not None and got.im2col.img == "x"
    assert tma_load(k, w.index, loop.body[w.index]) == replace(w, tensor_map=-1) and w.row_axis == 0
    load, spec = with_map(k, loop, got, 1, False)
    assert load == got and spec.im2col is not None and spec == ws.tensor_maps[x.tensor_map]


def test_flash_bwds_row_columns_are_one_unswizzled_box_each():
    program = check_file(str(ROOT / "stdlib" / "attention.tl")).program
    k = schedule_grids(program, "flash_bwd", {"D": 128}, target="sm_90a")[2]
    loop = k.body[k.warp_spec.loop]
    flat = [x for x in k.warp_spec.loads if x.flat]
    assert flat and all(flat_load(k, x.index, loop.body[x.index]) == replace(x, tensor_map=-1) for x in flat)
    for x in flat:
        assert x.rows == 1 and tma_load(k, x.index, loop.body[x.index]) == replace(x, tensor_map=-1)
        _, spec = with_map(k, loop, x, 1, False)
        assert not spec.swizzle and spec.box_cols == x.cols
    # a run of more than 256 elements, or of a 16-byte multiple's remainder, is not one box
    assert flat_load(*_resized(k, loop.body[flat[0].index], (512,))) is None
    assert flat_load(*_resized(k, loop.body[flat[0].index], (30,))) is None  # 120 bytes
    assert flat_load(*_resized(k, loop.body[flat[0].index], (256,))) is not None
