"""Parsing expressions: literals, every operator with Python's precedence and associativity,
calls with keywords, subscripts and slices, `.T`, the ternary.  Python's own `ast` module is
the oracle for precedence: the same text must give the same tree shape."""
from __future__ import annotations

import ast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tlc.diagnostics import DiagnosticError
from tlc.parser import nodes as n
from tlc.parser import parse


def expr(src: str):
    return parse(f"x = {src}\n").consts[0].value


def Name(id):
    return n.Name(id)


def C(value):
    return n.Constant(value)


def B(op, left, right):
    return n.BinOp(op, left, right)


a, b, c, d = Name("a"), Name("b"), Name("c"), Name("d")


# ---- a converter from Python's ast to tlc's nodes: the precedence oracle --------------------

_BIN = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
        ast.Pow: "**", ast.MatMult: "@", ast.LShift: "<<", ast.RShift: ">>", ast.BitAnd: "&",
        ast.BitOr: "|", ast.BitXor: "^"}
_UNARY = {ast.USub: "-", ast.UAdd: "+", ast.Invert: "~", ast.Not: "not"}
_CMP = {ast.Lt: "<", ast.Gt: ">", ast.Eq: "==", ast.GtE: ">=", ast.LtE: "<=", ast.NotEq: "!="}


def from_python(e):
    match e:
        case ast.Name(id=id):
            return n.Name(id)
        case ast.Constant(value=v):
            return n.Constant(v)
        case ast.BinOp(left=l, op=op, right=r):
            return n.BinOp(_BIN[type(op)], from_python(l), from_python(r))
        case ast.UnaryOp(op=op, operand=x):
            return n.UnaryOp(_UNARY[type(op)], from_python(x))
        case ast.BoolOp(op=op, values=vs):
            return n.BoolOp("and" if isinstance(op, ast.And) else "or", tuple(map(from_python, vs)))
        case ast.Compare(left=l, ops=ops, comparators=cs):
            return n.Compare(tuple(_CMP[type(o)] for o in ops), tuple(map(from_python, [l, *cs])))
        case ast.IfExp(test=t, body=y, orelse=z):
            return n.IfExp(from_python(t), from_python(y), from_python(z))
        case ast.Call(func=f, args=args, keywords=kws):
            return n.Call(from_python(f), tuple(map(from_python, args)),
                          tuple(n.Keyword(k.arg, from_python(k.value)) for k in kws))
        case ast.Attribute(value=v, attr=attr):
            return n.Attribute(from_python(v), attr)
        case ast.Subscript(value=v, slice=ast.Tuple(elts=elts)):
            return n.Subscript(from_python(v), tuple(map(from_python, elts)))
        case ast.Subscript(value=v, slice=s):
            return n.Subscript(from_python(v), (from_python(s),))
        case ast.Slice(lower=lo, upper=hi, step=step):
            return n.Slice(*(from_python(x) if x is not None else None for x in (lo, hi, step)))
        case ast.Tuple(elts=elts):
            return n.TupleExpr(tuple(map(from_python, elts)))
        case ast.List(elts=elts):
            return n.ListExpr(tuple(map(from_python, elts)))
    raise AssertionError(f"no tlc node for {ast.dump(e)}")


def python_tree(src: str):
    return from_python(ast.parse(src, mode="eval").body)


# ---- explicit trees -------------------------------------------------------------------------

def test_arithmetic_precedence_and_right_associative_power():
    assert expr("a + b * c ** -d") == B("+", a, B("*", b, B("**", c, n.UnaryOp("-", d))))
    assert expr("-a ** b") == n.UnaryOp("-", B("**", a, b))
    assert expr("a ** b ** c") == B("**", a, B("**", b, c))


def test_left_associative_subtraction_division_and_matmul():
    assert expr("a - b - c") == B("-", B("-", a, b), c)
    assert expr("a // b % c / d") == B("/", B("%", B("//", a, b), c), d)
    assert expr("a @ b * c") == B("*", B("@", a, b), c)


def test_not_binds_looser_than_comparison():
    assert expr("not a == b") == n.UnaryOp("not", n.Compare(("==",), (a, b)))


def test_comparison_chain_is_one_node():
    assert expr("a < b <= c != d") == n.Compare(("<", "<=", "!="), (a, b, c, d))


def test_boolean_operators_flatten_and_nest_by_precedence():
    assert expr("a or b and c or d") == n.BoolOp("or", (a, n.BoolOp("and", (b, c)), d))


def test_bit_operators_by_level():
    assert expr("a | b ^ c & d << 1") == B("|", a, B("^", b, B("&", c, B("<<", d, C(1)))))
    assert expr("~a >> b + c") == B(">>", n.UnaryOp("~", a), B("+", b, c))


def test_ternary_is_lowest_and_right_nested():
    assert expr("a if b else c if d else a + 1") == n.IfExp(b, a, n.IfExp(d, c, B("+", a, C(1))))


def test_parentheses_override_precedence():
    assert expr("(a + b) * c") == B("*", B("+", a, b), c)


@pytest.mark.parametrize("src,value", [
    ("0", 0), ("42", 42), ("1_000", 1000), ("0xFF", 255), ("0x_ff", 255),
    ("1.5", 1.5), (".5", 0.5), ("2.", 2.0), ("1e-5", 1e-5), ("3E+2", 300.0), ("6.02e23", 6.02e23),
    ("True", True), ("False", False), ('"a%d"', "a%d"), ("'it\\'s'", "it's"),
])
def test_literals(src, value):
    got = expr(src)
    assert got == C(value) and type(got.value) is type(value)


def test_calls_with_positional_and_keyword_arguments():
    assert expr("f(a, b + 1, axis=-1, keepdims=False,)") == n.Call(
        Name("f"), (a, B("+", b, C(1))),
        (n.Keyword("axis", n.UnaryOp("-", C(1))), n.Keyword("keepdims", C(False))))


def test_transpose_attribute_and_method_like_chains():
    assert expr("x @ w.T + b") == B("+", B("@", Name("x"), n.Attribute(Name("w"), "T")), b)
    assert expr("f(x).T[0]") == n.Subscript(n.Attribute(n.Call(Name("f"), (Name("x"),), ()), "T"), (C(0),))


def test_slices_of_every_shape():
    got = expr("A[i, :, 1:, :n, ::2, a:b:c]")
    S = n.Slice
    assert got == n.Subscript(Name("A"), (
        Name("i"), S(None, None, None), S(C(1), None, None), S(None, Name("n"), None),
        S(None, None, C(2)), S(a, b, c)))


def test_tuples_and_lists():
    assert expr("(a, b)") == n.TupleExpr((a, b))
    assert expr("(a,)") == n.TupleExpr((a,))
    assert expr("[]") == n.ListExpr(())
    assert expr("[a, [b]]") == n.ListExpr((a, n.ListExpr((b,))))


def test_binary_span_covers_both_operands():
    e = parse("x = a  +  bb\n", "s.tl").consts[0].value
    assert (e.span.line, e.span.col, e.span.end_col) == (1, 5, 13)


# ---- the oracle -----------------------------------------------------------------------------

ORACLE_CASES = [
    "a + b * c ** -d", "not a == b", "a < b < c", "a == b != c", "a | b & c ^ d", "a << b + c >> d",
    "-a * -b", "+a - ~b", "a ** -b ** c", "not not a", "a and not b or c", "a if b else c",
    "a + b if c and d else -a", "a // b // c", "a @ b @ c", "a % b * c", "f(a)(b)[c].d ** 2",
    "(a if b else c) * d", "a < b and b < c", "a & b == c", "-a.T @ b[0:4, c]",
    "min(a, b) + max(c, d) * 2.0", "a[1:2:3]", "a - (b - c)", "~a & ~b | a ^ b",
]


@pytest.mark.parametrize("src", ORACLE_CASES)
def test_same_tree_as_python(src):
    assert expr(src) == python_tree(src)


_ATOMS = st.sampled_from(["a", "b", "c", "1", "2.5", "f(a)", "x[i]", "w.T", "(a)"])
_BINARY = ["+", "-", "*", "/", "//", "%", "**", "@", "<<", ">>", "&", "|", "^",
           "<", ">", "==", "!=", "<=", ">=", "and", "or"]


def _combine(children):
    return st.one_of(
        st.tuples(children, st.sampled_from(_BINARY), children).map(" ".join),
        st.tuples(st.sampled_from(["-", "+", "~", "not "]), children).map("".join),
        st.tuples(children, children, children).map(lambda t: f"{t[0]} if {t[1]} else {t[2]}"),
        children.map(lambda s: f"({s})"),
    )


@settings(max_examples=300, deadline=None)
@given(st.recursive(_ATOMS, _combine, max_leaves=8))
def test_random_operator_soup_agrees_with_python(src):
    """Unparenthesized operator mixes: tlc accepts exactly what Python accepts, with the same tree."""
    try:
        want = python_tree(src)
    except SyntaxError:
        with pytest.raises(DiagnosticError):
            expr(src)
        return
    assert expr(src) == want
