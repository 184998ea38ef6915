"""views.copy_as_region: a copy between a view of a tensor and a whole fragment is a copy of the
tensor's memory in the view's shape (`Region.dims`), which the code generator moves as any
tensor's (tl::copy_g2f / copy_f2g: 16-byte vectors where the view's rows are aligned) and the
interpreter by reshaping the array; other copies with a view on a side stay element loops.
std.data's gather is the case (its indices and result as rows of [A, K * C])."""
from __future__ import annotations

import numpy as np
import pytest

import tlc
from tlc.codegen import generate
from tlc.ir import print_kernel

from kit import scheduled

ROWS = """
@kernel
def scale(x: f16[A, K, C], y: f16[A, K, C], BLOCK: const = 256):
    x_rows = view(x, f16[A, K * C])
    y_rows = view(y, f16[A, K * C])
    with grid(A * cdiv(K * C, BLOCK), threads=32) as bx:
        a = bx // cdiv(K * C, BLOCK)
        g0 = bx % cdiv(K * C, BLOCK) * BLOCK
        t = fragment(f32[BLOCK])
        copy(x_rows[a, g0], t)
        for e in parallel(BLOCK):
            t[e] = t[e] * 2.0 + 1.0
        copy(t, y_rows[a, g0])

@kernel
def staged(x: f16[A, K, C], y: f16[A, K, C], BLOCK: const = 256):
    x_rows = view(x, f16[A, K * C])
    y_rows = view(y, f16[A, K * C])
    with grid(A * cdiv(K * C, BLOCK), threads=32) as bx:
        a = bx // cdiv(K * C, BLOCK)
        g0 = bx % cdiv(K * C, BLOCK) * BLOCK
        s = shared(f16[BLOCK])
        copy(x_rows[a, g0], s)
        copy(s, y_rows[a, g0])
"""


def test_a_view_copy_into_a_fragment_is_a_region_in_the_views_shape():
    k = scheduled(ROWS, "scale", target="sm_90a")
    text = print_kernel(k)
    assert "x as [A, K * C][a, g0]<1, 256> -> t" in text and "copy t -> y as [A, K * C][a, g0]<1, 256>" in text
    src = generate(k, "sm_90a").source
    body = src[src.index("__global__"):]
    assert "tl::copy_g2f<" in body and "(t, x, ((K * C)), (A), ((K * C)), a, g0)" in body
    assert "tl::copy_f2g<" in body and "(y, t, ((K * C)), (A), ((K * C)), a, g0)" in body


def test_a_view_copy_through_shared_memory_stays_an_element_loop():
    text = print_kernel(scheduled(ROWS, "staged", target="sm_90a"))
    assert " as [" not in text and "parallel" in text


@pytest.mark.parametrize("target", ["interp", "cpp"])
def test_the_interpreter_and_the_cpu_target_read_and_write_the_views_rows(target):
    mod = tlc.compile_source(ROWS, target=target, path="rows.tl")
    rng = np.random.default_rng(3)
    for shape in [(3, 37, 5), (2, 256, 1), (5, 1, 300)]:  # rows of 185, 256, 300: a partial last tile
        x = rng.standard_normal(shape).astype(np.float16)
        for name in ("scale", "staged"):
            y = np.zeros_like(x)
            getattr(mod, name)(x, y)
            want = (x.astype(np.float32) * 2 + 1).astype(np.float16) if name == "scale" else x
            np.testing.assert_array_equal(y, want, err_msg=f"{name} {shape} on {target}")
