"""tl::fast_atan, fast_tan, fast_erf, fast_asinh, fast_atanh, fast_asin, fast_acos, fast_sin,
fast_cos, fast_acosh and fast_expm1 (tl/types.cuh; the _near forms of an f16 argument), the forms
std.elementwise's atan, tan, erf, gelu_erf, asinh, atanh, asin, acos, sin, cos, acosh, expm1, elu,
selu and celu take where their result is a 16-bit float (schedule/fast_math.py), on
every f16 and every bf16 value: their C compiled as host code by the system's C++ compiler, the
hardware's reciprocal, 2^x and square root (rcp.approx.ftz.f32, ex2.approx.ftz.f32,
sqrt.approx.f32) replaced by the exact ones moved by up to 2 ulp either way (twice their error
bounds) and flushed as the hardware flushes, its log2 (lg2.approx.f32) by the exact one moved by
up to 2^-22, against the double-precision functions.  Checked: the relative error their comments
state (2^-17 where the result is a normal f32, 2^-22 for sin and cos, also next to their zeros; tan's where its reduced argument is not within
2^-6 of a pole or zero, where the error is r's own), and that the result rounded to the dtype is the correctly rounded value or,
where that lies within 2^-16 of a tie, its neighbour; and fast_atan2 of every 16-bit y against a
spread of x.  No GPU: the logic is what can go wrong."""
from __future__ import annotations

import re

import pytest

from host_cxx import CXX, header_functions, run

# the hardware's approximations stood in: the exact results moved by up to 2 ulp, flushed as the
# hardware flushes
STAND_INS = r"""
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
static std::mt19937 moves(7);
static float moved(float q) {  // within 2 ulp either way
  int k = static_cast<int>(moves() % 5) - 2;
  for (; k > 0; --k) q = nextafterf(q, INFINITY);
  for (; k < 0; ++k) q = nextafterf(q, -INFINITY);
  return q;
}
static float ftz(float v) { return std::fpclassify(v) == FP_SUBNORMAL ? 0.0f * v : v; }
static float rcp_approx(float y) {
  float r = 1.0f / ftz(y);
  if (std::isfinite(r) && r != 0.0f) r = moved(r);
  return ftz(r);
}
"""

HARNESS = STAND_INS + r"""
static float fast_exp2(float x) {
  float r = exp2f(ftz(x));
  if (std::isfinite(r) && r != 0.0f) r = moved(r);
  return ftz(r);
}
static float fast_exp(float x) { return fast_exp2(x * 1.4426950408889634f); }
static int __float_as_int(float v) { int i; memcpy(&i, &v, 4); return i; }
static unsigned __float_as_uint(float v) { unsigned i; memcpy(&i, &v, 4); return i; }
static float __uint_as_float(unsigned i) { float v; memcpy(&v, &i, 4); return v; }
static float sqrt_approx(float x) {
  float r = sqrtf(ftz(x));
  return std::isfinite(r) && r != 0.0f ? moved(r) : r;
}
static std::mt19937 offs(11);
static float lg2_approx(float x) {  // absolute error below 2^-22: moved by up to 2^-22 either way
  float r = log2f(ftz(x));
  return std::isfinite(r) ? r + (int(offs() % 3) - 1) * 0x1p-22f : r;
}
FUNCTIONS
static float from16(uint16_t h, bool bf) {
  if (bf) { uint32_t u = uint32_t(h) << 16; float f; memcpy(&f, &u, 4); return f; }
  _Float16 v; memcpy(&v, &h, 2); return float(v);
}
// the two 16-bit values around `v` (a double), as floats, and whether v is within 2^-16 of their midpoint
static double round16(double v, bool bf) {
  if (bf) {  // round to nearest even on the float, then to 8 bits: v is exact enough as a float here
    float f = float(v); uint32_t u; memcpy(&u, &f, 4);
    if (std::isnan(f)) return f;
    u = (u + 0x7fff + ((u >> 16) & 1)) & 0xffff0000u; memcpy(&f, &u, 4); return f;
  }
  return double(_Float16(v));
}
static int ulps16(double a, double b, bool bf) {  // how many 16-bit steps apart a and b are (both 16-bit values)
  if (a == b) return 0;
  float fa = float(a), fb = float(b);
  if (bf) {
    uint32_t ua, ub; memcpy(&ua, &fa, 4); memcpy(&ub, &fb, 4);
    int32_t ia = (ua >> 31) ? -int32_t((ua & 0x7fffffff) >> 16) : int32_t(ua >> 16);
    int32_t ib = (ub >> 31) ? -int32_t((ub & 0x7fffffff) >> 16) : int32_t(ub >> 16);
    return std::abs(ia - ib);
  }
  _Float16 ha = _Float16(fa), hb = _Float16(fb); uint16_t ua, ub; memcpy(&ua, &ha, 2); memcpy(&ub, &hb, 2);
  int ia = (ua >> 15) ? -int(ua & 0x7fff) : int(ua), ib = (ub >> 15) ? -int(ub & 0x7fff) : int(ub);
  return std::abs(ia - ib);
}
int main() {
  const char *names[11] = {"atan", "tan", "erf", "asinh", "atanh", "asin", "acos", "sin", "cos", "acosh", "expm1"};
  for (int f = 0; f < 11; ++f)
    for (int bf = 0; bf < 2; ++bf) {
      double worst = 0.0; float worst_x = 0.0f; long off = 0, far = 0, nan = 0;
      for (uint32_t h = 0; h < 65536; ++h) {
        const float x = from16(uint16_t(h), bf);
        const double want = f == 0 ? atan(double(x)) : f == 1 ? tan(double(x)) : f == 2 ? erf(double(x))
                          : f == 3 ? asinh(double(x)) : f == 4 ? atanh(double(x)) : f == 5 ? asin(double(x))
                          : f == 6 ? acos(double(x)) : f == 7 ? sin(double(x)) : f == 8 ? cos(double(x))
                          : f == 9 ? acosh(double(x)) : expm1(double(x));
        const float got = f == 0 ? fast_atan(x) : f == 1 ? (bf ? fast_tan(x) : fast_tan_near(x)) : f == 2 ? fast_erf(x)
                        : f == 3 ? (bf ? fast_asinh(x) : fast_asinh_near(x)) : f == 4 ? fast_atanh(x) : f == 5 ? fast_asin(x)
                        : f == 6 ? fast_acos(x) : f == 7 ? (bf ? fast_sin(x) : fast_sin_near(x))
                        : f == 8 ? (bf ? fast_cos(x) : fast_cos_near(x))
                        : f == 9 ? (bf ? fast_acosh(x) : fast_acosh_near(x)) : fast_expm1(x);
        if (std::isnan(want) || std::isnan(got)) { nan += std::isnan(want) != std::isnan(got); continue; }
        if (std::isinf(want)) continue;
        bool measured = true;
        if (f == 1 && std::fabs(x) < 131072.0) {  // tan: r's own precision next to a pole or zero
          const double k = std::nearbyint(double(x) / (M_PI / 2)), r = double(x) - k * (M_PI / 2);
          measured = std::fabs(r) > 0x1p-6 || k == 0;
        }
        const double rel = want == 0.0 ? std::fabs(double(got)) : std::fabs((double(got) - want) / want);
        if (measured && std::fabs(want) >= 0x1p-126 && std::fabs(want) < 0x1p128 && rel > worst) { worst = rel; worst_x = x; }
        // rounded to the dtype: the correctly rounded value, or its neighbour next to a tie
        const double g16 = round16(got, bf), w16 = round16(want, bf);
        const int n = ulps16(g16, w16, bf);
        if (n > 0) {
          const double lo = std::fmin(g16, w16), hi = std::fmax(g16, w16), mid = 0.5 * (lo + hi);
          const bool tie = n == 1 && std::fabs(want - mid) <= 0x1p-16 * std::fabs(want);
          if (!tie) ++far;
          ++off;
        }
      }
      printf("%s %s worst %.3g (2^%.2f) at %.9g; %ld rounded off, %ld not next to a tie; %ld NaN differ\n",
             names[f], bf ? "bf16" : "f16", worst, worst > 0 ? std::log2(worst) : -999.0, worst_x, off, far, nan);
    }
  printf("sin(-0) sign %d, sin(0) sign %d\n", int(std::signbit(fast_sin(-0.0f))), int(std::signbit(fast_sin(0.0f))));
  printf("sin_near(-0) sign %d, sin_near(0) sign %d\n", int(std::signbit(fast_sin_near(-0.0f))),
         int(std::signbit(fast_sin_near(0.0f))));
  printf("tan_near(-0) sign %d, tan(-0) sign %d\n", int(std::signbit(fast_tan_near(-0.0f))), int(std::signbit(fast_tan(-0.0f))));
  printf("expm1(-0) sign %d, expm1(0) sign %d\n", int(std::signbit(fast_expm1(-0.0f))), int(std::signbit(fast_expm1(0.0f))));
  return 0;
}
"""


@pytest.mark.skipif(CXX is None, reason="no C++ compiler")
def test_fast_atan_tan_erf_on_every_16_bit_value(tmp_path):
    functions = header_functions("atan_unit", "fast_erf") + header_functions("fast_atanh", "fast_asin")
    out = run(HARNESS.replace("FUNCTIONS", functions), tmp_path, "fast16")
    rows = re.findall(r"^(\w+) (\w+) worst \S+ \(2\^(\S+)\) at \S+; (\d+) rounded off, (\d+) not next to a tie; "
                      r"(\d+) NaN differ$", out, re.M)
    assert len(rows) == 22, out
    for name, dtype, log2_worst, _, far, nan in rows:
        bound = {"sin": -19, "cos": -19, "acosh": -20, "expm1": -17.5}.get(name, -17)
        assert float(log2_worst) < bound, f"{name} {dtype}: relative error 2^{log2_worst}\n{out}"
        assert far == "0" and nan == "0", f"{name} {dtype}\n{out}"
    assert "sin(-0) sign 1, sin(0) sign 0" in out, out
    assert "sin_near(-0) sign 1, sin_near(0) sign 0" in out, out
    assert "expm1(-0) sign 1, expm1(0) sign 0" in out, out
    assert "tan_near(-0) sign 1, tan(-0) sign 1" in out, out


ATAN2_HARNESS = STAND_INS + r"""
using std::signbit;
static float fast_div(float a, float b) {  // div.full.f32: 2 ulp
  float q = a / b;
  return std::isfinite(q) && q != 0.0f ? moved(q) : q;
}
FUNCTIONS
static float from16(uint16_t h, bool bf) {
  if (bf) { uint32_t u = uint32_t(h) << 16; float f; memcpy(&f, &u, 4); return f; }
  _Float16 v; memcpy(&v, &h, 2); return float(v);
}
int main() {
  for (int bf = 0; bf < 2; ++bf) {
    double worst = 0.0; float wy = 0.0f, wx = 0.0f; long far = 0, nan = 0, n = 0;
    for (uint32_t hy = 0; hy < 65536; ++hy)
      for (uint32_t hx = 0; hx < 65536; hx += 61) {  // every f16 y, a spread of x (61 is prime)
        const uint32_t xs[3] = {hx, hx == 0 ? 0x8000u : hx, hy ^ 0x8000u};  // and -0, and -y
        for (int i = 0; i < (hx == 0 ? 3 : 1); ++i) {
          const float y = from16(uint16_t(hy), bf), x = from16(uint16_t(i == 2 ? xs[2] : xs[i]), bf);
          if (std::isinf(x) && std::isinf(y)) continue;  // NaN here; C's is an odd multiple of pi/4
          const double want = atan2(double(y), double(x));
          const float got = bf ? fast_atan2(y, x) : fast_atan2_near(y, x);
          ++n;
          if (std::isnan(want) || std::isnan(got)) { nan += std::isnan(want) != std::isnan(got); continue; }
          if (want == 0.0) { far += got != 0.0f || std::signbit(got) != std::signbit(want); continue; }
          const double rel = std::fabs((double(got) - want) / want);
          if (std::fabs(want) >= 0x1p-126 && rel > worst) { worst = rel; wy = y; wx = x; }
          if (std::fabs(want) >= 0x1p-126 && rel > 0x1p-17) ++far;
        }
      }
    printf("atan2 %s worst %.3g (2^%.2f) at (%.9g, %.9g); %ld of %ld beyond 2^-17 or signed zeros differing; %ld NaN differ\n",
           bf ? "bf16" : "f16", worst, worst > 0 ? std::log2(worst) : -999.0, wy, wx, far, n, nan);
  }
  return 0;
}
"""


@pytest.mark.skipif(CXX is None, reason="no C++ compiler")
@pytest.mark.slow  # every 16-bit y (~9 s): an exhaustive matrix
def test_fast_atan2_on_every_16_bit_y(tmp_path):
    """tl::fast_atan2_near (two f16 arguments) and fast_atan2 (bf16, with fast_div) on every y of
    the dtype against a spread of 1075 x (and -0, and -y at x = 0): relative error below 2^-17,
    C's signed zeros and its +-pi at -0, NaN where either is NaN."""
    functions = header_functions("atan_unit", "atan_unit") + "template <bool F16>\n" + header_functions("atan2_of", "fast_atan2")
    out = run(ATAN2_HARNESS.replace("FUNCTIONS", functions), tmp_path, "atan2_16")
    rows = re.findall(r"^atan2 (\w+) worst \S+ \(2\^(\S+)\) at \(.*?\); (\d+) of \d+ beyond .*; (\d+) NaN differ$", out, re.M)
    assert len(rows) == 2, out
    for dtype, log2_worst, far, nan in rows:
        assert float(log2_worst) < -17 and far == "0" and nan == "0", f"{dtype}\n{out}"
