"""Layout inference (schedule/layout_infer.py, issue #17): loops written over a fragment's
non-unit dimensions run in its layout, a loop's layout is the one needing the fewest
exchanges, copies between fragments share a layout (or exchange where two fixed layouts meet),
one-element fragments and reductions into one are read as scalars anywhere, E260/E261 where a
read needs other threads' data; --emit ir shows each exchange with the access that forced it."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import tlc
from tlc import ir
from tlc.codegen import generate
from tlc.ir.printer import print_kernel
from tlc.ir.walk import statements
from tlc.schedule.layout import Blocked, Replicated
from kit import program, schedule_error, scheduled

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "codegen"))  # nvcc.py, the shared compile helper
from nvcc import compile_device  # noqa: E402

PROGRAMS = Path(__file__).resolve().parents[1] / "programs"

# The kernel, as a new user writes it from docs/LANGUAGE.md.
SOFTMAX_ROW = """
@kernel
def softmax(x: f16[M, N], y: f16[M, N], BN: const = 8192):
    with grid(M, threads=256) as r:
        row = fragment(f32[1, BN])
        mx = fragment(f32[1])
        sm = fragment(f32[1])
        copy(x[r, 0], row)
        reduce_max(row, mx, dim=1)
        for j in parallel(BN):
            row[0, j] = exp(row[0, j] - mx[0])
        reduce_sum(row, sm, dim=1)
        for j in parallel(BN):
            row[0, j] = row[0, j] / sm[0]
        copy(row, y[r, 0])
"""


def loops(kernel):
    return [s for s in statements(kernel.body) if isinstance(s, ir.Parallel)]


def test_a_loop_over_the_rows_columns_runs_in_the_copys_layout():
    k = scheduled(SOFTMAX_ROW, "softmax")
    text = print_kernel(k)
    assert "fragment row: f32[1, 8192] layout=blocked(vec=8, threads=256)" in text
    # (its exp in the fast form: the values end in f16, fast_math.py)
    assert "  for u0, j in parallel(1, 8192):\n    row[u0, j] = fast_exp2((row[u0, j] - mx[u0]) * 1.4426950408889634)\n" in text
    assert all(str(p.layout) == "blocked(vec=8, threads=256)" and not p.exchange for p in loops(k))
    source = generate(k, "sm_80").source
    assert "exchange" not in source.split("__global__")[-1]
    assert "mx[tl_softmax_layout_1::slot(tl_r)]" in source


def load(src: str, tmp_path):
    path = tmp_path / "s.tl"
    path.write_text(src)
    return tlc.load(str(path), target="cpu")


def test_the_lift_keeps_the_interpreters_result(tmp_path):
    x = np.random.default_rng(0).standard_normal((3, 512)).astype(np.float16)  # (no mask: N = BN)
    y = np.full((3, 512), np.nan, np.float16)
    load(SOFTMAX_ROW, tmp_path).softmax(x, y, BN=512)
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    assert np.abs(y - e / e.sum(axis=1, keepdims=True)).max() < 2e-3


SCALARS = """
@kernel
def k(X: f32[M, N], Y: f32[M, N], BN: const = 1024):
    with grid(M, threads=128) as r:
        row = fragment(f32[1, BN])
        ss = fragment(f32[1])
        total = fragment(f32[1])
        copy(X[r, 0], row)
        reduce_sum(row, ss, dim=1)
        for i in parallel(1):
            total[i] = ss[i] * 2.0
        inv = 1.0 / (ss[0] + total[0])
        for i, j in parallel(1, BN):
            row[i, j] = row[i, j] * inv + total[i]
        copy(row, Y[r, 0])
"""


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_reductions_and_one_element_fragments_read_as_scalars(arch):
    k = scheduled(SCALARS, "k", target=arch)
    assert isinstance(k.buffer("ss").layout, Replicated)  # 1024 / 4 runs: every thread holds the row
    assert k.buffer("total").layout == k.buffer("ss").layout
    assert not any(p.exchange for p in loops(k))
    source = generate(k, arch).source
    assert "inv = (1.0f / (ss[0] + total[0]));" in source


def test_a_reduction_into_one_element_that_not_every_thread_sees_finishes_into_every_thread():
    k = scheduled(SCALARS, "k", {"BN": 64})  # 16 runs of 4: threads 16..127 hold none of the row
    assert str(k.buffer("ss").layout) == str(k.buffer("total").layout) == "in every thread (threads=128)"
    assert not any(p.exchange for p in loops(k))
    assert "tl::reduce_finish_fragment" in generate(k, "sm_80").source


@pytest.mark.parametrize("bn", [1024, 64])
def test_scalar_reads_on_the_interpreter(bn, tmp_path):
    x = np.random.default_rng(1).standard_normal((3, 50)).astype(np.float32)
    y = np.full((3, 50), np.nan, np.float32)
    load(SCALARS, tmp_path).k(x, y, BN=bn)
    ss = x.astype(np.float64).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(y, x / (3 * ss) + 2 * ss, rtol=1e-4)


E260_SPREAD = """
@kernel
def k(X: f32[N], Y: f32[N]):
    with grid(1, threads=128) as bx:
        f = fragment(f32[512])
        copy(X[0], f)
        x = f[3]
        for i in parallel(512):
            f[i] = f[i] + x
        copy(f, Y[0])
"""


def test_e260_an_element_one_thread_holds():
    assert schedule_error(E260_SPREAD, "k") == (
        "s.tl:7:13: error[E260]: f[3] is read outside a parallel loop, but its layout blocked(vec=4, threads=128) "
        "spreads it over the threads, so one thread holds f[3]\n"
        "  |\n7 |         x = f[3]\n  |             ^^^^\n"
        "  = hint: reduce it into a fragment whose every thread holds the result (reduce_sum(f, total, dim=...) into "
        "`total = fragment(f32[1])`) and read total[0], or read it inside a parallel loop")


E260_SOME = """
@kernel
def k(X: f32[M, N], Y: f32[M], BM: const = 4, BN: const = 32):
    with grid(1, threads=128) as bx:
        t = fragment(f32[BM, BN])
        s = fragment(f32[BM])
        copy(X[0, 0], t)
        reduce_sum(t, s, dim=1)
        x = s[0]
        for i in parallel(BM):
            s[i] = s[i] + x
        copy(s, Y[0])
"""


def test_e260_a_reduction_that_only_some_threads_hold():
    assert schedule_error(E260_SOME, "k") == (
        "s.tl:9:13: error[E260]: s[0] is read outside a parallel loop, but it is replicated over only the threads "
        "that held its source (replicated(blocked(vec=4, threads=128), dropped=[1])), so not every thread holds s[0]\n"
        "  |\n9 |         x = s[0]\n  |             ^^^^\n"
        "  = hint: give the reduction a source that every thread holds part of (a row of at least threads x "
        "vector-width elements), or read it inside a parallel loop")


# E261, and a reduction into one element read at a run-time index (no longer E261: the one
# index in range is held by every thread): tests/schedule/test_fragment_scalars.py.


def test_an_exchange_is_shown_with_the_access_that_forced_it():
    k = scheduled((PROGRAMS / "transpose_fragments.tl").read_text(), "transpose")
    assert ("  # exchange b through shared memory: this loop runs in blocked(vec=4, threads=128); other threads "
            "hold b[j, i] (b: blocked(vec=4, threads=128))\n  for i, j in parallel(32, 32):\n") in print_kernel(k)
    (loop,) = loops(k)
    assert loop.exchange == (("b", True),)
    # (regression: b[j, i] in a loop over (i, j) was laid out as a replica over no dimension, an IndexError)
    assert isinstance(k.buffer("b").layout, Blocked)
    assert "tl::exchange_f2s<" in generate(k, "sm_80").source


# Two gemm accumulators of one shape that sm_90a lays out differently: wgmma's (a warp per 16
# rows) and, for a gemm wgmma does not take (K of 32: its rows half a 128-byte segment),
# mma.sync's (2 x 2 warps).
TWO_ACCUMULATORS = """
@kernel
def k(A: f16[64, 64], At: f16[64, 32], B: f16[64, 64], Bt: f16[32, 64], C: f32[64, 64], D: f32[64, 64]):
    with grid(1, threads=128) as bx:
        As = shared(f16[64, 64])
        Ats = shared(f16[64, 32])
        Bs = shared(f16[64, 64])
        Bts = shared(f16[32, 64])
        acc = fragment(f32[64, 64])
        other = fragment(f32[64, 64])
        third = fragment(f32[64, 64])
        copy(A[0, 0], As)
        copy(At[0, 0], Ats)
        copy(B[0, 0], Bs)
        copy(Bt[0, 0], Bts)
        clear(acc)
        clear(other)
        clear(third)
        gemm(As, Bs, acc)
        gemm(Ats, Bts, other)
        gemm(Ats, Bts, third)
        for i, j in parallel(64, 64):
            acc[i, j] = other[i, j] + third[i, j]
        copy(acc, C[0, 0])
        copy(acc, other)
        copy(other, D[0, 0])
"""


def test_a_loop_runs_in_the_layout_needing_fewest_exchanges():
    k = scheduled(TWO_ACCUMULATORS, "k", target="sm_90a")
    acc, other = k.buffer("acc").layout, k.buffer("other").layout
    assert acc != other and other == k.buffer("third").layout
    (loop,) = loops(k)
    assert loop.layout == other and loop.exchange == (("acc", True),)  # one exchange, not two


@pytest.mark.nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_copy_between_fragments_exchanges_only_where_layouts_differ(arch, tmp_path):
    k = scheduled(TWO_ACCUMULATORS, "k", target=arch)
    text = print_kernel(k)
    source = generate(k, arch).source
    if arch == "sm_90a":
        assert "  # exchange acc -> other through shared memory: mma_acc(warps=4x1, warp_tile=16x64) -> " \
               "mma_acc(warps=2x2, warp_tile=32x32)\n  copy acc -> other\n" in text
        assert "// exchange acc -> other through shared memory" in source
    else:  # one layout for all three: the copy stays in each thread's registers
        assert "exchange" not in text and "tl::exchange_" not in source
    compile_device(source, arch, tmp_path)


def test_two_accumulators_on_the_interpreter(tmp_path):
    r = np.random.default_rng(2)
    a, b = (r.standard_normal((64, 64)).astype(np.float16) for _ in range(2))
    at, bt = r.standard_normal((64, 32)).astype(np.float16), r.standard_normal((32, 64)).astype(np.float16)
    c, d = np.full((64, 64), np.nan, np.float32), np.full((64, 64), np.nan, np.float32)
    load(TWO_ACCUMULATORS, tmp_path).k(a, at, b, bt, c, d)
    ref = 2 * at.astype(np.float64) @ bt.astype(np.float64)
    np.testing.assert_allclose(c, ref, rtol=1e-3, atol=1e-3)
    np.testing.assert_array_equal(d, c)


CAST = """
@kernel
def k(A: f16[64, 32], B: f16[32, 64], C: f16[64, 64]):
    with grid(1, threads=128) as bx:
        As = shared(f16[64, 32])
        Bs = shared(f16[32, 64])
        acc = fragment(f32[64, 64])
        half = fragment(f16[64, 64])
        copy(A[0, 0], As)
        copy(B[0, 0], Bs)
        clear(acc)
        gemm(As, Bs, acc)
        copy(acc, half)
        copy(half, C[0, 0])
"""


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_a_cast_copy_between_fragments_takes_one_layout(arch):
    k = scheduled(CAST, "k", target=arch)
    assert k.buffer("half").layout == k.buffer("acc").layout
    source = generate(k, arch).source
    assert "tl::exchange_" not in source and "half_[tl_r] = tl::cvt<half>(acc[tl_r]);" in source  # (half_: the C name)


RMS_IN_LOOP = """
@kernel
def rms(x: f16[M, N], y: f16[M, N], BN: const = 8192):
    with grid(M, threads=256) as r:
        row = fragment(f32[1, BN])
        sq = fragment(f32[1, BN])
        ss = fragment(f32[1])
        copy(x[r, 0], row)
        for i, j in parallel(1, BN):
            sq[i, j] = row[i, j] * row[i, j]
        reduce_sum(sq, ss, dim=1)
        for i, j in parallel(1, BN):
            row[i, j] = row[i, j] * rsqrt(ss[0] / N + 1e-6)
        copy(row, y[r, 0])
"""


def test_a_reduction_read_at_a_constant_index_inside_a_loop_needs_no_exchange():
    k = scheduled(RMS_IN_LOOP, "rms")
    assert not any(p.exchange for p in loops(k))
    # (the row held in f16 and 1 / N computed once: narrow_fragments.py, fast_math.py)
    source = generate(k, "sm_80").source
    assert "float rcp0 = (1.0f / tl::cvt<float>(N));" in source
    assert "row[tl_r] = tl::cvt<half>((tl::cvt<float>(row[tl_r]) * rsqrtf(((ss[0] * rcp0) + 1e-06f))));" in source


@pytest.mark.nvcc
def test_an_exchange_copy_builds_for_sm_80_too(tmp_path):
    """sm_80 lays both accumulators out alike, so the exchange of a copy between fragments is
    forced here: `other` and `third` re-laid in vector runs (any layout is correct for the
    code generator), the loops annotated again."""
    from dataclasses import replace

    from tlc.schedule.layout import blocked
    from tlc.schedule.layout_infer import annotate_loops

    k = scheduled(TWO_ACCUMULATORS, "k", target="sm_80")
    runs = blocked((64, 64), k.buffer("other").dtype, k.threads)
    k = annotate_loops(replace(k, buffers=tuple(replace(b, layout=runs) if b.name in ("other", "third") else b
                                                for b in k.buffers)))
    assert "  # exchange acc -> other through shared memory: mma_acc(warps=2x2, warp_tile=32x32) -> " \
           "blocked(vec=4, threads=128)\n" in print_kernel(k)
    source = generate(k, "sm_80").source
    assert "tl::exchange_f2s<" in source and "tl::exchange_s2f<" in source
    compile_device(source, "sm_80", tmp_path)


COPIED_STATISTIC = """
@kernel
def k(X: f32[M, N], S: f32[M], Y: f32[M, N], BN: const = 64):
    with grid(M, threads=128) as r:
        row = fragment(f32[1, BN])
        ss = fragment(f32[1])
        copy(X[r, 0], row)
        reduce_sum(row, ss, dim=1)
        copy(ss, S[r])
        inv = 1.0 / ss[0]
        for i, j in parallel(1, BN):
            row[i, j] = row[i, j] * inv
        copy(row, Y[r, 0])
"""


def test_a_statistic_copied_out_and_read_as_a_scalar(tmp_path):
    """A row of 64 over 128 threads: its sum is laid out in every thread (the copy out writes
    it once), so ss[0] reads as a scalar; on the interpreter, the same numbers as NumPy."""
    k = scheduled(COPIED_STATISTIC, "k")
    assert str(k.buffer("ss").layout) == "in every thread (threads=128)"
    x = np.random.default_rng(5).standard_normal((3, 50)).astype(np.float32) + 2
    s, y = np.full(3, np.nan, np.float32), np.full((3, 50), np.nan, np.float32)
    load(COPIED_STATISTIC, tmp_path).k(x, s, y)
    np.testing.assert_allclose(s, x.sum(axis=1), rtol=1e-5)
    np.testing.assert_allclose(y, x / x.sum(axis=1, keepdims=True), rtol=1e-5)


@pytest.mark.nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_a_statistic_copied_out_builds(arch, tmp_path):
    compile_device(generate(scheduled(COPIED_STATISTIC, "k", target=arch), arch).source, arch, tmp_path)
