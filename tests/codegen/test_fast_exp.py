"""Where generated code uses the hardware exponential (tl::fast_exp, tl::fast_exp2: MUFU.EX2)
instead of expf: exponentials whose results are 16-bit floats, and 16-bit softmaxes (as
FlashAttention: 2^(x log2 e - max log2 e)); f32 and f64 results keep the precise functions.
The interpreter (the reference) computes them exactly; the f16 tolerance tests of tile ops and
kernels on the GPU (tests/gpu) hold the approximation to it."""
import re

import pytest

import tlc
from tlc.codegen import generate_file
from nvcc import cubin_sass

SRC = """
@kernel
def ew(x: f16[N], y: f16[N], z: f32[N], w: f32[N]):
    with grid(cdiv(N, 256), threads=128) as bx:
        for i in parallel(256):
            y[bx * 256 + i] = exp(x[bx * 256 + i]) + exp2(x[bx * 256 + i])
            w[bx * 256 + i] = exp(z[bx * 256 + i]) + exp2(z[bx * 256 + i])
""" + "".join(f"""
@tile_op
def smax{bits}(x: f{bits}[M, N]) -> f{bits}[M, N]:
    return softmax(x, axis=1)
""" for bits in (16, 32))


def cuda(name: str, **sizes) -> str:
    mod = tlc.compile_source(SRC, target="cpu", path="ops.tl")
    if sizes:
        kernels = getattr(mod, name).program({}, "sm_90a", sizes).kernels
    else:
        from tlc.schedule import schedule
        kernels = [schedule(mod.program, name, {}, target="sm_90a")]
    return generate_file(kernels, "sm_90a", sources=mod.program.sources, source_name="ops.tl")


def body(src: str) -> str:
    return src[src.index("__global__"):]


def test_sixteen_bit_exponentials_use_the_hardware_approximation():
    text = body(cuda("ew"))
    assert "tl::fast_exp(" in text and "tl::fast_exp2(" in text
    assert text.count("expf(") == 1 and text.count("exp2f(") == 1  # the f32 ones stay precise


@pytest.mark.parametrize("name,fast", [("smax16", True), ("smax32", False)])
def test_softmax_exponentials_follow_the_result_dtype(name, fast):
    text = body(cuda(name, M=4096, N=8192))
    assert ("tl::fast_exp2(" in text) == fast
    assert ("expf(" in text) != fast
    if fast:  # x * log2(e) - max * log2(e): one FFMA and one MUFU.EX2 an element
        assert "* 1.4426950408889634f) - (row_max[" in text


def test_sixteen_bit_softmax_sass_has_one_ex2_and_no_expf_sequence(tmp_path):
    """The one-tile path's exponentials: one MUFU.EX2 per element, fed by an FFMA, without
    expf's range reduction (its FFMA.SAT)."""
    sass, _ = cubin_sass(cuda("smax16", M=4096, N=8192), "sm_90a", tmp_path)
    assert len(re.findall(r"MUFU\.EX2", sass)) >= 32
    assert "FFMA.SAT" not in sass
