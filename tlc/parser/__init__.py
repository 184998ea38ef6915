"""Parsing: `.tl` text -> AST (`tlc.parser.nodes`).  Entry point: `parse(text, path)`.

Owns syntax errors (codes E001-E010).  Name lookup and types belong to `tlc.typecheck`.
"""
from __future__ import annotations

import threading

from ..diagnostics import Diagnostic, DiagnosticError, Span
from . import nodes
from .depth import MAX_DEPTH, too_deep_at

# Lark and the parser built on it (`lark_parser`, its lexer and AST builder) are imported by the
# first `parse`: `import tlc` reaches this package for the AST's classes (`nodes`), and a module
# served from the checked-module cache is never parsed (Lark's import: ~30-45 ms of `import tlc`)
__all__ = ["parse", "nodes"]


def _expected(names) -> str:
    from .lark_parser import describe_terminal

    shown = sorted({describe_terminal(t) for t in names if not t.startswith("__")})
    if not shown:
        return ""
    if len(shown) > 8:
        shown = shown[:8] + ["..."]
    return "; expected " + (shown[0] if len(shown) == 1 else "one of " + ", ".join(shown))


def _syntax_diagnostic(err, path: str, text: str) -> Diagnostic:
    """The diagnostic of Lark's `UnexpectedInput` `err`."""
    from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedToken

    from .lark_parser import describe_token, open_brackets

    if isinstance(err, UnexpectedCharacters):
        ch = text[err.pos_in_stream] if 0 <= err.pos_in_stream < len(text) else "?"
        shown = repr(ch)[1:-1] if ch.isprintable() else f"\\x{ord(ch):02x}" if ord(ch) < 256 else f"\\u{ord(ch):04x}"
        span = Span(path, err.line, err.column, err.line, err.column + 1)
        return Diagnostic("E003", f"unexpected character '{shown}'", span)
    if isinstance(err, UnexpectedToken):
        tok = err.token
        brackets = open_brackets()
        if tok.type in ("$END", "_DEDENT") and brackets:
            return _unclosed(brackets[-1], path)
        if tok.type == "$END":
            lines = text.split("\n")
            line = max(1, len(lines) - 1)
            col = len(lines[line - 1]) + 1
            span = Span(path, line, col, line, col + 1)
        else:
            line = tok.line or 1
            col = tok.column or 1
            end_col = (tok.end_column or col + 1) if (tok.end_line or line) == line else col + 1
            if tok.type in ("_NEWLINE", "_INDENT", "_DEDENT"):
                end_col = col + 1
            span = Span(path, line, col, line, max(end_col, col + 1))
        # `accepts` asks the parser which terminals it would take here (after its default
        # reductions); `expected` alone can list terminals that would fail one step later.
        expected = err.accepts or err.expected
        hint = None
        if tok.type == "_INDENT":
            hint = "this line is indented more than the line before it, which does not open a block"
        elif expected == {"_INDENT"}:
            hint = "the body of a block is indented under the line that ends with ':'"
        elif tok.type == "_NEWLINE" and "COLON" in expected:
            hint = "a block ('def', 'if', 'for', 'with', ...) ends its first line with ':'"
        elif "NAME" in expected and tok.type != "NAME" and str(tok).isidentifier():
            hint = f"'{tok}' is a reserved word and cannot be used as a name"
        elif brackets and brackets[-1].line < line:
            b = brackets[-1]
            hint = f"the '{b}' at line {b.line}, column {b.column} is never closed"
        return Diagnostic("E002", f"unexpected {describe_token(tok)}{_expected(expected)}", span, hint)
    if isinstance(err, UnexpectedEOF):
        if open_brackets():
            return _unclosed(open_brackets()[-1], path)
        lines = text.split("\n")
        span = Span(path, len(lines), 1, len(lines), 2)
        return Diagnostic("E002", f"unexpected end of file{_expected(err.expected)}", span)
    return Diagnostic("E002", "syntax error", Span(path, 1, 1, 1, 2))


def _unclosed(bracket, path: str) -> Diagnostic:
    span = Span(path, bracket.line, bracket.column, bracket.line, bracket.column + 1)
    return Diagnostic("E002", f"'{bracket}' is never closed", span)


# The parser, its indenter and its AST builder keep the state of the parse in progress.
_LOCK = threading.Lock()

# The ASTs of the texts parsed last, by (path, text): the AST is immutable (frozen dataclasses,
# tuples), so a file checked again in one process (a std module every program importing it
# imports, `tlc.load` of one file twice, the language server's unchanged imports) is not parsed
# again; parsing was ~60% of checking std.gemm.  Only clean parses are kept.
_PARSED: dict[tuple[str, str], nodes.Module] = {}
_PARSED_KEEP = 64


def parse(text: str, path: str = "<string>") -> nodes.Module:
    """Parse one file's text; raises `DiagnosticError` with a span for any syntax error."""
    key = (path, text)
    module = _PARSED.get(key)
    if module is None:
        from .shipped import module as shipped  # a std module's AST made ahead of time (#15)

        module = shipped(text, path)
        if module is None:
            module = _parse(text, path)
        with _LOCK:
            if len(_PARSED) >= _PARSED_KEEP:
                del _PARSED[next(iter(_PARSED))]  # the oldest
            _PARSED[key] = module
    return module


def _parse(text: str, path: str) -> nodes.Module:
    source = text[1:] if text.startswith("\ufeff") else text  # a UTF-8 byte order mark, as Python allows
    source = source if source.endswith("\n") else source + "\n"
    sources = {path: text}
    from lark.exceptions import UnexpectedInput

    from .lark_parser import IndentationProblem, lark_parser, run

    parser = lark_parser()
    builder, indenter = parser.options.transformer, parser.options.postlex
    with _LOCK:
        builder.begin(path)
        try:
            module = run(parser, source)
            diagnostic = builder.error
            if diagnostic is None and indenter.longest_line + 3 * indenter.deepest_block + 8 > MAX_DEPTH:
                # Only a long line or deep blocks can nest this deeply: then measure.
                diagnostic = too_deep_at(module, path, builder.parenthesized, builder.elifs)
        except UnexpectedInput as err:
            diagnostic = _syntax_diagnostic(err, path, source)
        except IndentationProblem as err:
            span = Span(path, err.line, err.col, err.line, err.col + 1)
            diagnostic = Diagnostic(
                "E004", "this line's indentation matches no enclosing block", span,
                f"indent it to column {err.expected} like the block it belongs to")
        except RecursionError:
            diagnostic = too_deep(path)
        finally:
            builder.end()
    if diagnostic is not None:
        raise DiagnosticError([diagnostic], sources)
    return module


def too_deep(path: str) -> Diagnostic:
    return Diagnostic("E010", "the program is nested too deeply to compile", Span(path, 1, 1, 1, 2),
                      "split the deepest expression into named intermediate values")
