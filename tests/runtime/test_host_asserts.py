"""device_asserts that a launch's sizes decide, evaluated on the host (runtime/host_asserts.py):
which conditions it takes, that it computes them as the GPU does or leaves them undecided, and
that a kernel's launch facts carry the conditions (std.moe's expert_histogram, std.reduce's
topk; std.attention's flash_fwd tests an f32 scale: the GPU's)."""
import numpy as np
import pytest

import tlc
from tlc.dtypes import lookup
from tlc.ir.nodes import BinOp, Cast, Const, Select, UnaryOp, Var
from tlc.runtime.args import LaunchFacts
from tlc.runtime.host_asserts import decidable, holds

I32, I64, U32, F32, BOOL = (lookup(n) for n in ("i32", "i64", "u32", "f32", "bool"))
E, K, N = Var("E", I32), Var("K", I32), Var("N", I32)
SLOTS = {"E": 0, "K": 1, "N": 2}


def op(o, a, b, dt=BOOL):
    return BinOp(o, a, b, dt)


def c(v, dt=I32):
    return Const(v, dt)


@pytest.mark.parametrize("vals,want", [((64, 8, 100), True), ((300, 8, 100), False), ((64, 200, 100), False)])
def test_sizes_against_constants(vals, want):
    f = holds([op("<=", E, c(256)), op("and", op("<=", K, N), op("<=", K, c(128)))], SLOTS)
    assert f(vals) is want


def test_arithmetic_past_its_dtype_is_left_to_the_gpu():
    # E * N in i32: 2^16 * 2^16 wraps on the GPU; the host does not decide it
    f = holds([op(">=", BinOp("*", E, N, I32), c(0))], SLOTS)
    assert f((1 << 16, 0, 1 << 16)) is False and f((1 << 15, 0, 1 << 15)) is True
    # an unsigned size minus more than it is
    u = Var("E", U32)
    assert holds([op(">=", BinOp("-", u, Const(5, U32), U32), Const(0, U32))], SLOTS)((3, 0, 0)) is False


def test_floor_division_and_modulo_as_the_ir_defines_them():
    # // floors and % takes the divisor's sign (tl::floordiv, tl::pymod), as Python's
    assert holds([op("==", BinOp("//", UnaryOp("-", E, I32), c(4), I32), c(-2))], SLOTS)((7, 0, 0)) is True
    assert holds([op("==", BinOp("%", UnaryOp("-", E, I32), c(4), I32), c(1))], SLOTS)((7, 0, 0)) is True
    assert holds([op("==", BinOp("%", E, K, I32), c(0))], SLOTS)((7, 0, 0)) is False  # by zero: undecided


def test_selects_casts_and_short_circuits():
    guarded = op("or", op("==", K, c(0)), op("==", BinOp("%", E, K, I32), c(0)))  # no division by 0 when K == 0
    assert holds([guarded], SLOTS)((7, 0, 0)) is True
    sel = op("<=", Select(op(">", K, c(0)), K, N, I32), Cast(Var("N", I64), I32))
    assert holds([sel], SLOTS)((0, 3, 5)) is True


@pytest.mark.parametrize("cond", [
    op(">", Var("scale", F32), Const(0.0, F32)),  # an f32 scalar: its rounding is the GPU's
    op("<=", Var("L", I32), c(4)),  # a name that is not a size or scalar of the launch (a let)
    op("<=", BinOp("/", E, c(2), I32), c(4)),  # C's truncating division
    op("<=", BinOp("<<", E, c(2), I32), c(4)),
])
def test_what_the_host_does_not_take(cond):
    assert not decidable([cond], set(SLOTS) | {"scale"}) and holds([cond], SLOTS) is None


def test_launch_facts_carry_the_conditions():
    hist = tlc.load("std.moe", target="cpu").kernels["expert_histogram"].scheduled({"I": "i64"}, "sm_90a")
    facts = LaunchFacts.of(hist)
    assert len(facts.asserts) == len(facts.assert_conds) == 1
    names = set(hist.shape_symbols()) | {p.name for p in hist.params if p.kind == "scalar"}
    assert decidable(facts.assert_conds, names)
    fwd = tlc.load("std.attention", target="cpu").kernels["flash_fwd"].scheduled({"D": 128}, "sm_90a")
    assert not decidable(LaunchFacts.of(fwd).assert_conds, set(fwd.shape_symbols()) | {"scale"})


def test_a_kernel_with_asserts_keeps_the_whole_runs_build_where_asked(monkeypatch):
    """host_asserts.WHOLE_RUNS_WITH_ASSERTS (off until timed): expert_histogram, which asserts
    E <= BE, is compiled with TL_WHOLE_RUNS only with the switch on, and its generic build never."""
    from tlc.runtime import built_source, host_asserts
    from tlc.runtime.whole_runs import DEFINE

    hist = tlc.load("std.moe", target="cpu").kernels["expert_histogram"]
    generated = hist.generated({"I": "i64"}, "sm_90a")
    asserts = LaunchFacts.of(hist.scheduled({"I": "i64"}, "sm_90a")).asserts
    assert generated.whole_runs and asserts
    monkeypatch.setattr(host_asserts, "WHOLE_RUNS_WITH_ASSERTS", False)
    assert DEFINE not in built_source(generated, asserts) and not host_asserts.whole_runs_build(asserts)
    monkeypatch.setattr(host_asserts, "WHOLE_RUNS_WITH_ASSERTS", True)
    assert DEFINE in built_source(generated, asserts) and DEFINE not in built_source(generated, asserts, generic=True)
    assert host_asserts.whole_runs_build(()) and host_asserts.whole_runs_build(asserts)


@pytest.mark.parametrize("switch,hold,reads", [(True, True, 0), (True, False, 2), (False, True, 2), (None, None, 2)])
def test_a_launcher_reads_the_record_unless_its_sizes_decide_every_assert(switch, hold, reads, monkeypatch):
    """HOST_DECIDED_ASSERTS (on by default since the H200 timed it, session 28): a launcher
    (runtime/bound.BoundLaunch) whose sizes make every assert hold reads no record after its
    launches; one whose sizes fail one, or with the switch off, or whose asserts the host cannot
    decide (asserts_hold None), reads it after each launch."""
    from types import SimpleNamespace

    from tlc.runtime import host_asserts
    from tlc.runtime.args import Bound
    from tlc.runtime.bound import BoundLaunch

    assert host_asserts.HOST_DECIDED_ASSERTS is True
    if switch is not None:
        monkeypatch.setattr(host_asserts, "HOST_DECIDED_ASSERTS", switch)
    launches, checks = [], []
    compiled = SimpleNamespace(name="k", grid=lambda values: (1, 1, 1), block=(32, 1, 1), smem=0,
                               function_for=lambda device, args: lambda *a: launches.append(a), kernel_args=lambda b: b.args,
                               assert_sites=("E <= BE",), check_asserts=lambda: checks.append(1),
                               asserts_hold=None if hold is None else (lambda values: hold and values[1] == 64))
    run = BoundLaunch(compiled, Bound([np.uint64(0x7f00), np.int32(64)], [None, 64], [], -1), 0, {"ids": "held"})
    run()
    run()
    assert len(launches) == 2 and len(checks) == reads
