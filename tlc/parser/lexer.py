"""The lexer: Lark's "basic" lexer, the same tokens from the same terminals, in one tight loop.

Lark's own basic lexer spends most of its time in Python-level bookkeeping per token (a line
counter object, a scanner object, a callback that turns names into keywords), about half of
the parse.  This one follows its rules exactly and keeps the bookkeeping in local variables:

* terminals are tried in Lark's order (priority, then longest possible match, then longest
  pattern, then name), as one alternation: the first that matches at the position wins;
* a string terminal that a regular-expression terminal of the same priority matches entirely
  (a keyword such as `def` against NAME) is left out of the alternation, and a NAME token whose
  text is a keyword becomes that keyword;
* a token's line and column are where it starts, its end line and column where the next one
  starts; only terminals that can hold a newline are searched for one;
* an ignored terminal (spaces, comments, a `\\` line continuation) produces no token;
* a position where no terminal matches raises Lark's `UnexpectedCharacters`.

`tests/parser/test_lexer.py` checks it against Lark's lexer.  A grammar it does not cover
(terminal flags, lexer callbacks, bytes) gets Lark's own lexer.
"""
from __future__ import annotations

from lark.exceptions import UnexpectedCharacters
from lark.lexer import BasicLexer, Lexer, PatternRE, PatternStr, Token


def _may_hold_newline(regexp: str) -> bool:
    # The test Lark itself applies (lark.lexer._regexp_has_newline).
    return "\n" in regexp or "\\n" in regexp or "\\s" in regexp or "[^" in regexp or ("(?s" in regexp and "." in regexp)


class TileLexer(Lexer):
    """A `Lexer` for `Lark(lexer=TileLexer)`: the tokens of `lexer="basic"`, faster."""

    __future_interface__ = 2  # lex(lexer_state, parser_state), the interface of Lark's own lexers

    def __init__(self, conf):
        self.terminals_by_name = conf.terminals_by_name
        self._fallback = None
        terminals = list(conf.terminals)
        if (conf.callbacks or conf.use_bytes or conf.g_regex_flags
                or any(t.pattern.flags for t in terminals)):
            self._fallback = BasicLexer(conf)
            return
        re = conf.re_module
        terminals.sort(key=lambda t: (-t.priority, -t.pattern.max_width, -len(t.pattern.value), t.name))
        keywords: dict[str, dict[str, str]] = {}
        embedded = set()
        for rx in terminals:
            if not isinstance(rx.pattern, PatternRE):
                continue
            compiled = re.compile(rx.pattern.to_regexp())
            for st in terminals:
                if isinstance(st.pattern, PatternStr) and st.priority == rx.priority:
                    m = compiled.match(st.pattern.value)
                    if m and m.group(0) == st.pattern.value:
                        keywords.setdefault(rx.name, {}).setdefault(st.pattern.value, st.name)
                        embedded.add(st.name)
        terminals = [t for t in terminals if t.name not in embedded]
        self._match = re.compile("|".join(f"(?P<{t.name}>{t.pattern.to_regexp()})" for t in terminals)).match
        self._keywords = keywords
        self._ignore = frozenset(conf.ignore)
        self._newline = frozenset(t.name for t in terminals if _may_hold_newline(t.pattern.to_regexp()))
        self._allowed = ({t.name for t in terminals} - self._ignore) or {"<END-OF-FILE>"}

    def lex(self, lexer_state, parser_state):
        if self._fallback is not None:
            return self._fallback.lex(lexer_state, parser_state)
        return self._lex(lexer_state, parser_state)

    def _lex(self, lexer_state, parser_state):
        source = lexer_state.text
        text = getattr(source, "text", source)  # a TextSlice (Lark >= 1.2) or the text
        end = getattr(source, "end", len(text))
        ctr = lexer_state.line_ctr
        pos, line, line_start = ctr.char_pos, ctr.line, ctr.line_start_pos
        match, keywords, ignore, newline = self._match, self._keywords, self._ignore, self._newline
        new, last = str.__new__, None
        try:
            while pos < end:
                m = match(text, pos, end)
                if m is None:
                    raise UnexpectedCharacters(text, pos, line, pos - line_start + 1, allowed=self._allowed,
                                               token_history=last and [last], state=parser_state,
                                               terminals_by_name=self.terminals_by_name)
                kind = m.lastgroup
                value = m.group()
                end_pos = m.end()
                start_line, column = line, pos - line_start + 1
                if kind in newline:
                    lines = value.count("\n")
                    if lines:
                        line += lines
                        line_start = pos + value.rindex("\n") + 1
                if kind in ignore:
                    pos = end_pos
                    continue
                kws = keywords.get(kind)
                if kws is not None:
                    kind = kws.get(value, kind)
                t = new(Token, value)  # Token(kind, value, pos, ...), without its slower __new__
                t.type = kind
                t.start_pos = pos
                t.value = value
                t.line = start_line
                t.column = column
                t.end_line = line
                t.end_column = end_pos - line_start + 1
                t.end_pos = end_pos
                last = t
                pos = end_pos
                yield t
        finally:
            # Where the lexer stopped, as Lark's own lexer leaves it (an error reads it).
            ctr.char_pos, ctr.line, ctr.line_start_pos = pos, line, line_start
            ctr.column = pos - line_start + 1
            lexer_state.last_token = last
