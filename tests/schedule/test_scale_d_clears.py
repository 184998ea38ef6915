"""Which clears of a ring's consumer body its wgmma gemms make (schedule/scale_d_clears.py,
Fill.scale_d): IR in, IR out.  std.attention's flash_bwd issues Q . K^T and dO . V^T back to
back, each a clear_accum gemm (both loops); std.gemm's block-scaled f8 at BN = 256 clears one
partial-sum fragment twice a K step; a carried gemm (bench/E_bwd_staged.tl) makes every clear of
the body its gemm's.  The code generator renders the marks (tests/codegen/test_ring_scale_d_clears.py)."""
from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest

from tlc import ir
from tlc.driver import check_file
from tlc.ir.printer import print_kernel
from tlc.ir.walk import statements
from tlc.schedule import schedule, schedule_grids, scale_d_clears
from tlc.schedule.scale_d_clears import choose_scale_d_clears

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "stdlib"))
from attention_kit import ATTENTION_PATH  # noqa: E402
from stdlib_kit import GEMM_PATH  # noqa: E402

BWD_TILES = {"D": 128, "T": "f16", "BM": 128, "THREADS": 256, "BN": 128, "BQ": 64, "KV_STAGES": 3}


def _bwd(target="sm_90a", path=ATTENTION_PATH, **consts) -> tuple:
    return schedule_grids(check_file(path).program, "flash_bwd", {**BWD_TILES, **consts}, target=target)


def _f8(**consts) -> ir.Kernel:
    return schedule(check_file(GEMM_PATH).program, "matmul_f8_blockscaled", consts, target="sm_90a")


def _marks(k: ir.Kernel) -> list:
    """(buffer, scale_d) of each fill of the ring's consumer statements, in order."""
    start, stop = k.warp_spec.consumer
    return [(s.buffer, s.scale_d) for s in k.body[k.warp_spec.loop].body[start:stop] if isinstance(s, ir.Fill)]


def _unmarked(k: ir.Kernel) -> ir.Kernel:
    """`k` as the passes before this one left it: no fill marked, no note of this pass."""
    loop = k.body[k.warp_spec.loop]
    body = tuple(replace(s, scale_d=0) if isinstance(s, ir.Fill) else s for s in loop.body)
    top = tuple(replace(loop, body=body) if s is loop else replace(s, scale_d=0) if isinstance(s, ir.Fill) else s
                for s in k.body)
    return replace(k, body=top, notes=tuple(n for n in k.notes if not n.startswith("clears made by")))


def _without(k: ir.Kernel, drop) -> ir.Kernel:
    """`k` with the ring's statements `drop` (a predicate) left out, the consumer slice kept."""
    spec = k.warp_spec
    loop = k.body[spec.loop]
    start, stop = spec.consumer
    gone = [i for i, s in enumerate(loop.body) if start <= i < stop and drop(s)]
    body = tuple(s for i, s in enumerate(loop.body) if i not in gone)
    top = tuple(replace(loop, body=body) if s is loop else s for s in k.body)
    return replace(k, body=top, warp_spec=replace(spec, consumer=(start, stop - len(gone))))


def test_flash_bwd_products_issued_back_to_back_clear_by_scale_d():
    # both loops: the scores' product only writes its registers (the loop's mask writes scores),
    # dO . V^T's reads what the last gemm left (nothing else writes dprobs)
    _, dq, dkv = _bwd()
    assert _marks(dq) == [("scores", 2), ("dprobs", 1)]
    assert _marks(dkv) == [("scores_t", 2), ("dprobs_t", 1)]
    text = print_kernel(dkv)
    assert "    fill scores_t = 0.0 (by its gemm's scale-d 0, only writing the registers)\n" in text
    assert "    fill dprobs_t = 0.0 (by its gemm's scale-d 0, reading the registers)\n" in text
    assert ("  # note: clears made by their gemms' first K step, scale-d 0, not by instructions ahead of the wgmma: "
            "scores_t (only writing them), dprobs_t (reading the registers the last gemm left)\n") in text
    # the clears before the ring (dk, dv) stay instructions
    assert "  fill dk = 0.0\n" in text and "  fill dv = 0.0\n" in text


def test_ir_in_ir_out():
    # the pass alone, on what the passes before it left, makes the scheduled kernel again
    _, dq, dkv = _bwd()
    for k in (dq, dkv):
        assert choose_scale_d_clears(_unmarked(k)) == k
    # it marks nothing where it ran already: the marks are its result, not its input
    assert _marks(choose_scale_d_clears(dkv)) == _marks(dkv)


def test_a_lone_product_keeps_its_instruction_clear(monkeypatch):
    # dO . V^T without the scores' product before it: no pair issued back to back, one clear of
    # dprobs_t, so "reused" leaves it an instruction; "all" takes it
    _, _, dkv = _bwd()
    lone = _without(_unmarked(dkv), lambda s: (isinstance(s, ir.Fill) and s.buffer == "scores_t")
                    or (isinstance(s, ir.Gemm) and s.c == "scores_t"))
    assert _marks(choose_scale_d_clears(lone)) == [("dprobs_t", 0)]
    monkeypatch.setattr(scale_d_clears, "RING_SCALE_D_CLEARS", "all")
    assert _marks(choose_scale_d_clears(lone)) == [("dprobs_t", 1)]


@pytest.mark.parametrize("rule, marks", [("reused", [("scores_t", 2), ("dprobs_t", 1)]),
                                         ("all", [("scores_t", 2), ("dprobs_t", 1)]),
                                         ("none", [("scores_t", 0), ("dprobs_t", 0)])])
def test_the_rule(monkeypatch, rule, marks):
    monkeypatch.setattr(scale_d_clears, "RING_SCALE_D_CLEARS", rule)
    assert _marks(_bwd()[2]) == marks


def test_a_fragment_cleared_twice_a_k_step():
    # BN = 256: two 128-column halves into one partial-sum fragment, their scaled sums values of
    # their loops (dead_stores.py): both clears read the registers the last gemm left
    k = _f8(BN=256)
    assert _marks(k) == [("part", 1), ("part", 1)]
    # BN = 128: one clear a K step, an instruction under "reused"
    assert _marks(_f8()) == [("part", 0)]


def test_the_tie_and_what_breaks_it(monkeypatch):
    import tlc.schedule.dead_stores as ds

    monkeypatch.setattr(scale_d_clears, "RING_SCALE_D_TIED", False)
    assert _marks(_f8(BN=256)) == [("part", 2), ("part", 2)]
    # the partial sums stored back: the loop writes part, so the clear only writes the registers
    monkeypatch.setattr(scale_d_clears, "RING_SCALE_D_TIED", True)
    monkeypatch.setattr(ds, "DEAD_FRAGMENT_STORES", "none")
    assert _marks(_f8(BN=256)) == [("part", 2), ("part", 2)]
    monkeypatch.setattr(scale_d_clears, "RING_SCALE_D_CLEARS", "all")
    assert _marks(_f8()) == [("part", 2)]


def test_a_carried_gemm_makes_every_clear_its_gemms():
    # bench/E_bwd_staged.tl: dK += dS.T @ Q stays in flight into the next iteration, so no
    # instruction may write an accumulator at the body's start (ptxas's C7515): the clears read;
    # and dk's clear before the ring is its first iteration's (dv's, not carried, stays)
    k = _bwd(path=str(ROOT / "bench" / "E_bwd_staged.tl"))[2]
    assert _marks(k) == [("scores_t", 1), ("dprobs_t", 1)]
    top = [(s.buffer, s.scale_d) for s in k.body if isinstance(s, ir.Fill)]
    assert top == [("dk", 3), ("dv", 0)], top
    text = print_kernel(k)
    assert "  fill dk = 0.0 (by its carried gemm's first iteration in the ring, scale-d 0)\n" in text
    assert text.count("dk (before the ring: by its first iteration)") == 1
    assert choose_scale_d_clears(_unmarked(k)) == k


def test_a_clear_before_the_ring_that_something_reads_stays():
    # the accumulator read between its clear and the carried gemm's first iteration: the clear
    # must be there, so it stays an instruction
    k = _unmarked(_bwd(path=str(ROOT / "bench" / "E_bwd_staged.tl"))[2])
    at = next(i for i, s in enumerate(k.body) if isinstance(s, ir.Fill) and s.buffer == "dk")
    from tlc.dtypes import I32

    reads = ir.Fill("dv", ir.Load("dk", (ir.Const(0, I32), ir.Const(0, I32)), k.buffer("dk").dtype))
    k2 = replace(k, body=k.body[:at + 1] + (reads,) + k.body[at + 1:],
                 warp_spec=replace(k.warp_spec, loop=k.warp_spec.loop + 1))
    assert [(s.buffer, s.scale_d) for s in choose_scale_d_clears(k2).body if isinstance(s, ir.Fill)] \
        == [("dk", 0), ("dv", 0), ("dv", 0)]


def test_no_ring_no_marks():
    # sm_80 has no warp-specialized ring: the clears are instructions, the kernel unchanged
    program = check_file(ATTENTION_PATH).program
    for k in schedule_grids(program, "flash_bwd", {"D": 128, "T": "f16"}, target="sm_80"):
        assert k.warp_spec is None and choose_scale_d_clears(k) is k
        assert not any(isinstance(s, ir.Fill) and s.scale_d for s in statements(k.body))
