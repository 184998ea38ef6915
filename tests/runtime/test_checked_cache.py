"""The checked-module cache (runtime/checked_cache.py) and the memo of tlc's sources' hash
(runtime/cache.py): a hit gives the module's kernels without a parse and checks the text in
full when a kernel is scheduled; every doubt is a miss (changed text, imports, tlc version or
sources, a damaged or planted entry), and a cache folder that cannot be written costs nothing
but the check."""
import hashlib
import json
import os

import numpy as np
import pytest

from tlc import api, driver
from tlc.runtime import cache as cache_mod
from tlc.runtime import checked_cache

SOURCE = """
from .helpers import twice

@kernel
def scale(x: f32[N], y: f32[N], a: f32):
    with grid(cdiv(N, 64), threads=64) as bx:
        for i in parallel(64):
            if bx * 64 + i < N:
                y[bx * 64 + i] = twice(x[bx * 64 + i]) * a

@tile_op
def neg(x: T[M], T: dtype = f32) -> T[M]:
    return -x
"""
HELPERS = """
def twice(v: f32) -> f32:
    return v * 2.0
"""


@pytest.fixture
def files(tmp_path, monkeypatch):
    monkeypatch.setenv("TLC_CACHE_DIR", str(tmp_path / "cache"))
    src = tmp_path / "src"
    src.mkdir()
    (src / "helpers.tl").write_text(HELPERS)
    (src / "m.tl").write_text(SOURCE)
    return src / "m.tl"


def stored(path) -> str:
    result = driver.check_file(str(path))
    program = result.program
    assert checked_cache.store(program, program.sources[program.path], program.path)
    return program


def entry(path):
    [found] = (path.parent.parent / "cache").glob("*.checked")
    return found


def test_a_hit_needs_no_parse_and_checks_in_full_when_a_kernel_is_scheduled(files, monkeypatch):
    full = stored(files)
    parses = []
    real_check = driver.check_source
    monkeypatch.setattr(driver, "check_source", lambda *a: parses.append(a) or real_check(*a))
    mod = api._cached_module(str(files), "cpu")
    assert sorted(mod.kernels) == ["neg", "scale"] and parses == []
    assert mod.scale.fn.params == full.function("scale").params
    assert mod.scale.fn.from_arrays == full.function("scale").from_arrays and mod.scale.grid_count == 1
    assert mod.sources == full.sources  # what the kernel cache is keyed by, with the import's text
    x, y = np.arange(100, dtype=np.float32), np.zeros(100, np.float32)
    mod.scale(x, y, 0.5)  # the interpreter: scheduled from the program checked now, once
    np.testing.assert_array_equal(y, x)
    np.testing.assert_array_equal(mod.neg(x), -x)
    assert len(parses) == 1 and mod.program.function("scale").body == full.function("scale").body


def test_a_changed_text_import_version_or_compiler_is_a_miss(files, monkeypatch):
    stored(files)
    assert api._cached_module(str(files), "cpu") is not None
    (files.parent / "helpers.tl").write_text(HELPERS.replace("2.0", "3.0"))
    assert api._cached_module(str(files), "cpu") is None
    (files.parent / "helpers.tl").write_text(HELPERS)
    assert api._cached_module(str(files), "cpu") is not None
    monkeypatch.setattr(checked_cache, "__version__", "99.0")
    assert api._cached_module(str(files), "cpu") is None
    monkeypatch.undo()
    monkeypatch.setattr(cache_mod, "package_hash", lambda: "0" * 64)
    assert api._cached_module(str(files), "cpu") is None
    monkeypatch.undo()
    files.write_text(SOURCE + "\n")
    assert api._cached_module(str(files), "cpu") is None


def resealed(data: bytes, change) -> bytes:
    """An entry whose signatures are `change(blob)` of the ones in `data`, every checksum made
    as tlc makes it: only the reader can refuse it."""
    _, head, blobs = data.split(b"\n", 2)
    doc, parts = json.loads(head), []
    for q, (start, size, _) in doc["functions"].items():
        blob = change(blobs[start:start + size])
        doc["functions"][q] = [sum(map(len, parts)), len(blob), hashlib.sha256(blob).hexdigest()]
        parts.append(blob)
    head = json.dumps(doc).encode()
    return b"tlc-checked-2 " + hashlib.sha256(head).hexdigest().encode() + b"\n" + head + b"\n" + b"".join(parts)


@pytest.mark.parametrize("damage", ["truncate", "header", "flip", "garbage", "fifo", "planted"])
def test_a_damaged_or_planted_entry_is_a_miss_and_is_replaced(files, damage):
    program = stored(files)
    path = entry(files)
    data = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(data[:len(data) // 2])
    elif damage == "header":
        path.write_bytes(data.replace(b'"exports"', b'"exp0rts"'))
    elif damage == "flip":  # in the last signature
        path.write_bytes(data[:-5] + bytes([data[-5] ^ 1]) + data[-4:])
    elif damage == "garbage":
        path.write_bytes(b"\0" * 100)
    elif damage == "fifo":
        path.unlink()
        os.mkfifo(path)
    else:  # checksummed as tlc writes it, but naming a class that is not tlc's: never looked up
        real = b'"tlc.typecheck.program:CheckedFunction"'
        path.write_bytes(resealed(data, lambda blob: blob.replace(real, b'"os:system' + b"_" * (len(real) - 11) + b'"')))
    mod = api._cached_module(str(files), "cpu")
    if damage in ("planted", "flip"):  # the header is sound: a signature fails where it is decoded,
        x, y = np.ones(8, np.float32), np.zeros(8, np.float32)  # and the text is checked instead
        mod.scale(x, y, 1.0)
        np.testing.assert_array_equal(mod.neg(x), -x)
        assert y.tolist() == [2.0] * 8 and mod._check is None
    else:
        assert mod is None
    if damage == "fifo":
        path.unlink()
    assert checked_cache.store(program, program.sources[program.path], program.path)
    assert api._cached_module(str(files), "cpu") is not None


def test_a_cache_that_cannot_be_written_costs_only_the_check(files, tmp_path, monkeypatch):
    blocked = tmp_path / "a-file"  # a cache folder that is a file: no write can succeed, even as root
    blocked.write_text("")
    monkeypatch.setenv("TLC_CACHE_DIR", str(blocked))
    program = driver.check_file(str(files)).program
    assert not checked_cache.store(program, program.sources[program.path], program.path)
    assert api._cached_module(str(files), "cpu") is None
    assert blocked.read_text() == ""


def test_package_hash_covers_the_data_folders():
    names = [name for name, _ in cache_mod._package_files()]
    assert any(n.endswith("tl/types.cuh") for n in names) and any(n.endswith("tile.lark") for n in names)
    assert "api.py" in names and not any("__pycache__" in n for n in names)


def test_package_hash_memo_follows_every_change(tmp_path, monkeypatch):
    monkeypatch.setenv("TLC_CACHE_DIR", str(tmp_path / "cache"))
    f = tmp_path / "a.py"
    f.write_text("one")
    monkeypatch.setattr(cache_mod, "_package_files", lambda: [("a.py", str(f))])
    # a checkout's identity (its files, memoized), also where CI runs an installed wheel
    monkeypatch.setattr(cache_mod, "installed_identity", lambda *args, **kw: None)
    cache_mod.package_hash.cache_clear()
    first = cache_mod.package_hash()
    [memo] = (tmp_path / "cache").glob("tlc-sources-*")
    memo.write_text("f" * 64)  # the memo is what a new process reads
    cache_mod.package_hash.cache_clear()
    assert cache_mod.package_hash() == "f" * 64
    f.write_text("three")  # another size and time: hashed again
    cache_mod.package_hash.cache_clear()
    second = cache_mod.package_hash()
    assert second not in (first, "f" * 64) and len(second) == 64
    cache_mod.package_hash.cache_clear()


def test_load_stores_and_then_finds_a_module_for_the_gpu(files, monkeypatch, capsys):
    monkeypatch.setattr(api, "_gpu_available", lambda: True)  # as on a GPU machine; runs on the interpreter here
    first = api.load(str(files))
    parses = []
    real_check = driver.check_source
    monkeypatch.setattr(driver, "check_source", lambda *a: parses.append(a) or real_check(*a))
    second = api.load(str(files))
    assert parses == [] and second._check is not None and sorted(second.kernels) == sorted(first.kernels)
    monkeypatch.setattr(api, "_gpu_available", lambda: False)  # the interpreter's modules are not cached
    api.load(str(files))
    assert len(parses) == 1


def test_the_list_of_tlc_files_follows_files_added_and_removed(tmp_path, monkeypatch):
    monkeypatch.setenv("TLC_CACHE_DIR", str(tmp_path / "cache"))
    base = tmp_path / "pkg"
    (base / "sub" / "__pycache__").mkdir(parents=True)
    (base / "a.py").write_text("")
    (base / "sub" / "b.cuh").write_text("")
    (base / "sub" / "__pycache__" / "b.cpython-311.pyc").write_text("")
    (base / "notes.txt").write_text("")
    bases = [(str(base), "x:")]
    assert [n for n, _ in cache_mod.listed_files(bases)] == ["x:a.py", "x:sub/b.cuh"]
    assert [n for n, _ in cache_mod.listed_files(bases)] == ["x:a.py", "x:sub/b.cuh"]  # from the memo
    (base / "sub" / "c.py").write_text("")
    (base / "a.py").unlink()
    assert [n for n, _ in cache_mod.listed_files(bases)] == ["x:sub/b.cuh", "x:sub/c.py"]
