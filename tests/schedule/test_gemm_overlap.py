"""Which wgmma gemms of a warp-specialized ring's consumers run under other work
(tlc/schedule/gemm_overlap.py), asked of std.attention's loops as the pass sees them: flash_fwd's
P @ V deferred under the next softmax, V's loads on barriers of their own at two stages, the
waits a statement needs, and flash_bwd's products carried into the next iteration where dS is
in shared memory (bench/E_bwd_staged.tl) and not where it is in registers."""
from __future__ import annotations

import re
import sys
from dataclasses import replace
from pathlib import Path

import pytest

import tlc
from tlc import ir
from tlc.driver import check_file
from tlc.schedule import schedule_grids
from tlc.schedule import gemm_overlap
from tlc.schedule.gemm_overlap import (buffers_read, buffers_touched, buffers_written, carried_gemms, deferred_gemm,
                                       gemm_waits, late_loads, wgmma_ready, wgmma_rs_ready)

ROOT = Path(__file__).resolve().parents[2]
ATTENTION = ROOT / "stdlib" / "attention.tl"
STAGED = ROOT / "bench" / "E_bwd_staged.tl"
sys.path.insert(0, str(ROOT / "tests" / "schedule"))
sys.path.insert(0, str(ROOT / "tests" / "codegen"))  # nvcc.py
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


D64_BN128 = {"D": 64, "BM": 192, "THREADS": 384, "BN": 128}  # FlashAttention 3's head-dim-64 tile


def _statement(s) -> str:
    """What a statement of flash_fwd's loop is, by what it writes."""
    if isinstance(s, ir.Copy):
        return f"copy -> {s.dst.name}"
    return f"{type(s).__name__.lower()} -> {','.join(sorted(buffers_written(s)))}"


@pytest.mark.parametrize("rule, at", [("first_use", "copy -> probs"), ("after_last_write", "reduce -> tile_sum"),
                                      ("before_last_write", "parallel -> scores")])
def test_where_the_deferred_gemm_is_waited_for(monkeypatch, rule, at):
    # first_use: before P's copy (the default); after_last_write: before the row sum of the
    # exponentials, the statements after the last write of the copy's source; before_last_write:
    # before the exponentials themselves.  acc *= rescale stays right before the next issue.
    monkeypatch.setattr(gemm_overlap, "DEFERRED_WAIT", rule)
    loop, (start, stop), buffers, threads, ws = _fwd(**D64_BN128)
    d = ws.deferred
    assert _statement(loop.body[d.wait]) == at
    assert [buffers_written(loop.body[i]) for i in d.before_issue] == [{"acc"}]
    assert d == deferred_gemm(list(loop.body), start, stop, buffers, threads, loop.var)


def test_a_wait_with_no_write_before_it_stays(monkeypatch):
    # the deferred gemm's first user reads nothing the iteration wrote after the first gemm:
    # nothing to wait ahead of
    monkeypatch.setattr(gemm_overlap, "DEFERRED_WAIT", "before_last_write")
    loop, (start, stop), buffers, threads, ws = _fwd()
    body = list(loop.body)
    copy = next(i for i, s in enumerate(body) if isinstance(s, ir.Copy) and s.dst.name == "probs")
    assert ws.deferred.wait < copy  # (the exponentials write what it reads)
    body[copy] = replace(body[copy], src=replace(body[copy].src, name="q_tile"))  # which nothing here writes
    assert deferred_gemm(body, start, stop, buffers, threads, loop.var).wait == copy


@pytest.mark.parametrize("rule, before", [("first_use", "copy(scores, probs)"),
                                          ("after_last_write", "reduce_sum(scores, tile_sum, dim=1)"),
                                          ("before_last_write", "for i, j in parallel(BM, BN):")])
def test_the_code_waits_where_the_schedule_says(monkeypatch, rule, before):
    # the loop's wgmma_wait_in_place<0> sits right before the statement DEFERRED_WAIT chose
    monkeypatch.setattr(gemm_overlap, "DEFERRED_WAIT", rule)
    src = _fwd_source(**D64_BN128)
    loop = src[src.index("for (int tl_k = 1; tl_k < tl_n;"):]
    after = loop[loop.index("tl::wgmma_wait_in_place<0>();"):]
    lines = [x.strip() for x in after.splitlines()]
    assert lines[1:3] == ["tl::fence_registers<32>(acc);", "tl::fence_registers<64>(probs);"]
    assert lines[3].split(": ", 1)[1] == before, lines[3]


def _fwd_source(**constants) -> str:
    from tlc.codegen import generate

    r = check_file(str(ATTENTION))
    k, = schedule_grids(r.program, "flash_fwd", {"T": "f16", **constants}, target="sm_90a")
    return generate(k, "sm_90a", sources=r.sources, line_directives=False).source


@pytest.mark.slow  # nvcc builds of an off-by-default switch (untimed): CI's slow run
@pytest.mark.nvcc
@pytest.mark.parametrize("causal", [False, True])
def test_waiting_before_the_exponentials_fits_the_registers(tmp_path, monkeypatch, causal):
    # 192 x 128 at head dim 64 (three consumer warpgroups, setmaxnreg 160): waited for before
    # P's copy, the 64 f32 exponentials of a thread live beside P's 32 registers and O's 32,
    # which the tensor cores hold, and ptxas spills (nvcc 13.0: 4 bytes full, 12 causal);
    # waited for before the exponentials, none
    from nvcc import cubin_sass

    consts = {**D64_BN128, "CAUSAL": causal}
    _, log = cubin_sass(_fwd_source(**consts), "sm_90a", tmp_path, "first_use")
    assert max(map(int, re.findall(r"(\d+) bytes spill stores", log))) == (12 if causal else 4), log
    monkeypatch.setattr(gemm_overlap, "DEFERRED_WAIT", "before_last_write")
    _, log = cubin_sass(_fwd_source(**consts), "sm_90a", tmp_path, "before_last_write")
    assert re.findall(r"(\d+) bytes spill", log) and not re.search(r"[1-9]\d* bytes spill", log), log
    assert "C75" not in log, log


@pytest.mark.parametrize("causal", [False, True])
def test_waiting_earlier_keeps_the_results(monkeypatch, causal):
    # the interpreter runs flash_fwd at the 192 x 128 tile as scheduled for sm_90a with the wait
    # before the exponentials: O and LSE against NumPy (ragged S and SK, GQA)
    import numpy as np

    from tlc.interp import run_kernel

    sys.path.insert(0, str(ROOT / "tests" / "stdlib"))
    from attention_kit import attention_inputs, attention_reference

    monkeypatch.setattr(gemm_overlap, "DEFERRED_WAIT", "before_last_write")
    r = check_file(str(ATTENTION))
    k, = schedule_grids(r.program, "flash_fwd", {"T": "f16", "CAUSAL": causal, **D64_BN128}, target="sm_90a")
    assert k.warp_spec.deferred.wait < k.warp_spec.deferred.gemm
    q, kk, v, scale = attention_inputs(np.random.default_rng(7), np.float16, 1, 2, 1, 200, 300, 64)
    o, lse = np.zeros_like(q), np.zeros((1, 2, 200), np.float32)
    run_kernel(k, {"Q": q, "K": kk, "V": v, "O": o, "LSE": lse, "scale": np.float32(scale)})
    want_o, want_lse = attention_reference(q, kk, v, scale, causal)
    assert np.abs(o.astype(np.float64) - want_o).max() < 4e-3
    assert np.abs(lse - want_lse).max() < 1e-3
