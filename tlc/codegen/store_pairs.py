"""A fragment's elements stored to a global tensor under a row's guard, two registers at a time.

Owns one decision of the CUDA generator: whether a parallel loop over an mma accumulator whose
body is one store of the fragment's element (converted to the tensor's type), alone or under an
`if` that reads no column,

    for i, j in parallel(BM, BN):
        if row0 + i < row_end:                       # the group's rows (std.gemm's grouped kernels)
            C[row0 + i, bx * BN + j] = TC(acc[i, j])

stores each pair of registers (an mma layout's 2q and 2q + 1: one row, columns c and c + 1, c
even) as one store of both elements (`tl::store_pair`: 4 bytes for 16-bit types) where both lie
inside C and the address is aligned to it, else one by one as the scalar loop does.  The values
are the scalar loop's (each converted alone, then paired).  std.gemm's matmul_grouped and
matmul_grouped_f8_blockscaled store so (their tiles must not write the next group's rows, which
a tile copy would): 64 STG.E.U16 a thread a 128 x 128 tile element by element, 32 STG.E paired.
On (STORE_PAIRS) since the H200 timed it (session 28, bench/results/q_E2_f8bs_grouped-h200-twentyeighth.txt,
matmul_grouped_f8_blockscaled at DeepSeek-V3's down experts, 8 x 8192 x 7168 x 2048, outputs checked):
439.0 -> 332.0 us at 128 x 128 (0.434x -> 0.572x torch._scaled_mm per tensor on the dense product),
415.2 -> 299.3 us at 128 x 256 (0.459x -> 0.634x).  It changes those two kernels only (scripts/options-flip:
13 of 1,990 builds, none spilling).
"""
from __future__ import annotations

from .. import ir
from ..ir.walk import loads, subexprs, variables
from ..schedule.layout import MmaAccumulator, register_in_loop
from .atomic_pairs import at_column
from .cexpr import cvt
from .cnames import c_name

STORE_PAIRS = True
_PAIRED = ("f16", "bf16", "f32")  # the tensor element types stored in pairs (4 or 8 bytes)


class StorePairGen:
    def store_pair_loop(self, p: ir.Parallel, layout, alias: str) -> bool:
        """Emit `p` two registers at a time (the module's docstring), or nothing and False."""
        plan = self.store_pair_plan(p, layout)
        if plan is None:
            return False
        cond, s = plan
        col = p.vars[1]
        x = _loaded(s.value)
        src, dst = self.buffers[x.name].dtype, self.params[s.name].dtype
        self.open_pair_loop(p, alias, "one store of both where the pair lies inside (codegen/store_pairs.py)")
        if cond is not None:
            self.emit(f"if ({self.expr(cond)}) {{")
            self.indent += 1
        self.pair_inside(s.name, s.indices, col)
        name = c_name(x.name)
        self.emit(f"tl::store_pair(&{self.element(s.name, s.indices, s.span)}, {cvt(f'{name}[tl_r]', src, dst)}, "
                  f"{cvt(f'{name}[tl_r + 1]', src, dst)}, tl_in[0], tl_in[1]);")
        if cond is not None:
            self.indent -= 1
            self.emit("}")
        self.indent -= 1
        self.emit("}")
        return True

    def store_pair_plan(self, p: ir.Parallel, layout):
        """(the guard or None, the store) where the loop can go two registers at a time, else
        None: one store into a tensor of a `_PAIRED` type of a fragment's element (or its
        conversion to that type) laid out as the loop (an mma accumulator, even columns) and
        read at the loop's variables, the tensor's last index the column variable plus a term
        that does not read it, no other index reading it; alone or under an `if` whose test
        reads no column and loads nothing."""
        if not STORE_PAIRS or not isinstance(layout, MmaAccumulator) or len(p.vars) != 2 or len(p.body) != 1 \
                or p.extents[1] % 2:
            return None
        col = p.vars[1]
        s, cond = p.body[0], None
        if isinstance(s, ir.If):
            if s.orelse or len(s.then) != 1 or any(True for _ in loads(s.cond)) \
                    or col in {v.name for v in variables(s.cond)}:
                return None
            s, cond = s.then[0], s.cond
        if not isinstance(s, ir.Store) or s.name not in self.params or self.params[s.name].dtype.name not in _PAIRED:
            return None
        x = _loaded(s.value)
        if x is None or (isinstance(s.value, ir.Cast) and s.value.dtype != self.params[s.name].dtype) \
                or (isinstance(s.value, ir.Load) and x.dtype != self.params[s.name].dtype):
            return None
        b = self.buffers.get(x.name)
        if b is None or b.scope != "fragment" or b.layout != layout or b.dtype.name not in ("f32", "f16", "bf16"):
            return None
        if register_in_loop(b.layout, x.indices, layout, list(p.vars), p.extents) != "own":
            return None
        return (cond, s) if at_column(s.indices, col) else None


def _loaded(e: ir.Expr) -> ir.Load | None:
    """The fragment load `e` is, or converts (one Cast of a Load), else None."""
    if isinstance(e, ir.Cast):
        e = e.x
    return e if isinstance(e, ir.Load) and not any(isinstance(y, ir.Load) for i in e.indices for y in subexprs(i)) \
        else None
