"""The launch order of a grid's x (schedule/grid_order.py, Kernel.heavy_first): a causal
attention's query blocks, whose key loop grows with x, launched longest first; what it leaves
alone; how the C and `--emit ir` show it."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

import tlc
from tlc import ir
from tlc.ir.printer import print_kernel
from tlc.schedule.grid_order import growth, order_heavy_first

ROOT = Path(__file__).resolve().parents[2]
ATTENTION = ROOT / "stdlib" / "attention.tl"
BOOL, F32, I32 = tlc.dtypes.BOOL, tlc.dtypes.F32, tlc.dtypes.I32


def _kernel(name="flash_fwd", arch="sm_90a", **constants) -> ir.Kernel:
    return tlc.load(str(ATTENTION), target="cpu").kernels[name].scheduled({"D": 128, **constants}, arch)


def _var(n):
    return ir.Var(n, I32)


def _c(v):
    return ir.Const(v, I32)


def _op(op, a, b):
    return ir.BinOp(op, a, b, I32)


@pytest.fixture(autouse=True)
def one_tile_a_block(monkeypatch):
    """flash_fwd as a grid of one tile a block (schedule/warpspec.py GRID_TILE_LOADS off): made
    persistent, it walks its tiles in an order of its own (TileOrder), not the grid's."""
    from tlc.schedule import warpspec
    monkeypatch.setattr(warpspec, "GRID_TILE_LOADS", False)


@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
def test_a_causal_grid_launches_its_longest_blocks_first(arch):
    # block x runs min(cdiv(SK, BN), cdiv((x + 1) * BM + SK - S, BN)) key blocks
    assert _kernel(arch=arch, CAUSAL=True).heavy_first
    assert not _kernel(arch=arch).heavy_first  # every block as long: the hardware's order


def test_lengths_that_are_not_known_to_grow_with_x_keep_the_order():
    # flash_fwd_sparse: a block runs block_count[b, h, bx] key blocks, which need not grow
    assert not _kernel("flash_fwd_sparse", CAUSAL=True).heavy_first
    # the grid of an author's persistent walk: warp specialization walks its tiles in its own order
    walk = dataclasses.replace(_kernel(CAUSAL=True), heavy_first=False, persistent_walk=True)
    assert not order_heavy_first(walk).heavy_first


def test_a_grid_whose_blocks_meet_in_atomics_keeps_the_order():
    k = dataclasses.replace(_kernel(CAUSAL=True), heavy_first=False)
    assert order_heavy_first(k).heavy_first
    atomic = ir.Atomic("add", "LSE", (_c(0), _c(0), _c(0)), ir.Const(1.0, F32))
    assert not order_heavy_first(dataclasses.replace(k, body=k.body + (atomic,))).heavy_first


@pytest.mark.parametrize("e,want", [
    (_op("+", _op("*", _var("x"), _c(128)), _var("S")), 1),
    (_op("//", _op("-", _op("*", _op("+", _var("x"), _c(1)), _c(128)), _c(1)), _c(128)), 1),
    (_op("min", _var("N"), _op("+", _var("x"), _c(1))), 1),
    (_op("-", _var("N"), _var("x")), -1),
    (_op("*", _var("x"), _c(-2)), -1),
    (_op("-", _var("x"), _var("x")), None),  # not known: the terms move apart
    (_op("*", _var("x"), _var("N")), None),  # N's sign is not known
    (_op("//", _var("N"), _c(64)), 0),
    (ir.Select(ir.Const(False, BOOL), _var("x"), _var("N"), I32), 0),
])
def test_growth_of_a_loop_length_in_x(e, want):
    assert growth(e, "x", {}) == want


def test_growth_reads_the_kernels_scalars():
    defs = {"n": _op("+", _var("x"), _var("past")), "past": _op("-", _var("SK"), _var("S"))}
    assert growth(_var("n"), "x", defs) == 1 and growth(_var("past"), "x", defs) == 0


def test_the_c_and_emit_ir_show_it():
    from tlc.codegen import generate
    k = _kernel(CAUSAL=True)
    assert "const int bx = gridDim.x - 1 - blockIdx.x;  // launched heaviest first" in generate(k, "sm_90a").source
    assert "const int bx = blockIdx.x;" in generate(_kernel(), "sm_90a").source
    assert ("grid (bx, h, b) in ((S - 1) // 128 + 1, H, B) threads=256 smem=229376, bx launched in reverse (its loop "
            "grows with it: the longest blocks first)\n") in print_kernel(k)
