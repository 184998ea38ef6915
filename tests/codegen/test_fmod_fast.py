"""tl::fmod_fast (tl/types.cuh), the float remainder under std.elementwise's fmod and remainder
(`fmod` and `%` of f32), gives fmodf's value bit for bit: its C compiled as host code by the
system's C++ compiler, the hardware reciprocal (rcp.approx.ftz.f32) replaced by 1 / y moved by
up to 2 ulp either way (twice its error bound) and flushed as the hardware flushes subnormal
inputs and results, against fmodf on random bit patterns, near-integer quotients, signed zeros,
infinities, NaN and subnormals.  No GPU: the logic is what can go wrong."""
from __future__ import annotations

import re

import pytest

from host_cxx import CXX, header_functions, run

HARNESS = r"""
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
static std::mt19937 moves(7);
static float moved(float q) {  // 1 / y within 2 ulp (rcp.approx.f32: 1)
  int k = static_cast<int>(moves() % 5) - 2;
  for (; k > 0; --k) q = nextafterf(q, INFINITY);
  for (; k < 0; ++k) q = nextafterf(q, -INFINITY);
  return q;
}
FUNCTIONS
static bool same(float x, float y) {
  if (std::isnan(x) && std::isnan(y)) return true;
  uint32_t a, b;
  memcpy(&a, &x, 4);
  memcpy(&b, &y, 4);
  return a == b;
}
int main() {
  std::mt19937_64 g(1);
  std::normal_distribution<float> normal;
  long bad = 0;
  auto check = [&](float a, float b) {
    const float want = fmodf(a, b), got = fmod_fast(a, b);
    if (!same(want, got) && bad++ < 5) printf("fmod(%.9g, %.9g): %.9g, fmodf %.9g\n", a, b, got, want);
  };
  for (int i = 0; i < 400000; ++i) {
    const uint64_t bits = g();
    float a, b;
    const uint32_t lo = static_cast<uint32_t>(bits), hi = static_cast<uint32_t>(bits >> 32);
    memcpy(&a, &lo, 4);
    memcpy(&b, &hi, 4);
    check(a, b);
    const float k = static_cast<float>(static_cast<int>(normal(g) * 1000)), d = normal(g);
    check(k * d, d);
    check(nextafterf(k * d, INFINITY), d);
    check(nextafterf(k * d, -INFINITY), d);
    check(normal(g) * 60000.0f, normal(g) * 1e-3f);
  }
  const float edges[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-45f, -1e-45f, 1e-38f, 3.4e38f, -3.4e38f,
                         1.0f, -1.0f, 3.0f, -6.0f, 6.0f, 2097152.0f};
  for (float a : edges)
    for (float b : edges) check(a, b);
  printf("%ld differ\n", bad);
  return 0;
}
"""


def host_source() -> str:
    body, n = re.subn(r'  asm\("rcp\.approx\.ftz\.f32 %0, %1;" : "=f"\(r\) : "f"\(y\)\);',
                      "  r = 1.0f / (std::fpclassify(y) == FP_SUBNORMAL ? 0.0f * y : y);\n"
                      "  if (std::isfinite(r) && r != 0.0f) r = moved(r);\n"
                      "  if (std::fpclassify(r) == FP_SUBNORMAL) r = 0.0f * r;", header_functions("rcp_approx", "fmod_fast"))
    assert n == 1, "tl::rcp_approx is no longer the rcp.approx.ftz.f32 this test replaces"
    return HARNESS.replace("FUNCTIONS", body)


@pytest.mark.skipif(CXX is None, reason="no C++ compiler")
def test_fmod_fast_is_fmodf_bit_for_bit(tmp_path):
    out = run(host_source(), tmp_path, "fmod")
    assert out.strip().endswith("0 differ"), out


FMOD = """
@kernel
def rem(a: f16[N], b: f16[N], c: f16[N], d: f16[N]):
    with grid(cdiv(N, 128), threads=128) as bx:
        for i in parallel(128):
            c[bx * 128 + i] = fmod(a[bx * 128 + i], b[bx * 128 + i])
            d[bx * 128 + i] = a[bx * 128 + i] % b[bx * 128 + i]
"""


def test_the_fmod_builtin_is_cs_remainder_and_percent_pythons():
    """fmod(a, b) has a's sign (C's fmod, tl::fmod_fast on the GPU), % has b's (Python's); both
    exact, on the interpreter."""
    import numpy as np

    import tlc
    from tlc.codegen import generate_file
    from tlc.schedule import schedule

    rng = np.random.default_rng(5)
    a = (rng.standard_normal(256) * 100).astype(np.float16)
    b = (rng.choice([-1, 1], 256) * (0.25 + 4 * rng.random(256))).astype(np.float16)
    c, d = np.zeros_like(a), np.zeros_like(a)
    tlc.compile_source(FMOD, target="interp").rem(a, b, c, d)
    assert np.array_equal(c, np.fmod(a.astype(np.float32), b.astype(np.float32)).astype(np.float16))
    assert np.array_equal(d, np.remainder(a.astype(np.float32), b.astype(np.float32)).astype(np.float16))
    mod = tlc.compile_source(FMOD, target="cpu", path="rem.tl")
    src = generate_file([schedule(mod.program, "rem", {}, target="sm_90a")], "sm_90a")
    body = src[src.index("__global__"):]
    assert "tl::fmod_fast(" in body and "tl::pymod(" in body
