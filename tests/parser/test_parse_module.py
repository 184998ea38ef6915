"""Parsing the top level of a file: imports, module constants, functions, decorators and
parameters, plus comments, blank lines and the spans the parser records."""
from __future__ import annotations

from tlc.diagnostics import Span
from tlc.parser import nodes as n
from tlc.parser import parse


def Name(id):
    return n.Name(id)


def C(value):
    return n.Constant(value)


def ty(name, *dims):
    return n.TypeExpr(name, tuple(dims) if dims else None)


def call(func, *args, **kws):
    return n.Call(Name(func), tuple(args), tuple(n.Keyword(k, v) for k, v in kws.items()))


# ---- imports --------------------------------------------------------------------------------

def test_import_from_std():
    (imp,) = parse("from std.nn import softmax, rms_norm\n").imports
    assert imp == n.Import("std.nn", 0, (n.ImportName("softmax", None), n.ImportName("rms_norm", None)))


def test_import_relative_one_and_two_dots():
    m = parse("from .common import gelu\nfrom ..lib.act import relu\nfrom . import x\n")
    assert [(i.module, i.level) for i in m.imports] == [("common", 1), ("lib.act", 2), ("", 1)]


def test_import_aliased():
    (imp,) = parse("from std.math import gelu as g, silu\n").imports
    assert imp.names == (n.ImportName("gelu", "g"), n.ImportName("silu", None))
    assert [x.local for x in imp.names] == ["g", "silu"]


def test_import_parenthesized_over_lines_with_trailing_comma():
    (imp,) = parse("from std.math import (\n    gelu,\n    silu as s,\n)\n").imports
    assert imp.names == (n.ImportName("gelu", None), n.ImportName("silu", "s"))


# ---- module constants -----------------------------------------------------------------------

def test_module_constants_typed_untyped_and_dtype():
    m = parse("BLOCK: const = 128\nSCALE = 0.5\nDT: dtype = f16\nPAD: const = BLOCK + 8\n")
    assert m.consts == (
        n.ConstDecl("BLOCK", ty("const"), C(128)),
        n.ConstDecl("SCALE", None, C(0.5)),
        n.ConstDecl("DT", ty("dtype"), Name("f16")),
        n.ConstDecl("PAD", ty("const"), n.BinOp("+", Name("BLOCK"), C(8))),
    )


# ---- functions ------------------------------------------------------------------------------

def test_device_function_with_return_type():
    (f,) = parse("def gelu(x: f32) -> f32:\n    return x\n").functions
    assert f == n.FunctionDef("gelu", (n.Param("x", ty("f32"), None),), ty("f32"),
                              (n.Return(Name("x")),))
    assert f.decorators == ()


def test_function_with_one_line_body():
    (f,) = parse("def one() -> i32: return 1\n").functions
    assert f.params == () and f.body == (n.Return(C(1)),)


def test_kernel_decorator_without_arguments():
    (f,) = parse("@kernel\ndef k(x: f32[N]):\n    pass\n").functions
    assert f.decorators == (n.Decorator("kernel", None),)
    assert f.has_decorator("kernel") and not f.has_decorator("tile_op")


def test_tile_op_and_fuse_decorators_in_order():
    src = "@fuse\n@tile_op\ndef t(x: f16[M, K]) -> f16[M, K]:\n    return x\n"
    (f,) = parse(src).functions
    assert f.decorators == (n.Decorator("fuse", None), n.Decorator("tile_op", None))
    assert f.returns == ty("f16", Name("M"), Name("K"))


def test_autotune_decorator_keyword_lists():
    src = ("@autotune(BM=[64, 128], stages=[2, 3])\n@kernel\n"
           "def k(x: f32[N], BM: const = 64, stages: const = 2):\n    pass\n")
    (f,) = parse(src).functions
    tune = f.decorators[0]
    assert tune == n.Decorator("autotune", (), (
        n.Keyword("BM", n.ListExpr((C(64), C(128)))),
        n.Keyword("stages", n.ListExpr((C(2), C(3)))),
    ))


def test_dotted_decorator_with_positional_argument():
    (f,) = parse("@std.mark(1)\ndef f():\n    pass\n").functions
    assert f.decorators == (n.Decorator("std.mark", (C(1),)),)


def test_parameters_of_every_kind():
    src = ("def k(A: T[M, K], pad: f32[BM, BK + 8], alpha: f32, n: i32, T: dtype = f16,\n"
           "      BM: const = 128, BK: const = 32, flag: const = True,):\n    pass\n")
    params = parse(src).functions[0].params
    assert params == (
        n.Param("A", ty("T", Name("M"), Name("K")), None),
        n.Param("pad", ty("f32", Name("BM"), n.BinOp("+", Name("BK"), C(8))), None),
        n.Param("alpha", ty("f32"), None),
        n.Param("n", ty("i32"), None),
        n.Param("T", ty("dtype"), Name("f16")),
        n.Param("BM", ty("const"), C(128)),
        n.Param("BK", ty("const"), C(32)),
        n.Param("flag", ty("const"), C(True)),
    )


def test_tensor_type_with_literal_and_call_dimensions():
    (p,) = parse("def k(x: f32[128, cdiv(N, 4)]):\n    pass\n").functions[0].params
    assert p.annotation == ty("f32", C(128), call("cdiv", Name("N"), C(4)))


def test_module_keeps_declaration_order_per_kind():
    m = parse("A = 1\ndef f():\n    pass\nB = 2\n@kernel\ndef g():\n    pass\n")
    assert [c.name for c in m.consts] == ["A", "B"]
    assert [f.name for f in m.functions] == ["f", "g"]
    assert m.function("g").has_decorator("kernel") and m.function("h") is None


# ---- layout ---------------------------------------------------------------------------------

def test_comments_and_blank_lines_anywhere():
    src = ("# header\n\n\nX = 1  # trailing\n   # indented comment at top level\n"
           "def f():\n\n    # comment in a body\n    x = 1\n# at column 1 inside the body\n\n"
           "        # deeper\n    y = 2\n# last line without newline")
    m = parse(src)
    assert m.consts == (n.ConstDecl("X", None, C(1)),)
    assert [s.target.id for s in m.functions[0].body] == ["x", "y"]


def test_empty_file_and_only_comments():
    for src in ("", "\n\n", "# nothing\n# here\n", "   \n\t\n"):
        assert parse(src) == n.Module("<string>", (), (), ())


def test_crlf_line_endings_and_byte_order_mark():
    crlf = parse("\ufeffdef f():\r\n    x = 1\r\n\r\n    y = 2\r\n")
    plain = parse("def f():\n    x = 1\n    y = 2\n")
    assert crlf == plain


def test_layout_does_not_change_the_ast():
    compact = parse("def f(a: f32, b: f32) -> f32:\n    return a + b\n")
    airy = parse("def f(\n    a: f32,   # first\n    b: f32,\n) -> f32:\n\n    return (a\n            + b)\n")
    assert compact == airy


# ---- spans ----------------------------------------------------------------------------------

def test_spans_of_function_name_parameter_and_statement():
    src = "@kernel\ndef add(x: f32[N], y: f32[N]):\n    y[0] = x[0] + 1.0\n"
    f = parse(src, "k.tl").functions[0]
    assert f.span.line == 1 and f.span.col == 1  # the decorator starts the definition
    assert f.name_span == Span("k.tl", 2, 5, 2, 8)
    assert f.params[1].span == Span("k.tl", 2, 20, 2, 29)
    stmt = f.body[0]
    assert stmt.span == Span("k.tl", 3, 5, 3, 22)
    assert stmt.value.span == Span("k.tl", 3, 12, 3, 22)
    assert stmt.value.right.span == Span("k.tl", 3, 19, 3, 22)


def test_import_and_constant_spans():
    m = parse("from std.math import gelu as g\nBM: const = 64\n", "m.tl")
    assert m.imports[0].names[0].span == Span("m.tl", 1, 22, 1, 31)
    assert m.consts[0].value.span == Span("m.tl", 2, 13, 2, 15)
