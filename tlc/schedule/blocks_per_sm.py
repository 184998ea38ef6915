"""Blocks per SM for a register-resident kernel: the minimum of `__launch_bounds__(THREADS,
MIN_BLOCKS)`, decided here and shown by `--emit ir` as a note, for every kernel whose working
set is its fragments (no shared buffer, no gemm) and whose author gave no `blocks_per_sm=`.
(A tile op's row kernels have their own count, tileops/rows.py; kernels that reach the code
generator without one keep codegen/occupancy.py's estimate.)

A memory-bound kernel's speed is the bytes in flight per SM, so it wants as many resident
blocks as its registers allow; left alone, ptxas spends registers on instruction-level
parallelism instead (bench/plain's rms_norm at 256 threads: one block an SM).  The rule is
std.nn's row rule (`tileops.rules.row_blocks_per_sm`: the registers counted, plus
`ROW_OVERHEAD`, at least `ROW_MIN_REGISTERS`), with the registers counted here as
- the fragments live at once (`live_fragment_registers`),
- the loads in flight of the widest copy from global memory (`loads_in_flight`),
- the row vectors a parallel loop reads at its column (`column_vector_registers`),
- `SCALAR_REGISTERS` for each scalar the kernel declares.
Each term is calibrated on ptxas -v (nvcc 13, sm_80 and sm_90a): at the blocks chosen, none of
bench/plain's kernels, the examples, std.nn's at 14 configurations or std.data's spills, and
the cases quoted below spill one block further (tests/plain/test_plain_kernels.py checks
bench/plain's builds).
"""
from __future__ import annotations

import math

from dataclasses import replace

from .. import ir
from ..ir.walk import loads, statement_exprs, statements, variables
from .layout import Blocked, Replicated, thread_registers, vector_run
from .scan_registers import in_registers
from .smem import SM90_LIMIT

# a 64-bit global address per run a copy has in flight: column_sums' [32, 256] f32 tile in runs
# of 1 (32 runs) takes 119 registers at 2 blocks an SM and spills 16 bytes at 3
ADDRESS_REGISTERS = 2
# per scalar a kernel declares (`x = ...`), its value and what computes and reads it: std.nn's
# layer_norm of 1024 at 128 threads (5 scalars) takes 56 registers at 9 blocks and spills at 10
SCALAR_REGISTERS = 4
# shared memory the GPU keeps per resident block (sm_80 and later: 1 KB)
RESERVED_SMEM = 1024


def _smem_per_sm(target) -> int:
    """The shared memory of an SM: what one block may opt into, plus the 1 KB kept for it."""
    return (target.smem_per_block if target is not None else SM90_LIMIT) + RESERVED_SMEM


def resident_blocks(smem_bytes: int, threads: int, target) -> int:
    """The blocks of `threads` threads and `smem_bytes` of shared memory each that an SM of
    `target` holds: by its shared memory (RESERVED_SMEM more a block), its threads and its
    block limit; at least 1."""
    by_smem = _smem_per_sm(target) // (smem_bytes + RESERVED_SMEM)
    return max(1, min(by_smem, target.threads_per_sm // threads, target.blocks_per_sm))


def choose_blocks_per_sm(kernel: ir.Kernel, target=None) -> ir.Kernel:
    """`kernel` with `min_blocks` (and a note saying why) when it is register-resident and its
    author left blocks per SM to the compiler; else unchanged."""
    if kernel.min_blocks or not register_resident(kernel):
        return kernel
    # here, not at the top: importing the tile-op scheduler's package (~7 ms) is a cost only the
    # kernels this pass changes need (issue #15, a GEMM's first call)
    from .tileops.rules import ROW_MIN_REGISTERS, ROW_OVERHEAD, row_blocks_per_sm

    live, loading = live_fragment_registers(kernel), loads_in_flight(kernel) + column_vector_registers(kernel)
    scalars = SCALAR_REGISTERS * sum(isinstance(s, ir.LetScalar) for s in statements(kernel.body))
    blocks = row_blocks_per_sm(kernel.threads, live + loading + scalars, target)
    need = max(live + loading + scalars + ROW_OVERHEAD, ROW_MIN_REGISTERS)
    note = (f"blocks per SM: {blocks} (__launch_bounds__({kernel.threads}, {blocks})), as many as fit "
            f"{need} registers a thread: {live} of fragments live at once, {loading} for loads in flight, "
            f"{scalars} for scalars, {ROW_OVERHEAD} besides; give blocks_per_sm= to choose")
    if kernel.launch_fill and kernel.smem_bytes:
        # its rows' staging (pipeline_rows.py) in shared memory: the blocks that fit it too
        fit = max(1, _smem_per_sm(target) // (kernel.smem_bytes + RESERVED_SMEM))
        if fit < blocks:
            blocks = fit
            note = (f"blocks per SM: {blocks} (__launch_bounds__({kernel.threads}, {blocks})), as many as fit "
                    f"{kernel.smem_bytes} bytes of shared memory each (the rows' staging; their registers "
                    f"would allow more); give blocks_per_sm= to choose")
    return replace(kernel, min_blocks=blocks, notes=kernel.notes + (note,))


def register_resident(kernel: ir.Kernel) -> bool:
    """Whether the kernel's working set is its fragments: no shared buffer, no gemm (their
    kernels are limited by shared memory and sped by instruction-level parallelism: ptxas's
    own choice stays), and at least one fragment."""
    if any(b.scope == "shared" for b in kernel.buffers) and not kernel.launch_fill:
        return False  # (a launch_fill kernel's shared buffers only stage its rows: pipeline_rows.py)
    if any(isinstance(s, ir.Gemm) for s in statements(kernel.body)):
        return False
    return any(b.scope == "fragment" and b.layout is not None for b in kernel.buffers)


def load_addresses(kernel: ir.Kernel) -> int:
    """Registers for the addresses of one copy's loads in flight: `ADDRESS_REGISTERS` for each
    run of the fragment a thread fills from global memory, the most of any copy."""
    return max((ADDRESS_REGISTERS * runs for runs, _ in _global_loads(kernel)), default=0)


def loads_in_flight(kernel: ir.Kernel) -> int:
    """Registers a copy from global memory into a fragment needs beyond the fragments, the most
    of any copy: its runs' addresses (`load_addresses`), or, for a tile of 4-byte elements
    loaded in a serial loop, the whole tile where that is more (as the row rule counts such
    tiles twice: std.nn's f32 softmax of 8192 at 256 threads spills 36 bytes at 3 blocks an SM,
    36 registers of fragments)."""
    return max((max(ADDRESS_REGISTERS * runs, regs) for runs, regs in _global_loads(kernel)), default=0)


def _global_loads(kernel: ir.Kernel):
    """(runs a thread loads, registers of a 4-byte tile loaded in a serial loop, else 0) of
    each copy from global memory into a fragment."""
    frags = {b.name: b for b in kernel.buffers if b.scope == "fragment" and b.layout is not None}
    tensors = {p.name: p for p in kernel.params if p.kind == "tensor"}

    def walk(stmts, looped):
        for s in stmts:
            if isinstance(s, ir.Copy) and isinstance(s.src, ir.Region) and s.src.name in tensors and s.dst.name in frags:
                b = frags[s.dst.name]
                wide = looped and tensors[s.src.name].dtype.itemsize >= 4
                yield b.layout.registers // vector_run(b.layout), thread_registers(b) if wide else 0
            elif not isinstance(s, ir.Parallel):
                for f in ("body", "then", "orelse"):
                    yield from walk(getattr(s, f, ()) or (), looped or isinstance(s, ir.For))

    return walk(kernel.body, False)


def column_vector_registers(kernel: ir.Kernel) -> int:
    """Registers of the tensor values a parallel loop reads at its column only (a row vector
    `g[t * 1024 + j]`, the same for each of a thread's rows), the most of any loop: the code
    generator takes them a run at a time as vectors (codegen/shared_runs.py), and ptxas issues
    those loads at the kernel's top, so they are held through everything before the loop (the
    tile op layernorm's g and b, 16 registers: at 10 blocks an SM on sm_80, 48 registers, it
    spilled 112 bytes).  A value a thread holds per column slot, 4 bytes or fewer to a register."""
    tensors = {p.name: p for p in kernel.params if p.kind == "tensor"}
    most = 0
    for s in statements(kernel.body):
        if not isinstance(s, ir.Parallel) or not isinstance(s.layout, Blocked) or len(s.vars) != 2:
            continue
        row, column = s.vars
        held = {}
        for st in statements(s.body):
            for e in statement_exprs(st):
                for x in loads(e):
                    if x.name not in tensors or not x.indices:
                        continue
                    if any(v.name in (row, column) for i in x.indices[:-1] for v in variables(i)):
                        continue
                    if {v.name for v in variables(x.indices[-1])} & {row, column} != {column}:
                        continue
                    held[x.name] = tensors[x.name].dtype.itemsize
        slots = Replicated(s.layout, (0,)).registers
        most = max(most, sum(-(-slots * size // 4) for size in held.values()))
    return most


def live_fragment_registers(kernel: ir.Kernel) -> int:
    """The most 32-bit registers a thread's fragments take at any one statement.  A fragment is
    live over [first touch, last touch] of the statements in program order, except that:
    - a copy from global memory may start at the top of its statement list (ptxas issues
      independent loads early: std.nn's layer_norm at 128 threads spills at 10 blocks an SM if
      its weights count only from their copy, 12 fragments fewer);
    - a loop widens the span of a fragment touched inside it and outside it, or read there
      before it is written (carried to the next iteration), to the whole loop;
    - a reduction holds its partials (a register per slot of its result) beside its source
      and result (examples/softmax at 7 blocks an SM spills 32 bytes: 4 rows of partials);
    - a 16-bit fragment's scan in registers holds its values widened to f32 beside it;
    - a tile a parallel loop writes for the reduction right after it alone is never held
      (`_streamed`)."""
    frags = {b.name: b for b in kernel.buffers if b.scope == "fragment" and b.layout is not None}
    regs = {name: thread_registers(b) for name, b in frags.items()}
    spans: dict[str, list[int]] = {}
    loops: list[tuple[int, int, set, set]] = []  # (first, last position, touched, read before written)
    partials: dict[int, int] = {}  # position of a reduction -> its partials' registers

    def walk(stmts, pos: int) -> int:
        top = pos
        for s in stmts:
            if isinstance(s, ir.For):
                start = pos
                pos = walk(s.body, pos)
                loops.append((start, pos - 1, _touched(s.body, regs), _carried(s.body, regs)))
                continue
            if isinstance(s, ir.If):
                pos = walk(s.then + s.orelse, pos)
                continue
            for name in _touched((s,), regs):
                span = spans.setdefault(name, [pos, pos])
                span[0], span[1] = min(span[0], pos), max(span[1], pos)
            if isinstance(s, ir.Copy) and isinstance(s.src, ir.Region) and s.dst.name in regs:
                spans[s.dst.name][0] = min(spans[s.dst.name][0], top)
            if isinstance(s, ir.Reduce) and s.src in frags and not isinstance(frags[s.src].layout, Replicated):
                partials[pos] = Replicated(frags[s.src].layout, (s.dim,)).registers
            if isinstance(s, ir.Scan) and s.dst in frags and frags[s.dst].dtype.bits < 32 \
                    and in_registers(s, frags[s.dst]):
                # a 16-bit fragment scanned in its registers (scan_registers.py) combines in f32:
                # its values widened beside it (cummax of bf16 at 9 blocks an SM spilled 84 bytes)
                partials[pos] = math.prod(frags[s.dst].shape) // frags[s.dst].layout.threads
            pos += 1
        return pos

    end = walk(kernel.body, 0)
    for name in _streamed(kernel.body, regs, kernel.launch_fill):
        spans.pop(name, None)
    changed = True
    while changed:  # a loop widens the spans that cross its boundary or are carried around it
        changed = False
        for first, last, inside, carried in loops:
            for name in inside & set(spans):
                lo, hi = spans[name]
                if (lo < first or hi > last or name in carried) and (lo > first or hi < last):
                    spans[name] = [min(lo, first), max(hi, last)]
                    changed = True
    return max((partials.get(p, 0) + sum(regs[n] for n, (lo, hi) in spans.items() if lo <= p <= hi)
                for p in range(end)), default=0)


def _streamed(stmts, regs, walks_rows: bool = False) -> set:
    """Fragments that a parallel loop writes and the reduction right after it reads, and
    nothing else touches (layer_norm's squares): both are unrolled over the same registers, so
    ptxas folds each element into the reduction as it is computed and never holds the tile
    (ptxas -v: bench/plain's layer_norm fits 2 blocks an SM in 122 registers; counting `sq`'s
    32 it would ask for 1)."""
    top = [s for body in _bodies(stmts) for s in body]
    if walks_rows:  # the walk over rows (pipeline_rows.py) holds the body: its touches count once
        top = [s for s in top if not isinstance(s, ir.For)]
    # (Elsewhere a loop's touches count again, so that a tile reduced inside a loop is held:
    # std.nn's rms_norm counted so takes 2 blocks an SM without spills; not held, 4 spill 50 bytes.)
    out = set()
    for body in _bodies(stmts):
        for p, r in zip(body, body[1:]):
            if isinstance(p, ir.Parallel) and isinstance(r, ir.Reduce) and r.src in regs \
                    and any(isinstance(x, ir.Store) and x.name == r.src for x in statements(p.body)) \
                    and sum(r.src in _touched((s,), regs) for s in top) == 2:
                out.add(r.src)
    return out


def _bodies(stmts):
    """`stmts` and every statement list nested in it outside parallel loops."""
    yield stmts
    for s in stmts:
        if not isinstance(s, ir.Parallel):
            for f in ("body", "then", "orelse"):
                if isinstance(getattr(s, f, None), tuple):
                    yield from _bodies(getattr(s, f))


def _touched(stmts, regs) -> set:
    """The fragments (of `regs`) that `stmts` read or write, nested statements included."""
    out = set()
    for s in statements(stmts):
        names = [x.name for e in statement_exprs(s) for x in loads(e)]
        names += [getattr(s, f) for f in ("name", "buffer", "src", "dst", "a", "b", "c") if isinstance(getattr(s, f, None), str)]
        names += [getattr(s, f).name for f in ("src", "dst") if isinstance(getattr(s, f, None), (ir.BufferRef, ir.Region))]
        out |= {n for n in names if n in regs}
    return out


def _carried(stmts, regs) -> set:
    """Fragments a loop body may read before it writes them (an accumulator): their value from
    the previous iteration is live across the loop's back edge."""
    written: set = set()
    carried: set = set()
    for s in stmts:
        if isinstance(s, ir.Reduce) and not s.clear and s.dst in regs and s.dst not in written:
            carried.add(s.dst)
        reads = _touched((s,), regs) - _written(s, regs)
        carried |= (reads - written)
        written |= _written(s, regs)
    return carried


def _written(s, regs) -> set:
    """Fragments statement `s` writes whole (a copy into it, a fill, a reduction that clears)."""
    if isinstance(s, ir.Copy) and s.dst.name in regs and isinstance(s.dst, ir.BufferRef):
        return {s.dst.name}
    if isinstance(s, ir.Fill) and s.buffer in regs:
        return {s.buffer}
    if isinstance(s, ir.Reduce) and s.clear and s.dst in regs:
        return {s.dst}
    return set()
