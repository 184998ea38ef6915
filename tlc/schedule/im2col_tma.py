"""Which shared tiles of a pipelined loop the TMA's im2col mode can load (sm_90a's warp
specialization, schedule/warpspec.py): an implicit GEMM's A tile, whose row i is output pixel
m0 + i of a convolution and whose columns are consecutive channels of that pixel's input at
one kernel position.  Two forms are seen as such a tile (ir.Im2colTile):

- `im2col(x, xs, ...)`'s loop (schedule/im2col.py records its tile when it lowers it), whose
  columns are im2col's flattened (kh, kw, c): one kernel position where C is a multiple of
  them, which the host checks when it encodes the map;
- a row gather written out (std.conv's conv2d), each K step one kernel position and BK
  channels from c0, channels past C reading 0:

      for i, j in parallel(BM, BK):
          m = by * BM + i
          xs[i, j] = x[m // (OW * OH), m // OW % OH * S + kh * D - P, m % OW * S + kw * D - P, c0 + j]

  (or `m // OW // OH` for the image), OW and OH any expressions of shape symbols and constants
  (the kernel's own scalars defined once before the loop included), S a constant stride;
  each spatial index is the pixel's term, a constant (the window's corner, -P) and terms that
  are never negative (the kernel position's offset, which the TMA takes as unsigned).

The TMA's walk over the window's corners (`lower + stride * t` along W, then H, then the next
image, pixels past the last image reading 0) is then the loop's pixel order, and its zero fill
outside the image (and past C) the loop's reads of 0 outside the tensor.

A window that is the identity (a 1 x 1 kernel at stride 1 without padding: `identity_window`)
makes the tile consecutive rows of the image seen as [N * H * W, C]; with TILED_IDENTITY (off
until timed) it is loaded as tiled boxes of that view instead (StageLoad.tiled)."""
from __future__ import annotations

from .. import ir
from ..ir.nodes import Im2colTile
from ..ir.walk import variables

_MAX_STRIDE = 8  # the TMA's traversal strides
# an identity window's tile (a 1 x 1 kernel at stride 1 without padding: `identity_window`)
# loaded as a tiled box of the image seen as [N * H * W, C] rather than in the im2col mode; off:
# the H200 timed no gain (session 28, bench/results/q_F_conv_1x1_gemm-h200-twentyeighth.txt, batch
# 64, x cuDNN): r50_s1_1x1_64 101.1 -> 101.1 TFLOP/s (0.94x both), r50_s3_1x1_1024 371.6 -> 351.9
# (0.97x -> 0.96x)
TILED_IDENTITY = False


def gathered_tile(g, params: dict, loop_var: str, symbols: set, blocks: set, defs: dict) -> Im2colTile | None:
    """The im2col tile a row gather (gather_rows.RowGather) fills, or None.  `symbols`: the
    shape symbols, `blocks` the block indices (both never negative); `defs`: the kernel's
    scalars set once before the loop, by their values."""
    sizes = set(symbols) | set(blocks)
    if not g.simple or g.cond is not None or len(g.indices) != 4 or len(params[g.src].shape) != 4:
        return None
    i, j = g.loop.vars
    env: dict = {}
    for s in g.lets:  # the loop's scalars substituted, in order
        env[s.name] = _subst(s.value, env)
    n_e, h_e, w_e, c_e = (_subst(e, env) for e in g.indices)
    c0 = _minus_j(c_e, j)
    if c0 is None or _reads(c0, {i, j}):
        return None
    w_part = _pixel_term(w_e, i, j)
    h_part = _pixel_term(h_e, i, j)
    if w_part is None or h_part is None:
        return None
    (w_x, w_s, w_lo, w_off), (h_x, h_s, h_lo, h_off) = w_part, h_part
    # w_x: m % OW; h_x: m // OW % OH; n_e: m // (OW * OH) or m // OW // OH
    if not (_op(w_x, "%") and _op(h_x, "%") and _op(h_x.a, "//")):
        return None
    m, ow = w_x.a, w_x.b
    if h_x.a.a != m or h_x.a.b != ow:
        return None
    oh = h_x.b
    if not (_op(n_e, "//") and (n_e.a == m and _op(n_e.b, "*") and {n_e.b.a, n_e.b.b} == {ow, oh}
                                 or n_e.a == h_x.a and n_e.b == oh)):
        return None
    base = _minus_j(m, i)
    if base is None or _reads(base, {i, j}):
        return None
    for off in (w_off, h_off):
        if not _never_negative(off, loop_var, sizes, defs):
            return None
    out = []
    for e in (ow, oh):
        e = _subst(e, defs)
        if any(v.name not in symbols for v in variables(e)):  # the host computes it
            return None
        out.append(e)
    # the first pixel's corner: the pixel terms at i = 0, the offsets left out
    first = {i: ir.Const(0, w_e.dtype)}
    coords = (c0, _subst(_sum(_times(w_x, w_s), ir.Const(w_lo, w_e.dtype)), first),
              _subst(_sum(_times(h_x, h_s), ir.Const(h_lo, h_e.dtype)), first), _subst(n_e, first))
    return Im2colTile(g.src, (w_lo, h_lo), (w_s, h_s), tuple(out), coords, (w_off, h_off))


def _pixel_term(e, i: str, j: str):
    """A spatial index as (X, S, lo, offset): its one term reading i, X * S (or X: S = 1), the sum
    of its constants, and the rest (an Expr, or a zero Const) -- or None."""
    terms = _terms(e)
    if terms is None:
        return None
    pixel = [t for t in terms if _reads(t, {i})]
    if len(pixel) != 1 or any(_reads(t, {j}) for t in terms):
        return None
    x, s = pixel[0], 1
    if _op(x, "*") and isinstance(x.b, ir.Const):
        x, s = x.a, x.b.value
    elif _op(x, "*") and isinstance(x.a, ir.Const):
        x, s = x.b, x.a.value
    if not (isinstance(s, int) and 1 <= s <= _MAX_STRIDE) or _reads(x, {j}):
        return None
    rest = [t for t in terms if t is not pixel[0]]
    lo = sum(t.value for t in rest if isinstance(t, ir.Const))
    offset = [t for t in rest if not isinstance(t, ir.Const)]
    off = offset[0] if offset else ir.Const(0, e.dtype)
    for t in offset[1:]:
        off = ir.BinOp("+", off, t, e.dtype)
    return x, s, int(lo), off


def _terms(e):
    """`e` as the terms of a sum (a subtracted constant negated), or None where a term that is
    not a constant is subtracted."""
    if _op(e, "+"):
        a, b = _terms(e.a), _terms(e.b)
        return None if a is None or b is None else a + b
    if _op(e, "-"):
        a, b = _terms(e.a), _terms(e.b)
        if a is None or b is None or not all(isinstance(t, ir.Const) for t in b):
            return None
        return a + [ir.Const(-t.value, t.dtype) for t in b]
    if isinstance(e, ir.UnaryOp) and e.op == "-" and isinstance(e.x, ir.Const):
        return [ir.Const(-e.x.value, e.dtype)]
    if isinstance(e, ir.Const) and not isinstance(e.value, int):
        return None
    return [e]


def _never_negative(e, loop_var: str, sizes: set, defs: dict) -> bool:
    """Whether `e` is a sum, product, quotient or remainder of non-negative constants, the
    pipelined loop's variable (from 0), sizes (shape symbols, block indices) and the kernel's
    scalars whose values are such: never negative."""
    if isinstance(e, ir.Const):
        return isinstance(e.value, int) and e.value >= 0
    if isinstance(e, ir.Var):
        if e.name == loop_var or e.name in sizes:
            return True
        return e.name in defs and _never_negative(defs[e.name], loop_var, sizes, {})
    if _op(e, "+") and _op(e.a, "//") and _op(e.a.a, "-") and all(
            isinstance(x, ir.Const) and x.value == 1 for x in (e.b, e.a.a.b)) and \
            isinstance(e.a.b, ir.Const) and e.a.b.value > 0:
        return _never_negative(e.a.a.a, loop_var, sizes, defs)  # cdiv(X, d): (X - 1) // d + 1, 0 at X = 0
    if isinstance(e, ir.BinOp) and e.op in ("+", "*", "//", "%"):
        return _never_negative(e.a, loop_var, sizes, defs) and _never_negative(e.b, loop_var, sizes, defs)
    if isinstance(e, ir.Cast) and e.dtype.is_int and e.x.dtype.is_int:
        return _never_negative(e.x, loop_var, sizes, defs)
    return False


def _minus_j(e, j: str):
    """`a` where `e` is `a + j` or `j + a` (a Const 0 where `e` is `j`), else None."""
    if isinstance(e, ir.Var) and e.name == j:
        return ir.Const(0, e.dtype)
    if _op(e, "+"):
        if isinstance(e.b, ir.Var) and e.b.name == j:
            return e.a
        if isinstance(e.a, ir.Var) and e.a.name == j:
            return e.b
    return None


def _op(e, op: str) -> bool:
    return isinstance(e, ir.BinOp) and e.op == op


def _reads(e, names: set) -> bool:
    return any(v.name in names for v in variables(e))


def _times(x, s: int):
    return x if s == 1 else ir.BinOp("*", x, ir.Const(s, x.dtype), x.dtype)


def _sum(a, b):
    return a if isinstance(b, ir.Const) and b.value == 0 else ir.BinOp("+", a, b, a.dtype)


def _subst(e, env: dict):
    """`e` with the variables of `env` replaced by their values (Exprs)."""
    if isinstance(e, ir.Var):
        return env.get(e.name, e)
    if isinstance(e, ir.Const):
        return e
    if isinstance(e, ir.BinOp):
        return ir.BinOp(e.op, _subst(e.a, env), _subst(e.b, env), e.dtype)
    if isinstance(e, ir.UnaryOp):
        return ir.UnaryOp(e.op, _subst(e.x, env), e.dtype)
    if isinstance(e, ir.Cast):
        return ir.Cast(_subst(e.x, env), e.dtype)
    return e


def kernel_scalars(before) -> dict:
    """The kernel's scalars that the statements before the pipelined loop set at the top level
    (a `let` and assignments after it), by their last values in terms of what came before;
    a scalar also set inside a nested statement is left out."""
    from ..ir.walk import statements

    defs: dict = {}
    nested = set()
    for s in before:
        if isinstance(s, (ir.LetScalar, ir.Assign)):
            defs[s.name] = _subst(s.value, defs)
        else:
            nested |= {x.name for x in statements([s]) if isinstance(x, (ir.LetScalar, ir.Assign))}
    return {k: v for k, v in defs.items() if k not in nested}


def written_in(stmts) -> set:
    """The scalars `stmts` set (a loop's body: its own lets and assignments)."""
    from ..ir.walk import statements

    return {x.name for x in statements(stmts) if isinstance(x, (ir.LetScalar, ir.Assign))}


def identity_window(t, img_shape: tuple, loop: ir.For, defs: dict) -> bool:
    """Whether im2col tile `t` (a row gather's) is the image's own rows: its window's corner at
    (0, 0), stride 1, the kernel position's offsets 0 for every step of `loop` (the loop's
    variable divided by its whole length, anything modulo 1) and (w, h) output pixels the
    image's W and H (equal at every size up to 4096): a 1 x 1 convolution at stride 1 without
    padding, whose tile m0 .. m0 + rows - 1 is that many consecutive rows of the image seen as
    [N * H * W, C].  `defs`: the kernel's scalars set once before the loop."""
    if t.columns or tuple(t.lower) != (0, 0) or tuple(t.stride) != (1, 1) or len(img_shape) != 4:
        return False
    from ..ir.printer import expr as text
    stop = text(_subst(loop.stop, defs))

    def zero(e) -> bool:  # 0 for every step of the loop
        if isinstance(e, ir.Const):
            return e.value == 0
        if isinstance(e, ir.Cast):
            return zero(e.x)
        if not isinstance(e, ir.BinOp):
            return False
        if e.op == "*":
            return zero(e.a) or zero(e.b)
        if e.op == "%":
            return zero(e.a) or (isinstance(e.b, ir.Const) and e.b.value == 1)
        if e.op == "//":
            return zero(e.a) or (isinstance(e.a, ir.Var) and e.a.name == loop.var and text(_subst(e.b, defs)) == stop)
        if e.op in ("+", "-"):
            return zero(e.a) and zero(e.b)
        return False
    if not all(zero(_subst(o, defs)) for o in t.offsets):
        return False
    for out, dim in zip(t.out, (img_shape[2], img_shape[1])):  # w, h
        if not isinstance(dim, ir.Var) or {v.name for v in variables(out)} != {dim.name}:
            return False
        if any(_value(out, {dim.name: n}) != n for n in range(1, 4097)):
            return False
    return True


def _value(e, env: dict):
    """An integer Expr of + - * // % min max over `env`'s values (Python's floor semantics, the
    IR's), or None where it divides by 0 or holds anything else."""
    if isinstance(e, ir.Const):
        return e.value if isinstance(e.value, int) else None
    if isinstance(e, ir.Var):
        return env.get(e.name)
    if isinstance(e, ir.Cast):
        return _value(e.x, env)
    if not isinstance(e, ir.BinOp) or e.op not in ("+", "-", "*", "//", "%", "min", "max"):
        return None
    a, b = _value(e.a, env), _value(e.b, env)
    if a is None or b is None or (e.op in ("//", "%") and b == 0):
        return None
    return {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "//": lambda: a // b, "%": lambda: a % b,
            "min": lambda: min(a, b), "max": lambda: max(a, b)}[e.op]()
