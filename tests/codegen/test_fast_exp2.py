"""fast_exp2 asked for by name: the hardware exponential (tl::fast_exp2: ex2.approx, one
MUFU.EX2) where the fast-math rule keeps exp2f because the value also reaches an f32 output
(attention's probabilities, whose row sums give the f32 log-sum-exp).  exp2 of f32 stored as f32
stays exp2f; f64 keeps exp2; the interpreter computes it exactly."""
import re

import numpy as np
import pytest

import tlc
from kit_codegen import generated_source
from nvcc import cubin_sass

SRC = """
@kernel
def exps(x: f32[N], y: f32[N], d: f64[N], yd: f64[N], FAST: const = True):
    with grid(cdiv(N, 256), threads=128) as bx:
        for i in parallel(256):
            if FAST:
                y[bx * 256 + i] = fast_exp2(x[bx * 256 + i])
                yd[bx * 256 + i] = fast_exp2(d[bx * 256 + i])
            else:
                y[bx * 256 + i] = exp2(x[bx * 256 + i])
                yd[bx * 256 + i] = exp2(d[bx * 256 + i])
"""


def cuda(**constants) -> str:
    return generated_source(SRC, "exps", arch="sm_90a", constants=constants).source


def body(text: str) -> str:
    return text[text.index("__global__"):]


def test_fast_exp2_is_the_hardware_exponential_for_f32_and_exp2_for_f64():
    text = body(cuda())
    assert re.search(r"y\[.*\] = tl::fast_exp2\(", text) and re.search(r"yd\[.*\] = exp2\(", text)
    assert "tl::fast_exp2(" not in cuda(FAST=False)  # f32 stored as f32: the precise exp2f


def test_it_is_one_mufu_where_exp2f_adds_a_range_fix_up(tmp_path):
    fast, _ = cubin_sass(cuda(), "sm_90a", tmp_path, "fast")
    precise, _ = cubin_sass(cuda(FAST=False), "sm_90a", tmp_path, "precise")
    ops = lambda sass, op: len(re.findall(rf"\b{op}\b", sass))  # noqa: E731
    assert ops(fast, "MUFU.EX2") == ops(precise, "MUFU.EX2") >= 1
    assert ops(fast, "FSETP.GEU.AND") < ops(precise, "FSETP.GEU.AND")  # exp2f's subnormal range check


def test_the_interpreter_computes_it_exactly():
    mod = tlc.compile_source(SRC, target="cpu")
    x = np.linspace(-130, 20, 300, dtype=np.float32)
    y, yd = np.zeros_like(x), np.zeros(300)
    mod.exps(x, y, x.astype(np.float64), yd)
    assert np.array_equal(y, np.exp2(x)) and np.array_equal(yd, np.exp2(x.astype(np.float64)))

