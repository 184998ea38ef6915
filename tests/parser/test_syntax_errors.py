"""Syntax errors, E001-E010: the exact text a user sees (file:line:col, the line, a caret
under the place, what was expected and a hint where one helps)."""
from __future__ import annotations

import pytest

from tlc.diagnostics import DiagnosticError, render_all
from tlc.driver import check_file
from tlc.parser import parse


def error_text(src: str) -> str:
    with pytest.raises(DiagnosticError) as info:
        parse(src, "bad.tl")
    return str(info.value)


CASES = [
    pytest.param(
        'x = 1 2\n',
        """\
bad.tl:1:7: error[E002]: unexpected number 2; expected one of '%', '&', '(', '*', '+', '-', '.', '/', ...
  |
1 | x = 1 2
  |       ^""",
        id="E002_token"),
    pytest.param(
        'def f():\n    for i in range(4)\n        pass\n',
        """\
bad.tl:2:22: error[E002]: unexpected end of line; expected ':'
  |
2 |     for i in range(4)
  |                      ^
  = hint: a block ('def', 'if', 'for', 'with', ...) ends its first line with ':'""",
        id="E002_colon"),
    pytest.param(
        'X = 1\n    Y = 2\n',
        """\
bad.tl:2:5: error[E002]: unexpected indentation; expected one of '@', 'def', 'from', a name, a new line, the end of the file
  |
2 |     Y = 2
  |     ^
  = hint: this line is indented more than the line before it, which does not open a block""",
        id="E002_indent"),
    pytest.param(
        'def f():\nreturn 1\n',
        """\
bad.tl:2:1: error[E002]: unexpected 'return'; expected an indented block
  |
2 | return 1
  | ^^^^^^
  = hint: the body of a block is indented under the line that ends with ':'""",
        id="E002_body"),
    pytest.param(
        '@kernel\n',
        """\
bad.tl:1:8: error[E002]: unexpected end of file; expected one of '@', 'def'
  |
1 | @kernel
  |        ^""",
        id="E002_eof"),
    pytest.param(
        'def f():\n    copy(A[0, 0], As\n',
        """\
bad.tl:2:9: error[E002]: '(' is never closed
  |
2 |     copy(A[0, 0], As
  |         ^""",
        id="E002_unclosed"),
    pytest.param(
        'def f():\n    x = [1, 2\n    y = 3\n',
        """\
bad.tl:3:5: error[E002]: unexpected name 'y'; expected one of '%', '&', '(', '*', '+', ',', '-', '.', ...
  |
3 |     y = 3
  |     ^
  = hint: the '[' at line 2, column 9 is never closed""",
        id="E002_unclosed_hint"),
    pytest.param(
        'def f():\n    return x)\n',
        """\
bad.tl:2:13: error[E002]: unexpected ')'; expected one of ';', a new line
  |
2 |     return x)
  |             ^""",
        id="E002_stray"),
    pytest.param(
        'def f(in: f32):\n    pass\n',
        """\
bad.tl:1:7: error[E002]: unexpected 'in'; expected one of ')', a name
  |
1 | def f(in: f32):
  |       ^^
  = hint: 'in' is a reserved word and cannot be used as a name""",
        id="E002_keyword_as_name"),
    pytest.param(
        'def f():\n    x = a $ b\n',
        """\
bad.tl:2:11: error[E003]: unexpected character '$'
  |
2 |     x = a $ b
  |           ^""",
        id="E003"),
    pytest.param(
        'def f():\n\tx = a ? b\n',
        """\
bad.tl:2:8: error[E003]: unexpected character '?'
  |
2 |  x = a ? b
  |        ^""",
        id="E003_tab_line"),
    # a number's digits are ASCII: the grammar's \d took any Unicode digit after the first
    # (`1\u0661` was 11, `\uff11.5` was 1.5) while `\uff12` alone was E003
    pytest.param(
        'def f():\n    x = \uff11.5 + 1\u0661\n',
        """\
bad.tl:2:9: error[E003]: unexpected character '\uff11'
  |
2 |     x = \uff11.5 + 1\u0661
  |         ^""",
        id="E003_unicode_digit"),
    pytest.param(
        'def f():\n    x = 1\u0661\n',
        """\
bad.tl:2:10: error[E003]: unexpected character '\u0661'
  |
2 |     x = 1\u0661
  |          ^""",
        id="E003_unicode_digit_after_one"),
    pytest.param(
        'def f():\n    if a:\n        x = 1\n      y = 2\n',
        """\
bad.tl:4:7: error[E004]: this line's indentation matches no enclosing block
  |
4 |       y = 2
  |       ^
  = hint: indent it to column 5 like the block it belongs to""",
        id="E004"),
    pytest.param(
        'def f(x: f32[0:4]):\n    pass\n',
        """\
bad.tl:1:14: error[E005]: a tensor dimension cannot be a slice
  |
1 | def f(x: f32[0:4]):
  |              ^^^""",
        id="E005_slice"),
    pytest.param(
        'def f() -> f32 + 1:\n    pass\n',
        """\
bad.tl:1:12: error[E005]: expected a type such as 'f32', 'const', 'dtype' or 'f16[M, K]'
  |
1 | def f() -> f32 + 1:
  |            ^^^^^^^""",
        id="E005_expr"),
    pytest.param(
        '@kernel\ndef k(A: f16[M, K], alpha):\n    pass\n',
        """\
bad.tl:2:21: error[E006]: parameter 'alpha' needs a type
  |
2 | def k(A: f16[M, K], alpha):
  |                     ^^^^^
  = hint: write 'alpha: f32', 'alpha: f16[M, K]', 'alpha: const = 64' or 'alpha: dtype = f16'""",
        id="E006"),
    pytest.param(
        'def f():\n    def g(x: f32) -> f32:\n        return x\n',
        """\
bad.tl:2:9: error[E007]: function 'g' is defined inside another function
  |
2 |     def g(x: f32) -> f32:
  |         ^
  = hint: define device functions, kernels and tile ops at the top level of the file""",
        id="E007"),
    pytest.param(
        'def f():\n    f(x) = 1\n',
        """\
bad.tl:2:5: error[E008]: cannot assign to this expression
  |
2 |     f(x) = 1
  |     ^^^^
  = hint: the left side of '=' must be a name or an element such as 'x[i, j]'""",
        id="E008"),
    pytest.param(
        'def f():\n    a.T += 1\n',
        """\
bad.tl:2:5: error[E008]: cannot assign to this expression
  |
2 |     a.T += 1
  |     ^^^
  = hint: the left side of '+=' must be a name or an element such as 'x[i, j]'""",
        id="E008_aug"),
    pytest.param(
        'def f():\n    x[0]: f32 = 1.0\n',
        """\
bad.tl:2:5: error[E008]: only a plain name can have a type annotation
  |
2 |     x[0]: f32 = 1.0
  |     ^^^^""",
        id="E008_ann"),
    pytest.param(
        'def f():\n    gemm(a, b, trans_a=True, c)\n',
        """\
bad.tl:2:30: error[E009]: a positional argument cannot follow a keyword argument
  |
2 |     gemm(a, b, trans_a=True, c)
  |                              ^""",
        id="E009_pos"),
    pytest.param(
        'def f():\n    reduce_sum(s, d, dim=1, dim=0)\n',
        """\
bad.tl:2:29: error[E009]: keyword argument 'dim' is given twice
  |
2 |     reduce_sum(s, d, dim=1, dim=0)
  |                             ^^^^^""",
        id="E009_twice"),
    pytest.param(
        'def f():\n    g(a + 1 = 2)\n',
        """\
bad.tl:2:7: error[E009]: the name before '=' in a call must be a plain name
  |
2 |     g(a + 1 = 2)
  |       ^^^^^
  = hint: to compare, write '=='""",
        id="E009_name"),
]


@pytest.mark.parametrize("src,expected", CASES)
def test_rendered_syntax_error(src, expected):
    assert error_text(src) == expected


def test_control_character_is_shown_escaped():
    assert error_text("x = 1\x01\n") == (
        "bad.tl:1:6: error[E003]: unexpected character '\\x01'\n"
        "  |\n"
        "1 | x = 1\x01\n"
        "  |      ^")


def test_not_utf8_file(tmp_path):
    path = tmp_path / "latin1.tl"
    path.write_bytes(b"# caf\xe9\nx = 1\n")
    result = check_file(str(path))
    assert not result.ok
    assert render_all(result.diagnostics, result.sources) == (
        f"{path}:1:6: error[E001]: the file is not UTF-8 text (byte 0xe9)\n"
        "  |\n"
        "1 | # caf\ufffd\n"
        "  |      ^\n"
        "  = hint: tlc reads .tl files as UTF-8")


def test_deep_nesting_is_an_error_not_a_crash():
    line = "x = " + "(1 + " * 5000 + "1" + ")" * 5000
    assert error_text(line + "\n") == (
        "bad.tl:1:1: error[E010]: the program is nested too deeply to compile\n"
        "  |\n"
        f"1 | {line[:120]}...\n"
        "  | ^\n"
        "  = hint: split the deepest expression into named intermediate values")


def test_deep_but_redundant_parentheses_parse():
    assert parse("x = " + "(" * 5000 + "1" + ")" * 5000 + "\n").consts[0].value.value == 1


def test_errors_never_name_compiler_internals():
    for src, _ in (p.values for p in CASES):
        text = error_text(src)
        assert "lark" not in text.lower() and "Traceback" not in text and "_NEWLINE" not in text
