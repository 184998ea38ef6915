"""A row group as a kernel: reductions and softmaxes along one axis, with their element-wise
neighbours, in the shape of examples/softmax.tl and examples/layernorm.tl.

Each block owns `kept` rows (axis 1, or a 1-D tensor seen as one row) or columns (axis 0) and
walks the reduced axis in tiles.  The members are computed in passes: a member that reads
another member's result runs one pass later (layernorm's variance after its mean); a softmax's
max and sum share one pass (online softmax: the running sum is rescaled when the max grows).
Each pass copies the tensors it reads into fragments, computes the member's operand masked to
the row's length, and reduces into a per-row statistic (a fragment replicated over the threads
of the row).  When a row fits in one tile, the fragments of the first pass are still in
registers and later passes read no memory.  Then the result: a last pass writes each element
of a full-shape result, or one `parallel` loop over the rows writes a reduced one.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ... import ir
from ...dtypes import BOOL, F32, F64, I32
from ..layout import thread_registers
from ..lower import cast
from . import one_pass
from .build import KernelBuilder, add, cdiv, i32, mul, var
from .graph import Heavy, TileOpError
from .rules import RowTiles

LOG2E = 1.4426950408889634


def acc_dtype(h: Heavy, operand_dtype):
    """The dtype a statistic accumulates in: f64 for f64, f32 for other floats and for means,
    the operand's dtype for integers."""
    if operand_dtype == F64:
        return F64
    if operand_dtype.is_float or h.kind == "softmax" or h.reduce == "mean" or operand_dtype == BOOL:
        return F32
    return operand_dtype


def identity(kind: str, dt) -> ir.Const:
    if kind in ("sum", "mean"):
        return ir.Const(0, dt)
    if dt.is_float:
        return ir.Const(float("-inf") if kind == "max" else float("inf"), dt)
    info = np.iinfo(dt.numpy())
    return ir.Const(int(info.min) if kind == "max" else int(info.max), dt)


class RowKernel:
    def __init__(self, b: KernelBuilder, tiles: RowTiles):
        self.b, self.g, self.tiles = b, b.g, tiles
        group = b.group
        self.space, self.axis = group.space, group.axis
        self.last = len(self.space) == 1 or self.axis == 1  # rows (not columns) are reduced
        space = self.space
        self.kept_dim = 1 if len(space) == 1 else space[0] if self.axis == 1 else space[1]
        self.red_dim = space[-1] if self.last else space[0]
        K, R = tiles.kept, tiles.reduced
        self.tile = (K, R) if self.last else (R, K)
        self.kv, self.rv = b.fresh("i"), b.fresh("j")
        self.vars = (self.kv, self.rv) if self.last else (self.rv, self.kv)
        self.local = tuple(var(v) for v in self.vars)
        self.t = b.fresh("t")
        self.ntiles = b.fresh("tiles")
        self.bx = b.fresh("bx")
        self.extents = (R,) if len(space) == 1 else (K, R) if self.last else (R, K)
        self.bind_tile(self.t)
        self.frags: dict[str, str] = {}  # tensor -> its fragment
        # a column kernel's further tiles an iteration (tiles.step - 1 of them): tensor -> fragment, and
        # each one's loop variable
        steps = 1 if self.last else tiles.step
        self.frags_next: list[dict[str, str]] = [{} for _ in range(steps - 1)]
        self.t_next = [b.fresh("t") for _ in range(steps - 1)]
        self.loaded: set = set()  # fragments a pass before the current one loaded
        self.wanted: list = []  # fragments the statements being built read
        self.stats: dict = {}  # member node -> (fragment, acc dtype) or (max fragment, sum fragment, acc dtype)
        self.scratch: dict = {}  # acc dtype -> tile fragment
        self.one_tile = False  # building the path for rows that fit one tile
        self.exps: dict = {}  # softmax node -> its exponentials (the one-tile path)
        self.result_reads_tiles = True  # the one-tile path's result reads the tensors' tiles
        self.inside = False  # building statements for tiles known to lie inside the tensor: no masks
        self.masks = 0  # masks built so far (mask())
        # statements a pair computed in one pass puts after all the tiles of a column loop's step
        # (one_pass.py's step maximum), and the pairs that put theirs this step
        self.after_tiles: list = []
        self.step_pairs: set = set()

    def bind_tile(self, t: str) -> None:
        """The tile being built is tile `t` (a loop variable): its origin, the global indices
        of its elements, and the index a tensor's elements are read at."""
        K, R = self.tiles.kept, self.tiles.reduced
        self.cur_t = t
        kept0, red0 = mul(var(self.bx), i32(K)), mul(var(t), i32(R))
        self.kept_g, self.red_g = add(kept0, var(self.kv)), add(red0, var(self.rv))
        if len(self.space) == 1:
            self.origin, self.here = (red0,), (self.red_g,)
        elif self.last:
            self.origin, self.here = (kept0, red0), (self.kept_g, self.red_g)
        else:
            self.origin, self.here = (red0, kept0), (self.red_g, self.kept_g)

    # ---- leaves --------------------------------------------------------------------------------------
    def tensor_leaf(self, name: str):
        dtype, shape = self.b.tensors[name]

        def load(idx):
            if tuple(shape) == tuple(self.space) and tuple(idx) == self.here:
                if name not in self.frags:
                    self.frags[name] = self.b.buffer(f"{name}_tile", "fragment", dtype, self.tile)
                if self.frags[name] not in self.wanted:
                    self.wanted.append(self.frags[name])
                return ir.Load(self.frags[name], self.local, dtype)
            return ir.Load(name, tuple(idx), dtype)
        return load

    def reduced_index(self, keepdims: bool) -> tuple:
        pos = len(self.space) - 1 if self.last else 0
        if len(self.space) == 1:
            return (i32(0),)
        if keepdims:
            return tuple(i32(0) if d == pos else x for d, x in enumerate(self.here))
        return tuple(x for d, x in enumerate(self.here) if d != pos)

    def member_leaf(self, h: Heavy):
        text = self.g.text(h.node)
        k = (var(self.kv),)

        def load(idx):
            want = self.here if h.kind == "softmax" else self.reduced_index(h.keepdims)
            if tuple(idx) != want:
                raise TileOpError(f"'{text}' is read at other rows than the ones it reduces",
                                  h.node.span, "keep the reduced axis (keepdims=True) so that it broadcasts "
                                  "along the rows it was computed from")
            dt = self.g.dtype(h.node)
            if h.kind == "softmax":  # exp(x - max) times the reciprocal of the sum (finish_pass)
                m, s, acc = self.stats[h.node]
                if self.one_tile and self.tiles.keep_exp:
                    e = ir.Load(self.exps[h.node], self.local, acc)
                else:
                    x = cast(self.b.lower.value_at(h.node.args[0], self.here, self.space), acc)
                    e = self.exp_minus(h, x, ir.Load(m, k, acc))
                return cast(ir.BinOp("*", e, ir.Load(s, k, acc), acc), dt)
            st, acc = self.stats[h.node]
            return cast(ir.Load(st, k, acc), dt)
        return load

    def exp_minus(self, h: Heavy, x: ir.Expr, m: ir.Expr) -> ir.Expr:
        """A softmax's exp(x - m).  A 16-bit softmax computes it as FlashAttention does,
        2^(x * log2(e) - m * log2(e)) by the hardware approximation (one FFMA and one MUFU.EX2 an
        element; relative error below 2^-21, far under the result's rounding); f32 and f64 keep
        the precise exp."""
        dt = x.dtype
        if self.g.dtype(h.node).bits != 16:
            return ir.Call("exp", (ir.BinOp("-", x, m, dt),), dt)
        log2e = ir.Const(LOG2E, dt)
        return ir.Call("fast_exp2", (ir.BinOp("-", ir.BinOp("*", x, log2e, dt), ir.BinOp("*", m, log2e, dt), dt),), dt)

    # ---- statements ------------------------------------------------------------------------------------
    def mask(self, value: ir.Expr, fill: ir.Const) -> ir.Expr:
        self.masks += 1
        if self.inside:  # a column loop's steps whose tiles lie inside the tensor (tile_loop)
            return value
        inside = ir.BinOp("<", self.red_g, self.b.dim(self.red_dim), BOOL)
        return ir.Select(inside, value, fill, value.dtype)

    def tmp(self, dt) -> str:
        if dt not in self.scratch:
            self.scratch[dt] = self.b.buffer(f"tile_{dt.name}", "fragment", dt, self.tile)
        return self.scratch[dt]

    def over_rows(self, body) -> ir.Parallel:
        return ir.Parallel((self.kv,), (self.tiles.kept,), tuple(body))

    def over_tile(self, body) -> ir.Parallel:
        return ir.Parallel(self.vars, self.tile, tuple(body))

    def member_stmts(self, h: Heavy) -> list:
        b, dim = self.b, 1 if self.last else 0
        if h.node in self.paired_of:  # computed in its pair's first member's pass (one_pass.py)
            return []
        operand = h.node.args[0]
        acc = acc_dtype(h, self.g.dtype(operand))
        pre, v = b.lower.element(operand, self.here, self.space)
        tmp = self.tmp(acc)
        if h.node in self.pairs:
            return one_pass.stmts(self, h, pre, v, acc, tmp)
        if h.kind == "reduce":
            st = self.stats[h.node][0]
            kind = "sum" if h.reduce == "mean" else h.reduce
            fill = ir.Store(tmp, self.local, self.mask(cast(v, acc), identity(h.reduce, acc)))
            return [self.over_tile(pre + [fill]), ir.Reduce(kind, tmp, st, dim, clear=False)]
        m, s, _ = self.stats[h.node]
        if self.one_tile:  # the whole row at once: its max and sum straight into the statistics
            e = self.exps[h.node] if self.tiles.keep_exp else tmp
            expd = ir.Store(e, self.local, self.exp_minus(h, ir.Load(e, self.local, acc), ir.Load(m, (var(self.kv),), acc)))
            return [self.over_tile(pre + [ir.Store(e, self.local, self.mask(cast(v, acc), identity("max", acc)))]),
                    ir.Reduce("max", e, m, dim, clear=False), self.over_tile([expd]),
                    ir.Reduce("sum", e, s, dim, clear=False)]
        tmax, tsum = self.tile_stats[h.node]
        k = (var(self.kv),)
        fill = ir.Store(tmp, self.local, self.mask(cast(v, acc), identity("max", acc)))
        new = b.fresh("new_max")
        load = lambda f: ir.Load(f, k, acc)  # noqa: E731
        rescale = [ir.LetScalar(new, acc, ir.BinOp("max", load(m), load(tmax), acc)),
                   ir.Store(s, k, ir.BinOp("*", load(s), self.exp_minus(h, load(m), ir.Var(new, acc)), acc)),
                   ir.Store(m, k, ir.Var(new, acc))]
        expd = ir.Store(tmp, self.local, self.exp_minus(h, ir.Load(tmp, self.local, acc), load(m)))
        return [self.over_tile(pre + [fill]), ir.Reduce("max", tmp, tmax, dim), self.over_rows(rescale),
                self.over_tile([expd]), ir.Reduce("sum", tmp, tsum, dim),
                self.over_rows([ir.Store(s, k, ir.BinOp("+", load(s), load(tsum), acc))])]

    def tile_loop(self, build) -> list:
        """`for t in range(tiles)`: the copies of the fragments `build()`'s statements read (only
        when there are several tiles, for fragments an earlier pass loaded), then those.  A
        column kernel's loop takes `tiles.step` tiles an iteration, t, t + 1, ..., each into
        fragments of its own: every tile's copies first, so that a thread has that many times
        the loads in flight while its partial sums stay one tile's (column_blocks.defer_column_combine
        gives the reductions into one statistic one partial); a tile past the tensor reads
        nothing and its elements are masked as any past the end.  Where the statements mask
        their elements, the loop is two: the steps whose tiles all lie inside the tensor,
        unmasked, then the rest (at most one step), masked: the masks were a compare and a
        select an element on the hot path, and kept the f16 load's conversion to f16 and back
        (the (16384, 8192) f16 sum_axis0: 494 SASS instructions a step of 64 elements a thread
        -> 349, nvcc 13.0 sm_90a, the TL_WHOLE_RUNS build)."""
        if self.last or not self.t_next:
            copies, stmts = self.tile_stmts(build)
            stmts += self.end_of_step()
            return [ir.For(self.t, i32(0), var(self.ntiles), i32(1), "serial", 1, tuple(copies + stmts))]
        step = len(self.t_next) + 1
        loaded, masks = set(self.loaded), self.masks
        tail = self.column_step(build)
        if self.masks == masks:
            return [ir.For(self.t, i32(0), var(self.ntiles), i32(step), "serial", 1, tuple(tail))]
        self.loaded, self.inside = loaded, True
        main = self.column_step(build)
        self.inside = False
        # steps of whole tiles: (M // (R * step)) * step tiles, each inside the tensor
        rows, span = self.b.dim(self.red_dim), self.tiles.reduced * step
        whole = i32(rows.value // span * step) if isinstance(rows, ir.Const) else \
            mul(ir.BinOp("//", rows, i32(span), I32), i32(step))
        return [ir.For(self.t, i32(0), whole, i32(step), "serial", 1, tuple(main)),
                ir.For(self.t, whole, var(self.ntiles), i32(step), "serial", 1, tuple(tail))]

    def column_step(self, build) -> list:
        """The body of a column loop's iteration: its `tiles.step` tiles' copies, then their
        statements."""
        copies, stmts = self.tile_stmts(build)
        first = self.frags
        lets = []
        for k, t in enumerate(self.t_next):
            self.frags = self.frags_next[k]
            self.bind_tile(t)
            more_copies, more_stmts = self.tile_stmts(build)
            self.frags_next[k] = self.frags
            copies, stmts = copies + more_copies, stmts + more_stmts
            lets.append(ir.LetScalar(t, I32, add(var(self.t), i32(k + 1))))
        self.frags = first
        self.bind_tile(self.t)
        return [*lets, *copies, *stmts, *self.end_of_step()]

    def end_of_step(self) -> list:
        """The statements the step's tiles left for after them (`after_tiles`)."""
        out = self.after_tiles
        self.after_tiles, self.step_pairs = [], set()
        return out

    def tile_stmts(self, build) -> tuple[list, list]:
        """(the copies, the statements) of one tile of the loop over `build()`'s statements."""
        self.wanted = []
        stmts = build()
        copies = []
        for name, f in self.frags.items():
            if f not in self.wanted:
                continue
            c = ir.Copy(ir.Region(name, self.origin, self.extents), ir.BufferRef(f))
            copies.append(c if f not in self.loaded else
                          ir.If(ir.BinOp(">", var(self.ntiles), i32(1), BOOL), (c,)))
        self.loaded |= set(self.wanted)
        return copies, stmts

    # ---- the kernel -------------------------------------------------------------------------------------
    def kernel(self) -> ir.Kernel:
        b, g, group = self.b, self.g, self.b.group
        for node, temp in b.part.temps.items():
            if temp != group.dest:
                b.lower.leaves[node] = self.tensor_leaf(temp)
        for p in g.fn.tensor_params:
            b.lower.leaves[p.name] = self.tensor_leaf(p.name)
        K = self.tiles.kept
        body: list = [ir.LetScalar(self.ntiles, I32, cdiv(b.dim(self.red_dim), self.tiles.reduced))]
        self.tile_stats: dict = {}
        self.same = self.repeated_reductions()

        for h in group.members:
            acc = acc_dtype(h, g.dtype(h.node.args[0]))
            b.lower.leaves[h.node] = self.member_leaf(h)
            if h.node in self.same:  # the statistic of the same reduction written before
                self.stats[h.node] = self.stats[self.same[h.node]]
                continue
            if h.kind == "softmax":
                m, s = b.buffer("row_max", "fragment", acc, (K,)), b.buffer("row_sum", "fragment", acc, (K,))
                self.stats[h.node] = (m, s, acc)
                self.tile_stats[h.node] = (b.buffer("tile_max", "fragment", acc, (K,)),
                                           b.buffer("tile_sum", "fragment", acc, (K,)))
                body += [ir.Fill(m, identity("max", acc)), ir.Fill(s, ir.Const(0, acc))]
            else:
                st = b.buffer(f"row_{h.reduce}", "fragment", acc, (K,))
                self.stats[h.node] = (st, acc)
                body.append(ir.Fill(st, identity(h.reduce, acc)))
        self.pairs = one_pass.pairs(self)  # a column kernel's first member node -> the pair computed in its pass
        self.paired_of = {p.member.node: m for m, p in self.pairs.items()}
        body += one_pass.setup(self)
        if self.tiles.whole and self.tiles.keep_exp:
            # a lone softmax keeps its exponentials in the scratch tile (no other pass needs it):
            # fewer registers a thread, more blocks per SM
            self.exps = {h.node: (self.tmp(self.stats[h.node][2]) if len(group.members) == 1 else
                                  b.buffer("row_exp", "fragment", self.stats[h.node][2], self.tile))
                         for h in group.members if h.kind == "softmax"}
        dest = group.dest
        out_dt, out_shape = b.tensors[dest]
        self.out = b.buffer(f"{dest}_tile", "fragment", out_dt, self.tile) \
            if tuple(out_shape) == tuple(self.space) else None
        tiled = self.tiled_stmts()
        if self.tiles.whole:  # the rows the plan is for fit one tile; longer ones take the loops
            body.append(ir.If(ir.BinOp("==", var(self.ntiles), i32(1), BOOL), tuple(self.one_tile_paths()),
                              tuple(tiled)))
        else:
            body += tiled
        grid = (cdiv(b.dim(self.kept_dim), K),)
        kernel = b.kernel(grid, (self.bx,), self.tiles.threads, tuple(body), self.tiles.min_blocks)
        notes = tuple(one_pass.note(self, m, p) for m, p in self.pairs.items())
        return replace(kernel, notes=kernel.notes + notes) if notes else kernel

    def registers(self, kernel: ir.Kernel) -> int:
        """32-bit registers a thread of the finished `kernel` needs for its fragments at once
        (16-bit elements two to a register): all of them, except on a one-tile path whose
        result reads only the kept exponentials (a softmax), where the tensors' tiles are dead
        before the result's tile is computed, so the smaller of the two is not counted
        (the (., 8192) f16 softmax: 16 + 32 + 16 + 4 statistics, 52 at once); without a
        one-tile path, tiles of 4-byte tensors count twice."""
        frags = {b.name: b for b in kernel.buffers if b.scope == "fragment" and b.layout is not None}
        regs = {name: thread_registers(b) for name, b in frags.items()}
        total = sum(regs.values())
        if not self.tiles.whole:  # the tiled loops of 4-byte tiles take more (ptxas -v: f32 logsumexp of 16384 spills at 80)
            total += sum(regs[f] for f in self.frags.values() if f in frags and frags[f].dtype.itemsize >= 4)
        if self.tiles.whole and self.exps and self.out is not None and not self.result_reads_tiles:
            inputs = sum(regs.get(f, 0) for f in self.frags.values())
            total -= min(inputs, regs.get(self.out, 0))
        return total

    def tiled_stmts(self) -> list:
        """Rows of any length: one loop over the row's tiles per pass, then one for the result."""
        self.one_tile, self.loaded = False, set()
        body: list = []
        for members in self.passes():
            body += self.tile_loop(lambda: [s for h in members for s in self.member_stmts(h)])
            body += self.finish_pass(members)
        if self.out is not None:
            body += self.tile_loop(self.result_tile)
        else:
            body += self.result_rows()
        return body

    def one_tile_paths(self) -> list:
        """The one-tile path, and before it, where its statements mask the columns past the row's
        end, the same path unmasked for rows exactly one tile long (N == the tile's length, the
        shape the plan's bucket was made for when N is a power of two): the masks were an index,
        a compare and a select an element in every pass (the (16384, 8192) f16 var_axis1's path for
        N = 8192, nvcc 13.0 sm_90a, the TL_WHOLE_RUNS build: 536 -> 273 SASS instructions for 32
        elements a thread; sum_axis1 286 -> 168, logsumexp_axis1 528 -> 317)."""
        masks = self.masks
        masked = self.one_tile_stmts()
        if self.masks == masks:
            return masked
        n, length = self.b.dim(self.red_dim), self.tiles.reduced
        if isinstance(n, ir.Const) and n.value != length:
            return masked
        self.inside = True
        exact = self.one_tile_stmts()
        self.inside = False
        if isinstance(n, ir.Const):
            return exact
        return [ir.If(ir.BinOp("==", n, i32(length), BOOL), tuple(exact), tuple(masked))]

    def one_tile_stmts(self) -> list:
        """A row that fits one tile (t = 0): each tensor copied into registers once, every pass
        and the result computed from them, a softmax's exponentials computed once."""
        self.one_tile, self.wanted = True, []
        body: list = [ir.LetScalar(self.t, I32, i32(0))]
        for members in self.passes():
            body += [s for h in members for s in self.member_stmts(h)]
            body += self.finish_pass(members)
        before, self.wanted = self.wanted, []
        body += self.result_tile() if self.out is not None else self.result_rows()
        self.result_reads_tiles = bool(self.wanted)
        self.wanted = before + [f for f in self.wanted if f not in before]
        copies = [ir.Copy(ir.Region(name, self.origin, self.extents), ir.BufferRef(f))
                  for name, f in self.frags.items() if f in self.wanted]
        return body[:1] + copies + body[1:]

    def finish_pass(self, members) -> list:
        """After a pass: a mean divides its sum by the row's length; a softmax keeps the
        reciprocal of its sum, so that each element is multiplied, not divided."""
        out = []
        k = (var(self.kv),)
        for h in members:
            if h.node in self.pairs:
                out += one_pass.finish(self, h)
                continue
            if h.kind == "reduce" and h.reduce == "mean":
                st, acc = self.stats[h.node]
                n = cast(self.b.dim(self.red_dim), acc)
                out.append(self.over_rows([ir.Store(st, k, ir.BinOp("/", ir.Load(st, k, acc), n, acc))]))
            elif h.kind == "softmax":
                _, s, acc = self.stats[h.node]
                out.append(self.over_rows([ir.Store(s, k, ir.BinOp("/", ir.Const(1, acc), ir.Load(s, k, acc), acc))]))
        return out

    def result_tile(self) -> list:
        """Each element of a full-shape result, then its store."""
        b, group = self.b, self.b.group
        out_dt = b.tensors[group.dest][0]
        pre, v = b.lower.element(group.root, self.here, self.space)
        return [self.over_tile(pre + [ir.Store(self.out, self.local, cast(v, out_dt))]),
                ir.Copy(ir.BufferRef(self.out), ir.Region(group.dest, self.origin, self.extents))]

    def result_rows(self) -> list:
        """A reduced result: one element per row."""
        b, group = self.b, self.b.group
        out_dt, out_shape = b.tensors[group.dest]
        idx = self.reduced_index(len(out_shape) == len(self.space))
        pre, v = b.lower.element(group.root, idx, tuple(out_shape))
        return [self.over_rows(pre + [ir.Store(group.dest, idx, cast(v, out_dt))])]

    def repeated_reductions(self) -> dict:
        """Member node -> the earlier member node it repeats: the same reduction (kind and axis)
        of the same operand, written again with other keepdims (logsumexp's max(xf, axis=1,
        keepdims=True) and max(xf, axis=1)).  A repeat reads the first one's statistic and is
        not computed again."""
        first: dict = {}
        same: dict = {}
        for h in self.b.group.members:
            if h.kind != "reduce":
                continue
            key = (h.reduce, h.axis, self.g.text(h.node.args[0]))
            if key in first:
                same[h.node] = first[key]
            else:
                first[key] = h.node
        return same

    def passes(self) -> list[list]:
        """The members by pass: a member runs one pass after the latest member it reads (a
        repeated reduction in none: it reads the first one's statistic)."""
        group, g = self.b.group, self.g
        nodes = {h.node for h in group.members}
        level: dict = {}
        for h in group.members:  # dependencies come first
            if h.node in self.paired_of:  # in its pair's first member's pass
                level[h.node] = level[self.paired_of[h.node]]
                continue
            deps = [d.node for d in g.frontier(h.node.args[0]) if d.node in nodes]
            level[h.node] = 1 + max((level[d] for d in deps), default=-1)
        out: list = [[] for _ in range(max(level.values(), default=-1) + 1)]
        for h in group.members:
            if h.node not in self.same:
                out[level[h.node]].append(h)
        return out
