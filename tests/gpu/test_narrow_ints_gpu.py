"""The integer kernels of tests/codegen/test_narrow_ints.py on the GPU give, element for element,
what the interpreter gives and what NumPy's arithmetic in the dtype gives: 8- and 16-bit
wraparound, floor division and remainder, shift counts outside the width, integer powers
and floats converted to 8- and 16-bit integers saturating (issue #16; the first differential
fuzz run found seed 350's u8 (253 + 253) >> 1 as 253 on the GPU and 125 interpreted)."""
from __future__ import annotations

import functools
import pathlib
import sys

import numpy as np
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "codegen"))
from test_narrow_ints import (CASES, CONVERSIONS, SOURCE, check_conversion, expected, inputs,  # noqa: E402
                              interpreted)

from tlc.api import compile_source  # noqa: E402

pytestmark = pytest.mark.gpu


@functools.cache
def on_gpu():
    return compile_source(SOURCE, target="cuda", path="narrow.tl")


@pytest.mark.parametrize("name,dt,expr,ref,shifts", CASES, ids=[c[0] for c in CASES])
def test_gpu_agrees_with_the_interpreter(name, dt, expr, ref, shifts):
    x, y = inputs(dt, shifts)
    outs = {}
    for target, mod in (("cpu", interpreted()), ("cuda", on_gpu())):
        out = np.zeros_like(x)
        getattr(mod, name)(x, y, out)
        outs[target] = out
    np.testing.assert_array_equal(outs["cuda"], outs["cpu"])
    np.testing.assert_array_equal(outs["cuda"], expected(dt, ref, shifts))


@pytest.mark.parametrize("name,src,dst", CONVERSIONS, ids=[c[0] for c in CONVERSIONS])
def test_gpu_saturates_a_float_into_a_narrow_integer(name, src, dst):
    check_conversion(on_gpu(), name, src, dst)
