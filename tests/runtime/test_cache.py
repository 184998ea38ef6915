"""The on-disk kernel cache, with fake compile functions: keys, hits, corrupt entries, cache
directories that cannot be written, and several processes compiling one kernel at once."""
import errno
import multiprocessing
import os
import time
import warnings

import pytest

from file_kit import fifo, is_char_device, python
from tlc import cachedir
from tlc.dtypes import F16, F32
from tlc.runtime import cache as cache_mod
from tlc.runtime.cache import CacheWarning, KernelCache, cache_key, pack, unpack

BASE = dict(source="__global__ void k() {}", constants={"BM": 64, "T": F16}, arch="sm_90a", toolchain="nvrtc 13.0")


def key(**changes):
    return cache_key(**{**BASE, **changes})


def counting(binary: bytes):
    calls = []

    def compile_fn():
        calls.append(1)
        return binary
    return compile_fn, calls


# ---- keys ------------------------------------------------------------------------------------

def test_key_is_stable_and_ignores_constant_order():
    assert key() == key()
    assert key(constants={"T": F16, "BM": 64}) == key()
    assert key(constants=(("T", F16), ("BM", 64))) == key()  # IR constants come as pairs
    assert len(key()) == 64


@pytest.mark.parametrize("changes", [
    dict(source="__global__ void k() { }"), dict(constants={"BM": 128, "T": F16}),
    dict(constants={"BM": 64, "T": F32}), dict(arch="sm_80"), dict(toolchain="nvrtc 12.8"),
    dict(constants={"BM": 64.0, "T": F16}), dict(constants={"BM": True, "T": F16}),
])
def test_key_changes_with_everything_that_decides_the_binary(changes):
    assert key(**changes) != key()


def test_key_changes_with_tlc_sources_and_version(monkeypatch):
    k = key()
    monkeypatch.setattr(cache_mod, "package_hash", lambda: "0" * 64)
    assert key() != k
    monkeypatch.undo()
    monkeypatch.setattr(cache_mod, "__version__", "99.0")
    assert key() != k


def test_program_key_changes_with_the_text_of_every_file():
    sources = {"a.tl": "kernel a", "<std>/math.tl": "def f"}
    k = cache_mod.program_key(sources, "a", {"BM": 64}, "sm_90a", "nvrtc 13.0")
    assert k == cache_mod.program_key(dict(sources), "a", {"BM": 64}, "sm_90a", "nvrtc 13.0")
    for changed in ({**sources, "<std>/math.tl": "def g"}, {**sources, "a.tl": "kernel b"}, {"a.tl": "kernel a"}):
        assert cache_mod.program_key(changed, "a", {"BM": 64}, "sm_90a", "nvrtc 13.0") != k


def test_package_hash_covers_tlc_sources():
    h = cache_mod.package_hash()
    assert len(h) == 64 and h == cache_mod.package_hash()


def installed(site, version="0.1.0", record="tlc/__init__.py,sha256=AAAA,10\ntlc/api.py,sha256=BBBB,20\n"):
    """A tlc installed from a wheel in `site`: the package and its dist-info's RECORD."""
    (site / "tlc").mkdir(parents=True, exist_ok=True)
    (site / "tlc" / "__init__.py").write_text("")
    (site / f"tlc-{version}.dist-info").mkdir(exist_ok=True)
    (site / f"tlc-{version}.dist-info" / "RECORD").write_text(record)
    return site / "tlc"


def test_an_installed_tlc_is_what_its_record_says(tmp_path):
    package = installed(tmp_path)
    first = cache_mod.installed_identity(package, "0.1.0")
    assert len(first) == 64 and first == cache_mod.installed_identity(package, "0.1.0")
    installed(tmp_path, record="tlc/__init__.py,sha256=AAAA,10\ntlc/api.py,sha256=CCCC,21\n")  # a file changed
    changed = cache_mod.installed_identity(package, "0.1.0")
    installed(tmp_path, version="0.2.0")  # another version beside it, with the first RECORD's text
    other = cache_mod.installed_identity(package, "0.2.0")
    assert len({first, changed, other}) == 3


@pytest.mark.parametrize("record", [None, "__editable__.tlc-0.1.0.pth,sha256=AAAA,80\n", "tlc/__init__.py,,\n"])
def test_a_checkout_or_an_editable_install_has_no_installed_identity(tmp_path, record):
    package = installed(tmp_path, record=record or "")
    if record is None:
        (tmp_path / "tlc-0.1.0.dist-info" / "RECORD").unlink()
    assert cache_mod.installed_identity(package, "0.1.0") is None
    assert cache_mod.installed_identity(installed(tmp_path / "other"), "0.3.0") is None  # no RECORD of this version


def test_a_checkout_with_a_record_beside_it_is_still_a_checkout(tmp_path):
    package = installed(tmp_path)
    assert cache_mod.installed_identity(package, "0.1.0") is not None
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'tlc'\n")  # its files are edited in place
    assert cache_mod.installed_identity(package, "0.1.0") is None


def test_package_hash_of_an_installed_tlc_reads_no_source_file(monkeypatch):
    monkeypatch.setattr(cache_mod, "installed_identity", lambda package: "1" * 64)
    monkeypatch.setattr(cache_mod, "_package_files", lambda: pytest.fail("a source file listed"))
    cache_mod.package_hash.cache_clear()
    try:
        assert cache_mod.package_hash() == "1" * 64
    finally:
        cache_mod.package_hash.cache_clear()


# ---- entries ---------------------------------------------------------------------------------

def test_miss_then_hit_keeps_the_source_beside_the_binary(tmp_path):
    cache = KernelCache(tmp_path / "nested" / "missing")  # created on first write
    compile_fn, calls = counting(b"\x7fELF cubin bytes")
    k = key()
    assert cache.get_or_compile(k, "the source", compile_fn) == b"\x7fELF cubin bytes"
    assert cache.get_or_compile(k, "the source", compile_fn) == b"\x7fELF cubin bytes"
    assert KernelCache(tmp_path / "nested" / "missing").load(k) == b"\x7fELF cubin bytes"  # another process
    assert calls == [1]
    assert cache.source_path(k).read_text() == "the source"
    assert sorted(p.name for p in cache.root.iterdir()) == [k + ".bin", k + ".cu"]


def test_default_dir_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("TLC_CACHE_DIR", str(tmp_path / "c"))
    assert KernelCache().root == tmp_path / "c"
    monkeypatch.delenv("TLC_CACHE_DIR")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert KernelCache().root == tmp_path / ".cache" / "tlc"


def test_pack_unpack_round_trip_and_rejects():
    assert unpack(pack(b"")) == b""
    data = pack(b"abc\n\x00def")
    assert unpack(data) == b"abc\n\x00def"
    assert unpack(data[:-1]) is None  # truncated
    assert unpack(data + b"x") is None  # too long
    assert unpack(data[:-1] + b"X") is None  # same length, other bytes
    assert unpack(b"garbage") is None
    assert unpack(b"") is None
    head, _, body = data.partition(b"\n")
    assert unpack(head + b" " * 200 + b"\n" + body) is None  # no header line in the first 128 bytes
    assert type(unpack(data)) is bytes  # not a view of the file's bytes


def test_an_entry_is_checked_by_crc32_and_format_1_entries_by_sha256_are_still_read():
    """Format 2's checksum is CRC-32 (against damage: a SHA-256 beside the bytes proves no more
    against someone who can write the folder, and cost a cached first call ~3 M instructions
    for std.gemm's ~120 KB program entry); an entry written by format 1 reads as before."""
    import hashlib
    import zlib

    body = bytes(range(256)) * 3
    assert pack(body) == b"TLCBIN2 768 %08x\n" % zlib.crc32(body) + body
    old = b"TLCBIN1 768 " + hashlib.sha256(body).hexdigest().encode() + b"\n" + body
    assert unpack(old) == body
    assert unpack(old[:-1] + b"X") is None
    assert unpack(b"TLCBIN1 768 %08x\n" % zlib.crc32(body) + body) is None  # each format its own checksum
    assert unpack(b"TLCBIN2 768 " + hashlib.sha256(body).hexdigest().encode() + b"\n" + body) is None
    assert unpack(b"TLCBIN3 768 %08x\n" % zlib.crc32(body) + body) is None


@pytest.mark.parametrize("damage", [
    lambda data: data[: len(data) // 2],  # a write cut short
    lambda data: data[:-3] + b"???",  # flipped bytes
    lambda data: b"",  # an empty file
    lambda data: b"TLCBIN1 x y\n" + data,  # a bad header
])
def test_a_damaged_entry_is_recompiled_and_replaced(tmp_path, damage):
    cache = KernelCache(tmp_path)
    k = key()
    cache.store(k, "src", b"good binary")
    path = cache.path(k)
    path.write_bytes(damage(path.read_bytes()))
    assert cache.load(k) is None
    compile_fn, calls = counting(b"good binary")
    assert cache.get_or_compile(k, "src", compile_fn) == b"good binary"
    assert calls == [1]
    assert cache.load(k) == b"good binary"


# ---- directories that cannot be written --------------------------------------------------------

def _fail_with(err):
    def fail(*args, **kwargs):
        raise OSError(err, os.strerror(err))
    return fail


@pytest.mark.parametrize("err", [errno.EACCES, errno.EROFS, errno.ENOSPC])
def test_unwritable_cache_compiles_every_time_and_warns_once(tmp_path, monkeypatch, err):
    # simulated because tests may run as root, for whom permission bits do not stop writes
    monkeypatch.setattr(cachedir.tempfile, "mkstemp", _fail_with(err))
    cache = KernelCache(tmp_path)
    compile_fn, calls = counting(b"bin")
    with pytest.warns(CacheWarning, match=f"cannot write the kernel cache in {tmp_path}") as record:
        assert cache.get_or_compile(key(), "src", compile_fn) == b"bin"
        assert cache.get_or_compile(key(), "src", compile_fn) == b"bin"
        assert cache.get_or_compile(key(arch="sm_80"), "src", compile_fn) == b"bin"
    assert len([w for w in record if issubclass(w.category, CacheWarning)]) == 1
    assert calls == [1, 1, 1]
    assert list(tmp_path.iterdir()) == []


def test_disk_full_midway_leaves_no_temporary_file(tmp_path, monkeypatch):
    real_fdopen = os.fdopen

    class Full:
        def __init__(self, f):
            self.f = f

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

        def write(self, data):
            self.f.write(data[:10])
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(cache_mod.os, "fdopen", lambda fd, mode: Full(real_fdopen(fd, mode)))
    cache = KernelCache(tmp_path)
    with pytest.warns(CacheWarning, match="No space left on device"):
        assert cache.get_or_compile(key(), "src", lambda: b"bin") == b"bin"
    assert list(tmp_path.iterdir()) == []


def test_a_file_where_the_directory_should_be(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    cache = KernelCache(blocker / "cache")
    with pytest.warns(CacheWarning):
        assert cache.get_or_compile(key(), "src", lambda: b"bin") == b"bin"
    assert cache.load(key()) is None


def test_unreadable_entry_is_a_miss(tmp_path, monkeypatch):
    cache = KernelCache(tmp_path)
    cache.store(key(), "src", b"bin")
    monkeypatch.setattr(cache_mod, "read_regular", _fail_with(errno.EACCES))
    assert cache.load(key()) is None


# Run in a child process with a time limit: a regression blocks on the FIFO or reads /dev/zero
# without end, which must fail the test, not hang the suite or fill the memory.
_LOAD = ("import sys, warnings; warnings.simplefilter('always')\n"
         "from tlc.runtime.cache import KernelCache\n"
         "cache = KernelCache(sys.argv[1])\n"
         "print(cache.load(sys.argv[2]))\n"
         "print(cache.get_or_compile(sys.argv[2], 'src', lambda: b'fresh'))\n"
         "print(cache.load(sys.argv[2]))\n")


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "directory"])
def test_an_entry_that_is_not_a_regular_file_is_refused_and_replaced(tmp_path, kind):
    k = key()
    entry = KernelCache(tmp_path).path(k)
    {"fifo": fifo, "dev-zero": lambda p: os.symlink("/dev/zero", p), "directory": os.mkdir}[kind](entry)
    what = {"fifo": "a FIFO", "dev-zero": "a symbolic link", "directory": "a directory"}[kind]
    result = python(_LOAD, tmp_path, k)
    assert result.returncode == 0, result.stderr
    assert f"CacheWarning: tlc: ignoring the kernel cache entry {entry}: it is {what}, not a regular file" in result.stderr
    if kind == "directory":  # cannot be renamed over: compiled, not stored, and said so
        assert result.stdout == "None\nb'fresh'\nNone\n"
        assert "cannot write the kernel cache" in result.stderr
    else:
        assert result.stdout == "None\nb'fresh'\nb'fresh'\n"
        assert entry.is_file() and not entry.is_symlink()
    assert is_char_device("/dev/zero")


def test_a_writable_cache_does_not_warn(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        KernelCache(tmp_path).get_or_compile(key(), "src", lambda: b"bin")


# ---- concurrent processes ----------------------------------------------------------------------

PAYLOAD = 4 << 20  # large enough that a write takes many system calls


def _writer(root: str, k: str, n: int, start: float) -> None:
    def compile_fn():
        time.sleep(max(0.0, start - time.time()))  # all four finish compiling together
        return bytes([n]) * PAYLOAD
    for _ in range(5):
        KernelCache(root).store(k, f"source {n}", compile_fn())


def _reader(root: str, k: str, stop: float, bad) -> None:
    path = KernelCache(root).path(k)
    while time.time() < stop:
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            continue
        body = unpack(data)
        if body is None or len(set(body)) != 1:  # a torn or mixed entry
            bad.value += 1


def test_concurrent_writers_never_expose_a_partial_entry(tmp_path):
    ctx = multiprocessing.get_context("forkserver")  # fork warns in a process with threads
    k = key()
    start = time.time() + 0.5
    bad = ctx.Value("i", 0)
    reader = ctx.Process(target=_reader, args=(str(tmp_path), k, start + 3.0, bad))
    writers = [ctx.Process(target=_writer, args=(str(tmp_path), k, n, start)) for n in range(1, 5)]
    for p in [reader, *writers]:
        p.start()
    for p in [*writers, reader]:
        p.join(60)
        assert p.exitcode == 0
    assert bad.value == 0
    body = KernelCache(tmp_path).load(k)
    assert body is not None and len(body) == PAYLOAD and body[0] in (1, 2, 3, 4)
    assert KernelCache(tmp_path).source_path(k).read_text().startswith("source ")
    assert sorted(p.name for p in tmp_path.iterdir()) == [k + ".bin", k + ".cu"]  # no temporaries left


def test_concurrent_get_or_compile_all_get_a_binary(tmp_path):
    ctx = multiprocessing.get_context("forkserver")  # fork warns in a process with threads
    with ctx.Pool(4) as pool:
        results = pool.starmap(_get, [(str(tmp_path), key(), n) for n in range(8)])
    assert all(r == b"same binary" for r in results)
    assert KernelCache(tmp_path).load(key()) == b"same binary"


def _get(root: str, k: str, n: int) -> bytes:
    return KernelCache(root).get_or_compile(k, "src", lambda: (time.sleep(0.05), b"same binary")[1])
