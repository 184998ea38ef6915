"""Loops whose i32 counter a launch's sizes would step past i32 (or by 0): refused at the launch,
on every target, from the arguments' values (G's open item 3, session 27).

Why: a loop variable counts in i32 (LANGUAGE.md), and `for k in range(0, N, 64)` with N =
2**31 - 1 steps k to 2**31 after its last iteration: it wraps, k < N holds again and the loop
never ends on the cpu target, and is undefined behaviour on the GPU, where the interpreter's
Python range ends.  The type checker refuses constant bounds that do so (E157); bounds that only
the launch knows are checked here, before anything runs, in the words of E157.

Owns the check (`loop_error`) and its text.  Which loops a launch checks is the IR's
(`ir/stepped_loops.counted_loops`: a step other than a constant 1 or -1, without which a bound
that fits i32 cannot be stepped past, bounds that read only shape symbols and scalar parameters,
which the host knows, and a stop the sizes do not prove safe).  Loops whose bounds read a block
index, another loop's variable or memory are not checked here: each block computes its own
bounds (the cpu target counts such a loop in 64 bits, codegen/cpp/emit.py; the GPU's codegen
change that would do the same: notes/R.md).  The binders evaluate the bounds (runtime/args.py, interp/args.py);
the fast path hands a launch whose loop would not count to the general path (fastpath.py),
which raises; `tlc build`'s C launcher tests the same (codegen/host_grid.py's launcher_loops,
tl::HostGrid::loop_counter_fits).
"""
from __future__ import annotations

from ..ir.stepped_loops import I32_MAX, CountedLoop, constant, counted_loops  # noqa: F401 (the runtime's names)
from ..ir.walk import variables

I32_MIN = -I32_MAX - 1


def past(start: int, stop: int, step: int) -> int:
    """The value a `range(start, stop, step)` counter holds once its last iteration is done
    (`start` where it makes none)."""
    if (stop - start) * step <= 0:
        return start
    return start + -(-(stop - start) // step) * step


def counts_in_i32(start: int, stop: int, step: int) -> bool:
    """Whether a counter over these bounds (ints) counts and ends within i32."""
    return step != 0 and I32_MIN <= start <= I32_MAX and I32_MIN <= stop <= I32_MAX and \
        I32_MIN <= step <= I32_MAX and I32_MIN <= past(start, stop, step) <= I32_MAX


def loop_error(kernel: str, loop: CountedLoop, values: tuple, names: dict) -> str | None:
    """The error of `loop` of kernel `kernel` at these bound `values` (start, stop, step), or
    None where it counts within i32; `names` maps each name the bounds read to its value."""
    from ..ir.printer import expr as text

    start, stop, step = values
    if counts_in_i32(start, stop, step):
        return None
    if step == 0:  # the words of the interpreter's and the cpu target's error, where the loop runs
        return f"kernel '{kernel}': loop '{loop.var}' has step 0"
    where = f" ({loop.where})" if loop.where else ""
    read = dict.fromkeys(v.name for b in (loop.start, loop.stop, loop.step) for v in variables(b))
    sizes = ", ".join(f"{n} = {names[n]}" for n in read)
    head = f"kernel '{kernel}'{where}: range({', '.join(text(b) for b in (loop.start, loop.stop, loop.step))}) " \
           f"with {sizes}"
    for value in (start, stop, step):
        if not I32_MIN <= value <= I32_MAX:
            return f"{head} has the bound {value}, which does not fit i32, the type of the loop variable '{loop.var}'"
    return f"{head} steps the loop variable '{loop.var}' to {past(start, stop, step)} after its last iteration, " \
           f"which does not fit i32: the loop would not end"
