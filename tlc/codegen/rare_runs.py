"""pow's rare special cases tested once a run rather than once an element (#13).

fast_math.RARE_POW_SPECIALS puts tl::pow_of's special cases (a negative base, a NaN product)
behind one branch an element.  In a parallel loop taken a run at a time (shared_runs.py's
run_loop: std.broadcast's pow, whose result is stored a run at a time) ptxas hoists the later
elements' logarithms (MUFU.LG2) above the earlier elements' branches, and the values it keeps
across them cost registers: std.broadcast's pow of f16 on sm_90a took 96 registers, and at
BLOCKS = 8 (64 registers, 1.157x faster on the H200 than the default, session 28) its general
build (a launch of ragged rows) spilled 12 bytes, 4 at BLOCKS = 7.  With RARE_POW_RUNS the run's
elements are computed by the common path alone (tl::fast_pow_flagged: no branch, a flag of the
run set where an element's branch would have been taken), and only where the flag is set is the
run computed again, every element, by the selects (tl::fast_pow: the same values bit for bit).
One branch a run: nvcc 13.0, sm_90a, the generated kernel with A3 and B3 not 1, BLOCKS = 8: 64
registers and 12 bytes of spill -> 61 and none (the TL_WHOLE_RUNS build 64 -> 62, none); the
fewest SASS instructions from the entry through the runs' 16-byte loads and stores to EXIT
1378 -> 1321 (whole runs 1103 -> 1054); at the default BLOCKS 96 -> 80 registers.

A loop qualifies when its body can run twice over a run with the same result: its statements
are stores into fragments (under `if`s too), none of which the body reads, and no other
statement (a scalar set, an atomic, a store to a tensor or shared memory would be done twice or
read back).  Off until the H200 has timed it (bench/queue/G_broadcast_pow_blocks.sh): the code
changes in the loops it takes (std.broadcast's pow; std.elementwise's pow, a loop of one element
a register, keeps its branch an element).
"""
from __future__ import annotations

from .. import ir
from ..ir.walk import loads, statement_exprs, statements, subexprs

RARE_POW_RUNS = False
RARE_POWS = {"fast_pow_rare": "fast_pow", "fast_pow_near_rare": "fast_pow_near"}  # -> its selects form
FLAG = "tl_rare"  # the run's flag in C


def takes_rare_runs(p: ir.Parallel, buffers: dict) -> bool:
    """Whether run_loop computes loop `p`'s runs with pow's test once a run (module docstring)."""
    if not RARE_POW_RUNS:
        return False
    body = list(statements(p.body))
    if not any(isinstance(x, ir.Call) and x.fn in RARE_POWS
               for s in body for e in statement_exprs(s) for x in subexprs(e)):
        return False
    written = set()
    for s in body:
        if isinstance(s, ir.If):
            continue
        b = buffers.get(s.name) if isinstance(s, ir.Store) else None
        if b is None or b.scope != "fragment":
            return False
        written.add(s.name)
    return not any(x.name in written for s in body for e in statement_exprs(s) for x in loads(e))


def rare_pow_call(fn: str, args: list, flag: str) -> str:
    """The C call of RARE_POWS' `fn` in a run's pass: `flag` the run's flag (the common path), or
    "" (the run again, by the selects)."""
    if flag:
        return f"tl::{RARE_POWS[fn]}_flagged({', '.join(args)}, {flag})"
    return f"tl::{RARE_POWS[fn]}({', '.join(args)})"
