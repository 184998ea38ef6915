// prelude.h: what the CUDA headers give a kernel, for g++ on a CPU: the qualifiers (nothing
// here), `half` (IEEE binary16, converted with round to nearest even),
// `__nv_bfloat16` (the top 16 bits of a float, rounded to nearest even), the 8-bit floats, and the bit casts
// and math functions codegen/cexpr.py names.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>
#include <omp.h>

#define __host__
#define __device__
#define __forceinline__ inline

// IEEE binary16 as its bits, converted as NumPy converts (every value bit for bit, NaN's payload
// kept), in integer and float operations the compiler vectorizes (it does not vectorize _Float16).
struct half {
  unsigned short bits;
  half() = default;
  half(float f) {
    unsigned int u;
    std::memcpy(&u, &f, 4);
    const unsigned int sign = (u >> 16) & 0x8000u;
    u &= 0x7fffffffu;
    float a;
    std::memcpy(&a, &u, 4);
    float tiny = a + 0.5f;  // below 2^-14: adding 1/2 rounds the 10 bits into the sum's bottom, to nearest even
    unsigned int below;
    std::memcpy(&below, &tiny, 4);
    below -= 0x3f000000u;
    const unsigned int normal = (u + 0xc8000fffu + ((u >> 13) & 1u)) >> 13;  // exponent rebiased, rounded to even
    unsigned int nan = 0x7c00u | ((u >> 13) & 0x3ffu);
    nan += nan == 0x7c00u;  // a NaN whose kept payload is 0 would read as infinity
    unsigned int r = u < 0x38800000u ? below : normal;
    r = u >= 0x477ff000u ? 0x7c00u : r;  // 65520 and up round to infinity
    r = u > 0x7f800000u ? nan : r;
    bits = static_cast<unsigned short>(r | sign);
  }
  // A double rounds once, as NumPy's: first to float rounded to odd (toward zero, its last bit
  // set where inexact), which keeps the bits that decide the half's rounding (24 >= 2 * 11 + 2).
  half(double d) : half(odd_float(d)) {}
  template <typename T, typename = typename std::enable_if<std::is_integral<T>::value>::type>
  half(T x) : half(static_cast<float>(x)) {}  // exact up to 2^24, and past 65519 infinity
  static float odd_float(double d) {
    float f = static_cast<float>(d);
    unsigned int u;
    std::memcpy(&u, &f, 4);
    const double back = static_cast<double>(f);
    const bool away = back > d ? d >= 0 : back < d && d < 0;  // rounded away from zero
    u = (d == d && back != d) ? ((u - (away ? 1u : 0u)) | 1u) : u;
    std::memcpy(&f, &u, 4);
    return f;
  }
  operator float() const {
    const unsigned int em = bits & 0x7fffu;
    unsigned int u = em << 13;
    float f;
    std::memcpy(&f, &u, 4);
    f *= 0x1p112f;  // the exponent rebiased; a subnormal half becomes a normal float, exactly
    std::memcpy(&u, &f, 4);
    u = em >= 0x7c00u ? (em << 13) | 0x7f800000u : u;  // infinity and NaN
    u |= (bits & 0x8000u) << 16;
    std::memcpy(&f, &u, 4);
    return f;
  }
};

struct __nv_bfloat16 {
  unsigned short bits;
  __nv_bfloat16() = default;
  __nv_bfloat16(float f) {
    unsigned int u;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) {
      bits = static_cast<unsigned short>((u >> 16) | 0x40u);  // NaN stays NaN
    } else {
      bits = static_cast<unsigned short>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    }
  }
  operator float() const {
    unsigned int u = static_cast<unsigned int>(bits) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
};

// The 8-bit floats (e4m3: no infinity, 448 the largest; e5m2: IEEE-like, 57344 the largest): a
// float converts rounding to nearest even and saturating to the largest finite value, NaN stays
// NaN (CUDA's __NV_SATFINITE, the interpreter's clip then ml_dtypes' cast).
template <int E, int M, bool INF>
struct tl_fp8 {
  unsigned char __x;
  tl_fp8() = default;
  tl_fp8(float f) {
    constexpr int bias = (1 << (E - 1)) - 1;
    constexpr float largest = INF ? (2.0f - 1.0f / (1 << M)) * (1 << bias) : (2.0f - 2.0f / (1 << M)) * (1 << (bias + 1));
    unsigned int u;
    std::memcpy(&u, &f, 4);
    const unsigned char sign = static_cast<unsigned char>((u >> 24) & 0x80u);
    if (f != f) {
      __x = static_cast<unsigned char>(sign | (INF ? 0x7eu : 0x7fu));  // ml_dtypes' NaN
      return;
    }
    float a = std::fabs(f);
    if (a > largest) a = largest;
    std::memcpy(&u, &a, 4);
    if (static_cast<int>(u >> 23) - 127 >= 1 - bias) {  // a normal number of the 8-bit format
      constexpr int shift = 23 - M;
      const unsigned int rounded = (u + (1u << (shift - 1)) - 1u + ((u >> shift) & 1u)) >> shift;
      __x = static_cast<unsigned char>(sign | (rounded - (static_cast<unsigned int>(127 - bias) << M)));
    } else {  // subnormal (or zero): a multiple of 2^(1 - bias - M), rounded to nearest even
      __x = static_cast<unsigned char>(sign | static_cast<unsigned int>(std::nearbyint(std::ldexp(a, bias - 1 + M))));
    }
  }
  operator float() const {
    constexpr int bias = (1 << (E - 1)) - 1;
    const int e = (__x >> M) & ((1 << E) - 1), m = __x & ((1 << M) - 1);
    const float sign = (__x & 0x80) ? -1.0f : 1.0f;
    if (INF && e == (1 << E) - 1) return m ? std::numeric_limits<float>::quiet_NaN() : sign * std::numeric_limits<float>::infinity();
    if (!INF && e == (1 << E) - 1 && m == (1 << M) - 1) return std::numeric_limits<float>::quiet_NaN();
    if (e == 0) return sign * std::ldexp(static_cast<float>(m), 1 - bias - M);
    return sign * std::ldexp(static_cast<float>((1 << M) + m), e - bias - M);
  }
};
using __nv_fp8_e4m3 = tl_fp8<4, 3, false>;
using __nv_fp8_e5m2 = tl_fp8<5, 2, true>;
#define TL_HAS_FP8 1

template <typename To, typename From>
inline To tl_bits(From x) {
  static_assert(sizeof(To) == sizeof(From), "a bit cast keeps the width");
  To out;
  std::memcpy(&out, &x, sizeof(To));
  return out;
}
inline float __int_as_float(int x) { return tl_bits<float>(x); }
inline float __uint_as_float(unsigned int x) { return tl_bits<float>(x); }
inline unsigned int __float_as_uint(float x) { return tl_bits<unsigned int>(x); }
inline double __longlong_as_double(long long x) { return tl_bits<double>(x); }
inline long long __double_as_longlong(double x) { return tl_bits<long long>(x); }
inline unsigned short __half_as_ushort(half x) { return tl_bits<unsigned short>(x); }
inline half __ushort_as_half(unsigned short x) { return tl_bits<half>(x); }
inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 x) { return x.bits; }
inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short x) {
  __nv_bfloat16 out;
  out.bits = x;
  return out;
}
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
