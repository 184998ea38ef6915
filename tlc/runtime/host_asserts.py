"""device_asserts that a launch's sizes decide, checked on the host (a launcher's switch,
HOST_DECIDED_ASSERTS, on since the H200 timed it in session 28).

A kernel with device_asserts is read after every launch: the runtime waits for the GPU and copies
the failure record back (runtime/launch.py's check_asserts), so that a launch returns only once
the kernel has run.  Many of std's asserts test only the launch's sizes and integer scalars
against constants (std.moe's expert_histogram `E <= BE`, topk's `K <= N and K <= KMAX`,
sort's `K <= N`): the same values at every launch of a launcher (`Kernel.launcher`, whose
arrays are held as given).  Where every assert of a kernel is of that kind (`decidable`: its
condition reads constants, shape symbols and integer scalar parameters through integer
arithmetic, comparisons, logic and selects), the host evaluates the conditions once, when the
launcher binds its arguments, each step in its IR dtype's range (`holds`: a value past it, a
division by zero or anything else it cannot evaluate exactly as the GPU would leaves the
decision to the GPU); where all hold, no thread's assert can fail, and the launcher launches
without the wait.  A failing or undecided condition keeps the read after every launch.
"""
from __future__ import annotations

from typing import Callable, Sequence

from ..ir.nodes import BinOp, Cast, Const, Expr, Select, UnaryOp, Var
from ..ir.walk import subexprs

# the switch, on since session 28: H200, bench/queue/G_ops_weak_rows.sh's first process
# (bench/results/q_G_ops_weak_rows-h200-twentyeighth.txt), std.moe's expert_histogram (2^26 i64
# ids, output checked first) 165.9 -> 133.8 us a launch (0.75 -> 0.94 of copy, 11.05x -> 13.72x
# torch).  False: every launch of a kernel with asserts reads their record
HOST_DECIDED_ASSERTS = True
# A kernel with asserts is compiled without the TL_WHOLE_RUNS build today (runtime/__init__.py's
# built_source, launch.py's whole_runs): its record was read from one module, and a launch that
# needs the generic build runs another.  With this switch (off until timed) it keeps the whole-runs
# build, and CompiledKernel.check_asserts reads the generic build's record too, where a launch
# needed it.  std.moe's expert_histogram (an assert, E <= BE): 496 SASS in the ragged build against
# 320 in the whole-runs one (sm_90a, 29 against 20 registers); group_norm, which a device_assert of
# C % G == 0 would put in the ragged build: 2840 against 2112, 32 bytes of spills against none.
# Timed only beside atomic_groups.GROUP_ATOMICS (session 28, H200: expert_histogram 165.9 ->
# 377.3 us with both on, HOST_DECIDED_ASSERTS off; GROUP_ATOMICS' MATCH.ANY the likely cause):
# off until bench/queue/G_histogram_atomics.sh times each alone.
WHOLE_RUNS_WITH_ASSERTS = False


def whole_runs_build(asserts) -> bool:
    """Whether a kernel with these device_assert sites may take the TL_WHOLE_RUNS build (as
    runtime/__init__.py's built_source decides it)."""
    return not asserts or WHOLE_RUNS_WITH_ASSERTS

_ARITH = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
          "//": lambda a, b: a // b, "%": lambda a, b: a % b, "min": min, "max": max}
_COMPARE = {"==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
            "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}
_LOGIC = {"and", "or"}


class _Undecided(Exception):
    """The host cannot evaluate a condition as the GPU would."""


def decidable(conds: Sequence[Expr], names: set[str]) -> bool:
    """Whether each of `conds` reads only constants and the scalars `names` (shape symbols and
    integer scalar parameters), through the operators `holds` evaluates, in integers and bools."""
    for cond in conds:
        for e in subexprs(cond):
            if not (e.dtype.is_int or e.dtype.is_bool):
                return False
            if isinstance(e, Var) and e.name not in names:
                return False
            if isinstance(e, BinOp) and e.op not in _ARITH and e.op not in _COMPARE and e.op not in _LOGIC:
                return False
            if isinstance(e, UnaryOp) and e.op not in ("-", "not"):
                return False
            if not isinstance(e, (Const, Var, BinOp, UnaryOp, Cast, Select)):
                return False
    return True


def holds(conds: Sequence[Expr], slots: dict[str, int]) -> Callable[[Sequence], bool] | None:
    """A function of a launch's values (indexed by `slots`) that is True where every one of
    `conds` holds, as the GPU computes it; None where they are not all `decidable`."""
    if not conds or not decidable(conds, set(slots)):
        return None

    def at(vals) -> bool:
        try:
            return all(bool(_value(c, vals, slots)) for c in conds)
        except _Undecided:
            return False
    return at


def _value(e: Expr, vals, slots: dict[str, int]):
    if isinstance(e, Const):
        v = e.value
    elif isinstance(e, Var):
        v = vals[slots[e.name]]
    elif isinstance(e, UnaryOp):
        x = _value(e.x, vals, slots)
        v = (not x) if e.op == "not" else -x
    elif isinstance(e, Select):
        v = _value(e.a, vals, slots) if _value(e.cond, vals, slots) else _value(e.b, vals, slots)
    elif isinstance(e, Cast):
        v = _value(e.x, vals, slots)
        v = bool(v) if e.dtype.is_bool else int(v)
    elif e.op in _LOGIC:  # short-circuit, as C's && and ||
        a = bool(_value(e.a, vals, slots))
        v = (a and bool(_value(e.b, vals, slots))) if e.op == "and" else (a or bool(_value(e.b, vals, slots)))
    else:
        a, b = _value(e.a, vals, slots), _value(e.b, vals, slots)
        if e.op in ("//", "%") and b == 0:
            raise _Undecided
        v = (_ARITH.get(e.op) or _COMPARE[e.op])(a, b)
    if e.dtype.is_int and not isinstance(v, bool):
        bits = e.dtype.bits
        lo, hi = (0, (1 << bits) - 1) if e.dtype.kind == "uint" else (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
        if not lo <= int(v) <= hi:  # the GPU would wrap: let it decide
            raise _Undecided
    return v
