"""A device function called in an `if` test (`if q == 0 or at(q) != at(q - 1):`): the
statements its inlined body needs run before the `if`, so that both branches and the test
see them.  They were placed at the top of the `if`'s body, where the test could not see them
(an IR check failed: "unknown name 'at_1_return'")."""
import numpy as np

import tlc
from tlc.runner import build

SRC = """
def at(p: i32) -> i32:
    # a word of padding after every 32
    q = p + p // 32
    return q


@kernel
def starts(x: i32[N], y: i32[N], THREADS: const = 32):
    with grid(1, threads=THREADS) as b:
        s = shared(i32[70])
        for q in parallel(64):
            s[at(q)] = x[q]
        for q in parallel(64):
            if q == 0 or s[at(q)] != s[at(q - 1)]:
                y[q] = 1
            elif at(q) > 40:
                y[q] = 2
            else:
                y[q] = 0
        if at(N) > 40:
            y[0] = y[0] + 10
"""


def test_a_call_in_an_if_test_is_computed_before_the_if(tmp_path):
    mod = tlc.compile_source(SRC, target="cpu", path="starts.tl")
    x = np.repeat(np.arange(16, dtype=np.int32), 4)
    x[9] = 7
    y = np.full(64, -1, np.int32)
    mod.starts(x, y)
    want = np.where(np.r_[True, x[1:] != x[:-1]], 1, np.where(np.arange(64) + np.arange(64) // 32 > 40, 2, 0))
    want[0] += 10
    np.testing.assert_array_equal(y, want)
    path = tmp_path / "starts.tl"
    path.write_text(SRC)
    for arch in ("sm_80", "sm_90a"):
        src, _ = build(str(path), arch=arch)
        assert "at_1_return" in src
