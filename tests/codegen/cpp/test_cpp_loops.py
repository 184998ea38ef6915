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
    assert "> 0 ? k < tl_stop" in text and "#pragma GCC ivdep\n" in text  # it can return: no simd loop


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
