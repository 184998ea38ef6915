"""`tlc lsp` end to end (pytest-lsp: the real command in a subprocess, spoken to over its
stdin/stdout): tlc check's diagnostics as you type, with their codes and ranges; hover with a
name's dtype, shape and memory scope; go to definition into this file, a relative import and a
std module; completion of builtins, dtypes and std names."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest_lsp = pytest.importorskip("pytest_lsp")  # the test extra; absent where only the GPU tests run

from lsprotocol import types as lsp  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient  # noqa: E402

from tlc.package_data import stdlib

ROOT = Path(__file__).resolve().parents[2]
VECTOR_ADD = ROOT / "examples" / "vector_add.tl"

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_lsp.fixture(scope="module",
                    config=ClientServerConfig(server_command=[sys.executable, "-m", "tlc.cli", "lsp"]))
async def client(lsp_client: LanguageClient):
    await lsp_client.initialize_session(lsp.InitializeParams(capabilities=lsp.ClientCapabilities(),
                                                             root_uri=ROOT.as_uri()))
    yield
    await lsp_client.shutdown_session()


async def opened(client: LanguageClient, path: Path, text: str, version: int = 1) -> list:
    """Open `path` holding `text` and wait for its diagnostics."""
    uri = path.as_uri()
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(lsp.TextDocumentItem(uri, "tl", version, text)))
    return await diagnostics_of(client, uri)


async def diagnostics_of(client: LanguageClient, uri: str) -> list:
    while True:
        params = await client.wait_for_notification(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        if params.uri == uri:
            return list(params.diagnostics)


def changed(client: LanguageClient, path: Path, text: str, version: int) -> None:
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        lsp.VersionedTextDocumentIdentifier(version, path.as_uri()),
        [lsp.TextDocumentContentChangeWholeDocument(text)]))


def at(line: int, character: int, path: Path = VECTOR_ADD) -> dict:
    """The document and position of a request; line and character 0-based, as LSP counts."""
    return dict(text_document=lsp.TextDocumentIdentifier(path.as_uri()), position=lsp.Position(line, character))


def span(line: int, start: int, end: int) -> lsp.Range:
    return lsp.Range(lsp.Position(line, start), lsp.Position(line, end))


async def test_diagnostics_as_you_type_carry_tlc_check_codes_and_ranges(client, tmp_path):
    good = VECTOR_ADD.read_text()
    wrong = good.replace("alpha * xs[i]", "alpha * zs[i]")
    path = tmp_path / "va.tl"
    found = await opened(client, path, wrong)
    assert [(d.code, d.message, d.range, d.severity, d.source) for d in found] == [
        ("E020", "unknown name 'zs'", span(15, 28, 30), lsp.DiagnosticSeverity.Error, "tlc")]
    changed(client, path, good, 2)
    assert await diagnostics_of(client, path.as_uri()) == []
    # the scheduled half of tlc check (for sm_80): 2^20 f32 elements a block in 128 threads
    changed(client, path, good.replace("BLOCK: const = 1024", "BLOCK: const = 1 << 20"), 3)
    found = await diagnostics_of(client, path.as_uri())
    assert [(d.code, d.message, d.range) for d in found] == [
        ("E153", "kernel 'vector_add' needs 64 KiB a thread for its fragments and local buffers, more than the 8 KiB "
                 "a thread can hold: xs (32 KiB), ys (32 KiB)\nhint: a thread has 1020 bytes of registers and spills "
                 "the rest to local memory; use smaller tiles or more threads", span(10, 8, 33))]



async def test_a_burst_of_changes_is_checked_once_at_its_last_version(client, tmp_path):
    good = VECTOR_ADD.read_text()
    path = tmp_path / "burst.tl"
    assert await opened(client, path, good) == []
    for version, name in [(2, "zs"), (3, "ws"), (4, "vs")]:
        changed(client, path, good.replace("alpha * xs[i]", f"alpha * {name}[i]"), version)
    while (params := await client.wait_for_notification(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)).uri != path.as_uri():
        pass
    assert (params.version, [d.message for d in params.diagnostics]) == (4, ["unknown name 'vs'"])


async def test_ranges_count_utf16_units(client, tmp_path):
    """A character outside the BMP before the error is two UTF-16 units in LSP's columns."""
    text = VECTOR_ADD.read_text().replace("ys[i] = alpha * xs[i] + ys[i]", "ys[i] = alpha * xs[i] + zs['😀'] + ys[i]")
    (found,) = await opened(client, tmp_path / "u.tl", text)
    line = text.split("\n")[15]
    assert found.range.start == lsp.Position(15, line.index("zs"))
    assert line.index("zs") < line.index("😀")  # the error sits before it: same column either way
    text = VECTOR_ADD.read_text().replace("ys[i] = alpha * xs[i] + ys[i]", "ys[i] = alpha * xs[i] + ys[i]  # 😀\n"
                                          "            ys[i] = zs[i]  # 😀😀")
    (found,) = await opened(client, tmp_path / "v.tl", text)
    assert found.range == span(16, 20, 22)


async def test_hover_shows_dtype_shape_and_memory_scope(client):
    await opened(client, VECTOR_ADD, VECTOR_ADD.read_text())
    ys = await client.text_document_hover_async(lsp.HoverParams(**at(15, 13)))
    assert ys.contents.value == "```tl\nys: fragment f32[BLOCK]\n```\ndtype `f32` · shape `[BLOCK]` · fragment memory"
    assert ys.range == span(15, 12, 14)
    x = await client.text_document_hover_async(lsp.HoverParams(**at(8, 15)))
    assert x.contents.value == "```tl\nx: global f32[N]\n```\ndtype `f32` · shape `[N]` · global memory"
    alpha = await client.text_document_hover_async(lsp.HoverParams(**at(15, 21)))
    assert alpha.contents.value == "```tl\nalpha: f32\n```\nscalar"
    assert await client.text_document_hover_async(lsp.HoverParams(**at(15, 18))) is None  # the '=': no name
    n = await client.text_document_hover_async(lsp.HoverParams(**at(8, 22)))  # x: f32[N]
    assert n.contents.value == "```tl\nN\n```\nshape symbol: a size taken from the arrays at each call"



async def test_hover_and_definition_on_kept_lines_while_the_text_does_not_check(client, tmp_path):
    """The last text that checked answers on the lines typing has not touched, moved to where
    they are now (a comment line added above them, an error on another line)."""
    good = VECTOR_ADD.read_text()
    path = tmp_path / "typing.tl"
    assert await opened(client, path, good) == []
    changed(client, path, "# a new first line\n" + good.replace("alpha * xs[i]", "alpha * zs[i]"), 2)
    assert [d.code for d in await diagnostics_of(client, path.as_uri())] == ["E020"]
    ys = await client.text_document_hover_async(lsp.HoverParams(**at(12, 9, path)))  # line 11 before
    assert ys.contents.value.startswith("```tl\nys: fragment f32[BLOCK]\n```") and ys.range == span(12, 8, 10)
    xs = await client.text_document_definition_async(lsp.DefinitionParams(**at(13, 28, path)))  # copy(x[...], xs)
    assert (xs.uri, xs.range) == (path.as_uri(), span(11, 8, 10))
    assert await client.text_document_hover_async(lsp.HoverParams(**at(16, 13, path))) is None  # the line typed on

async def test_definition_of_a_local_and_of_a_parameter(client):
    await opened(client, VECTOR_ADD, VECTOR_ADD.read_text())
    xs = await client.text_document_definition_async(lsp.DefinitionParams(**at(15, 29)))
    assert (xs.uri, xs.range) == (VECTOR_ADD.as_uri(), span(10, 8, 10))
    alpha = await client.text_document_definition_async(lsp.DefinitionParams(**at(15, 21)))
    assert (alpha.uri, alpha.range) == (VECTOR_ADD.as_uri(), span(8, 50, 55))
    copy = await client.text_document_definition_async(lsp.DefinitionParams(**at(12, 9)))
    assert copy is None  # a builtin: no source defines it


USES_IMPORTS = """\
from std.nn import rms_norm, LOG2E
from .helpers import twice


@kernel
def scaled(x: f32[N], y: f32[N], BLOCK: const = 256):
    with grid(cdiv(N, BLOCK), threads=128) as bx:
        for i in parallel(BLOCK):
            y[bx * BLOCK + i] = twice(x[bx * BLOCK + i])
"""

HELPERS = """\
def twice(v: f32) -> f32:
    return v * 2.0
"""


async def test_definition_across_a_relative_import_and_into_std(client, tmp_path):
    (tmp_path / "helpers.tl").write_text(HELPERS)
    main = tmp_path / "main.tl"
    assert await opened(client, main, USES_IMPORTS) == []
    twice = await client.text_document_definition_async(lsp.DefinitionParams(**at(8, 33, main)))
    assert (twice.uri, twice.range) == ((tmp_path / "helpers.tl").as_uri(), span(0, 4, 9))
    imported = await client.text_document_definition_async(lsp.DefinitionParams(**at(1, 22, main)))
    assert (imported.uri, imported.range) == ((tmp_path / "helpers.tl").as_uri(), span(0, 4, 9))
    rms = await client.text_document_definition_async(lsp.DefinitionParams(**at(0, 21, main)))
    nn = Path(str(stdlib().joinpath("nn.tl")))
    line = next(i for i, text in enumerate(nn.read_text().split("\n")) if text.startswith("def rms_norm("))
    assert (rms.uri, rms.range) == (nn.resolve().as_uri(), span(line, 4, 12))
    hover = await client.text_document_hover_async(lsp.HoverParams(**at(0, 31, main)))
    assert hover.contents.value == "```tl\nLOG2E = 1.4426950408889634\n```\nmodule constant"
    log2e = await client.text_document_definition_async(lsp.DefinitionParams(**at(0, 31, main)))
    line = next(i for i, text in enumerate(nn.read_text().split("\n")) if text.startswith("LOG2E: const"))
    assert (log2e.uri, log2e.range) == (nn.resolve().as_uri(), span(line, 0, 5))
    hover = await client.text_document_hover_async(lsp.HoverParams(**at(8, 33, main)))
    assert hover.contents.value == "```tl\ndef twice(v: f32) -> f32\n```\ndevice function in `helpers.tl`"
    hover = await client.text_document_hover_async(lsp.HoverParams(**at(0, 21, main)))
    assert hover.contents.value.startswith("```tl\ndef rms_norm(x: T[M, N], weight: T[N], y: T[M, N], eps: f32, ")
    assert hover.contents.value.endswith("\n```\nkernel in `std.nn`")


async def test_completion_of_std_modules_names_builtins_and_dtypes(client, tmp_path):
    path = tmp_path / "c.tl"
    text = "from std.\nfrom std.nn import rms_norm, \n" + VECTOR_ADD.read_text()
    await opened(client, path, text)
    modules = await client.text_document_completion_async(lsp.CompletionParams(**at(0, 9, path)))
    assert {"gemm", "nn", "elementwise", "reduce"} <= {i.label for i in modules.items}
    assert all(i.kind == lsp.CompletionItemKind.Module for i in modules.items)
    names = await client.text_document_completion_async(lsp.CompletionParams(**at(1, 29, path)))
    assert {"rms_norm", "softmax", "layer_norm"} <= {i.label for i in names.items}
    body = await client.text_document_completion_async(lsp.CompletionParams(**at(17, 12, path)))
    items = {i.label: i for i in body.items}
    assert {"copy", "gemm", "parallel", "pipelined", "fragment", "f16", "bf16", "vector_add"} <= set(items)
    assert items["f16"].kind == lsp.CompletionItemKind.TypeParameter
    matmul = items["matmul"]  # std.gemm's: completing it adds the import
    assert matmul.detail == "kernel in std.gemm"
    assert [(e.range, e.new_text) for e in matmul.additional_text_edits] == [(span(0, 0, 0), "from std.gemm import matmul\n")]
    assert items["rms_norm"].additional_text_edits is None  # imported already
    decorators = await client.text_document_completion_async(lsp.CompletionParams(**at(9, 1, path)))  # "@" of @kernel
    assert sorted(i.label for i in decorators.items) == ["autotune", "fuse", "kernel", "tile_op"]



async def test_requests_about_a_document_never_opened_whose_file_cannot_be_read(client, tmp_path):
    """A hover, definition or completion naming a document the client never opened reads its
    file; where that is missing or a folder, pygls's OSError went back as an internal error
    (-32603 with a traceback); the answer is now that of an empty document."""
    for path in (tmp_path / "missing.tl", tmp_path):
        assert await client.text_document_hover_async(lsp.HoverParams(**at(0, 0, path))) is None
        assert await client.text_document_definition_async(lsp.DefinitionParams(**at(0, 0, path))) is None
        completion = await client.text_document_completion_async(lsp.CompletionParams(**at(0, 0, path)))
        assert "kernel" not in {i.label for i in completion.items} and "f16" in {i.label for i in completion.items}
