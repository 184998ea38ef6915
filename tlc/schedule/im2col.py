"""`im2col(img, col, nhw_step, c_step, kernel, stride, dilation, pad)` lowered to a `parallel`
loop over the column tile, one element an index, as TileLang's own lowering for targets
without the TMA's im2col mode (its LowerIm2ColSIMT) gathers it.

Row `i` of `col` is output pixel `m = nhw_step * BM + i` of the flattened (batch, out_h,
out_w); column `j` is position `k = c_step * BK + j` of the flattened (kernel row, kernel
column, channel).  It holds the image element
`img[m // (OH * OW), m % (OH * OW) // OW * stride + k // (KW * C) * dilation - pad,
m % OW * stride + k // C % KW * dilation - pad, k % C]`, with OH and OW the convolution's
output sizes from the image's.  An element in the padding, past the last pixel or past the
last kernel position reads 0 (the first two because a load outside the image reads 0, the
last by its own test: `k // (KW * C)` would wrap into the image again), so a gemm over the
ragged last tiles adds nothing.

The loop is what `--emit ir` shows, and it runs like any loop: its iterations spread over the
block's threads by the scheduler, the interpreter computing it in NumPy."""
from __future__ import annotations

from .. import ir
from ..dtypes import BOOL, I32
from ..ir.nodes import Im2colTile
from . import views


def lower(lw, call, span) -> ir.Stmt:
    img, col = call.args[0].id, call.args[1].id
    nhw, cstep, kernel, stride, dilation, pad = (_i32(lw.expr(a)) for a in call.args[2:])
    rows, cols = lw.buffers[col].shape
    _, h, w, c = views.tensor_dims(lw, call.args[0])
    i, j, m, k = (lw._fresh_name(f"im2col_{v}") for v in ("i", "j", "m", "k"))
    lets = [ir.LetScalar(m, I32, _add(_mul(nhw, _c(rows)), ir.Var(i, I32)), span=span),
            ir.LetScalar(k, I32, _add(_mul(cstep, _c(cols)), ir.Var(j, I32)), span=span)]

    def bind(e: ir.Expr, stem: str = "im2col_t") -> ir.Expr:  # each step a scalar, computed once
        if isinstance(e, (ir.Var, ir.Const)):
            return e
        name = lw._fresh_name(stem)
        lets.append(ir.LetScalar(name, e.dtype, e, span=span))
        return ir.Var(name, e.dtype)

    def out_size(size):  # (size + 2 * pad - dilation * (kernel - 1) - 1) // stride + 1
        span_ = _add(_mul(dilation, kernel), _add(_neg(dilation), _c(1)))
        return _add(_div(_add(_add(size, _mul(_c(2), pad)), _neg(span_)), stride), _c(1))

    mv, kv = ir.Var(m, I32), ir.Var(k, I32)
    n, oy, ox = views.split(mv, (None, out_size(h), out_size(w)), bind)  # the output pixel
    ky, kx, ch = views.split(kv, (None, kernel, c), bind)  # the kernel position and channel
    y = bind(_add(_mul(oy, stride), _add(_mul(ky, dilation), _neg(pad))), "im2col_h")
    x = bind(_add(_mul(ox, stride), _add(_mul(kx, dilation), _neg(pad))), "im2col_w")
    dtype = lw.buffers[col].dtype
    load = ir.Load(img, (n, y, x, ch), dtype, span=span)
    inside = ir.BinOp("and", ir.BinOp("and", ir.BinOp(">=", mv, _c(0), BOOL), ir.BinOp(">=", kv, _c(0), BOOL), BOOL),
                      ir.BinOp("<", kv, _mul(_mul(kernel, kernel), c), BOOL), BOOL)  # split() divides unsigned
    body = (*lets, ir.Store(col, (ir.Var(i, I32), ir.Var(j, I32)), ir.Select(inside, load, ir.Const(0, dtype), dtype),
                            span=span))
    return ir.Parallel((i, j), (rows, cols), body, span=span,
                       im2col=_tile(img, nhw, cstep, kernel, stride, dilation, pad, rows, cols, h, w, c, out_size))


def _tile(img, nhw, cstep, kernel, stride, dilation, pad, rows, cols, h, w, c, out_size) -> Im2colTile | None:
    """The tile as one box of the TMA's im2col mode (ir.Im2colTile): the first pixel's
    (n, oh, ow) and the first column's kernel position (kh, kw) and channel, where the
    convolution's constants are known (else None: the loop alone)."""
    S, D, P = (_value(e) for e in (stride, dilation, pad))
    if None in (S, D, P):
        return None
    keep = lambda e, stem=None: e  # noqa: E731  (one expression tree: the producer computes it once a K step)
    out_h, out_w = out_size(h), out_size(w)
    n, oy, ox = views.split(_mul(nhw, _c(rows)), (None, out_h, out_w), keep)
    tap, ch = views.split(_mul(cstep, _c(cols)), (None, c), keep)
    ky, kx = views.split(tap, (None, kernel), keep)
    coords = (ch, _add(_mul(ox, stride), _neg(pad)), _add(_mul(oy, stride), _neg(pad)), n)
    return Im2colTile(img, (-P, -P), (S, S), (out_w, out_h), coords, (_mul(kx, dilation), _mul(ky, dilation)), cols)


def _i32(e: ir.Expr) -> ir.Expr:
    if e.dtype == I32:
        return e
    return ir.Const(e.value, I32) if isinstance(e, ir.Const) else ir.Cast(e, I32)


def _c(v: int) -> ir.Const:
    return ir.Const(v, I32)


def _value(e):
    return e.value if isinstance(e, ir.Const) else None


def _add(a, b):
    if _value(a) == 0:
        return b
    if _value(b) == 0:
        return a
    if _value(a) is not None and _value(b) is not None:
        return _c(a.value + b.value)
    if _value(b) is not None and isinstance(a, ir.BinOp) and a.op == "+" and _value(a.b) is not None:
        return _add(a.a, _c(a.b.value + b.value))  # (x + 2) + -3 is x + -1
    return ir.BinOp("+", a, b, I32)


def _neg(a):
    return _c(-a.value) if isinstance(a, ir.Const) else ir.UnaryOp("-", a, I32)


def _mul(a, b):
    if _value(a) == 1:
        return b
    if _value(b) == 1:
        return a
    if _value(a) == 0 or _value(b) == 0:
        return _c(0)
    if _value(a) is not None and _value(b) is not None:
        return _c(a.value * b.value)
    return ir.BinOp("*", a, b, I32)


def _div(a, b):
    if _value(b) == 1:
        return a
    if _value(a) is not None and _value(b):
        return _c(a.value // b.value)
    return ir.BinOp("//", a, b, I32)
