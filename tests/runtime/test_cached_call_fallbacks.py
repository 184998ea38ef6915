"""A new process's first call of a cached kernel (issue #15: the module record or else the
checked-module cache, its launch memo, the program cache and the checkout memo, read in that order) when one of those entries is
damaged, or the cache folder cannot take a write: the call falls back to the full path as far as
it must (the check, the scheduling and code generation, NVRTC), launches the same kernel, says at
most the one warning of an unwritable cache and never raises; the next process is served from
the caches again where they could be written.  The GPU is stood in for as in
bench/first_cached_host.py (one process fills the caches with the matmul of a copy of std.gemm;
each case is another process)."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tlc.runtime import cache

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import first_cached_host  # noqa: E402
from memo_kit import IDENTITY, memo_of, stale  # noqa: E402

# the call, with NVRTC stood in for (counted), and the cache's writes failing as
# TLC_TEST_WRITES says: "full" writes into /dev/full (ENOSPC at the write, as a full disk),
# "read-only" is refused at the temporary file's creation (EROFS, as a read-only mount)
CALL = first_cached_host.STAND_IN + r"""
import errno, json, os, sys, tempfile
import tlc
from tlc.runtime import cache, compile as rc, driver_api, tensormap
""" + IDENTITY + r"""
driver_api.libcuda = tensormap.libcuda = lambda: _LibCuda()
rc.warm_up_nvrtc = lambda *a: None
compiles = []
rc.nvrtc_compile = lambda source, arch, name: compiles.append(name) or b"cubin of " + name.encode()
writes = os.environ.get("TLC_TEST_WRITES")
if writes == "full":
    def full(dir, prefix, suffix):
        return os.open("/dev/full", os.O_WRONLY), os.path.join(dir, prefix + suffix)
    tempfile.mkstemp = full
elif writes == "read-only":
    def refused(dir, prefix, suffix):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), dir)
    tempfile.mkstemp = refused
if os.environ.get("TLC_TEST_NVRTC"):  # another NVRTC than the one that compiled the cache's kernels
    _nvrtc.getVersion = lambda: tuple(int(x) for x in os.environ["TLC_TEST_NVRTC"].split("."))
if os.environ.get("TLC_TEST_CC"):  # another GPU
    _answers = {16: 132, 97: 232448, 75: int(os.environ["TLC_TEST_CC"][0]), 76: int(os.environ["TLC_TEST_CC"][-1])}
    _runtime.deviceGetAttribute = lambda attr, device: _answers[attr]
from tlc import driver
checks = []
real_check = driver.check_source
driver.check_source = lambda *a, **k: checks.append(a[1]) or real_check(*a, **k)
mod = tlc.load(os.environ["TLC_TEST_MODULE"], target="cuda")
mod.matmul(A, A, C)
print(json.dumps({"launches": _Function.launches, "checked": bool(checks), "generated": "tlc.codegen" in sys.modules,
                  "compiles": compiles, "memo": cache.checkout_memo(cache._package_bases()),
                  "identity": cache.package_hash()}))
"""

SERVED = {"checked": False, "generated": False, "compiles": []}  # all from the caches
REBUILT = {"checked": True, "generated": True, "compiles": []}  # its binary still in the kernel cache
NOT_WRITTEN = ("CacheWarning: tlc: cannot write the kernel cache in {folder} ({why}); kernels will be compiled "
               "again in every process. Set TLC_CACHE_DIR to a writable directory to cache them.")


def call(folder: Path, module: Path, writes: str | None = None, **changes: str) -> tuple[dict, str]:
    """The call in a new process with the cache `folder`, of the module `module` (a copy of
    std.gemm, made once: the checkout's text may change during a run, and the generated code
    names the file's path, so that each copy's would be a new kernel)."""
    env = {**os.environ, "TLC_CACHE_DIR": str(folder), "TLC_TEST_MODULE": str(module),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    env.pop("TLC_TEST_WRITES", None)
    if writes:
        env["TLC_TEST_WRITES"] = writes
    env.update({f"TLC_TEST_{k.upper()}": v for k, v in changes.items()})  # nvrtc="13.1", cc="8.9", identity="f" * 64
    done = subprocess.run([sys.executable, "-c", CALL], env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


@pytest.fixture(scope="module")
def module(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("module") / "gemm.tl"
    path.write_text((ROOT / "stdlib" / "gemm.tl").read_text())
    time.sleep(2.1)  # settled: the calls' module records vouch for it (runtime/checked_cache.py)
    return path


@pytest.fixture(scope="module")
def filled(tmp_path_factory, module) -> tuple[Path, list]:
    """A cache folder that serves the call, and the one launch it makes (grid, block, argument
    count, shared memory): what every fallback must launch too."""
    folder = tmp_path_factory.mktemp("filled") / "cache"
    found, err = call(folder, module)  # the first process: checks, schedules, generates, "compiles"
    assert found["checked"] and found["compiles"] == ["matmul"] and err == ""
    found, err = call(folder, module)
    assert {k: found[k] for k in SERVED} == SERVED and err == ""
    return folder, found["launches"]


@pytest.fixture
def copy(filled, tmp_path) -> Path:
    import shutil

    folder = tmp_path / "cache"
    shutil.copytree(filled[0], folder)
    return folder


def only(folder: Path, pattern: str) -> Path:
    [found] = [p for p in folder.glob(pattern)]
    return found


def program_entry(folder: Path) -> Path:
    return only(folder, "p*.bin")


def damage(folder: Path, module: Path, what: str) -> str:
    """Damage one entry of `folder`; the name of what the call must then do again."""
    if what == "program entry cut":
        path = program_entry(folder)
        path.write_bytes(path.read_bytes()[:1000])
        return "rebuilt"
    if what == "program entry garbled":  # its checksum as tlc makes it: only the reader can refuse it
        path = program_entry(folder)
        body = cache.unpack(path.read_bytes())
        path.write_bytes(cache.pack(body[:40] + b"\xff" * 64 + body[104:]))
        return "rebuilt"
    if what == "checked entry cut":  # read where no module record vouches for the text: none here
        path = only(folder, "*.checked")
        path.write_bytes(path.read_bytes()[:300])
        only(folder, "r*.module").unlink()
        return "checked"
    if what == "module record garbled":  # the checked entry serves the load, and the record is written again
        only(folder, "r*.module").write_bytes(b"tlc-module-1 " + b"0" * 64 + b"\n{}")
        return "served"
    if what == "launch memo garbled":  # read where no module record holds a copy of it: none here
        only(folder, "*.launch").write_bytes(b'{"format": 1, "kernels": [')
        only(folder, "r*.module").unlink()
        return "decoded"
    if what == "checkout memo stale":  # its digest still the files', one stamp not (a file touched):
        # the stamps fail, the files are hashed again, to the same digest
        stale(memo_of(lambda: call(folder, module)[0])[0])
        return "served"
    if what == "checkout memo garbled":  # where the call's process looks for it (none is written
        # where a folder of tlc changed in the last two seconds, as a first import's __pycache__)
        Path(call(folder, module)[0]["memo"]).write_bytes(b"\0" * 64)
        return "served"
    raise AssertionError(what)


@pytest.mark.parametrize("what", ["program entry cut", "program entry garbled", "checked entry cut",
                                  "module record garbled", "launch memo garbled", "checkout memo garbled",
                                  "checkout memo stale"])
def test_a_damaged_entry_costs_the_work_it_held_and_is_replaced(filled, module, copy, what):
    redo = damage(copy, module, what)
    found, err = call(copy, module)
    assert err == "" and found["launches"] == filled[1]  # no warning, the same launch
    assert found["compiles"] == []  # the binary itself was sound: NVRTC is not asked
    if redo == "rebuilt":  # the program entry built again from a checked text
        assert found["checked"] and found["generated"]
    elif redo == "checked":  # the text checked again; the kernel from the program cache, not generated
        assert found["checked"] and not found["generated"]
    else:  # the launch memo or the checkout's identity again: neither checks nor generates
        assert not found["checked"] and not found["generated"]
    found, err = call(copy, module)  # rewritten: the next process is served from the caches
    assert {k: found[k] for k in SERVED} == SERVED and err == "" and found["launches"] == filled[1]


def test_entries_found_under_the_identity_a_stale_memo_claims_are_never_launched(filled, module, copy):
    """tlc "changed" after a process filled the caches under the checkout memo's digest (a "tlc"
    whose identity is f...f stores its entries, the memo claims f...f, then one stamp put off):
    the next call finds the memo stale, hashes the files and looks its entries up under their
    digest, so that nothing the other "tlc" stored is used: it checks, generates and compiles as
    a new tlc must, and launches the same kernel; the process after it is served.  (Session 24
    tried keying the lookups by the memo's claim and comparing the stamps on a thread beside the
    driver's module load: on the H200 the thread made the call 3.99 -> 5.71 ms; this is what any
    such shortcut must still do.)  The f...f process is given its identity, not the memo with
    its stamps sound: the checkout is the whole suite's, whose other processes compile its
    bytecode (bench/first_cached_host.py, bench/first_cold_steps.py: a new __pycache__ moves its
    folder's time), so such a memo could be stale by the time that process read it; it then
    stored its entries under the files' digest, which the next call rightly found (session 26,
    the full suite on the 2-core machine, 2 of 2; memo_kit.py).  That a memo whose stamps hold
    is read, not hashed: tests/runtime/test_checked_cache.py."""
    memo, digest = memo_of(lambda: call(copy, module)[0])
    for entry in copy.iterdir():  # the caches empty but for the memo
        if entry != memo and entry.is_file():
            entry.unlink()
    found, _ = call(copy, module, identity="f" * 64)  # a "tlc" whose identity is f...f fills its entries
    assert found["checked"] and found["compiles"] == ["matmul"]
    stale(memo, "f" * 64)  # its files changed since: the memo still claims f...f
    found, err = call(copy, module)
    assert err == "" and found["launches"] == filled[1] and found["identity"] == digest  # the files' digest
    assert found["checked"] and found["generated"] and found["compiles"] == ["matmul"]
    found, err = call(copy, module)
    assert {k: found[k] for k in SERVED} == SERVED and err == "" and found["launches"] == filled[1]


@pytest.mark.parametrize("writes, why", [("full", "No space left on device"), ("read-only", "Read-only file system")])
def test_a_cache_that_takes_no_write_costs_the_work_and_one_warning(filled, module, copy, writes, why):
    damage(copy, module, "program entry cut")
    before = {p.name: p.read_bytes() for p in copy.iterdir()}
    found, err = call(copy, module, writes)
    assert found["launches"] == filled[1] and {k: found[k] for k in REBUILT} == REBUILT
    # the program entry could not be stored: said once, in these words; the launch memo's and
    # the checkout memo's writes fail silently (the next process only takes the longer path)
    assert [line for line in err.splitlines() if "Warning" in line] == \
        [line for line in err.splitlines() if NOT_WRITTEN.format(folder=copy, why=why) in line]
    assert err.count("CacheWarning") == 1
    assert {p.name: p.read_bytes() for p in copy.iterdir()} == before  # nothing written, no temporary file left
    found, _ = call(copy, module, writes)  # and so again in the next process, the same way
    assert found["launches"] == filled[1] and found["generated"]


def test_a_cache_that_takes_no_write_from_the_start_compiles_and_launches(tmp_path, module):
    found, err = call(tmp_path / "cache", module, "full")
    assert found["compiles"] == ["matmul"] and len(found["launches"]) == 1
    assert err.count("CacheWarning") == 1 and NOT_WRITTEN.format(folder=tmp_path / "cache", why="No space left on device") in err


@pytest.mark.parametrize("change", ["nvrtc", "gpu", "text"])
def test_a_changed_input_is_never_served_from_the_caches(filled, module, copy, change):
    """What a cached call must still see, however few of its steps it takes: another NVRTC (its
    version is in the program key), another GPU (the memo's arch is not the target chosen now)
    or another text of the module (the checked entry's and the program key's digest) is
    rebuilt from the checked text; only the text's change may find its binary in the kernel
    cache (the generated code is the same)."""
    text = module.read_text()
    if change == "text":
        module.write_text(text + "\n# changed after the caches were filled\n")
    try:
        found, err = call(copy, module, **({"nvrtc": "13.1"} if change == "nvrtc" else {"cc": "8.9"} if change == "gpu"
                                           else {}))
    finally:
        module.write_text(text)
    assert err == "" and len(found["launches"]) == 1
    assert found["checked"] and found["generated"]
    assert found["compiles"] == ([] if change == "text" else ["matmul"])
    if change != "gpu":
        assert found["launches"] == filled[1]
