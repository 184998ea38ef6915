"""The warp-specialization pass on an attention loop (std.attention's flash_fwd): a copy into
shared memory before the ring made by the consumers alone, reductions that complete in
registers, register-A gemms, and the loop's last gemm deferred one iteration (FlashAttention 3's
overlap of P @ V with the next softmax).  What it decides, what it refuses, how the verifier and
`--emit ir` see it; the interpreter runs the record in tests/stdlib/test_attention.py."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

import tlc
from tlc import ir
from tlc.ir.printer import print_kernel

ROOT = Path(__file__).resolve().parents[2]
ATTENTION = ROOT / "stdlib" / "attention.tl"


def _kernel(path=ATTENTION, name="flash_fwd", **constants) -> ir.Kernel:
    return tlc.load(str(path), target="cpu").kernels[name].scheduled({"D": 128, **constants}, "sm_90a")


def _names(kernel, indices, body=None):
    body = kernel.body if body is None else body
    return [type(body[i]).__name__ for i in indices]


def test_the_q_copy_before_the_ring_is_the_consumers_and_the_kernel_is_not_persistent():
    k = _kernel()
    ws = k.warp_spec
    assert ws is not None and [x.buffer for x in ws.loads] == ["k_tile", "v_tile"]
    assert _names(k, ws.consumer_only) == ["Assert", "Copy"]  # the device_assert and copy(Q, q_tile)
    assert ws.tile_order is None  # a tile loop would have the producer's threads skip the copy each tile


def test_the_last_gemm_is_deferred_past_the_first_and_waited_for_before_its_operand_is_written():
    k = _kernel()
    ws, body = k.warp_spec, k.body[k.warp_spec.loop].body
    d = ws.deferred
    assert (body[d.after].c, body[d.gemm].c, body[d.wait].dst.name) == ("scores", "acc", "probs")
    assert d.gemm == ws.consumer[1] - 1 and ws.release_lag == 1


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
])
def test_the_verifier_checks_the_consumer_prologue_and_the_deferral(change, message):
    k = _kernel()
    ws = k.warp_spec
    bad = dataclasses.replace(k, warp_spec=dataclasses.replace(ws, **change(ws)))
    with pytest.raises(ir.IRVerifyError) as info:
        ir.verify(bad)
    d = ws.deferred
    assert str(info.value) == "kernel 'flash_fwd': " + message.format(loop=ws.loop, gemm=d.gemm, after=d.after, wait=d.wait)


def test_emit_ir_says_who_runs_the_prologue_and_where_the_deferred_gemm_runs():
    text = print_kernel(_kernel(STAGES=3))
    assert "  # consumers only (threads 0..255): the producer's threads skip it\n  device_assert " in text
    assert ("  # consumers only (threads 0..255), after the ring's setup while the producer's first copies load; "
            "they meet at bar.sync 5 after it\n  copy Q[") in text
    assert ("deferred: the loop's last gemm (statement 14) of iteration it - 1 is issued right after statement 4's "
            "gemm of iteration it, on stage (it - 1) % 3, and waited for before statement 12; the last iteration's "
            "after the loop") in text
