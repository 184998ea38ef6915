"""Lowering `for bx, by in persistent(domain, wave_size, index, group_size=8)`, TileLang's
`T.Persistent` (tilelang src/ir.cc, PersistentFor), into the IR every executor already runs:
the tile counts, the wave size and the index computed once, then a serial loop over the waves

    g = max(1, min(group_size, d_last))              # tiles per group along the last dimension
    padded = cdiv(d_last, g) * d_0 * ... * d_{n-2} * g
    for w in range(cdiv(padded, wave_size)):
        tile = w * wave_size + index
        # tile, in the mixed radix (cdiv(d_last, g), d_0, ..., d_{n-2}, g), last digit fastest:
        v_i = tile // (g * d_{i+1} * ... * d_{n-2}) % d_i            for i < n - 1
        v_last = tile // (g * d_0 * ... * d_{n-2}) * g + tile % g
        if v_last < d_last:
            body

so that consecutive tiles of a wave share a group of g columns (L2 reuse), as TileLang's do.
A tile past the padded domain has v_last >= cdiv(d_last, g) * g >= d_last, so the one test
skips it and the padding alike (TileLang also breaks out of the loop there, which skips the
same iterations). `--emit ir` shows the loop as written here and a note naming it.

The loop is serial, so a pipelined loop inside it is not the top-level pipelined loop that
warp specialization (warpspec.py) takes: on sm_90a it runs on the cp.async ring, as on sm_80."""
from __future__ import annotations

from .. import ir
from ..dtypes import BOOL, I32
from ..frozen import frozen
from ..ir.walk import statements
from ..parser import nodes as n

GROUP_SIZE = 8  # TileLang's default group_size


def _fold(op: str, a: ir.Expr, b: ir.Expr) -> ir.Expr:
    """`a op b` on i32, computed here when both are constants (Python's floor division and
    remainder, the IR's), and without the identities x * 1, x // 1, min/max of equal constants."""
    if isinstance(a, ir.Const) and isinstance(b, ir.Const):
        x, y = a.value, b.value
        value = {"+": lambda: x + y, "-": lambda: x - y, "*": lambda: x * y, "//": lambda: x // y if y else None,
                 "%": lambda: x % y if y else None, "min": lambda: min(x, y), "max": lambda: max(x, y)}[op]()
        if value is not None:
            return ir.Const(value, I32)
    if op in ("*", "//") and isinstance(b, ir.Const) and b.value == 1:
        return a
    if op == "*" and isinstance(a, ir.Const) and a.value == 1:
        return b
    if op == "%" and isinstance(b, ir.Const) and b.value == 1:
        return ir.Const(0, I32)
    return ir.BinOp(op, a, b, I32)


def _cdiv(a: ir.Expr, b: ir.Expr) -> ir.Expr:
    """cdiv(a, b) for b > 0 as the IR writes it elsewhere: (a - 1) // b + 1 (0 for a = 0)."""
    return _fold("+", _fold("//", _fold("-", a, ir.Const(1, I32)), b), ir.Const(1, I32))


def _product(xs) -> ir.Expr:
    out = ir.Const(1, I32)
    for x in xs:
        out = _fold("*", out, x)
    return out


class PersistentLowerer:
    def persistent_loop(self, s: n.For) -> list:
        from .lower import cast

        it = s.iter
        domain, wave_arg, index_arg = it.args[:3]
        group_arg = it.args[3] if len(it.args) == 4 else next((k.value for k in it.keywords if k.name == "group_size"),
                                                               None)
        before: list[ir.Stmt] = []

        def once(stem: str, e: ir.Expr) -> ir.Expr:
            """`e` computed before the loop, as range's bounds are (a constant stays itself)."""
            if isinstance(e, (ir.Const, ir.Var)):
                return e
            name = self.fresh_name(stem)
            self.scalars[name] = I32
            before.append(ir.LetScalar(name, I32, e, span=s.span))
            return ir.Var(name, I32, span=s.span)

        def value(e) -> ir.Expr:
            return cast(self.expr(e), I32)

        raw_dims = [value(d) for d in domain.elts]
        dims = [once("persistent_tiles", d) for d in raw_dims]
        raw_wave = value(wave_arg)
        wave = once("persistent_wave_size",
                    raw_wave if isinstance(raw_wave, ir.Const) else _fold("max", raw_wave, ir.Const(1, I32)))
        raw_index = value(index_arg)
        index = once("persistent_index", raw_index)
        asked = ir.Const(GROUP_SIZE, I32) if group_arg is None else value(group_arg)
        last = dims[-1]
        group = once("persistent_group", _fold("max", ir.Const(1, I32), _fold("min", asked, last)))
        padded = _product([_cdiv(last, group), *dims[:-1], group])
        waves = once("persistent_waves", _cdiv(padded, wave))
        pending, self.pending = self.pending, []  # what the arguments need runs before the loop too

        wave_var = self.fresh_name("persistent_wave")
        tile_var = self.fresh_name("persistent_tile")
        self.scalars[wave_var] = self.scalars[tile_var] = I32
        tile = ir.Var(tile_var, I32, span=s.span)
        coords = []
        for i in range(len(dims) - 1):
            stride = _product([group, *dims[i + 1:-1]])
            coords.append(_fold("%", _fold("//", tile, stride), dims[i]))
        coords.append(_fold("+", _fold("*", _fold("//", tile, _product([group, *dims[:-1]])), group),
                            _fold("%", tile, group)))
        # an index named like a scalar the kernel declares elsewhere (hoisted) gets a name of its own
        names = [t.id for t in s.targets]
        renames = {v: self.fresh_name(v) for v in names if v in self.scalars or v in self.buffers}
        self.renames.append(renames)
        try:
            lets = []
            for v, c in zip(names, coords):
                v = renames.get(v, v)
                self.scalars[v] = I32
                lets.append(ir.LetScalar(v, I32, c, span=s.span))
            body = self.block(s.body)
        finally:
            self.renames.pop()
        v_last = ir.Var(lets[-1].name, I32, span=s.span)
        in_domain = ir.If(ir.BinOp("<", v_last, last, BOOL, span=s.span), body, span=s.span)
        step = ir.LetScalar(tile_var, I32, _fold("+", _fold("*", ir.Var(wave_var, I32, span=s.span), wave), index),
                            span=s.span)
        loop = ir.For(wave_var, ir.Const(0, I32), waves, ir.Const(1, I32), "serial", 1,
                      (step, *lets, in_domain), span=s.span)
        from ..ir.printer import expr as ir_text  # here: a kernel without a walk never imports the printer (#15)

        note = (f"line {s.span.line}: persistent loop over ({', '.join(names)}): a wave of {ir_text(wave)} blocks "
                f"walks tiles {ir_text(wave)} apart from {ir_text(index)}, in groups of {ir_text(asked)} along the "
                f"last dimension (fewer where it has fewer tiles)")
        pipelined = any(isinstance(x, ir.For) and x.kind == "pipelined" for x in statements(body))
        self.note(note + ("; its pipelined loops are not warp-specialized (only a pipelined loop at the top of the "
                          "grid is)" if pipelined else ""))
        walks = self.__dict__.setdefault("persistent_walks", [])
        walks.append(Walk(loop, tuple(raw_dims), raw_wave, raw_index, tuple(x.name for x in lets), body,
                          tuple(pending) + tuple(before), self.__dict__["notes"][-1], s.span.line, tuple(names)))
        return [*pending, *before, loop]


@frozen
class Walk:
    """What persistent_grid.py needs of one lowered walk: the loop, the domain, wave size and
    index as written, the tile's coordinates (their IR names), the body under the guard, the
    statements computed before the loop, the kernel's note about it."""

    loop: ir.For
    dims: tuple
    wave: ir.Expr
    index: ir.Expr
    coords: tuple[str, ...]
    body: tuple
    before: tuple
    note: str
    line: int
    names: tuple[str, ...]  # the coordinates as the source names them

