"""`parallel` bodies, masked control flow, per-thread scalars, local buffers, atomics, print."""
import numpy as np
import pytest

from interp_kit import c, kernel, ld, op, rand, scalar, tensor, v
from tlc.dtypes import DTYPES, F16, F32, I32
from tlc.ir import (Assign, Atomic, Break, Buffer, Call, Cast, Continue, For, If, LetScalar,
                    Parallel, Print, Select, Store)
from tlc.interp import run_kernel

i, bx, n = v("i"), v("bx"), v("n")


def cdiv(a, b):
    return op("//", op("+", a, c(b - 1)), c(b))


@pytest.mark.parametrize("dtype", [F16, F32, DTYPES["bf16"]])
def test_axpy_over_a_ragged_vector(dtype):
    # y[g] = alpha * x[g] + y[g] for g < n, 256 per block; the last block runs past n
    g = op("+", op("*", bx, c(256)), i)
    alpha = v("alpha", dtype)
    body = [Parallel(("i",), (256,), [
        Store("y", (g,), op("+", op("*", alpha, ld("x", g, dtype=dtype)), ld("y", g, dtype=dtype))),
    ])]
    k = kernel([tensor("x", dtype, "n"), tensor("y", dtype, "n"), scalar("alpha", dtype)], body,
               grid=(cdiv(n, 256),))
    rng = np.random.default_rng(0)
    x, y = rand(rng, 1000, dtype), rand(rng, 1000, dtype)
    y0 = y.copy()
    run_kernel(k, dict(x=x, y=y, alpha=1.5))
    # each operation rounds to `dtype`, as `half` arithmetic does on the GPU
    a = dtype.numpy().type(1.5)
    expect = ((a.astype(np.float32) * x.astype(np.float32)).astype(dtype.numpy()).astype(np.float32)
              + y0.astype(np.float32)).astype(dtype.numpy())
    np.testing.assert_array_equal(y, expect)


def test_two_dimensional_parallel_with_broadcast_row_values():
    # out[r, col] = x[r, col] - rowmax[r] where rowmax is a rank-1 fragment read as mx[i]
    r, col = v("r"), v("col")
    body = [
        Parallel(("r",), (8,), [Store("mx", (r,), Cast(r, F32))]),
        Parallel(("r", "col"), (8, 16), [
            Store("out", (r, col), op("-", ld("x", r, col), ld("mx", r))),
        ]),
    ]
    k = kernel([tensor("x", F32, 8, 16), tensor("out", F32, 8, 16)], body,
               [Buffer("mx", "fragment", F32, (8,))])
    x = rand(np.random.default_rng(1), (8, 16), F32)
    out = np.zeros_like(x)
    run_kernel(k, dict(x=x, out=out))
    np.testing.assert_array_equal(out, x - np.arange(8, dtype=np.float32)[:, None])


def test_if_inside_parallel_runs_each_branch_under_its_lanes():
    # y = x * 2 where x > 0 else -x, through a scalar assigned in both branches
    xi = ld("x", i)
    body = [Parallel(("i",), (64,), [
        LetScalar("t", F32, xi),
        If(op(">", xi, c(0.0)), [Assign("t", op("*", v("t", F32), c(2.0)))],
           [Assign("t", Call("abs", (v("t", F32),), F32))]),
        If(op("==", op("%", i, c(7)), c(0)), [Store("y", (i,), c(100.0))],
           [Store("y", (i,), v("t", F32))]),
    ])]
    k = kernel([tensor("x", F32, 64), tensor("y", F32, 64)], body)
    x = rand(np.random.default_rng(2), 64, F32)
    y = np.zeros(64, np.float32)
    run_kernel(k, dict(x=x, y=y))
    expect = np.where(x > 0, x * 2, np.abs(x))
    expect[::7] = 100
    np.testing.assert_array_equal(y, expect)


def _count_loop_body():
    k_ = v("k")
    return [
        If(op("==", op("%", k_, c(3)), c(0)), [Continue()]),
        If(op(">", k_, c(10)), [Break()]),
        Assign("cnt", op("+", v("cnt"), k_)),
    ]


def _count_ref(stop):
    cnt = 0
    for k_ in range(stop):
        if k_ % 3 == 0:
            continue
        if k_ > 10:
            break
        cnt += k_
    return cnt


def test_serial_loop_with_per_lane_bounds_break_and_continue():
    body = [Parallel(("i",), (40,), [
        LetScalar("cnt", I32, c(0)),
        For("k", c(0), i, c(1), "serial", 0, _count_loop_body()),
        Store("out", (i,), v("cnt")),
    ])]
    k = kernel([tensor("out", I32, "n")], body)
    out = np.full(33, -5, np.int32)  # lanes 33..39 store out of range: skipped
    run_kernel(k, dict(out=out))
    assert out.tolist() == [_count_ref(s) for s in range(33)]


def test_uniform_loop_with_break_and_continue_and_a_downward_step():
    body = [LetScalar("cnt", I32, c(0)),
            For("k", c(0), n, c(1), "serial", 0, _count_loop_body()),
            LetScalar("down", I32, c(0)),
            For("d", n, c(0), c(-3), "unroll", 0, [Assign("down", op("+", v("down"), v("d")))]),
            Store("out", (c(0),), v("cnt")), Store("out", (c(1),), v("down"))]
    k = kernel([tensor("out", I32, "n")], body)
    out = np.zeros(20, np.int32)
    run_kernel(k, dict(out=out))
    assert out[:2].tolist() == [_count_ref(20), sum(range(20, 0, -3))]


def test_local_buffer_is_private_to_each_parallel_index():
    # each lane fills its own 4-element local array with x[i] * m, then sums it
    m = v("m")
    body = [Parallel(("i",), (32,), [
        For("m", c(0), c(4), c(1), "unroll", 0, [
            Store("t", (m,), op("*", ld("x", i), Cast(op("+", m, c(1)), F32)))]),
        LetScalar("s", F32, c(0.0)),
        For("m", c(0), c(4), c(1), "serial", 0, [Assign("s", op("+", v("s", F32), ld("t", m)))]),
        Store("y", (i,), v("s", F32)),
    ])]
    k = kernel([tensor("x", F32, 32), tensor("y", F32, 32)], body, [Buffer("t", "local", F32, (4,))])
    x = rand(np.random.default_rng(3), 32, F32)
    y = np.zeros(32, np.float32)
    run_kernel(k, dict(x=x, y=y))
    expect = ((x * 1 + x * 2) + x * 3) + x * 4
    np.testing.assert_allclose(y, expect, rtol=1e-6)


@pytest.mark.parametrize("dtype", [I32, F32])
def test_atomic_add_in_parallel_counts_repeated_indices(dtype):
    # a histogram: many lanes hit the same bin
    g = op("+", op("*", bx, c(128)), i)
    body = [Parallel(("i",), (128,), [
        Atomic("add", "hist", (ld("bins", g, dtype=I32),), Cast(ld("w", g), dtype)),
    ])]
    k = kernel([tensor("bins", I32, "n"), tensor("w", F32, "n"), tensor("hist", dtype, 10)], body,
               grid=(cdiv(n, 128),))
    rng = np.random.default_rng(4)
    bins = rng.integers(-2, 12, 300).astype(np.int32)  # out-of-range bins are skipped
    w = rng.integers(1, 5, 300).astype(np.float32)
    hist = np.ones(10, dtype.numpy())
    run_kernel(k, dict(bins=bins, w=w, hist=hist))
    ok = (bins >= 0) & (bins < 10)
    np.testing.assert_array_equal(hist, 1 + np.bincount(bins[ok], w[ok], minlength=10))


def test_atomic_max_min_and_outside_parallel_once_per_block():
    body = [Atomic("add", "cnt", (c(0),), c(1)),
            Parallel(("i",), (16,), [
                Atomic("max", "mx", (c(0),), ld("x", op("+", op("*", bx, c(16)), i))),
                Atomic("min", "mx", (c(1),), ld("x", op("+", op("*", bx, c(16)), i))),
            ])]
    k = kernel([tensor("x", F32, 64), tensor("mx", F32, 2), tensor("cnt", I32, 1)], body,
               grid=(c(4),))
    x = rand(np.random.default_rng(5), 64, F32)
    mx, cnt = np.array([-100, 100], np.float32), np.zeros(1, np.int32)
    run_kernel(k, dict(x=x, mx=mx, cnt=cnt))
    assert mx.tolist() == [x.max(), x.min()] and cnt[0] == 4


def test_select_and_ragged_loads_read_zero_outside():
    # y[i] = x[i - 2] (0 before the start) if i is even else x[i + 2] (0 past the end)
    even = op("==", op("%", i, c(2)), c(0))
    body = [Parallel(("i",), (10,), [
        Store("y", (i,), Select(even, ld("x", op("-", i, c(2))), ld("x", op("+", i, c(2))), F32))])]
    k = kernel([tensor("x", F32, 10), tensor("y", F32, 10)], body)
    x = rand(np.random.default_rng(6), 10, F32)
    y = np.zeros(10, np.float32)
    run_kernel(k, dict(x=x, y=y))
    pad = np.concatenate([[0, 0], x, [0, 0]]).astype(np.float32)
    expect = np.where(np.arange(10) % 2 == 0, pad[np.arange(10)], pad[np.arange(10) + 4])
    np.testing.assert_array_equal(y, expect)


def test_print_once_per_block_and_once_per_parallel_index(capsys):
    body = [Print("block %d of n=%d\n", (bx, n)),
            Parallel(("i",), (4,), [
                If(op("<", i, c(2)), [Print("  i=%d x=%.2f\n", (i, ld("x", i)), per_thread=True)]),
            ])]
    k = kernel([tensor("x", F32, "n")], body, grid=(c(2),))
    x = np.array([1.25, -2.5, 3, 4], np.float32)
    run_kernel(k, dict(x=x))
    assert capsys.readouterr().out == (
        "block 0 of n=4\n  i=0 x=1.25\n  i=1 x=-2.50\n"
        "block 1 of n=4\n  i=0 x=1.25\n  i=1 x=-2.50\n")


def test_scalar_params_shape_symbols_and_block_indices_as_values():
    body = [Parallel(("i",), (4,), [
        Store("out", (bx, i), op("+", op("*", v("M"), c(1000)),
                                 op("+", op("*", bx, c(10)), op("+", i, v("s"))))),
    ])]
    k = kernel([tensor("out", I32, "M", 4), scalar("s", I32)], body, grid=(v("M"),))
    out = np.zeros((3, 4), np.int32)
    run_kernel(k, dict(out=out, s=100))
    assert out.tolist() == [[3000 + 10 * b + i_ + 100 for i_ in range(4)] for b in range(3)]
