"""The on-disk cache of compiled kernels: `$TLC_CACHE_DIR`, default `~/.cache/tlc`.

Owns the cache key, the entry format and every filesystem concern: atomic writes, concurrent
processes, corrupt entries, and cache directories that cannot be written.  Does not own
compiling (a `compile_fn` is handed in) or loading a binary onto a GPU.

Why a cache of our own rather than CuPy's: tlc calls NVRTC itself (see `compile.py`) so that
the options are exactly its own (CuPy's compile path adds `-ftz=true`), and a kernel's identity
is the sorted JSON of what makes it (its CUDA source, bound constants, architecture, the
compiler's version and a hash of tlc's own sources), not CuPy's key.  CuPy's cache is never
touched: binaries are loaded from bytes.

An entry is two files named by the key: `KEY.cu` (the source, for people and profilers) and
`KEY.bin`: a header `TLCBIN2 <length> <crc32>\\n` and then the binary.  A reader trusts an entry
only if the length and the checksum match, so a truncated or damaged file is recompiled and
replaced (the checksum is against damage, not against someone who can write the folder, who
could write a matching SHA-256 as well: CRC-32 finds a cut or a flipped byte and costs a cached
first call a tenth of what SHA-256 of its ~120 KB entry did; entries of format 1, with a
SHA-256, are still read); it reads only a regular file (a FIFO, a device or a link there is refused with a
warning, never opened for reading in a way that could block, and replaced by the next store).  Writers write a temporary file in the same directory and `os.replace` it into place:
readers see the old entry or the new one, never a partial one; when two processes compile the
same kernel at once both write and the last rename wins, with identical content.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import time
import warnings
import zlib
from array import array
from pathlib import Path
from typing import Callable

from .. import __version__
from ..cachedir import CacheWarning, cache_dir, replace_atomically
from ..files import NotRegularFile, read_regular
from ..identity_memo import remembered_by_identity

_MAGIC = b"TLCBIN2"  # the checksum: CRC-32, in 8 hex digits
_MAGIC_SHA = b"TLCBIN1"  # the format before, whose checksum is SHA-256
_BIN, _SRC = ".bin", ".cu"
_LIMIT = 1 << 30  # bytes: no kernel binary comes near; past it an entry is not ours

def default_dir() -> Path:
    return cache_dir()


_SOURCE_SUFFIXES = (".py", ".lark", ".tl", ".cuh", ".j2", ".jinja", ".cu", ".h")


@functools.lru_cache(maxsize=1)
def _package_bases() -> list:
    """(folder, prefix) of what makes tlc what it is: the package (its Python sources) and its
    data folders (grammar, templates), which a checkout keeps beside the package, not in it.
    Found once a process (an lstat() a data folder; the cached path asks three times)."""
    from ..package_data import folder_path, package_folder

    root = package_folder()
    bases = [(root, "")]
    for name in ("grammar", "templates"):
        data = folder_path(name)
        if os.path.dirname(data) != os.path.dirname(root) or os.path.islink(data):
            data = os.path.realpath(data)  # beside the real package and not a link: real already
        if not data.startswith(root + os.sep):  # a checkout's (an installed package holds its own)
            bases.append((data, f"data:{name}/"))
    return bases


def _package_files() -> list:
    """(name, path) of every source file of tlc (`_package_bases`), listed now."""
    return listed_files(_package_bases())[1]


def listed_files(bases: list) -> tuple:
    """(folders, files) under each (base, prefix) of `bases`: every folder with its change time,
    taken before it is listed (a file added, removed or renamed later changes it), and the
    source files as (prefix + name relative to its base, path), sorted."""
    found, folders = [], []
    for base, prefix in bases:
        pending = [base]
        while pending:
            path = pending.pop()
            folders.append([path, os.stat(path).st_mtime_ns])
            rel = os.path.relpath(path, base).replace(os.sep, "/")
            with os.scandir(path) as entries:
                for e in entries:
                    if e.is_dir(follow_symlinks=False):
                        if e.name != "__pycache__":
                            pending.append(e.path)
                    elif e.name.endswith(_SOURCE_SUFFIXES):
                        found.append((prefix + (f"{rel}/{e.name}" if rel != "." else e.name), e.path))
    found.sort()
    return folders, found


@functools.lru_cache(maxsize=None)
def package_hash() -> str:
    """SHA-256 of what tlc is, the compiler's identity in every cache key: any change to the
    compiler invalidates the cache, also between releases that share a version number.  tlc
    installed from a wheel is what its RECORD says (`installed_identity`: one small file read);
    a checkout (an editable install, or PYTHONPATH) is its files (`checkout_hash`)."""
    from ..package_data import package_folder

    return installed_identity(Path(package_folder())) or checkout_hash(_package_bases())


def installed_identity(package: Path, version: str = __version__) -> str | None:
    """The identity of tlc installed from a wheel in `package` (the folder of `tlc/__init__.py`):
    SHA-256 of its `tlc-VERSION.dist-info/RECORD` beside it, where the installer wrote the SHA-256
    of every file it installed (the modules, the grammar, the templates, the std library), so
    any other build of tlc (another version, a reinstall from changed sources) has another; None
    where there is none, or it does not record this package's files with their hashes (an
    editable install, whose RECORD lists only its hook), and for a checkout (pyproject.toml
    beside the package, as `package_data` tells one) whatever lies beside it.  A file of an
    installed package edited in place is not seen: an installed package changes by being
    installed."""
    if os.path.exists(package.parent / "pyproject.toml"):
        return None
    record = package.parent / f"tlc-{version}.dist-info" / "RECORD"
    try:
        data = read_regular(record, follow_symlinks=False, limit=16 << 20)
    except (NotRegularFile, OSError):
        return None
    line = f"{package.name}/__init__.py,sha256=".encode()
    if not (data.startswith(line) or b"\n" + line in data):
        return None
    return hashlib.sha256(b"tlc installed\0" + version.encode() + b"\0" + data).hexdigest()


# a file changed less than this long before it was read may change again within the same tick
# of its file system's clock without its change time moving: no memo vouches for it ("racy git")
_SETTLED_NS = 2_000_000_000


_CHECKOUT_MEMO = 3  # the memo's format: every path as one string, their stamps as packed integers


def checkout_hash(bases: list) -> str:
    """SHA-256 over the source files under each (base, prefix) of `bases` (a checkout: their
    names and texts).  Listing and reading them all costs a new process about 10 ms; one memo
    in the cache folder holds the digest with every folder's change time (a file added, removed
    or renamed changes its folder's) and every file's size and change time, so a new process
    whose files have not changed since reads that memo and stat()s each folder and file (about
    250 calls, the floor of a file-by-file identity: ~0.3 ms of a new process on the 2-core
    machine).  The memo holds the paths as one string, folders first, and their stamps as one
    hex string of 64-bit integers (each folder's change time, each file's size and change
    time), which a check packs again from one `map(os.stat, paths)` and compares as bytes:
    format 2 (per folder its names and "size:time" strings, rebuilt and compared folder by
    folder) cost a cached first call 0.5 ms where this costs 0.35 (issue #15).  A file's stamp
    is taken on the descriptor it is read from, before the read: a file written during the hash
    has another time next time.  A memo that is missing, damaged or stale is a miss: the files
    are hashed again and the memo rewritten (unless a file or a folder changed in the last two
    seconds, whose time might not move at its next change)."""
    memo = checkout_memo(bases)
    try:
        doc = json.loads(read_regular(memo, follow_symlinks=False, limit=4 << 20))
        digest, paths, count, stamps = doc["digest"], doc["paths"], doc["folders"], doc["stamps"]
        if doc["format"] == _CHECKOUT_MEMO and type(digest) is str and len(digest) == 64 and \
                not digest.strip("0123456789abcdef") and type(paths) is str and paths and type(count) is int and \
                type(stamps) is str and _packed(list(map(os.stat, paths.split("\n"))), count) == bytes.fromhex(stamps):
            return digest
    except (OSError, ValueError, TypeError, KeyError, IndexError, AttributeError):
        pass
    folders, files = listed_files(bases)
    h = hashlib.sha256()
    listed = {path for path, _ in folders}
    settled, times, stamps = True, [], []
    for name, path in files:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            settled = settled and path.rpartition(os.sep)[0] in listed  # else no folder vouches for it
            stamps += (st.st_size, st.st_mtime_ns)
            times.append(st.st_mtime_ns)
            h.update(name.encode() + b"\0" + f.read() + b"\0")
    digest = h.hexdigest()
    recent = time.time_ns() - _SETTLED_NS
    if settled and all(t < recent for t in times) and all(t < recent for _, t in folders):
        packed = array("q", [t for _, t in folders] + stamps).tobytes()
        doc = {"format": _CHECKOUT_MEMO, "digest": digest, "folders": len(folders),
               "paths": "\n".join([path for path, _ in folders] + [path for _, path in files]), "stamps": packed.hex()}
        try:
            replace_atomically(Path(memo), json.dumps(doc, separators=(",", ":")).encode())
        except OSError:  # a read-only cache: the next process hashes again
            pass
    return digest


def checkout_memo(bases: list) -> str:
    """The path of the memo of `checkout_hash(bases)` in the cache folder."""
    return os.path.join(default_dir(), f"tlc-checkout-{hashlib.sha256(repr(bases).encode()).hexdigest()[:24]}.json")


def _packed(stats: list, folders: int) -> bytes:
    """The stamps of a checkout memo's paths from their stat()s: each of the first `folders`
    (the folders) its change time, each file after them its size and change time, as native
    64-bit integers."""
    return array("q", [st.st_mtime_ns for st in stats[:folders]] +
                 [x for st in stats[folders:] for x in (st.st_size, st.st_mtime_ns)]).tobytes()


def cache_key(source: str, constants, arch: str, toolchain: str = "") -> str:
    """The entry name of one compiled kernel: SHA-256 of a sorted JSON of everything that
    decides the binary.  `constants` is a mapping or pairs of name and value (ints, floats,
    bools or dtypes, written with `repr`-like text so that `1`, `1.0` and `True` differ)."""
    items = constants.items() if hasattr(constants, "items") else constants
    doc = {
        "source": source,
        "constants": {str(k): f"{type(v).__name__}:{v}" for k, v in items},
        "arch": arch,
        "toolchain": toolchain,
        "tlc_version": __version__,
        "tlc_sources": package_hash(),
    }
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


# a program's files' digests, which the checked-module cache computes when it loads an entry and
# every program key of the program's kernels needs again
@remembered_by_identity(keep=256)
def text_digest(text: str) -> str:
    """SHA-256 of a source text's UTF-8, computed once per text object in a process."""
    return hashlib.sha256(text.encode()).hexdigest()


def program_key(sources: dict, kernel: str, constants, arch: str, toolchain: str = "") -> str:
    """The entry name of a kernel by what it is compiled from, before any compiling: the text of
    every file of its program, its name, constants and target.  A hit skips scheduling and code
    generation as well as NVRTC."""
    # each text by its SHA-256: hashing it is a tenth of what escaping it into JSON costs
    return program_key_of({k: text_digest(v) for k, v in sources.items()}, kernel, constants, arch, toolchain)


def program_key_of(digests: dict, kernel: str, constants, arch: str, toolchain: str = "") -> str:
    """`program_key` of a program whose files' texts have the SHA-256 `digests` (by name): what a
    module record gives without the texts (checked_cache.load_record)."""
    items = constants.items() if hasattr(constants, "items") else constants
    doc = {
        "program": {str(k): v for k, v in digests.items()},
        "kernel": kernel,
        "constants": {str(k): f"{type(v).__name__}:{v}" for k, v in items},
        "arch": arch,
        "toolchain": toolchain,
        "tlc_version": __version__,
        "tlc_sources": package_hash(),
    }
    return "p" + hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


def pack(binary: bytes) -> bytes:
    return b"%s %d %08x\n" % (_MAGIC, len(binary), zlib.crc32(binary)) + binary


def unpack(data: bytes) -> bytes | None:
    """The binary of a packed entry, or None when the header, the length or the checksum is off."""
    end = data.find(b"\n", 0, 128)  # the header is short: a file without one is not read through
    parts = data[:end].split(b" ")
    if end < 0 or len(parts) != 3 or parts[0] not in (_MAGIC, _MAGIC_SHA) or not parts[1].isdigit():
        return None
    body = memoryview(data)[end + 1:]  # checked before it is copied
    if int(parts[1]) != len(body):
        return None
    if parts[0] == _MAGIC:
        if b"%08x" % zlib.crc32(body) != parts[2]:
            return None
    elif hashlib.sha256(body).hexdigest().encode() != parts[2]:
        return None
    return bytes(body)


class KernelCache:
    """Compiled binaries by key, in one directory (created on first write)."""

    def __init__(self, root: str | os.PathLike | None = None):
        self.root = Path(root) if root is not None else default_dir()
        self._warned = False

    def path(self, key: str) -> Path:
        """Where the binary of `key` lives; the `.cu` is beside it."""
        return self.root / (key + _BIN)

    def source_path(self, key: str) -> Path:
        return self.root / (key + _SRC)

    def load(self, key: str) -> bytes | None:
        """The cached binary of `key`, or None if there is none or it cannot be trusted."""
        try:
            data = read_regular(self.path(key), follow_symlinks=False, limit=_LIMIT)
        except NotRegularFile as e:  # a FIFO, a device, a link: never read; `store` replaces it
            warnings.warn(f"tlc: ignoring the kernel cache entry {e.path}: it is {e.kind}, not a regular file",
                          CacheWarning, stacklevel=2)
            return None
        except OSError:  # missing, unreadable: both mean "not cached"
            return None
        return unpack(data)

    def store(self, key: str, source: str, binary: bytes) -> bool:
        """Write an entry atomically; False (and one warning per cache) when the directory
        cannot be written (read-only, full, not a directory)."""
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            # the source first: a binary present means its source is (or was) there too
            self._write_atomic(self.source_path(key), source.encode())
            self._write_atomic(self.path(key), pack(binary))
            return True
        except OSError as e:
            self._warn(e)
            return False

    def get_or_compile(self, key: str, source: str, compile_fn: Callable[[], bytes]) -> bytes:
        """The binary of `key`: from the cache when a sound entry exists, else `compile_fn()`,
        stored for the next process (a failed store only warns)."""
        binary = self.load(key)
        if binary is None:
            binary = compile_fn()
            self.store(key, source, binary)
        return binary

    def _write_atomic(self, dest: Path, data: bytes) -> None:
        replace_atomically(dest, data)

    def _warn(self, error: OSError) -> None:
        if not self._warned:
            self._warned = True
            warnings.warn(f"tlc: cannot write the kernel cache in {self.root} ({error.strerror or error}); "
                          f"kernels will be compiled again in every process. Set TLC_CACHE_DIR to a "
                          f"writable directory to cache them.", CacheWarning, stacklevel=3)


@functools.lru_cache(maxsize=None)
def _shared(root: str) -> KernelCache:
    return KernelCache(root)


def default_cache() -> KernelCache:
    """The process-wide cache of the current `$TLC_CACHE_DIR` (one warning per directory)."""
    return _shared(str(default_dir()))
