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
import time

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
    cannot be trusted, or an imported file that changed): `program` is a `CachedProgram` of
    signatures, each decoded when it is first read (a module of 20 kernels that calls one
    decodes one); `exports` maps each kernel's and tile op's name to (qualname, kind); `name` is
    the entry's (`key`), which names its launch memo too (`LaunchMemo`, below)."""
    from ..files import NotRegularFile, read_regular
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
        try:  # as the checker reads an import (typecheck.modules): its bytes, no newline translated
            texts[file] = read_regular(_real_path(file)).decode("utf-8")
            if digest_of(texts[file]) != digest:
                return None
        except (OSError, UnicodeError, TypeError):
            return None
    sources = {file: texts[file] for file in files}  # in the checker's order
    names = {export: q for export, (q, _) in exports.items()}
    return CachedProgram(path, Signatures(functions), names, sources), exports, name


class CachedProgram:
    """A `typecheck.CheckedProgram` of signatures, as `load` gives it: the same fields and
    lookups, without importing the type checker (and the AST's classes it brings: ~30 ms of a
    new process), which a module whose kernels launch from the caches never needs.
    `api.Module.program` checks the text in full where more than a signature is needed."""

    __slots__ = ("path", "functions", "names", "sources", "constants", "modules")

    def __init__(self, path: str, functions, names: dict, sources: dict):
        self.path, self.functions, self.names, self.sources = path, functions, names, sources
        self.constants, self.modules = {}, None

    def function(self, name: str):
        q = self.names.get(name)
        return self.functions.get(q) if q else None

    def kernels(self) -> list:
        return [self.functions[q] for q in self.names.values() if self.functions[q].kind == "kernel"]


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
        from ..package_data import folder_path

        return os.path.join(folder_path("stdlib"), *name.removeprefix("<std>/").split("/"))
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


# ---- the module record ------------------------------------------------------------------------
#
# What `tlc.load` of a file needs to give the module of its checked entry without reading and
# hashing its texts or reading the entry (issue #15: std.gemm's 45 KB text and 51 KB entry, ~0.6 ms
# of a cached first call on the H200): the entry's name, the module's exports and, per file of the
# program, its real path, its stamp (`_stamp`: size, modification and change times, inode) and its
# text's SHA-256.  `<name>.module` in the cache folder, named by the file's path and folder and by
# tlc's version and sources, as the entry is (`key`, without the text).  A hit is a file whose every
# stamp is as recorded: a write changes its change time, whatever its modification time is set
# back to, and a file put in its place its inode; a stamp is recorded only where the file last
# changed more than two seconds before it was taken (`cache._SETTLED_NS`), and taken before the
# text is read, so a record never vouches for a text that a later write could have changed
# unseen.  The module's texts, its checked signatures and the launch memo's entry are then read
# when something first needs them (`api.Module`); the program cache is keyed by the recorded
# digests (`cache.program_key_of`), so a launch from the memo reads neither.

RECORD_FORMAT = 1
_RECORD_MAGIC = b"tlc-module-1 "
_RECORD_SUFFIX = ".module"
_RECORD_LIMIT = 1 << 20  # bytes: a module's names, stamps and digests


class ModuleRecord:
    """A module record that holds: the checked entry's name, the exports, each file's digest
    by its name in the program (the main file's is its own), and a copy of the entry's launch
    memo as it was when the record was written (`memo`, None where there was none)."""

    __slots__ = ("checked", "exports", "digests", "memo", "_file", "_head")

    def __init__(self, checked: str, exports: dict, digests: dict, memo: dict | None, file: str, head: dict):
        self.checked, self.exports, self.digests, self.memo = checked, exports, digests, memo
        self._file, self._head = file, head  # where it was read, and what

    def keep_memo(self, memo: dict) -> None:
        """Write the record again with the launch memo `memo` (`LaunchMemo`'s `keep`)."""
        _write_record(self._file, {**self._head, "memo": memo})


def record_path(path: str) -> str:
    """Where the module record of the file `path` (as the caller names it) lives."""
    from ..cachedir import cache_dir
    from .cache import package_hash

    doc = {"format": RECORD_FORMAT, "path": path, "folder": os.path.dirname(os.path.abspath(path)),
           "tlc_version": __version__, "tlc_sources": package_hash()}
    return os.path.join(cache_dir(), "r" + _digest(json.dumps(doc, sort_keys=True).encode()) + _RECORD_SUFFIX)


def load_record(path: str) -> ModuleRecord | None:
    """The module record of `path`, where every file it names is as it was; else None."""
    from ..files import NotRegularFile, read_regular

    file = record_path(path)
    try:
        data = read_regular(file, follow_symlinks=False, limit=_RECORD_LIMIT)
    except (NotRegularFile, OSError):
        return None
    head_at = data.find(b"\n") + 1
    if head_at == 0 or data[:head_at - 1] != _RECORD_MAGIC + _digest(data[head_at:]).encode():
        return None
    try:
        doc = json.loads(data[head_at:])
        checked, exports, files = doc["checked"], doc["exports"], doc["files"]
        if not (type(checked) is str and type(exports) is dict and type(files) is list and files
                and all(type(q) is str and kind in ("kernel", "tile_op") for q, kind in exports.values())
                and all(type(f) is list and len(f) == 4 and all(type(x) is str for x in f) for f in files)
                and files[0][0] == path):
            return None
        for _, real, stamp, _ in files:
            if not stamp or _stamp(os.stat(real)) != stamp:
                return None
        memo = _memo_doc(doc.get("memo"))
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None
    return ModuleRecord(checked, {e: (q, kind) for e, (q, kind) in exports.items()},
                        {name: digest for name, _, _, digest in files}, memo, file, doc)


def store_record(path: str, file: str, stamp, program, exports: dict, checked: str, memo: dict | None = None) -> None:
    """Write the module record of `path` (the file `file`, whose stat() `stamp` was taken
    before its text was read) for `program`, checked as the entry `checked`, with the launch
    memo `memo` (the entry's memo file as it is, where not given); nothing where a file changed
    in the last two seconds, or the cache cannot be written."""
    from ..files import read_regular
    from .cache import _SETTLED_NS, text_digest

    recent = time.time_ns() - _SETTLED_NS
    files = []
    try:
        for name, text in program.sources.items():  # in the checker's order: the main file first
            if name == path:
                real, st = os.path.abspath(file), stamp
            else:  # stat()ed before it is read again: a write after the stamp changes it
                real = os.path.abspath(_real_path(name))
                st = os.stat(real)
                if read_regular(real).decode("utf-8") != text:
                    return
            if max(st.st_mtime_ns, st.st_ctime_ns) >= recent:
                return
            files.append([name, real, _stamp(st), text_digest(text)])
        if not files or files[0][0] != path:
            return
        if memo is None:
            memo = LaunchMemo(checked)._read()
        _write_record(record_path(path), {"checked": checked, "exports": {e: list(v) for e, v in exports.items()},
                                          "files": files, "memo": memo})
    except (OSError, UnicodeError, TypeError, ValueError):
        pass


def _write_record(file: str, head: dict) -> None:
    """Put a module record of `head` at `file`; nothing where the cache cannot be written."""
    from pathlib import Path

    from ..cachedir import replace_atomically

    try:
        data = json.dumps(head, separators=(",", ":")).encode()
        replace_atomically(Path(file), _RECORD_MAGIC + _digest(data).encode() + b"\n" + data)
    except (OSError, TypeError, ValueError):
        pass


# ---- the launch memo ---------------------------------------------------------------------------
#
# What a kernel's first call in a new process needs of the signature it was
# last called with, kept beside the checked-module cache's entry, so that a call like one made
# before (the same arrays' kinds, dtypes and shapes, the same GPU) launches without decoding the
# kernel's checked signature, binding the arguments or parsing config.json (issue #15: ~0.7 ms of
# a cached first call's ~5 on the 2-core machine).
#
# A memo file is `<checked entry's name>.launch` in the cache folder: it belongs to one text of
# one module checked by one tlc (the checked entry's key, `key` above, says all of that;
# the module's imports were compared with their digests when the entry was loaded).  It holds,
# per kernel, its runtime parameters' names and, per call signature (`args.signature`, by the
# SHA-256 of its repr), the constants the call was compiled with (as `kernel._constants_key`
# writes them: their names and `str` values, which is all a program cache key reads of them),
# the code generator's arch they were chosen for, and the SHA-256 of each config.json whose rules
# could have chosen them (or that there was none).  A hit is only that: the program cache entry
# is still looked up by a key computed as ever (`runtime.cached_program_kernel`: the module's
# texts, the kernel, those constants, the arch and NVRTC of now), and the launch checks every
# argument as a first call always does.  Anything that differs (a config.json rewritten by `tlc
# tune`, another arch, a missing or damaged memo or program entry) is a miss: the call takes the
# general path, which records its signature again.  JSON data only, under the format's name.
#
# (Here, not a module of its own: a cached first call imports this module anyway, and each module
# costs its import ~0.3 M instructions before its own code.)

MEMO_FORMAT = "tlc-launch-memo-2"  # 2: each config.json's stamp beside its digest
_MEMO_SUFFIX = ".launch"
_MEMO_LIMIT = 1 << 20  # bytes: a memo of a few kernels and signatures is a few KB
MAX_RECORDS = 16  # signatures kept per kernel (the newest)


def memo_path(checked_key: str) -> str:
    from ..cachedir import cache_dir

    return os.path.join(cache_dir(), checked_key + _MEMO_SUFFIX)


def signature_key(sig: tuple) -> str | None:
    """A call signature's name in the memo: SHA-256 of its repr (kinds, dtypes, shapes, the
    device; a scalar's type: PyTorch's, NumPy's and CuPy's write the same in every process);
    None where a part is written by its address (an object without a repr of its own), which
    no other process would find."""
    text = repr(sig)
    return None if " at 0x" in text else hashlib.sha256(text.encode()).hexdigest()


def _file_digest(path: str) -> str | None:
    from ..files import read_regular  # five system calls where open() and read() made nine

    try:
        return hashlib.sha256(read_regular(path)).hexdigest()
    except FileNotFoundError:
        return None


def config_digests(files: list) -> list:
    """[[path, SHA-256 of its bytes or None where there is no file, its stamp], ...] of config.json
    files: the stamp (`_stamp`) where the file last changed more than two seconds ago, else ""."""
    from .cache import _SETTLED_NS

    out = []
    for path in files:
        try:
            st = os.stat(path)
        except FileNotFoundError:
            out.append([path, None, ""])
            continue
        settled = max(st.st_mtime_ns, st.st_ctime_ns) < time.time_ns() - _SETTLED_NS
        out.append([path, _file_digest(path), _stamp(st) if settled else ""])
    return out


def _stamp(st) -> str:
    """A file's size, times and inode as one string: a rewrite changes its change time (ctime),
    whatever its modification time is set back to; a file put in its place, its inode."""
    return f"{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}"


def configs_unchanged(configs: list) -> bool:
    """Whether each [path, digest, stamp] of a memo's record is as the file is now: by its stamp
    alone where one was recorded and still holds (a cached first call's config.json, 27 KB, not
    read and hashed: issue #15), else by the digest of its bytes."""
    for path, digest, stamp in configs:
        try:
            st = os.stat(path)
        except FileNotFoundError:
            if digest is not None:
                return False
            continue
        if not (stamp and stamp == _stamp(st)) and _file_digest(path) != digest:
            return False
    return True


def _memo_doc(found) -> dict | None:
    """`found` where it is a launch memo of this format, else None."""
    if type(found) is dict and found.get("format") == MEMO_FORMAT and type(found.get("kernels")) is dict:
        return found
    return None


class LaunchMemo:
    """The memo of one checked module's entry, read at its first use: from its file, or from
    the module record's copy (`doc`), which a module record served by `api` hands over, so that
    a call like one before reads no memo file; `keep(doc)` (where given) is called with the memo
    each time one is recorded, so that the module record's copy follows the file."""

    def __init__(self, checked_key: str, doc: dict | None = None, keep=None):
        self.path = memo_path(checked_key)
        self._doc, self._keep = doc, keep

    def _read(self) -> dict:
        if self._doc is None:
            from ..files import NotRegularFile, read_regular

            doc = None
            try:
                doc = _memo_doc(json.loads(read_regular(self.path, follow_symlinks=False, limit=_MEMO_LIMIT)))
            except (NotRegularFile, OSError, ValueError):
                pass
            self._doc = doc or {"format": MEMO_FORMAT, "kernels": {}}
        return self._doc

    def lookup(self, kernel: str, args: tuple, device: int) -> tuple | None:
        """(runtime parameters' names, constants key, arch, fast) recorded for a call of `kernel`
        with `args` on GPU `device`, where its config.json files are as they were; else None.
        `fast`: the call had no constants at all, so the kernel's one launcher serves every
        positional call (`Kernel._fast`), not only those of this signature."""
        from .args import signature

        entry = self._read()["kernels"].get(kernel)
        try:
            names = entry["runtime"]
            if len(names) != len(args):
                return None
            record = entry["calls"].get(signature_key(signature(args, device)) or "")
            if record is None:
                return None
            configs, constants, arch, fast = record["configs"], record["constants"], record["arch"], record["fast"]
            if not (all(type(n) is str for n in names) and type(arch) is str and type(fast) is bool and
                    all(type(p) is list and len(p) == 2 and all(type(s) is str for s in p) for p in constants) and
                    all(type(c) is list and len(c) == 3 and type(c[0]) is str and type(c[2]) is str for c in configs)):
                return None
            if not configs_unchanged(configs):
                return None
            return tuple(names), tuple((k, v) for k, v in constants), arch, fast
        except (TypeError, KeyError, AttributeError, OSError):  # OSError: a config.json that cannot be read
            return None

    def record(self, kernel: str, names: tuple, args: tuple, device: int, constants_key: tuple, arch: str,
               config_files: list, fast: bool = False) -> None:
        """Keep what `lookup` gives for this call; the file is rewritten atomically (a folder that
        cannot be written costs the next process the general path)."""
        from pathlib import Path

        from ..cachedir import replace_atomically
        from .args import signature

        name = signature_key(signature(args, device))
        if name is None:
            return
        doc = self._read()
        entry = doc["kernels"].get(kernel)
        if type(entry) is not dict or entry.get("runtime") != list(names) or type(entry.get("calls")) is not dict:
            entry = doc["kernels"][kernel] = {"runtime": list(names), "calls": {}}
        calls = entry["calls"]
        calls.pop(name, None)  # the newest last: the oldest are dropped first
        try:
            configs = config_digests(config_files)
        except OSError:  # a config.json that cannot be read: nothing to vouch for it by
            return
        calls[name] = {
            "constants": [list(p) for p in constants_key], "arch": arch, "fast": bool(fast), "configs": configs}
        while len(calls) > MAX_RECORDS:
            del calls[next(iter(calls))]
        try:
            replace_atomically(Path(self.path), json.dumps(doc, separators=(",", ":")).encode())
        except (OSError, TypeError, ValueError):
            return
        if self._keep is not None:
            self._keep(doc)
