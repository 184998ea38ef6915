"""A parallel loop over a 16-bit float mma fragment, two registers at a time in f16x2 / bf16x2.

Owns one decision of the CUDA generator: whether a `parallel` loop's body, computed for the two
registers of a pair (an mma layout's registers 2q and 2q + 1: one row, columns c and c + 1, c
even), can be one computation on 32-bit pairs, and its C.  What it recognizes is the
magic-number dequantization of packed integers (Marlin's): a 32-bit word whose two halves are the
bits of the pair's two values,

    h = ((w >> u32(4 * p)) & u32(0x000F000F)) | VB2       # the same for both columns
    q = reinterpret(u16(h >> u32(16 * (j % 2))), T)      # column j's half of it
    Wd[i, j] = (q - z) * s                               # z, s: the same for both columns

which, element by element, nvcc computes as two 16-bit extractions and a PRMT to pair them again
(3.9 SASS instructions a weight in std.gemm's matmul_w4a16); as pairs it is one LOP3, one HSUB2
and one HMUL2 a pair.  The values are the language's: each 16-bit operation rounded once (the
_rn forms, as cexpr.py's scalar ones), the same bits as the scalar loop's.

It also recognizes a loop whose last statement casts an f32 value into a 16-bit fragment at the
loop's own element (`ds[i, j] = cast(p[i, j] * (dp[i, j] - d[i]), T)`, the probabilities and dS
of flash attention's products on register A): the body runs for both registers of a pair, then
one conversion rounds the two values into a pair (`__floats2half2_rn`: one F2FP).  Converted
one at a time, ptxas packed the two halves in the wrong order and swapped them back, a PRMT a
pair, or converted each value alone (std.attention's flash_bwd on sm_90a, D = 128, nvcc 13: the
dQ step 601 -> 570 SASS, the dK/dV step 566 -> 518).
Rounded to nearest even either way: the same bits.  On (CAST_PAIRS) since session 28's H200:
flash_bwd B=4 H=32 S=4096 D=128 f16 6.701 -> 6.392 ms (0.811x -> 0.850x cuDNN), causal 3.691 ->
3.593 ms (bench/results/q_B_bwd_block_mask-h200-twentyeighth.txt); only flash_bwd among the std
kernels has such a loop (scripts/options-flip: 12 of 1990 builds, all flash_bwd).

A value is *same* where it is equal for both columns: it does not read the column variable j,
or reads it only through `x // d` with d even of an `x` that maps columns 2q, 2q + 1 to 2p,
2p + 1 (j itself, `j % m` with m even, plus an even offset).  A *halves* value is `u16(x >> (16 *
(j % 2)))` of a same u32 `x`; a *pair* value is a 16-bit float: `reinterpret` of halves, `+ - *`
of pairs and sames.  Anything else, or a body without a halves value reaching the store, and the
loop stays the scalar one (nothing else changes what the generator writes).
"""
from __future__ import annotations

from .. import ir
from ..schedule.layout import MmaAccumulator, register_in_loop
from .cnames import c_name

_PAIR_TYPE = {"f16": "__half2", "bf16": "__nv_bfloat162"}
_BROADCAST = {"f16": "__half2half2", "bf16": "__bfloat162bfloat162"}
_PAIR_OPS = {"+": "__hadd2_rn", "-": "__hsub2_rn", "*": "__hmul2_rn"}


def _even(e: ir.Expr) -> bool:
    """Whether integer `e` is provably even."""
    if isinstance(e, ir.Const):
        return isinstance(e.value, int) and e.value % 2 == 0
    if isinstance(e, ir.BinOp):
        if e.op == "*":
            return _even(e.a) or _even(e.b)
        if e.op in ("+", "-"):
            return _even(e.a) and _even(e.b)
        if e.op == "<<":
            return isinstance(e.b, ir.Const) and e.b.value >= 1
    if isinstance(e, ir.Cast) and e.dtype.is_int and e.x.dtype.is_int:
        return _even(e.x)
    return False


def _pair_name(name: str) -> str:
    """The C name of scalar `name`'s pair (the generator's own: tl_ names are reserved)."""
    return f"tl_x2_{c_name(name)}"


class PairAnalysis:
    """The kinds of a parallel loop body's values over the two columns of a register pair."""

    def __init__(self, col: str):
        self.col = col
        self.kinds: dict[str, str] = {}  # body scalar -> "same" or "pair"

    def same(self, e: ir.Expr) -> bool:
        if isinstance(e, ir.Const):
            return True
        if isinstance(e, ir.Var):
            return e.name != self.col and self.kinds.get(e.name, "same") == "same"
        if isinstance(e, ir.BinOp):
            if e.op == "//" and isinstance(e.b, ir.Const) and _even(e.b) and e.b.value > 0 and self.keeps_pairs(e.a):
                return True
            return self.same(e.a) and self.same(e.b)
        if isinstance(e, (ir.UnaryOp, ir.Cast)):
            return self.same(e.x)
        if isinstance(e, ir.Select):
            return self.same(e.cond) and self.same(e.a) and self.same(e.b)
        if isinstance(e, ir.Call):
            return e.fn != "thread_index" and all(self.same(a) for a in e.args)
        if isinstance(e, ir.Load):
            return all(self.same(i) for i in e.indices)
        return False

    def keeps_pairs(self, e: ir.Expr) -> bool:
        """Whether integer `e` maps columns 2q and 2q + 1 to 2p and 2p + 1."""
        if isinstance(e, ir.Var):
            return e.name == self.col
        if isinstance(e, ir.Cast) and e.dtype.is_int and e.x.dtype.is_int and e.dtype.bits >= 32:
            return self.keeps_pairs(e.x)
        if isinstance(e, ir.BinOp):
            if e.op == "%":
                return isinstance(e.b, ir.Const) and _even(e.b) and e.b.value > 0 and self.keeps_pairs(e.a)
            if e.op == "+":
                return (self.keeps_pairs(e.a) and self.same(e.b) and _even(e.b)) or \
                    (self.keeps_pairs(e.b) and self.same(e.a) and _even(e.a))
            if e.op == "-":
                return self.keeps_pairs(e.a) and self.same(e.b) and _even(e.b)
        return False

    def parity_shift(self, e: ir.Expr) -> bool:
        """Whether `e` is 16 * (j % 2) (in any integer dtype): 0 for the pair's first column, 16 for its second."""
        while isinstance(e, ir.Cast) and e.dtype.is_int:
            e = e.x
        if not (isinstance(e, ir.BinOp) and e.op == "*"):
            return False
        for k, m in ((e.a, e.b), (e.b, e.a)):
            while isinstance(m, ir.Cast) and m.dtype.is_int:
                m = m.x
            if isinstance(k, ir.Const) and k.value == 16 and isinstance(m, ir.BinOp) and m.op == "%" \
                    and isinstance(m.a, ir.Var) and m.a.name == self.col \
                    and isinstance(m.b, ir.Const) and m.b.value == 2:
                return True
        return False

    def halves(self, e: ir.Expr) -> ir.Expr | None:
        """The same u32 `x` where `e` is u16(x >> 16 * (j % 2)), else None."""
        if isinstance(e, ir.Cast) and e.dtype.name == "u16" and isinstance(e.x, ir.BinOp) and e.x.op == ">>" \
                and e.x.dtype.name == "u32" and self.same(e.x.a) and self.parity_shift(e.x.b):
            return e.x.a
        return None

    def pair(self, e: ir.Expr) -> bool:
        """Whether 16-bit float `e` computes as a pair (and reads a halves value somewhere)."""
        if e.dtype.name not in _PAIR_TYPE:
            return False
        if isinstance(e, ir.Var):
            return self.kinds.get(e.name) == "pair"
        if isinstance(e, ir.Call) and e.fn == "bitcast":
            return self.halves(e.args[0]) is not None
        if isinstance(e, ir.Cast) and e.x.dtype == e.dtype:
            return self.pair(e.x)
        if isinstance(e, ir.BinOp) and e.op in _PAIR_OPS and e.a.dtype == e.dtype and e.b.dtype == e.dtype:
            pa, pb = self.pair(e.a), self.pair(e.b)
            return (pa or pb) and (pa or self.same(e.a)) and (pb or self.same(e.b))
        return False


# Whether a cast into a 16-bit fragment rounds its pairs together (cast_pair_loop)
CAST_PAIRS = True

_PAIR_FROM_FLOATS = {"f16": "__floats2half2_rn", "bf16": "__floats2bfloat162_rn"}
_LOW, _HIGH = {"f16": "__low2half", "bf16": "__low2bfloat16"}, {"f16": "__high2half", "bf16": "__high2bfloat16"}


class HalfPairGen:
    """Mixed into the sm_80 generator (sm80.py's parallel_loop asks `pair_loop`, then
    `cast_pair_loop`, first)."""

    def cast_pair_loop(self, p: ir.Parallel, layout, alias: str) -> bool:
        """Emit `p`, whose last statement casts an f32 value into its own element of a 16-bit
        fragment, for both registers of each pair and the cast as one pair conversion (the
        module's docstring); or nothing and False."""
        store = self.cast_pair_store(p, layout)
        if store is None:
            return False
        dt, name = self.buffers[store.name].dtype.name, c_name(store.name)
        self.emit(f"// two registers at a time: the cast rounds a pair, {_PAIR_FROM_FLOATS[dt]} "
                  "(codegen/half_pairs.py)")
        self.emit("#pragma unroll")
        self.emit(f"for (int tl_p = 0; tl_p < {alias}::REGS; tl_p += 2) {{")
        self.indent += 1
        self.emit("float tl_f[2];")
        self.emit("#pragma unroll")
        self.emit("for (int tl_h = 0; tl_h < 2; ++tl_h) {")
        self.indent += 1
        self.emit("const int tl_r = tl_p + tl_h;")
        self.declare_loop_vars(p, alias, "tl_r", void=False)
        self.block(p.body[:-1])
        self.emit(f"tl_f[tl_h] = {self.expr(store.value.x)};")
        self.indent -= 1
        self.emit("}")
        self.emit(f"const {_PAIR_TYPE[dt]} tl_v2 = {_PAIR_FROM_FLOATS[dt]}(tl_f[0], tl_f[1]);")
        self.emit(f"{name}[tl_p] = {_LOW[dt]}(tl_v2);")
        self.emit(f"{name}[tl_p + 1] = {_HIGH[dt]}(tl_v2);")
        self.indent -= 1
        self.emit("}")
        return True

    def cast_pair_store(self, p: ir.Parallel, layout) -> ir.Store | None:
        """The store of `p` that casts an f32 value into its own element of a 16-bit fragment
        in the loop's mma layout, when it is the body's last statement and the only store."""
        if not CAST_PAIRS or not getattr(self, "native_16", False) or not isinstance(layout, MmaAccumulator) \
                or len(p.vars) != 2 or p.extents[1] % 2 or not p.body:
            return None
        store = p.body[-1]
        if not isinstance(store, ir.Store) or any(isinstance(s, ir.Store) for s in p.body[:-1]):
            return None
        b = self.buffers.get(store.name)
        if b is None or b.scope != "fragment" or b.dtype.name not in _PAIR_FROM_FLOATS or b.layout != layout:
            return None
        value = store.value
        if not (isinstance(value, ir.Cast) and value.dtype == b.dtype and value.x.dtype.name == "f32"):
            return None
        if store.indices != tuple(ir.Var(v, i.dtype) for v, i in zip(p.vars, store.indices)) or \
                register_in_loop(b.layout, store.indices, layout, list(p.vars), p.extents) != "own":
            return None
        return store

    def pair_loop(self, p: ir.Parallel, layout, alias: str) -> bool:
        """Emit `p` two registers at a time (the module's docstring), or nothing and False."""
        plan = self.pair_plan(p, layout)
        if plan is None:
            return False
        analysis, store = plan
        dt = self.buffers[store.name].dtype.name
        self.emit(f"// two registers at a time: {_PAIR_TYPE[dt]} (codegen/half_pairs.py)")
        self.emit("#pragma unroll")
        self.emit(f"for (int tl_r = 0; tl_r < {alias}::REGS; tl_r += 2) {{")
        self.indent += 1
        self.declare_loop_vars(p, alias, "tl_r", void=False)
        self.pair_words: list[str] = []  # the words of bitcasts, named as pair_expr meets them
        for s in p.body:
            if isinstance(s, ir.Store):
                continue
            if isinstance(s, ir.Assign) and analysis.kinds.get(s.name) == "pair":
                v = self.pair_expr(s.value, analysis)
                self.emit_pair_words()
                self.emit(f"const {_PAIR_TYPE[dt]} {_pair_name(s.name)} = {v};")
            else:
                self.stmt(s)  # a same value (a pair's scalar keeps its declaration, which nvcc drops)
        v = self.pair_expr(store.value, analysis)
        self.emit_pair_words()
        name = c_name(store.name)
        self.emit(f"{{ const {_PAIR_TYPE[dt]} tl_v2 = {v}; {name}[tl_r] = __low2{'half' if dt == 'f16' else 'bfloat16'}(tl_v2); "
                  f"{name}[tl_r + 1] = __high2{'half' if dt == 'f16' else 'bfloat16'}(tl_v2); }}")
        self.indent -= 1
        self.emit("}")
        return True

    def emit_pair_words(self) -> None:
        for line in self.pair_words:
            self.emit(line)
        self.pair_words.clear()

    def pair_plan(self, p: ir.Parallel, layout):
        """(the analysis, the store) where `p` computes as pairs, else None."""
        if not getattr(self, "native_16", False) or not isinstance(layout, MmaAccumulator) or len(p.vars) != 2:
            return None
        if not p.body or not isinstance(p.body[-1], ir.Store):
            return None
        store = p.body[-1]
        b = self.buffers.get(store.name)
        if b is None or b.scope != "fragment" or b.dtype.name not in _PAIR_TYPE or b.layout != layout \
                or p.extents[1] % 2 or store.indices != (ir.Var(p.vars[0], store.indices[0].dtype),
                                                         ir.Var(p.vars[1], store.indices[1].dtype)):
            return None
        if register_in_loop(b.layout, store.indices, layout, list(p.vars), p.extents) != "own":
            return None
        a = PairAnalysis(p.vars[1])
        assigned: set[str] = set()
        for s in p.body[:-1]:
            if isinstance(s, ir.LetScalar):
                if not a.same(s.value):
                    return None
                a.kinds[s.name] = "same"
            elif isinstance(s, ir.Assign):
                if s.name in assigned or s.name not in a.kinds:
                    return None  # assigned twice, or a name from outside the loop
                assigned.add(s.name)
                if a.same(s.value):
                    a.kinds[s.name] = "same"
                elif a.pair(s.value):
                    a.kinds[s.name] = "pair"
                else:
                    return None
            else:
                return None
        if not a.pair(store.value):
            return None
        return a, store

    def pair_expr(self, e: ir.Expr, a: PairAnalysis) -> str:
        """The C of pair value `e` (PairAnalysis.pair)."""
        dt = e.dtype.name
        if isinstance(e, ir.Var):
            return _pair_name(e.name)
        if isinstance(e, ir.Call):  # bitcast of halves: the word itself, as a pair
            x = a.halves(e.args[0])
            w = f"tl_w{len(self.pair_words)}"
            self.pair_words.append(f"const unsigned {w} = {self.expr(x)};")
            # the word's bits read as the pair (a named word: __halves2half2 of its two halves
            # costs nvcc a shift and a PRMT a pair)
            return f"*reinterpret_cast<const {_PAIR_TYPE[dt]}*>(&{w})"
        if isinstance(e, ir.Cast):
            return self.pair_expr(e.x, a)
        sides = []
        for side in (e.a, e.b):
            sides.append(self.pair_expr(side, a) if a.pair(side) else f"{_BROADCAST[dt]}({self.expr(side)})")
        return f"{_PAIR_OPS[e.op]}({sides[0]}, {sides[1]})"
