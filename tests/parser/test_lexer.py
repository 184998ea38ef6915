"""The lexer (`tlc.parser.lexer.TileLexer`) gives exactly the tokens of Lark's own basic lexer
for the same grammar: types, text, positions, and the same error where no terminal matches."""
from __future__ import annotations

import functools
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lark import Lark
from lark.exceptions import UnexpectedCharacters

from tlc.parser.lexer import TileLexer

ROOT = Path(__file__).resolve().parents[2]
GRAMMAR = (ROOT / "grammar" / "tile.lark").read_text(encoding="utf-8")
EXAMPLES = sorted((ROOT / "examples").glob("*.tl")) + sorted((ROOT / "stdlib").glob("*.tl"))


@functools.cache
def _lexer(kind):
    # Without the indenter: it comes after the lexer, whichever lexer it is.  Built by the first
    # test that lexes, not at import: building both took 1.3 s of every pytest-xdist worker's
    # collection, also where the worker runs none of these tests.
    return Lark(GRAMMAR, parser="lalr", lexer=kind, keep_all_tokens=True, maybe_placeholders=True)


def tokens(parser, text):
    try:
        return [(t.type, str(t), t.start_pos, t.line, t.column, t.end_line, t.end_column, t.end_pos)
                for t in parser.lex(text)]
    except UnexpectedCharacters as e:
        return ("error", e.pos_in_stream, e.line, e.column, sorted(e.allowed))


def same(text):
    assert tokens(_lexer(TileLexer), text) == tokens(_lexer("basic"), text)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_examples(path):
    same(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("text", [
    "", "\n", "x", "def f():\n    return x  # c\n", "a**=b //= c ** d // e\n", "if_ = not_x and not x\n",
    "0x_ff 1_000 .5 2. 1e-5 3E+2 0 007\n", "'a\\'b' \"c\\\"d\" 'x\n", "x = 1 \\\n  + 2\r\n\ty = 2\n",
    "True False None Truex\n", "a $ b\n", "\x00\n", "é = ü\n", "# only a comment", "x = (1,\n   2)\n",
    "x = 1\n\n   \n# c\n    y\n", "->=>==<=<<=>>=!=!\n",
])
def test_corner_cases(text):
    same(text)


_PIECES = st.sampled_from([
    "def", "if", "elif", "else", "for", "in", "with", "as", "not", "and", "or", "return", "pass", "x", "x1",
    "_y", "True", "0", "12", "0x1F", "1.5", "1e3", "'s'", '"t"', "+", "-", "*", "**", "/", "//", "%", "@", "<",
    "<=", "<<", ">>=", "==", "!=", "=", "+=", "->", ":", ";", ",", ".", "(", ")", "[", "]", "~", "&", "|", "^",
    " ", "  ", "\t", "\n", "\n    ", "\r\n", "# c", "\\\n", "$", "?", "!",
])


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES, max_size=40).map("".join))
def test_random_token_soup(text):
    same(text)
