"""A fragment's store in a parallel loop that nothing reads past the loop before the fragment is
cleared again: a value of the loop's iteration, not a store.

std.gemm's block-scaled f8 GEMM at BN = 256 sums two 128-column halves' products into one
partial-sum fragment a K step, each half scaled and added by

    fill part = 0.0                              fill part = 0.0
    gemm part += As @ Bs.T                       gemm part += As @ Bs.T
    for i, j in parallel(128, 128):      ->      for i, j in parallel(128, 128):
      part[i, j] = part[i, j] * (...)              let tl_part: f32 = part[i, j] * (...)
      acc[i, j] = acc[i, j] + part[i, j]           acc[i, j] = acc[i, j] + tl_part
    fill part = 0.0                              fill part = 0.0
    ...                                          ...

The scaled value is read only by its own iteration, and the fragment's next use clears it (the
second half's `fill`, or, after the loop's last statement, the next iteration's first), so the
same values reach the same statements.  With no store left, nothing but its gemms writes the
fragment, which the sm_90a code generator then clears by the gemm's first K step's scale-d 0 on
the registers the last gemm left (scale_d_clears.py RING_SCALE_D_TIED): ptxas keeps one 64-register
window for both halves' products.  With the store kept (or the clear's instruction only writing
the registers, "=f"), it placed the halves' products in different windows and moved the two
accumulators' values around them through local memory: 204 bytes of spills a thread at 3 and 4
stages as the runtime builds the kernel (TL_TMA_FLAGS, nvcc 13.0 and NVRTC 13.5), 284 for the
grouped (MoE) kernel's; none with this pass, 128 FFMA a K step as before.

A store qualifies where it is the loop's only store to the fragment, at the top of its body,
at the loop's own index (`part[i, j]` in `for i, j in parallel(...)`), every read of the fragment
in the loop at that index, and the next statement after the loop (in a loop body: going round
to its start; after the loop: the code after it) that reads or writes the fragment is a whole
`fill` of it, or none reads it at all.  DEAD_FRAGMENT_STORES: "shared" (the default) rewrites
only fragments that two or more gemms of the loop accumulate into (one partial-sum fragment for
several products: no default kernel of std or the examples has one, so their code is unchanged);
"all" every such store; "none" none.
"""
from __future__ import annotations

from dataclasses import replace

from .. import ir
from ..ir.walk import loads, mapped, named_buffers, statement_exprs, statements, stmts_mapped
from .column_blocks import fresh_name

DEAD_FRAGMENT_STORES = "shared"


def drop_dead_fragment_stores(kernel: ir.Kernel) -> ir.Kernel:
    """`kernel` with the fragment stores of the module's docstring made values of their loops."""
    if DEAD_FRAGMENT_STORES == "none":
        return kernel
    fragments = {b.name: b for b in kernel.buffers if b.scope == "fragment"}
    taken = {b.name for b in kernel.buffers} | {p.name for p in kernel.params} | set(kernel.block_vars) \
        | set(kernel.shape_symbols()) \
        | {s.name for s in statements(kernel.body) if isinstance(s, (ir.LetScalar, ir.Assign))} \
        | {s.var for s in statements(kernel.body) if isinstance(s, ir.For)} \
        | {v for s in statements(kernel.body) if isinstance(s, ir.Parallel) for v in s.vars}
    body = list(kernel.body)
    changed = False
    for n, loop in enumerate(body):
        if not isinstance(loop, ir.For) or loop.kind == "while":
            continue
        gemms = [s.c for s in loop.body if isinstance(s, ir.Gemm)]
        summed = {c for c in gemms if gemms.count(c) >= 2}
        chosen = set(fragments) & (summed if DEAD_FRAGMENT_STORES == "shared" else set(fragments))
        new = list(loop.body)
        for m, s in enumerate(new):
            if not isinstance(s, ir.Parallel):
                continue
            for f in sorted(chosen):
                if _dead_after(f, new[m + 1:], body[n + 1:], new[:m + 1]):
                    s = _as_value(s, fragments[f], taken)
            if s is not new[m]:
                new[m] = s
                changed = True
        body[n] = replace(loop, body=tuple(new))
    return replace(kernel, body=tuple(body)) if changed else kernel


def _touches(s: ir.Stmt, f: str) -> bool:
    """Whether statement `s` (nested ones included) reads or writes fragment `f`."""
    return any(f in named_buffers(x) or any(y.name == f for e in statement_exprs(x) for y in loads(e))
               for x in statements((s,)))


def _dead_after(f: str, rest, past, again) -> bool:
    """Whether the values of `f` a loop body's statement leaves are never read: the first
    statement touching `f` among the `rest` of the body is a whole fill of it (not nested, so it
    runs on every path), or none is and the same holds both `past` the loop and for its next
    iteration, `again` (the body up to that statement, which reads it there unless cleared)."""
    def cleared(stmts):
        for s in stmts:
            if isinstance(s, ir.Fill) and s.buffer == f:
                return True
            if _touches(s, f):
                return False
        return None  # nothing touches it
    first = cleared(rest)
    return first if first is not None else cleared(past) is not False and cleared(again) is not False


def _as_value(p: ir.Parallel, f: ir.Buffer, taken: set) -> ir.Parallel:
    """`p` with its store to fragment `f` a scalar of the iteration and the reads after it that
    scalar, where the loop covers `f` and the store and every read are at the loop's own index;
    else `p` as it is."""
    dtype, covered, f = f.dtype, tuple(p.extents) == tuple(f.shape), f.name
    stores = [s for s in statements(p.body) if isinstance(s, ir.Store) and s.name == f]
    if not covered or len(stores) != 1 or not any(s is stores[0] for s in p.body) \
            or not _at(stores[0].indices, p.vars) or stores[0].value.dtype != dtype:
        return p
    if any(f in named_buffers(x) and not isinstance(x, ir.Store) for x in statements(p.body)):
        return p  # a copy, reduction or gemm of the fragment inside the loop
    if not all(_at(y.indices, p.vars) for x in statements(p.body) for e in statement_exprs(x) for y in loads(e)
               if y.name == f):
        return p
    store = stores[0]
    at = next(i for i, s in enumerate(p.body) if s is store)
    value = ir.Var(fresh_name(f"tl_{f}", taken), dtype)

    def sub(e):
        return value if isinstance(e, ir.Load) and e.name == f else e
    rest = stmts_mapped(p.body[at + 1:], lambda e: mapped(e, sub))
    return replace(p, body=(*p.body[:at], ir.LetScalar(value.name, dtype, store.value, span=store.span), *rest))


def _at(indices, names) -> bool:
    """Whether `indices` are exactly the loop variables `names`, in order."""
    return len(indices) == len(names) and all(isinstance(i, ir.Var) and i.name == v for i, v in zip(indices, names))
