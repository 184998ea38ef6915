"""Lowering what a TileLang port brings (typecheck/porting.py checks it): the builtins tlc adds
for it, `while` loops, tile-level atomics, and the performance hints, honoured (`use_swizzle`)
or recorded as ignored in the kernel's notes (`annotate_layout`, gemm's `policy=`), which
`--emit ir` prints."""
from __future__ import annotations

from dataclasses import replace


from .. import ir
from ..dtypes import BOOL, I32, I64
from ..parser import nodes as n
from ..typecheck.porting import tile_dims

# A `while` is a serial loop of at most this many iterations, each starting with the test:
# practically endless on the GPU; the interpreter stops far sooner (interp/machine.py).
WHILE_TRIPS = 2**31 - 1
THREAD_INDEX = ("thread_index", "get_thread_binding")


def extreme(dt, largest: bool):
    """The largest or smallest finite value of `dt` (TileLang's max_value / min_value)."""
    if dt.is_bool:
        return largest
    if dt.is_int:
        bits = dt.bits
        return ((1 << bits) - 1 if largest else 0) if dt.kind == "uint" else \
            ((1 << (bits - 1)) - 1 if largest else -(1 << (bits - 1)))
    top = dt.largest_finite()
    return top if largest else -top


class PortingLowerer:
    def note(self, text: str) -> None:
        notes = self.__dict__.setdefault("notes", [])
        if text not in notes:
            notes.append(text)

    # ---- expressions ---------------------------------------------------------------------------
    def porting_call(self, e: n.Call, name: str, dt):
        """The IR of a builtin added for ports, or None for another name."""
        from .lower import cast

        if name == "clamp":  # TileLang's clamp: max with the low bound, then min with the high one
            x, lo, hi = (cast(self.expr(a), dt) for a in e.args)
            return ir.BinOp("min", ir.BinOp("max", x, lo, dt, span=e.span), hi, dt, span=e.span)
        if name == "reinterpret":
            x = next(a for a in e.args if type(a.ty).__name__ != "DTypeValue")
            return ir.Call("bitcast", (self.expr(x),), dt, span=e.span)
        if name in ("max_value", "min_value"):
            return ir.Const(extreme(dt, name == "max_value"), dt, span=e.span)
        if name in THREAD_INDEX:
            return ir.Call("thread_index", (), I32, span=e.span)
        return None

    # ---- statements ------------------------------------------------------------------------------
    def stmt_While(self, s: n.While):
        """`for w in range(WHILE_TRIPS): if not test: break; body`: `continue` runs the test again,
        and the statements an inlined call in the test needs run before it in every iteration."""
        outer, self.pending = self.pending, []
        cond = self.condition(s.test)
        first, self.pending = self.pending, outer
        var = self.fresh_name("while")
        self.scalars[var] = I32
        exit_ = ir.If(ir.UnaryOp("not", cond, BOOL, span=s.span), (ir.Break(span=s.span),), (), span=s.span)
        body = (*first, exit_, *self.block(s.body))
        return ir.For(var, ir.Const(0, I32), ir.Const(WHILE_TRIPS, I32), ir.Const(1, I32), "while", 1, body,
                      span=s.span)

    def loop_variables(self, s: n.For):
        """`s` lowered with each index that an enclosing loop also uses renamed (Python's inner
        `for i` inside `for i`, as TileLang's ports write: the IR declares every name once), or
        None when this call is the lowering itself."""
        if self.__dict__.get("loop_in_hand") is s:
            return None
        enclosing = self.__dict__.setdefault("enclosing_loop_vars", [])
        names = [t.id for t in s.targets]
        renames = {v: self.fresh_name(v) for v in names if v in enclosing}
        if renames:
            s = replace(s, targets=tuple(replace(t, id=renames.get(t.id, t.id)) for t in s.targets))
            self.renames.append(renames)
        outer, self.loop_in_hand = self.__dict__.get("loop_in_hand"), s
        enclosing.extend(names)
        try:
            return self.stmt_For(s)
        finally:
            del enclosing[len(enclosing) - len(names):]
            self.loop_in_hand = outer
            if renames:
                self.renames.pop()

    def pipelined_range(self, s: n.For, var: str) -> list:
        """`for k in pipelined(start, stop)` as `k0 = start` and a pipelined loop of `kk` over
        0 .. stop - start in which `k` reads `kk + k0`: the pipeliner prefetches copies whose
        origins are functions of its own index from 0 (codegen), and start is read once, as
        range's bounds are."""
        from .lower import cast

        start, stop = (cast(self.expr(a), I32) for a in s.iter.args)
        first = self.fresh_name(f"{var}_start")
        index = self.fresh_name(f"{var}_from_start")
        self.scalars[first] = self.scalars[index] = I32
        stages = next((int(self.const(k.value)) for k in s.iter.keywords if k.name in ("stages", "num_stages")), 2)
        shifted = self.__dict__.setdefault("shifted", {})
        shifted[var] = ir.BinOp("+", ir.Var(index, I32), ir.Var(first, I32), I32, span=s.span)
        try:
            body = self.block(s.body)
        finally:
            del shifted[var]
        count = ir.BinOp("-", stop, ir.Var(first, I32), I32, span=s.span)
        return [ir.LetScalar(first, I32, start, span=s.span),
                ir.For(index, ir.Const(0, I32), count, ir.Const(1, I32), "pipelined", max(stages, 1), body, span=s.span)]

    def fresh_name(self, stem: str) -> str:
        """A name no word of the kernel's file and no earlier fresh name takes."""
        while True:
            name = f"{stem}_{next(self.fresh)}"
            if name not in self.taken:
                self.taken.add(name)
                return name

    def tile_atomic_region(self, call, span):
        """`atomic_add(C[r, c], t)`: a parallel loop over t's elements, each added atomically at
        its place in the region (skipped outside C, as every atomic is)."""
        from .lower import cast

        dst, src = call.args
        tile = self.buffers[src.id]
        rank = len(tile.shape)
        dims = tile_dims(dst, rank)  # checked: not None
        names = tuple(self.fresh_name(f"{call.func.id}_{v}") for v in "ijkl"[:rank])
        if isinstance(dst, n.Subscript):
            idx = [cast((self.expr(x.lower) if x.lower is not None else ir.Const(0, I32)) if isinstance(x, n.Slice)
                        else self.expr(x), I32) for x in dst.indices]
        else:
            idx = [ir.Const(0, I32) for _ in range(rank)]
        for d, v in zip(dims, names):
            idx[d] = ir.BinOp("+", idx[d], ir.Var(v, I32), I32, span=span)
        dtype = dst.ty.dtype
        value = cast(ir.Load(src.id, tuple(ir.Var(v, I32) for v in names), tile.dtype, span=span), dtype)
        kind = call.func.id.split("_", 1)[1]
        target = dst.value.id if isinstance(dst, n.Subscript) else dst.id
        loop = ir.Parallel(names, tile.shape, (ir.Atomic(kind, target, tuple(idx), value, span=span),), span=span)
        order = next((k.value for k in call.keywords if k.name == "order"), None)
        if order is None:
            return loop
        # order=(counts[i], turn): once per block, wait for `turn` updates counted there, update,
        # count this one (ir.Atomic's "turn_wait" and "turn_done")
        counter, turn = order.elts
        where = (counter.value.id, tuple(cast(self.expr(x), I32) for x in counter.indices))
        return [ir.Atomic("turn_wait", *where, cast(self.expr(turn), I32), span=span), loop,
                ir.Atomic("turn_done", *where, ir.Const(1, I32), span=span)]

    def tile_gemm_extras(self, call, c: str) -> list:
        """The statements TileLang's gemm keywords add before it (clear_accum=True: clear c), and
        notes for the hints it ignores."""
        # the checker made each of these a constant (typecheck/porting.py); trans_a= may be a name
        kw = {k.name: k.value.value for k in call.keywords if k.name in ("policy", "k_pack", "wg_wait", "clear_accum")}
        if "policy" in kw:
            self.note(f"gemm policy={kw['policy']} accepted and ignored: the scheduler lays out the accumulator's warps, "
                      "in the warp tiles closest to square (schedule/layout.py)")
        for hint in ("k_pack", "wg_wait"):
            if hint in kw:
                self.note(f"gemm {hint}={kw[hint]} accepted and ignored: the code generator chooses how gemm loads "
                          "its operands and when it waits")
        if kw.get("clear_accum"):
            return [ir.Fill(c, ir.Const(0, self.buffers[c].dtype), span=call.span)]
        return []

    def tile_annotate(self, call, span):
        self.note("annotate_layout accepted and ignored: the scheduler chooses every layout")
        return None

    def tile_use(self, call, span):
        panel, order, enable = (a.value for a in call.args)
        if enable:
            self.swizzle = (int(panel), order, span)
        else:
            self.note("use_swizzle(enable=False): the blocks keep the launch's order")
        return None

    def swizzled(self, block_vars: tuple, grid: tuple, body: tuple):
        """(block vars, body) with the block indices remapped by `use_swizzle` (TileLang's
        rasterization2DRow / 2DColumn): consecutive blocks walk panels of `panel` rows (columns)
        of tiles, alternating direction, so that the tiles in flight share their A and B
        tiles in L2.  A bijection of the grid, so every tile is still computed once."""
        got = self.__dict__.get("swizzle")
        if got is None:
            return block_vars, body
        panel, order, span = got
        if len(block_vars) < 2:
            self.note("use_swizzle ignored: the grid has one dimension")
            return block_vars, body
        raw = tuple(self.fresh_name(f"{v}_launched") for v in block_vars[:2])
        lets: list = []

        def let(stem, value):  # each step a named i64 scalar: the C stays short, the arithmetic exact
            name = self.fresh_name(f"swizzle_{stem}")
            lets.append(ir.LetScalar(name, I64, value, span=span))
            return ir.Var(name, I64)

        x, y = (ir.Cast(ir.Var(v, I32), I64) for v in raw)
        gx, gy = (let(f"g{a}", ir.Cast(g, I64)) for a, g in zip("xy", grid[:2]))
        col, row = _rasterize(x, y, gx, gy, panel, let) if order == "row" else \
            _rasterize(y, x, gy, gx, panel, let, swap=True)
        lets.extend(ir.LetScalar(v, I32, ir.Cast(value, I32), span=span) for v, value in zip(block_vars, (col, row)))
        self.note(f"use_swizzle({panel}, order=\"{order}\"): block indices ({', '.join(block_vars[:2])}) remapped "
                  "in panels")
        return raw + block_vars[2:], tuple(lets) + tuple(body)


def _rasterize(x, y, gx, gy, panel: int, let, swap: bool = False):
    """(column, row) of the tile the block (x, y) of a gx x gy grid computes, walking panels of
    `panel` rows; with `swap` the roles of the axes are exchanged by the caller and the block's
    linear index is still x-major."""
    def c(v):
        return ir.Const(v, I64)

    def b(op, p, q):
        return ir.BinOp(op, p, q, I64)

    linear = let("linear", b("+", y, b("*", x, gy)) if swap else b("+", x, b("*", y, gx)))
    size = b("*", gx, gy)
    panel_size = let("panel", b("*", c(panel), gx))
    offset, index = let("offset", b("%", linear, panel_size)), let("index", b("//", linear, panel_size))
    panels = b("//", b("+", size, b("-", panel_size, c(1))), panel_size)
    last_rows = b("//", b("-", size, b("*", index, panel_size)), gx)
    stride = let("stride", ir.Select(ir.BinOp("<", b("+", index, c(1)), panels, BOOL), c(panel), last_rows, I64))
    along = b("//", offset, stride)
    odd = ir.BinOp("!=", b("%", index, c(2)), c(0), BOOL)
    col = ir.Select(odd, b("-", b("-", gx, c(1)), along), along, I64)
    row = b("+", b("%", offset, stride), b("*", index, c(panel)))
    return (row, col) if swap else (col, row)


