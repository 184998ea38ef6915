"""The checked-module cache (runtime/checked_cache.py) and the memo of tlc's sources' hash
(runtime/cache.py): a hit gives the module's kernels without a parse and checks the text in
full when a kernel is scheduled; every doubt is a miss (changed text, imports, tlc version or
sources, a damaged or planted entry), and a cache folder that cannot be written costs nothing
but the check."""
import hashlib
import json
import os
import time
import zlib

import numpy as np
import pytest

from tlc import api, driver
from tlc.diagnostics import TlcError
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
        blob = zlib.compress(change(zlib.decompress(blobs[start:start + size])), 1)
        doc["functions"][q] = [sum(map(len, parts)), len(blob), hashlib.sha256(blob).hexdigest()]
        parts.append(blob)
    head = json.dumps(doc).encode()
    return checked_cache._MAGIC + hashlib.sha256(head).hexdigest().encode() + b"\n" + head + b"\n" + b"".join(parts)


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


def test_package_hash_of_a_checkout_is_its_files_through_the_memo(tmp_path, monkeypatch):
    monkeypatch.setenv("TLC_CACHE_DIR", str(tmp_path / "cache"))
    base = checkout(tmp_path)
    monkeypatch.setattr(cache_mod, "_package_bases", lambda: [(str(base), "")])
    # a checkout's identity (its files, memoized), also where CI runs an installed wheel
    monkeypatch.setattr(cache_mod, "installed_identity", lambda *args, **kw: None)
    cache_mod.package_hash.cache_clear()
    try:
        assert cache_mod.package_hash() == cache_mod.checkout_hash([(str(base), "")]) == unmemoized(base)
    finally:
        cache_mod.package_hash.cache_clear()


def checkout(tmp_path):
    """A package of three source files and a note, every file and folder last changed a minute
    ago (the memo vouches only for files that settled)."""
    base = tmp_path / "pkg"
    (base / "sub" / "__pycache__").mkdir(parents=True)
    (base / "a.py").write_text("one")
    (base / "sub" / "b.cuh").write_text("two")
    (base / "sub" / "c.py").write_text("three")
    (base / "sub" / "__pycache__" / "c.cpython-311.pyc").write_text("")
    (base / "notes.txt").write_text("")
    aged(*base.rglob("*"), base)
    return base


def aged(*paths, seconds=60):
    t = time.time_ns() - seconds * 10**9
    for p in paths:
        os.utime(p, ns=(t, t))


def unmemoized(base) -> str:
    h = hashlib.sha256()
    for name, path in cache_mod.listed_files([(str(base), "")])[1]:
        h.update(name.encode() + b"\0" + open(path, "rb").read() + b"\0")
    return h.hexdigest()


def plant(cache, digest="f" * 64):
    """Put another digest into the checkout memo, as if it were what the files hash to."""
    [memo] = cache.glob("tlc-checkout-*.json")
    doc = json.loads(memo.read_text())
    doc["digest"] = digest
    memo.write_text(json.dumps(doc))


@pytest.mark.parametrize("change", [
    lambda base: ((base / "a.py").write_text("owe"), aged(base / "a.py", seconds=30)),  # the same size
    lambda base: ((base / "sub" / "b.cuh").write_text("twice"), aged(base / "sub" / "b.cuh", seconds=30)),
    lambda base: ((base / "sub" / "d.j2").write_text("four"), aged(base / "sub" / "d.j2", base / "sub", seconds=30)),
    lambda base: ((base / "sub" / "c.py").unlink(), aged(base / "sub", seconds=30)),
    lambda base: ((base / "sub" / "c.py").rename(base / "sub" / "e.py"), aged(base / "sub", seconds=30)),
    lambda base: ((base / "a.py").unlink(), (base / "sub" / "a.py").write_text("one"),
                  aged(base, base / "sub", base / "sub" / "a.py", seconds=30)),
])
def test_the_checkout_memo_follows_every_change(tmp_path, monkeypatch, change):
    monkeypatch.setenv("TLC_CACHE_DIR", str(tmp_path / "cache"))
    base = checkout(tmp_path)
    bases = [(str(base), "")]
    first = cache_mod.checkout_hash(bases)
    assert first == unmemoized(base)
    plant(tmp_path / "cache")
    assert cache_mod.checkout_hash(bases) == "f" * 64  # the memo is what a new process reads
    change(base)
    second = cache_mod.checkout_hash(bases)
    assert second == unmemoized(base) and second not in (first, "f" * 64)
    assert cache_mod.checkout_hash(bases) == second  # the memo written again


def test_a_note_beside_the_sources_changes_nothing_but_the_memo(tmp_path, monkeypatch):
    monkeypatch.setenv("TLC_CACHE_DIR", str(tmp_path / "cache"))
    base = checkout(tmp_path)
    first = cache_mod.checkout_hash([(str(base), "")])
    plant(tmp_path / "cache")
    (base / "todo.txt").write_text("not a source")
    aged(base, seconds=30)
    assert cache_mod.checkout_hash([(str(base), "")]) == first  # listed and hashed again, the same


def test_no_memo_vouches_for_a_file_changed_just_now(tmp_path, monkeypatch):
    # a file written in the last two seconds may be written again within the same tick of the
    # file system's clock, its size and time unchanged: hashed, but not memoized until it settles
    monkeypatch.setenv("TLC_CACHE_DIR", str(tmp_path / "cache"))
    base = checkout(tmp_path)
    (base / "a.py").write_text("owe")
    assert cache_mod.checkout_hash([(str(base), "")]) == unmemoized(base)
    assert not list((tmp_path / "cache").glob("tlc-checkout-*.json"))
    aged(base / "a.py")
    assert cache_mod.checkout_hash([(str(base), "")]) == unmemoized(base)
    assert len(list((tmp_path / "cache").glob("tlc-checkout-*.json"))) == 1


@pytest.mark.parametrize("memo", [
    "not json", "[]", '{"folders": [], "files": [], "digest": 7}',
    '{"folders": [], "files": [["/nonexistent/x.py", 1, 2]], "digest": "' + "f" * 64 + '"}',
    '{"folders": [], "files": [["a"]], "digest": "' + "f" * 64 + '"}',
    '{"folders": [], "files": [], "digest": "' + "F" * 64 + '"}',
    '{"format": 2, "folders": [], "digest": "' + "f" * 64 + '"}',  # vouches for no folder
    '{"format": 2, "folders": [["/nonexistent", 1, "a.py", "3:1"]], "digest": "' + "f" * 64 + '"}',
    '{"format": 2, "folders": [[7, 1, "a.py", "3:1"]], "digest": "' + "f" * 64 + '"}',
    '{"format": 3, "folders": 0, "paths": "", "stamps": "", "digest": "' + "f" * 64 + '"}',  # vouches for nothing
    '{"format": 3, "folders": 1, "paths": "/nonexistent", "stamps": "0100000000000000", "digest": "' + "f" * 64 + '"}',
    '{"format": 3, "folders": "1", "paths": "/", "stamps": "", "digest": "' + "f" * 64 + '"}',
])
def test_a_damaged_checkout_memo_is_a_miss(tmp_path, monkeypatch, memo):
    monkeypatch.setenv("TLC_CACHE_DIR", str(tmp_path / "cache"))
    base = checkout(tmp_path)
    cache_mod.checkout_hash([(str(base), "")])
    [path] = (tmp_path / "cache").glob("tlc-checkout-*.json")
    path.write_text(memo)
    assert cache_mod.checkout_hash([(str(base), "")]) == unmemoized(base)


def test_the_checkout_memo_holds_the_paths_as_one_string_and_their_stamps_packed(tmp_path, monkeypatch):
    """Format 3: every path as one string (folders first), and their stamps as one hex string of
    64-bit integers (a folder's change time, a file's size and change time), which a check packs
    again from one `map(os.stat, ...)` (format 2's per-folder strings, rebuilt folder by folder,
    cost a cached first call 0.5 ms where this costs 0.35); a stamp that differs, a path that is
    gone, a count of folders that is off, or a memo of format 2 is a miss."""
    from array import array

    monkeypatch.setenv("TLC_CACHE_DIR", str(tmp_path / "cache"))
    base = checkout(tmp_path)
    bases = [(str(base), "")]
    digest = cache_mod.checkout_hash(bases)
    [path] = (tmp_path / "cache").glob("tlc-checkout-*.json")
    doc = json.loads(path.read_text())
    assert doc["format"] == 3 and doc["digest"] == digest and doc["folders"] == 2
    paths = doc["paths"].split("\n")
    assert sorted(paths[:2]) == [str(base), str(base / "sub")]
    assert paths[2:] == [str(base / "a.py"), str(base / "sub" / "b.cuh"), str(base / "sub" / "c.py")]
    a = os.stat(base / "a.py")
    stamps = array("q", bytes.fromhex(doc["stamps"])).tolist()
    assert stamps[:2] == [os.stat(p).st_mtime_ns for p in paths[:2]] and stamps[2:4] == [a.st_size, a.st_mtime_ns]
    plant(tmp_path / "cache")
    assert cache_mod.checkout_hash(bases) == "f" * 64  # read, not hashed
    stale = array("q", stamps[:2] + [a.st_size, a.st_mtime_ns + 1] + stamps[4:]).tobytes().hex()
    for damage in (lambda d: d.__setitem__("stamps", stale), lambda d: d.__setitem__("stamps", d["stamps"][:-16]),
                   lambda d: d.__setitem__("paths", d["paths"] + "\n" + str(base / "gone.py")),
                   lambda d: d.__setitem__("folders", 3), lambda d: d.__setitem__("stamps", "zz"),
                   lambda d: d.__setitem__("paths", ""), lambda d: d.__setitem__("format", 2)):
        changed = json.loads(path.read_text())
        damage(changed)
        path.write_text(json.dumps(changed))
        assert cache_mod.checkout_hash(bases) == digest  # hashed again, and the memo rewritten
        plant(tmp_path / "cache")


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
    folders, found = cache_mod.listed_files(bases)
    assert [n for n, _ in found] == ["x:a.py", "x:sub/b.cuh"]
    assert sorted(f for f, _ in folders) == [str(base), str(base / "sub")]  # with their times, not __pycache__
    (base / "sub" / "c.py").write_text("")
    (base / "a.py").unlink()
    assert [n for n, _ in cache_mod.listed_files(bases)[1]] == ["x:sub/b.cuh", "x:sub/c.py"]


def test_the_data_folders_are_hashed_where_the_package_does_not_hold_them(tmp_path, monkeypatch):
    import tlc.package_data

    root = os.path.dirname(os.path.dirname(os.path.realpath(cache_mod.__file__)))
    inside = {"grammar": os.path.join(root, "grammar"), "templates": os.path.join(root, "templates")}
    monkeypatch.setattr(tlc.package_data, "folder_path", lambda name: inside[name])  # an installed tlc's
    bases = cache_mod._package_bases.__wrapped__  # (found once a process)
    assert bases() == [(root, "")]
    (tmp_path / "grammar").mkdir()
    monkeypatch.setattr(tlc.package_data, "folder_path", lambda name: {**inside, "grammar": str(tmp_path / "grammar")}[name])
    assert bases() == [(root, ""), (str(tmp_path / "grammar"), "data:grammar/")]  # a checkout's


def test_a_data_folder_beside_the_package_is_taken_as_it_is_unless_it_is_a_link(tmp_path, monkeypatch):
    """`_package_bases` resolves a data folder only where it is not plainly beside the real
    package (each realpath cost a cached first call an lstat() per part of its path)."""
    import tlc.package_data

    package, real = tmp_path / "tlc", tmp_path / "elsewhere" / "templates"
    package.mkdir()
    real.mkdir(parents=True)
    (tmp_path / "grammar").mkdir()
    (tmp_path / "templates").symlink_to(real)
    monkeypatch.setattr(tlc.package_data, "package_folder", lambda: str(package))
    monkeypatch.setattr(tlc.package_data, "folder_path", lambda name: str(tmp_path / name))
    assert cache_mod._package_bases.__wrapped__() == [(str(package), ""), (str(tmp_path / "grammar"), "data:grammar/"),
                                                      (str(real), "data:templates/")]


def test_an_entry_holds_the_texts_digests_not_the_texts(files):
    """Format 5: the header names the files and their SHA-256 (format 4 held every text too:
    21 of std.gemm's 25 KB of JSON that every load decoded and hashed); a load has the main
    text from its caller and reads each import's, and a header whose digest of the main text
    is not the text's is a miss, its checksum notwithstanding."""
    full = stored(files)
    data = entry(files).read_bytes()
    assert data.startswith(b"tlc-checked-6 ") and b"twice" not in data.split(b"\n", 2)[1]
    mod = api._cached_module(str(files), "cpu")
    assert mod.sources == full.sources and list(mod.sources) == list(full.sources)
    _, head, blobs = data.split(b"\n", 2)
    doc = json.loads(head)
    doc["text"] = hashlib.sha256(b"another text").hexdigest()
    head = json.dumps(doc).encode()
    entry(files).write_bytes(checked_cache._MAGIC + hashlib.sha256(head).hexdigest().encode() + b"\n" + head + b"\n" + blobs)
    assert api._cached_module(str(files), "cpu") is None


def test_a_loaded_modules_texts_are_hashed_once_for_its_program_keys(files, monkeypatch):
    """The checked-module cache hashes each file's text when it loads an entry; the program keys
    of the module's kernels take those digests (`cache.text_digest`, by the text object) rather
    than hashing every text again (std.gemm's 32 KB: 0.9 M of a cached first call's 18.9 M
    instructions).  A text equal to a remembered one but another object is hashed anew, and a
    changed text still changes the key."""
    stored(files)
    mod = api._cached_module(str(files), "cpu")
    hashed = []
    real = hashlib.sha256

    def counting(data=b""):
        hashed.append(bytes(data))
        return real(data)
    monkeypatch.setattr(cache_mod.hashlib, "sha256", counting)
    key = cache_mod.program_key(mod.sources, "scale", {}, "sm_90a", "nvrtc 13.0")
    texts = {t.encode() for t in mod.sources.values()}
    assert texts and not texts & set(hashed)  # no text hashed again
    monkeypatch.setattr(cache_mod.hashlib, "sha256", real)
    assert key == cache_mod.program_key({f: "".join(list(t)) for f, t in mod.sources.items()}, "scale", {},
                                        "sm_90a", "nvrtc 13.0")
    main = mod._program.path
    changed = {**mod.sources, main: mod.sources[main] + "\n"}
    assert cache_mod.program_key(changed, "scale", {}, "sm_90a", "nvrtc 13.0") != key
    assert cache_mod.text_digest("abc") == real(b"abc").hexdigest()


# ---- the module record: tlc.load's module vouched for by its files' stamps ----------------------

def recorded(files, monkeypatch):
    """A stored entry and the module record a load writes beside it, its files taken as settled."""
    monkeypatch.setattr(cache_mod, "_SETTLED_NS", 0)
    stored(files)
    assert api._cached_module(str(files), "cpu") is not None  # a hit of the entry: the record written
    [record] = (files.parent.parent / "cache").glob("r*.module")
    return record


def reads(monkeypatch) -> list:
    """The texts and entries read from now on."""
    seen = []
    real_text, real_load = driver.read_source, checked_cache.load
    monkeypatch.setattr(driver, "read_source", lambda p: seen.append(("text", p)) or real_text(p))
    monkeypatch.setattr(checked_cache, "load", lambda t, p: seen.append(("entry", p)) or real_load(t, p))
    return seen


def test_a_module_record_gives_the_module_without_reading_its_texts_or_entry(files, monkeypatch):
    recorded(files, monkeypatch)
    full = driver.check_file(str(files)).program
    seen = reads(monkeypatch)
    mod = api._cached_module(str(files), "cpu")
    assert sorted(mod._exports) == ["neg", "scale"] and seen == []
    digests = {name: hashlib.sha256(text.encode()).hexdigest() for name, text in full.sources.items()}
    assert mod.source_digests == digests and seen == []  # the program cache's key needs no text
    assert cache_mod.program_key_of(digests, "scale", {}, "sm_90a", "nvrtc 13.0") == \
        cache_mod.program_key(full.sources, "scale", {}, "sm_90a", "nvrtc 13.0")
    x, y = np.arange(100, dtype=np.float32), np.zeros(100, np.float32)
    mod.scale(x, y, 0.5)  # more than a signature: the text and the entry read now, then checked in full
    np.testing.assert_array_equal(y, x)
    assert seen == [("text", str(files)), ("entry", str(files))] and mod.sources == full.sources


@pytest.mark.parametrize("change", ["text", "import", "touched", "replaced", "version", "compiler", "garbled",
                                    "planted"])
def test_a_module_record_serves_only_the_files_it_stamped(files, monkeypatch, change):
    """Any file of the program written since (a text of the same size, an import, a file only
    touched, one put in its place), another tlc (its version or sources name another record) or
    a record that is not sound: the entry (or the check) decides, as without a record."""
    record = recorded(files, monkeypatch)
    helpers = files.parent / "helpers.tl"
    if change == "text":
        files.write_text(SOURCE.replace("* a", "+ a"))
    elif change == "import":
        helpers.write_text(HELPERS.replace("2.0", "3.0"))
    elif change == "touched":
        os.utime(files)
    elif change == "replaced":
        (files.parent / "new.tl").write_text(SOURCE)
        os.replace(files.parent / "new.tl", files)
    elif change == "version":
        monkeypatch.setattr(checked_cache, "__version__", "99.0")
    elif change == "compiler":
        monkeypatch.setattr(cache_mod, "package_hash", lambda: "0" * 64)
    elif change == "garbled":
        record.write_bytes(record.read_bytes()[:-3])
    else:  # sound but naming another text's digest: its own checksum made as tlc makes it
        doc = json.loads(record.read_bytes().split(b"\n", 1)[1])
        doc["files"][0][3] = "0" * 64
        head = json.dumps(doc).encode()
        record.write_bytes(checked_cache._RECORD_MAGIC + hashlib.sha256(head).hexdigest().encode() + b"\n" + head)
    seen = reads(monkeypatch)
    mod = api._cached_module(str(files), "cpu")
    if change in ("text", "import", "version", "compiler"):
        assert mod is None  # the entry's key or its imports' digests: checked again
    elif change == "planted":  # the stamps hold: the module comes, its text refused at first use
        with pytest.raises(TlcError) as raised:
            mod.scale.fn
        assert str(raised.value) == f"{files} has changed since tlc.load read it; load it again"
    else:  # the entry served it, and wrote the record again: the next load reads nothing
        assert seen[:2] == [("text", str(files)), ("entry", str(files))] and sorted(mod.kernels) == ["neg", "scale"]
        seen.clear()
        assert api._cached_module(str(files), "cpu") is not None and seen == []


def test_a_text_changed_after_the_load_is_refused_not_mixed_in(files, monkeypatch):
    recorded(files, monkeypatch)
    mod = api._cached_module(str(files), "cpu")
    files.write_text(SOURCE.replace("* a", "+ a"))
    with pytest.raises(TlcError) as raised:
        mod.scale(np.ones(8, np.float32), np.zeros(8, np.float32), 1.0)
    assert str(raised.value) == f"{files} has changed since tlc.load read it; load it again"
    assert api._cached_module(str(files), "cpu") is None  # a new load checks the new text


def test_no_module_record_vouches_for_a_file_changed_just_now(files, monkeypatch):
    stored(files)  # written by the fixture a moment ago: its stamp may not move at its next write
    assert api._cached_module(str(files), "cpu") is not None
    assert not list((files.parent.parent / "cache").glob("r*.module"))
    monkeypatch.setattr(cache_mod, "_SETTLED_NS", 0)
    assert api._cached_module(str(files), "cpu") is not None
    assert len(list((files.parent.parent / "cache").glob("r*.module"))) == 1


def test_load_writes_the_module_record_with_the_entry(files, monkeypatch):
    """The process that checks a file stores its entry and its record: the next load of it reads
    neither text nor entry (bench/first_cached_host.py's first timed process)."""
    monkeypatch.setattr(cache_mod, "_SETTLED_NS", 0)
    monkeypatch.setattr(api, "_gpu_available", lambda: True)  # as on a GPU machine; runs on the interpreter here
    first = api.load(str(files))
    seen = reads(monkeypatch)
    second = api.load(str(files))
    assert seen == [] and sorted(second.kernels) == sorted(first.kernels)
