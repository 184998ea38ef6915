"""The checkout memo (runtime/cache.py: the digest of tlc's files and the stamps it was made
under) in the cached-call tests that run each call as a process of their own, on the CPU's
stand-ins (test_cached_call_fallbacks.py) and on the GPU (tests/gpu/test_cached_call_gpu.py).

Those tests' processes import tlc from the checkout, which the whole suite shares: its other
processes compile the checkout's bytecode (bench/first_cached_host.py, bench/first_cold_steps.py;
a first import of a subpackage too), and each new __pycache__ moves its folder's change time.
So a test cannot plant a digest in the memo and count on the memo's stamps holding until the
next process reads it (session 26: the CPU twin failed in the full suite, 2 of 2, 27216e7): a
"tlc" of another identity is a process given that identity (`IDENTITY`), and a memo is read
once one is written (`memo_of`)."""
from __future__ import annotations

import json
import time
from pathlib import Path

# for a call script, after `from tlc.runtime import cache`: with TLC_TEST_IDENTITY set, the
# process is a "tlc" whose identity is that (every cache key reads cache.package_hash)
IDENTITY = """
if os.environ.get("TLC_TEST_IDENTITY"):
    cache.package_hash = lambda: os.environ["TLC_TEST_IDENTITY"]
"""


def memo_of(call) -> tuple[Path, str]:
    """The checkout memo that `call()` (a new process's call, its JSON with the "memo" it reads
    and the "identity" it gives) finds, and that identity, once the memo is written: none is
    where a folder of tlc changed in the last two seconds."""
    for _ in range(4):
        found = call()
        if Path(found["memo"]).exists():
            return Path(found["memo"]), found["identity"]
        time.sleep(2.1)
    raise AssertionError("no checkout memo written")


def stale(memo: Path, digest: str | None = None) -> None:
    """The checkout memo with one stamp off (and the digest `digest` claimed, if given)."""
    doc = json.loads(memo.read_bytes())
    doc["stamps"] = doc["stamps"][:-2] + ("00" if doc["stamps"][-2:] != "00" else "01")
    doc["digest"] = digest or doc["digest"]
    memo.write_text(json.dumps(doc))
