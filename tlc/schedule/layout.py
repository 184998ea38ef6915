"""Fragment layouts: which thread holds which element of each fragment (DESIGN.md, "The hard
part"): the layouts themselves (blocked vector runs, the mma and wgmma accumulators, replicas
of a reduction), the layouts a target's instructions dictate, and how a thread reads an
element of one (in a loop's register, a replica's slot, one register every thread holds).
Which fragment takes which layout is layout inference's: layout_flow.py propagates them,
layout_infer.py is the pass."""
from __future__ import annotations

import functools
import math

from .. import ir
from ..frozen import frozen
from .tensor_cores import tensor_core_op

VECTOR_BYTES = 16  # one 16-byte access per thread and run: what vectorized copies use


@frozen
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


@frozen
class MmaAccumulator:
    """The accumulator of `mma.sync.m16n8k16`: warps tile the block `warps_m x warps_n`; each
    warp covers its sub-tile in 16x8 pieces, lane t holding rows t/4 and t/4+8, columns
    2*(t%4) and 2*(t%4)+1 of each piece.

    With `wgmma_bands` (one column of warps), a warp's 16-row bands are not contiguous but 64
    rows apart, as wgmma's m64 instructions lay them when a warpgroup issues one per 64 rows
    it owns: warp w's band b holds rows (w // 4) * 64B + 64b + 16(w % 4) .. +15, B the bands
    per warp.  The registers are in the same order (band, piece, half, pair element), so
    everything that groups them (Replicated's slots, tl::Slots) is unchanged.

    With `wgmma_columns` (64 rows, `warps_m` 4), the warpgroups split the columns instead:
    warpgroup g (warps 4g .. 4g + 3) owns columns g * N / warps_n .., warp w rows 16(w % 4)
    .. +15, each warpgroup's part the accumulator of one m64 wgmma (TileLang's FullCol warp
    policy: FlashMLA's 64 x 512 output over two warpgroups, 256 columns each)."""

    shape: tuple[int, int]
    warps_m: int
    warps_n: int
    wgmma_bands: bool = False
    wgmma_columns: bool = False

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
            warp, li = group * 4 + quarter + j // wn, band * 16 + i % 16
        elif self.wgmma_columns:  # warpgroup j // wn, its warp i // 16
            warp, li = (j // wn) * 4 + i // 16, i % 16
        else:
            warp, li = (i // wm) * self.warps_n + j // wn, i % wm
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
        bands = f", bands 64 rows apart" if self.wgmma_bands else ", warpgroups by columns" if self.wgmma_columns else ""
        return f"mma_acc(warps={self.warps_m}x{self.warps_n}, warp_tile={self.warp_tile[0]}x{self.warp_tile[1]}{bands})"


@frozen
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
        whole = held_whole(self)
        if whole == 1:
            return f"in every thread (threads={self.base.threads})"
        if whole:
            return f"whole in every thread ({whole} elements, threads={self.base.threads})"
        return f"replicated({self.base}, dropped={list(self.dropped)})"


def vector_run(layout) -> int:
    """Registers one load fills: a blocked layout's vector width (a replica's, its base's)."""
    while isinstance(layout, Replicated):
        layout = layout.base
    return max(1, getattr(layout, "vec", 2))  # the mma accumulator's pairs


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
    step, N up to 128: 128 registers a thread), or, for 64 rows over several warpgroups, each
    warpgroup N / warpgroups of the columns (`wgmma_column_groups`), and operand tiles whose
    contiguous dimension is whole 128-byte segments (the 128-byte swizzle mode).  A 16-bit A may
    be stored M-major (`trans_a`: a K x M tile, each warpgroup's 64 rows of M one 128-byte
    segment, as attention's dS.T read for dQ = dS @ K)."""
    a, b, c = buffers[g.a], buffers[g.b], buffers[g.c]
    op = tensor_core_op(a.dtype, b.dtype, c.dtype, g.precision)
    if a.scope != "shared" or b.scope != "shared" or op is None or (op.k_major_only and (g.trans_a or not g.trans_b)):
        return False
    if len(c.shape) != 2 or threads % 128:
        return False
    m, n = c.shape
    seg = 128 // a.dtype.itemsize
    if g.trans_a and a.shape[1] % seg:  # M-major A: whole 64-row segments of M
        return False
    k = a.shape[0] if g.trans_a else a.shape[1]
    if g.trans_a and k % 16:
        return False
    groups = wgmma_column_groups(c.shape, threads)
    if groups > 1:  # warpgroups side by side: B's part of each at whole swizzle atoms (8 rows, 128 bytes)
        n //= groups
        if n * groups != c.shape[1] or n % (8 if g.trans_b else seg):
            return False
    bands = m // (64 * (threads // 128 // groups))
    return (bands * 64 * (threads // 128 // groups) == m and bands in (1, 2) and m * n * groups <= 128 * threads
            and n % 16 == 0 and n <= 256 and (g.trans_a or k % seg == 0)
            and b.shape[-1] % seg == 0 and a.shape[0] % 8 == 0 and b.shape[0] % 8 == 0)


def wgmma_bands(shape: tuple, threads: int) -> int:
    """The 64-row bands each warpgroup of `threads` owns in a wgmma accumulator of `shape`."""
    return max(1, shape[0] // (64 * (threads // 128)))


def wgmma_column_groups(shape: tuple, threads: int) -> int:
    """The warpgroups that split a wgmma accumulator's columns: all of them for a tile of 64
    rows over several warpgroups (each an m64 instruction over its N / groups columns), else 1."""
    return threads // 128 if shape[0] == 64 and threads > 128 else 1


def wgmma_accumulator(shape: tuple, threads: int) -> MmaAccumulator:
    """wgmma's accumulator: with 64 rows per warpgroup, warp w of the block holds rows
    16w..16w+15, in each 8 columns the pattern of an mma.sync piece: the mma layout with one
    warp per 16 rows.  With 128, each warp holds two such bands 64 rows apart.  With 64 rows
    over several warpgroups, they split the columns (`wgmma_column_groups`)."""
    groups = wgmma_column_groups(shape, threads)
    if groups > 1:
        return MmaAccumulator((shape[0], shape[1]), 4, groups, False, True)
    return MmaAccumulator((shape[0], shape[1]), threads // 32, 1, wgmma_bands(shape, threads) > 1)


def parallel_layout(p: ir.Parallel, kernel: ir.Kernel):
    """The layout a parallel loop's iterations are spread by: its anchor fragment's, or one
    element per thread and round when it touches no fragment of its own shape.  A replicated
    anchor makes every replica run the iteration (each updates its own copy); the code
    generator lets only one replica perform side effects on memory."""
    if p.layout is not None:  # the scheduler's choice (layout_infer.annotate_loops)
        return p.layout
    from .layout_flow import anchor_of  # (it propagates this module's layouts)

    frags = {b.name: b for b in kernel.buffers if b.scope == "fragment"}
    anchor = anchor_of(p, frags)
    if anchor is not None and frags[anchor].layout is not None:
        return frags[anchor].layout
    return Blocked(tuple(p.extents), kernel.threads, 1)


def squeezed(layout):
    """A blocked layout with its dimensions of size 1 left out: the same threads hold the same
    elements in the same registers (its runs follow the row-major linear index), so a
    fragment [1, N] and a loop over [N] in blocked layouts of one vector width agree."""
    if isinstance(layout, Blocked):
        return Blocked(tuple(d for d in layout.shape if d != 1) or (1,), layout.threads, layout.vec)
    return layout


def register_in_loop(layout, indices, loop_layout, loop_vars, loop_extents, write: bool = False) -> str | None:
    """How a parallel loop reads `frag[indices]` from the registers of the running thread:
    "own" (the loop's register tl_r: the fragment is laid out as the loop and indexed by its
    variables), "slot" (a replica of a reduction over the loop's layout, indexed by the
    variables it keeps), "scalar" (one element every thread holds: register 0), "uniform" (an
    element at constant indices that every thread holds in one register: uniform_register),
    "whole" (a fragment every thread holds whole, at a run-time index: the index is the
    register), or None (another thread holds it: an exchange).  A `write` to a replicated
    fragment needs every replica written: only "own" and "slot" do that.  Indices of size-1
    dimensions that are 0 are left out on both sides, as are the loop's size-1 variables."""
    names = [e.name if isinstance(e, ir.Var) else None for e in indices]
    loop_vars = list(loop_vars)
    if layout == loop_layout and names == loop_vars:
        return "own"
    if isinstance(layout, Replicated) and (layout.base == loop_layout or rows_alike(layout, loop_layout)):
        kept = [v for d, v in enumerate(loop_vars) if d not in layout.dropped]
        if names == kept:
            return "slot"
    if write and isinstance(layout, Replicated):
        return None  # every replica must be written: only a loop that runs in them all (own, slot) does
    whole = held_whole(layout)
    if whole == 1:
        return "scalar"  # one element every thread holds, in its register 0
    if whole and len(indices) == 1 and not isinstance(indices[0], ir.Const):
        return "whole"  # every thread holds every element, element i in register i
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
            and (base.shape[0], base.warps_m, base.warps_n, base.wgmma_bands, base.wgmma_columns)
            == (loop_layout.shape[0], loop_layout.warps_m, loop_layout.warps_n, loop_layout.wgmma_bands,
                loop_layout.wgmma_columns))


def everywhere(threads: int, size: int = 1) -> Replicated:
    """The layout of a 1-D fragment of `size` elements held whole by each of `threads` threads,
    element i in register i (one element: register 0): a replica of a [size, threads] tile
    of one column per thread, its columns dropped."""
    return Replicated(Blocked((size, threads), threads, 1), (1,))


def held_whole(layout) -> int | None:
    """The element count of a fragment every thread holds whole (`everywhere`), else None."""
    if isinstance(layout, Replicated) and isinstance(layout.base, Blocked) and len(layout.base.shape) == 2 \
            and layout == everywhere(layout.base.threads, layout.base.shape[0]):
        return layout.base.shape[0]
    return None


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
