"""unswitch_loops: a serial loop whose body is one `if` on a test the loop cannot change, as that
`if` around two loops, one a branch.

`for v in range(...): if c: A else: B`, where nothing the loop does can change c (it reads no
element, neither v nor a scalar the body assigns), becomes `if c: (for ...: A) else: (for ...:
B)`: the test made once, and each loop holding one branch, so that the registers of the other
are not live across it (std.data.repeat's whole-tile test at each copy, beside its
element-by-element path: i64 spilled at 16 elements a thread, and ~115 SASS instructions a
16-byte store where ~28 do).  Loops nested so are unswitched from the inside out, and a branch
loop whose body is again such a test is unswitched in its turn (a pass on the tile IR, so that the
code generators render what it shows).  The statements not on the way to a rewritten loop keep
their identity (ir.walk.rewritten)."""
from __future__ import annotations

from dataclasses import replace

from .. import ir
from ..ir.walk import assigned_scalars, rewritten, subexprs, variables


def unswitch_loops(kernel: ir.Kernel) -> ir.Kernel:
    body = rewritten(tuple(kernel.body), _unswitched)
    return kernel if body is None else replace(kernel, body=body)


def _unswitched(s) -> ir.If | None:
    """`s`, a loop whose body (already unswitched) is one loop-invariant test, as the test around
    two copies of the loop (each unswitched again); None where that does not apply."""
    if not isinstance(s, ir.For) or s.kind != "serial" or len(s.body) != 1 or not isinstance(s.body[0], ir.If):
        return None
    test = s.body[0]
    if any(isinstance(e, ir.Load) for e in subexprs(test.cond)):
        return None
    assigned = assigned_scalars(s.body) | {s.var}
    if any(v.name in assigned for v in variables(test.cond)):
        return None

    def branch(stmts: tuple) -> tuple:
        loop = replace(s, body=stmts)
        return (_unswitched(loop) or loop,)

    return ir.If(test.cond, branch(test.then), branch(test.orelse) if test.orelse else (), span=test.span)
