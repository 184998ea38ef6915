"""The LSP side of `tlc lsp`: pygls handlers that ask analysis.py and convert between tlc's
positions (1-based lines, 1-based columns in characters) and LSP's (0-based lines, columns in
UTF-16 code units)."""
from __future__ import annotations

import asyncio
import difflib
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path

from .. import __version__
from ..diagnostics import Span
from . import analysis

TYPING_PAUSE_S = 0.2  # a change is checked when no other follows within this time

_KINDS = {"builtin": lsp.CompletionItemKind.Function, "dtype": lsp.CompletionItemKind.TypeParameter,
          "decorator": lsp.CompletionItemKind.Keyword, "module": lsp.CompletionItemKind.Module,
          "function": lsp.CompletionItemKind.Function, "constant": lsp.CompletionItemKind.Constant}


class TlcLanguageServer(LanguageServer):
    def __init__(self, arch: str = "sm_80"):
        super().__init__("tlc", __version__)
        self.arch = arch
        # uri -> (the last program its text checked into, that text): kept while the text being
        # typed does not check, so that hover and definition still answer on the lines unchanged
        self.programs: dict[str, tuple] = {}
        self.published: dict[str, set[str]] = {}  # uri -> the uris its check published to
        self.checker = ThreadPoolExecutor(max_workers=1)  # one check at a time: the stages share caches


# ---- positions -------------------------------------------------------------------------------

def _utf16(line_text: str, col: int) -> int:
    """LSP's character of the 1-based column `col` of a line."""
    return len(line_text[:col - 1].encode("utf-16-le")) // 2


def _column(line_text: str, character: int) -> int:
    """The 1-based column of LSP's `character` (UTF-16 code units) on a line."""
    units = 0
    for i, ch in enumerate(line_text):
        if units >= character:
            return i + 1
        units += 2 if ord(ch) > 0xFFFF else 1
    return len(line_text) + 1


def _line(text: str | None, line: int) -> str:
    lines = (text or "").split("\n")
    return lines[line - 1] if 1 <= line <= len(lines) else ""


def to_range(span: Span | None, text: str | None) -> lsp.Range:
    if span is None:
        return lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0))
    start = lsp.Position(span.line - 1, _utf16(_line(text, span.line), span.col))
    end = lsp.Position(span.end_line - 1, _utf16(_line(text, span.end_line), span.end_col))
    return lsp.Range(start, end)


def _kept_lines(then: str, now: str) -> dict[int, int]:
    """The lines (1-based) of `then` that `now` still has unchanged, to their place in `now`."""
    a, b = then.split("\n"), now.split("\n")
    if a == b:
        return {i: i for i in range(1, len(a) + 1)}
    blocks = difflib.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks()
    return {i + k + 1: j + k + 1 for i, j, size in blocks for k in range(size)}


def _source(ls: LanguageServer, uri: str) -> str:
    """The document's text: the editor's where it is open, else its file's (pygls reads it);
    "" where a request names a document never opened whose file is missing, a folder or not
    UTF-8 (such a request raised the OSError to the client as an internal error)."""
    try:
        return ls.workspace.get_text_document(uri).source
    except (OSError, UnicodeDecodeError):
        return ""


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError):
        return None


# ---- the server ------------------------------------------------------------------------------

def make_server(arch: str = "sm_80") -> TlcLanguageServer:
    server = TlcLanguageServer(arch)

    async def publish(ls: TlcLanguageServer, uri: str) -> None:
        """`tlc check`'s diagnostics of the document's current text, each on its file's URI
        (an error in an imported file shows there); a file that had some and has none now is
        cleared.  A check takes up to seconds on a large file (std.nn_train's: 3 s), so it
        waits for typing to pause (a newer version drops this one) and runs in the checker's
        one thread, the server answering hovers and completions meanwhile."""
        doc = ls.workspace.get_text_document(uri)
        version, source = doc.version, doc.source
        await asyncio.sleep(TYPING_PAUSE_S)
        if ls.workspace.get_text_document(uri).version != version:
            return
        path = to_fs_path(uri) or uri
        result = await asyncio.get_running_loop().run_in_executor(ls.checker, analysis.check, source, path, ls.arch)
        if ls.workspace.get_text_document(uri).version != version or uri not in ls.workspace.text_documents:
            return  # typed on or closed while it ran
        if result.ok:
            ls.programs[uri] = (result.program, source)
        by_uri: dict[str, list] = {uri: []}
        for d in result.diagnostics:
            file = analysis.std_file(d.span.file) if d.span is not None else path
            target = uri if file == path else from_fs_path(os.path.abspath(file))
            text = source if target == uri else result.sources.get(d.span.file) or _read(file)
            message = d.message + (f"\nhint: {d.hint}" if d.hint else "")
            severity = lsp.DiagnosticSeverity.Warning if d.severity == "warning" else lsp.DiagnosticSeverity.Error
            by_uri.setdefault(target, []).append(lsp.Diagnostic(to_range(d.span, text), message, severity=severity,
                                                                 code=d.code, source="tlc"))
        for stale in ls.published.get(uri, set()) - set(by_uri):
            by_uri[stale] = []
        ls.published[uri] = {u for u, ds in by_uri.items() if ds and u != uri}
        for target, diagnostics in by_uri.items():
            ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(
                target, diagnostics, version=version if target == uri else None))

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(ls: TlcLanguageServer, params: lsp.DidOpenTextDocumentParams) -> None:
        await publish(ls, params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    async def did_change(ls: TlcLanguageServer, params: lsp.DidChangeTextDocumentParams) -> None:
        await publish(ls, params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: TlcLanguageServer, params: lsp.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.programs.pop(uri, None)
        for target in ls.published.pop(uri, set()) | {uri}:
            ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(target, []))

    def found_at(ls: TlcLanguageServer, params) -> tuple[object, analysis.Found | None, Callable]:
        """The document's last checked program, the name at the request's position in it (on a
        line the text has kept since that check) and a function moving a span of that text to
        where it is now."""
        uri = params.text_document.uri
        text = _source(ls, uri)
        program, checked = ls.programs.get(uri, (None, text))
        now_of = _kept_lines(checked, text)
        then_of = {now: then for then, now in now_of.items()}
        line = params.position.line + 1
        path = to_fs_path(uri) or uri
        found = None
        if program is not None and line in then_of:
            col = _column(_line(text, line), params.position.character)
            found = analysis.name_at(program, path, then_of[line], col)

        def moved(span: Span) -> lsp.Range:
            if span.file != path or span.line not in now_of or span.end_line not in now_of:
                return to_range(span, _read(analysis.std_file(span.file)) if span.file != path else checked)
            return to_range(Span(span.file, now_of[span.line], span.col, now_of[span.end_line], span.end_col), text)
        return program, found, moved

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    def hover(ls: TlcLanguageServer, params: lsp.HoverParams) -> lsp.Hover | None:
        program, found, moved = found_at(ls, params)
        markdown = analysis.hover_text(program, found) if found is not None else None
        return lsp.Hover(lsp.MarkupContent(lsp.MarkupKind.Markdown, markdown), moved(found.span)) \
            if markdown is not None else None

    @server.feature(lsp.TEXT_DOCUMENT_DEFINITION)
    def definition(ls: TlcLanguageServer, params: lsp.DefinitionParams) -> lsp.Location | None:
        program, found, moved = found_at(ls, params)
        span = analysis.definition(program, found) if found is not None else None
        if span is None:
            return None
        return lsp.Location(from_fs_path(os.path.abspath(analysis.std_file(span.file))), moved(span))

    @server.feature(lsp.TEXT_DOCUMENT_COMPLETION, lsp.CompletionOptions(trigger_characters=[".", "@", " "]))
    def completion(ls: TlcLanguageServer, params: lsp.CompletionParams) -> lsp.CompletionList:
        text = _source(ls, params.text_document.uri)
        line = params.position.line + 1
        col = _column(_line(text, line), params.position.character)
        items = []
        for c in analysis.completions(text, line, col):
            edits = [lsp.TextEdit(lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0)), c.import_line)] \
                if c.import_line else None
            items.append(lsp.CompletionItem(c.label, kind=_KINDS[c.kind], detail=c.detail,
                                            additional_text_edits=edits))
        return lsp.CompletionList(is_incomplete=False, items=items)

    return server


def serve(arch: str = "sm_80") -> None:
    """Run the server on stdin/stdout until the client exits it."""
    make_server(arch).start_io()
