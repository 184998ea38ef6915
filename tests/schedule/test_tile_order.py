"""A persistent warp-specialized ring's tiles (tlc/schedule/tile_order.py), asked of
std.attention's flash_fwd as the pass sees it: which loop lengths allow a walk and which take it
in pairs, the order recorded, Q's copy as the producer's load once a tile, and where in the
tile's last iteration Q's buffer is free.  The switches that ask for them stay
schedule/warpspec.py's: that setting them changes the IR is tested where they are set
(test_dynamic_tiles.py, test_warpspec_attention.py's GRID_TILE_LOADS)."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import tlc
from tlc import ir, targets
from tlc.schedule import warpspec
from tlc.schedule.tile_order import order, tile_done, tile_loads, walks_in_pairs

ROOT = Path(__file__).resolve().parents[2]
ATTENTION = ROOT / "stdlib" / "attention.tl"


def _kernel(name="flash_fwd", **constants) -> ir.Kernel:
    return tlc.load(str(ATTENTION), target="cpu").kernels[name].scheduled({"D": 128, **constants}, "sm_90a")


def _tma_load(k: ir.Kernel):
    return warpspec._Planner(k, targets.get("sm_90a")).tma_load


def test_the_order_takes_pairs_or_the_counter_only_where_lengths_grow_with_x():
    assert order(8, 2, paired=False, dynamic=True) == ir.TileOrder(8, 2)
    assert order(8, 1, paired=True, dynamic=False) == ir.TileOrder(8, 1, pairs=True)
    assert order(8, 1, paired=True, dynamic=True) == ir.TileOrder(8, 1, dynamic=True)


def test_which_loop_lengths_a_walk_takes():
    k = _kernel()
    assert walks_in_pairs(k, k.warp_spec.loop) is False  # cdiv(SK, BN) every tile
    causal = _kernel(CAUSAL=True)
    assert walks_in_pairs(causal, causal.warp_spec.loop) is True  # grows with the block's x
    sparse = _kernel("flash_fwd_sparse")  # a block mask's lengths: no fixed walk
    assert walks_in_pairs(sparse, sparse.warp_spec.loop) is None


def test_q_is_the_producers_load_once_a_tile():
    k = _kernel(CAUSAL=True)
    ws = k.warp_spec
    loads, paired = tile_loads(k, ws.consumer_only, ws.loop, _tma_load(k))
    (load, spec), = loads
    plain = _kernel()  # every tile as long: walked in a fixed order
    assert paired is True and tile_loads(plain, plain.warp_spec.consumer_only, plain.warp_spec.loop,
                                         _tma_load(plain))[1] is False
    assert (load.index, load.buffer, load.rows, load.cols) == (ws.consumer_only[1], "q_tile", 128, 128)
    assert (spec.param, spec.box_rows, spec.box_cols, spec.store) == ("Q", 128, 64, False)
    # a copy the TMA cannot make, or no copy at all (a device_assert alone), leaves the tile loads out
    assert tile_loads(k, ws.consumer_only, ws.loop, lambda j, c: None) is None
    assert tile_loads(k, ws.consumer_only[:1], ws.loop, _tma_load(k)) is None


def test_q_is_free_once_the_last_iterations_scores_are_done():
    from tlc.schedule.warpspec import specialize_warps
    k = _kernel()  # as the grid of an author's persistent walk (test_warpspec_attention.py's _walk)
    k = specialize_warps(dataclasses.replace(k, warp_spec=None, persistent_walk=True), targets.get("sm_90a"))
    ws = k.warp_spec
    body, (start, stop), after = list(k.body[ws.loop].body), ws.consumer, list(k.body[ws.loop + 1:])
    assert tile_done(ws.tile_loads, body, start, stop, ws.deferred, after) == ws.deferred.after == ws.tile_done
    # a statement after the loop that reads Q's tile keeps it to the loop's end
    reads_q = ir.Copy(ir.BufferRef("q_tile"), after[-1].dst)
    assert tile_done(ws.tile_loads, body, start, stop, ws.deferred, after + [reads_q]) is None
    # so does a second reader in the loop
    assert tile_done(ws.tile_loads, body, start, stop, dataclasses.replace(ws.deferred, after=ws.deferred.gemm),
                     after) is None
