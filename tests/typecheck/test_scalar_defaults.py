"""A scalar parameter with a default (`slope: f32 = 0.5`): a call that leaves it out passes
the default, to a kernel and to a tile op, on the interpreter and the GPU (it passed check and
then ended in KeyError / ArgumentError at the call); a default that is not a constant, or that
reads a shape symbol (known only at a call), is refused at check."""
from __future__ import annotations

import numpy as np
import pytest

from tlc.api import compile_source
from diagnostic_kit import rendered

SOURCE = """\
@kernel
def scale(X: f32[N], Y: f32[N], slope: f32 = 0.5, shift: i32 = -2):
    with grid(cdiv(N, 128), threads=128) as bx:
        for i in parallel(128):
            Y[bx * 128 + i] = X[bx * 128 + i] * slope + f32(shift)

@tile_op
def scaled(x: f32[N], slope: f32 = 2.0 ** 3 * 0.5) -> f32[N]:
    return x * slope
"""


def run(target: str):
    mod = compile_source(SOURCE, target=target, path="defaults.tl")
    x = np.arange(300, dtype=np.float32)
    y = np.zeros_like(x)
    mod.scale(x, y)
    np.testing.assert_array_equal(np.asarray(y), x * 0.5 - 2)
    mod.scale(x, y, 3.0)
    np.testing.assert_array_equal(np.asarray(y), x * 3 - 2)
    mod.scale(x, y, shift=5)
    np.testing.assert_array_equal(np.asarray(y), x * 0.5 + 5)
    np.testing.assert_array_equal(np.asarray(mod.scaled(x)), x * 4)
    np.testing.assert_array_equal(np.asarray(mod.scaled(x, 1.5)), x * 1.5)


def test_a_left_out_scalar_takes_its_default_on_the_interpreter():
    run("cpu")


@pytest.mark.gpu
def test_a_left_out_scalar_takes_its_default_on_the_gpu():
    run("cuda")


@pytest.mark.parametrize("default,expected", [
    ("N", "t.tl:2:38: error[E159]: the default of 's' reads the shape symbol 'N', whose size only a call "
          "gives\n  |\n2 | def k(X: f32[N], Y: f32[N], s: f32 = N):\n  |                                      ^\n"
          "  = hint: pass 's' at the call, or make it a 'const'"),
    ("X", "t.tl:2:38: error[E031]: the default of 's' must be a compile-time constant; 'X' is not a constant\n"
          "  |\n2 | def k(X: f32[N], Y: f32[N], s: f32 = X):\n  |                                      ^\n"
          "  = hint: use a literal, a module constant or a 'const' parameter"),
])
def test_a_default_that_is_not_a_constant_is_refused(default, expected):
    src = (f"@kernel\ndef k(X: f32[N], Y: f32[N], s: f32 = {default}):\n"
           "    with grid(1, threads=32) as bx:\n        Y[0] = X[0] * s\n")
    assert rendered(src) == expected
