"""The shared-memory plan: each shared buffer's size (with pipeline stages and bank-conflict
padding or swizzle), its offset, reuse of the bytes of buffers whose lifetimes do not
overlap, and the total against the target's limit."""
from __future__ import annotations

import itertools
import math
from dataclasses import replace

from .. import ir
from ..frozen import frozen
from ..ir.walk import statement_exprs, statements, subexprs
from ..diagnostics import Diagnostic, DiagnosticError

ALIGN = 128  # bytes: 16-byte vector accesses, and a whole bank row
SWIZZLE_ALIGN = 1024  # a swizzled tile starts on its pattern's period (8 lines of 128 bytes): wgmma needs it
SM80_LIMIT = 163 * 1024  # the most dynamic shared memory one block may opt into (A100)
SM90_LIMIT = 227 * 1024  # ... on Hopper (H100, H200)


class SharedMemoryOverLimit(DiagnosticError):
    """E070, with its numbers in bytes: what the kernel needs and what the target has (for
    fit.py, which then tries smaller default constants)."""

    def __init__(self, diagnostics, sources, needed: int, limit: int):
        super().__init__(diagnostics, sources)
        self.needed, self.limit = needed, limit


@frozen
class SharedLayout:
    """How a shared buffer is laid out: `stages` copies (pipelining); a 2-D buffer's rows are
    padded by `pad` elements or XOR-swizzled in 16-byte chunks over `swizzle_bytes`."""

    stages: int = 1
    pad: int = 0
    swizzle_bytes: int = 0
    bytes: int = 0

    def __str__(self) -> str:
        parts = [f"{self.bytes} B"]
        if self.stages > 1:
            parts.append(f"stages={self.stages}")
        if self.pad:
            parts.append(f"pad={self.pad}")
        if self.swizzle_bytes:
            parts.append(f"swizzle={self.swizzle_bytes}B")
        return ", ".join(parts)


def plan_shared_memory(kernel: ir.Kernel, limit: int = SM90_LIMIT, sources: dict | None = None) -> ir.Kernel:
    shared = [b for b in kernel.buffers if b.scope == "shared"]
    if not shared:
        return kernel
    gemm_operands = {x for s in statements(kernel.body) if isinstance(s, ir.Gemm) for x in (s.a, s.b)}
    lifetimes = _lifetimes(kernel.body)
    for gathers in (True, False):  # a gather's stages only where they fit: else it runs in place, as before
        stages = _pipeline_stages(kernel, gathers)
        layouts = {}
        for b in shared:
            layouts[b.name] = _layout(b, stages.get(b.name, 1), b.name in gemm_operands)
        offsets = _place(shared, layouts, lifetimes)
        total = max((offsets[b.name] + layouts[b.name].bytes for b in shared), default=0)
        if total <= limit:
            break
    if total > limit:
        parts = ", ".join(f"{b.name} ({_describe(b, layouts[b.name])})" for b in
                          sorted(shared, key=lambda b: -layouts[b.name].bytes))
        raise SharedMemoryOverLimit([Diagnostic(
            "E070", f"kernel '{kernel.name}' needs {kb(total)} of shared memory, more than the {kb(limit)} the target "
            f"allows: {parts}", kernel.span,
            "use smaller tiles (BM, BN, BK) or fewer pipeline stages")], sources or {}, total, limit)
    buffers = tuple(replace(b, layout=layouts[b.name], smem_offset=offsets[b.name]) if b.scope == "shared" else b
                    for b in kernel.buffers)
    return replace(kernel, buffers=buffers, smem_bytes=total)


# A gemm operand's rows that are an even number of 16-byte chunks but neither swizzled nor a
# multiple of 128 bytes (the ResNet stem's 128 x 160 im2col tile: rows of 320 bytes, 20 chunks)
# put ldmatrix's 8 rows of a read on 2 of the 8 bank groups, a 4-way conflict: with ODD_CHUNK_ROWS
# each row is padded by 16 bytes (21 chunks: 8 rows on 8 groups).  On since the H200 timed it (session
# 28, bench/results/q_F_conv_1x1_gemm-h200-twentyeighth.txt, batch 64, outputs checked): the stem 49.9 ->
# 75.6 TFLOP/s, 0.53x -> 0.80x cuDNN.  It pads the stem's operands only (scripts/options-flip: 5 of
# 1,990 std builds, all conv2d at C 3, K 7; the same registers).
ODD_CHUNK_ROWS = True


def _layout(b: ir.Buffer, stages: int, gemm_operand: bool) -> SharedLayout:
    item = b.dtype.itemsize
    pad = swizzle = 0
    rows = math.prod(b.shape[:-1]) if b.shape else 1
    if len(b.shape) >= 2:
        row = b.shape[-1] * item
        if gemm_operand and (row % 128 == 0 or (row % 16 == 0 and 128 % row == 0)) and (rows * row) % 1024 == 0:
            # ldmatrix reads 8 rows x 16 bytes at once: permuting the 16-byte chunks (see
            # tl::smem_index) spreads any 8 consecutive rows over all banks.
            swizzle = 128
        elif row % 128 == 0:
            pad = max(1, 16 // item)  # column-wise access of a row-major tile: shift each row by 16 bytes
        elif ODD_CHUNK_ROWS and gemm_operand and row % 32 == 0:
            pad = max(1, 16 // item)  # an odd number of 16-byte chunks a row: ldmatrix's 8 rows on 8 bank groups
    one = rows * (b.shape[-1] + pad) * item
    return SharedLayout(stages, pad, swizzle, _align(one, SWIZZLE_ALIGN if swizzle else ALIGN) * stages)


def _pipeline_stages(kernel: ir.Kernel, gathers: bool = True) -> dict[str, int]:
    """Shared buffers filled from global memory by copies inside a pipelined loop, or (with
    `gathers`) by the row gathers that lead one (gather_rows.py), need one copy per stage; one
    a fragment is copied into (flash attention's probabilities, MLA's) is written and read in
    its iteration and needs one."""
    from .gather_rows import dst_name, leading

    params, buffers = {p.name: p for p in kernel.params}, {b.name: b for b in kernel.buffers}
    out: dict[str, int] = {}
    for s in statements(kernel.body):
        if isinstance(s, ir.For) and s.kind == "pipelined" and s.stages > 1:
            filled = [c.dst.name for c in statements(s.body) if isinstance(c, ir.Copy)
                      and isinstance(c.dst, (ir.BufferRef, ir.Region)) and getattr(c.src, "name", None) not in buffers]
            if gathers:
                filled += [dst_name(g) for g in leading(s, params, buffers) if isinstance(g, ir.Parallel)]
            for name in filled:
                out[name] = max(out.get(name, 1), s.stages)
    return out


def _lifetimes(body) -> dict[str, tuple[int, int]]:
    """First and last position at which each buffer is touched.  Each top-level statement is a
    position, a loop whole (a buffer used anywhere in a loop lives through all of it); the
    statements of a top-level `if` take positions of their own, its branches one after the
    other: only one of them runs, so a buffer used in one branch alone (allocated there, say:
    typecheck/placement.py) shares bytes with those of the other."""
    out: dict[str, tuple[int, int]] = {}
    position = itertools.count()

    def touch(names, i):
        for name in names:
            lo, hi = out.get(name, (i, i))
            out[name] = (min(lo, i), max(hi, i))

    def visit(stmts):
        for s in stmts:
            if isinstance(s, ir.If):
                touch({y.name for y in subexprs(s.cond) if isinstance(y, ir.Load)}, next(position))
                visit(s.then)
                visit(s.orelse)
            else:
                touch(_names(s), next(position))

    visit(body)
    return out


def _place(shared, layouts, lifetimes) -> dict[str, int]:
    """First fit, largest first: a buffer takes the lowest offset whose bytes no buffer with an
    overlapping lifetime holds."""
    order = sorted(shared, key=lambda b: (-layouts[b.name].bytes, b.name))
    placed: list[tuple[int, int, tuple[int, int]]] = []
    offsets = {}
    for b in order:
        life = lifetimes.get(b.name, (0, 10**9))
        size = layouts[b.name].bytes
        busy = sorted((o, o + s) for o, s, l in placed if l[0] <= life[1] and life[0] <= l[1])
        to = SWIZZLE_ALIGN if layouts[b.name].swizzle_bytes else ALIGN
        offset = 0
        for lo, hi in busy:
            if _align(offset, to) + size <= lo:
                break
            offset = max(offset, hi)
        offset = _align(offset, to)
        offsets[b.name] = offset
        placed.append((offset, size, life))
    return offsets


def _names(s) -> set[str]:
    out = set()
    for x in statements([s]):
        for f in ("a", "b", "c", "buffer", "src", "dst", "name"):
            v = getattr(x, f, None)
            if isinstance(v, str):
                out.add(v)
            elif isinstance(v, (ir.BufferRef, ir.Region)):
                out.add(v.name)
        for e in statement_exprs(x):
            for y in subexprs(e):
                if isinstance(y, ir.Load):
                    out.add(y.name)
    return out


def _describe(b, layout: SharedLayout) -> str:
    one = layout.bytes // layout.stages
    return f"{layout.stages} stages x {kb(one)}" if layout.stages > 1 else kb(layout.bytes)


def kb(n: int) -> str:
    return f"{n / 1024:.1f} KB" if n % 1024 else f"{n // 1024} KB"


def _align(n: int, to: int = ALIGN) -> int:
    return -(-n // to) * to

