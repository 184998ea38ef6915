"""parse() keeps the ASTs of the texts it parsed last (tlc/parser/__init__.py's _PARSED): the
same text and path give the same (immutable) AST, another path or text is parsed anew, a
syntax error is reported every time, and the memo stays bounded."""
from __future__ import annotations

import pytest

from tlc import parser
from tlc.diagnostics import DiagnosticError

TEXT = "@kernel\ndef k(x: tensor[(4,), f32]):\n    pass\n"


def test_the_same_text_and_path_give_the_same_ast():
    a = parser.parse(TEXT, "memo_a.tl")
    assert parser.parse(TEXT, "memo_a.tl") is a
    b = parser.parse(TEXT, "memo_b.tl")
    assert b is not a and b.path == "memo_b.tl" and a.path == "memo_a.tl"
    c = parser.parse(TEXT + "\n", "memo_a.tl")
    assert c is not a and c == a  # a new parse of equal content


def test_a_syntax_error_is_reported_every_time():
    for _ in range(2):
        with pytest.raises(DiagnosticError) as e:
            parser.parse("def k(:\n", "memo_bad.tl")
        assert e.value.diagnostics[0].code == "E002"
    assert ("memo_bad.tl", "def k(:\n") not in parser._PARSED


def test_the_memo_keeps_the_latest_texts_only():
    texts = [f"X{i} = {i}\n" for i in range(parser._PARSED_KEEP + 5)]
    for t in texts:
        parser.parse(t, "memo_many.tl")
    assert len(parser._PARSED) <= parser._PARSED_KEEP
    assert ("memo_many.tl", texts[-1]) in parser._PARSED and ("memo_many.tl", texts[0]) not in parser._PARSED
