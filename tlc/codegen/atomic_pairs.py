"""A tile's atomic add into a global f32 tensor, two registers at a time (sm_90's vector red).

Owns one decision of the CUDA generator: whether the parallel loop that `atomic_add(C[r, c], t)`
lowers to (schedule/porting.py: one `Atomic` add of `t[i, j]` at `C[..., c + j]`) adds each pair
of an mma accumulator's registers (registers 2q and 2q + 1: one row, columns c and c + 1, c
even) as one `red.global.add.v2.f32` of 8 bytes: half the instructions, and every 32-byte sector a
warp's adds touch filled (attention's backward adds a dQ partial of 64 x 128 a step this way).
Where a pair's second element lies outside C or the pair is not 8-byte aligned (an odd row
length), its two elements are added one by one, as the scalar loop does; before sm_90 always.
"""
from __future__ import annotations

from .. import ir
from ..ir.walk import variables
from ..schedule.layout import MmaAccumulator, register_in_loop
from .cnames import c_name


class AtomicPairGen:
    def atomic_pair_loop(self, p: ir.Parallel, layout, alias: str) -> bool:
        """Emit `p` two registers at a time (the module's docstring), or nothing and False."""
        s = self.atomic_pair_plan(p, layout)
        if s is None:
            return False
        self.open_pair_loop(p, alias, "one 8-byte red where the pair lies inside (codegen/atomic_pairs.py)")
        self.pair_inside(s.name, s.indices, p.vars[1])
        frag = c_name(s.value.name)
        self.emit(f"tl::red_add_pair(&{self.element(s.name, s.indices, s.span)}, {frag}[tl_r], {frag}[tl_r + 1], "
                  "tl_in[0], tl_in[1]);")
        self.indent -= 1
        self.emit("}")
        return True

    def open_pair_loop(self, p: ir.Parallel, alias: str, what: str) -> None:
        """The loop over `p`'s register pairs, open: the row variable and `tl_col` (the pair's
        first column) of register tl_r, invalid registers skipped (store_pairs.py's too)."""
        self.emit(f"// two registers at a time: {what}")
        self.emit("#pragma unroll")
        self.emit(f"for (int tl_r = 0; tl_r < {alias}::REGS; tl_r += 2) {{")
        self.indent += 1
        self.emit(f"const int {c_name(p.vars[0])} = {alias}::row(threadIdx.x, tl_r);")
        self.emit(f"const int tl_col = {alias}::col(threadIdx.x, tl_r);")
        self.emit(f"if (!{alias}::valid(threadIdx.x, tl_r)) continue;")

    def pair_inside(self, name: str, indices, col: str) -> None:
        """`tl_in[h]`: whether the pair's element h of tensor `name` at `indices` (the column
        variable `col` the pair's) lies inside it; then `col` declared as the pair's first."""
        self.emit("bool tl_in[2];")
        self.emit("#pragma unroll")
        self.emit("for (int tl_h = 0; tl_h < 2; ++tl_h) {")
        self.indent += 1
        self.emit(f"const int {c_name(col)} = tl_col + tl_h;")
        check = self.bounds(name, indices)
        self.emit(f"tl_in[tl_h] = {check or 'true'};")
        self.indent -= 1
        self.emit("}")
        self.emit(f"const int {c_name(col)} = tl_col;")

    def atomic_pair_plan(self, p: ir.Parallel, layout) -> ir.Atomic | None:
        """The loop's atomic add where it can go two registers at a time, else None: one add
        of an f32 fragment laid out as the loop (an mma accumulator, even columns) read at the
        loop's variables, into a tensor whose last index is the column variable plus a term
        that does not read it, no other index reading it."""
        if not isinstance(layout, MmaAccumulator) or len(p.vars) != 2 or len(p.body) != 1 or p.extents[1] % 2:
            return None
        s = p.body[0]
        if not isinstance(s, ir.Atomic) or s.kind != "add" or s.name not in self.params:
            return None
        if self.params[s.name].dtype.name != "f32" or not isinstance(s.value, ir.Load):
            return None
        b = self.buffers.get(s.value.name)
        if b is None or b.scope != "fragment" or b.dtype.name != "f32" or b.layout != layout:
            return None
        if register_in_loop(b.layout, s.value.indices, layout, list(p.vars), p.extents) != "own":
            return None
        return s if at_column(s.indices, p.vars[1]) else None


def at_column(indices, col: str) -> bool:
    """Whether a tensor's `indices` read the column variable `col` only in the last, as `col`
    or `x + col` with x not reading it (a pair's two elements adjacent in the tensor)."""
    *lead, last = indices
    if any(v.name == col for e in lead for v in variables(e)):
        return False
    if isinstance(last, ir.Var) and last.name == col:
        return True
    return isinstance(last, ir.BinOp) and last.op == "+" and isinstance(last.b, ir.Var) and last.b.name == col \
        and not any(v.name == col for v in variables(last.a))
