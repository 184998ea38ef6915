"""A range loop's stop is evaluated once, before its first iteration, as Python's range, the
interpreter and the cpu target evaluate it: the generated CUDA holds it in a constant where it
is an expression (std.data.repeat's cdiv(P, M) bounds, which nvcc computed again at every
iteration: an integer division a 16-byte store) or a name the body assigns (which moved the
stop: a loop that never ended); a stop that is a name the body leaves alone stays as written."""
from __future__ import annotations

import numpy as np
import pytest

import tlc
from kit_codegen import generated_source
from nvcc import compile_device

RAISED = """
@kernel
def k(y: i32[N]):
    # y[0] = the iterations of a loop whose stop's variable its body raises
    with grid(1, threads=32) as bx:
        n = N
        c = 0
        for i in range(n):
            n = n + 1
            c = c + 1
        y[0] = c
"""

DIVIDED = """
@kernel
def k(x: f32[M], y: f32[P]):
    # y[p * M + i] = x[i] for each whole copy of x in y, a thread an element of x
    with grid(1, threads=32) as bx:
        for p in range(cdiv(P, M)):
            for i in range(M):
                y[p * M + i] = x[i]
"""

NAMED = """
@kernel
def k(y: i32[N], n: i32):
    # y[0] = n, counted
    with grid(1, threads=32) as bx:
        c = 0
        for i in range(n):
            c = c + 1
        y[0] = c
"""


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_a_body_that_raises_the_stop_runs_the_first_stop_s_iterations(target):
    y = np.zeros(5, np.int32)
    tlc.compile_source(RAISED, target=target).kernels["k"](y)
    assert y[0] == 5


def test_the_cuda_loop_compares_with_the_stop_taken_before_it():
    cu = generated_source(RAISED).source
    assert "{ const auto tl_stop_i = n;\n" in cu and "for (int i = 0; i < tl_stop_i; i += 1) {" in cu


def test_an_expression_stop_is_computed_once_and_a_name_s_stays():
    cu = generated_source(DIVIDED).source
    assert "const auto tl_stop_p = " in cu and "for (int p = 0; p < tl_stop_p; p += 1) {" in cu
    assert "for (int i = 0; i < M; i += 1) {" in cu  # a size: nothing to hold
    cu = generated_source(NAMED).source
    assert "tl_stop" not in cu and "for (int i = 0; i < n; i += 1) {" in cu


@pytest.mark.nvcc
@pytest.mark.parametrize("src", [RAISED, DIVIDED], ids=["raised", "divided"])
def test_the_held_stops_compile_without_warnings(src, tmp_path):
    compile_device(generated_source(src, arch="sm_90a").source, "sm_90a", tmp_path)


@pytest.mark.gpu
def test_on_the_gpu_a_body_that_raises_the_stop_runs_the_first_stop_s_iterations():
    y = np.zeros(5, np.int32)
    tlc.compile_source(RAISED, target="cuda").kernels["k"](y)
    assert y[0] == 5
