"""Source spans, diagnostics and their rendering.

Owns: `Span`, `Diagnostic`, the error classes every stage raises (`TlcError` and
`DiagnosticError`), and the one way they are rendered (rustc style: `file:line:col`,
the source line, a caret under the span, an optional hint).  Stages never print;
they raise or collect `Diagnostic`s and the CLI and the API render them here.
"""
from __future__ import annotations

import json
from dataclasses import field

from .frozen import frozen, record


@frozen
class Span:
    """A region of a source file; lines and columns are 1-based, `end_col` exclusive."""

    file: str
    line: int
    col: int
    end_line: int
    end_col: int

    def to(self, other: "Span") -> "Span":
        """The span from the start of `self` to the end of `other`."""
        return Span(self.file, self.line, self.col, other.end_line, other.end_col)


@frozen
class Diagnostic:
    code: str
    message: str
    span: Span | None
    hint: str | None = None
    severity: str = "error"

    def to_json(self) -> dict:
        d = {"severity": self.severity, "code": self.code, "message": self.message}
        if self.span is not None:
            s = self.span
            d.update(file=s.file, line=s.line, col=s.col, end_line=s.end_line, end_col=s.end_col)
        if self.hint:
            d["hint"] = self.hint
        return d


class TlcError(Exception):
    """Base of every error tlc raises on purpose: a user's mistake, never a bug."""


class DiagnosticError(TlcError):
    """One or more diagnostics that stop compilation; `sources` maps file names to text."""

    def __init__(self, diagnostics: list[Diagnostic], sources: dict[str, str] | None = None):
        self.diagnostics = list(diagnostics)
        self.sources = dict(sources or {})
        super().__init__(render_all(self.diagnostics, self.sources))


@record
class DiagnosticBag:
    """Collects diagnostics so that one pass can report several independent errors."""

    items: list[Diagnostic] = field(default_factory=list)

    def error(self, code: str, message: str, span: Span | None, hint: str | None = None) -> None:
        d = Diagnostic(code, message, span, hint)
        if d not in self.items:
            self.items.append(d)

    def __bool__(self) -> bool:
        return bool(self.items)


# Long lines are shown as a window around the span so that a 10 MB line stays readable.
_WINDOW = 120


def _source_window(line_text: str, col: int, end_col: int) -> tuple[str, int, int]:
    if len(line_text) <= _WINDOW:
        return line_text, col, end_col
    start = max(0, col - 1 - _WINDOW // 2)
    stop = start + _WINDOW
    snippet = ("..." if start else "") + line_text[start:stop] + ("..." if stop < len(line_text) else "")
    shift = start - (3 if start else 0)
    return snippet, col - shift, min(end_col - shift, len(snippet) + 1)


def render(d: Diagnostic, sources: dict[str, str] | None = None) -> str:
    sources = sources or {}
    if d.span is None:
        head = f"{d.severity}[{d.code}]: {d.message}"
        return head + (f"\n  = hint: {d.hint}" if d.hint else "")
    s = d.span
    out = [f"{s.file}:{s.line}:{s.col}: {d.severity}[{d.code}]: {d.message}"]
    text = sources.get(s.file)
    if text is not None:
        lines = text.split("\n")
        if 1 <= s.line <= len(lines):
            raw = lines[s.line - 1].rstrip("\r").replace("\t", " ")
            end_col = s.end_col if s.end_line == s.line else len(raw) + 1
            end_col = max(end_col, s.col + 1)
            shown, col, end_col = _source_window(raw, s.col, end_col)
            gutter = str(s.line)
            pad = " " * len(gutter)
            out.append(f"{pad} |")
            out.append(f"{gutter} | {shown}")
            out.append(f"{pad} | {' ' * (col - 1)}{'^' * max(1, end_col - col)}")
    if d.hint:
        out.append(f"  = hint: {d.hint}")
    return "\n".join(out)


def render_all(diagnostics: list[Diagnostic], sources: dict[str, str] | None = None) -> str:
    return "\n\n".join(render(d, sources) for d in diagnostics)


def to_json_lines(diagnostics: list[Diagnostic]) -> str:
    return "\n".join(json.dumps(d.to_json()) for d in diagnostics)
