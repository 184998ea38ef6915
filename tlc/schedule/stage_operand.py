"""A register operand through shared memory, where that lets its product stay in flight.

A warp-specialized ring's consumers issue each wgmma gemm without waiting and wait where a
later statement needs its result (codegen/sm90.py); the ring's last product can even stay in
flight into the next iteration (warpspec.py's `carried_gemms`), the tensor cores running it
under the next iteration's first products rather than draining at every step's end.  A product
whose A is a fragment (wgmma's register-A form: attention backward's dK += dS.T @ Q) cannot:
its A registers would be held across the next iteration's scores, more registers than a
warpgroup has (ptxas serializes the wgmmas, C7512).  FlashAttention 3's backward writes dS to
shared memory for that reason.  This pass does the same where it pays off: in the kernel's
ring loop (its first top-level pipelined loop, of three stages or more, on a target with wgmma
and the TMA), whose last statement is a gemm with a 16-bit fragment A in wgmma's register-A
layout that accumulates across iterations, after another gemm that runs between the loop's
first gemm and it (so that no deferred gemm takes the loop: warpspec.py's `deferred_gemm`), A is
copied into a shared buffer of its shape (`<a>_shared`) right before the gemm, which then reads
it from there: `copy(ds_t, ds_t_shared); gemm(ds_t_shared, q_tile, dk)` in the tile IR.  Each
warpgroup writes the rows its own wgmma reads.  Left alone where the buffer does not fit the
target's shared memory.  The values are the same (the fragment is already rounded to 16 bits).
"""
from __future__ import annotations

from dataclasses import replace

from .. import ir, targets
from ..diagnostics import DiagnosticError
from ..ir.walk import statements
from .operand_layout import register_a_layouts


def stage_carried_operand(kernel: ir.Kernel, target: str, limit: int, sources=None) -> ir.Kernel:
    """`kernel` with its ring's last register-A product reading A from shared memory (the
    module docstring says where), or `kernel` itself."""
    t = targets.get(target)
    if not (t.wgmma and t.tma) or kernel.threads % 128:
        return kernel
    index = next((i for i, s in enumerate(kernel.body) if isinstance(s, ir.For) and s.kind == "pipelined"
                  and s.stages > 1), None)
    if index is None or kernel.body[index].stages < 3:
        return kernel
    loop = kernel.body[index]
    body = list(loop.body)
    last = body[-1] if body else None
    buffers = {b.name: b for b in kernel.buffers}
    if not isinstance(last, ir.Gemm) or last.trans_a:
        return kernel
    a, c = buffers[last.a], buffers[last.c]
    if a.scope != "fragment" or a.dtype.bits != 16 or buffers[last.b].scope != "shared" or c.dtype.name != "f32":
        return kernel
    if register_a_layouts(last, buffers, kernel.threads, target) != (a.layout, c.layout):
        return kernel  # not wgmma's register-A form
    gemms = [i for i, s in enumerate(body) if any(isinstance(x, ir.Gemm) for x in statements([s]))]
    if len(gemms) < 3:
        return kernel  # the loop's first gemm and this one alone: the deferred gemm's case
    # accumulates across iterations: nothing in the loop clears or writes its accumulator
    if any(isinstance(x, ir.Fill) and x.buffer == last.c for x in statements(body)):
        return kernel
    name = _fresh(f"{a.name}_shared", buffers)
    staged = ir.Buffer(name, "shared", a.dtype, a.shape, span=a.span)
    copy = ir.Copy(ir.BufferRef(a.name, span=last.span), ir.BufferRef(name, span=last.span), span=last.span)
    loop = replace(loop, body=tuple(body[:-1]) + (copy, replace(last, a=name)))
    out = replace(kernel, buffers=kernel.buffers + (staged,), body=kernel.body[:index] + (loop,) + kernel.body[index + 1:])
    from .smem import plan_shared_memory
    from .warpspec import wgmma_ready

    try:
        planned = plan_shared_memory(out, limit, sources)
    except DiagnosticError:
        return kernel  # it would not fit: the product keeps A in registers
    # and wgmma reads it there (whole 128-byte rows, swizzled), as it reads B
    if not wgmma_ready(replace(last, a=name), {b.name: b for b in planned.buffers}, kernel.threads):
        return kernel
    return out


def _fresh(name: str, buffers: dict) -> str:
    out, n = name, 1
    while out in buffers:
        n += 1
        out = f"{name}{n}"
    return out
