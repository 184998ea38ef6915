"""Programs named like C: the issue's cases (#16) as regressions on the generated text, and
kernels whose every name is reserved in C, a `_` twin of one or a C spelling, compiled by nvcc
(warnings as errors).  Many names go into one kernel: a compile takes seconds."""
from __future__ import annotations

import re

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import tlc
from kit_codegen import generated_source
from names_kit import INLINED, ONE_SCALAR, REGRESSIONS, from_names, pool
from nvcc import compile_object
from tlc.codegen import generate_file
from tlc.driver import check_source
from tlc.schedule import schedule


def kernel(src: str, name: str = "k") -> str:
    source = generated_source(src, name, line_directives=False).source
    return source[source.index('extern "C" __global__'):]


def test_issue_repro_a_local_half_beside_a_parameter_half_():
    """Both were `half_` in C: the local hid the parameter and the kernel computed 4x, not 2x + half_."""
    c = kernel(ONE_SCALAR.format(t="xs", a="half_", b="half"))
    assert "float half_1_, int N)" in c and "float half_ = 0.0f;" in c
    assert re.search(r"xs\[[^]]*\] = \(half_ \+ half_1_\);", c)


def test_int_beside_int_():
    c = kernel(ONE_SCALAR.format(t="xs", a="int_", b="int"))
    assert re.search(r"xs\[[^]]*\] = \(int_ \+ int_1_\);", c)


def test_a_tensor_named_INFINITY_and_a_scalar_named_stream():
    c = kernel(ONE_SCALAR.format(t="INFINITY", a="stream", b="v"))
    assert "launch_k(float* INFINITY_, float stream_, int N, cudaStream_t stream)" in c
    assert "stream>>>(INFINITY_, stream_, N)" in c
    assert not re.search(r"\bINFINITY\b", re.sub(r"//[^\n]*", "", c))  # only the .tl line echoed


def test_a_local_named_expf_beside_a_call_of_expf():
    c = kernel(ONE_SCALAR.format(t="xs", a="s", b="expf").replace("* 2.0", "* 2.0\n                expf = exp(expf)"))
    assert "float expf_ = 0.0f;" in c and "expf_ = expf(expf_);" in c


def test_a_parameter_named_as_its_kernel_does_not_hide_it_in_the_launcher():
    c = kernel(ONE_SCALAR.format(t="xs", a="k", b="v"))
    assert "::k<<<" in c and "float k, int N, cudaStream_t stream)" in c




def test_an_inlined_function_takes_no_name_of_the_kernel():
    """`twice_0_x` was both the user's local and twice()'s parameter, and twice()'s local `result`
    its result: the IR verifier failed with a traceback."""
    xs, ys = np.array([0.0, 1.0, 2.0], np.float32), np.zeros(3, np.float32)
    tlc.compile_source(INLINED, target="cpu").kernels["k"](xs, ys)
    np.testing.assert_array_equal(ys, xs * 2 + 1 + xs + 100)
    assert "twice_1_x" in kernel(INLINED) and "twice_1_return" in kernel(INLINED)


def test_the_issue_cases_in_one_file_compile(tmp_path):
    r = check_source(REGRESSIONS, "t.tl")
    assert r.ok, r.diagnostics
    source = generate_file([schedule(r.program, k, {}, target="sm_80") for k in ("K", "launch_K", "ünïcode")],
                           sources=r.sources)
    launchers = re.findall(r'extern "C" cudaError_t (\w+)\(', source)
    kernels = re.findall(r'__global__ void __launch_bounds__\([^)]*\) (\w+)\(', source)
    assert launchers == ["launch_K", "launch_launch_1K_", "launch_x_0_20000fcn_20000efcode_"]
    assert kernels == ["K", "launch_1K_", "x_0_20000fcn_20000efcode_"]
    assert "(float* x_0_20003b1_, float x_0_200fb01_, float fi, int N, cudaStream_t stream)" in source
    compile_object(source, "sm_80", tmp_path)


def test_a_kernel_of_every_pooled_name_compiles(tmp_path):
    src, name, _ = from_names(list(pool()))
    compile_object(generated_source(src, name).source, "sm_80", tmp_path)


@settings(derandomize=True, max_examples=2, deadline=None)
@given(st.lists(st.sampled_from(pool()), min_size=8, max_size=80, unique=True))
def test_kernels_of_drawn_names_compile(tmp_path_factory, names):
    src, name, _ = from_names(names)
    compile_object(generated_source(src, name).source, "sm_80", tmp_path_factory.mktemp("k"))
