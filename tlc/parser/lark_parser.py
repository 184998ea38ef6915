"""The Lark LALR parser for `grammar/tile.lark`, built once per process and cached.

Owns the indenter (leading whitespace to _INDENT/_DEDENT tokens) and the translation of Lark's
own errors into positions and readable token names; it knows nothing of the AST.
"""
from __future__ import annotations

import functools
from importlib import resources

from lark import Lark, Token
from lark.lexer import PatternStr
from lark.indenter import Indenter


class IndentationProblem(Exception):
    """A dedent to a column that matches no enclosing block."""

    def __init__(self, line: int, col: int, expected: int):
        super().__init__(line, col, expected)
        self.line, self.col, self.expected = line, col, expected


class TileIndenter(Indenter):
    NL_type = "_NEWLINE"
    OPEN_PAREN_types = ["LPAR", "LSQB", "LBRACE"]
    CLOSE_PAREN_types = ["RPAR", "RSQB", "RBRACE"]
    INDENT_type = "_INDENT"
    DEDENT_type = "_DEDENT"
    tab_len = 8

    def handle_NL(self, token: Token):
        if self.paren_level > 0:
            return
        yield token
        indent_str = token.rsplit("\n", 1)[1]
        indent = indent_str.count(" ") + indent_str.count("\t") * self.tab_len
        if indent > self.indent_level[-1]:
            self.indent_level.append(indent)
            # Placed at the first character of the indented line, where an error should point.
            yield Token(self.INDENT_type, indent_str, token.end_pos, token.end_line, token.end_column,
                        token.end_line, token.end_column, token.end_pos)
            return
        while indent < self.indent_level[-1]:
            self.indent_level.pop()
            yield Token.new_borrow_pos(self.DEDENT_type, indent_str, token)
        if indent != self.indent_level[-1]:
            raise IndentationProblem(token.end_line, len(indent_str) + 1, self.indent_level[-1] + 1)

    def _process(self, stream):
        # Lark's own version asserts on an unbalanced ')'; here the parser reports it instead.
        # `open_brackets` (the brackets not yet closed) lets a syntax error name an unclosed '('.
        self.open_brackets: list[Token] = []
        token = None
        for token in stream:
            if token.type == self.NL_type:
                yield from self.handle_NL(token)
            else:
                yield token
            if token.type in self.OPEN_PAREN_types:
                self.paren_level += 1
                self.open_brackets.append(token)
            elif token.type in self.CLOSE_PAREN_types:
                self.paren_level = max(0, self.paren_level - 1)
                if self.open_brackets:
                    self.open_brackets.pop()
        while len(self.indent_level) > 1:
            self.indent_level.pop()
            yield (Token.new_borrow_pos(self.DEDENT_type, "", token) if token
                   else Token(self.DEDENT_type, "", 0, 1, 1, 1, 1, 0))


@functools.lru_cache(maxsize=1)
def lark_parser() -> Lark:
    grammar = resources.files("tlc").joinpath("grammar/tile.lark").read_text(encoding="utf-8")
    return Lark(grammar, parser="lalr", lexer="basic", postlex=TileIndenter(), propagate_positions=True,
                maybe_placeholders=True, start="start")


_SPECIAL = {
    "NAME": "a name",
    "DEC_NUMBER": "a number",
    "HEX_NUMBER": "a number",
    "FLOAT_NUMBER": "a number",
    "STRING": "a string",
    "_NEWLINE": "a new line",
    "_INDENT": "an indented block",
    "_DEDENT": "the end of the block",
    "$END": "the end of the file",
    "AUGOP": "an augmented assignment ('+=', ...)",
}


@functools.lru_cache(maxsize=None)
def describe_terminal(name: str) -> str:
    """A readable name for a terminal: `')'`, `'def'`, `a name`."""
    if name in _SPECIAL:
        return _SPECIAL[name]
    for term in lark_parser().terminals:
        if term.name == name and isinstance(term.pattern, PatternStr):
            return f"'{term.pattern.value}'"
    return name.lower()


# What an unexpected layout token is called after the word "unexpected".
_UNEXPECTED = {
    "_NEWLINE": "end of line",
    "_INDENT": "indentation",
    "_DEDENT": "end of block",
    "$END": "end of file",
}


def open_brackets() -> list[Token]:
    """The brackets still open where the last parse stopped (innermost last)."""
    return list(getattr(lark_parser().options.postlex, "open_brackets", []))


def describe_token(token: Token) -> str:
    """A token as it reads after "unexpected": `end of line`, `name 'x'`, `')'`."""
    if token.type in _UNEXPECTED:
        return _UNEXPECTED[token.type]
    text = str(token)
    if len(text) > 40:
        text = text[:37] + "..."
    if token.type == "NAME":
        return f"name '{text}'"
    if token.type in ("DEC_NUMBER", "HEX_NUMBER", "FLOAT_NUMBER"):
        return f"number {text}"
    if token.type == "STRING":
        return f"string {text}"
    return f"'{text}'"
