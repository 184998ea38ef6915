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
from . import views


def lower(lw, call, span) -> ir.Stmt:
    img, col = call.args[0].id, call.args[1].id
    nhw, cstep, kernel, stride, dilation, pad = (_i32(lw.expr(a)) for a in call.args[2:])
    rows, cols = lw.buffers[col].shape
    _, h, w, c = views.tensor_dims(lw, call.args[0])
    i, j, m, k, n, y, x = (lw._fresh_name(f"im2col_{v}") for v in ("i", "j", "m", "k", "n", "h", "w"))

    def out_size(size):  # (size + 2 * pad - dilation * (kernel - 1) - 1) // stride + 1
        span_ = _add(_mul(dilation, kernel), _add(_neg(dilation), _c(1)))
        return _add(_div(_add(_add(size, _mul(_c(2), pad)), _neg(span_)), stride), _c(1))

    oh, ow = out_size(h), out_size(w)
    mv, kv = ir.Var(m, I32), ir.Var(k, I32)
    row = _add(_mul(_mod(_div(mv, ow), oh), stride), _add(_mul(_div(kv, _mul(kernel, c)), dilation), _neg(pad)))
    column = _add(_mul(_mod(mv, ow), stride), _add(_mul(_mod(_div(kv, c), kernel), dilation), _neg(pad)))
    dtype = lw.buffers[col].dtype
    # each coordinate a scalar of its own: the load's bounds test and its address read it
    where = (ir.Var(n, I32), ir.Var(y, I32), ir.Var(x, I32), _mod(kv, c))
    load = ir.Load(img, where, dtype, span=span)
    inside = ir.BinOp("<", kv, _mul(_mul(kernel, kernel), c), BOOL)
    body = (ir.LetScalar(m, I32, _add(_mul(nhw, _c(rows)), ir.Var(i, I32)), span=span),
            ir.LetScalar(k, I32, _add(_mul(cstep, _c(cols)), ir.Var(j, I32)), span=span),
            ir.LetScalar(n, I32, _div(mv, _mul(oh, ow)), span=span),
            ir.LetScalar(y, I32, row, span=span),
            ir.LetScalar(x, I32, column, span=span),
            ir.Store(col, (ir.Var(i, I32), ir.Var(j, I32)), ir.Select(inside, load, ir.Const(0, dtype), dtype), span=span))
    return ir.Parallel((i, j), (rows, cols), body, span=span)


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


def _mod(a, b):
    if _value(b) == 1:
        return _c(0)
    return ir.BinOp("%", a, b, I32)
