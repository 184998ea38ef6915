// prelude.h: what the CUDA headers give a kernel, for g++ on a CPU: the qualifiers (nothing
// here), `half` (_Float16: IEEE binary16, converted with round to nearest even) and
// `__nv_bfloat16` (the top 16 bits of a float, rounded to nearest even), and the bit casts
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

using half = _Float16;

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
