"""The on-disk cache of checked modules: what `tlc.load` needs of a file it has checked before,
so that a new process whose kernels are in the kernel cache neither parses nor checks.

An entry holds the program's kernels and tile ops as their signatures (`CheckedFunction`s whose
typed bodies are left out: their parameters, shape symbols, constants and the grids' count) and
the SHA-256 of every file's text, keyed by the SHA-256 of the main file's text and path, tlc's
version and tlc's own sources (`cache.package_hash`).  The texts are not stored: the main file's
is the caller's, and a load reads each import's to compare it with its digest (format 4 held
every text in the header as well: 21 of std.gemm's 25 KB of JSON, decoded and hashed by every
load).  A first line gives the SHA-256 of the header after it (the exports, the files' names
and digests, each signature's place and SHA-256) and each signature is checked
when it is decoded: a module of 18 kernels that calls one hashes the header and that one, not
all of them.  Each signature is deflated (`ir_codec.dumps_deflated`: std.gemm's 18 take 25 KB
rather than 111 KB, which every load reads).  A module loaded from an entry checks its text again,
in full, the first time anything needs more than a signature (scheduling, the interpreter, a
tile op): `api.Module.program`.  So a kernel whose compiled entry is in the kernel cache runs
without a parse; anything else is compiled from a program checked as `tlc.load` always has.

Safe as the kernel cache is: the entry is JSON data read by `ir_codec` (no code runs), every
part under a checksum; a damaged, stale or foreign entry is a miss and is replaced (a damaged
signature: the module's text is checked in full, `api.Module._kernel`); an imported file whose text changed since makes the entry a
miss; a cache folder that cannot be written only costs the check next time.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os

from .. import __version__

_SUFFIX = ".checked"
_MAGIC = b"tlc-checked-6 "
_LIMIT = 64 << 20  # bytes: a module's signatures and texts come nowhere near
FORMAT = 6  # 6: ir_codec's format 3 (instances met again written as references)


def key(text: str, path: str, digest: str | None = None) -> str:
    """The entry name of the file `path` (as the caller names it; imports resolve from its
    absolute folder) whose text is `text` (`digest`: its SHA-256, where the caller has it)."""
    from .cache import package_hash, text_digest

    doc = {"format": FORMAT, "text": digest or text_digest(text), "path": path,
           "folder": os.path.dirname(os.path.abspath(path)), "tlc_version": __version__, "tlc_sources": package_hash()}
    return "m" + _digest(json.dumps(doc, sort_keys=True).encode())


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def entry_path(name: str) -> str:
    from ..cachedir import cache_dir

    return os.path.join(cache_dir(), name + _SUFFIX)


def load(text: str, path: str):
    """(program, exports, name) of the entry for `text` at `path`, or None (no entry, one that
    cannot be trusted, or an imported file that changed): `program` is a `CheckedProgram` of
    signatures, each decoded when it is first read (a module of 20 kernels that calls one
    decodes one); `exports` maps each kernel's and tile op's name to (qualname, kind); `name` is
    the entry's (`key`), which names its launch memo too (`launch_memo`)."""
    from ..files import NotRegularFile, read_regular
    from ..typecheck.program import CheckedProgram
    from .cache import text_digest as digest_of  # remembered: the program keys hash the same texts

    text_digest = digest_of(text)
    name = key(text, path, text_digest)
    try:
        data = read_regular(entry_path(name), follow_symlinks=False, limit=_LIMIT)
    except (NotRegularFile, OSError):
        return None
    head_at = data.find(b"\n") + 1
    head_end = data.find(b"\n", head_at)
    if head_at == 0 or head_end < 0:
        return None
    head, blobs = data[head_at:head_end], memoryview(data)[head_end + 1:]  # the signatures not copied
    if data[:head_at - 1] != _MAGIC + _digest(head).encode():
        return None
    try:
        doc = json.loads(head)
        exports = {export: (q, kind) for export, (q, kind) in doc["exports"].items()
                   if isinstance(q, str) and kind in ("kernel", "tile_op")}
        files, imported = doc["files"], doc["imported"]
        functions = {q: (blobs, start, size, digest) for q, (start, size, digest) in doc["functions"].items()
                     if isinstance(start, int) and isinstance(size, int) and 0 <= start and start + size <= len(blobs)}
        if not (len(exports) == len(doc["exports"]) and len(functions) == len(doc["functions"])
                and all(q in functions for q, _ in exports.values()) and isinstance(files, list)
                and isinstance(imported, dict) and doc["text"] == text_digest
                and len(files) == len(imported) + 1 and path in files and set(files) - {path} == imported.keys()):
            return None
    except (ValueError, TypeError, KeyError, AttributeError):
        return None
    texts = {path: text}
    for file, digest in imported.items():  # the texts it was checked with, still the files' own
        try:
            with open(_real_path(file), encoding="utf-8") as f:  # as the checker reads an import
                texts[file] = f.read()
            if digest_of(texts[file]) != digest:
                return None
        except (OSError, UnicodeError, TypeError):
            return None
    sources = {file: texts[file] for file in files}  # in the checker's order
    names = {export: q for export, (q, _) in exports.items()}
    return CheckedProgram(path, Signatures(functions), names, sources, {}, None), exports, name


class Signatures:
    """The functions of a cached program by qualname, each decoded at its first use; a
    damaged one raises `ir_codec.BadEntry` there."""

    def __init__(self, texts: dict):
        # qualname -> (the entry's signatures, its JSON's start, size and SHA-256); its function
        self._texts, self._decoded = texts, {}

    def __getitem__(self, q: str):
        fn = self._decoded.get(q)
        if fn is None:
            from . import ir_codec

            blobs, start, size, digest = self._texts[q]
            text = blobs[start:start + size]
            if _digest(text) != digest:
                raise ir_codec.BadEntry(f"damaged entry: the signature of {q} is not the one stored")
            fn = ir_codec.loads_deflated(text)
            if type(fn).__name__ != "CheckedFunction" or fn.qualname != q:
                raise ir_codec.BadEntry(f"damaged entry: {q} is not a checked function")
            self._decoded[q] = fn
        return fn

    def __contains__(self, q) -> bool:
        return q in self._texts

    def __iter__(self):
        return iter(self._texts)

    def __len__(self) -> int:
        return len(self._texts)

    def get(self, q, default=None):
        return self[q] if q in self._texts else default

    def values(self):
        return [self[q] for q in self._texts]

    def items(self):
        return [(q, self[q]) for q in self._texts]


def _real_path(name: str) -> str:
    """The file an imported module's name stands for: `<std>/math.tl` is the standard library's."""
    if name.startswith("<std>/"):
        from ..package_data import stdlib

        return os.path.join(stdlib(), *name.removeprefix("<std>/").split("/"))
    return name


def store(program, text: str, path: str) -> bool:
    """Write the entry of a checked `program` (text `text` at `path`); False when the cache
    cannot hold it (a read-only folder, a value the format cannot hold)."""
    from pathlib import Path

    from ..cachedir import replace_atomically
    from . import ir_codec
    from .cache import text_digest

    try:
        slim = signatures(program)
        blobs, offsets = [], {}
        for q, fn in slim.functions.items():  # one after another; the header says where each is
            blob = ir_codec.dumps_deflated(fn)
            offsets[q] = [sum(len(b) for b in blobs), len(blob), _digest(blob)]
            blobs.append(blob)
        doc = {"exports": {name: [q, slim.functions[q].kind] for name, q in slim.names.items()},
               "functions": offsets, "files": list(program.sources), "text": text_digest(text),
               "imported": {f: text_digest(t) for f, t in program.sources.items() if f != path}}
        head = json.dumps(doc, separators=(",", ":")).encode()
        body = _MAGIC + _digest(head).encode() + b"\n" + head + b"\n" + b"".join(blobs)
    except (ir_codec.NotData, TypeError, ValueError, UnicodeError):
        return False
    try:
        replace_atomically(Path(entry_path(key(text, path))), body)
    except OSError:
        return False
    return True


def signatures(program):
    """`program` with only what a module builds its kernels and tile ops from: each function of
    its own file that it exports, without the typed body or decorators (the autotune space is
    kept apart), and with its grids' statements emptied (their count says how many launches a
    call makes)."""
    from ..parser import nodes as n

    functions = {}
    for name, q in program.names.items():
        fn = program.functions[q]
        if fn.kind not in ("kernel", "tile_op") or fn.module_path != program.path:
            continue
        grids = tuple(dataclasses.replace(s, context=None, targets=(), body=()) for s in fn.node.body
                      if isinstance(s, n.With))  # counted by Kernel.grid_count
        functions[q] = dataclasses.replace(fn, body=(), node=dataclasses.replace(fn.node, body=grids, decorators=()))
    names = {name: q for name, q in program.names.items() if q in functions}
    return dataclasses.replace(program, functions=functions, names=names, modules=None)
