"""The standard library's modules parsed ahead of time and shipped with tlc (issue #15, time to
first result): `grammar/std_asts/`, written by scripts/std-asts.

A new process's first call of a std kernel parsed its module (std.gemm: 48 KB of text, ~50 ms
on the 2-core machine) and every std module it imports, and for that imported Lark and loaded
its LALR tables (~25 ms more).  A file per std module holds the AST that `parse` makes of
its text (as `ir_codec`'s JSON, deflated) with the SHA-256 of that text; `parse` takes it from
there when the text it is given is that module's, at the std library's path, and the file was
made by this parser (`identity`: the grammar and the sources of the parser's package, of the
spans and of the frozen data classes); anything else is parsed as ever.  A stale entry costs the
time, never the output.  The AST is made under the module's import path (`<std>/gemm.tl`) and
holds its path only as that string, so a load under the file's own path replaces it in the
JSON text before decoding (the script checks, for every module, that the replacement gives the
AST a parse under another path gives; tests/parser/test_shipped_asts.py checks the files are
current and decodes to what the parser makes).  Safe as the grammar's shipped tables are: a
file is data read by `ir_codec` (no code runs), installed with tlc.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import zlib

from ..package_data import folder_path, package_folder

FOLDER = "std_asts"  # in the grammar's folder: one file a module, `gemm.tl.ast`, `sub.x.tl.ast`
MAGIC = b"tlc-std-ast-1\n"
STD = "<std>/"  # the path prefix of an imported std module (typecheck.modules)


@functools.lru_cache(maxsize=1)
def identity() -> str:
    """SHA-256 of what makes an AST of a text: the grammar and the sources of the parser's
    package, of the spans (diagnostics.py) and of the frozen data classes (frozen.py)."""
    package = package_folder()
    parser = os.path.join(package, "parser")
    # Each file is named by a label that is the same in a checkout and an installed package (the
    # grammar folder sits beside tlc/ in one and inside it in the other).
    files = [("grammar/tile.lark", os.path.join(folder_path("grammar"), "tile.lark"))]
    files += [(f"tlc/{name}", os.path.join(package, name)) for name in ("diagnostics.py", "frozen.py")]
    files += [(f"tlc/parser/{f}", os.path.join(parser, f)) for f in sorted(os.listdir(parser)) if f.endswith(".py")]
    h = hashlib.sha256()
    for label, path in files:
        with open(path, "rb") as f:
            h.update(label.encode() + b"\0" + f.read() + b"\0")
    return h.hexdigest()


def std_name(path: str) -> str | None:
    """The std module `path` names (`gemm.tl`, `sub/x.tl`): its import path `<std>/gemm.tl`,
    or a file in the std library's folder; None for any other path."""
    if path.startswith(STD):
        return path[len(STD):]
    if not path.endswith(".tl") or path.startswith("<"):
        return None
    std = folder_path("stdlib")
    full = os.path.abspath(path)
    return os.path.relpath(full, std).replace(os.sep, "/") if full.startswith(std + os.sep) else None


def entry_path(name: str) -> str:
    """The file of the std module `name`'s AST."""
    return os.path.join(folder_path("grammar"), FOLDER, name.replace("/", ".") + ".ast")


def module(text: str, path: str):
    """The shipped AST of `text` parsed at `path`, or None where there is none that is current."""
    name = std_name(path)
    if name is None:
        return None
    from ..runtime import ir_codec

    try:
        with open(entry_path(name), "rb") as f:
            data = f.read()
        if not data.startswith(MAGIC):
            return None
        head, _, body = data[len(MAGIC):].partition(b"\n")
        head = json.loads(head)
        if head["text"] != hashlib.sha256(text.encode()).hexdigest() or head["parser"] != identity():
            return None
        return ir_codec.loads_text(at_path(zlib.decompress(body).decode("utf-8"), name, path))
    except (OSError, ValueError, TypeError, KeyError, zlib.error, ir_codec.BadEntry):  # none, or damaged
        return None


def at_path(doc: str, name: str, path: str) -> str:
    """The encoded AST `doc` of std module `name`, parsed at its import path `<std>/NAME`, as a
    parse at `path` makes it (the path is in its spans alone: scripts/std-asts checks that)."""
    return doc if path == STD + name else doc.replace(_json_text(STD + name), _json_text(path))


def _json_text(s: str) -> str:
    """`s` as it stands inside a JSON string (what `ir_codec` writes)."""
    return json.dumps(s)[1:-1]


def entry(text: str, ast) -> bytes:
    """The file of a std module whose text is `text` and whose AST, parsed at `<std>/NAME`, is `ast`."""
    from ..runtime import ir_codec

    head = json.dumps({"parser": identity(), "text": hashlib.sha256(text.encode()).hexdigest()}, sort_keys=True)
    return MAGIC + head.encode() + b"\n" + zlib.compress(ir_codec.dumps_text(ast).encode(), 9)
