"""Programs named like C run on the GPU as the interpreter runs them: the issue's cases (#16)
and kernels whose every name is reserved in C, a `_` twin of one or a C spelling (names_kit)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tlc
from names_kit import INLINED, ONE_SCALAR, REGRESSIONS, from_names, pool

pytestmark = pytest.mark.gpu


def run(src: str, kernel: str, target: str, xs: np.ndarray, *scalars) -> np.ndarray:
    out = xs.copy()
    tlc.compile_source(src, target=target).kernels[kernel](out, *scalars)
    return out


def agree(src: str, kernel: str, scalars: int) -> np.ndarray:
    xs = np.random.default_rng(5).standard_normal(300).astype(np.float32)
    values = [0.25 * (k + 1) for k in range(scalars)]
    want, got = run(src, kernel, "cpu", xs, *values), run(src, kernel, "cuda", xs, *values)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    return want


def test_issue_repro_computes_2x_plus_half_():
    xs = np.arange(300, dtype=np.float32)
    src = ONE_SCALAR.format(t="xs", a="half_", b="half")
    np.testing.assert_allclose(run(src, "k", "cuda", xs, 7.0), 2 * xs + 7.0)
    agree(src, "k", 1)


def test_issue_cases_agree():
    xs = np.random.default_rng(1).standard_normal(300).astype(np.float32)
    for kernel, scalars in (("K", (0.5, 1.5, 2.5, 3.5)), ("launch_K", (3.0,)), ("ünïcode", (2.0, 100.0))):
        want = run(REGRESSIONS, kernel, "cpu", xs, *scalars)
        np.testing.assert_allclose(run(REGRESSIONS, kernel, "cuda", xs, *scalars), want, rtol=1e-5, atol=1e-5)


def test_inlined_names_agree():
    xs = np.random.default_rng(2).standard_normal(300).astype(np.float32)
    ys = np.zeros_like(xs)
    want, got = ys.copy(), ys.copy()
    tlc.compile_source(INLINED, target="cpu").kernels["k"](xs, want)
    tlc.compile_source(INLINED, target="cuda").kernels["k"](xs, got)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_allclose(got, xs * 2 + 1 + xs + 100, rtol=1e-5)


def test_a_kernel_of_every_pooled_name_agrees():
    src, kernel, scalars = from_names(list(pool()))
    agree(src, kernel, scalars)


@settings(derandomize=True, max_examples=10, deadline=None)
@given(st.lists(st.sampled_from(pool()), min_size=8, max_size=80, unique=True))
def test_kernels_of_drawn_names_agree(names):
    agree(*from_names(names))
