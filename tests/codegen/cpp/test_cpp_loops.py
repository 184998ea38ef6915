"""What the cpu target's C++ says of a parallel loop and of f32 exponentials (tlc/codegen/cpp/
emit.py's decisions), read from the generated source: no compiler runs here."""
from __future__ import annotations

import tlc
from tlc.codegen import cpp


def source(text: str, kernel: str) -> str:
    mod = tlc.compile_source(text, target="cpu", path=f"{kernel}.tl")
    return cpp.generate(getattr(mod, kernel).scheduled({}, "cpu")).source.split("static int tl_block_")[1]


SCALE = """\
@kernel
def scale(x: f32[N], y: f32[N]):
    with grid(cdiv(N, 256), threads=128) as b:
        for i in parallel(256):
            y[b * 256 + i] = exp(x[b * 256 + i]) + exp2(x[b * 256 + i])
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


def test_f32_exponentials_are_tl_cpu_hs_which_vectorize():
    text = source(SCALE, "scale")
    assert "tl::fast_exp(" in text and "tl::fast_exp2(" in text and "expf(" not in text and "exp2f(" not in text


def test_a_loop_that_can_leave_the_block_or_takes_an_atomic_stays_ivdep():
    """device_assert and a while loop return from the block; OpenMP refuses its atomic in a simd loop."""
    for text, kernel in ((CHECKED, "checked"), (COUNTED, "counted"), (SEARCHED, "searched")):
        generated = source(text, kernel)
        assert "#pragma GCC ivdep\n" in generated and "omp simd" not in generated, kernel
