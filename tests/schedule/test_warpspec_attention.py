"""The warp-specialization pass on an attention loop (std.attention's flash_fwd): a copy into
shared memory before the ring made by the consumers alone, reductions that complete in
registers, register-A gemms, and the loop's last gemm deferred one iteration (FlashAttention 3's
overlap of P @ V with the next softmax).  What it decides, what it refuses, how the verifier and
`--emit ir` see it; the interpreter runs the record in tests/stdlib/test_attention.py."""
from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

import tlc
from tlc import ir
from tlc.ir.printer import print_kernel
from tlc.schedule import warpspec as warpspec_pass

ROOT = Path(__file__).resolve().parents[2]
ATTENTION = ROOT / "stdlib" / "attention.tl"
sys.path.insert(0, str(ROOT / "tests" / "stdlib"))
from attention_kit import p_in_shared  # noqa: E402


def _kernel(path=ATTENTION, name="flash_fwd", **constants) -> ir.Kernel:
    return tlc.load(str(path), target="cpu").kernels[name].scheduled({"D": 128, **constants}, "sm_90a")


def _walk(path=ATTENTION, name="flash_fwd", **constants) -> ir.Kernel:
    """The kernel as the grid of an author's persistent walk reaches warp specialization
    (Kernel.persistent_walk, schedule/persistent_grid.py): the pass run again on it."""
    from tlc import targets
    from tlc.schedule.warpspec import specialize_warps
    k = _kernel(path, name, **constants)
    return specialize_warps(dataclasses.replace(k, warp_spec=None, persistent_walk=True), targets.get("sm_90a"))


def _names(kernel, indices, body=None):
    body = kernel.body if body is None else body
    return [type(body[i]).__name__ for i in indices]


def test_std_flash_fwd_keeps_one_tile_a_block_and_the_consumers_copy_q(monkeypatch):
    # a grid: the persistent walk with the producer's Q ran slower on the H200 (session 24 round 2)
    monkeypatch.setattr(warpspec_pass, "GRID_TILE_LOADS", False)  # one tile a block (the default; session 28 timed the walk slower)
    k = _kernel()
    ws = k.warp_spec
    assert ws.tile_order is None and ws.tile_loads == () and _names(k, ws.late_copies) == ["Copy"]
    assert ws.ring_end == ws.barriers + 16 * ws.stages


def test_the_q_copy_before_the_ring_is_the_producers_once_a_tile_of_a_persistent_walk():
    k = _walk()
    ws = k.warp_spec
    assert ws is not None and [x.buffer for x in ws.loads] == ["k_tile", "v_tile"]
    assert _names(k, ws.consumer_only) == ["Assert", "Copy"]  # the device_assert and copy(Q, q_tile)
    # every tile runs cdiv(SK, BN) iterations: one block an SM walks them, Q through the TMA
    assert ws.tile_order is not None and ws.tile_order.cluster == 1 and ws.late_copies == ()
    assert [(x.index, x.buffer, x.rows, x.cols) for x in ws.tile_loads] == [(ws.consumer_only[1], "q_tile", 128, 128)]
    assert ws.tensor_maps[ws.tile_loads[0].tensor_map].param == "Q"
    assert ws.ring_end == ws.barriers + 16 * ws.stages + 16  # the tile loads' barrier pair
    assert ws.deferred is not None and ws.deferred.pingpong
    # S = Q @ K.T alone reads Q: its wait in the last iteration frees it for the next tile's
    assert ws.tile_done == ws.deferred.after and k.body[ws.loop].body[ws.tile_done].a == "q_tile"


def test_a_causal_kernel_walks_its_tiles_in_pairs_from_both_ends(monkeypatch):
    # its tiles' lengths grow with bx: a walk in order would leave some blocks the longest ones
    monkeypatch.setattr(warpspec_pass, "DYNAMIC_TILES", False)  # pairs (the dynamic order: tests/schedule/test_dynamic_tiles.py)
    k = _walk(CAUSAL=True)
    ws = k.warp_spec
    assert ws.tile_order.pairs and [x.buffer for x in ws.tile_loads] == ["q_tile"] and ws.late_copies == ()
    assert not _walk().warp_spec.tile_order.pairs


def test_a_block_masks_lengths_keep_one_tile_a_block_and_the_consumers_copy_q():
    # flash_fwd_sparse's loop runs block_count[b, h, bx] times: a fixed walk could not balance it
    k = _walk(name="flash_fwd_sparse")
    ws = k.warp_spec
    assert ws.tile_order is None and ws.tile_loads == () and _names(k, ws.late_copies) == ["Copy"]
    assert ws.ring_end == ws.barriers + 16 * ws.stages


def test_the_pairs_walk_visits_every_tile_once_and_balances_a_causal_grid(monkeypatch):
    from tlc.interp.ring import block_walk
    monkeypatch.setattr(warpspec_pass, "DYNAMIC_TILES", False)  # pairs (the dynamic order: tests/schedule/test_dynamic_tiles.py)
    ws = _walk(CAUSAL=True).warp_spec
    extents, blocks = (32, 3, 2), 5
    walks = [[t for t, *_ in block_walk(b, blocks, ws, extents)] for b in range(blocks)]
    tiles = [t for w in walks for t in w]
    assert sorted(tiles) == sorted((x, y, z) for x in range(32) for y in range(3) for z in range(2))
    pairs = [walks[0][i:i + 2] for i in range(0, len(walks[0]), 2)]
    assert all(a[1:] == b[1:] and a[0] + b[0] == 31 for a, b in pairs)  # each pair's work: 33 key blocks


def test_the_last_gemm_is_deferred_past_the_first_and_waited_for_before_its_operand_is_written():
    k = _kernel()
    ws, body = k.warp_spec, k.body[k.warp_spec.loop].body
    d = ws.deferred
    assert (body[d.after].c, body[d.gemm].c, body[d.wait].dst.name) == ("scores", "acc", "probs")
    assert d.gemm == ws.consumer[1] - 1 and ws.release_lag == 1
    # acc *= rescale, after the wait, runs right before P @ V's issue (the next iteration's)
    assert d.before_issue == (d.gemm - 1,) and isinstance(body[d.gemm - 1], ir.Parallel)


def test_a_shared_a_operand_the_consumers_write_is_waited_for_before_it_is_written(tmp_path):
    # P staged in shared memory by the consumers: the next iteration's copy(scores, probs) must
    # not overwrite it while the deferred P @ V of the iteration before still reads it
    path = tmp_path / "shared_probs.tl"
    path.write_text(p_in_shared(SOURCE))
    k = _kernel(path)
    d, body = k.warp_spec.deferred, k.body[k.warp_spec.loop].body
    assert d is not None and body[d.gemm].a == "probs"
    assert isinstance(body[d.wait], ir.Copy) and body[d.wait].dst.name == "probs"


@pytest.mark.parametrize("causal", [False, True])
def test_three_warpgroups_with_p_in_shared_memory_against_numpy(tmp_path, causal):
    # FlashAttention 3's tile at head dim 64 (192 x 192, P through shared memory, three consumer
    # warpgroups taking turns; session 28 timed it as sp192: 0.821x cuDNN, a tie with std): two stages with V on
    # its own barriers, each warpgroup's P rows meeting at its own barrier before its P @ V
    import numpy as np

    from tlc.interp import run_kernel
    from test_attention import check
    path = tmp_path / "shared_probs.tl"
    path.write_text(p_in_shared(SOURCE))
    k = _kernel(path, D=64, BM=192, THREADS=384, BN=192, CAUSAL=causal)
    ws = k.warp_spec
    assert ws.stages == 2 and [ws.loads[j].buffer for j in ws.late_loads] == ["v_tile"] and ws.deferred.pingpong
    assert [k.body[ws.loop].body[i].__class__.__name__ for i in ws.warpgroup_syncs] == ["Sync"]

    def run(q, kk, v, o, lse, scale):
        run_kernel(k, {"Q": q, "K": kk, "V": v, "O": o, "LSE": lse, "scale": np.float32(scale)})
    check(run, "f16", 1, 2, 1, 500, 450, 64, causal, 3)


def test_a_scaling_that_reads_the_loops_scalars_stays_in_place(tmp_path):
    # in the next iteration kb would be the next block's: the statement runs where it stands
    path = tmp_path / "reads_kb.tl"
    old = "                acc[i, j] *= rescale[i]\n"
    assert old in SOURCE
    path.write_text(SOURCE.replace(old, "                acc[i, j] *= rescale[i] if kb >= 0 else 1.0\n"))
    d = _kernel(path).warp_spec.deferred
    assert d is not None and d.before_issue == ()


def test_one_tile_a_block_stages_the_output_where_q_lies(monkeypatch):
    # the ring leaves no room for a staging buffer; Q's tile, read by S = Q @ K.T alone, is dead
    # after the loop: O goes there and out through the TMA (the LSE's copy stays as it is)
    monkeypatch.setattr(warpspec_pass, "GRID_TILE_LOADS", False)  # one tile a block (the default; session 28 timed the walk slower)
    k = _kernel()
    st = k.warp_spec.store
    assert st is not None and (st.offset, st.nbytes, st.rows) == (k.buffer("q_tile").smem_offset, 128 * 128 * 2, 64)
    assert k.body[st.index].src.name == "acc" and k.warp_spec.tensor_maps[st.tensor_map].param == "O"
    assert ("    epilogue: acc staged @196608 (32768 bytes), 64 rows per warpgroup stored through #2\n"
            in print_kernel(k))
    # a persistent walk: its tile loads' Q is the next tile's, the ring leaves no room beside it;
    # the output goes into K's stage of the tile's last iteration (FlashAttention 3 puts O over V)
    walk = _walk()
    st, ws = walk.warp_spec.store, walk.warp_spec
    assert st is not None and st.in_stage == 0 and ws.loads[0].buffer == "k_tile" and ws.tile_done is not None
    assert (st.offset, st.nbytes, st.rows) == (walk.buffer("k_tile").smem_offset, 128 * 128 * 2, 64)
    assert ("    epilogue: acc staged in k_tile's stage of the tile's last iteration (32768 bytes) once every consumer "
            "warp's last statement 4 is done, 64 rows per warpgroup stored through #3; the stage released once the "
            "store has read it (a tile of no iteration: register stores)\n") in print_kernel(walk)


def test_an_epilogue_that_reads_shared_memory_keeps_its_stores(tmp_path):
    path = tmp_path / "reads_q.tl"
    old = "        copy(acc, O[b, h, bx * BM, 0])\n"
    assert old in SOURCE
    path.write_text(SOURCE.replace(old, "        for i, j in parallel(BM, D):\n            acc[i, j] += cast(q_tile[i, j], f32)\n" + old))
    ws = _kernel(path).warp_spec
    assert ws is not None and ws.deferred is not None and ws.store is None


def test_two_stages_keep_the_deferred_gemm_with_v_on_barriers_of_its_own():
    # FlashAttention 3's K and V pipelines: V, which the deferred P @ V alone reads, has its own
    # full and empty barriers, so K's stage is free once S = Q @ K.T is done and two stages keep
    # the deferral (one barrier pair a stage held both for it: the ring needed three)
    k = _kernel(STAGES=2)
    ws = k.warp_spec
    assert ws.stages == 2 and ws.deferred is not None and ws.deferred.pingpong and ws.release_lag == 1
    assert [ws.loads[j].buffer for j in ws.late_loads] == ["v_tile"]
    assert ws.late_barriers == ws.barriers + 16 * ws.stages and ws.ring_end == ws.late_barriers + 16 * ws.stages
    assert _kernel().warp_spec.late_loads == ()  # three stages: as before


def test_two_stages_without_loads_the_deferred_gemm_alone_reads_keep_the_gemms_in_place(tmp_path):
    # P @ V reading K too: no load is the deferred gemm's alone, so two stages cannot defer it
    path = tmp_path / "pv_reads_k.tl"
    path.write_text(SOURCE.replace("            gemm(probs, v_tile, acc)\n", "            gemm(probs, k_tile, acc)\n"))
    ws = _kernel(path, STAGES=2).warp_spec
    assert ws is not None and ws.deferred is None and ws.late_loads == () and ws.release_lag == 0
    assert _kernel(path).warp_spec.deferred is not None  # on three stages it still defers


# the module up to flash_fwd's end: the edits below must meet flash_fwd's lines only
SOURCE = ATTENTION.read_text().split("\n\n@kernel\ndef flash_decode(")[0]


@pytest.mark.parametrize("edit,why", [
    # before the first gemm, a statement touches what the last one writes: the deferred gemm
    # would run after it, not before
    (("            gemm(q_tile, k_tile, scores, trans_b=True, clear_accum=True)\n",
      "            for i, j in parallel(BM, D):\n                acc[i, j] *= 0.5\n"
      "            gemm(q_tile, k_tile, scores, trans_b=True, clear_accum=True)\n"), "touches acc"),
    # nothing between the two gemms: no work to run under the deferred one
    (("            gemm(probs, v_tile, acc)\n", "            gemm(probs, v_tile, acc)\n            clear(scores)\n"), "not last"),
])
def test_a_loop_the_deferral_would_reorder_keeps_its_gemms_in_place(tmp_path, edit, why):
    path = tmp_path / "edited.tl"
    assert edit[0] in SOURCE
    path.write_text(SOURCE.replace(edit[0], edit[1]))
    k = _kernel(path)
    assert k.warp_spec is not None and k.warp_spec.deferred is None, why


def test_a_reduction_through_shared_memory_keeps_the_cp_async_ring(tmp_path):
    # a column max (over the rows, across warps) meets in a shared scratch behind a barrier
    path = tmp_path / "colmax.tl"
    path.write_text(SOURCE.replace("        tile_sum = fragment(f32[BM])\n",
                                   "        tile_sum = fragment(f32[BM])\n        col_max = fragment(f32[BN])\n")
                    .replace("            reduce_sum(scores, tile_sum, dim=1)\n",
                             "            reduce_max(scores, col_max, dim=0)\n            for i, j in parallel(BM, BN):\n"
                             "                scores[i, j] = min(scores[i, j], col_max[j])\n"
                             "            reduce_sum(scores, tile_sum, dim=1)\n"))
    assert _kernel(path).warp_spec is None


@pytest.mark.parametrize("change,message", [
    (lambda ws: {"consumer_only": (ws.loop,)},
     "the consumers' statements before the loop [{loop}] are not before it, or the kernel is persistent"),
    (lambda ws: {"deferred": dataclasses.replace(ws.deferred, gemm=ws.deferred.after)},
     "the deferred gemm {after} (after {after}, waited for before {wait}) is not the consumers' last gemm"),
    (lambda ws: {"deferred": ws.deferred, "release_lag": 0},
     "the deferred gemm {gemm} (after {after}, waited for before {wait}) is not the consumers' last gemm"),
    # persistent without tile loads: the deferred gemm's last stage would never be released
    (lambda ws: {"tile_loads": (), "consumer_only": ws.consumer_only[:1]},
     "the deferred gemm {gemm} (after {after}, waited for before {wait}) is not the consumers' last gemm"),
    # the consumers' copy of Q in a persistent kernel, not the producer's
    (lambda ws: {"tile_loads": ()},
     "the consumers' statements before the loop [{assert_}, {copy}] are not before it, or the kernel is persistent"),
    (lambda ws: {"tile_loads": (dataclasses.replace(ws.tile_loads[0], index=ws.consumer_only[0]),),
                 "consumer_only": ws.consumer_only[:1]},
     "the tile loads [{assert_}] are not copies among the consumers' statements of a persistent kernel"),
    (lambda ws: {"tile_order": None, "deferred": None, "tile_done": None},
     "the tile loads [{copy}] are not copies among the consumers' statements of a persistent kernel"),
    # Q is read by S = Q @ K.T alone: not by the deferred P @ V
    (lambda ws: {"tile_done": ws.deferred.gemm}, "the tile loads' last reader {gemm} is not the deferred gemm's first gemm"),
    (lambda ws: {"deferred": dataclasses.replace(ws.deferred, before_issue=(ws.deferred.after,))},
     "the statements [{after}] run before the deferred gemm's issue are not parallel loops after its wait"),
    # V on barriers of its own: one tile a block only
    (lambda ws: {"late_loads": (1,)}, "the late loads [1] are not some of the TMA loads of a deferred gemm's ring, one tile a block"),
    # the output staged in V's stage: P @ V may still read it when the warpgroups write there
    (lambda ws: {"store": dataclasses.replace(ws.store, in_stage=1)},
     "the staged store's stage buffer (load 1) is not a TMA load of a persistent ring read by the tile loads' last "
     "reader alone, at its offset and as large as the tile"),
])
def test_the_verifier_checks_the_consumer_prologue_and_the_deferral(change, message):
    k = _walk()
    ws = k.warp_spec
    bad = dataclasses.replace(k, warp_spec=dataclasses.replace(ws, **change(ws)))
    with pytest.raises(ir.IRVerifyError) as info:
        ir.verify(bad)
    d = ws.deferred
    assert str(info.value) == "kernel 'flash_fwd': " + message.format(
        loop=ws.loop, gemm=d.gemm, after=d.after, wait=d.wait, assert_=ws.consumer_only[0], copy=ws.consumer_only[1])


def test_emit_ir_says_who_runs_the_prologue_and_where_the_deferred_gemm_runs():
    assert "  # consumers only (threads 0..255): the producer's threads skip it\n  device_assert " in print_kernel(_kernel())
    text = print_kernel(_kernel(name="flash_fwd_sparse", STAGES=3))
    assert ("  # consumers only (threads 0..255), after the ring's setup while the producer's first copies load; "
            "they meet at bar.sync 5 after it\n  copy Q[") in text
    assert ("deferred: the loop's last gemm (statement 14) of iteration it - 1 is issued right after statement 4's "
            "gemm of iteration it, on stage (it - 1) % 3, and waited for before statement 12; the last iteration's "
            "after the loop; statement 13 (its accumulator's scaling) runs right before it is issued; the 2 consumer "
            "warpgroups take turns to issue both gemms, in warpgroup order (named barriers 3..4)\n") in text
    # FlashAttention 3's three at head dim 64, and one warpgroup, which takes no turns
    assert ("; the 3 consumer warpgroups take turns to issue both gemms, in warpgroup order (named barriers 9..11)\n"
            in print_kernel(_kernel(D=64, BM=192, THREADS=384, BN=96)))
    assert "take turns" not in print_kernel(_kernel(BM=64, THREADS=128))


def test_emit_ir_says_which_loads_have_barriers_of_their_own():
    text = print_kernel(_kernel(STAGES=2))
    assert "run the loop's other statements on stage it % 2, release empty[it % 2] once statement 4's gemm is done\n" in text
    assert ("    late loads: V -> v_tile on barriers of their own, full_late[2] @163872 and empty_late[2] @163888: the "
            "producer waits empty_late[it % 2] before them, the consumers wait full_late[(it - 1) % 2] before the "
            "deferred gemm and release empty_late[(it - 1) % 2] once it is done\n") in text
    assert "late loads" not in print_kernel(_kernel())


def test_emit_ir_says_the_producer_copies_q_once_a_tile():
    text = print_kernel(_walk())
    assert "  # producer: once a tile, through map #0 (tile loads)\n  copy Q[" in text
    assert "  # left out: the tile loads' barriers order the producer's copy\n  sync\n" in text
    assert ("    tile loads: the producer copies Q -> q_tile once a tile through map #0 after the tile's first stage, "
            "completing tile_full @229424; the consumers wait on it before the loop and arrive on tile_empty @229432 "
            "(one per consumer warp) in its last iteration once statement 4's gemm (their only reader) is done, which "
            "the producer waits on before the next tile's\n") in text
    assert "    tensor maps: #0 Q box 128x64, #1 K box 128x64, #2 V box 128x64, #3 O box 64x64 (store)\n" in text


@pytest.mark.parametrize("causal", [False, True])
def test_grid_tile_loads_makes_the_grid_persistent_as_a_walks(monkeypatch, causal):
    # schedule/warpspec.py GRID_TILE_LOADS (off: session 28 timed it slower at D=128 full and GQA):
    # std's grid then runs as the grid of an author's persistent walk does
    from tlc.schedule import warpspec
    monkeypatch.setattr(warpspec, "GRID_TILE_LOADS", False)
    monkeypatch.setattr(warpspec, "DYNAMIC_TILES", False)
    grid = _kernel(CAUSAL=causal)
    monkeypatch.setattr(warpspec, "GRID_TILE_LOADS", True)
    k = _kernel(CAUSAL=causal)
    ws, walk = k.warp_spec, _walk(CAUSAL=causal).warp_spec
    assert grid.warp_spec.tile_order is None and not k.persistent_walk
    assert ws == walk and ws.tile_order.pairs == causal and [x.buffer for x in ws.tile_loads] == ["q_tile"]
    assert ws.store.in_stage == 0 and not k.heavy_first
    # two stages (config.json's D = 256 rule: V on barriers of its own, which a persistent ring
    # lacks) and a block mask's lengths keep one tile a block
    assert _kernel(STAGES=2).warp_spec.tile_order is None
    assert _kernel(name="flash_fwd_sparse").warp_spec.tile_order is None


@pytest.mark.parametrize("causal", [False, True])
def test_the_persistent_constant_makes_the_grid_persistent_without_the_switch(monkeypatch, causal):
    # std.attention's flash_fwd PERSISTENT (grid(persistent_tiles=...)): the grid as
    # GRID_TILE_LOADS makes it, the switch off, so that a config.json rule on SK can take it
    from tlc.schedule import warpspec
    monkeypatch.setattr(warpspec, "GRID_TILE_LOADS", False)
    k = _kernel(CAUSAL=causal, PERSISTENT=True)
    assert k.persistent_tiles and _kernel(CAUSAL=causal).warp_spec.tile_order is None
    monkeypatch.setattr(warpspec, "GRID_TILE_LOADS", True)
    assert k.warp_spec == _kernel(CAUSAL=causal).warp_spec and [x.buffer for x in k.warp_spec.tile_loads] == ["q_tile"]
    # where the ring keeps no deferred gemm it asks for nothing (two stages: V on barriers of its own)
    monkeypatch.setattr(warpspec, "GRID_TILE_LOADS", False)
    assert _kernel(STAGES=2, PERSISTENT=True).warp_spec.tile_order is None
    assert tlc.load(str(ATTENTION), target="cpu").kernels["flash_fwd"].scheduled(
        {"D": 128, "PERSISTENT": True}, "sm_80").warp_spec is None
