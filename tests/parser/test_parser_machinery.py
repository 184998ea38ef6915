"""How the parser is put together, where it shows: which error wins when there are several,
spans next to parentheses, the nesting limit, parsing from several threads, and the nodes' fast
constructors.  The on-disk cache of the parser tables: test_grammar_cache.py."""
from __future__ import annotations

import dataclasses
import sys
import threading

import pytest

from tlc.diagnostics import DiagnosticError, Span
from tlc.parser import nodes as n
from tlc.parser import parse


def first_error(src: str):
    with pytest.raises(DiagnosticError) as info:
        parse(src, "m.tl")
    (d,) = info.value.diagnostics
    return d.code, d.message, d.span.line, d.span.col


# ---- which error wins --------------------------------------------------------------------

@pytest.mark.parametrize("src,want", [
    # A syntax error anywhere wins over a construct the grammar accepts but the parser rejects.
    ("def f(x):\n    pass\ny = (\n", ("E002", "'(' is never closed", 3, 5)),
    ("def f(x):\n    pass\n  z = 1\n", ("E004", "this line's indentation matches no enclosing block", 3, 3)),
    ("def f(x):\n    pass\n", ("E006", "parameter 'x' needs a type", 1, 7)),
    # Otherwise the first in reduction order: a function's body before its return type ...
    ("def f() -> 1:\n    f() = 2\n", ("E008", "cannot assign to this expression", 2, 5)),
    # ... its parameters before its body, and left to right.
    ("def f(x) -> 1:\n    f() = 2\n", ("E006", "parameter 'x' needs a type", 1, 7)),
    ("def f():\n    g(a=1, a=2)\n    h(1)(k=1, 2)\n", ("E009", "keyword argument 'a' is given twice", 2, 12)),
    ("def f():\n    x = 1\n    def g():\n        pass\n",
     ("E007", "function 'g' is defined inside another function", 3, 9)),
])
def test_which_error_is_reported(src, want):
    assert first_error(src) == want


# ---- spans -----------------------------------------------------------------------------------

def test_parentheses_belong_to_the_enclosing_construct_not_the_node():
    (stmt,) = parse("def f():\n    (a) + (bb)\n", "s.tl").functions[0].body
    assert stmt.span == Span("s.tl", 2, 5, 2, 15)  # the statement starts and ends at a parenthesis
    assert stmt.expr.span == Span("s.tl", 2, 6, 2, 14)  # the operation runs from operand to operand
    assert stmt.expr.left.span == Span("s.tl", 2, 6, 2, 7)


def test_spans_of_comparison_power_and_call_include_parentheses():
    e = parse("x = (a) < ((b))\n", "s.tl").consts[0].value
    assert e.span == Span("s.tl", 1, 5, 1, 16)
    e = parse("x = (a) ** (b)\n", "s.tl").consts[0].value
    assert e.span == Span("s.tl", 1, 5, 1, 15)
    e = parse("x = (f)(1)\n", "s.tl").consts[0].value
    assert e.span == Span("s.tl", 1, 5, 1, 11) and e.func.span == Span("s.tl", 1, 6, 1, 7)


# ---- nesting -------------------------------------------------------------------------------

def test_nesting_limit():
    deep = lambda k: "x = " + "(1 + " * k + "1" + ")" * k + "\n"  # noqa: E731
    assert isinstance(parse(deep(400)).consts[0].value, n.BinOp)
    assert first_error(deep(600))[0] == "E010"
    calls = lambda k: "x = " + "f(" * k + "1" + ")" * k + "\n"  # noqa: E731
    parse(calls(150))
    assert first_error(calls(200))[0] == "E010"


def _blocks(k: int, kind: str) -> str:
    lines = ["def f():"]
    for i in range(1, k + 1):
        pad = " " * i
        lines += {"if": [pad + "if x:"], "else": [pad + "if x:", pad + " pass", pad + "else:"],
                  "elif": [pad + "if x:", pad + " pass", pad + "elif y:"]}[kind]
    return "\n".join(lines + [" " * (k + 1) + "pass"]) + "\n"


def test_nesting_limit_of_blocks():
    parse(_blocks(200, "if"))
    assert first_error(_blocks(300, "if"))[0] == "E010"
    parse(_blocks(140, "else"))  # if / else / block: three levels each
    assert first_error(_blocks(200, "else"))[0] == "E010"
    assert first_error(_blocks(200, "elif"))[0] == "E010"
    chain = "def f():\n    if x:\n        pass\n" + "    elif y:\n        pass\n" * 600  # siblings
    assert len(parse(chain).functions[0].body) == 1


def test_a_long_run_at_one_precedence_level_is_not_deep():
    e = parse("x = 1" + " + 1" * 5000 + "\n").consts[0].value
    assert e.op == "+" and e.right == n.Constant(1)


# ---- threads ---------------------------------------------------------------------------------

def test_parsing_from_several_threads():
    texts = [(f"def f{i}(x: f32) -> f32:\n    return x * {i}\n", f"t{i}.tl") for i in range(8)]
    texts += [("x = (1\n", "bad.tl"), ("def f(x):\n    pass\n", "bad2.tl")]

    def outcome(text, path):
        try:
            return parse(text, path)
        except DiagnosticError as e:
            return str(e)

    want = [outcome(*t) for t in texts]
    got, errors = [], []

    def work():
        try:
            for _ in range(30):
                got.append([outcome(*t) for t in texts])
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(switch)
    assert not errors
    assert all(g == want for g in got) and len(got) == 120
    # spans carry each parse's own file name
    assert all(r[0].functions[0].span.file == "t0.tl" for r in got)


# ---- fast constructors -----------------------------------------------------------------------

NODE_CLASSES = [c for c in vars(n).values() if isinstance(c, type) and dataclasses.is_dataclass(c)
                and c.__module__ == n.__name__]


@pytest.mark.parametrize("cls", NODE_CLASSES, ids=lambda c: c.__name__)
def test_maker_and_replace_build_what_the_dataclass_builds(cls):
    fields = dataclasses.fields(cls)
    values = [f"v{i}" for i in range(len(fields))]
    made = n.maker(cls)(*values)
    plain = cls(**{f.name: v for f, v in zip(fields, values)})
    assert made == plain and repr(made) == repr(plain)
    assert all(getattr(made, f.name) == getattr(plain, f.name) for f in fields)
    for f in fields:
        assert n.replace(plain, **{f.name: "new"}) == dataclasses.replace(plain, **{f.name: "new"})
        assert getattr(n.replace(plain, **{f.name: "new"}), f.name) == "new"
    with pytest.raises(TypeError):
        n.replace(plain, no_such_field=1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.span = None


def test_replace_of_other_dataclasses():
    assert n.replace(Span("a", 1, 2, 3, 4), line=9) == Span("a", 9, 2, 3, 4)


def test_no_attribute_of_the_ast_builder_is_mistaken_for_a_rule():
    """Lark calls the builder's attribute named like each rule: an inlined `_rule` must have
    none (it is spliced into its parent), a named rule a method taking the children."""
    from tlc.parser.lark_parser import lark_parser
    from tlc.parser.transformer import ToAst

    for rule in lark_parser().rules:
        name = rule.alias or rule.origin.name
        if name.startswith("_"):
            assert not hasattr(ToAst, name), name
        else:
            assert callable(getattr(ToAst, name, None)), name


# ---- the LALR loop (lark_parser.run) -------------------------------------------------------

def _both(text: str):
    """(what Lark's own parse gives, what `run` gives): the AST's repr or the error's type,
    position, expected and accepted terminals, under the same AST builder."""
    from lark.exceptions import UnexpectedInput

    from tlc.parser.lark_parser import lark_parser, run

    parser = lark_parser()
    builder = parser.options.transformer
    out = []
    for go in (parser.parse, lambda source: run(parser, source)):
        builder.begin("m.tl")
        try:
            out.append(repr(go(text)))
        except UnexpectedInput as e:
            out.append((type(e).__name__, e.line, e.column, getattr(e, "expected", None),
                        getattr(e, "accepts", None), e.interactive_parser is not None))
        finally:
            builder.end()
    return out


@pytest.mark.parametrize("name", ["gemm", "attention", "nn", "math"])
def test_run_builds_the_ast_lark_builds(name):
    from tlc.package_data import stdlib

    lark, ours = _both((stdlib() / f"{name}.tl").read_text(encoding="utf-8"))
    assert ours == lark and ours.startswith("Module(")


@pytest.mark.parametrize("text", ["def f(x: f32) -> f32:\n    return x +\n", "x = (1, 2]\n", "def f(:\n",
                                  "@kernel\ndef k(a: f32[N]):\n    with grid(1) as b\n", "x = 1 $ 2\n"])
def test_run_raises_the_error_lark_raises(text):
    lark, ours = _both(text)
    assert ours == lark and isinstance(ours, tuple) and ours[-1]
