"""What the cpu target's C++ says of a parallel loop, of f32 exponentials and of a loop whose
step is known at run time (tlc/codegen/cpp/emit.py's decisions), read from the generated
source; the one test that compiles (g++) runs under -m slow."""
from __future__ import annotations

import numpy as np
import pytest

import tlc
from tlc.codegen import cpp
from tlc.runtime import cpp as runtime_cpp


def source(text: str, kernel: str) -> str:
    mod = tlc.compile_source(text, target="cpu", path=f"{kernel}.tl")
    return cpp.generate(getattr(mod, kernel).scheduled({}, "cpu")).source.split("static int tl_block_")[1]


SCALE = """\
@kernel
def scale(x: f32[N], y: f32[N]):
    with grid(cdiv(N, 256), threads=128) as b:
        for i in parallel(256):
            y[b * 256 + i] = exp(x[b * 256 + i]) + exp2(x[b * 256 + i]) + log(x[b * 256 + i]) + log2(x[b * 256 + i]) \
                + tanh(x[b * 256 + i])
"""

CHECKED = """\
@kernel
def checked(x: f32[N], y: f32[N]):
    with grid(cdiv(N, 256), threads=128) as b:
        for i in parallel(256):
            device_assert(x[b * 256 + i] < 100.0, "big")
            y[b * 256 + i] = x[b * 256 + i]
"""

COUNTED = """\
@kernel
def counted(x: f32[N], hist: i32[16]):
    with grid(cdiv(N, 256), threads=128) as b:
        for i in parallel(256):
            atomic_add(hist[i % 16], 1)
"""

SEARCHED = """\
@kernel
def searched(x: i32[N], y: i32[N]):
    with grid(cdiv(N, 256), threads=128) as b:
        for i in parallel(256):
            n = x[b * 256 + i]
            while n > 1:
                n = n // 2
            y[b * 256 + i] = n
"""


def test_a_parallel_loop_is_an_openmp_simd_loop():
    text = source(SCALE, "scale")
    assert "#pragma omp simd\n" in text and "ivdep" not in text


def test_f32_exponentials_logarithms_and_tanh_are_tl_cpu_hs_which_vectorize():
    text = source(SCALE, "scale")
    for mine, libm in (("exp", "expf"), ("exp2", "exp2f"), ("log", "logf"), ("log2", "log2f"), ("tanh", "tanhf")):
        assert f"tl::fast_{mine}(" in text and f"{libm}(" not in text, mine


def test_a_loop_that_can_leave_the_block_or_takes_an_atomic_stays_ivdep():
    """device_assert and a while loop return from the block; OpenMP refuses its atomic in a simd loop."""
    for text, kernel in ((CHECKED, "checked"), (COUNTED, "counted"), (SEARCHED, "searched")):
        generated = source(text, kernel)
        assert "#pragma GCC ivdep\n" in generated and "omp simd" not in generated, kernel


STRIDED = """\
@kernel
def strided(x: f32[N], y: f32[N], s: i32):
    with grid(1, threads=32) as b:
        for i in parallel(32):
            acc = 0.0
            for k in range(i if s > 0 else N - 1 - i, N if s > 0 else -1, s):
                acc = acc + x[k]
            y[i] = acc
"""


def test_a_step_known_at_run_time_picks_its_test_then_and_returns_on_0():
    text = source(STRIDED, "strided")
    assert "if (tl_step" in text and "== 0) return 1;" in text
    assert "> 0 ? tl_k2 < tl_stop" in text and "#pragma GCC ivdep\n" in text  # it can return: no simd loop
    # a stepped loop counts in 64 bits (its i32 counter wrapped near 2**31: an endless loop)
    assert "for (long long tl_k2 = " in text and "const int k = static_cast<int>(tl_k2);" in text


FAR = """\
@kernel
def far(out: f32[4], n: i32):
    with grid(4, threads=32) as b:
        acc = fragment(f32[1])
        clear(acc)
        for k in range(b, n, 1048576):
            acc[0] += 1.0
        copy(acc, out[b])
"""


def test_a_loop_of_unit_step_or_a_stop_the_sizes_bound_keeps_its_i32_counter():
    text = source(SCALE.replace("for i in parallel(256):", "for j in range(0, N, 1):\n            for i in parallel(256):")
                  .replace("\n            y[", "\n                y["), "scale")
    assert "for (int j = 0; j < tl_stop" in text and "long long tl_k" not in text
    # std.reduce's axis-0 rows, two a step: (M // 512) * 2 is at most 2**31 - 2 at every M
    pairs = SCALE.replace("for i in parallel(256):", "for j in range(0, (N // 512) * 2, 2):\n            for i in parallel(256):")
    text = source(pairs.replace("\n            y[", "\n                y["), "scale")
    assert "for (int j = 0; j < tl_stop" in text and "long long tl_k" not in text


@pytest.mark.slow
@pytest.mark.skipif(runtime_cpp.compiler_unavailable_reason() is not None, reason="no C++ compiler here")
def test_a_stepped_loop_from_the_block_index_ends_near_2_31():
    """range(b, n, 2**20) with n = 2**31 - 1: each block's last step takes the counter to 2**31,
    which an i32 counter wrapped (the launch cannot refuse it: its start is the block's); the
    cpu target ends as the interpreter does, 2048 iterations a block."""
    for target in ("cpp", "interp"):
        out = np.zeros(4, np.float32)
        tlc.compile_source(FAR, target=target, path="far.tl").far(out, 2**31 - 1)
        assert out.tolist() == [2048.0] * 4, target


@pytest.mark.slow
@pytest.mark.skipif(runtime_cpp.compiler_unavailable_reason() is not None, reason="no C++ compiler here")
def test_a_step_known_at_run_time_runs_generated_as_numpy_and_0_is_the_interpreters_error(capsys):
    mod = tlc.compile_source(STRIDED, target="cpp", path="strided.tl")
    x = np.random.default_rng(0).standard_normal(100).astype(np.float32)
    for step in (3, -5, 40):
        y = np.zeros(100, np.float32)
        mod.strided(x, y, step)
        starts = range(32) if step > 0 else range(99, 67, -1)
        want = [x[a::step].astype(np.float64).sum() for a in starts]  # from a to the end (to 0 going down)
        assert np.allclose(y[:32], want, rtol=1e-5), step
    with pytest.raises(tlc.interp.InterpError) as e:
        mod.strided(x, np.zeros(100, np.float32), 0)
    assert str(e.value) == "kernel 'strided': loop 'k' has step 0"
    assert "warning[" not in capsys.readouterr().err
