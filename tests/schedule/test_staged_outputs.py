"""The outputs a warp-specialized ring's kernel writes through the TMA from shared memory
(tlc/schedule/staged_outputs.py), asked of the kernels the pass sees: std.gemm's matmul (its C tile
staged beside the ring), std.attention's flash_fwd (O staged in Q's tile, dead after the ring, or,
walked persistently, in K's stage of the tile's last iteration) and bench/attention_bwd_fused.tl's
dQ adds (the TMA's bulk reduction, one or two buffers).  Each record comes back with its map and
the map index -1: what the planner records is the same with the index it registered."""
from __future__ import annotations

import dataclasses
from dataclasses import replace
from pathlib import Path

import tlc
from tlc import ir, targets
from tlc.schedule.staged_outputs import bulk_reduces, dead_after, staged_store, store_stage, touches_shared
from tlc.schedule.warpspec import specialize_warps

ROOT = Path(__file__).resolve().parents[2]
SMEM = targets.get("sm_90a").smem_per_block


def _parts(k: ir.Kernel):
    ws = k.warp_spec
    return ws, list(k.body[ws.loop + 1:]), {b.name: b for b in k.buffers}


def _fwd(**constants) -> ir.Kernel:
    path = ROOT / "stdlib" / "attention.tl"
    return tlc.load(str(path), target="cpu").kernels["flash_fwd"].scheduled({"D": 128, **constants}, "sm_90a")


def test_the_gemms_c_tile_is_staged_beside_the_ring():
    k = tlc.load(str(ROOT / "stdlib" / "gemm.tl"), target="cpu").kernels["matmul"].scheduled({}, "sm_90a")
    ws, after, _ = _parts(k)
    store, spec = staged_store(k, SMEM, after, ws.loop + 1, ws.ring_end)
    assert store == replace(ws.store, tensor_map=-1) and spec == ws.tensor_maps[ws.store.tensor_map]
    assert store.offset == -(-ws.ring_end // 1024) * 1024 and (spec.param, spec.store) == ("C", True)
    # no room beside the ring, and no other place given: no staged store
    assert staged_store(k, store.offset + store.nbytes - 1, after, ws.loop + 1, ws.ring_end) is None


def test_flash_fwds_o_is_staged_in_qs_tile_dead_after_the_ring():
    k = _fwd()
    ws, after, buffers = _parts(k)
    q = buffers["q_tile"]
    assert dead_after(k, after) == (q.smem_offset, q.layout.bytes)
    store, _ = staged_store(k, SMEM, after, ws.loop + 1, ws.ring_end, dead_after(k, after))
    assert store.offset == q.smem_offset == ws.store.offset
    assert staged_store(k, SMEM, after, ws.loop + 1, ws.ring_end, (q.smem_offset, store.nbytes - 1)) is None  # too small
    # a statement after the ring that reads a shared buffer keeps every one live: no dead buffer
    reads_q = ir.Copy(ir.BufferRef("q_tile"), after[-1].dst)
    assert touches_shared([reads_q], buffers, k.threads) and dead_after(k, after + [reads_q]) is None
    assert not touches_shared(after, buffers, k.threads)


def test_a_persistent_walks_o_is_staged_in_ks_stage_of_the_tiles_last_iteration():
    k = _fwd()
    k = specialize_warps(dataclasses.replace(k, warp_spec=None, persistent_walk=True), targets.get("sm_90a"))
    ws, after, buffers = _parts(k)
    kt = buffers["k_tile"]
    stage = store_stage(k, ws, list(k.body[ws.loop].body), after)
    assert stage == (0, kt.smem_offset, kt.layout.bytes // kt.layout.stages, kt.dtype) and ws.loads[0].buffer == "k_tile"
    assert ws.store.in_stage == 0 and ws.store.offset == kt.smem_offset
    # K read past the tile loads' last reader (P @ V reading K): its stage is not free early
    body = list(k.body[ws.loop].body)
    body[ws.deferred.gemm] = replace(body[ws.deferred.gemm], b="k_tile")
    assert store_stage(k, ws, body, after) is None


def test_dqs_adds_go_by_the_bulk_reduction_in_two_buffers_where_they_fit():
    path = ROOT / "bench" / "attention_bwd_fused.tl"
    k = tlc.load(str(path), target="cpu").kernels["flash_bwd_fused"].scheduled_grids({"D": 128, "KV_STAGES": 2},
                                                                                       "sm_90a")[1]
    ws = k.warp_spec
    start, stop = ws.consumer
    body = list(k.body[ws.loop].body)
    found = bulk_reduces(k, SMEM, body, start, stop, ws.reduces[0].offset)  # (1024-aligned: staged there)
    assert [(r, s) for r, s in found] == [(replace(x, tensor_map=-1), ws.tensor_maps[x.tensor_map]) for x in ws.reduces]
    (reduce, spec), = found
    assert reduce.buffers == 2 and (spec.param, spec.box_rows, spec.box_cols) == ("dq_acc", 64, 32)
    # where a second buffer does not fit, one
    (one, _), = bulk_reduces(k, reduce.offset + reduce.nbytes - 1, body, start, stop, reduce.offset)
    assert one.buffers == 1 and one.nbytes == reduce.nbytes // 2
