"""A new process's cached first call on the GPU itself (issue #15): CuPy and the driver's module
load, not the CPU's stand-ins (tests/runtime/test_cached_call_fallbacks.py).  Each call is a
process of its own on a copy of std.gemm, its product checked."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "runtime"))

from memo_kit import IDENTITY, memo_of, stale  # noqa: E402

CALL = r"""
import json, os, sys
import cupy
import tlc
from tlc import driver
from tlc.runtime import cache, checked_cache
""" + IDENTITY + r"""
checks, entries = [], []
real = driver.check_source
driver.check_source = lambda *a, **k: checks.append(a[1]) or real(*a, **k)
real_entry = checked_cache.load
checked_cache.load = lambda *a: entries.append(a[1]) or real_entry(*a)
A = cupy.ones((256, 256), cupy.float16)
C = cupy.zeros((256, 256), cupy.float16)
tlc.load(os.environ["TLC_TEST_MODULE"], target="cuda").matmul(A, A, C)
print(json.dumps({"right": bool((C == 256).all()), "checked": bool(checks), "entry": bool(entries),
                  "memo": cache.checkout_memo(cache._package_bases()), "identity": cache.package_hash()}))
"""


def call(folder: Path, module: Path, identity: str | None = None) -> dict:
    """The call in a new process with the cache `folder`, of the module `module`, as a "tlc"
    whose identity is `identity` where given (memo_kit.IDENTITY)."""
    env = {**os.environ, "TLC_CACHE_DIR": str(folder), "TLC_TEST_MODULE": str(module),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    env.pop("TLC_TEST_IDENTITY", None)
    if identity:
        env["TLC_TEST_IDENTITY"] = identity
    done = subprocess.run([sys.executable, "-c", CALL], env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["right"], "the product is wrong"
    return found


def test_entries_under_a_stale_identity_are_not_launched_on_the_gpu(tmp_path):
    """As tests/runtime/test_cached_call_fallbacks.py's test of the name, through CuPy and the
    driver: a "tlc" whose identity is f...f fills the caches, its files change (the memo claims
    f...f, a stamp put off), and the next call hashes the files and checks and compiles again
    rather than launch its entries; the one after is served.  The f...f process is given its
    identity rather than a planted memo whose stamps must hold until it reads it: the suite's
    other processes compile the checkout's bytecode and move its folders' times (memo_kit.py;
    its CPU twin failed so in the full suite, 27216e7)."""
    module = tmp_path / "gemm.tl"
    module.write_text((ROOT / "stdlib" / "gemm.tl").read_text())
    folder = tmp_path / "cache"
    assert call(folder, module)["checked"]  # compiled by NVRTC
    memo, digest = memo_of(lambda: call(folder, module))
    for entry in folder.iterdir():  # the caches empty but for the memo
        if entry != memo and entry.is_file():
            entry.unlink()
    assert call(folder, module, identity="f" * 64)["checked"]  # a "tlc" whose identity is f...f fills its entries
    stale(memo, "f" * 64)  # its files changed since: the memo still claims f...f
    found = call(folder, module)
    assert found["checked"] and found["identity"] == digest  # not launched: the files' digest, checked and compiled
    assert not call(folder, module)["checked"]  # the memo rewritten: served again


def test_a_module_record_serves_the_call_and_a_changed_text_is_checked_again(tmp_path):
    """The module record (runtime/checked_cache.py, 7b32dc6) on the GPU: once the module's text
    has settled, a call reads neither the text's checked entry nor checks it; a text of the same
    size written since is checked again, and its product is right."""
    module = tmp_path / "gemm.tl"
    text = (ROOT / "stdlib" / "gemm.tl").read_text()
    module.write_text(text)
    folder = tmp_path / "cache"
    assert call(folder, module)["checked"]  # compiled by NVRTC; the text may be too new for a record
    time.sleep(2.1)
    assert not call(folder, module)["checked"]  # from the caches, the record written by now
    found = call(folder, module)
    assert not found["checked"] and not found["entry"]  # from the record
    module.write_text(text.replace("# std.gemm", "# std.GEMM", 1))
    assert call(folder, module)["checked"]  # another text: checked, its kernel from the kernel cache
