"""Fragment layouts: which thread holds which element of each fragment (DESIGN.md, "The hard
part").  Chosen from the strongest uses down: a gemm accumulator takes its tensor-core
instruction's layout; a reduction's destination is replicated over the threads that share
its indices; a fragment used only by copies and parallel loops gets contiguous vector runs;
a parallel loop runs in the layout of the fragment it touches most (its anchor)."""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace

from .. import ir, targets
from ..ir.walk import loads, statement_exprs, statements
from .tensor_cores import tensor_core_op

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
    2*(t%4) and 2*(t%4)+1 of each piece.

    With `wgmma_bands` (one column of warps), a warp's 16-row bands are not contiguous but 64
    rows apart, as wgmma's m64 instructions lay them when a warpgroup issues one per 64 rows
    it owns: warp w's band b holds rows (w // 4) * 64B + 64b + 16(w % 4) .. +15, B the bands
    per warp.  The registers are in the same order (band, piece, half, pair element), so
    everything that groups them (Replicated's slots, tl::Slots) is unchanged."""

    shape: tuple[int, int]
    warps_m: int
    warps_n: int
    wgmma_bands: bool = False

    @property
    def threads(self) -> int:
        return self.warps_m * self.warps_n * 32

    @property
    def warp_tile(self) -> tuple[int, int]:
        return self.shape[0] // self.warps_m, self.shape[1] // self.warps_n

    def owner(self, index: tuple[int, int]) -> tuple[int, int]:
        i, j = index
        wm, wn = self.warp_tile
        if self.wgmma_bands:  # row i: warpgroup i // wm // 4 ... see the class docstring
            group, band, quarter = i // (4 * wm), (i % (4 * wm)) // 64, (i % 64) // 16
            warp, li = group * 4 + quarter, band * 16 + i % 16
        else:
            warp, li = (i // wm) * self.warps_n, i % wm
        warp += j // wn
        lj = j % wn
        piece = (li // 16) * (wn // 8) + lj // 8
        pi, pj = li % 16, lj % 8
        lane = (pi % 8) * 4 + pj // 2
        return warp * 32 + lane, piece * 4 + (pi // 8) * 2 + pj % 2

    @property
    def registers(self) -> int:
        wm, wn = self.warp_tile
        return wm * wn // 32

    def __str__(self) -> str:
        bands = f", bands 64 rows apart" if self.wgmma_bands else ""
        return f"mma_acc(warps={self.warps_m}x{self.warps_n}, warp_tile={self.warp_tile[0]}x{self.warp_tile[1]}{bands})"


@dataclass(frozen=True)
class Replicated:
    """A fragment indexed by fewer dimensions than its base: element `index` is held by every
    thread that holds some element of `base` whose indices outside `dropped` equal `index`.

    Registers are slots: the base's registers that hold one kept index in every thread share a
    slot (`slot(r)`), so a row statistic of a 4 x 1024 tile takes one register per row a thread
    touches, not one per register of the tile.  `rep(s)` is a base register of slot s.  Where
    no grouping holds in every thread, each base register is its own slot.  The C side is
    `tl::Kept` (templates/tl/layout.cuh); tests/codegen check that both agree."""

    base: object
    dropped: tuple[int, ...]

    @property
    def keep(self) -> int:
        """The base dimension kept, viewing a 1-D base as one row (dim 0 of a 1-D base is its
        columns, so dropping it keeps the single row)."""
        if len(self.base.shape) == 1:
            return 0
        return 1 - self.dropped[0]

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(d for i, d in enumerate(self.base.shape) if i not in self.dropped)

    @property
    def _slots(self) -> tuple[int, int, int]:
        """(count, per, mod): slot(r) = (r // per) % mod, or r itself when count == 0."""
        b = self.base
        if isinstance(b, Blocked) and len(b.shape) <= 2:
            cols = b.shape[-1]
            span = b.threads * b.vec
            if cols % span == 0 or span % cols == 0:
                rounds = max(1, cols // span)  # rounds of runs per row
                if self.keep == 0:  # a row per `rounds` runs
                    return -(-(b.registers // b.vec) // rounds), b.vec * rounds, 1 << 30
                return min(b.registers, rounds * b.vec), 1, rounds * b.vec
        if isinstance(b, MmaAccumulator):
            wm, wn = b.warp_tile
            if self.keep == 0:  # pieces (wn / 8) per row band, 2 rows per piece
                return (wm // 16) * 2, 2, 1 << 30
            return (wn // 8) * 2, 1, 1 << 30
        return 0, 1, 1

    @property
    def registers(self) -> int:
        count = self._slots[0]
        return count if count else self.base.registers

    def slot(self, r: int) -> int:
        count, per, mod = self._slots
        if not count:
            return r
        if isinstance(self.base, MmaAccumulator):
            wm, wn = self.base.warp_tile
            piece = r // 4
            if self.keep == 0:
                return (piece // (wn // 8)) * 2 + (r % 4) // 2
            return (piece % (wn // 8)) * 2 + r % 2
        return (r // per) % mod

    def rep(self, s: int) -> int:
        """A base register of slot s: the first one."""
        count, per, _ = self._slots
        if not count:
            return s
        if isinstance(self.base, MmaAccumulator):
            wm, wn = self.base.warp_tile
            if self.keep == 0:
                return (s // 2) * (wn // 8) * 4 + (s % 2) * 2
            return (s // 2) * 4 + s % 2
        return s * per if self.keep == 0 else s

    def kept_index(self, index: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(x for d, x in enumerate(index) if d not in self.dropped)

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
        if isinstance(self.base, Blocked) and self == everywhere(self.base.threads):
            return f"in every thread (threads={self.base.threads})"
        return f"replicated({self.base}, dropped={list(self.dropped)})"


def thread_registers(b: ir.Buffer) -> int:
    """32-bit registers each thread holds for fragment `b` (16-bit elements two to one)."""
    return -(-b.layout.registers * b.dtype.itemsize // 4)


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


def blocked(shape: tuple[int, ...], dtype, threads: int, itemsize: int | None = None) -> Blocked:
    """Runs of one 16-byte vector of the narrowest type the fragment is copied to or from
    (`itemsize`, by default its own): an f32 tile loaded from f16 takes runs of 8, so that its
    copies move 16 bytes per access on the global side."""
    vec = max(1, VECTOR_BYTES // (itemsize or dtype.itemsize))
    while vec > 1 and shape[-1] % vec:
        vec //= 2
    return Blocked(tuple(shape), threads, vec)


def wgmma_gemm(g: ir.Gemm, buffers: dict, threads: int) -> bool:
    """Whether a gemm fits Hopper's wgmma as tlc generates it: operands the tensor cores take
    (`tensor_cores.tensor_core_op`: f16/bf16, f8, 8-bit integers, f32 in tf32 precision) in
    shared memory, A stored K-major (B too unless 16-bit), each warpgroup (128 threads) owning
    64 rows of the accumulator (m64nN, N a multiple of 16 up to 256) or 128 (two m64nN a K
    step, N up to 128: 128 registers a thread), and operand tiles whose contiguous dimension
    is whole 128-byte segments (the 128-byte swizzle mode)."""
    a, b, c = buffers[g.a], buffers[g.b], buffers[g.c]
    op = tensor_core_op(a.dtype, b.dtype, c.dtype, g.precision)
    if a.scope != "shared" or b.scope != "shared" or op is None or (op.k_major_only and not g.trans_b):
        return False
    if g.trans_a or len(c.shape) != 2 or threads % 128:
        return False
    m, n = c.shape
    k = a.shape[1]
    seg = 128 // a.dtype.itemsize
    bands = m // (64 * (threads // 128))
    return (bands * 64 * (threads // 128) == m and bands in (1, 2) and m * n <= 128 * threads
            and n % 16 == 0 and n <= 256 and k % seg == 0
            and b.shape[-1] % seg == 0 and a.shape[0] % 8 == 0 and b.shape[0] % 8 == 0)


def wgmma_bands(shape: tuple, threads: int) -> int:
    """The 64-row bands each warpgroup of `threads` owns in a wgmma accumulator of `shape`."""
    return max(1, shape[0] // (64 * (threads // 128)))


def wgmma_accumulator(shape: tuple, threads: int) -> MmaAccumulator:
    """wgmma's accumulator: with 64 rows per warpgroup, warp w of the block holds rows
    16w..16w+15, in each 8 columns the pattern of an mma.sync piece: the mma layout with one
    warp per 16 rows.  With 128, each warp holds two such bands 64 rows apart."""
    return MmaAccumulator((shape[0], shape[1]), threads // 32, 1, wgmma_bands(shape, threads) > 1)


def assign_layouts(kernel: ir.Kernel, target: str = "sm_80", preset: dict | None = None) -> ir.Kernel:
    """Give every fragment a layout and every parallel loop the layout it runs in; a gemm
    accumulator whose layout the target's own instructions dictate (wgmma's) takes it."""
    frags = {b.name: b for b in kernel.buffers if b.scope == "fragment"}
    buffers = {b.name: b for b in kernel.buffers}
    layouts: dict[str, object] = dict(preset or {})  # fixed before (layout_infer.py's choices)
    stmts = list(statements(kernel.body))
    itemsize = _copy_itemsizes(stmts, frags, kernel)
    default = functools.partial(_default, itemsize=itemsize)
    from . import operand_layout  # (it imports this module's layouts)

    feeds_a = operand_layout.register_a_group(stmts, frags)
    for s in stmts:  # 1. gemm accumulators, and fragment A operands in the layout they are read in
        if isinstance(s, ir.Gemm) and s.c not in layouts:
            pair = operand_layout.register_a_layouts(s, buffers, kernel.threads, target)
            if pair and layouts.get(s.a, pair[0]) == pair[0]:  # (A may feed several gemms)
                layouts[s.a], layouts[s.c] = pair
                continue
            own = targets.get(target).gemm_accumulator(s, buffers, kernel.threads)  # wgmma's, on sm_90a
            if own is not None:
                layouts[s.c] = own
                continue
            acc = (operand_layout.row_warp_accumulator(frags[s.c].shape, kernel.threads) if s.c in feeds_a else None) \
                or mma_accumulator(frags[s.c].shape, kernel.threads)
            layouts[s.c] = acc or blocked(frags[s.c].shape, frags[s.c].dtype, kernel.threads, itemsize.get(s.c))
    changed = True
    while changed:  # 2. reductions replicate their source's layout; 3. loops and copies share theirs
        changed = False
        for s in stmts:
            if isinstance(s, ir.Reduce) and s.dst in frags and s.src in layouts and s.dst not in layouts:
                layouts[s.dst] = Replicated(layouts[s.src], (s.dim,))
                changed = True
            elif isinstance(s, ir.Parallel):
                changed |= _propagate_parallel(s, frags, layouts, kernel.threads, default)
            elif isinstance(s, ir.Copy) and isinstance(s.src, ir.BufferRef) and isinstance(s.dst, ir.BufferRef):
                changed |= _propagate_copy(s.src.name, s.dst.name, frags, layouts)
        if not changed:  # 3b. nothing follows from what is laid out: the first statement that needs a layout
            first = next((x for x in map(lambda s: _needs_layout(s, frags, layouts), stmts) if x), None)
            if first is not None:  # (an unlaid reduction source, a loop's unlaid anchor) takes vector runs
                default(frags, first, kernel.threads, layouts)
                changed = True
    for name in frags:  # 4. the rest: vector runs
        if name not in layouts:
            default(frags, name, kernel.threads, layouts)
    buffers = tuple(replace(b, layout=layouts[b.name]) if b.name in layouts else b for b in kernel.buffers)
    return replace(kernel, buffers=buffers)


def parallel_layout(p: ir.Parallel, kernel: ir.Kernel):
    """The layout a parallel loop's iterations are spread by: its anchor fragment's, or one
    element per thread and round when it touches no fragment of its own shape.  A replicated
    anchor makes every replica run the iteration (each updates its own copy); the code
    generator lets only one replica perform side effects on memory."""
    if p.layout is not None:  # the scheduler's choice (layout_infer.annotate_loops)
        return p.layout
    frags = {b.name: b for b in kernel.buffers if b.scope == "fragment"}
    anchor = _anchor(p, frags)
    if anchor is not None and frags[anchor].layout is not None:
        return frags[anchor].layout
    return Blocked(tuple(p.extents), kernel.threads, 1)


def _needs_layout(s, frags, layouts) -> str | None:
    """The fragment statement `s` would lay out first if nothing else decides: a reduction's
    fragment source, a parallel loop's anchor (whose layout the fragments it touches take)."""
    if isinstance(s, ir.Reduce) and s.src in frags and s.src not in layouts and s.dst in frags:
        return s.src
    if isinstance(s, ir.Parallel):
        anchor = _anchor(s, frags, layouts)
        return anchor if anchor is not None and anchor not in layouts else None
    return None


def _propagate_copy(a: str, b: str, frags, layouts) -> bool:
    """A copy between two fragments of one shape: the one not laid out yet takes the other's
    layout, so that the copy stays in each thread's registers (a dtype change included)."""
    if a not in frags or b not in frags or frags[a].shape != frags[b].shape or (a in layouts) == (b in layouts):
        return False
    src, dst = (a, b) if a in layouts else (b, a)
    layouts[dst] = layouts[src]
    return True


def _default(frags, name, threads, layouts, itemsize=None):
    b = frags[name]
    layouts[name] = blocked(b.shape, b.dtype, threads, (itemsize or {}).get(name))
    return layouts[name]


def _copy_itemsizes(stmts, frags, kernel) -> dict:
    """fragment -> the narrowest element size among what it, and every fragment a parallel loop
    indexes alongside it the same way (they will share one layout), are copied to or from."""
    sizes = {p.name: p.dtype.itemsize for p in kernel.params if p.kind == "tensor"}
    sizes.update({b.name: b.dtype.itemsize for b in kernel.buffers})
    own = {name: b.dtype.itemsize for name, b in frags.items()}
    for s in stmts:
        if isinstance(s, ir.Copy):
            a, b = s.src.name, s.dst.name
            for mine, other in ((a, b), (b, a)):
                if mine in own and other in sizes:
                    own[mine] = min(own[mine], sizes[other])
    group = {name: name for name in frags}  # union-find over fragments that share loops

    def find(n):
        while group[n] != n:
            group[n] = group[group[n]]
            n = group[n]
        return n

    for s in stmts:
        if isinstance(s, ir.Parallel):
            cands = _candidates(s, frags)
            for other in cands[1:]:
                group[find(other)] = find(cands[0])
    least: dict = {}
    for name, size in own.items():
        least[find(name)] = min(least.get(find(name), size), size)
    return {name: least[find(name)] for name in frags}


def _candidates(p: ir.Parallel, frags) -> list[str]:
    """The fragments indexed by all of the loop's variables, in order, that the loop touches."""
    out = []
    for name, idx in _accesses(p.body):
        if name in frags and name not in out and len(idx) == len(p.vars) and all(
                isinstance(e, ir.Var) and e.name == v for e, v in zip(idx, p.vars)) \
                and frags[name].shape == tuple(p.extents):
            out.append(name)
    return out


def squeezed(layout):
    """A blocked layout with its dimensions of size 1 left out: the same threads hold the same
    elements in the same registers (its runs follow the row-major linear index), so a
    fragment [1, N] and a loop over [N] in blocked layouts of one vector width agree."""
    if isinstance(layout, Blocked):
        return Blocked(tuple(d for d in layout.shape if d != 1) or (1,), layout.threads, layout.vec)
    return layout


def register_in_loop(layout, indices, loop_layout, loop_vars, loop_extents) -> str | None:
    """How a parallel loop reads `frag[indices]` from the registers of the running thread:
    "own" (the loop's register tl_r: the fragment is laid out as the loop and indexed by its
    variables), "slot" (a replica of a reduction over the loop's layout, indexed by the
    variables it keeps), "scalar" (one element every thread holds: register 0), "uniform" (an
    element at constant indices that every thread holds in one register: uniform_register), or
    None (another thread holds it: an exchange).  Indices of size-1
    dimensions that are 0 are left out on both sides, as are the loop's size-1 variables."""
    names = [e.name if isinstance(e, ir.Var) else None for e in indices]
    loop_vars = list(loop_vars)
    if layout == loop_layout and names == loop_vars:
        return "own"
    if isinstance(layout, Replicated) and isinstance(layout.base, Blocked) and layout == everywhere(layout.base.threads):
        return "scalar"  # one element every thread holds, in its register 0
    if isinstance(layout, Replicated) and (layout.base == loop_layout or rows_alike(layout, loop_layout)):
        kept = [v for d, v in enumerate(loop_vars) if d not in layout.dropped]
        if names == kept:
            return "slot"
    index = tuple(e.value if isinstance(e, ir.Const) else None for e in indices)
    if isinstance(layout, Replicated) and None not in index and uniform_register(layout, index, layout.base.threads) is not None:
        return "uniform"  # an element every thread holds in one register (ss[0] of a reduction's result)
    if isinstance(layout, Blocked) and isinstance(loop_layout, Blocked) and squeezed(layout) == squeezed(loop_layout):
        units = {v for v, n in zip(loop_vars, loop_extents) if n == 1}
        mine = [n for n, e, d in zip(names, indices, layout.shape)
                if not (d == 1 and (n in units or (isinstance(e, ir.Const) and e.value == 0)))]
        if mine == [v for v in loop_vars if v not in units]:
            return "own"
    return None


def rows_alike(layout: Replicated, loop_layout) -> bool:
    """Whether a row statistic of one mma accumulator sits where one of the loop's would: the
    same threads hold each row in the same slot whatever the columns (flash attention's row
    max of the scores, read in a loop over the output; the loop reads it at its own slot)."""
    base = layout.base
    return (layout.dropped == (1,) and isinstance(base, MmaAccumulator) and isinstance(loop_layout, MmaAccumulator)
            and (base.shape[0], base.warps_m, base.warps_n, base.wgmma_bands)
            == (loop_layout.shape[0], loop_layout.warps_m, loop_layout.warps_n, loop_layout.wgmma_bands))


def everywhere(threads: int) -> Replicated:
    """The layout of one element held by each of `threads` threads (register 0 in each)."""
    return Replicated(Blocked((1, threads), threads, 1), (1,))


def uniform_register(layout, index: tuple[int, ...], threads: int) -> int | None:
    """The register in which every thread of the block holds element `index` of a fragment
    in `layout` (so that it reads as a scalar outside parallel loops), or None when some
    thread does not hold it or threads hold it in different registers."""
    if isinstance(layout, Replicated):
        return _uniform_slot(layout, tuple(index), threads)
    return None


@functools.lru_cache(maxsize=256)
def _uniform_slot(layout: Replicated, index: tuple[int, ...], threads: int) -> int | None:
    base = layout.base
    if math.prod(base.shape) > 1 << 20:
        return None
    slots: dict[int, set] = {}
    for idx in _all_indices(base.shape):
        if layout.kept_index(idx) == index:
            thread, reg = base.owner(idx)
            slots.setdefault(thread, set()).add(layout.slot(reg))
    common = set.intersection(*slots.values()) if len(slots) == threads else set()
    return min(common) if common else None


def _rank(layout) -> int:
    """Which laid-out candidate a loop follows: a gemm accumulator, then a replicated
    fragment (the loop then runs in every replica, and needs no exchange with reduction
    results), then vector runs."""
    return 2 if isinstance(layout, MmaAccumulator) else 1 if isinstance(layout, Replicated) else 0


def _anchor(p: ir.Parallel, frags, layouts=None) -> str | None:
    """The candidate whose layout the loop runs in: of those already laid out, the first of
    the highest rank; else the first candidate.  Candidates laid out by the loop itself get
    the anchor's layout, so the scheduler and the code generator agree on the choice."""
    cands = _candidates(p, frags)
    if layouts is None:
        layouts = {n: frags[n].layout for n in cands if frags[n].layout is not None}
    laid = [n for n in cands if n in layouts]
    if laid:
        return min(laid, key=lambda n: (_exchanges_under(p, frags, layouts, layouts[n]), -_rank(layouts[n]),
                                        laid.index(n)))
    return cands[0] if cands else None


def _exchanges_under(p: ir.Parallel, frags, layouts, loop_layout) -> int:
    """The cost of running loop `p` in `loop_layout`: how many of the fragments it touches,
    already laid out, it would have to exchange through shared memory."""
    return len({name for name, idx in _accesses(p.body) if name in frags and name in layouts
                and register_in_loop(layouts[name], idx, loop_layout, p.vars, p.extents) is None})


def _propagate_parallel(p: ir.Parallel, frags, layouts, threads, default) -> bool:
    anchor = _anchor(p, frags, layouts)
    if anchor is None:
        return False
    if anchor not in layouts:
        if not any(n in layouts for n, _ in _accesses(p.body) if n in frags):
            return False
        default(frags, anchor, threads, layouts)
    base = layouts[anchor]
    changed = False
    for name, idx in _accesses(p.body):
        if name not in frags or name in layouts:
            continue
        names = [e.name if isinstance(e, ir.Var) else None for e in idx]
        if names == list(p.vars):
            layouts[name] = base
        elif names == [v for v in p.vars if v in names] and len(names) < len(p.vars):
            # indexed by some of the loop's variables, in order: a replica over the others
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
