"""Fragment elements used as scalars outside parallel loops: which fragments every thread holds
whole, and the errors where a use needs data that not every thread holds (layout inference's
part, layout_infer.py; LANGUAGE.md, "Buffers inside the grid").

Outside a parallel loop every thread of the block runs the statement, so a fragment element
read there must be held by every thread, in one register (`uniform_register`: a reduction's
result, a fragment of one element), and one written there must be held by every thread, each
writing its own replica.  A fragment of one dimension that no gemm or reduction lays out, read
at an index known only at run time or written outside parallel (`if block_mask[k]:`,
`dA_cs_last[0] = ...`, as TileLang's examples do), is held whole in every thread (`everywhere`:
element i in register i), when that costs at most REPLICA_BYTES of registers a thread: a copy
then loads it whole into every thread and a copy out writes it once.  Past that, or for a
fragment laid out over the threads by a gemm or reduction, the use is E059 (a write), E260 (a
read at a constant index) or E261 (at a run-time index), saying why and what to write instead.
"""
from __future__ import annotations

from .. import ir
from ..diagnostics import Diagnostic, DiagnosticError
from ..ir.walk import loads, statement_exprs, statements
from .layout import Replicated, everywhere, held_whole, uniform_register

# What a thread may spend on one fragment held whole (128 registers, half of what a thread has):
# a mask of 512 bool blocks (a 32768-token sequence in blocks of 64), 128 f32 scalars.  A run-time index into registers makes nvcc keep the array in
# the thread's local memory (cached, but slower than registers), so larger arrays belong in
# shared memory, which every thread reads at any index.
REPLICA_BYTES = 512


def scalar_uses(kernel: ir.Kernel) -> list[tuple[str, tuple, bool, object]]:
    """(fragment, indices, written?, span) of every fragment element read or written outside
    parallel loops, in order."""
    frags = {b.name for b in kernel.buffers if b.scope == "fragment"}
    out = []
    for s in _outside_parallel(kernel.body):
        for e in statement_exprs(s):
            out.extend((x.name, x.indices, False, x.span) for x in loads(e) if x.name in frags)
        if isinstance(s, ir.Store) and s.name in frags:
            out.append((s.name, s.indices, True, s.span))
    return out


def replicas(kernel: ir.Kernel) -> dict:
    """fragment -> `everywhere` for the fragments every thread holds whole: those of one
    element that not every thread holds as laid out so far (a default blocked layout: one
    thread; a reduction over a source that only some threads hold) and that no gemm reads or
    writes (a replica each, written to memory by one; a reduction finishes into every thread,
    a copy fills every replica); and those a use outside parallel needs whole that can be
    (`why_not_whole`)."""
    uses = scalar_uses(kernel)
    roles = _roles(kernel)
    out = {}
    for b in kernel.buffers:
        if b.scope != "fragment":
            continue
        if b.shape == (1,) and roles.get(b.name) not in ("gemm", "reduce_src") \
                and uniform_register(b.layout, (0,), kernel.threads) is None:
            out[b.name] = everywhere(kernel.threads)
        elif any(n == b.name and not _served(b, idx, kernel.threads) for n, idx, _, _ in uses) \
                and why_not_whole(b, roles.get(b.name)) is None:
            out[b.name] = everywhere(kernel.threads, b.shape[0])
    return out


def notes(kernel: ir.Kernel, chosen: dict) -> tuple[str, ...]:
    """--emit ir's note for each fragment of more than one element held whole, with the use
    that asked for it."""
    out = []
    for b in kernel.buffers:
        if b.name not in chosen or b.shape == (1,):
            continue
        name, idx, write, span = next(u for u in scalar_uses(kernel) if u[0] == b.name)
        where = f" at line {span.line}" if span is not None else ""
        out.append(f"fragment {b.name} is held whole in every thread ({b.shape[0]} x {b.dtype.name}, "
                   f"{b.shape[0] * b.dtype.itemsize} bytes a thread): {_text(name, idx)} is "
                   f"{'written' if write else 'read'} outside a parallel loop{where}")
    return tuple(out)


def why_not_whole(b: ir.Buffer, role: str | None) -> str | None:
    """Why fragment `b` cannot be held whole in every thread, or None when it can."""
    if role == "gemm":
        return "it is an operand of a gemm, which lays it out over the threads"
    if role == "reduce_src":
        return "it is the source of a reduction, which reads it spread over the threads"
    if role == "reduce_dst":
        return "it holds a reduction's result, laid out as the reduction's source"
    if len(b.shape) != 1:
        return f"only a fragment of one dimension is held whole in every thread, and it has {len(b.shape)}"
    size = b.shape[0] * b.dtype.itemsize
    if size > REPLICA_BYTES:
        return (f"holding it whole in every thread would take {size} bytes of each thread's registers, over the "
                f"{REPLICA_BYTES} that tlc spends on one fragment")
    return None


def check_scalar_uses(kernel: ir.Kernel, sources: dict | None) -> None:
    """E059 / E260 / E261 for each fragment element used outside a parallel loop that not
    every thread holds where the use needs it."""
    frags = {b.name: b for b in kernel.buffers if b.scope == "fragment"}
    roles = _roles(kernel)
    errors = []
    for name, idx, write, span in scalar_uses(kernel):
        b = frags[name]
        if not _served(b, idx, kernel.threads, write):
            errors.append(_error(b, idx, write, span, roles.get(name), kernel.threads))
    if errors:
        raise DiagnosticError(errors, sources)


def _served(b: ir.Buffer, indices, threads: int, write: bool = False) -> bool:
    """Whether every thread holds `b[indices]` in one register its layout gives: at constant
    indices, uniform_register's (out of range: nothing is read or written, as everywhere); at
    run-time ones, a fragment held whole, or of one element that every thread holds."""
    if all(isinstance(i, ir.Const) for i in indices):
        index = tuple(i.value for i in indices)
        return any(not 0 <= i < d for i, d in zip(index, b.shape)) \
            or uniform_register(b.layout, index, threads) is not None
    if held_whole(b.layout):
        return True
    return b.shape == (1,) and uniform_register(b.layout, (0,), threads) is not None


def _error(b: ir.Buffer, idx, write: bool, span, role, threads: int) -> Diagnostic:
    text = _text(b.name, idx)
    reason = why_not_whole(b, role)
    dims = ", ".join(map(str, b.shape))
    if write:
        return Diagnostic("E059", f"{text} is written outside a parallel loop, but the fragment '{b.name}' is spread "
                          f"over the threads ({b.layout}): {reason}", span,
                          f"write it inside `for ... in parallel({dims})`, or set every element with fill(...); "
                          f"a fragment of one dimension that no gemm or reduction lays out, up to {REPLICA_BYTES} "
                          "bytes, is held whole in every thread and written anywhere")
    if not all(isinstance(i, ir.Const) for i in idx):
        return Diagnostic("E261", f"{text} reads an element of the fragment '{b.name}' ({b.layout}) outside a parallel "
                          "loop at an index known only at run time, which needs every thread to hold the whole "
                          f"fragment, but {reason}", span,
                          f"read it inside `for ... in parallel({dims})`, where each thread reads the elements it "
                          "holds, or keep it in a shared buffer, which every thread reads at any index")
    if isinstance(b.layout, Replicated):
        why = (f"it is replicated over only the threads that held its source ({b.layout}), so not every thread "
               f"holds {text}")
        fix = ("give the reduction a source that every thread holds part of (a row of at least "
               "threads x vector-width elements), or read it inside a parallel loop")
    else:
        why = f"its layout {b.layout} spreads it over the threads, so one thread holds {text}"
        fix = (f"reduce it into a fragment whose every thread holds the result (reduce_sum({b.name}, total, dim=...)"
               f" into `total = fragment({b.dtype.name}[1])`) and read total[0], or read it inside a parallel loop")
    return Diagnostic("E260", f"{text} is read outside a parallel loop, but {why}", span, fix)


def _roles(kernel: ir.Kernel) -> dict:
    """fragment -> what lays it out over the threads: "gemm" (an operand), "reduce_src", or
    "reduce_dst"; fragments of none are left out."""
    roles: dict = {}
    for s in statements(kernel.body):
        if isinstance(s, ir.Gemm):
            roles.update({x: "gemm" for x in (s.a, s.b, s.c)})
        elif isinstance(s, ir.Reduce):
            roles.setdefault(s.src, "reduce_src")
            roles.setdefault(s.dst, "reduce_dst")
    return roles


def _text(name: str, indices) -> str:
    from ..ir.printer import expr
    return f"{name}[{', '.join(expr(i) for i in indices)}]"


def _outside_parallel(stmts):
    for s in stmts:
        if isinstance(s, ir.Parallel):
            continue
        yield s
        for f in ("body", "then", "orelse"):
            yield from _outside_parallel(getattr(s, f, ()))
