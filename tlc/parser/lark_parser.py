"""The Lark LALR parser for `grammar/tile.lark`, built once per process and cached.

Owns the indenter (leading whitespace to _INDENT/_DEDENT tokens), the parser's construction
(with the AST builder of `transformer.py` as its callbacks, so that no parse tree is built)
and the translation of Lark's own errors into positions and readable token names.  Its tables
ship with tlc (`grammar/tile.tables.json`, written by scripts/parser-tables) and are otherwise
kept on disk as data by `grammar_cache.py`.
"""
from __future__ import annotations

import functools

from lark import Lark, Token
from lark.lexer import PatternStr
from lark.indenter import Indenter

from ..package_data import folder, grammar_text
from .grammar_cache import cached_parser
from .lexer import TileLexer
from .transformer import ToAst


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
        # `longest_line` (in characters, a logical line: brackets and `\` joined) and
        # `deepest_block` bound how deeply the parsed program can nest (see `parse`).
        self.open_brackets: list[Token] = []
        self.longest_line = self.deepest_block = 0
        line_start = 0
        token = None
        nl_type = self.NL_type
        open_types, close_types = frozenset(self.OPEN_PAREN_types), frozenset(self.CLOSE_PAREN_types)
        for token in stream:
            tt = token.type
            if tt == nl_type:
                if not self.paren_level:
                    if token.start_pos - line_start > self.longest_line:
                        self.longest_line = token.start_pos - line_start
                    line_start = token.end_pos
                yield from self.handle_NL(token)
                if len(self.indent_level) > self.deepest_block:
                    self.deepest_block = len(self.indent_level)
                continue
            yield token
            if tt in open_types:
                self.paren_level += 1
                self.open_brackets.append(token)
            elif tt in close_types:
                self.paren_level = max(0, self.paren_level - 1)
                if self.open_brackets:
                    self.open_brackets.pop()
        if token is not None and token.end_pos - line_start > self.longest_line:
            self.longest_line = token.end_pos - line_start
        while len(self.indent_level) > 1:
            self.indent_level.pop()
            yield (Token.new_borrow_pos(self.DEDENT_type, "", token) if token
                   else Token(self.DEDENT_type, "", 0, 1, 1, 1, 1, 0))



# the LALR tables of grammar/tile.lark as made by scripts/parser-tables, installed with tlc:
# building them costs more than a second (H200), loading them a tenth of that
TABLES = "tile.tables.json"


def parser_options() -> tuple[dict, dict]:
    """Lark's options for tlc's parser: (those its tables are made with, the callbacks)."""
    options = dict(parser="lalr", lexer=TileLexer, keep_all_tokens=True, maybe_placeholders=True,
                   start="start")
    return options, dict(postlex=TileIndenter(), transformer=ToAst())


@functools.lru_cache(maxsize=1)
def lark_parser() -> Lark:
    """The parser, made once: LALR, with the indenter and the AST builder (`ToAst`) as its
    callbacks, from the shipped tables (`TABLES`) where they are the grammar's, else from the
    cache or built.  `parse` (tlc.parser) owns its use: one parse at a time, under a lock."""
    options, callbacks = parser_options()
    return cached_parser(grammar_text(), options, callbacks, shipped=folder("grammar") / TABLES)


def run(parser: Lark, source: str):
    """`parser.parse(source)`, through a loop of its own over Lark's LALR tables: the same
    shifts, reductions and callbacks (so the same AST), without the per-token cost of Lark's
    `feed_token` (a method call, its attribute reads, and each reduction's rule found in the
    callbacks by a hash and an equality test written in Python: ~8% of a parse).  Where the
    tables have no action for a token, Lark's own `feed_token` takes that token from the same
    state and raises its error, which carries the interactive parser, as Lark's loop does.  A
    parser this loop does not fit (terminal callbacks, another Lark's internals) is run by Lark."""
    loop = _loop(parser)
    return loop(source) if loop is not None else parser.parse(source)


@functools.lru_cache(maxsize=4)
def _loop(parser: Lark):
    try:
        from lark.exceptions import UnexpectedInput
        from lark.parsers.lalr_analysis import Shift
        from lark.parsers.lalr_interactive_parser import InteractiveParser
        from lark.parsers.lalr_parser_state import ParseConf, ParserState

        frontend = parser.parser
        lalr = frontend.parser.parser  # lark.parsers.lalr_parser._Parser
        callbacks = lalr.callbacks
        table = lalr.parse_table
        start, = frontend.parser_conf.start
        make_thread = frontend._make_lexer_thread
        states = table.states
    except (AttributeError, ImportError, ValueError):
        return None
    if any(isinstance(k, str) for k in callbacks):  # a terminal's callback: Lark's loop
        return None
    rules: dict = {}  # id(rule) -> (its length, its callback, the name of its origin, the rule)

    def reduction(rule):
        found = rules[id(rule)] = (len(rule.expansion), callbacks[rule], rule.origin.name, rule)
        return found

    def loop(source: str):
        thread = make_thread(source)
        state = ParserState(ParseConf(table, callbacks, start), thread)
        state_stack, value_stack = state.state_stack, state.value_stack
        push_state, push_value, lookup = state_stack.append, value_stack.append, rules.get
        token = None
        try:
            for token in thread.lex(state):
                kind = token.type
                while True:
                    try:
                        action, arg = states[state_stack[-1]][kind]
                    except KeyError:
                        state.feed_token(token)  # raises Lark's UnexpectedToken from this state
                        raise
                    if action is Shift:
                        push_state(arg)
                        push_value(token)
                        break
                    size, callback, origin, _ = lookup(id(arg)) or reduction(arg)
                    if size:
                        children = value_stack[-size:]
                        del state_stack[-size:]
                        del value_stack[-size:]
                    else:
                        children = []
                    push_value(callback(children))
                    push_state(states[state_stack[-1]][origin][1])
            end = Token.new_borrow_pos("$END", "", token) if token else Token("$END", "", 0, 1, 1)
            return state.feed_token(end, True)
        except UnexpectedInput as e:
            e.interactive_parser = InteractiveParser(lalr, state, state.lexer)
            raise

    return loop


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
