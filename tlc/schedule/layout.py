"""Fragment layouts: which thread holds which element of each fragment (DESIGN.md, "The hard
part").  Chosen from the strongest uses down: a gemm accumulator takes its tensor-core
instruction's layout; a reduction's destination is replicated over the threads that share
its indices; a fragment used only by copies and parallel loops gets contiguous vector runs;
a parallel loop runs in the layout of the fragment it touches most (its anchor)."""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

from .. import ir
from ..ir.walk import loads, statement_exprs, statements

VECTOR_BYTES = 16  # one 16-byte access per thread and run: what vectorized copies use


@dataclass(frozen=True)
class Blocked:
    """Row-major runs of `vec` elements dealt round-robin over `threads`."""

    shape: tuple[int, ...]
    threads: int
    vec: int

    def owner(self, index: tuple[int, ...]) -> tuple[int, int]:
        linear = _linear(index, self.shape)
        run = linear // self.vec
        return run % self.threads, (run // self.threads) * self.vec + linear % self.vec

    @property
    def registers(self) -> int:
        runs = math.ceil(math.prod(self.shape) / self.vec)
        return math.ceil(runs / self.threads) * self.vec

    def __str__(self) -> str:
        return f"blocked(vec={self.vec}, threads={self.threads})"


@dataclass(frozen=True)
class MmaAccumulator:
    """The accumulator of `mma.sync.m16n8k16`: warps tile the block `warps_m x warps_n`; each
    warp covers its sub-tile in 16x8 pieces, lane t holding rows t/4 and t/4+8, columns
    2*(t%4) and 2*(t%4)+1 of each piece."""

    shape: tuple[int, int]
    warps_m: int
    warps_n: int

    @property
    def threads(self) -> int:
        return self.warps_m * self.warps_n * 32

    @property
    def warp_tile(self) -> tuple[int, int]:
        return self.shape[0] // self.warps_m, self.shape[1] // self.warps_n

    def owner(self, index: tuple[int, int]) -> tuple[int, int]:
        i, j = index
        wm, wn = self.warp_tile
        warp = (i // wm) * self.warps_n + (j // wn)
        li, lj = i % wm, j % wn
        piece = (li // 16) * (wn // 8) + lj // 8
        pi, pj = li % 16, lj % 8
        lane = (pi % 8) * 4 + pj // 2
        return warp * 32 + lane, piece * 4 + (pi // 8) * 2 + pj % 2

    @property
    def registers(self) -> int:
        wm, wn = self.warp_tile
        return wm * wn // 32

    def __str__(self) -> str:
        return f"mma_acc(warps={self.warps_m}x{self.warps_n}, warp_tile={self.warp_tile[0]}x{self.warp_tile[1]})"


@dataclass(frozen=True)
class Replicated:
    """A fragment indexed by fewer dimensions than its base: element `index` is held by every
    thread that holds some element of `base` whose indices outside `dropped` equal `index`."""

    base: object
    dropped: tuple[int, ...]

    def owners(self, index: tuple[int, ...]) -> set[int]:
        full = self.base.shape
        kept = [d for d in range(len(full)) if d not in self.dropped]
        out = set()
        for other in _all_indices(tuple(full[d] for d in self.dropped)):
            idx = [0] * len(full)
            for d, v in zip(kept, index):
                idx[d] = v
            for d, v in zip(self.dropped, other):
                idx[d] = v
            out.add(self.base.owner(tuple(idx))[0])
        return out

    def __str__(self) -> str:
        return f"replicated({self.base}, dropped={list(self.dropped)})"


def mma_accumulator(shape: tuple[int, ...], threads: int) -> MmaAccumulator | None:
    """The warp arrangement for a gemm accumulator, or None when the shape does not tile into
    16x8 pieces over the block's warps."""
    if len(shape) != 2 or threads % 32:
        return None
    warps = threads // 32
    best = None
    for wm in range(1, warps + 1):
        if warps % wm:
            continue
        wn = warps // wm
        if shape[0] % (wm * 16) or shape[1] % (wn * 8):
            continue
        # Prefer square warp tiles: they load the fewest operand bytes per multiply.
        score = abs(math.log((shape[0] / wm) / (shape[1] / wn)))
        if best is None or score < best[0]:
            best = (score, wm, wn)
    return MmaAccumulator((shape[0], shape[1]), best[1], best[2]) if best else None


def blocked(shape: tuple[int, ...], dtype, threads: int) -> Blocked:
    vec = max(1, VECTOR_BYTES // dtype.itemsize)
    while vec > 1 and shape[-1] % vec:
        vec //= 2
    return Blocked(tuple(shape), threads, vec)


def wgmma_gemm(g: ir.Gemm, buffers: dict, threads: int) -> bool:
    """Whether a gemm fits Hopper's wgmma as tlc generates it: f16/bf16 operands in shared
    memory, A stored K-major, each warpgroup (128 threads) owning 64 rows of the accumulator
    (m64nNk16, N a multiple of 16 up to 256), and operand tiles whose contiguous dimension is
    whole 128-byte segments (the 128-byte swizzle mode)."""
    a, b, c = buffers[g.a], buffers[g.b], buffers[g.c]
    if a.scope != "shared" or b.scope != "shared" or a.dtype != b.dtype or a.dtype.name not in ("f16", "bf16"):
        return False
    if c.dtype.name != "f32" or g.trans_a or len(c.shape) != 2 or threads % 128:
        return False
    m, n = c.shape
    k = a.shape[1]
    seg = 128 // a.dtype.itemsize
    return (m == 64 * (threads // 128) and n % 16 == 0 and n <= 256 and k % seg == 0
            and b.shape[-1] % seg == 0 and a.shape[0] % 8 == 0 and b.shape[0] % 8 == 0)


def wgmma_accumulator(shape: tuple, threads: int) -> MmaAccumulator:
    """wgmma's accumulator: warp w of the block holds rows 16w..16w+15, in each 8 columns the
    pattern of an mma.sync piece: the mma layout with one warp per 16 rows."""
    return MmaAccumulator((shape[0], shape[1]), threads // 32, 1)


def assign_layouts(kernel: ir.Kernel, target: str = "sm_80") -> ir.Kernel:
    """Give every fragment a layout and every parallel loop the layout it runs in; on sm_90a
    a gemm accumulator that wgmma can produce takes wgmma's layout."""
    frags = {b.name: b for b in kernel.buffers if b.scope == "fragment"}
    buffers = {b.name: b for b in kernel.buffers}
    layouts: dict[str, object] = {}
    stmts = list(statements(kernel.body))
    for s in stmts:  # 1. gemm accumulators
        if isinstance(s, ir.Gemm) and s.c not in layouts:
            if target == "sm_90a" and wgmma_gemm(s, buffers, kernel.threads):
                layouts[s.c] = wgmma_accumulator(frags[s.c].shape, kernel.threads)
                continue
            acc = mma_accumulator(frags[s.c].shape, kernel.threads)
            layouts[s.c] = acc or blocked(frags[s.c].shape, frags[s.c].dtype, kernel.threads)
    changed = True
    while changed:  # 2. reductions replicate their source's layout; 3. parallel loops share theirs
        changed = False
        for s in stmts:
            if isinstance(s, ir.Reduce) and s.dst in frags and s.dst not in layouts:
                base = layouts.get(s.src) or _default(frags, s.src, kernel.threads, layouts)
                layouts[s.dst] = Replicated(base, (s.dim,))
                changed = True
            elif isinstance(s, ir.Parallel):
                changed |= _propagate_parallel(s, frags, layouts, kernel.threads)
    for name in frags:  # 4. the rest: vector runs
        if name not in layouts:
            _default(frags, name, kernel.threads, layouts)
    buffers = tuple(replace(b, layout=layouts[b.name]) if b.name in layouts else b for b in kernel.buffers)
    return replace(kernel, buffers=buffers)


def parallel_layout(p: ir.Parallel, kernel: ir.Kernel):
    """The layout a parallel loop's iterations are spread by: its anchor fragment's, or one
    element per thread and round when it touches no fragment of its own shape.  A replicated
    anchor makes every replica run the iteration (each updates its own copy); the code
    generator lets only one replica perform side effects on memory."""
    frags = {b.name: b for b in kernel.buffers if b.scope == "fragment"}
    anchor = _anchor(p, frags)
    if anchor is not None and frags[anchor].layout is not None:
        return frags[anchor].layout
    return Blocked(tuple(p.extents), kernel.threads, 1)


def _default(frags, name, threads, layouts):
    b = frags[name]
    layouts[name] = blocked(b.shape, b.dtype, threads)
    return layouts[name]


def _anchor(p: ir.Parallel, frags) -> str | None:
    """The fragment indexed by all of the loop's variables, in order, that the loop touches."""
    for name, idx in _accesses(p.body):
        if name in frags and len(idx) == len(p.vars) and all(
                isinstance(e, ir.Var) and e.name == v for e, v in zip(idx, p.vars)) \
                and frags[name].shape == tuple(p.extents):
            return name
    return None


def _propagate_parallel(p: ir.Parallel, frags, layouts, threads) -> bool:
    anchor = _anchor(p, frags)
    if anchor is None:
        return False
    if anchor not in layouts:
        if not any(n in layouts for n, _ in _accesses(p.body) if n in frags):
            return False
        _default(frags, anchor, threads, layouts)
    base = layouts[anchor]
    changed = False
    for name, idx in _accesses(p.body):
        if name not in frags or name in layouts:
            continue
        names = [e.name if isinstance(e, ir.Var) else None for e in idx]
        if names == list(p.vars):
            layouts[name] = base
        elif all(x in p.vars for x in names):
            layouts[name] = Replicated(base, tuple(d for d, v in enumerate(p.vars) if v not in names))
        else:
            continue
        changed = True
    return changed


def _accesses(stmts):
    for s in statements(stmts):
        if isinstance(s, ir.Store):
            yield s.name, s.indices
        for e in statement_exprs(s):
            for x in loads(e):
                yield x.name, x.indices


def _linear(index, shape) -> int:
    out = 0
    for i, d in zip(index, shape):
        out = out * d + i
    return out


def _all_indices(shape):
    if not shape:
        yield ()
        return
    for i in range(shape[0]):
        for rest in _all_indices(shape[1:]):
            yield (i,) + rest
