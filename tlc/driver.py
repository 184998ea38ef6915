"""The pipeline as data: which stage runs after which, and where each file comes from.

Owns reading files (with the errors a user can cause: missing, unreadable, not UTF-8) and
running the stages in order.  Each stage is one package with one entry function.
"""
from __future__ import annotations

import os
from dataclasses import field

from .diagnostics import Diagnostic, DiagnosticError, Span, TlcError
from .files import read_whole
from .frozen import record
from .package_data import folder_path

# the parser (and Lark's tables) and the type checker are imported by `check_source`: reading a
# file and resolving `std.NAME` (a module from the checked-module cache) need neither


class SourceError(TlcError):
    """A file that cannot be read at all (missing, a directory, not permitted)."""


# A pipe or a device (`tlc check /dev/stdin`) is read up to this much: /dev/zero never ends.
STREAM_LIMIT = 64 << 20


def read_source(path: str) -> str:
    """The text of a `.tl` file; raises `SourceError` or `DiagnosticError` (bad encoding)."""
    try:
        data, regular = read_whole(path, STREAM_LIMIT)
        if len(data) > STREAM_LIMIT and not regular:
            raise SourceError(f"{path} is not a regular file and holds more than {STREAM_LIMIT >> 20} MB: "
                              "not a .tl file")
    except FileNotFoundError:
        raise SourceError(f"no such file: {path}") from None
    except IsADirectoryError:
        raise SourceError(f"{path} is a directory, not a .tl file") from None
    except OSError as e:
        raise SourceError(f"cannot read {path}: {e.strerror}") from None
    except ValueError as e:  # a NUL in the name (tlc.load("a\0b.tl")): os.open's "embedded null byte"
        raise SourceError(f"cannot read {path!r}: {e}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        col = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        span = Span(path, line, col, line, col + 1)
        raise DiagnosticError([Diagnostic("E001", f"the file is not UTF-8 text (byte 0x{data[e.start]:02x})",
                                          span, "tlc reads .tl files as UTF-8")],
                              {path: data.decode("utf-8", errors="replace")}) from None


@record
class CheckResult:
    diagnostics: list[Diagnostic]
    sources: dict[str, str] = field(default_factory=dict)
    program: object | None = None

    @property
    def ok(self) -> bool:
        return not self.diagnostics


def check_source(text: str, path: str = "<string>") -> CheckResult:
    """Parse and type-check one file's text and whatever it imports."""
    from . import parser, typecheck

    try:
        module = parser.parse(text, path)
        program = typecheck.check_program(module, text)
    except DiagnosticError as e:
        sources = {path: text, **e.sources}
        return CheckResult(e.diagnostics, sources)
    except RecursionError:
        return CheckResult([parser.too_deep(path)], {path: text})
    return CheckResult([], {path: text}, program)


def resolve_path(path: str) -> str:
    """A file name, or `std.NAME` for a module of the standard library (when no file has that
    name): `tlc run std.gemm -k matmul`, `tlc.load("std.gemm")`."""
    if path.startswith("std.") and not os.path.exists(path):
        parts = path.split(".")[1:]
        candidate = os.path.join(folder_path("stdlib"), *parts[:-1], parts[-1] + ".tl")
        if parts and all(p.isidentifier() for p in parts) and os.path.isfile(candidate):
            return candidate
    return path


def check_file(path: str) -> CheckResult:
    """`tlc check`: raises `SourceError` for a file that cannot be read at all."""
    path = resolve_path(path)
    try:
        text = read_source(path)
    except DiagnosticError as e:  # its text as read once: a pipe cannot be read again
        return CheckResult(e.diagnostics, e.sources)
    return check_source(text, os.path.relpath(path) if not os.path.isabs(path) else path)
