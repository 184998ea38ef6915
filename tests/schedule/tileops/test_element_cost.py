"""element_cost.py's estimate of an element's instructions and the long-math rule it feeds
(tileops/__init__.py `_long_math`, rules.Rules.ew_long_*): an element-wise kernel of 16-bit
tensors whose math is long takes one run a thread and the blocks per SM its registers allow;
short math, wider tensors and rules that fix the blocks keep the plain element-wise schedule."""
from __future__ import annotations

import pytest

import tlc
from tlc.schedule.tileops.element_cost import element_cost
from tlc.schedule.tileops.rules import DEFAULT_RULES

SIZES = {"M": 16384, "N": 8192}


@pytest.fixture(scope="module")
def ew():
    return tlc.load("std.elementwise", target="cpu")


def launch(op, T="f16", **rules):
    return (op.with_rules(**rules) if rules else op).program({"T": T}, "sm_90a", SIZES).launches[0]


def test_long_math_takes_more_blocks(ew):
    """Two 16-bit fragments at two runs a thread: 16 registers plus 24 besides, 40 as ptxas gives
    them out, 12 blocks of 128 threads (tanhshrink; celu was the example until its expm1 became
    tl::fast_expm1, short math), where the plain schedule asks for none."""
    la = launch(ew.tanhshrink)
    k = la.kernel
    assert element_cost(k) >= DEFAULT_RULES.ew_long_math
    assert k.buffers[-1].shape == (2048,) and k.min_blocks == 12
    assert any(n.startswith("long math: about") and "2 runs a thread and 12 blocks per SM (16 registers of fragments "
               "and 24 besides, at most 16)" in n for n in k.notes)
    assert la.tiles.endswith("12 blocks per SM")
    k = launch(ew.tanhshrink, ew_long_runs=1).kernel
    assert k.buffers[-1].shape == (1024,) and k.min_blocks == 16


def test_more_operands_leave_room_for_fewer_blocks(ew):
    """Two 16-bit inputs and the result at two runs a thread: 24 registers of fragments plus 24
    and 4 for the third fragment besides, 56 as ptxas gives them out, 9 blocks of 128 threads
    (atan2; bf16 remainder spilled 4 bytes at 10).  hypot was the example until its scaling by a
    power of two (no division, one root) made it short math (about 17 an element)."""
    k = launch(ew.atan2).kernel
    assert k.min_blocks == 9 and "24 registers of fragments and 28 besides" in k.notes[-1]
    assert launch(ew.hypot).kernel.min_blocks == 0


@pytest.mark.parametrize("op,T", [("add", "f16"), ("tanh", "f16"), ("hardswish_bwd", "f16"), ("log1p", "f16"),
                                  ("atan", "f16"), ("atan", "f32")])
def test_short_math_and_wide_tensors_keep_the_plain_schedule(ew, op, T):
    k = launch(getattr(ew, op), T).kernel
    assert k.buffers[-1].shape == (1024,) and k.min_blocks == 0  # one run a thread (two of f32: 8 elements)
    assert not any(n.startswith("long math") for n in k.notes)


def test_the_threshold_lies_between_the_measured_losses_and_gains(ew):
    """The H200 measured the rule on vs off (rules.py): hardswish_bwd lost with it (0.98 vs 1.03
    of copy), atan and erf won (0.56 vs 0.54, 0.68 vs 0.64) when their estimates were 28 and 22;
    since their fast forms (tl::fast_atan, fast_erf) they are 15 and 18, short math.  The
    threshold drops hardswish_bwd and keeps what is still as long as those two were (tanhshrink,
    gelu_erf_bwd)."""
    cost = {op: element_cost(launch(getattr(ew, op), ew_long_math=10 ** 6).kernel)
            for op in ("hardswish_bwd", "erf", "atan", "tanhshrink", "gelu_erf_bwd")}
    assert cost["hardswish_bwd"] < DEFAULT_RULES.ew_long_math <= min(cost["tanhshrink"], cost["gelu_erf_bwd"])
    assert max(cost["erf"], cost["atan"]) < DEFAULT_RULES.ew_long_math
    assert launch(ew.tanhshrink).kernel.min_blocks == 12 and launch(ew.hardswish_bwd).kernel.min_blocks == 0


def test_rules_that_fix_the_blocks_win(ew):
    k = launch(ew.atan, min_blocks=8).kernel
    assert k.min_blocks == 8 and k.buffers[-1].shape == (1024,)
    k = launch(ew.atan, ew_long_blocks=0).kernel
    assert k.min_blocks == 0 and k.buffers[-1].shape == (1024,)


def test_the_estimate_counts_the_fast_forms():
    """A 16-bit exponential is the hardware's (3 instructions), an f32 one expf's (10)."""
    src = """
@tile_op
def e16(x: f16[M, N]) -> f16[M, N]:
    return exp(x)

@tile_op
def e32(x: f32[M, N]) -> f32[M, N]:
    return exp(x)
"""
    mod = tlc.compile_source(src, target="cpu")
    assert element_cost(mod.e16.program({}, "sm_90a", SIZES).launches[0].kernel) == 3
    assert element_cost(mod.e32.program({}, "sm_90a", SIZES).launches[0].kernel) == 10


def test_the_estimate_counts_what_nvcc_emits():
    """A subexpression written twice is computed once, a * b + c is one FFMA and a negation is
    the operand's sign flag: exp(x) * exp(x) is expf's 10 and a multiplication, x * 2 + 1 and
    -(x * x) one instruction each."""
    src = """
@tile_op
def twice(x: f32[M, N]) -> f32[M, N]:
    return exp(x) * exp(x)

@tile_op
def fma(x: f32[M, N]) -> f32[M, N]:
    return x * 2.0 + 1.0

@tile_op
def negated(x: f32[M, N]) -> f32[M, N]:
    return -(x * x)
"""
    mod = tlc.compile_source(src, target="cpu")
    cost = {n: element_cost(getattr(mod, n).program({}, "sm_90a", SIZES).launches[0].kernel)
            for n in ("twice", "fma", "negated")}
    assert cost == {"twice": 11, "fma": 1, "negated": 1}
