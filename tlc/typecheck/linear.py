"""Integer index expressions as sums of terms, so that two of them can be subtracted and
compared: the extent of a region `A[by * BM:(by + 1) * BM]` is `(by + 1) * BM - by * BM`, which
is the constant BM whatever `by` is.

A `Poly` maps each monomial (a sorted tuple of atoms, `()` for the constant term) to its integer
coefficient.  An atom is a name that is not a constant (a loop or grid variable, a shape symbol,
a scalar) or a part that is not a sum or product (`x // 3`, `cdiv(K, 128)`, `min(a, b)`), kept
as its AST node after its own parts are simplified: AST nodes compare without spans, so the same
part written twice is the same atom.  Constants (module constants, `const` parameters) are
folded in.  Floats, dtypes and division other than an exact `//` by a constant are atoms too,
so that `simplify` never raises: a difference that is not constant is simply not an int.
"""
from __future__ import annotations

from ..dtypes import DType
from ..parser import nodes as n
from . import consteval

Poly = dict  # monomial (tuple of atoms, sorted by their text) -> int coefficient


def simplify(e, consts: dict) -> Poly:
    """`e` as a polynomial over its non-constant atoms, constants folded."""
    try:
        v = consteval.evaluate(e, consts)
    except consteval.NotConstant:
        v = None
    if v is not None and not isinstance(v, (bool, DType, list)) and isinstance(v, int):
        return {(): v} if v else {}
    if v is not None:
        return _atom(e)
    if isinstance(e, n.BinOp) and e.op in ("+", "-"):
        a, b = simplify(e.left, consts), simplify(e.right, consts)
        return _add(a, b, 1 if e.op == "+" else -1)
    if isinstance(e, n.UnaryOp) and e.op in ("-", "+"):
        a = simplify(e.operand, consts)
        return a if e.op == "+" else _scale(a, -1)
    if isinstance(e, n.BinOp) and e.op == "*":
        return _mul(simplify(e.left, consts), simplify(e.right, consts))
    if isinstance(e, n.BinOp) and e.op == "//":
        a, b = simplify(e.left, consts), simplify(e.right, consts)
        d = constant(b)
        if d == 1:
            return a
        if d and all(c % d == 0 for c in a.values()):  # exact: (2 * K) // 2 is K
            return {m: c // d for m, c in a.items()}
        return _atom(n.BinOp("//", to_expr(a), to_expr(b)))
    if isinstance(e, n.Name):
        return _atom(n.Name(e.id))
    return _atom(e)


def constant(p: Poly) -> int | None:
    """The value of a polynomial with no atoms, else None."""
    if not p:
        return 0
    if set(p) == {()}:
        return p[()]
    return None


def difference(a, b, consts: dict) -> int | None:
    """`a - b` when it is the same integer whatever the non-constant atoms are, else None."""
    return constant(_add(simplify(a, consts), simplify(b, consts), -1))


def same(a, b, consts: dict) -> bool:
    """Whether two expressions are equal as polynomials (`K // 2` and `(K) // 2`, `M + 1` and `1 + M`)."""
    return difference(a, b, consts) == 0


def to_expr(p: Poly):
    """An AST expression of the polynomial (no spans), for an atom's key and for messages."""
    out = None
    for mono in sorted(p, key=_mono_key):
        c = p[mono]
        term = None
        for atom in mono:
            term = atom if term is None else n.BinOp("*", term, atom)
        if term is None:
            term = n.Constant(abs(c))
        elif abs(c) != 1:
            term = n.BinOp("*", n.Constant(abs(c)), term)
        if out is None:
            out = term if c > 0 else n.UnaryOp("-", term)
        else:
            out = n.BinOp("+" if c > 0 else "-", out, term)
    return out if out is not None else n.Constant(0)


def _atom(e) -> Poly:
    return {(e,): 1}


def _mono_key(mono) -> tuple:
    from .types import format_dim
    return (len(mono) == 0, tuple(format_dim(a) for a in mono))


def _add(a: Poly, b: Poly, sign: int) -> Poly:
    out = dict(a)
    for m, c in b.items():
        v = out.get(m, 0) + sign * c
        if v:
            out[m] = v
        else:
            out.pop(m, None)
    return out


def _scale(a: Poly, k: int) -> Poly:
    return {m: c * k for m, c in a.items()} if k else {}


def _mul(a: Poly, b: Poly) -> Poly:
    out: Poly = {}
    for ma, ca in a.items():
        for mb, cb in b.items():
            m = tuple(sorted(ma + mb, key=lambda x: _mono_key((x,))))
            out = _add(out, {m: ca * cb}, 1)
    return out
