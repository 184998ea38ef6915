"""Which wgmma gemms of a warp-specialized ring's consumers run under other work
(tlc/schedule/gemm_overlap.py), asked of std.attention's loops as the pass sees them: flash_fwd's
P @ V deferred under the next softmax, V's loads on barriers of their own at two stages, the
waits a statement needs, and flash_bwd's products carried into the next iteration where dS is
in shared memory (bench/E_bwd_staged.tl) and not where it is in registers."""
from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import tlc
from tlc import ir
from tlc.driver import check_file
from tlc.schedule import schedule_grids
from tlc.schedule.gemm_overlap import (buffers_read, buffers_touched, buffers_written, carried_gemms, deferred_gemm,
                                       gemm_waits, late_loads, wgmma_ready, wgmma_rs_ready)

ROOT = Path(__file__).resolve().parents[2]
ATTENTION = ROOT / "stdlib" / "attention.tl"
STAGED = ROOT / "bench" / "E_bwd_staged.tl"
sys.path.insert(0, str(ROOT / "tests" / "schedule"))
from test_carried_gemm import SM90_TILES  # noqa: E402


def _fwd(**constants):
    """std.attention's flash_fwd for sm_90a at D = 128: its ring's loop, the consumers' range,
    the buffers and the record."""
    k = tlc.load(str(ATTENTION), target="cpu").kernels["flash_fwd"].scheduled({"D": 128, **constants}, "sm_90a")
    ws = k.warp_spec
    return k.body[ws.loop], ws.consumer, {b.name: b for b in k.buffers}, k.threads, ws


def _gemm(body, c: str) -> int:
    return next(i for i, s in enumerate(body) if isinstance(s, ir.Gemm) and s.c == c)


def test_a_gemms_buffers_read_and_written():
    loop, _, _, _, _ = _fwd()
    pv = loop.body[_gemm(loop.body, "acc")]
    assert buffers_read(pv) == {"probs", "v_tile", "acc"} and buffers_written(pv) == {"acc"}
    assert buffers_touched([pv]) == {"probs", "v_tile", "acc"}
    # a loop's statements: what its body holds (the score mask's If stores into scores)
    mask = next(s for s in loop.body if isinstance(s, ir.If))
    assert "scores" in buffers_written(mask)


def test_which_gemms_run_on_wgmma():
    loop, _, buffers, threads, _ = _fwd()
    qk, pv = loop.body[_gemm(loop.body, "scores")], loop.body[_gemm(loop.body, "acc")]
    assert wgmma_ready(qk, buffers, threads) and not wgmma_rs_ready(qk, buffers, threads)
    assert wgmma_rs_ready(pv, buffers, threads) and not wgmma_ready(pv, buffers, threads)  # P in registers


def test_p_at_v_is_deferred_under_the_softmax_its_rescale_right_before_its_issue():
    loop, (start, stop), buffers, threads, ws = _fwd()
    d = deferred_gemm(list(loop.body), start, stop, buffers, threads, loop.var)
    assert d == ws.deferred
    assert (d.gemm, d.after) == (_gemm(loop.body, "acc"), _gemm(loop.body, "scores")) and d.pingpong
    # the wait is P's copy into registers (the first statement to write the deferred gemm's A)
    assert isinstance(loop.body[d.wait], ir.Copy) and loop.body[d.wait].dst.name == "probs"
    # acc *= rescale: reads only fragments, writes acc alone
    assert [buffers_written(loop.body[i]) for i in d.before_issue] == [{"acc"}]
    # ... where it reads no scalar the loop sets: not if the loop's variable were its own
    assert deferred_gemm(list(loop.body), start, stop, buffers, threads, "i").before_issue == ()


def test_no_deferred_gemm_where_the_loop_does_not_end_in_one_or_the_first_gemm_reads_its_result():
    loop, (start, stop), buffers, threads, _ = _fwd()
    body = list(loop.body)
    assert deferred_gemm(body, start, stop - 1, buffers, threads, loop.var) is None  # ends in acc *= ...
    pv = _gemm(body, "acc")
    qk = _gemm(body, "scores")
    reads_acc = body[:qk] + [replace(body[qk], a="acc")] + body[qk + 1:]
    assert deferred_gemm(reads_acc, start, stop, buffers, threads, loop.var) is None
    assert deferred_gemm(body, pv, stop, buffers, threads, loop.var) is None  # no gemm ahead of it


def test_at_two_stages_v_alone_waits_for_the_deferred_gemm():
    loop, (start, stop), buffers, threads, ws = _fwd(STAGES=2)
    d = deferred_gemm(list(loop.body), start, stop, buffers, threads, loop.var)
    assert [ws.loads[j].buffer for j in late_loads(ws.loads, list(loop.body), start, stop, d)] == ["v_tile"]
    # a load read by both gemms (P @ V reading K) leaves no stage free early
    both = list(loop.body)
    both[d.gemm] = replace(both[d.gemm], b="k_tile")
    assert late_loads(ws.loads, both, start, stop, d) == ()


def test_waits_count_the_oldest_gemms_a_statement_needs():
    loop, _, buffers, threads, _ = _fwd()
    body = list(loop.body)
    qk, pv = body[_gemm(body, "scores")], body[_gemm(body, "acc")]
    softmax = next(s for s in body if isinstance(s, ir.Reduce))  # reads the scores
    assert gemm_waits([qk], [softmax], None, buffers, threads) == 1
    assert gemm_waits([qk, pv], [softmax], None, buffers, threads) == 1  # P @ V may stay in flight
    assert gemm_waits([pv, qk], [softmax], None, buffers, threads) == 2  # a wait completes the oldest first
    assert gemm_waits([qk], [ir.Sync()], None, buffers, threads) == 0
    # the next S = Q @ K.T writes the scores the pending one writes: register A or not, in order
    assert gemm_waits([pv], [qk], qk, buffers, threads) == 0


def _dkv(path):
    program = check_file(str(path)).program
    k = schedule_grids(program, "flash_bwd", {"D": 128, "T": "f16", **SM90_TILES}, target="sm_90a")[2]
    loop = k.body[k.warp_spec.loop]
    start, stop = k.warp_spec.consumer
    return list(loop.body[start:stop]), {b.name: b for b in k.buffers}, k.threads


def test_dks_product_from_shared_memory_is_carried_into_the_next_iteration():
    body, buffers, threads = _dkv(STAGED)
    assert [(g.a, g.b, g.c) for g in carried_gemms(body, buffers, threads)] == [("ds_s", "q_tile", "dk")]


def test_a_product_whose_a_is_in_registers_is_not_carried():
    body, buffers, threads = _dkv(ATTENTION)  # dS in registers: C7512 across the next scores
    assert carried_gemms(body, buffers, threads) == ()
