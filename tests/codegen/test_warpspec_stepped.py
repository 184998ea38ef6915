"""codegen/warpspec/stepped.py: a TMA producer's copy coordinates with their divisions by run-time
sizes counted along the K loop or computed once a tile.  The rewritten coordinates, with the
counters stepped as the emitted C steps them, equal the divisions at every K step of every tile
shape (divisors above 0); coordinates without such a division are left alone."""
from dataclasses import dataclass

import pytest

from tlc import ir
from tlc.codegen.warpspec import stepped
from tlc.dtypes import I32


def v(name):
    return ir.Var(name, I32)


def c(x):
    return ir.Const(x, I32)


def b(op, x, y):
    return ir.BinOp(op, x, y, I32)


@dataclass
class Load:  # the fields of codegen/warpspec/plan.TmaLoad that stepped reads
    copy: object = None
    gather: bool = False
    im2col: object = None


def copy_at(*offsets):
    return Load(copy=ir.Copy(ir.Region("w", tuple(offsets), (1,) * len(offsets)), ir.BufferRef("ws")))


def value(e, env):
    """A Python value of `e` (Python's // and %, as tl::floordiv and tl::pymod)."""
    if isinstance(e, ir.Var):
        return env[e.name]
    if isinstance(e, ir.Const):
        return e.value
    ops = {"+": lambda p, q: p + q, "-": lambda p, q: p - q, "*": lambda p, q: p * q, "//": lambda p, q: p // q,
           "%": lambda p, q: p % q}
    return ops[e.op](value(e.a, env), value(e.b, env))


def run(s, env, counters, steps):
    """The counters' values at each of `steps` iterations, stepped as step_lines' C does."""
    state = {}
    for n, e in s.hoisted:
        env[n] = value(e, env)
    for x in counters:
        state[x.quotient] = state[x.remainder] = 0
    for _ in range(steps):
        yield {**env, **state}

        def step(x):
            state[x.remainder] += 1
            if state[x.remainder] == env[x.divisor.name]:
                state[x.remainder] = 0
                state[x.quotient] += 1
                for n in x.nested:
                    step(n)

        for x in s.counters:
            step(x)


# std.conv's conv2d: K step k is kernel row k // (K * CB), column k // CB % K, channels k % CB * 64
CONV = [b("*", b("%", v("k"), v("CB")), c(64)), b("%", b("//", v("k"), v("CB")), v("K")),
        b("//", v("k"), b("*", v("K"), v("CB"))), b("-", b("%", b("*", v("by"), c(128)), v("OW")), c(1))]


@pytest.mark.parametrize("K, CB", [(3, 4), (1, 8), (3, 1), (7, 1), (5, 3)])
def test_the_counters_are_the_divisions(K, CB):
    s, loads = stepped.plan([copy_at(*CONV)], "k", set())
    out = loads[0].copy.src.offsets
    assert not any(isinstance(x, ir.BinOp) and x.op in ("//", "%") for e in out for x in ir.walk.subexprs(e))
    everything = list(s._all())
    assert len(everything) == 3  # k by CB, its quotient by K, k by K * CB
    env = {"K": K, "CB": CB, "by": 5, "OW": 56}
    for k, state in enumerate(run(s, env, everything, K * K * CB + 3)):
        assert [value(e, state) for e in out] == [value(e, {**env, "k": k}) for e in CONV]


def test_the_c_around_the_loop():
    s, _ = stepped.plan([copy_at(b("%", v("k"), v("CB")), b("%", b("//", v("k"), v("CB")), v("K")))], "k", set())
    name = str
    assert stepped.setup_lines(s, lambda e: e.name if isinstance(e, ir.Var) else "?", name, lambda d: "int") == \
        ["const int k.h0 = CB;", "const int k.h2 = K;", "int k.q0 = 0, k.r0 = 0;", "int k.q1 = 0, k.r1 = 0;"]
    assert stepped.guard(s, lambda e: e.name) == "k.h0 > 0 && k.h2 > 0"
    assert stepped.step_lines(s, lambda e: e.name, name) == [
        "if (++k.r0 == k.h0) {", "  k.r0 = 0;", "  ++k.q0;", "  if (++k.r1 == k.h2) {", "    k.r1 = 0;",
        "    ++k.q1;", "  }", "}"]


def test_coordinates_without_a_run_time_division_are_left_alone():
    # std.gemm's K step (k * 64) and a division by a constant (nvcc multiplies): nothing to do
    assert stepped.plan([copy_at(b("*", v("k"), c(64)), v("bx"))], "k", set()) is None
    assert stepped.plan([copy_at(b("//", v("k"), c(3)), b("%", v("k"), c(3)))], "k", set()) is None
    # a divisor the loop sets, or a dividend that is not the loop's counter, stays divided
    assert stepped.plan([copy_at(b("//", v("k"), v("d")))], "k", {"d"}) is None
    assert stepped.plan([copy_at(b("//", b("*", v("k"), c(2)), v("CB")))], "k", set()) is None
