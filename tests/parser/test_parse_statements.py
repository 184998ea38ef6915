"""Parsing statements: the grid block, buffer allocations, every tile statement, every loop
form, if/elif/else, break/continue/return/pass, the assignment forms and line joining."""
from __future__ import annotations

import textwrap

import pytest

from tlc.parser import nodes as n
from tlc.parser import parse


def Name(id):
    return n.Name(id)


def C(value):
    return n.Constant(value)


def call(func, *args, **kws):
    return n.Call(Name(func), tuple(args), tuple(n.Keyword(k, v) for k, v in kws.items()))


def sub(value, *indices):
    return n.Subscript(Name(value), tuple(indices))


def body(src: str) -> tuple:
    """The statements of `src` placed in the body of a function."""
    return parse("def f():\n" + textwrap.indent(textwrap.dedent(src), "    ")).functions[0].body


def one(src: str):
    (stmt,) = body(src)
    return stmt


# ---- grid and buffers -----------------------------------------------------------------------

def test_grid_with_tuple_of_block_indices():
    stmt = one("with grid(cdiv(N, BN), cdiv(M, BM), threads=128) as (bx, by):\n    pass\n")
    assert stmt == n.With(
        call("grid", call("cdiv", Name("N"), Name("BN")), call("cdiv", Name("M"), Name("BM")), threads=C(128)),
        (Name("bx"), Name("by")), (n.Pass(),))


def test_grid_with_one_block_index_and_bare_tuple():
    assert one("with grid(4, threads=32) as bx:\n    pass\n").targets == (Name("bx"),)
    assert one("with grid(2, 3, 4) as bx, by, bz:\n    pass\n").targets == (Name("bx"), Name("by"), Name("bz"))


@pytest.mark.parametrize("alloc", ["shared", "fragment", "local"])
def test_buffer_allocations(alloc):
    stmt = one(f"buf = {alloc}(f32[BM, BK + 8])\n")
    dims = (Name("BM"), n.BinOp("+", Name("BK"), C(8)))
    assert stmt == n.Assign(Name("buf"), call(alloc, sub("f32", *dims)))


def test_per_thread_scalars_plain_and_annotated():
    assert body("x = 0.0\ny: i32 = 0\n") == (
        n.Assign(Name("x"), C(0.0)),
        n.Assign(Name("y"), C(0), n.TypeExpr("i32", None)),
    )


# ---- tile statements ------------------------------------------------------------------------

TILE_STATEMENTS = {
    "copy(A[by * BM, k * BK], As)": call(
        "copy", sub("A", n.BinOp("*", Name("by"), Name("BM")), n.BinOp("*", Name("k"), Name("BK"))), Name("As")),
    "copy(A[r:r + BM, c:c + BK], As)": call(
        "copy", sub("A", n.Slice(Name("r"), n.BinOp("+", Name("r"), Name("BM")), None),
                    n.Slice(Name("c"), n.BinOp("+", Name("c"), Name("BK")), None)), Name("As")),
    "gemm(As, Bs, acc)": call("gemm", Name("As"), Name("Bs"), Name("acc")),
    "gemm(As, Bs, acc, trans_a=False, trans_b=True)": call(
        "gemm", Name("As"), Name("Bs"), Name("acc"), trans_a=C(False), trans_b=C(True)),
    "fill(acc, 0.5)": call("fill", Name("acc"), C(0.5)),
    "clear(acc)": call("clear", Name("acc")),
    "reduce_sum(s, d, dim=1, clear=True)": call("reduce_sum", Name("s"), Name("d"), dim=C(1), clear=C(True)),
    "reduce_max(s, d)": call("reduce_max", Name("s"), Name("d")),
    "reduce_min(s, d, dim=0)": call("reduce_min", Name("s"), Name("d"), dim=C(0)),
    "reduce_absmax(s, d, clear=False)": call("reduce_absmax", Name("s"), Name("d"), clear=C(False)),
    "atomic_add(out[i, j], v)": call("atomic_add", sub("out", Name("i"), Name("j")), Name("v")),
    "atomic_max(m[0], v)": call("atomic_max", sub("m", C(0)), Name("v")),
    "atomic_min(m[0], -v)": call("atomic_min", sub("m", C(0)), n.UnaryOp("-", Name("v"))),
    "sync()": call("sync"),
    'print("bx=%d x=%f", bx, x)': call("print", C("bx=%d x=%f"), Name("bx"), Name("x")),
}


@pytest.mark.parametrize("src", TILE_STATEMENTS)
def test_tile_statement(src):
    assert one(src + "\n") == n.ExprStmt(TILE_STATEMENTS[src])


# ---- loops ----------------------------------------------------------------------------------

LOOPS = {
    "for i in range(n):": (("i",), call("range", Name("n"))),
    "for i in range(a, b):": (("i",), call("range", Name("a"), Name("b"))),
    "for i in range(a, b, 2):": (("i",), call("range", Name("a"), Name("b"), C(2))),
    "for i in unroll(4):": (("i",), call("unroll", C(4))),
    "for k in pipelined(cdiv(K, BK), stages=3):": (
        ("k",), call("pipelined", call("cdiv", Name("K"), Name("BK")), stages=C(3))),
    "for i, j in parallel(M, N):": (("i", "j"), call("parallel", Name("M"), Name("N"))),
    "for (i, j, l) in parallel(2, 3, 4):": (("i", "j", "l"), call("parallel", C(2), C(3), C(4))),
}


@pytest.mark.parametrize("header", LOOPS)
def test_loop_forms(header):
    names, iterator = LOOPS[header]
    assert one(header + "\n    x += 1\n") == n.For(
        tuple(Name(t) for t in names), iterator, (n.AugAssign(Name("x"), "+", C(1)),))


def test_nested_loops_with_break_and_continue():
    stmt = one("""\
        for i in range(4):
            for j in range(4):
                if j > i:
                    break
                continue
        """)
    inner = stmt.body[0]
    assert inner.body == (n.If(n.Compare((">",), (Name("j"), Name("i"))), (n.Break(),), ()), n.Continue())


# ---- if / elif / else -----------------------------------------------------------------------

def test_if_elif_else_chain_nests_in_orelse():
    stmt = one("""\
        if a:
            x = 1
        elif b:
            x = 2
        elif c:
            x = 3
        else:
            x = 4
        """)
    def assign(v):
        return (n.Assign(Name("x"), C(v)),)
    assert stmt == n.If(Name("a"), assign(1), (
        n.If(Name("b"), assign(2), (
            n.If(Name("c"), assign(3), assign(4)),)),))
    assert stmt.orelse[0].span.line == 4  # the "elif b:" line, after "def f():"


def test_if_without_else_has_empty_orelse():
    assert one("if a: pass\n") == n.If(Name("a"), (n.Pass(),), ())


# ---- return / assignment forms --------------------------------------------------------------

def test_return_with_and_without_value():
    assert body("return\nreturn x + 1\n") == (n.Return(None), n.Return(n.BinOp("+", Name("x"), C(1))))


def test_assignment_to_name_and_element():
    assert body("x = y\nacc[i, j] = 0.0\n") == (
        n.Assign(Name("x"), Name("y")),
        n.Assign(sub("acc", Name("i"), Name("j")), C(0.0)),
    )


@pytest.mark.parametrize("op", ["+", "-", "*", "/", "//", "%", "**", "&", "|", "^", "<<", ">>", "@"])
def test_augmented_assignment(op):
    assert one(f"acc[i] {op}= v\n") == n.AugAssign(sub("acc", Name("i")), op, Name("v"))


def test_annotated_assignment_with_tensor_type():
    stmt = one("t: f32[4] = 0.0\n")
    assert stmt.annotation == n.TypeExpr("f32", (C(4),))


def test_semicolons_join_simple_statements():
    assert body("x = 1; y = 2;\n") == (n.Assign(Name("x"), C(1)), n.Assign(Name("y"), C(2)))


# ---- line joining ---------------------------------------------------------------------------

def test_line_continuation_inside_brackets_ignores_indentation():
    stmt = one("""\
        copy(A[by * BM,
        k * BK],
                      As)
        """)
    assert stmt == one("copy(A[by * BM, k * BK], As)\n")


def test_line_continuation_with_backslash():
    assert one("x = 1 + \\\n        2 \\\n  * 3\n") == one("x = 1 + 2 * 3\n")
