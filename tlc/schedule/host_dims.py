"""Which dimension expressions of tensor parameters the launch computes (a schedule decision,
recorded as `ir.DimExpr.arg` and shown by `--emit ir` as a note and in the kernel's signature).

A parameter typed with an expression of shape symbols (std.attention's LSE f32[B, HK * (H // HK), S])
indexes with that expression: a kernel computing it itself divides by a run-time value (a
sequence of some 20 instructions, each path of `tl::floordiv`) and keeps the quotient live from
where it is first needed to the store that reads it, across the loops (FlashAttention 3's
192 x 192 tile with P in shared memory: 12 bytes spilled around its warpgroups' register
reallocation, 53146a1).  Every launch already knows the value, since it checks the array's size
against the expression before anything runs (runtime/args.py, its fast path, the interpreter's
and the cpu target's binder); with `HOST_DIMS` on, such an expression reaches the kernel as one
more i32 argument instead, computed once per launch (the C launcher: the same checked host
arithmetic as its grid, an expression that divides by zero or leaves 0..2**31-1 returning
cudaErrorInvalidValue), and the kernel reads it as it reads a shape symbol.

Only an expression that divides by a run-time value (`//` or `%` whose divisor is not a constant)
is passed: one of constant divisors (`K // 2`, `cdiv(K, 128)`) is a shift or a multiply that the
kernel computes where it is used as cheaply as it reads an argument.
"""
from __future__ import annotations

from dataclasses import replace

from .. import ir
from ..ir.nodes import DimExpr
from ..ir.walk import divides_at_run_time

# Which kernels' dimension expressions that divide by a run-time value the launch computes: False
# (none: the kernel computes them), "warp_specialized" (a kernel whose loop warp specialization
# made a producer/consumer ring, where a value computed before the roles split and read after it
# must live across the consumers' setmaxnreg: the 12 bytes above), "all" (every kernel).  Where
# the kernel has no such split, ptxas may load the argument early and hold it instead: std's
# flash_fwd on sm_80, D = 128, 246 -> 255 registers and 48 bytes spilled with "all".  Off until
# the H200 has timed "warp_specialized" (bench/queue/S_host_dims.sh): its 21 std builds keep their
# registers and spill nothing more, but one IMAD.MOV.U32 joins flash_fwd's main loop at two tiles
# config.json does not pick on sm_90a (D=64 at BM=128 BN=128, D=128 at BN=80 STAGES=2).
HOST_DIMS: bool | str = False


def pass_dims_from_launch(kernel: ir.Kernel) -> ir.Kernel:
    """`kernel` whose dimension expressions that divide by a run-time value are arguments the
    launch computes, `tl_dim0`, `tl_dim1`, ... (one per distinct expression)."""
    if not HOST_DIMS or HOST_DIMS == "warp_specialized" and kernel.warp_spec is None:
        return kernel
    names: dict[tuple, str] = {}  # (text, expr) -> its argument

    def hoisted(d):
        if not isinstance(d, DimExpr) or d.arg or not divides_at_run_time(d.expr):
            return d
        arg = names.setdefault((d.text, d.expr), f"tl_dim{len(names)}")
        return replace(d, arg=arg)

    params = tuple(replace(p, shape=tuple(hoisted(d) for d in p.shape)) if p.kind == "tensor" else p
                   for p in kernel.params)
    if not names:
        return kernel
    notes = tuple(f"the launch computes {text} once and passes it as {arg} (it divides by a run-time "
                  f"value: schedule/host_dims.py)" for (text, _), arg in names.items())
    return replace(kernel, params=params, notes=kernel.notes + notes)
