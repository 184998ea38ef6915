"""print() on the GPU prints what the interpreter prints (issue #16): each value is passed to
the device's printf as the C type its conversion is written for (tlc.print_format), so an i64,
a u32 beyond 2^31, a u64 beyond 2^63, an f16 and a bool print their values, not the bytes of
another type.  Each target runs in its own process: device printf writes to file descriptor 1
when the GPU synchronizes."""
from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.gpu

SCRIPT = r'''
import sys
import numpy as np
import tlc

SOURCE = """
@kernel
def k(xs: f32[N], n: i64, u: u32, w: u64, h: f16, b: bool):
    with grid(2, threads=32) as bx:
        print("block %d: n=%d u=%u w=%d h=%.3f b=%d x=%+8.2e %%", bx, n, u, w, h, b, xs[bx])
"""
mod = tlc.compile_source(SOURCE, target=sys.argv[1], path="p.tl")
mod.k(np.array([1.5, -2.25], np.float32), -2**40, 4000000000, 2**64 - 1, 1.5, True)
if sys.argv[1] == "cuda":
    import cupy
    cupy.cuda.runtime.deviceSynchronize()
'''


def printed(target: str) -> list[str]:
    r = subprocess.run([sys.executable, "-c", SCRIPT, target], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return sorted(r.stdout.splitlines())  # the blocks print in any order


def test_the_gpu_prints_what_the_interpreter_prints():
    want = ["block 0: n=-1099511627776 u=4000000000 w=18446744073709551615 h=1.500 b=1 x=+1.50e+00 %",
            "block 1: n=-1099511627776 u=4000000000 w=18446744073709551615 h=1.500 b=1 x=-2.25e+00 %"]
    assert printed("cpu") == want
    assert printed("cuda") == want
