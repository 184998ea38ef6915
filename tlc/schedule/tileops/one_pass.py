"""Two reductions of a column kernel that would take two passes over the tensor, in one.

A column kernel (rows.RowKernel with axis 0) computes a member that reads another member's
result one pass later: var_axis0's centred squares after its mean, logsumexp_axis0's sum of
exponentials after its max.  Each pass reads the whole tensor from memory (a column block's
rows do not stay in L2), so such a kernel moves twice the bytes and cannot pass half of the
copy bandwidth.  Two pairs are computed in the first member's pass instead, each thread
keeping running values for each place of its tile (registers of the tile's shape), combined
across the threads after the loop:

- **centred**: `mean(e, axis=0, keepdims=True)` and the sum or mean of `c * c`, `c = e - that
  mean`.  Each place keeps a shift (the first value it read), the sum of the differences from
  it and the sum of their squares; after the loop mean = sum(n shift + sum(d)) / rows and the
  centred squares are sum(d^2) - 2 (mean - shift) sum(d) + n (mean - shift)^2, n the rows the
  place saw.  The shift is one of the values it is subtracted from, so n (mean - shift)^2 is at
  most about n times the place's own centred squares: the subtraction loses at most log2(n)
  bits of f32 (n = rows / tile rows), where one shift per column (or none: E[x^2] - E[x]^2)
  loses log2 of the column's rows or its mean's magnitude.
- **exponentials**: `max(e, axis=0, keepdims=True)` and `sum(exp(e - that max), axis=0)`.
  Each place keeps its maximum, and a sum of exp(e - r) about a reference r.  Once a step of
  the column loop (`Rules.col_step_max`, the default): the step's tiles' maxima first, then r
  raised to the place's maximum (the sum rescaled by exp(r_old - r), one exponential a place a
  step) and each element's exp(e - r) added: an element costs one exponential, an add, a
  maximum and its conversion (the (16384, 8192) f16 loop's SASS 960 -> 743 instructions for 64
  elements a thread; on the H200 81.8 -> 76.5 us, bf16 86.7 -> 86.5,
  bench/results/col_reductions-h200-twentyfourth.txt).  Lazily otherwise: r is one of the place's values, raised to a
  new value only when that value exceeds it by more than `LAZY` (the sum is then rescaled:
  both in one exponential, `exp(-(e - r))` or `exp(e - r)`, so an element costs one, with
  three selects).  A sum's terms are at most 1 (e^LAZY lazily) each, far from f32's range for
  any number of rows, and after the loop sum = sum over places of s exp(r - max).  r starts at
  the lowest finite value, so a place's first value takes its place, and -inf elements add 0.

Shown in `--emit ir` as a note on the kernel.
"""
from __future__ import annotations


import numpy as np

from ... import ir
from ...dtypes import BOOL, I32
from ...frozen import frozen
from ...parser import nodes as n
from ..lower import cast
from .build import add, i32, var
from .graph import Heavy, builtin_call

LAZY = 32.0  # a place's reference is raised once an element exceeds it by this (e^32 ~ 8e13)


@frozen
class Pair:
    kind: str  # "centred" or "exponentials"
    member: Heavy  # the member computed in the first one's pass
    acc: object = None  # the dtype the running values are kept in (the first member's statistic's)
    frags: tuple = ()  # their tile fragments, by kind: (shift, sum(d), sum(d^2)) or (max, r, s)


def pairs(k) -> dict:
    """first member node -> Pair, for a column kernel `k` (a RowKernel); {} for rows."""
    if k.last:
        return {}
    g, members = k.g, k.b.group.members
    firsts = {h.node: h for h in members if h.kind == "reduce" and h.keepdims and h.axis == 0
              and h.reduce in ("mean", "max") and g.dtype(h.node.args[0]).is_float}
    out: dict = {}
    for h in members:
        if h.kind != "reduce" or h.axis != 0 or h.node in firsts:
            continue
        found = _centred(g, h, firsts) if h.reduce in ("sum", "mean") else None
        found = found or (_exponentials(g, h, firsts) if h.reduce == "sum" else None)
        if found is not None and found[0] not in out:
            m, kind = found
            out[m] = Pair(kind, h)
    for m, p in list(out.items()):
        acc = k.stats[m][-1]
        names = ("shift", "shifted_sum", "shifted_squares") if p.kind == "centred" else ("place_max", "place_ref",
                                                                                           "place_sum")
        out[m] = Pair(p.kind, p.member, acc, tuple(k.b.buffer(x, "fragment", acc, k.tile) for x in names))
    return out


def _centred(g, h: Heavy, firsts: dict):
    sq = g.resolve(h.node.args[0])
    if not (isinstance(sq, n.BinOp) and sq.op == "*" and g.resolve(sq.left) == g.resolve(sq.right)):
        return None
    c = g.resolve(sq.left)
    if not (isinstance(c, n.BinOp) and c.op == "-"):
        return None
    m = g.resolve(c.right)
    if m in firsts and firsts[m].reduce == "mean" and g.resolve(m.args[0]) == g.resolve(c.left) \
            and g.dtype(c) == g.dtype(m) == g.dtype(sq):
        return m, "centred"
    return None


def _exponentials(g, h: Heavy, firsts: dict):
    e = g.resolve(h.node.args[0])
    if builtin_call(e) != "exp" or len(e.args) != 1:
        return None
    c = g.resolve(e.args[0])
    if not (isinstance(c, n.BinOp) and c.op == "-"):
        return None
    m = g.resolve(c.right)
    if m in firsts and firsts[m].reduce == "max" and g.resolve(m.args[0]) == g.resolve(c.left) \
            and g.dtype(c) == g.dtype(m) == g.dtype(e):
        return m, "exponentials"
    return None


def setup(k) -> list:
    """The running values' fills, before the loop."""
    out = []
    for p in k.pairs.values():
        acc = p.acc
        if p.kind == "centred":
            out += [ir.Fill(f, ir.Const(0, acc)) for f in p.frags]
        else:
            lowest = float(-np.finfo(acc.numpy()).max)
            out += [ir.Fill(p.frags[0], ir.Const(float("-inf"), acc)), ir.Fill(p.frags[1], ir.Const(lowest, acc)),
                    ir.Fill(p.frags[2], ir.Const(0, acc))]
    return out


def stmts(k, h: Heavy, pre: list, v: ir.Expr, acc, tmp: str) -> list:
    """The first member's statements for one tile: each place's running values."""
    p = k.pairs[h.node]
    at = lambda f: ir.Load(f, k.local, acc)  # noqa: E731
    if p.kind == "centred":
        shift, s1, s2 = p.frags
        first = ir.BinOp("==", var(k.cur_t), i32(0), BOOL)
        d = ir.BinOp("-", cast(v, acc), at(shift), acc)
        return [k.over_tile(pre + [
            ir.Store(shift, k.local, ir.Select(first, k.mask(cast(v, acc), ir.Const(0, acc)), at(shift), acc)),
            ir.Store(tmp, k.local, k.mask(d, ir.Const(0, acc))),
            ir.Store(s1, k.local, ir.BinOp("+", at(s1), at(tmp), acc)),
            ir.Store(s2, k.local, ir.BinOp("+", at(s2), ir.BinOp("*", at(tmp), at(tmp), acc), acc))])]
    top, ref, s = p.frags
    if k.tiles.step_max:
        return _step_max(k, h, p, pre, v, acc, tmp)
    x, d = k.b.fresh("x"), k.b.fresh("d")
    grow = k.b.fresh("grow")
    X, D, G = ir.Var(x, acc), ir.Var(d, acc), ir.Var(grow, BOOL)
    one = ir.Const(1, acc)
    f = ir.Call("exp", (ir.Select(G, ir.UnaryOp("-", D, acc), D, acc),), acc)
    return [k.over_tile(pre + [
        ir.LetScalar(x, acc, k.mask(cast(v, acc), ir.Const(float("-inf"), acc))),
        ir.Store(top, k.local, ir.BinOp("max", at(top), X, acc)),
        ir.LetScalar(d, acc, ir.BinOp("-", X, at(ref), acc)),
        ir.LetScalar(grow, BOOL, ir.BinOp(">", D, ir.Const(LAZY, acc), BOOL)),
        ir.Store(tmp, k.local, f),
        ir.Store(s, k.local, ir.Select(G, ir.BinOp("+", ir.BinOp("*", at(s), at(tmp), acc), one, acc),
                                       ir.BinOp("+", at(s), at(tmp), acc), acc)),
        ir.Store(ref, k.local, ir.Select(G, X, at(ref), acc))])]


def _step_max(k, h: Heavy, p: Pair, pre: list, v: ir.Expr, acc, tmp: str) -> list:
    """The exponentials' statements for one tile, rescaled once a step: each place's maximum over
    the tile (now), then, after every tile of the step (RowKernel.end_of_step), with the step's
    first tile the place's sum rescaled to the larger of that maximum and its reference, which
    becomes the reference, and each tile's exp(x - reference) added: one exponential an element
    and one a place a step, where the lazy form's select of the exponent, its rescaled sum and its
    reference's select cost three instructions more an element.  The reference starts at the
    lowest finite value, so a place of -inf alone adds exp(-inf) = 0.  Each term goes through the
    scratch tile `tmp`, as the lazy form's: a tile stored in the loop and reduced after it is a
    deferred combine (layout_flow.column_reduced), so the tiles keep their vector runs."""
    top, ref, s = p.frags
    at = lambda f: ir.Load(f, k.local, acc)  # noqa: E731
    x, x2, m = k.b.fresh("x"), k.b.fresh("x"), k.b.fresh("m")
    first = [k.over_tile(pre + [
        ir.LetScalar(x, acc, k.mask(cast(v, acc), ir.Const(float("-inf"), acc))),
        ir.Store(top, k.local, ir.BinOp("max", at(top), ir.Var(x, acc), acc))])]
    X2 = ir.Var(x2, acc)
    add_x = [ir.LetScalar(x2, acc, k.mask(cast(v, acc), ir.Const(float("-inf"), acc))),
             ir.Store(tmp, k.local, ir.Call("exp", (ir.BinOp("-", X2, at(ref), acc),), acc)),
             ir.Store(s, k.local, ir.BinOp("+", at(s), at(tmp), acc))]
    if h.node not in k.step_pairs:  # the step's first tile: the rescale once a step, before its terms
        k.step_pairs.add(h.node)
        M = ir.Var(m, acc)
        add_x = [ir.LetScalar(m, acc, ir.BinOp("max", at(top), at(ref), acc)),
                 ir.Store(s, k.local, ir.BinOp("*", at(s), ir.Call("exp", (ir.BinOp("-", at(ref), M, acc),), acc), acc)),
                 ir.Store(ref, k.local, M)] + add_x
    k.after_tiles.append(k.over_tile(pre + add_x))
    return first


def finish(k, h: Heavy) -> list:
    """After the loop: the first member's statistic, then the other's."""
    p = k.pairs[h.node]
    st, acc = k.stats[h.node]
    st2 = k.stats[p.member.node][0]
    tmp, rows = k.tmp(acc), k.b.dim(k.red_dim)
    at = lambda f: ir.Load(f, k.local, acc)  # noqa: E731
    col = (var(k.kv),)
    if p.kind == "exponentials":
        top, ref, s = p.frags
        scaled = ir.BinOp("*", at(s), ir.Call("exp", (ir.BinOp("-", at(ref), ir.Load(st, col, acc), acc),), acc), acc)
        return [ir.Reduce("max", top, st, 0, clear=False), k.over_tile([ir.Store(tmp, k.local, scaled)]),
                ir.Reduce("sum", tmp, st2, 0, clear=False)]
    shift, s1, s2 = p.frags
    R = k.tiles.reduced
    # the rows place (i, j) of the tile saw: t R + i < rows for t = 0, 1, ...
    seen = ir.BinOp("//", add(ir.BinOp("-", rows, var(k.rv), I32), i32(R - 1)), i32(R), I32)
    count = cast(ir.BinOp("max", seen, i32(0), I32), acc)
    m = ir.BinOp("-", ir.Load(st, col, acc), at(shift), acc)
    two = ir.Const(2, acc)
    centred = ir.BinOp("+", ir.BinOp("-", at(s2), ir.BinOp("*", ir.BinOp("*", two, m, acc), at(s1), acc), acc),
                       ir.BinOp("*", count, ir.BinOp("*", m, m, acc), acc), acc)
    return [k.over_tile([ir.Store(tmp, k.local, ir.BinOp("+", ir.BinOp("*", count, at(shift), acc), at(s1), acc))]),
            ir.Reduce("sum", tmp, st, 0, clear=False),
            k.over_rows([ir.Store(st, col, ir.BinOp("/", ir.Load(st, col, acc), cast(rows, acc), acc))]),
            k.over_tile([ir.Store(tmp, k.local, centred)]),
            ir.Reduce("sum", tmp, st2, 0, clear=False)]


def note(k, m, p: Pair) -> str:
    how = ("each thread's elements less the first it read in their place, added up with their squares (shifted "
           "sums), the mean and the centred squares recovered from those after the loop") if p.kind == "centred" else \
        ("each place's maximum and its sum of exponentials about its maximum before the step, rescaled once a step "
         "(one exponential an element), and to the column's maximum after the loop") if k.tiles.step_max else \
        (f"each place's maximum and its sum of exponentials about one of its values (raised when an element exceeds "
         f"it by more than {LAZY:g}), rescaled to the column's maximum after the loop")
    return f"'{k.g.text(m)}' and '{k.g.text(p.member.node)}' in one pass: {how}"
