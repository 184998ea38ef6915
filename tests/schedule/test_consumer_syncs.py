"""The barriers among a warp-specialized ring's consumers (tlc/schedule/consumer_syncs.py), asked
of the loops the pass sees: std.attention's mla_decode, whose two warpgroups side by side meet
through shared memory (P's store, the rescale's exchange), and bench/E_bwd_staged.tl's dK/dV
loop, where each warpgroup writes the rows of dS its own wgmma reads; std.attention's flash_fwd
meets nowhere.  The interpreter runs the records in tests/stdlib/test_mla_ring.py and
test_carried_gemm.py."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

import tlc
from tlc import ir
from tlc.driver import check_file
from tlc.schedule import schedule_grids
from tlc.schedule.consumer_syncs import (arrivals, exchanges, exchanges_fragments, fragment_into_shared, kept_syncs,
                                         later_syncs, meets_in_shared, warpgroup_syncs)

ROOT = Path(__file__).resolve().parents[2]
ATTENTION = ROOT / "stdlib" / "attention.tl"
STAGED = ROOT / "bench" / "E_bwd_staged.tl"


@pytest.fixture(scope="module")
def mla():
    """mla_decode's first grid for sm_90a: the kernel, its ring's loop, the consumers' range and
    the buffers."""
    consts = {"DK": 192, "DV": 128, "PAGE": 64, "CAUSAL": True, "SPLITS": 1, "T": "bf16"}
    k = schedule_grids(check_file(str(ATTENTION)).program, "mla_decode", consts, target="sm_90a")[0]
    return k, k.body[k.warp_spec.loop], k.warp_spec.consumer, {b.name: b for b in k.buffers}


def _index(body, test) -> int:
    return next(i for i, s in enumerate(body) if test(s))


def test_mla_decodes_consumers_meet_through_shared_memory_flash_fwds_do_not(mla):
    k, loop, (start, stop), buffers = mla
    assert meets_in_shared(loop.body[start:stop], buffers, k.threads)
    store = loop.body[_index(loop.body, lambda s: isinstance(s, ir.Copy) and s.dst.name == "probs")]
    assert fragment_into_shared(store, buffers)  # P, for P @ V on both warpgroups
    assert not fragment_into_shared(replace(store, dst=ir.BufferRef("kv_tile")), buffers)  # a ring's staged buffer
    fwd = tlc.load(str(ATTENTION), target="cpu").kernels["flash_fwd"].scheduled({"D": 128}, "sm_90a")
    f_start, f_stop = fwd.warp_spec.consumer
    f_buffers = {b.name: b for b in fwd.buffers}
    f_body = fwd.body[fwd.warp_spec.loop].body
    assert not meets_in_shared(f_body[f_start:f_stop], f_buffers, fwd.threads)
    f_copy = f_body[_index(f_body, lambda s: isinstance(s, ir.Copy) and s.dst.name == "probs")]
    assert not fragment_into_shared(f_copy, f_buffers)  # P from fragment to fragment


def test_the_sync_before_ps_store_stays_a_barrier_that_warpgroup_1_only_arrives_at(mla):
    k, loop, (start, stop), buffers = mla
    body = list(loop.body)
    store = _index(body, lambda s: isinstance(s, ir.Copy) and s.dst.name == "probs")
    syncs = [i for i in range(start, stop) if isinstance(body[i], ir.Sync)]
    # the sync before P @ V is left out: the exchange's barrier orders P's stores before it
    kept = kept_syncs(body, start, stop, buffers, k.threads)
    assert kept == (store - 1,) == (syncs[0],) == k.warp_spec.kept_syncs
    # up to the exchange's barrier only warpgroup 0 (the rows' statistics' owner) writes
    assert arrivals(body, start, stop, kept, k, buffers) == ((store - 1, 128),)
    # every sync kept: the second orders P's stores, so it is a barrier of all the consumers
    assert arrivals(body, start, stop, tuple(syncs), k, buffers) == ((store - 1, 128),)
    # two syncs after P's store: the first orders the store before the other warpgroup's reads,
    # kept though a barrier (the second) comes before the next shared write; the second orders
    # the reads before the exchange's scratch writes
    extra = body[:store + 1] + [ir.Sync(), ir.Sync()] + body[store + 1:]
    assert kept_syncs(extra, start, stop + 2, buffers, k.threads) == (store - 1, store + 1, store + 2)
    # where all the consumers write after the kept sync (acc, on both warpgroups), no arrivals
    wide = body[:store] + [ir.Copy(ir.BufferRef("acc"), ir.BufferRef("probs"))] + body[store:]
    assert arrivals(wide, start, stop + 1, kept, k, buffers) == ()


def test_the_rescales_exchange_needs_no_barrier_of_its_own(mla):
    k, loop, (start, stop), buffers = mla
    body = list(loop.body)
    rescale = _index(body, exchanges_fragments)
    assert exchanges(body, start, stop, buffers, k.threads) == ((rescale, False),)  # the sync after it serves
    # the sync before P's store serves too: without both, a barrier must follow it
    syncs = [i for i in range(start, stop) if isinstance(body[i], ir.Sync)]
    assert syncs == [syncs[0], rescale + 1]
    without = [s for i, s in enumerate(body) if i not in syncs]
    assert exchanges([s for i, s in enumerate(body) if i != rescale + 1], start, stop - 1, buffers,
                     k.threads) == ((rescale, False),)
    assert exchanges(without, start, stop - 2, buffers, k.threads) == ((rescale - 1, True),)


def test_a_sync_that_orders_no_write_moves_down_to_the_next_shared_write(mla):
    k, loop, (start, stop), buffers = mla
    body = list(loop.body)
    moved = _index(body, lambda s: isinstance(s, ir.Sync))  # just before P's store: where the pass put it
    assert body[moved + 1].dst.name == "probs"
    # as the loop came to the pass: the sync right after the cleared scores, before the scores' gemms
    fill = _index(body, lambda s: isinstance(s, ir.Fill))
    before = body[:fill + 1] + [body[moved]] + body[fill + 1:moved] + body[moved + 1:]
    assert later_syncs(replace(loop, body=tuple(before)), start, stop, buffers, k.threads).body == loop.body
    assert later_syncs(loop, start, stop, buffers, k.threads).body == loop.body  # already there


def test_each_warpgroup_meets_alone_where_it_writes_the_rows_its_wgmma_reads(mla):
    program = check_file(str(STAGED)).program
    tiles = {"BM": 128, "THREADS": 256, "BN": 128, "BQ": 64, "KV_STAGES": 3}
    k = schedule_grids(program, "flash_bwd", {"D": 128, "T": "f16", **tiles}, target="sm_90a")[2]
    body, (start, stop) = list(k.body[k.warp_spec.loop].body), k.warp_spec.consumer
    buffers = {b.name: b for b in k.buffers}
    ds = _index(body, lambda s: isinstance(s, ir.Copy) and s.dst.name == "ds_s")
    assert isinstance(body[ds + 1], ir.Sync)
    assert warpgroup_syncs(body, start, stop, buffers, k.threads) == (ds + 1,) == k.warp_spec.warpgroup_syncs
    # mla_decode's P: both warpgroups read all of its rows (the columns of one row block split)
    mk, mloop, (mstart, mstop), mbuffers = mla
    assert warpgroup_syncs(list(mloop.body), mstart, mstop, mbuffers, mk.threads) is None
