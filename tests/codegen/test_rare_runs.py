"""codegen/rare_runs.py: with RARE_POW_RUNS, pow's special cases tested once a run of a loop
taken a run at a time (std.broadcast's pow), the run computed again by the selects where any
element takes them; off, and in loops that cannot run twice, the branch an element as before."""
import re

import pytest

import tlc
from tlc.codegen import generate_file, rare_runs
from tlc.dtypes import F16
from tlc.typecheck.program import NOT_ONE
from nvcc import cubin_sass


def broadcast_pow(blocks: int = 0, whole_runs: bool = False) -> str:
    """std.broadcast's pow of f16 for sm_90a as a call with no last size of 1 compiles it (A3, B3
    not 1), as the runtime builds it for ragged launches or (`whole_runs`) aligned ones."""
    k = tlc.load("std.broadcast", target="cpu").kernels["pow"]
    kernels = k.scheduled_grids({"T": F16, "BLOCKS": blocks, "A3": NOT_ONE, "B3": NOT_ONE}, "sm_90a")
    src = generate_file(list(kernels), "sm_90a", line_directives=False)
    return ("#define TL_WHOLE_RUNS 1\n" if whole_runs else "") + src


def kernel_text(src: str) -> str:
    """The kernels of a generated file, without the templates inlined before them."""
    return src[src.index("__global__"):]


def test_off_each_element_keeps_its_branch(monkeypatch):
    monkeypatch.setattr(rare_runs, "RARE_POW_RUNS", False)
    src = kernel_text(broadcast_pow())
    assert "tl_rare" not in src and "_flagged(" not in src
    assert src.count("tl::fast_pow_near_rare(") == 2  # the row's run loop and the short rows' loop


def test_on_the_run_loop_tests_once_a_run_and_computes_the_run_again(monkeypatch):
    monkeypatch.setattr(rare_runs, "RARE_POW_RUNS", True)
    src = kernel_text(broadcast_pow())
    run = src[src.index("bool tl_rare = false;"):src.index("tl_store0.run(out, tl_r0);")]
    first, again = run.split("if (__builtin_expect(tl_rare, 0)) {")
    assert "tl::fast_pow_near_flagged(tl::cvt<float>(a_1_[tl_r]), tl::cvt<float>(b_1_[tl_r]), tl_rare)" in first
    assert "out[tl_r] = tl::cvt<half>(tl::fast_pow_near(tl::cvt<float>(a_1_[tl_r]), tl::cvt<float>(b_1_[tl_r])));" \
        in again
    assert "_rare(" not in run
    # the short rows' loop (one element a register, its store to the tensor) keeps its branch
    assert src.count("tl::fast_pow_near_rare(") == 1


def test_elementwise_pow_is_unchanged(monkeypatch):
    """std.elementwise's pow runs a loop of one element a register, not of runs: the same CUDA."""
    ew = tlc.load("std.elementwise", target="cpu")

    def cuda(on: bool) -> str:
        monkeypatch.setattr(rare_runs, "RARE_POW_RUNS", on)
        return generate_file(ew.pow.program({"T": "f16"}, "sm_90a", {"M": 4096, "N": 4096}).kernels, "sm_90a",
                             line_directives=False)
    assert cuda(True) == cuda(False)


READ_BACK = """
@kernel
def pw(a: f16[M, N], y: f16[M, N], BN: const = 1024):
    with grid(M * cdiv(N, BN), threads=128) as bx:
        r = bx // cdiv(N, BN)
        c0 = bx % cdiv(N, BN) * BN
        t = fragment(f16[BN])
        copy(a[r, c0], t)
        out = fragment(f16[BN])
        for j in parallel(BN):
            out[j] = f16(pow(f32(t[j]), 1.5))
            out[j] = f16(f32(out[j]) + 1.0)
        copy(out, y[r, c0])
"""


def test_a_body_that_reads_what_it_writes_keeps_the_branch_an_element(monkeypatch):
    """Run twice, `out[j] = out[j] + 1` would add 2: the loop keeps its branch an element."""
    monkeypatch.setattr(rare_runs, "RARE_POW_RUNS", True)
    mod = tlc.compile_source(READ_BACK, target="cpu", path="pw.tl")
    src = kernel_text(generate_file(list(mod.kernels["pw"].scheduled_grids({}, "sm_90a")), "sm_90a",
                                    line_directives=False))
    assert "tl_store0.run(" in src  # a run loop, its store folded
    assert "tl_rare" not in src and "tl::fast_pow_near_rare(" in src


@pytest.mark.nvcc
@pytest.mark.slow
@pytest.mark.parametrize("whole_runs", [False, True])
def test_broadcast_pow_at_eight_blocks_does_not_spill(whole_runs, monkeypatch, tmp_path):
    """std.broadcast's pow of f16 at BLOCKS = 8 (64 registers): with RARE_POW_RUNS neither build
    spills (nvcc 13.0, sm_90a: the ragged launches' build spilled 12 bytes with the branch an
    element, 61-64 registers now; the whole-runs build 63, 64 before)."""
    monkeypatch.setattr(rare_runs, "RARE_POW_RUNS", True)
    _, log = cubin_sass(broadcast_pow(8, whole_runs), "sm_90a", tmp_path, name=f"bp{int(whole_runs)}")
    spills = re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log)
    assert spills and all(s == ("0", "0") for s in spills), log
