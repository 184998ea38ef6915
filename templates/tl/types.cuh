// tl/types.cuh: scalar conversions and the arithmetic helpers whose C meaning differs from
// the language's (floor division, Python remainder, division by zero).  NVRTC-safe: only
// CUDA's own fp16/bf16/fp8 headers, no host includes.
namespace tl {

template <bool C, typename A, typename B> struct conditional { using type = A; };
template <typename A, typename B> struct conditional<false, A, B> { using type = B; };

template <typename T> struct is_low_float { static constexpr bool value = false; };
template <> struct is_low_float<half> { static constexpr bool value = true; };
template <> struct is_low_float<__nv_bfloat16> { static constexpr bool value = true; };
#ifdef TL_HAS_FP8
template <> struct is_low_float<__nv_fp8_e4m3> { static constexpr bool value = true; };
template <> struct is_low_float<__nv_fp8_e5m2> { static constexpr bool value = true; };
#endif

// An 8-bit float, which converts to half exactly by one instruction (cvt.rn.f16x2.e4m3x2 on
// sm_89 and later) rather than through float (unpack, widen, round back: three).
template <typename T> struct is_fp8 { static constexpr bool value = false; };
#ifdef TL_HAS_FP8
template <> struct is_fp8<__nv_fp8_e4m3> { static constexpr bool value = true; };
template <> struct is_fp8<__nv_fp8_e5m2> { static constexpr bool value = true; };
#endif

#ifdef TL_HAS_FP8
// The 8-bit float whose storage byte is `bits` (reinterpret(x, f8e4m3) of a u8 or i8 x).
template <typename F8> __device__ __forceinline__ F8 fp8_from_bits(unsigned char bits) {
  F8 out;
  out.__x = bits;
  return out;
}
#endif

template <typename T> struct is_float { static constexpr bool value = is_low_float<T>::value; };
template <> struct is_float<float> { static constexpr bool value = true; };
template <> struct is_float<double> { static constexpr bool value = true; };
template <typename T> struct is_bool { static constexpr bool value = false; };
template <> struct is_bool<bool> { static constexpr bool value = true; };
// The float a 16- or 8-bit float computes in (itself for float and double).
template <typename T> struct wide_float { using type = float; };
template <> struct wide_float<double> { using type = double; };
template <typename T> struct is_narrow_int { static constexpr bool value = false; };
template <> struct is_narrow_int<signed char> { static constexpr bool value = true; };
template <> struct is_narrow_int<unsigned char> { static constexpr bool value = true; };
template <> struct is_narrow_int<short> { static constexpr bool value = true; };
template <> struct is_narrow_int<unsigned short> { static constexpr bool value = true; };

// An int clamped into the range of the 8- or 16-bit integer type To.
template <typename To>
__host__ __device__ __forceinline__ To saturate_narrow(int v) {
  constexpr int bits = sizeof(To) * 8;
  constexpr bool is_signed = static_cast<To>(~0u) < static_cast<To>(0);
  constexpr int lo = is_signed ? -(1 << (bits - 1)) : 0;
  constexpr int hi = is_signed ? (1 << (bits - 1)) - 1 : (1 << bits) - 1;
  return static_cast<To>(v < lo ? lo : v > hi ? hi : v);
}

// Every conversion goes through here.  16- and 8-bit floats convert through float, which
// rounds to nearest even (and saturates into fp8); float -> int truncates and saturates, NaN
// gives 0 (cvt.rzi), as the interpreter does.  Into an 8- or 16-bit integer C converts through
// a 32-bit cvt.rzi and keeps the low bits (300.0f -> u8 44): it saturates to that type here.
template <typename A, typename B> struct same_type { static constexpr bool value = false; };
template <typename A> struct same_type<A, A> { static constexpr bool value = true; };

template <typename To, typename From>
__host__ __device__ __forceinline__ To cvt(From x) {
  if constexpr (is_fp8<From>::value && same_type<To, half>::value) {
    return static_cast<half>(x);  // exact: every e4m3 and e5m2 value is a half
  } else if constexpr (is_low_float<From>::value && is_low_float<To>::value) {
    return To(static_cast<float>(x));
  } else if constexpr (is_float<From>::value && is_narrow_int<To>::value) {
    return saturate_narrow<To>(cvt<int>(x));
  } else if constexpr (is_float<From>::value && !is_float<To>::value && !is_bool<To>::value) {
    // NaN is 0 here, not left to the instruction: the H200 turned a double NaN into INT_MIN
    const typename wide_float<From>::type w = static_cast<typename wide_float<From>::type>(x);
    return w != w ? To(0) : static_cast<To>(w);
  } else if constexpr (is_low_float<From>::value) {
    return static_cast<To>(static_cast<float>(x));
  } else if constexpr (is_low_float<To>::value) {
    return To(static_cast<float>(x));
  } else {
    return static_cast<To>(x);
  }
}

// x < 0 without the "pointless comparison of unsigned integer with zero" warning that
// `x < 0` draws where a template below is instantiated for an unsigned T (an error under -Werror).
template <typename T> __host__ __device__ __forceinline__ bool is_negative(T x) { return x < 0; }
__host__ __device__ __forceinline__ bool is_negative(unsigned char) { return false; }
__host__ __device__ __forceinline__ bool is_negative(unsigned short) { return false; }
__host__ __device__ __forceinline__ bool is_negative(unsigned int) { return false; }
__host__ __device__ __forceinline__ bool is_negative(unsigned long long) { return false; }

// `//` and `%` with Python's signs; a division by zero gives 0 instead of undefined behaviour,
// and so does the remainder of a division by -1, whose quotient is -a wrapped (the most
// negative value divided by -1 overflows in C).  codegen/cexpr.py names T
// (`tl::floordiv<unsigned char>(a, b)`): C promotes an 8- or 16-bit operand to int, and the
// two operands' C types need not agree.
template <typename T>
__host__ __device__ __forceinline__ bool is_minus_one(T b) { return is_negative(b) && b + 1 == 0; }
template <typename T>
__host__ __device__ __forceinline__ T truncdiv(T a, T b) {
  if (b == 0) return T(0);
  if (is_minus_one(b)) return static_cast<T>(0ull - static_cast<unsigned long long>(a));
  return static_cast<T>(a / b);
}
template <typename T>
__host__ __device__ __forceinline__ T floordiv(T a, T b) {
  if (b == 0 || is_minus_one(b)) return truncdiv(a, b);
  T q = static_cast<T>(a / b);
  return (a % b != 0 && is_negative(a) != is_negative(b)) ? static_cast<T>(q - 1) : q;
}
template <typename T>
__host__ __device__ __forceinline__ T pymod(T a, T b) {
  if (b == 0 || is_minus_one(b)) return T(0);
  T r = static_cast<T>(a % b);
  return (r != 0 && is_negative(r) != is_negative(b)) ? static_cast<T>(r + b) : r;
}

// x, which the generator proved never negative where C's int arithmetic does not wrap (signed
// overflow is undefined: nvcc assumes it away too), from values whose signs nvcc does not see
// (codegen/cexpr.py _never_negative): a floordiv or pymod of it by a positive divisor then
// divides as C does, and one of x + j by a constant is x's quotient plus j's.  sized_nonneg: a
// proof that takes the arrays' sizes as not negative, which NVRTC's builds assume
// (kernel.cu.j2's __builtin_assume of each; TL_ASSUME_SIZES asks nvcc's build for the same).
// Host-portable, as the cpu target's C++ reads this header up to its first device-only
// function: g++ has no __builtin_assume, and an unreachable branch says the same to it.
#if defined(__CUDACC__) || defined(__clang__)
#define TL_ASSUME(cond) __builtin_assume(cond)
#else
#define TL_ASSUME(cond) ((cond) ? (void)0 : __builtin_unreachable())
#endif
template <typename T>
__host__ __device__ __forceinline__ T nonneg(T x) {
  TL_ASSUME(x >= 0);
  return x;
}
template <typename T>
__host__ __device__ __forceinline__ T sized_nonneg(T x) {
#if defined(__CUDACC_RTC__) || defined(TL_ASSUME_SIZES)
  TL_ASSUME(x >= 0);
#endif
  return x;
}

// `a << b` and `a >> b` as NumPy computes them, without C's undefined behaviour: a count
// outside [0, bits of T) shifts every bit out (0; -1 for `>>` of a negative a), a left shift
// of a negative a shifts its bits, and the result wraps to T.
template <typename T>
__host__ __device__ __forceinline__ T shl(T a, T b) {
  constexpr unsigned long long bits = sizeof(T) * 8;
  using Wide = typename conditional<sizeof(T) == 8, unsigned long long, unsigned int>::type;
  return static_cast<unsigned long long>(b) < bits ? static_cast<T>(static_cast<Wide>(a) << b) : T(0);
}
template <typename T>
__host__ __device__ __forceinline__ T shr(T a, T b) {
  constexpr unsigned long long bits = sizeof(T) * 8;
  return static_cast<T>(static_cast<unsigned long long>(b) < bits ? a >> b : (a >> (bits - 1)) >> 1);
}

// abs of an integer; the most negative value is its own absolute value (it wraps), as in NumPy.
template <typename T>
__host__ __device__ __forceinline__ T iabs(T x) {
  return is_negative(x) ? static_cast<T>(0ull - static_cast<unsigned long long>(x)) : x;
}

// a ** b of integers, wrapping as repeated multiplication in T does; a negative exponent
// truncates 1 / a**|b| toward zero (1 for a = 1, +-1 for a = -1, else 0), as the interpreter.
template <typename T>
__host__ __device__ __forceinline__ T ipow(T a, T b) {
  if (is_negative(b)) return a == 1 ? T(1) : (is_negative(a) && a == static_cast<T>(0 - 1)) ? static_cast<T>((b & 1) ? -1 : 1) : T(0);
  using Wide = typename conditional<sizeof(T) == 8, unsigned long long, unsigned int>::type;
  Wide base = static_cast<Wide>(a), r = 1;
  for (Wide e = static_cast<Wide>(b); e != 0; e >>= 1) {
    if (e & 1) r *= base;
    base *= base;
  }
  return static_cast<T>(r);
}
__device__ __forceinline__ float floordiv(float a, float b) { return floorf(a / b); }
__device__ __forceinline__ double floordiv(double a, double b) { return floor(a / b); }
// 1 / y by the hardware (rcp.approx.ftz.f32, MUFU.RCP: within 1 ulp; a subnormal y or result
// is 0, so 1 / y is inf below 2^-126 and 0 above 2^126).
__device__ __forceinline__ float rcp_approx(float y) {
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(y));
  return r;
}
// fmodf's value, bit for bit, without its loop where |a / b| < 2^21, and without a branch but
// the one to fmodf: on the magnitudes x = |a|, y = |b|, the truncated quotient q (x times the
// hardware's 1 / y: within 2 ulp) is then the true one or one off, which the sign or size of
// x - q y shows (rounded, it still has the true one's sign and side of y); q corrected by one,
// x - q y is in [0, y) and exact in one FMA, and the result takes a's sign (-0 included).  y is
// clamped to the largest float in the FMAs so that b = inf gives a (q = 0, and 0 * inf is NaN).
// fmodf itself, out of line, for the rest and where 1 / y is not a normal float (y below 2^-126
// makes q inf or NaN; y from 2^126 is checked).  fmodf's subtraction loop and branches were
// most of std.elementwise's fmod and remainder (0.36 and 0.70 of copy on the H200);
// div.full.f32's range scaling was 8 instructions of the 30 an element left.  Checked against
// fmodf on the host, 1 / y moved by up to 2 ulp either way and flushed as the hardware does
// (tests/codegen/test_fmod_fast.py: random bits, near-integer quotients, signed zeros,
// infinities, NaN, subnormals).
inline __device__ __noinline__ float fmod_slow(float a, float b) { return fmodf(a, b); }
__device__ __forceinline__ float fmod_fast(float a, float b) {
  const float x = fabsf(a), y = fabsf(b);
  float q = truncf(x * rcp_approx(y));
  if (!(q < 2097152.0f) || y >= 8.50705917e37f) return fmod_slow(a, b);  // a huge quotient, b = 0 or from 2^126, an infinite a, NaN
  const float m = fminf(y, 3.40282347e38f);
  const float r = fmaf(-q, m, x);
  q += r < 0.0f ? -1.0f : (r >= y ? 1.0f : 0.0f);  // q one too far, one short
  return copysignf(fmaf(-q, m, x), a);
}
__device__ __forceinline__ float pymod(float a, float b) {
  float r = fmod_fast(a, b);
  return (r != 0.0f && ((r < 0.0f) != (b < 0.0f))) ? r + b : r;
}
__device__ __forceinline__ double pymod(double a, double b) {
  double r = fmod(a, b);
  return (r != 0.0 && ((r < 0.0) != (b < 0.0))) ? r + b : r;
}

// A 32-bit word's low or high 16 bits as a 16-bit float, reinterpret(u16(w), f16) and
// reinterpret(u16(w >> 16), f16) of a u32 w (codegen/cexpr.py): one mov.b32 {lo, hi} in PTX, so
// that ptxas, pairing f16 operations on the two halves into HADD2 / HMUL2, reads the word
// itself; as a shift and a conversion it repacked the halves first (SHF + PRMT a word).
__device__ __forceinline__ half u32_half_lo(unsigned int w) { return __low2half(*reinterpret_cast<const __half2*>(&w)); }
__device__ __forceinline__ half u32_half_hi(unsigned int w) { return __high2half(*reinterpret_cast<const __half2*>(&w)); }
__device__ __forceinline__ __nv_bfloat16 u32_bf16_lo(unsigned int w) { return __low2bfloat16(*reinterpret_cast<const __nv_bfloat162*>(&w)); }
__device__ __forceinline__ __nv_bfloat16 u32_bf16_hi(unsigned int w) { return __high2bfloat16(*reinterpret_cast<const __nv_bfloat162*>(&w)); }

// 2^x and e^x by the hardware approximation (MUFU.EX2: relative error below 2^-21, results
// below 2^-126 flushed to zero): for values kept at 16-bit precision, whose half ulp is 2^-12
// (f16) or 2^-9 (bf16).  codegen/cexpr.py says where they are used instead of expf / exp2f.
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ float fast_exp(float x) { return fast_exp2(x * 1.4426950408889634f); }

// log2(1 + f), u = 1 + f, for values kept at 16-bit precision (schedule/fast_math.py): the
// hardware's log2 of u (MUFU.LG2, absolute error below 2^-22) where f is farther than 1/4 from 0,
// so that |log2 u| > 0.32 and the relative error is below 2^-20; within, where the result goes
// to 0 and an absolute error would not do, a degree-7 polynomial of f fitted for relative error
// (2^-22.9 in f32 with FMAs).  12 instructions, where log2f takes about 25 and log1pf more; no
// branch.  u = 0 gives -inf, a negative u or NaN NaN, inf inf, subnormals kept.
template <bool FTZ = false>  // FTZ: u is 0 or normal (an f16 value): lg2.approx.ftz, no subnormal scaling
__device__ __forceinline__ float fast_log2_near1(float f, float u) {
  float y;
  if constexpr (FTZ) asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(u));
  else asm("lg2.approx.f32 %0, %1;" : "=f"(y) : "f"(u));
  float p = fmaf(f, -0.19865205883979797f, 0.2263186275959015f);
  p = fmaf(p, f, -0.2397650182247162f);
  p = fmaf(p, f, 0.28778716921806335f);
  p = fmaf(p, f, -0.3606816530227661f);
  p = fmaf(p, f, 0.48090705275535583f);
  p = fmaf(p, f, -0.7213475108146667f);
  p = fmaf(p, f, 1.4426950216293335f);
  return fabsf(f) < 0.25f ? f * p : y;
}
// log2(x): f = x - 1 is exact where the polynomial takes it (x in [0.75, 1.25]).
__device__ __forceinline__ float fast_log2(float x) { return fast_log2_near1(x - 1.0f, x); }
__device__ __forceinline__ float fast_log(float x) { return fast_log2(x) * 0.6931471805599453f; }
// log(1 + x): the polynomial of x itself near 0, so that no rounding of 1 + x is seen there.
__device__ __forceinline__ float fast_log1p(float x) { return fast_log2_near1(x, 1.0f + x) * 0.6931471805599453f; }

// a^b for values kept at 16-bit precision (schedule/fast_math.py): 2^(b log2 |a|) by fast_log2
// and the hardware's 2^x (MUFU.LG2, MUFU.EX2), where powf takes about 80 instructions (a log2 in
// two floats' precision, an exact product, the exponential).  Relative error below
// 2^-20 |b log2 a| + 2^-21: at most 2^-16 for a result in f16's range (|b log2 a| <= 25), under
// its half ulp (2^-11); results below 2^-126 are flushed to 0.  powf's special values, each by a
// select: a negative a takes the sign of an odd integer b and gives NaN for a fractional b (an
// infinite a gives inf or 0), b = 0 or a = 1 gives 1 (NaN or not), a = -1 and b = +-inf 1; the
// rest (0, inf and NaN arguments) come out of the logarithm and the exponential as powf's do.
// Selects, not branches: `||` of the tests for 1 was a branch an element.  fast_pow_near: of an
// f16 a (never a subnormal f32), whose logarithm needs no scaling of subnormals (4 instructions).
// RARE (fast_pow_rare, fast_pow_near_rare; fast_math.RARE_POW_SPECIALS): the special cases
// behind one branch an element, taken only by a negative base (its sign bit) or a NaN product
// t (0 * inf, inf * 0, a NaN argument): for a positive base whose t is a number, 2^t is powf's
// value and the selects change nothing (b = 0 or a = 1 with a finite other gives t = 0).  The
// same values bit for bit; sm_90a, std.elementwise's pow of f16: 21 SASS instructions an
// element on the taken path where the selects take 34 (FSETP 10 -> 2, FSEL 4 -> 0; std.broadcast's
// pow, 0.55 of copy on the H200, is issue-bound), but ptxas hoists every element's logarithm
// above the branches: std.broadcast's pow kernel 64 -> 95 registers.  Not yet timed.
template <bool F16, bool RARE = false>
__device__ __forceinline__ float pow_of(float a, float b) {
  const float x = fabsf(a);
  const float t = b * fast_log2_near1<F16>(x - 1.0f, x);
  float r = fast_exp2(t);
  if (!RARE || __builtin_expect(signbit(a) || t != t, 0)) {
    // b = 2 trunc(b / 2) + d (exact, |d| < 2): an integer b has d = 0 or +-1 (odd), a fraction any
    // other d; +-inf and NaN a NaN d (+-inf counts as an even integer)
    const float d = fabsf(fmaf(-2.0f, truncf(0.5f * b), b));
    r = a < 0.0f && d != 1.0f && d > 0.0f && x != __int_as_float(0x7f800000) ? __int_as_float(0x7fffffff) : r;
    r = d == 1.0f && signbit(a) ? -r : r;
    r = b == 0.0f ? 1.0f : r;
    r = a == 1.0f ? 1.0f : r;
    r = x == 1.0f && fabsf(b) == __int_as_float(0x7f800000) ? 1.0f : r;
  }
  return r;
}
__device__ __forceinline__ float fast_pow_near(float a, float b) { return pow_of<true>(a, b); }
__device__ __forceinline__ float fast_pow(float a, float b) { return pow_of<false>(a, b); }
__device__ __forceinline__ float fast_pow_near_rare(float a, float b) { return pow_of<true, true>(a, b); }
__device__ __forceinline__ float fast_pow_rare(float a, float b) { return pow_of<false, true>(a, b); }
// RARE's test once a run (codegen/rare_runs.py): the common path's 2^t, `rare` set where pow_of's
// branch would be taken; the run's loop then computes the whole run again by fast_pow(_near)'s
// selects, whose values are RARE's bit for bit.  `||` (predicates, no branch: nothing to skip)
// rather than `|` of the int signbit: 1043 SASS instructions on std.broadcast's pow hot path
// (the TL_WHOLE_RUNS build, BLOCKS = 8, sm_90a) where `|` took 1105.
template <bool F16>
__device__ __forceinline__ float pow_flagged(float a, float b, bool& rare) {
  const float x = fabsf(a);
  const float t = b * fast_log2_near1<F16>(x - 1.0f, x);
  rare = rare || signbit(a) || t != t;
  return fast_exp2(t);
}
__device__ __forceinline__ float fast_pow_near_flagged(float a, float b, bool& rare) { return pow_flagged<true>(a, b, rare); }
__device__ __forceinline__ float fast_pow_flagged(float a, float b, bool& rare) { return pow_flagged<false>(a, b, rare); }

// atan(x) for values kept at 16-bit precision (schedule/fast_math.py): t = |x|, or the
// hardware's 1 / |x| (MUFU.RCP: 1 ulp) above 1, atan t = t P(t^2) with P of degree 5 fitted for
// relative error (2^-17.8 on [0, 1]), pi/2 minus that above 1, x's sign.  Relative error below
// 2^-17, under a 16-bit half ulp (2^-11 f16, 2^-8 bf16); no division or branch: 12 instructions
// where atanf takes 18 and an IEEE division's reduction 24.  NaN stays NaN, +-inf is +-pi/2.
__device__ __forceinline__ float atan_unit(float t) {  // atan t for t in [0, 1] (and NaN)
  const float z = t * t;
  float p = fmaf(z, -0.013480531051754951f, 0.05747745558619499f);
  p = fmaf(p, z, -0.12123918533325195f);
  p = fmaf(p, z, 0.19563595950603485f);
  p = fmaf(p, z, -0.33299461007118225f);
  p = fmaf(p, z, 0.9999956488609314f);
  return t * p;
}
__device__ __forceinline__ float fast_atan(float x) {
  const float a = fabsf(x);
  const bool big = a > 1.0f;
  const float r = atan_unit(big ? rcp_approx(a) : a);  // from 2^126 on 0: pi/2, as atan is in f32
  return copysignf(big ? 1.5707963267948966f - r : r, x);
}

// tan(x) for values kept at 16-bit precision (schedule/fast_math.py): x = k pi/2 + r, |r| <= pi/4,
// k by the round-to-nearest of adding 1.5 * 2^23 (its parity is the sum's last bit), r by FMAs
// with pi/2 in three positive floats (each product exact in the FMA: r within an ulp of r's for
// |x| < 2^17; of an f16 argument the third, 5.4e-15 k, is left out: on every f16 value the error
// is then the polynomial's; all positive, so that tan(-0) = -0), tan r = r (1 + r^2 P(r^2)) with P
// of degree 3 fitted for relative error (2^-18.1), and for odd k -1 / tan r by the hardware's
// reciprocal (MUFU.RCP, 1 ulp).  Relative error below 2^-17 but next to the poles and zeros of
// tan, where r itself is that precise; no division: 14.5 SASS instructions an element (sm_90a, f16
// argument), tanf 23 with a reduction that branches.  |x| >= 2^17 (bf16 only: f16 ends at 65504),
// infinities and NaN: tanf, out of line.  fast_tan_near: the same for an f16 argument
// (schedule/fast_math.py knows it), without the check and its branch (5 instructions an element).
inline __device__ __noinline__ float tan_slow(float x) { return tanf(x); }
template <bool F16>
__device__ __forceinline__ float tan_by_half_pi(float x) {
  const float kk = fmaf(x, 0.6366197723675814f, 12582912.0f);
  const float k = kk - 12582912.0f;
  const float r1 = fmaf(-k, 1.570796251296997f, x);  // pi/2's parts: minus_pi_times's halved
  const float r = F16 ? fmaf(-k, 7.549790126404332e-08f, r1)
                      : fmaf(-k, 5.390302953474238e-15f, fmaf(-k, 7.549789415861596e-08f, r1));
  const float z = r * r;
  float p = fmaf(z, 0.04308871924877167f, 0.04139864817261696f);
  p = fmaf(p, z, 0.1360650211572647f);
  p = fmaf(p, z, 0.3331543505191803f);
  const float t = r * fmaf(z, p, 1.0f);
  const float cot = -rcp_approx(t);
  return (__float_as_int(kk) & 1) ? cot : t;  // both computed (as `?:`'s operands, a branch an element)
}
__device__ __forceinline__ float fast_tan_near(float x) { return tan_by_half_pi<true>(x); }
__device__ __forceinline__ float fast_tan(float x) { return fabsf(x) < 131072.0f ? tan_by_half_pi<false>(x) : tan_slow(x); }

// sin(x) and cos(x) for values kept at 16-bit precision (schedule/fast_math.py), reduced by pi
// rather than pi/2, so that one odd polynomial serves both and no select of coefficients is
// needed: x = k pi + r, |r| <= pi/2, k by the round-to-nearest of adding 1.5 * 2^23 to x / pi (its
// parity is the sum's last bit, for a negative k too), r by FMAs with pi in three floats (tan's
// pi/2 doubled: each product exact in the FMA, r within an ulp of r's for |x| < 2^17; of an f16
// argument the third, 3.4e-15 k, is left out: on every f16 value the error is the polynomial's),
// sin r = r (1 + r^2 P(r^2)) with P of degree 2 fitted for relative error on |r| <= pi/2 + 1/80
// (2^-19.7; k may be one off where x / pi is that near a half; r times, so that sin(-0) = -0),
// and sin x = (-1)^k sin r; cos x = (-1)^(k+1) sin r with r = x - (k + 1/2) pi, k the integer
// nearest x / pi - 1/2 (r is never 0).  Relative error below 2^-19 (2^-19.6 on every f16 and bf16
// value, next to the zeros too: r is that precise), under a 16-bit half ulp (2^-12 f16); no
// branch: 11.1 and 13.2 SASS instructions an element (scripts/ew-sass: sm_90a, f16) where sinf
// and cosf take 24.6 and 25.6, with a reduction that branches around a Payne-Hanek slow path
// that an f16 argument never takes (a degree-3 P and |x|'s sign by bit operations took 14.1 and
// 15.1).  Infinities and NaN give NaN.  |x| >= 2^17 (bf16 or f32 only): sinf, cosf, out of line.
// fast_sin_near, fast_cos_near: the same for an f16 argument (schedule/fast_math.py knows it),
// without the check.
__device__ __forceinline__ float sin_reduced(float r) {  // sin r for |r| <= pi/2 + 1/80
  const float z = r * r;
  const float p = fmaf(fmaf(z, -0.000185216122190468f, 0.00831365492194891f), z, -0.16665813326835632f);
  return r * fmaf(z, p, 1.0f);
}
// x - k pi for an integer k (a float) with |x| < 2^17; F16: x is an f16 value.  pi's parts are
// positive (its f32 rounded down, then the rest), so that every product is -0 for k = 0 and
// x - 0 pi is x, -0 too.
template <bool F16>
__device__ __forceinline__ float minus_pi_times(float x, float k) {
  const float r = fmaf(-k, 3.141592502593994f, x);
  if constexpr (F16) return fmaf(-k, 1.5099580252808664e-07f, r);
  else return fmaf(-k, 1.0780605906948477e-14f, fmaf(-k, 1.5099578831723193e-07f, r));
}
template <bool F16>
__device__ __forceinline__ float sin_by_pi(float x) {
  const float kk = fmaf(x, 0.3183098861837907f, 12582912.0f);
  const float r = minus_pi_times<F16>(x, kk - 12582912.0f);
  return __uint_as_float(__float_as_uint(sin_reduced(r)) ^ (__float_as_uint(kk) << 31));
}
template <bool F16>
__device__ __forceinline__ float cos_by_pi(float x) {
  const float kk = fmaf(x, 0.3183098861837907f, -0.5f) + 12582912.0f;
  const float r = minus_pi_times<F16>(x, (kk - 12582912.0f) + 0.5f);  // k + 1/2, exact
  return __uint_as_float(__float_as_uint(sin_reduced(r)) ^ ((__float_as_uint(kk) << 31) ^ 0x80000000u));
}
__device__ __forceinline__ float fast_sin_near(float x) { return sin_by_pi<true>(x); }
__device__ __forceinline__ float fast_cos_near(float x) { return cos_by_pi<true>(x); }
inline __device__ __noinline__ float sin_slow(float x) { return sinf(x); }
inline __device__ __noinline__ float cos_slow(float x) { return cosf(x); }
__device__ __forceinline__ float fast_sin(float x) { return fabsf(x) < 131072.0f ? sin_by_pi<false>(x) : sin_slow(x); }
__device__ __forceinline__ float fast_cos(float x) { return fabsf(x) < 131072.0f ? cos_by_pi<false>(x) : cos_slow(x); }

// erf(x) for values kept at 16-bit precision (schedule/fast_math.py): below |x| = 0.75, x P(x^2)
// with P of degree 3 (relative error 2^-18.3); above, 1 - 2^Q(|x|), with Q of degree 5 fitted on
// [0.75, 4] for the error of erf (2^-17.5) and of erfc = 2^Q (2^-13.5, so that 1 + erf(x) of a
// negative x, as a GELU computes it, keeps 13 bits until f32's rounding of 1 - 2^Q takes over, as
// it does for erff), by the hardware's 2^x (MUFU.EX2, 2^-21), x's sign.  Beyond 4, where erf is 1
// in f32 (from 3.92 on), Q falls monotonically from -25.9 (to -inf: 2^Q is 0), so |x| is not
// clamped there.  Relative error below 2^-17; 14 instructions and no branch, erff 22.  NaN stays
// NaN.
__device__ __forceinline__ float fast_erf(float x) {
  const float a = fabsf(x);
  const float s = x * x;
  float p = fmaf(s, -0.021644089370965958f, 0.11106058955192566f);
  p = fmaf(p, s, -0.3759274184703827f);
  p = fmaf(p, s, 1.1283756494522095f);
  float q = fmaf(a, -0.0008930595358833671f, 0.014698860235512257f);
  q = fmaf(q, a, -0.10614126175642014f);
  q = fmaf(q, a, -0.9777499437332153f);
  q = fmaf(q, a, -1.588014841079712f);
  q = fmaf(q, a, -0.010320092551410198f);
  const float big = copysignf(1.0f - fast_exp2(q), x), small = x * p;
  return a >= 0.75f ? big : small;  // both computed: as `?:`'s operands they became a branch an element
}

// a / b by the hardware's full-range approximate division (div.full.f32: within 2 ulp over the
// whole range, subnormals kept; MUFU.RCP and a few multiplications, no branch), where the IEEE
// division costs a check and a slow-path call per element: for quotients kept at 16-bit
// precision (schedule/fast_math.py).  f64 divides.
__device__ __forceinline__ float fast_div(float a, float b) {
  float q;
  asm("div.full.f32 %0, %1, %2;" : "=f"(q) : "f"(a), "f"(b));
  return q;
}
__device__ __forceinline__ double fast_div(double a, double b) { return a / b; }
// a / b of an f16 divisor (schedule/fast_math.py: b a cast of an f16 value, so never subnormal
// in f32 and at most 65504): a times the hardware's reciprocal of b (MUFU.RCP, 1 ulp; 0 gives
// inf, inf 0, so 0 / 0 and inf / inf are NaN as the division's), within 2 ulp of f32, where
// div.full.f32 scales a divisor beyond 2^126 (two FSETPs and four more FMULs an element:
// std.broadcast.div f16, 10.5 SASS instructions an element of its hot path).
__device__ __forceinline__ float fast_div_near(float a, float b) { return a * rcp_approx(b); }

// atan2(y, x) for values kept at 16-bit precision (schedule/fast_math.py): atan of t = lo / hi (the
// smaller and larger of |x|, |y|: t in [0, 1], 0 at the origin) by fast_atan's polynomial
// (2^-17.8), pi/2 minus that where |y| > |x| (at least pi/4: the error does not grow), pi minus
// that where x's sign bit is set (atan2(+-0, -0) = +-pi, as C's), NaN where x or y is, y's sign.
// Relative error below 2^-17; the quotient by fast_div, or, of two f16 arguments
// (fast_atan2_near: no subnormal hi), as lo times the hardware's reciprocal of hi (MUFU.RCP: an
// infinite hi gives 0); no branch.  Infinite x and y both: NaN (C's is an odd multiple of pi/4).
template <bool F16>
__device__ __forceinline__ float atan2_of(float y, float x) {
  const float lo = fminf(fabsf(x), fabsf(y)), hi = fmaxf(fabsf(x), fabsf(y));
  const float t = F16 ? lo * rcp_approx(hi) : fast_div(lo, hi);
  float r = atan_unit(hi == 0.0f ? 0.0f : t);
  r = fabsf(y) > fabsf(x) ? 1.5707963267948966f - r : r;
  r = signbit(x) ? 3.141592653589793f - r : r;
  r = (x != x) | (y != y) ? x + y : r;  // fminf and fmaxf drop a NaN
  return copysignf(r, y);
}
__device__ __forceinline__ float fast_atan2_near(float y, float x) { return atan2_of<true>(y, x); }
__device__ __forceinline__ float fast_atan2(float y, float x) { return atan2_of<false>(y, x); }

// The square root by the hardware (sqrt.approx.f32: MUFU.SQRT, a few ulp, subnormals scaled, no
// branch), where sqrtf's correctly rounded one is a check, a branch and a slow-path call per
// element: for values kept at 16-bit precision (schedule/fast_math.py).
__device__ __forceinline__ float fast_sqrt(float x) {
  float y;
  asm("sqrt.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// log2(x) and sqrt(x) by the hardware (lg2.approx.ftz.f32, MUFU.LG2: absolute error below 2^-22;
// sqrt.approx.ftz.f32, MUFU.SQRT), a subnormal x taken as 0: for fast_atanh's and fast_asinh's
// arguments, 0 or from 1/2^11 on, where the forms without .ftz scale subnormals (3 instructions).
__device__ __forceinline__ float lg2_approx(float x) {
  float y;
  asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ float sqrt_approx(float x) {
  float y;
  asm("sqrt.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// atanh(x) for values kept at 16-bit precision (schedule/fast_math.py): below |x| = 1/4,
// |x| + |x|^3 P(x^2) with P of degree 1 (relative error 2^-19.4); above, (log2(1 + a) - log2(1 - a))
// ln(2) / 2 by the hardware's log2 (1 - a exact, the difference at least 0.74: 2^-21 relative; a
// reciprocal of 1 - a would flush to 0 beyond 2^126, where the logarithm of a negative must be NaN),
// x's sign.  Relative error below 2^-18; 13 instructions, no branch, where 0.5 log1p(2a / (1 - a))
// took 28.5 and atanhf takes 32.  1 gives inf, beyond 1 NaN, as atanh.
__device__ __forceinline__ float fast_atanh(float x) {
  const float a = fabsf(x), z = a * a;
  const float small = fmaf(a * z, fmaf(z, 0.2131504863500595f, 0.3330741822719574f), a);
  const float big = 0.34657359027997264f * (lg2_approx(1.0f + a) - lg2_approx(1.0f - a));
  return copysignf(a < 0.25f ? small : big, x);  // NaN: big, NaN
}

// asinh(x) for values kept at 16-bit precision (schedule/fast_math.py): below |x| = 1/4,
// |x| + |x|^3 P(x^2) with P of degree 1 (2^-21.3); above, ln(a + sqrt(a^2 + 1)) by the hardware's
// square root and log2 (the logarithm at least 0.36: 2^-20 relative), ln(2a) from a = 2^12 on
// (where sqrt(a^2 + 1) is a in f32; 2a itself would overflow for bf16's largest; of an f16
// argument, fast_asinh_near, a^2 + 1 does not overflow and sqrt(a^2 + 1) is a, so that a + a is
// 2a there by itself), x's sign.  Relative error below 2^-18; 15.5 instructions an element
// (12.5 of an f16 argument), no branch, where log1p(a + a^2 / (1 + sqrt(1 + a^2))) took 33.2 and
// asinhf takes 36.  +-inf stays, NaN stays NaN.
template <bool F16>
__device__ __forceinline__ float asinh_of(float x) {
  const float a = fabsf(x), z = a * a;
  const float small = fmaf(a * z, fmaf(z, 0.07129475474357605f, -0.1665962189435959f), a);
  float lg;
  if constexpr (F16) {
    lg = lg2_approx(a + sqrt_approx(fmaf(a, a, 1.0f)));
  } else {
    const bool huge = a > 4096.0f;
    lg = lg2_approx(huge ? a : a + sqrt_approx(fmaf(a, a, 1.0f))) + (huge ? 1.0f : 0.0f);
  }
  return copysignf(a < 0.25f ? small : 0.6931471805599453f * lg, x);  // NaN: big, NaN
}
__device__ __forceinline__ float fast_asinh_near(float x) { return asinh_of<true>(x); }
__device__ __forceinline__ float fast_asinh(float x) { return asinh_of<false>(x); }

// acosh(x) for values kept at 16-bit precision (schedule/fast_math.py): with t = x - 1 (exact
// near 1) and s = sqrt(t (|x| + 1)) by the hardware's square root (an FMA; the root of a negative
// below 1), below t = 1/16 s R(t) with R of degree 2 fitted for relative error (acosh(1 + t) /
// sqrt(t (2 + t)), 2^-21.2); above, ln(x + s) by the hardware's log2 (the logarithm at least 0.5:
// 2^-21 relative).  Relative error below 2^-20; one root and one logarithm, no branch: 10.1 SASS
// instructions an element of an f16 argument (scripts/ew-sass: sm_90a), where log1p(t + sqrt(t (x + 1))) took 23.1
// (fast_log1p's polynomial beside its logarithm) and acoshf takes about 25.  1 gives 0, below 1
// NaN, +inf inf, NaN NaN.  fast_acosh_near: of an f16 argument (schedule/fast_math.py knows it);
// fast_acosh, of a larger one: ln(2x) from x = 2^12 on (where s is x in f32, and t (|x| + 1)
// overflows from 2^64).
template <bool F16>
__device__ __forceinline__ float acosh_of(float x) {
  const float t = x - 1.0f;
  const float s = sqrt_approx(fmaf(t, fabsf(x), t));
  const float small = s * fmaf(fmaf(t, 0.12817129492759705f, -0.3332151174545288f), t, 0.9999996423721313f);
  float lg;
  if constexpr (F16) {
    lg = lg2_approx(x + s);
  } else {
    const bool huge = x > 4096.0f;
    lg = lg2_approx(huge ? x : x + s) + (huge ? 1.0f : 0.0f);
  }
  return t < 0.0625f ? small : 0.6931471805599453f * lg;  // NaN: the logarithm's, NaN
}
__device__ __forceinline__ float fast_acosh_near(float x) { return acosh_of<true>(x); }
__device__ __forceinline__ float fast_acosh(float x) { return acosh_of<false>(x); }

// e^x - 1 for values kept at 16-bit precision (schedule/fast_math.py): below |x| = 1/8,
// x (1 + x P(x)) with P of degree 2 fitted for relative error (2^-21.4; x's sign kept, -0 too);
// above, the hardware's e^x (MUFU.EX2, 2^-21) minus 1, which cancels by at most a factor 8.5
// there (2^-18).  Relative error below 2^-17.5; 8.4 SASS instructions an element, no branch,
// where expf minus 1 beside a degree-7 polynomial took 13.1 (scripts/ew-sass: sm_90a, f16) and
// expm1f takes 28.  inf gives inf, -inf -1, NaN NaN.
__device__ __forceinline__ float fast_expm1(float x) {
  const float p = fmaf(fmaf(x, 0.041659217327833176f, 0.16677451133728027f), x, 0.5000002980232239f);
  const float small = x * fmaf(x, p, 1.0f);
  const float big = fast_exp(x) - 1.0f;
  return fabsf(x) < 0.125f ? small : big;  // NaN: big, NaN
}

// acos(x) for values kept at 16-bit precision (schedule/fast_math.py): acos |x| = sqrt(1 - |x|)
// Q(|x|) on [0, 1] with Q of degree 5 fitted for relative error (2^-20.3; 1 - |x| exact, the
// hardware's square root), pi minus that for a negative x.  Relative error below 2^-19; 11
// instructions and no branch, where Cephes' two intervals took 25 and acosf takes 23.  Beyond 1
// the square root of a negative gives NaN, as acos.
__device__ __forceinline__ float acos_of_abs(float a) {
  float q = fmaf(a, -0.004307074937969446f, 0.019273390993475914f);
  q = fmaf(q, a, -0.04489213973283768f);
  q = fmaf(q, a, 0.0878526046872139f);
  q = fmaf(q, a, -0.21450942754745483f);
  q = fmaf(q, a, 1.5707951784133911f);
  return sqrt_approx(1.0f - a) * q;
}
__device__ __forceinline__ float fast_acos(float x) {
  const float r = acos_of_abs(fabsf(x));
  return x < 0.0f ? 3.141592653589793f - r : r;
}

// asin(x) for values kept at 16-bit precision (schedule/fast_math.py): asin w = w + w^3 P(w^2)
// with P of degree 2 fitted on [0, 1/2], of w = |x| below 1/2 and, above, of w = sqrt((1 - |x|) / 2)
// (one FMA, exact; the hardware's square root), for asin |x| = pi/2 - 2 asin w (at least 0.52,
// twice p's error near w = 1/2: P is fitted for the larger of the two relative errors, 2^-18.8
// either way); x's sign.  One polynomial for both sides: relative error below 2^-18; 13 SASS
// instructions an element, no branch, where the polynomial beside fast_acos's form took 15.1 and
// asinf takes 22.  Beyond 1 the square root of a negative gives NaN, as asin.
__device__ __forceinline__ float fast_asin(float x) {
  const float a = fabsf(x);
  const bool small = a < 0.5f;
  const float w = small ? a : sqrt_approx(fmaf(-0.5f, a, 0.5f));
  const float z = w * w;
  const float p = fmaf(w * z, fmaf(fmaf(z, 0.06514810770750046f, 0.07155761122703552f), z, 0.16682453453540802f), w);
  return copysignf(small ? p : fmaf(-2.0f, p, 1.5707963267948966f), x);  // NaN: NaN
}

// The exponential and the reciprocal of the hardware (MUFU.EX2, MUFU.RCP: a few ulp, as CUDA's
// __expf and __fdividef): an IEEE division costs a branch and a slow path per element, which
// an activation in a GEMM epilogue pays 128 times a thread per tile.  1 / inf is 0.  The
// exponential flushes subnormals (fast_exp's ex2.approx.ftz): where e^-x is below 2^-126
// the sigmoid is 1 to f32 precision either way, and __expf's own subnormal handling costs
// three more instructions per element.
__device__ __forceinline__ float sigmoid(float x) { return __fdividef(1.0f, 1.0f + fast_exp(-x)); }
__device__ __forceinline__ double sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

// The language's fast_tanh: the hardware's tanh (MUFU.TANH, one instruction where tanhf takes
// about 20), relative error below 2^-16 on the H200 (measured over [-12, 12]).  An activation
// in a GEMM epilogue runs while the tensor cores wait, so its MUFU instructions are the cost.
__device__ __forceinline__ float fast_tanh(float x) {
  float y;
  asm("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
// `where` of float values one of which calls a math function (codegen/cexpr.py): both arguments
// computed before the select, so that no branch an element divides a warp (a `?:` of the calls
// themselves became one).
template <typename T> __host__ __device__ __forceinline__ T select(bool c, T a, T b) { return c ? a : b; }
template <typename T> __host__ __device__ __forceinline__ T imin(T a, T b) { return a < b ? a : b; }
template <typename T> __host__ __device__ __forceinline__ T imax(T a, T b) { return a > b ? a : b; }

// Swizzle<3,4,3> on byte offsets: the 16-byte chunk inside each 128-byte line is XORed with
// the line's index mod 8, so that the 8 rows an ldmatrix reads land in 8 different bank groups.
__host__ __device__ __forceinline__ int swizzle128(int byte_offset) {
  return byte_offset ^ (((byte_offset >> 7) & 7) << 4);
}

}  // namespace tl
