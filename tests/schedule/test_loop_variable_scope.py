"""A loop variable exists only inside its loop (E020 after it): a name a serial loop used,
assigned later as a parallel loop's own scalar, is declared there.  Lowering kept the loop's
variable among the kernel's scalars after the loop, so the parallel loop's `d = ...` declared
nothing and the IR check failed ("unknown name 'd'")."""
import numpy as np

import tlc
from tlc.runner import build

SRC = """
@kernel
def shifted(x: i32[N], y: i32[256], THREADS: const = 32):
    with grid(1, threads=THREADS) as b:
        t = 0
        for d in range(4):
            t += x[d]
        for q in parallel(256):
            d = x[q] + t
            y[q] = d
        for d in unroll(2):
            y[d] = y[d] * 2
"""


def test_a_serial_loops_variable_is_free_after_it(tmp_path):
    mod = tlc.compile_source(SRC, target="cpu", path="shifted.tl")
    x = np.arange(256, dtype=np.int32)
    y = np.zeros(256, np.int32)
    mod.shifted(x, y)
    want = x + 6
    want[:2] *= 2
    np.testing.assert_array_equal(y, want)
    path = tmp_path / "shifted.tl"
    path.write_text(SRC)
    build(str(path), arch="sm_90a")
