"""Loads a pipelined loop's body makes every iteration, read an iteration ahead.

std.gemm's block-scaled f8 GEMM reads each K step's scales, SB[nb, k] and SA[row, k] for the
rows a thread holds, to scale the step's partial sums.  On sm_90a those loads issue under the
step's first wgmma and the scales are multiplied right after its last one (sm_90a SASS: the
FMUL before the WARPGROUP.DEPBAR), so every K step waits there for an L2 round trip the wgmma
may not cover.  Read an iteration ahead, each value was loaded a whole K step earlier:

    s = SB[nb, k]                         let tl_pf: f32 = 0.0      (before the loop)
    ...                          ->       if k == 0: tl_pf = SB[nb, 0]
                                          s = tl_pf
                                          tl_pf = SB[nb, k + 1]     (past the end: unused)

and a tensor read in a parallel loop over rows and columns whose index reads the row and the
loop variable (a scale per row) becomes a fragment of one value a row (laid out as the loop's
rows: layout_infer.py), read at the first iteration and refilled for the next at the body's end:

    for i, j in parallel(BM, BN):         if k == 0: for i in parallel(BM): tl_pf_SA[i] = SA[r + i, 0]
        ... SA[r + i, k] ...       ->     for i, j in parallel(BM, BN): ... tl_pf_SA[i] ...
                                          for i in parallel(BM): tl_pf_SA[i] = SA[r + i, k + 1]

The same values reach the same statements (the tensor is read-only in the kernel and the
index's other names are fixed across the loop); an index past the tensor's end reads 0 and is
never used.  Only where the target runs the loop's gemm on warpgroup tensor cores (the loads
then issue under it) and PREFETCH_RING_LOADS is on: not timed on the GPU yet (bench/f8bs_probe.tl's
bs_pf is this rewrite written out; bench/queue/E_f8bs.sh), so off by default.  The loop: a
top-level `pipelined` loop from 0 by 1 whose body holds a gemm and no break or continue; its
leading copies stay first (they are a ring's producers).
"""
from __future__ import annotations

from dataclasses import replace

from .. import ir
from ..dtypes import BOOL, I32
from ..ir.walk import (assigned_scalars, mapped, statement_exprs, statements, stmts_mapped, subexprs, variables,
                       written_names)
from .column_blocks import fresh_name

PREFETCH_RING_LOADS = False


def prefetch_loads(kernel: ir.Kernel, target) -> ir.Kernel:
    """`kernel` with its pipelined loop's per-iteration tensor loads read an iteration ahead
    (the module's docstring), where PREFETCH_RING_LOADS is on and `target` has wgmma."""
    if not (PREFETCH_RING_LOADS and target.wgmma):
        return kernel
    for index, loop in enumerate(kernel.body):
        if _candidate(loop):
            new = _Prefetch(kernel, loop).rewrite()
            if new is None:
                return kernel
            body, lets, buffers = new
            out = list(kernel.body)
            out[index:index + 1] = [*lets, body]
            return replace(kernel, body=tuple(out), buffers=kernel.buffers + tuple(buffers))
    return kernel


def _candidate(s) -> bool:
    return isinstance(s, ir.For) and s.kind == "pipelined" and s.stages > 1 \
        and isinstance(s.start, ir.Const) and s.start.value == 0 and isinstance(s.step, ir.Const) \
        and s.step.value == 1 and any(isinstance(x, ir.Gemm) for x in s.body) \
        and not any(isinstance(x, (ir.Break, ir.Continue)) for x in statements(s.body))


class _Prefetch:
    def __init__(self, kernel: ir.Kernel, loop: ir.For):
        self.k, self.loop = kernel, loop
        params = {p.name: p for p in kernel.params}
        written = written_names(kernel.body)
        self.tensors = {n for n, p in params.items() if p.kind == "tensor" and n not in written}
        self.inner = assigned_scalars(loop.body) | {s.var for s in statements(loop.body) if isinstance(s, ir.For)}
        self.taken = {b.name for b in kernel.buffers} | set(params) | set(kernel.block_vars) \
            | set(kernel.shape_symbols()) | assigned_scalars(kernel.body) \
            | {s.var for s in statements(kernel.body) if isinstance(s, ir.For)} \
            | {v for s in statements(kernel.body) if isinstance(s, ir.Parallel) for v in s.vars}
        self.kvar = ir.Var(loop.var, I32)

    def fixed(self, x: ir.Load, also: set) -> bool:
        """Whether load `x` reads a read-only tensor at an index of the loop variable, `also`
        and names the loop does not change, and of the loop variable at least."""
        if x.name not in self.tensors or any(isinstance(y, ir.Load) for i in x.indices for y in subexprs(i)):
            return False
        names = {v.name for i in x.indices for v in variables(i)}
        return self.loop.var in names and not (names - {self.loop.var} - also) & self.inner

    def at(self, x: ir.Load, k: ir.Expr) -> ir.Load:
        """`x` with the loop variable read as `k`."""
        def sub(e):
            return k if isinstance(e, ir.Var) and e.name == self.loop.var else e
        return replace(x, indices=tuple(mapped(i, sub) for i in x.indices))

    def rewrite(self):
        """(the loop rewritten, the scalars to declare before it, the fragments to add), or None
        where it reads nothing to prefetch."""
        body = list(self.loop.body)
        lead = 0
        while lead < len(body) and isinstance(body[lead], (ir.Copy, ir.Sync)):
            lead += 1
        first, after, lets, buffers = [], [], [], []
        rows: dict = {}  # a per-row load -> its fragment (one for the loops that read it alike)
        zero, next_k = ir.Const(0, I32), ir.BinOp("+", self.kvar, ir.Const(1, I32), I32)
        for n, s in enumerate(body):
            if n < lead:
                continue
            if isinstance(s, (ir.Assign, ir.LetScalar)) and isinstance(s.value, ir.Load) and self.fixed(s.value, set()):
                name = fresh_name(f"tl_pf_{s.value.name}", self.taken)
                lets.append(ir.LetScalar(name, s.value.dtype, ir.Const(0.0 if s.value.dtype.kind == "float" else 0,
                                                                        s.value.dtype)))
                first.append(ir.Assign(name, self.at(s.value, zero)))
                keep = ir.Assign(s.name, ir.Var(name, s.value.dtype)) if isinstance(s, ir.Assign) else \
                    replace(s, value=ir.Var(name, s.value.dtype))
                body[n] = (keep, ir.Assign(name, self.at(s.value, next_k)))  # (two statements in its place)
            elif isinstance(s, ir.Parallel) and len(s.vars) == 2:
                row = s.vars[0]
                found: dict = {}
                for x in (x for t in statements(s.body) for e in statement_exprs(t) for x in subexprs(e)):
                    if isinstance(x, ir.Load) and x not in found and self.fixed(x, {row}) and \
                            row in {v.name for i in x.indices for v in variables(i)} and \
                            s.vars[1] not in {v.name for i in x.indices for v in variables(i)}:
                        found[x] = rows.get((x, s.extents[0]))
                if not found:
                    continue
                i = ir.Var(row, I32)
                for x, name in found.items():
                    if name is not None:
                        continue
                    name = found[x] = rows[(x, s.extents[0])] = fresh_name(f"tl_pf_{x.name}", self.taken)
                    buffers.append(ir.Buffer(name, "fragment", x.dtype, (s.extents[0],)))
                    first.append(ir.Parallel((row,), (s.extents[0],), (ir.Store(name, (i,), self.at(x, zero)),)))
                    after.append(ir.Parallel((row,), (s.extents[0],), (ir.Store(name, (i,), self.at(x, next_k)),)))
                swap = {x: ir.Load(name, (i,), x.dtype) for x, name in found.items()}
                body[n] = replace(s, body=stmts_mapped(s.body, lambda e: mapped(e, lambda y: swap.get(y, y))))
        if not first:
            return None
        flat = []
        for s in body:
            flat.extend(s if isinstance(s, tuple) else (s,))
        start = ir.If(ir.BinOp("==", self.kvar, zero, BOOL), tuple(first))
        new = (*flat[:lead], start, *flat[lead:], *after)
        return replace(self.loop, body=new), lets, buffers

