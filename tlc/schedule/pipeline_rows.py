"""Rows pipelined across persistent blocks (a pass right after lowering, shown in the tile IR).

A plain row kernel (bench/plain's layer_norm: `with grid(M) as r`, the row copied into a
fragment, reductions, the result copied out) keeps one row's loads in flight per block, and
only while the block waits for them: its reductions and its arithmetic leave the memory idle
for that block.  How many rows an SM has in flight is then the blocks it holds, which the
fragments' registers decide: the plain layer_norm (a row, its weights and its biases in
registers) holds 3 blocks an SM and reached 0.68 of the copy bandwidth on the H200, where the
softmax, at 4, reaches 0.95.  Measured on the H200 on the same (16384, 8192) f16 rows
(hand-edited generated CUDA, GPU batch of session 11): with 4 blocks of it an SM (the
registers' cap, spilling) 0.63-0.73; its weights and biases in shared memory 0.52-0.70; the
next row's copy issued before the current row's reductions, through a 2-stage cp.async ring
in shared memory, persistent blocks walking the rows: 0.86.

So where the kernel as scheduled holds fewer than `IN_FLIGHT_BYTES` of rows in flight an SM
(its blocks an SM times its row copies' bytes), it is scheduled again from its lowered IR as
this pass rewrites it, into the pipelined form a tuned author writes:

    with grid(M) as tl_block:                    # launched with as many blocks as fit at once
        copy(w[0], w_staged)                     # a copy that reads no row: once per block
        for tl_row_step in pipelined(cdiv(M - tl_block, grid_blocks()), stages=2):
            copy(x[tl_block + tl_row_step * grid_blocks(), 0], x_ring)    # one row ahead
            r = tl_block + tl_row_step * grid_blocks()
            ... the body, each staged copy now from shared memory ...

`grid_blocks()` is the number of blocks launched; the grid still counts the rows, and the
launch (runtime/launch.py, the C launcher) runs min(rows, SMs x the blocks an SM holds) of
them, as a persistent kernel.  The interpreter runs one block per row, so the loop runs once
per block there: the same rows, the same values.  The pipelined loop is the ordinary one
(cp.async ring, barriers, stages): nothing here is new to the code generators.

When it applies (else the kernel is unchanged): a CUDA target; one grid dimension, no shared
buffers, no pipelined loop, one grid, no workspaces; at the top of the body, copies from tensor
params into fragments, at least one whose origin reads the block index (the rows: at least
`MIN_ROW_BYTES` together) and each origin reading nothing but the block index, shape sizes,
scalar params and constants; the staged buffers, a row's twice, fit the target's shared
memory with room for a second block.  Blocks run in any order on a GPU, so a kernel whose
rows depend on one another is already wrong; walking them in a block changes nothing there.
"""
from __future__ import annotations

from dataclasses import replace

from .. import ir
from ..dtypes import I32
from ..frozen import frozen
from ..ir.walk import mapped, named_buffers, statements, stmts_mapped, variables
from .column_blocks import fresh_name
from .narrow_fragments import touched

# Rows of a block's copies of at least this many bytes: measured at 16 KB (bench/plain's
# rows of 8192 f16).  Smaller rows keep their schedule until measured: the walk's barrier and
# shared-memory round trip per row weigh more against less data.
MIN_ROW_BYTES = 16 * 1024
# The rows' bytes an SM needs in flight to keep the memory busy (Little's law: an H200 SM's
# share of the copy bandwidth, 4.26 TB/s / 132 = 32 KB a microsecond, times about 2 us of
# loaded DRAM latency).  Measured: 4 blocks of 16 KB rows an SM (bench/plain's softmax and
# rms_norm) reach 0.95-0.97 of copy without a ring; 3 (its layer_norm) 0.68.
IN_FLIGHT_BYTES = 64 * 1024
STAGES = 2
BLOCK_VAR = "tl_block"
STEP_VAR = "tl_row_step"


def pipelined_rows(kernel: ir.Kernel, scheduled: ir.Kernel, target, smem_limit: int) -> ir.Kernel | None:
    """The lowered `kernel` with its rows pipelined across persistent blocks, where that applies
    and `scheduled` (the kernel as the other passes scheduled it) holds fewer than
    `IN_FLIGHT_BYTES` of its rows' copies in flight an SM; else None."""
    if getattr(target, "host", True) or not _plain_grid(kernel) or not scheduled.min_blocks:
        return None
    piped = _pipeline(kernel, smem_limit)
    if piped is None or scheduled.min_blocks * piped.row_bytes >= IN_FLIGHT_BYTES:
        return None
    return piped.kernel


@frozen
class _Piped:
    kernel: ir.Kernel
    row_bytes: int  # of the row copies: what one block has in flight without the ring


def _pipeline(kernel: ir.Kernel, smem_limit: int) -> _Piped | None:
    block = kernel.block_vars[0]
    if _declares(kernel, (BLOCK_VAR, STEP_VAR)):
        return None
    fragments = {b.name for b in kernel.buffers if b.scope == "fragment"}
    params = {p.name: p for p in kernel.params}
    allowed = {p.name for p in kernel.params if p.kind != "tensor"} | set(kernel.shape_symbols()) | \
        {name for name, _ in kernel.constants} | {block}
    rows, staged = [], []
    for s in kernel.body:
        if not (isinstance(s, ir.Copy) and isinstance(s.src, ir.Region) and isinstance(s.dst, ir.BufferRef)
                and s.dst.name in fragments and getattr(params.get(s.src.name), "kind", "") == "tensor"):
            continue
        names = {v.name for o in s.src.offsets for v in variables(o)}
        if not names <= allowed:
            continue
        (rows if block in names else staged).append(s)
    dtype = {p.name: p.dtype for p in kernel.params}
    row_bytes = sum(_bytes(c.src.extents, dtype[c.src.name]) for c in rows)
    staged_bytes = sum(_bytes(c.src.extents, dtype[c.src.name]) for c in staged)
    if not rows or row_bytes < MIN_ROW_BYTES or 2 * (STAGES * row_bytes + staged_bytes) > smem_limit:
        return None
    return _Piped(_rewrite(kernel, rows, staged, dtype), row_bytes)


def _plain_grid(kernel: ir.Kernel) -> bool:
    return (len(kernel.grid) == 1 and kernel.grid[0].dtype == I32 and kernel.warp_spec is None
            and not kernel.grid_of and not kernel.workspaces and not kernel.launch_fill
            and not any(b.scope == "shared" for b in kernel.buffers)
            and not any(isinstance(s, ir.For) and s.kind == "pipelined" for s in statements(kernel.body)))


def _declares(kernel: ir.Kernel, names) -> bool:
    taken = {p.name for p in kernel.params} | {b.name for b in kernel.buffers} | set(kernel.block_vars)
    taken |= {s.name for s in statements(kernel.body) if isinstance(s, ir.LetScalar)}
    taken |= {s.var for s in statements(kernel.body) if isinstance(s, ir.For)}
    return bool(taken & set(names))


def _bytes(extents, dtype) -> int:
    n = 1
    for e in extents:
        n *= e
    return n * dtype.bits // 8


def _rewrite(kernel: ir.Kernel, rows, staged, dtype) -> ir.Kernel:
    block = kernel.block_vars[0]
    span = kernel.span
    blocks = ir.Call("grid_blocks", (), I32, span=span)
    step = ir.Var(STEP_VAR, I32, span=span)
    row = ir.BinOp("+", ir.Var(BLOCK_VAR, I32, span=span), ir.BinOp("*", step, blocks, I32, span=span), I32, span=span)
    taken = {b.name for b in kernel.buffers} | {p.name for p in kernel.params}
    shared, from_shared, ring_copies, staged_copies = [], {}, [], []
    for kind, copies in (("ring", rows), ("staged", staged)):
        for c in copies:
            name = fresh_name(f"{c.dst.name}_{kind}", taken)
            shared.append(ir.Buffer(name, "shared", dtype[c.src.name], c.src.extents, span=c.span))
            from_shared[id(c)] = replace(c, src=ir.BufferRef(name, span=c.src.span), batch=0)
            to_shared = ir.Copy(c.src, ir.BufferRef(name, span=c.dst.span), span=c.span)
            if kind == "ring":
                offsets = tuple(mapped(o, lambda x: row if isinstance(x, ir.Var) and x.name == block else x)
                                for o in c.src.offsets)
                ring_copies.append(replace(to_shared, src=replace(c.src, offsets=offsets)))
            else:
                staged_copies.append(to_shared)
    body = tuple(from_shared.get(id(s), s) for s in kernel.body)
    body, in_place = _read_in_place(body, [from_shared[id(c)] for c in staged], kernel, shared)
    body = _sunk(body, {id(from_shared[id(c)]) for c in staged})
    rows_left = ir.BinOp("-", kernel.grid[0], ir.Var(BLOCK_VAR, I32, span=span), I32, span=span)
    trips = ir.BinOp("//", ir.BinOp("-", ir.BinOp("+", rows_left, blocks, I32, span=span), ir.Const(1, I32), I32,
                                    span=span), blocks, I32, span=span)
    loop = ir.For(STEP_VAR, ir.Const(0, I32), trips, ir.Const(1, I32), "pipelined", STAGES,
                  tuple(ring_copies) + (ir.LetScalar(block, I32, row, span=span),) + body, span=span)
    names = ", ".join(c.src.name for c in rows)
    note = (f"rows pipelined (pipeline_rows.py): persistent blocks, as many as fit at once, walk the rows "
            f"{block} = {BLOCK_VAR} + {STEP_VAR} * grid_blocks(); the row copies from {names} run one row ahead "
            f"through a {STAGES}-stage cp.async ring")
    if staged:
        note += f"; the copies from {', '.join(c.src.name for c in staged)} read no row and are staged once per block"
    if in_place:
        note += (f"; {', '.join(in_place)} {'is' if len(in_place) == 1 else 'are'} read from {'its' if len(in_place) == 1 else 'their'}"
                 " staged copy where read, not copied into registers")
    buffers = tuple(b for b in kernel.buffers if b.name not in in_place)
    return replace(kernel, block_vars=(BLOCK_VAR,), buffers=buffers + tuple(shared),
                   body=tuple(staged_copies) + (loop,), launch_fill=True, notes=kernel.notes + (note,))


def _sunk(body: tuple, movable: set) -> tuple:
    """`body` with each copy of `movable` (from a buffer staged once, which nothing writes
    after) moved down to just before the first statement that touches its fragment: the
    fragment's registers are then live from its first use only, not across the reductions
    before it (the plain layer_norm's weights and biases: 32 registers a thread)."""
    out = list(body)
    for s in [s for s in body if id(s) in movable]:
        k = out.index(s)
        out.pop(k)
        j = next((i for i in range(k, len(out)) if s.dst.name in touched(out[i])), len(out))
        out.insert(j, s)
    return tuple(out)


def _read_in_place(body: tuple, copies: list, kernel: ir.Kernel, shared: list) -> tuple[tuple, tuple]:
    """`body` with each fragment that one of `copies` fills from its staged buffer whole, and
    that only element loads read otherwise, read from the staged buffer where it is read (its
    copy dropped), and the names of those fragments.  A weight a thread holds in registers
    costs it as many registers as the row (the plain layer_norm's weights and biases: 32 of
    its 80, with 52 bytes spilled at 3 blocks an SM); read from shared memory, a run of the
    loop's layout is one vector load (codegen: shared runs) where the loop needs it."""
    fragments = {b.name: b for b in kernel.buffers if b.scope == "fragment"}
    staged = {b.name: b for b in shared}
    chosen = [c for c in copies if fragments[c.dst.name].shape == staged[c.src.name].shape and
              not any(c.dst.name in named_buffers(t) for t in statements(body) if t is not c)]
    from_buffer = {c.dst.name: staged[c.src.name] for c in chosen}

    def from_staged(x: ir.Expr) -> ir.Expr:
        buf = from_buffer.get(x.name) if isinstance(x, ir.Load) else None
        if buf is None:
            return x
        load = ir.Load(buf.name, x.indices, buf.dtype, span=x.span)
        return load if buf.dtype == x.dtype else ir.Cast(load, x.dtype, span=x.span)
    kept = tuple(t for t in body if not any(t is c for c in chosen))
    return stmts_mapped(kept, lambda e: mapped(e, from_staged)), tuple(from_buffer)
