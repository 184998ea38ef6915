"""Kernel structure on the GPU (issue 20 item 7): names assigned once from constants size
buffers and loops (with K specialized through one of them), values computed before the grid,
against NumPy on ragged shapes."""
from pathlib import Path

import numpy as np
import pytest

import tlc

pytestmark = pytest.mark.gpu

SOURCE = (Path(__file__).resolve().parents[1] / "programs" / "kernel_structure.tl").read_text()


@pytest.fixture(scope="module")
def module():
    return tlc.compile_source(SOURCE, target="cuda", path="kernel_structure.tl")


@pytest.mark.parametrize("m,k", [(9, 40), (130, 64), (1, 96)])
def test_constants_computed_in_the_kernel(module, m, k):
    x = np.random.default_rng(m).standard_normal((m, k)).astype(np.float32)
    y = np.zeros_like(x)
    module.scale_rows(x, y)
    np.testing.assert_array_equal(y, 2 * x)


@pytest.mark.parametrize("m,k", [(7, 70), (513, 5), (64, 64)])
def test_values_computed_before_the_grid(module, m, k):
    x = np.random.default_rng(k).standard_normal((m, k)).astype(np.float32)
    y = np.zeros(m, np.float32)
    module.row_sums(x, y)
    np.testing.assert_allclose(y, x.sum(axis=1), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("m,n", [(5, 300), (200, 64), (3, 1000)])
def test_two_grids_run_in_order_on_one_stream(module, m, n):
    import cupy

    x = np.random.default_rng(n).standard_normal((m, n)).astype(np.float32)
    s = -(-n // 64)
    partial, out = cupy.zeros((m, s), cupy.float32), cupy.zeros(m, cupy.float32)
    module.split_sum(cupy.asarray(x), partial, out)
    np.testing.assert_allclose(out.get(), x.sum(axis=1), rtol=1e-4, atol=1e-4)
    out_np = np.zeros(m, np.float32)  # NumPy arrays: each launch copies in and back
    module.split_sum(x, np.zeros((m, s), np.float32), out_np)
    np.testing.assert_allclose(out_np, x.sum(axis=1), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("m,n", [(5, 1000), (300, 64), (2, 1)])
def test_a_workspace_between_two_grids(module, m, n):
    import cupy

    x = np.random.default_rng(m + n).standard_normal((m, n)).astype(np.float32)
    out = cupy.zeros(m, cupy.float32)
    module.split_sum_ws(cupy.asarray(x), out)
    np.testing.assert_allclose(out.get(), x.sum(axis=1), rtol=1e-4, atol=1e-4)


def test_a_region_between_named_bounds(module):
    x = np.random.default_rng(5).standard_normal((33, 1000)).astype(np.float32)
    y = np.zeros_like(x)
    module.copy_by_chunks(x, y)
    np.testing.assert_array_equal(x, y)
