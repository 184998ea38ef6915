"""Column reductions (a tile reduced along dim 0 in a loop over the rows) spread over enough
blocks, each thread adding up its own rows before any exchange: the pass `split_column_blocks`.

A column sum written plainly (bench/plain/column_sums.tl: one block per BN = 256 columns
walking down the rows in [32, 256] tiles) launches N / 256 blocks: 32 for 8192 columns, a
quarter of an H200's SMs, so it cannot reach the copy bandwidth however its block runs (307
GB/s, 0.07 of copy).  Two rewrites, each exact for the program's result (every output column is
still reduced by one block, over the same rows; a sum's additions are reassociated as any
reduction across threads already reassociates them):

- `narrow_column_blocks`: a kernel whose every fragment, copy and reduction works column by
  column on the block's `bx * BN` columns is launched with `C` times the blocks, each owning
  BN / C columns (128 bytes of a row: whole lines), and, for a sum of tiles read in a loop
  whose rows stop at the tensor's end, `C` times the rows per tile (the tile keeps its size, so
  the bytes each thread has in flight stay; the rows past the tensor the last tile now covers
  read as 0, which adds nothing).  column_sums at 16384 x 8192: 256 blocks of [256, 32] tiles,
  125 us = 4281 GB/s on the H200 (1.00 of its copy bandwidth; 1732 us without this pass, torch
  133 us), bench/plain.py in one run.
- `defer_column_combine`: a reduction along dim 0 into an accumulator inside a loop, where the
  tile's columns cannot each belong to one thread (fewer columns than threads), accumulates
  element-wise into a tile-shaped partial instead, reduced across the threads once after the
  loop: one exchange per block, not one per tile; the same reduction of several tiles into one
  accumulator (a tile op's column loop takes two an iteration) shares one partial.

Both are decisions `--emit ir` shows as notes and in the IR itself (the grid, the tiles, the
partial and its loop).
"""
from __future__ import annotations

from dataclasses import replace

from .. import ir
from ..dtypes import I32
from ..ir.walk import statement_exprs, statements, subexprs

LINE_BYTES = 128  # a block's columns of one row: one 128-byte line, read whole by its threads
PARTIAL_MAX_REGISTERS = 64  # a deferred partial holds at most this many elements a thread
IDENTITY = {"sum": 0.0, "max": float("-inf"), "min": float("inf"), "absmax": 0.0}


def split_column_blocks(kernel: ir.Kernel) -> ir.Kernel:
    """The kernel with its column reductions over more blocks (`narrow_column_blocks`) and
    their cross-thread step after the loop (`defer_column_combine`)."""
    return defer_column_combine(narrow_column_blocks(kernel))


# ---- more blocks: fewer columns each ---------------------------------------------------------

def narrow_column_blocks(kernel: ir.Kernel) -> ir.Kernel:
    plan = _column_plan(kernel)
    if plan is None:
        return kernel
    bx, bn, split = plan
    narrow = bn // split
    grow = _row_growth(kernel, split)
    frags = {}
    for b in kernel.buffers:
        shape = (*b.shape[:-1], narrow)
        if grow is not None and len(shape) == 2:
            shape = (shape[0] * split, narrow)
        frags[b.name] = replace(b, shape=shape)

    def offset(e):
        return ir.BinOp("*", ir.Var(bx, I32), ir.Const(narrow, I32), I32) if _is_block_columns(e, bx, bn) else e

    def region(r):
        if not isinstance(r, ir.Region):
            return r
        offsets = (*r.offsets[:-1], offset(r.offsets[-1]))
        extents = (*r.extents[:-1], narrow)
        if grow is not None and len(extents) == 2:
            offsets = (_grown_row(offsets[0], grow, split), offsets[1])
            extents = (extents[0] * split, narrow)
        return replace(r, offsets=offsets, extents=extents)

    def stmt(s):
        if isinstance(s, ir.Copy):
            return replace(s, src=region(s.src), dst=region(s.dst))
        if isinstance(s, ir.For):
            body = tuple(stmt(x) for x in s.body)
            if grow is not None and s.var == grow[0]:
                return replace(s, stop=_cdiv(s.stop, split), body=body)
            return replace(s, body=body)
        return s

    grid = (ir.BinOp("*", kernel.grid[0], ir.Const(split, I32), I32),)
    rows = f", and {split} times the rows per tile ({grow[1] * split}: a sum's rows past the tensor read as 0)" \
        if grow is not None else ""
    note = (f"column blocks: each block's {bn} columns split over {split} blocks of {narrow} (a {LINE_BYTES}-byte "
            f"line of each row){rows}, so that {split} times the blocks share the rows' reading; each column is "
            "still reduced by one block")
    return replace(kernel, grid=grid, buffers=tuple(frags[b.name] for b in kernel.buffers),
                   body=tuple(stmt(s) for s in kernel.body), notes=kernel.notes + (note,))


def _column_plan(kernel: ir.Kernel):
    """(block var, BN, blocks per BN) when `kernel` works column by column on its block's BN
    columns and reduces along dim 0, else None."""
    if len(kernel.grid) != 1 or kernel.warp_spec is not None or not kernel.buffers or kernel.workspaces:
        return None
    bx = kernel.block_vars[0]
    if any(b.scope != "fragment" or len(b.shape) not in (1, 2) for b in kernel.buffers):
        return None
    bn = kernel.buffers[0].shape[-1]
    if any(b.shape[-1] != bn for b in kernel.buffers):
        return None
    reduces = [s for s in statements(kernel.body) if isinstance(s, ir.Reduce)]
    if not reduces or any(s.dim != 0 or len(kernel.buffer(s.src).shape) != 2 for s in reduces):
        return None
    sizes = []
    for s in statements(kernel.body):
        if isinstance(s, ir.Copy):
            ends = [x for x in (s.src, s.dst) if isinstance(x, ir.Region)]
            if len(ends) != 1 or kernel.param(ends[0].name) is None:
                return None
            r = ends[0]
            if r.extents[-1] != bn or not _is_block_columns(r.offsets[-1], bx, bn):
                return None
            sizes.append(kernel.param(r.name).dtype.itemsize)
        elif not isinstance(s, (ir.Fill, ir.Reduce, ir.For, ir.LetScalar)):
            return None
        elif isinstance(s, ir.For) and s.kind not in ("serial", "unroll"):
            return None
    uses = sum(isinstance(e, ir.Var) and e.name == bx
               for s in statements(kernel.body) for x in statement_exprs(s) for e in subexprs(x))
    if not sizes or uses != sum(isinstance(s, ir.Copy) for s in statements(kernel.body)) \
            or any(bx in _names(e) for e in kernel.grid):
        return None
    split = bn // max(1, LINE_BYTES // min(sizes))
    if split < 2 or bn % split:
        return None
    return bx, bn, split


def _is_block_columns(e, bx: str, bn: int) -> bool:
    """Whether `e` is `bx * BN` (either order)."""
    if not (isinstance(e, ir.BinOp) and e.op == "*"):
        return False
    pair = (e.a, e.b) if isinstance(e.a, ir.Var) else (e.b, e.a)
    return isinstance(pair[0], ir.Var) and pair[0].name == bx and isinstance(pair[1], ir.Const) and pair[1].value == bn


def _row_growth(kernel: ir.Kernel, split: int):
    """(loop var, BM) when every reduction is a sum (a row past the tensor reads 0 and adds
    nothing), every 2-D fragment has BM rows and is written only by a copy at rows `t * BM` of a loop
    `for t in range(0, cdiv(M, BM))` over the copied tensor's M rows (so the grown tiles cover
    only rows past the tensor beyond the program's), and `t` is read nowhere else."""
    if any(s.kind != "sum" for s in statements(kernel.body) if isinstance(s, ir.Reduce)):
        return None
    tall = [b for b in kernel.buffers if len(b.shape) == 2]
    if any(isinstance(s, ir.Fill) and s.buffer in {b.name for b in tall} for s in statements(kernel.body)):
        return None  # a filled tile's rows past the tensor would not read 0
    if not tall or len({b.shape[0] for b in tall}) != 1:
        return None
    bm = tall[0].shape[0]
    loops = [s for s in kernel.body if isinstance(s, ir.For)]
    copies = [s for s in statements(kernel.body) if isinstance(s, ir.Copy) and len(_region(s).extents) == 2]
    if len(loops) != 1 or not copies:
        return None
    loop = loops[0]
    if not (isinstance(loop.start, ir.Const) and loop.start.value == 0 and isinstance(loop.step, ir.Const)
            and loop.step.value == 1) or any(s not in loop.body for s in copies):
        return None
    for c in copies:
        r, rows = _region(c), kernel.param(_region(c).name).shape[0]
        if r.extents[0] != bm or not _is_block_columns(r.offsets[0], loop.var, bm) or not _covers(loop.stop, rows, bm):
            return None
    uses = sum(isinstance(e, ir.Var) and e.name == loop.var
               for s in statements(loop.body) for x in statement_exprs(s) for e in subexprs(x))
    return (loop.var, bm) if uses == len(copies) else None


def _region(c: ir.Copy) -> ir.Region:
    return c.src if isinstance(c.src, ir.Region) else c.dst


def _covers(stop, rows, bm: int) -> bool:
    """Whether `stop` tiles of `bm` rows reach the end of `rows` rows (and no further than the
    tile holding the last row): `cdiv(M, BM)` as lowered, or its value."""
    if isinstance(stop, ir.Const) and isinstance(rows, int):
        return stop.value == -(-rows // bm)
    m = ir.Var(rows, I32) if isinstance(rows, str) else None
    want = ir.BinOp("+", ir.BinOp("//", ir.BinOp("-", m, ir.Const(1, I32), I32), ir.Const(bm, I32), I32),
                    ir.Const(1, I32), I32)
    return m is not None and stop == want


def _grown_row(e, grow, split: int):
    """The row offset `t * BM` of a grown tile: `t * (BM * split)`."""
    var, bm = grow
    return ir.BinOp("*", ir.Var(var, I32), ir.Const(bm * split, I32), I32) if _is_block_columns(e, var, bm) else e


def _cdiv(e, k: int):
    return ir.BinOp("+", ir.BinOp("//", ir.BinOp("-", e, ir.Const(1, I32), I32), ir.Const(k, I32), I32),
                    ir.Const(1, I32), I32)


def _names(e) -> set:
    return {x.name for x in subexprs(e) if isinstance(x, ir.Var)}


# ---- one exchange per block: partials in each thread ---------------------------------------------

def fresh_name(base: str, taken: set) -> str:
    """`base`, or `base` with the first number that makes it a name not in `taken`; added to it."""
    name, k = base, 0
    while name in taken:
        k += 1
        name = f"{base}{k}"
    taken.add(name)
    return name


def defer_column_combine(kernel: ir.Kernel) -> ir.Kernel:
    frags = {b.name: b for b in kernel.buffers if b.scope == "fragment"}
    added: list = []
    notes: list = []
    taken = {b.name for b in kernel.buffers} | {p.name for p in kernel.params} | set(kernel.block_vars) \
        | {getattr(s, "var", None) for s in statements(kernel.body)} | set(kernel.shape_symbols())

    def fresh(base: str) -> str:
        return fresh_name(base, taken)

    def body(stmts) -> tuple:
        out: list = []
        # destination -> (its partial, the reduction after the loop, the tile's shape, the kind) of
        # the loop just before: a loop right after it reducing the same tiles into the same
        # destination (a tile op's column loop split into its whole steps and the rest) adds into
        # the same partial, reduced once after the second
        pending: dict = {}
        for s in stmts:
            if isinstance(s, ir.For):
                s = replace(s, body=body(s.body))
                deferred = [r for r in s.body if _deferrable(r, s, frags, kernel.threads)] \
                    if s.kind in ("serial", "unroll") else []
                before, inner = [], list(s.body)
                parts: dict = {}  # destination -> its partial (reductions of several tiles into one share it)
                after: dict = {}
                for r in deferred:
                    src, dst = frags[r.src], frags[r.dst]
                    if r.dst not in parts:
                        carried = pending.get(r.dst)
                        if carried is not None and carried[2:] == (src.shape, r.kind):
                            parts[r.dst], after[r.dst] = carried[0], pending.pop(r.dst)
                        else:
                            parts[r.dst] = part = fresh(f"{r.dst}_part")
                            added.append(ir.Buffer(part, "fragment", dst.dtype, src.shape, span=dst.span))
                            before.append(ir.Fill(part, ir.Const(IDENTITY[r.kind], dst.dtype), span=r.span))
                            after[r.dst] = (part, ir.Reduce(r.kind, part, r.dst, 0, False, span=r.span), src.shape,
                                            r.kind)
                            where = f" (line {r.span.line})" if r.span is not None else ""
                            notes.append(f"reduce_{r.kind} {r.src} -> {r.dst}{where}: its {src.shape[1]} columns "
                                         f"cannot each be one thread's at {kernel.threads} threads, so each thread "
                                         f"combines its elements of every tile in {part} and the threads combine "
                                         "once, after the loop")
                    part = parts[r.dst]
                    i, j = fresh(f"{part}_i"), fresh(f"{part}_j")
                    at = (ir.Var(i, I32), ir.Var(j, I32))
                    value = _combined(r.kind, ir.Load(part, at, dst.dtype), ir.Load(r.src, at, src.dtype), dst.dtype)
                    inner[inner.index(r)] = ir.Parallel((i, j), src.shape, (ir.Store(part, at, value, span=r.span),),
                                                        span=r.span)
                out += [x[1] for x in pending.values()]
                out += [*before, replace(s, body=tuple(inner))]
                pending = after
            else:
                out += [x[1] for x in pending.values()]
                pending = {}
                out.append(s)
        return (*out, *(x[1] for x in pending.values()))

    new_body = body(kernel.body)
    if not added:
        return kernel
    return replace(kernel, body=new_body, buffers=kernel.buffers + tuple(added), notes=kernel.notes + tuple(notes))


def _deferrable(r, loop: ir.For, frags: dict, threads: int) -> bool:
    """Whether reduction `r` in `loop`'s body accumulates a 2-D tile along dim 0 into a
    fragment the loop touches nowhere else (but by the same reduction of another tile), a tile whose columns cannot each be one thread's
    (fewer columns than threads, or not a multiple of them), small enough to double."""
    if not isinstance(r, ir.Reduce) or r.dim != 0 or r.clear or r.kind not in IDENTITY:
        return False
    src, dst = frags.get(r.src), frags.get(r.dst)
    if src is None or dst is None or len(src.shape) != 2 or not dst.dtype.is_float:
        return False
    rows, cols = src.shape
    if cols >= threads and cols % threads == 0 or rows * cols > PARTIAL_MAX_REGISTERS * threads:
        return False
    return not any(_touches(s, r.dst) for s in statements(loop.body) if s is not r and not _same_reduction(s, r, frags))


def _same_reduction(s, r, frags: dict) -> bool:
    """Whether `s` is another reduction like `r` into its destination (another tile's, in a
    loop that takes several a step): the two share one partial."""
    return isinstance(s, ir.Reduce) and (s.kind, s.dst, s.dim, s.clear) == (r.kind, r.dst, r.dim, r.clear) \
        and s.src in frags and frags[s.src].shape == frags[r.src].shape


def _touches(s, name: str) -> bool:
    if getattr(s, "name", None) == name or getattr(s, "buffer", None) == name:
        return True
    if isinstance(s, ir.Reduce) and name in (s.src, s.dst):
        return True
    if isinstance(s, ir.Copy) and name in (s.src.name, s.dst.name):
        return True
    return any(isinstance(e, ir.Load) and e.name == name for x in statement_exprs(s) for e in subexprs(x))


def _combined(kind: str, acc, x, dtype):
    if x.dtype != dtype:
        x = ir.Cast(x, dtype)
    if kind == "sum":
        return ir.BinOp("+", acc, x, dtype)
    if kind == "absmax":
        return ir.BinOp("max", acc, ir.Call("abs", (x,), dtype), dtype)
    return ir.BinOp(kind, acc, x, dtype)
