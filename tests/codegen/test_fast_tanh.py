"""fast_tanh, the hardware tanh (tl::fast_tanh: MUFU.TANH), and std.math's gelu on it: one
MUFU instruction an element where gelu_precise (the hardware exponential and reciprocal) takes
two.  f64 keeps the precise tanh; `tanh` with a 16-bit result becomes fast_tanh.  Its accuracy
on the GPU: tests/gpu/test_std_math_gpu.py."""
import re

from kit_codegen import generated_source
from nvcc import cubin_sass

SRC = """
from std.math import gelu, gelu_precise

@kernel
def tanhs(x: f32[N], h: f16[N], d: f64[N], y: f32[N], yh: f16[N], yd: f64[N]):
    with grid(cdiv(N, 256), threads=128) as bx:
        for i in parallel(256):
            y[bx * 256 + i] = fast_tanh(x[bx * 256 + i])
            yh[bx * 256 + i] = fast_tanh(h[bx * 256 + i])
            yd[bx * 256 + i] = fast_tanh(d[bx * 256 + i])

@kernel
def act(x: f32[N], y: f32[N], ACT: const = 0):
    with grid(cdiv(N, 256), threads=128) as bx:
        for i in parallel(256):
            if ACT == 0:
                y[bx * 256 + i] = gelu(x[bx * 256 + i])
            else:
                y[bx * 256 + i] = gelu_precise(x[bx * 256 + i])
"""


def cuda(name: str, src: str = SRC, **constants) -> str:
    return generated_source(src, name, arch="sm_90a", constants=constants).source


def body(src: str) -> str:
    return src[src.index("__global__"):]


def test_fast_tanh_is_the_hardware_tanh_for_f32_and_f16_and_precise_for_f64():
    text = body(cuda("tanhs"))
    assert text.count("tl::fast_tanh(") == 2
    # a 16-bit argument is computed in f32 and rounded once
    assert "] = tl::cvt<half>(tl::fast_tanh(tl::cvt<float>(" in text
    assert re.search(r"yd\[.*\] = tanh\(", text)


def test_tanh_with_a_sixteen_bit_result_is_the_hardware_tanh():
    """As exp: its error (2^-16) vanishes in the rounding to 16 bits; f32 keeps tanhf."""
    text = body(cuda("tanhs", SRC.replace("fast_tanh(", "tanh(")))
    assert "] = tl::cvt<half>(tl::fast_tanh(tl::cvt<float>(" in text
    assert re.search(r"y\[.*\] = tanhf\(", text) and re.search(r"yd\[.*\] = tanh\(", text)
    assert text.count("tl::fast_tanh(") == 1


def test_gelu_takes_one_mufu_an_element_and_gelu_precise_two(tmp_path):
    fast, _ = cubin_sass(cuda("act", ACT=0), "sm_90a", tmp_path, "fast")
    precise, _ = cubin_sass(cuda("act", ACT=1), "sm_90a", tmp_path, "precise")
    mufu = lambda sass: re.findall(r"MUFU\.(\w+)", sass)  # noqa: E731
    assert mufu(fast) and set(mufu(fast)) == {"TANH"}
    assert sorted(set(mufu(precise))) == ["EX2", "RCP"]
    assert len(mufu(precise)) == 2 * len(mufu(fast))
