"""Fragment elements and scalars outside parallel loops (schedule/fragment_scalars.py,
typecheck/scalar_tiles.py; issue #20's MLA, mamba and block-sparse ports, issue #17's "a
replicated fragment reads as a scalar anywhere"): a small one-dimensional fragment read at a
run-time index or written outside a parallel loop is held whole in every thread (--emit ir shows
it and why); a fragment that a gemm or reduction spreads over the threads, or one past the
register budget, stays E059 / E261 with the reason; clear() and fill() of a scalar variable
(TileLang's T.alloc_var) assign it."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import tlc
from tlc import ir
from tlc.codegen import generate, generate_file
from tlc.ir.printer import print_kernel
from tlc.ir.walk import statements
from tlc.schedule.layout import everywhere
from kit import program, schedule_error, scheduled

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "codegen"))  # nvcc.py, the shared compile helper
from nvcc import BUILD_ARCHS, compile_device  # noqa: E402

# A mask of NB column blocks read at a run-time index in a serial loop (block-sparse
# attention's `if block_mask[k]:`), weights written outside parallel at run-time and constant
# indices (mamba's `dA_cs_last[0] = ...`) and read in a loop over another fragment, and a
# scalar cleared and filled (MLA's T.alloc_var).
MASKED = """
@kernel
def masked_sum(X: f32[M, N], Mask: i8[NB], Y: f32[M, BN], W: f32[NB], BM: const = 16, BN: const = 32,
               NB: const = 4):
    with grid(cdiv(M, BM), threads=128) as bx:
        mask = fragment(i8[NB])
        weight = fragment(f32[NB])
        tile = fragment(f32[BM, BN])
        acc = fragment(f32[BM, BN])
        total: f32 = 5.0
        scale: f32 = 0.0
        clear(total)
        fill(scale, 2.0)
        copy(Mask[0], mask)
        fill(acc, 0)
        for k in range(NB):
            weight[k] = f32(k + 1) * scale
            if mask[k] != 0:
                copy(X[bx * BM, k * BN], tile)
                for i, j in parallel(BM, BN):
                    acc[i, j] += tile[i, j] * weight[k]
                total += weight[k]
        weight[0] = total
        for i, j in parallel(BM, BN):
            acc[i, j] = acc[i, j] / weight[0]
        copy(acc, Y[bx * BM, 0])
        copy(weight, W[0])
"""

# A write into a fragment held whole from a loop that runs in another layout (that of the two
# row statistics of a gemm accumulator it reads): only a loop over the replicas writes every
# one, so the write goes through shared memory.
WRITE_IN_ANOTHER_LAYOUT = """
@kernel
def row_stats(A: f16[M, 32], B: f16[32, 32], Y: f32[M]):
    with grid(cdiv(M, 32), threads=128) as bx:
        As = shared(f16[32, 32])
        Bs = shared(f16[32, 32])
        acc = fragment(f32[32, 32])
        lo = fragment(f32[32])
        hi = fragment(f32[32])
        w = fragment(f32[32])
        copy(A[bx * 32, 0], As)
        copy(B[0, 0], Bs)
        clear(acc)
        gemm(As, Bs, acc)
        reduce_min(acc, lo, dim=1)
        reduce_max(acc, hi, dim=1)
        for i in parallel(32):
            w[i] = hi[i] - lo[i]
        for k in range(32):
            Y[bx * 32 + k] = w[k]
"""


# A reduction into one element read at a run-time index: the only index in range is 0, which
# every thread holds.
ONE_ELEMENT_AT_A_RUN_TIME_INDEX = """
@kernel
def row_sum(X: f32[M, 512], Y: f32[M]):
    with grid(M, threads=128) as bx:
        row = fragment(f32[1, 512])
        ss = fragment(f32[1])
        copy(X[bx, 0], row)
        reduce_sum(row, ss, dim=1)
        x = 0.0
        for t in range(1):
            x = x + ss[t]
        Y[bx] = x
"""

# An update at a constant index, and run-time indices outside the fragment: a read gives 0, a
# write does nothing.
OUT_OF_RANGE = """
@kernel
def edge(Y: f32[1], n: i32):
    with grid(1, threads=32) as bx:
        f = fragment(f32[4])
        fill(f, 1.0)
        f[0] += 2.0
        f[n] = 5.0
        Y[0] = f[n] + f[n - 1]
"""

KERNELS = [(MASKED, "masked_sum"), (WRITE_IN_ANOTHER_LAYOUT, "row_stats"), (ONE_ELEMENT_AT_A_RUN_TIME_INDEX, "row_sum"),
           (OUT_OF_RANGE, "edge")]
EDGES = {1: 8.0, 2: 6.0, 4: 1.0, 6: 0.0, -1: 0.0}  # n -> Y[0]


def load(src: str, tmp_path, target="cpu", name="s"):
    path = tmp_path / f"{name}.tl"
    path.write_text(src)
    return tlc.load(str(path), target=target)


def masked_inputs(M=37, NB=4, BN=32, seed=0):
    r = np.random.default_rng(seed)
    x = r.standard_normal((M, NB * BN)).astype(np.float32)
    mask = np.array([1, 0, 1, 1][:NB], np.int8)
    return x, mask, np.full((M, BN), np.nan, np.float32), np.full(NB, np.nan, np.float32)


def masked_reference(x, mask, NB=4, BN=32):
    weight = 2.0 * np.arange(1, NB + 1)
    total = (weight * mask).sum()
    y = sum(weight[k] * x[:, k * BN:(k + 1) * BN].astype(np.float64) for k in range(NB) if mask[k]) / total
    return y, np.concatenate([[total], weight[1:]])


def row_stats_inputs(M=45):
    r = np.random.default_rng(1)
    return (r.standard_normal((M, 32)).astype(np.float16), r.standard_normal((32, 32)).astype(np.float16),
            np.full(M, np.nan, np.float32))


def row_stats_reference(a, b):
    c = a.astype(np.float64) @ b.astype(np.float64)
    return c.max(1) - c.min(1)


def test_a_fragment_used_as_a_scalar_is_held_whole_in_every_thread():
    k = scheduled(MASKED, "masked_sum")
    assert k.buffer("mask").layout == everywhere(128, 4) and k.buffer("weight").layout == everywhere(128, 4)
    text = print_kernel(k)
    assert "  fragment mask: i8[4] layout=whole in every thread (4 elements, threads=128)\n" in text
    assert ("  # note: fragment mask is held whole in every thread (4 x i8, 4 bytes a thread): mask[k] is read "
            "outside a parallel loop at line 18\n") in text
    assert ("  # note: fragment weight is held whole in every thread (4 x f32, 16 bytes a thread): weight[k] is "
            "written outside a parallel loop at line 17\n") in text
    assert not any(p.exchange for p in statements(k.body) if isinstance(p, ir.Parallel))


def test_held_whole_in_the_generated_code():
    source = generate(scheduled(MASKED, "masked_sum"), "sm_80").source
    assert "tl::copy_g2f<" in source  # the copy loads the mask whole into every thread
    assert "weight[k] = (tl::cvt<float>((k + 1)) * scale);" in source  # k < NB: no guard needed
    assert "if ((mask[k] != static_cast<signed char>(0))) {" in source
    assert "weight[0] = total;" in source and "total = 0.0f;" in source


@pytest.mark.parametrize("M", [37, 16])
def test_held_whole_on_the_interpreter(M, tmp_path):
    x, mask, y, w = masked_inputs(M)
    load(MASKED, tmp_path).masked_sum(x, mask, y, w)
    ref_y, ref_w = masked_reference(x, mask)
    np.testing.assert_allclose(y, ref_y, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(w, ref_w, rtol=1e-6)


def test_a_write_from_a_loop_in_another_layout_is_exchanged(tmp_path):
    k = scheduled(WRITE_IN_ANOTHER_LAYOUT, "row_stats")
    assert k.buffer("w").layout == everywhere(128, 32)
    (loop,) = [s for s in statements(k.body) if isinstance(s, ir.Parallel)]
    assert loop.layout == k.buffer("hi").layout and loop.exchange == (("w", True),)
    a, b, y = row_stats_inputs()
    load(WRITE_IN_ANOTHER_LAYOUT, tmp_path).row_stats(a, b, y)
    np.testing.assert_allclose(y, row_stats_reference(a, b), rtol=1e-4)


def test_one_element_at_a_run_time_index(tmp_path):
    k = scheduled(ONE_ELEMENT_AT_A_RUN_TIME_INDEX, "row_sum")
    assert "x = (x + ss[0]);" in generate(k, "sm_80").source
    x = np.random.default_rng(2).standard_normal((3, 512)).astype(np.float32)
    y = np.full(3, np.nan, np.float32)
    load(ONE_ELEMENT_AT_A_RUN_TIME_INDEX, tmp_path).row_sum(x, y)
    np.testing.assert_allclose(y, x.astype(np.float64).sum(1), rtol=1e-5)


def test_an_index_outside_a_fragment_held_whole(tmp_path):
    source = generate(scheduled(OUT_OF_RANGE, "edge"), "sm_80").source
    assert "if (n >= 0 && n < 4) f[n] = 5.0f;" in source
    assert "(((n >= 0 && n < 4) ? f[n] : 0.0f) + (((n - 1) >= 0 && (n - 1) < 4) ? f[(n - 1)] : 0.0f))" in source
    edge = load(OUT_OF_RANGE, tmp_path).edge
    for n, want in EDGES.items():
        y = np.full(1, np.nan, np.float32)
        edge(y, n)
        assert y[0] == want, n


@pytest.mark.nvcc
@pytest.mark.parametrize("arch", BUILD_ARCHS)
def test_fragments_used_as_scalars_build(arch, tmp_path):
    kernels = [scheduled(src, name, target=arch) for src, name in KERNELS]
    compile_device(generate_file(kernels, arch), arch, tmp_path)


@pytest.mark.gpu
def test_fragments_used_as_scalars_on_the_gpu(tmp_path):
    x, mask, y, w = masked_inputs(37)
    load(MASKED, tmp_path, "cuda", "a").masked_sum(x, mask, y, w)
    ref_y, ref_w = masked_reference(x, mask)
    np.testing.assert_allclose(y, ref_y, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(w, ref_w, rtol=1e-6)
    a, b, y = row_stats_inputs()
    load(WRITE_IN_ANOTHER_LAYOUT, tmp_path, "cuda", "b").row_stats(a, b, y)
    np.testing.assert_allclose(y, row_stats_reference(a, b), rtol=1e-4)
    x = np.random.default_rng(2).standard_normal((3, 512)).astype(np.float32)
    y = np.full(3, np.nan, np.float32)
    load(ONE_ELEMENT_AT_A_RUN_TIME_INDEX, tmp_path, "cuda", "c").row_sum(x, y)
    np.testing.assert_allclose(y, x.astype(np.float64).sum(1), rtol=1e-5)
    edge = load(OUT_OF_RANGE, tmp_path, "cuda", "d").edge
    for n, want in EDGES.items():
        y = np.full(1, np.nan, np.float32)
        edge(y, n)
        assert y[0] == want, n


# ---- what stays an error ------------------------------------------------------------------------

E059_ACCUMULATOR = """
@kernel
def k(A: f16[64, 64], C: f32[64, 64]):
    with grid(1, threads=128) as bx:
        As = shared(f16[64, 64])
        acc = fragment(f32[64, 64])
        copy(A[0, 0], As)
        clear(acc)
        gemm(As, As, acc)
        acc[0, 0] = 1.0
        copy(acc, C[0, 0])
"""


def test_e059_a_gemm_accumulator_written_outside_parallel():
    assert schedule_error(E059_ACCUMULATOR, "k") == (
        "s.tl:10:9: error[E059]: acc[0, 0] is written outside a parallel loop, but the fragment 'acc' is spread over "
        "the threads (mma_acc(warps=2x2, warp_tile=32x32)): it is an operand of a gemm, which lays it out over the "
        "threads\n"
        "   |\n10 |         acc[0, 0] = 1.0\n   |         ^^^^^^^^^^^^^^^\n"
        "  = hint: write it inside `for ... in parallel(64, 64)`, or set every element with fill(...); a fragment of "
        "one dimension that no gemm or reduction lays out, up to 512 bytes, is held whole in every thread and "
        "written anywhere")


E261_OVER_BUDGET = """
@kernel
def k(X: f32[N], Y: f32[N]):
    with grid(1, threads=128) as bx:
        f = fragment(f32[512])
        copy(X[0], f)
        x = 0.0
        for t in range(4):
            x = x + f[t]
        Y[0] = x
"""


def test_e261_a_fragment_over_the_register_budget():
    assert schedule_error(E261_OVER_BUDGET, "k") == (
        "s.tl:9:21: error[E261]: f[t] reads an element of the fragment 'f' (blocked(vec=4, threads=128)) outside a "
        "parallel loop at an index known only at run time, which needs every thread to hold the whole fragment, but "
        "holding it whole in every thread would take 2048 bytes of each thread's registers, over the 512 that tlc "
        "spends on one fragment\n"
        "  |\n9 |             x = x + f[t]\n  |                     ^^^^\n"
        "  = hint: read it inside `for ... in parallel(512)`, where each thread reads the elements it holds, or keep "
        "it in a shared buffer, which every thread reads at any index")


def test_the_register_budget_is_where_a_fragment_stops_being_held_whole():
    assert scheduled(E261_OVER_BUDGET.replace("f32[512]", "f32[128]"), "k").buffer("f").layout == everywhere(128, 128)
    assert "error[E261]" in schedule_error(E261_OVER_BUDGET.replace("f32[512]", "f32[129]"), "k")


E261_TWO_DIMENSIONS = """
@kernel
def k(X: f32[N, 4], Y: f32[N]):
    with grid(1, threads=128) as bx:
        f = fragment(f32[2, 4])
        copy(X[0, 0], f)
        x = 0.0
        for t in range(4):
            x = x + f[1, t]
        Y[0] = x
"""


def test_e261_a_fragment_of_two_dimensions():
    text = schedule_error(E261_TWO_DIMENSIONS, "k")
    assert text.startswith(
        "s.tl:9:21: error[E261]: f[1, t] reads an element of the fragment 'f' (blocked(vec=4, threads=128)) outside "
        "a parallel loop at an index known only at run time, which needs every thread to hold the whole fragment, but "
        "only a fragment of one dimension is held whole in every thread, and it has 2\n"), text


def test_e280_a_fragment_element_written_in_thread_dependent_code(tmp_path):
    src = ("@kernel\ndef k(A: f32[N]):\n    with grid(1, threads=128) as bx:\n        f = fragment(f32[1])\n"
           "        t = thread_index()\n        f[0] = f32(t)\n        A[0] = f[0]\n")
    from tlc.diagnostics import render_all
    from tlc.driver import check_source
    r = check_source(src, "t.tl")
    assert render_all(r.diagnostics, r.sources) == (
        "t.tl:6:9: error[E280]: a fragment element written outside a parallel loop in code that depends on the "
        "thread index: every thread writes its own replica of it, and they would differ\n"
        "  |\n6 |         f[0] = f32(t)\n  |         ^^^^^^^^^^^^^\n"
        "  = hint: keep the per-thread value in a scalar, or write the element inside a parallel loop")


# ---- clear() and fill() of a scalar -------------------------------------------------------------

def _checked(body: str):
    from tlc.diagnostics import render_all
    from tlc.driver import check_source
    src = "@kernel\ndef k(A: f32[N], n: i32):\n    with grid(1) as bx:\n" + "".join(f"        {x}\n" for x in body.split("; "))
    r = check_source(src, "t.tl")
    return render_all(r.diagnostics, r.sources)


def test_clear_and_fill_of_a_scalar_check_as_assignments():
    assert _checked("x: f32 = 1.0; b: bool = True; i: i32 = 3; clear(x); clear(b); clear(i); fill(x, 2); "
                    "A[0] = x") == ""
    assert _checked("i: i32 = 3; fill(i, 1.5); A[0] = f32(i)") == (
        "t.tl:5:17: error[E033]: cannot store f32 into 'i' of type i32 without a cast\n"
        "  |\n5 |         fill(i, 1.5)\n  |                 ^^^\n"
        "  = hint: write i32(...) or cast(..., i32) to convert explicitly")
    assert _checked("clear(n)") == (
        "t.tl:4:15: error[E036]: clear() sets a shared, fragment or local buffer, found i32\n"
        "  |\n4 |         clear(n)\n  |               ^")
    assert _checked("x = 1.0; clear(x, 2)").startswith("t.tl:5:9: error[E034]: clear() takes 1 argument")


def test_check_reports_what_layout_inference_finds():
    """`tlc check` schedules the kernel as `build` would, so the errors that moved from the
    checker to layout inference (E059) are still reported by check."""
    from tlc.scheduled_check import schedule_all
    assert [d.code for d in schedule_all(program(E059_ACCUMULATOR), "sm_80", {})] == ["E059"]
    assert [d.code for d in schedule_all(program(E261_OVER_BUDGET), "sm_80", {})] == ["E261"]
