// tl_cpu.h: what a kernel of the cpu target (tlc/codegen/cpp) calls, in C++17 for g++ with OpenMP.
// The conversions and integer helpers are tl/types.cuh's own (its host-portable part, pasted
// before this file by the generator); here: the 16-bit float types, the conversions that must
// saturate on a CPU too, the math the CUDA headers give, and the whole-tile operations (copy,
// gemm, reduce, cumsum) with the interpreter's numerics (tlc/interp/tiles.py).
namespace tl {

// A float into an integer truncates toward zero and saturates, NaN gives 0 (the GPU's cvt.rzi,
// the interpreter's cast); a C cast of an out-of-range float is undefined on a CPU.
template <typename To, typename W>
inline To float_to_int(W w) {
  if (w != w) return To(0);
  constexpr W hi = static_cast<W>(std::numeric_limits<To>::max());
  constexpr W lo = static_cast<W>(std::numeric_limits<To>::min());
  if (w >= hi) return std::numeric_limits<To>::max();
  if (w <= lo) return std::numeric_limits<To>::min();
  return static_cast<To>(w);
}
template <typename To, typename W>
inline To from_wide_float(W w) {
  if constexpr (std::is_same<To, bool>::value) {
    return w != W(0);
  } else if constexpr (std::is_integral<To>::value) {
    return float_to_int<To>(w);
  } else {
    return To(w);
  }
}
// More specialized than types.cuh's cvt<To, From>, so chosen for every float source.
template <typename To> inline To cvt(float x) { return from_wide_float<To>(x); }
template <typename To> inline To cvt(double x) { return from_wide_float<To>(x); }
template <typename To> inline To cvt(half x) { return from_wide_float<To>(static_cast<float>(x)); }
template <typename To> inline To cvt(__nv_bfloat16 x) { return from_wide_float<To>(static_cast<float>(x)); }
template <typename To> inline To cvt(__nv_fp8_e4m3 x) { return from_wide_float<To>(static_cast<float>(x)); }
template <typename To> inline To cvt(__nv_fp8_e5m2 x) { return from_wide_float<To>(static_cast<float>(x)); }

// (types.cuh defines these after its first device-only function, where this file's copy ends)
template <typename T> inline T select(bool c, T a, T b) { return c ? a : b; }  // codegen/cexpr.py's `where` of calls
template <typename T> inline T imin(T a, T b) { return a < b ? a : b; }
template <typename T> inline T imax(T a, T b) { return a > b ? a : b; }

inline float floordiv(float a, float b) { return std::floor(a / b); }
inline double floordiv(double a, double b) { return std::floor(a / b); }
inline float pymod(float a, float b) {
  float r = std::fmod(a, b);
  return (r != 0.0f && ((r < 0.0f) != (b < 0.0f))) ? r + b : r;
}
inline double pymod(double a, double b) {
  double r = std::fmod(a, b);
  return (r != 0.0 && ((r < 0.0) != (b < 0.0))) ? r + b : r;
}
// c[0] + x (c[1] + x (c[2] + ...)): a polynomial by Horner's rule, its coefficients from the
// constant term up.
template <int N>
inline double poly(double x, const double (&c)[N]) {
  double p = c[N - 1];
  for (int i = N - 2; i >= 0; --i) p = p * x + c[i];
  return p;
}
// 2^x for a float's range, in double and without a call, so that a loop of them vectorizes
// (libm's exp2f is a call an element): x = n + f, |f| <= 1/2, 2^f by its Taylor series to the
// 10th power (relative error below 2^-42), 2^n into the exponent's bits.  Rounded to float
// once, this is the correctly rounded value but where it lies within 2^-17 ulp of a tie
// (NumPy's float exp2, the interpreter's, is an ulp off in a fifth of its values).
inline double exp2_wide(double x) {
  double c = x < 200.0 ? x : 200.0;  // NaN too: its value is chosen at the end
  c = c > -200.0 ? c : -200.0;
  const double shifted = c + 0x1.8p52;  // c rounded to an integer n, in the low bits
  const double f = c - (shifted - 0x1.8p52);
  long long n;
  std::memcpy(&n, &shifted, 8);
  n = (n - 0x4338000000000000LL + 1023) << 52;  // 2^n's bits
  double scale;
  std::memcpy(&scale, &n, 8);
  const double y = f * 0x1.62e42fefa39efp-1;  // f ln 2
  constexpr double taylor[] = {1.0, 1.0, 0.5, 1.0 / 6.0, 1.0 / 24.0, 1.0 / 120.0, 1.0 / 720.0, 1.0 / 5040.0,
                               1.0 / 40320.0, 1.0 / 362880.0, 1.0 / 3628800.0};  // e^y's, to y^10
  const double p = poly(y, taylor);
  return x != x ? x : p * scale;
}
// The GPU's approximations are the precise functions here, as in the interpreter.
inline float fast_exp2(float x) { return static_cast<float>(exp2_wide(x)); }
inline float fast_exp(float x) { return static_cast<float>(exp2_wide(x * 0x1.71547652b82fep0)); }  // x log2(e)
// log(x) = e ln 2 + log(m) for x = 2^e m, m in [sqrt(1/2), sqrt(2)), in double and without a call
// (so that a loop of them vectorizes): log(m) = 2 atanh(s), s = (m - 1) / (m + 1), |s| < 0.172,
// by its series to s^19 (2^-50 relative); 0, negative values, infinity and NaN by selects.
// Rounded to float once: the correctly rounded value but within 2^-20 ulp of a tie.
template <bool BASE2>
inline double log_wide(float x) {
  const bool tiny = x < 0x1p-126f;  // a subnormal, scaled into the normal range first
  const float a = tiny ? x * 0x1p24f : x;
  unsigned int u;
  std::memcpy(&u, &a, 4);
  const unsigned int off = u - 0x3f3504f3u;  // sqrt(1/2)'s bits: the exponent counted from it
  const int e = static_cast<int>(off) >> 23;
  const unsigned int mu = u - (off & 0xff800000u);
  float m;
  std::memcpy(&m, &mu, 4);
  const double md = m, t = (md - 1.0) / (md + 1.0), t2 = t * t;
  constexpr double atanh_series[] = {1.0, 1.0 / 3.0, 1.0 / 5.0, 1.0 / 7.0, 1.0 / 9.0, 1.0 / 11.0, 1.0 / 13.0,
                                      1.0 / 15.0, 1.0 / 17.0, 1.0 / 19.0};  // atanh(t) / t in t^2
  const double p = poly(t2, atanh_series);
  const double log_m = 2.0 * t * p, k = static_cast<double>(e - (tiny ? 24 : 0));
  double r = BASE2 ? k + log_m * 0x1.71547652b82fep0 : k * 0x1.62e42fefa39efp-1 + log_m;
  r = x == 0.0f ? -std::numeric_limits<double>::infinity() : r;
  r = x < 0.0f ? std::numeric_limits<double>::quiet_NaN() : r;
  r = x == std::numeric_limits<float>::infinity() ? static_cast<double>(x) : r;
  return x != x ? static_cast<double>(x) : r;
}
inline float fast_log2(float x) { return static_cast<float>(log_wide<true>(x)); }
inline float fast_log(float x) { return static_cast<float>(log_wide<false>(x)); }
inline float fast_log1p(float x) { return log1pf(x); }
inline float fast_div(float a, float b) { return a / b; }
inline double fast_div(double a, double b) { return a / b; }
inline float fast_div_near(float a, float b) { return a / b; }
inline float fast_sqrt(float x) { return std::sqrt(x); }
// tanh in double without a call: |x| < 1/8 by its series to x^15 (2^-58 relative), else
// 1 - 2 / (e^2|x| + 1) by exp2_wide (2^-39 relative after the subtraction's cancellation), the
// sign restored; rounded to float once (NaN kept, infinities give +-1).
inline float fast_tanh(float x) {
  const double a = std::fabs(static_cast<double>(x)), a2 = a * a;
  constexpr double series[] = {1.0, -1.0 / 3.0, 2.0 / 15.0, -17.0 / 315.0, 62.0 / 2835.0, -1382.0 / 155925.0,
                                21844.0 / 6081075.0, -929569.0 / 638512875.0};  // tanh(a) / a in a^2
  const double p = poly(a2, series);
  const double small = a * p;
  const double large = 1.0 - 2.0 / (exp2_wide(a * 0x1.71547652b82fep1) + 1.0);  // 2a log2(e)
  const double t = a < 0.125 ? small : large;
  return x != x ? x : static_cast<float>(std::copysign(t, static_cast<double>(x)));  // -0 stays -0
}
inline float fmod_fast(float a, float b) { return std::fmod(a, b); }
inline float fast_pow(float a, float b) { return powf(a, b); }
inline float fast_pow_near(float a, float b) { return powf(a, b); }
inline float fast_pow_rare(float a, float b) { return powf(a, b); }
inline float fast_pow_near_rare(float a, float b) { return powf(a, b); }
inline float fast_atan(float x) { return atanf(x); }
inline float fast_tan(float x) { return tanf(x); }
inline float fast_tan_near(float x) { return tanf(x); }
inline float fast_sin(float x) { return sinf(x); }
inline float fast_sin_near(float x) { return sinf(x); }
inline float fast_cos(float x) { return cosf(x); }
inline float fast_cos_near(float x) { return cosf(x); }
inline float fast_erf(float x) { return erff(x); }
inline float fast_asinh(float x) { return asinhf(x); }
inline float fast_asinh_near(float x) { return asinhf(x); }
inline float fast_atanh(float x) { return atanhf(x); }
inline float fast_asin(float x) { return asinf(x); }
inline float fast_acos(float x) { return acosf(x); }
inline float fast_acosh(float x) { return acoshf(x); }
inline float fast_acosh_near(float x) { return acoshf(x); }
inline float fast_expm1(float x) { return expm1f(x); }
inline float fast_atan2(float y, float x) { return atan2f(y, x); }
inline float fast_atan2_near(float y, float x) { return atan2f(y, x); }
inline float sigmoid(float x) { return 1.0f / (1.0f + fast_exp(-x)); }
inline double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// ---- whole tiles ------------------------------------------------------------------------------

// One side of a copy: the element at loop index t is at base + sum(t[d] * stride[d]), inside
// the array where every t[d] lies in [lo[d], hi[d]) and `ok` (the dims of extent 1 are inside).
template <int R>
struct Side {
  long long base;
  long long stride[R];
  long long lo[R];
  long long hi[R];
  bool ok;
};

// dst box = src box, converted; a source element outside its array reads 0, a destination
// element outside its array is not written.
template <typename Ts, typename Td, int R, int D = 0>
inline void copy_box(const Ts* __restrict__ s, const Side<R>& ss, long long sb, bool sin, Td* __restrict__ d,
                     const Side<R>& ds, long long db, const long long* ext) {
  if constexpr (D == R - 1) {
    const long long e = ext[D];
    const long long dlo = ds.lo[D] > 0 ? ds.lo[D] : 0, dhi = ds.hi[D] < e ? ds.hi[D] : e;
    const long long slo = sin ? ss.lo[D] : 0, shi = sin ? ss.hi[D] : 0;
    const long long sst = ss.stride[D], dst = ds.stride[D];
    if (sin && sst == 1 && dst == 1 && slo <= dlo && shi >= dhi) {
      const Ts* sp = s + sb;
      Td* dp = d + db;
      for (long long t = dlo; t < dhi; ++t) dp[t] = cvt<Td>(sp[t]);
      return;
    }
    for (long long t = dlo; t < dhi; ++t) {
      d[db + t * dst] = (t >= slo && t < shi) ? cvt<Td>(s[sb + t * sst]) : cvt<Td>(Ts(0));
    }
  } else {
    const long long dlo = ds.lo[D] > 0 ? ds.lo[D] : 0, dhi = ds.hi[D] < ext[D] ? ds.hi[D] : ext[D];
    for (long long t = dlo; t < dhi; ++t) {
      const bool row_in = sin && t >= ss.lo[D] && t < ss.hi[D];
      copy_box<Ts, Td, R, D + 1>(s, ss, sb + t * ss.stride[D], row_in, d, ds, db + t * ds.stride[D], ext);
    }
  }
}
template <typename Ts, typename Td, int R>
inline void copy(const Ts* s, const Side<R>& ss, Td* d, const Side<R>& ds, const long long* ext) {
  if (!ds.ok) return;
  copy_box<Ts, Td, R, 0>(s, ss, ss.base, ss.ok, d, ds, ds.base, ext);
}
template <typename Ts, typename Td>
inline void copy_one(const Ts* s, long long si, bool sin, Td* d, long long di, bool din) {
  if (din) d[di] = sin ? cvt<Td>(s[si]) : cvt<Td>(Ts(0));
}

inline float tf32(float x) {
  unsigned int u;
  std::memcpy(&u, &x, 4);
  u &= 0xFFFFE000u;
  std::memcpy(&x, &u, 4);
  return x;
}

#ifndef TL_GEMM_ROWS
#define TL_GEMM_ROWS 4  // 8 where the build prefers 512-bit vectors (runtime/cpp.py WIDE_VECTORS)
#endif
// c[M, N] += op(a) @ op(b) accumulated in W (f32 for floats up to 32 bits, f64, i32 or i64 for
// integers: they wrap, as the code is built with -fwrapv), the operands first converted to W
// into row-major scratch, and c rounded once at the end where it is not W.  The product is a
// register-blocked loop nest (MR rows by NR columns a step) that the compiler vectorizes.
template <typename TA, typename TB, typename TC, typename W, int M, int N, int K, bool TRA, bool TRB, bool TF32>
inline void gemm(const TA* __restrict__ a, const TB* __restrict__ b, TC* __restrict__ c) {
  static thread_local std::vector<W> scratch;
  constexpr bool direct = std::is_same<TC, W>::value;
  scratch.resize(static_cast<size_t>(M) * K + static_cast<size_t>(K) * N + (direct ? 0 : static_cast<size_t>(M) * N));
  W* __restrict__ x = scratch.data();
  W* __restrict__ y = x + static_cast<size_t>(M) * K;
  for (int i = 0; i < M; ++i)
    for (int k = 0; k < K; ++k) {
      W v = static_cast<W>(TRA ? a[k * M + i] : a[i * K + k]);
      if constexpr (TF32) v = tf32(v);
      x[i * K + k] = v;
    }
  for (int k = 0; k < K; ++k)
    for (int j = 0; j < N; ++j) {
      W v = static_cast<W>(TRB ? b[j * K + k] : b[k * N + j]);
      if constexpr (TF32) v = tf32(v);
      y[k * N + j] = v;
    }
  W* __restrict__ acc;
  if constexpr (direct) {
    acc = c;
  } else {
    acc = y + static_cast<size_t>(K) * N;
    for (int i = 0; i < M * N; ++i) acc[i] = static_cast<W>(c[i]);
  }
  constexpr int MR = TL_GEMM_ROWS, NR = 64 / sizeof(W) * 2;
  constexpr int MB = M / MR * MR, NB = N / NR * NR;
  for (int i0 = 0; i0 < MB; i0 += MR)
    for (int j0 = 0; j0 < NB; j0 += NR) {
      W t[MR][NR];
      for (int r = 0; r < MR; ++r)
        for (int j = 0; j < NR; ++j) t[r][j] = acc[(i0 + r) * N + j0 + j];
      for (int k = 0; k < K; ++k) {
        const W* __restrict__ yk = y + k * N + j0;
        for (int r = 0; r < MR; ++r) {
          const W xv = x[(i0 + r) * K + k];
          for (int j = 0; j < NR; ++j) t[r][j] += xv * yk[j];
        }
      }
      for (int r = 0; r < MR; ++r)
        for (int j = 0; j < NR; ++j) acc[(i0 + r) * N + j0 + j] = t[r][j];
    }
  // the edges: rows past the last MR block, columns past the last NR block
  for (int i = 0; i < M; ++i) {
    const int j_from = i < MB ? NB : 0;
    for (int k = 0; k < K; ++k) {
      const W xv = x[i * K + k];
      for (int j = j_from; j < N; ++j) acc[i * N + j] += xv * y[k * N + j];
    }
  }
  if constexpr (!direct) {
    for (int i = 0; i < M * N; ++i) c[i] = cvt<TC>(acc[i]);
  }
}

// NumPy's fmax/fmin: a NaN operand is ignored (NaN only when both are); of two equal values
// (zeros of either sign) the second, as libm's.  Selects, not calls, so that loops vectorize.
template <typename W> inline W fmax_(W a, W b) {
  if constexpr (std::is_floating_point<W>::value) return (a > b || b != b) ? a : b; else return a > b ? a : b;
}
template <typename W> inline W fmin_(W a, W b) {
  if constexpr (std::is_floating_point<W>::value) return (a < b || b != b) ? a : b; else return a < b ? a : b;
}
template <typename W> inline W abs_(W a) {
  if constexpr (std::is_floating_point<W>::value) return std::fabs(a); else return a < 0 ? W(0) - a : a;
}

// The float sum of p[0], p[1], ... p[n - 1] in NumPy's order (its pairwise_sum, what np.sum adds
// a contiguous row in, so the interpreter's bits): under 8 values one by one from 0; up to 128
// in 8 running sums, combined as ((0 + 1) + (2 + 3)) + ((4 + 5) + (6 + 7)), the rest added
// one by one; more, the two halves' sums (the first a multiple of 8 long).  The 8 sums are a
// vector's lanes.
template <typename W, typename Ts>
inline W pairwise_sum(const Ts* __restrict__ p, long long n) {
  if (n < 8) {
    W r = W(0);
    for (long long i = 0; i < n; ++i) r = r + static_cast<W>(p[i]);
    return r;
  }
  if (n <= 128) {
    W r[8];
    for (int j = 0; j < 8; ++j) r[j] = static_cast<W>(p[j]);
    long long i = 8;
    for (; i < n - n % 8; i += 8)
      for (int j = 0; j < 8; ++j) r[j] = r[j] + static_cast<W>(p[i + j]);
    W res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) res = res + static_cast<W>(p[i]);
    return res;
  }
  long long half = n / 2;
  half -= half % 8;
  return pairwise_sum<W>(p, half) + pairwise_sum<W>(p + half, n - half);
}

// The maximum (KIND 1), minimum (2) or largest magnitude (3) of p[0..n) in W, in 16 running
// values (a vector's lanes) combined at the end: the same value in any order, but for the sign
// of a zero that two zeros tie for (NumPy's own vectorized order decides the interpreter's).
template <int KIND, typename W, typename Ts>
inline W extremum(const Ts* __restrict__ p, long long n) {
  auto pick = [](W r, W v) { return KIND == 2 ? fmin_(r, v) : fmax_(r, v); };
  auto get = [p](long long i) { return KIND == 3 ? abs_(static_cast<W>(p[i])) : static_cast<W>(p[i]); };
  W r = get(0);
  long long i = 1;
  if (n >= 33) {
    W lane[16];
    for (int j = 0; j < 16; ++j) lane[j] = get(1 + j);
    for (i = 17; i + 16 <= n; i += 16)
      for (int j = 0; j < 16; ++j) lane[j] = pick(lane[j], get(i + j));
    for (int j = 0; j < 16; ++j) r = pick(r, lane[j]);
  }
  for (; i < n; ++i) r = pick(r, get(i));
  return r;
}

// dst[o, i] = reduce over n of src[o, n, i] (KIND 0 sum, 1 max, 2 min, 3 absmax) in W; combined
// with dst's old value when !CLEAR.  A float sum along a contiguous row (inner 1) is NumPy's
// pairwise one; along a strided dimension NumPy adds in order from the first, as here.
template <int KIND, bool CLEAR, typename W, typename Ts, typename Td>
inline void reduce(const Ts* __restrict__ s, Td* __restrict__ d, int outer, int n, int inner) {
  for (int o = 0; o < outer; ++o)
    for (int i = 0; i < inner; ++i) {
      const Ts* p = s + static_cast<long long>(o) * n * inner + i;
      W r;
      if (inner == 1 && KIND == 0 && std::is_floating_point<W>::value) {
        r = pairwise_sum<W>(p, n);
      } else if (inner == 1 && KIND != 0) {
        r = extremum<KIND, W>(p, n);
      } else {
        r = static_cast<W>(p[0]);
        if constexpr (KIND == 3) r = abs_(r);
        for (int k = 1; k < n; ++k) {
          W v = static_cast<W>(p[static_cast<long long>(k) * inner]);
          if constexpr (KIND == 0) r = r + v;
          if constexpr (KIND == 1) r = fmax_(r, v);
          if constexpr (KIND == 2) r = fmin_(r, v);
          if constexpr (KIND == 3) r = fmax_(r, abs_(v));
        }
      }
      Td& out = d[o * inner + i];
      if constexpr (!CLEAR) {
        const W old = static_cast<W>(out);
        if constexpr (KIND == 0) r = old + r;
        else if constexpr (KIND == 2) r = fmin_(old, r);
        else r = fmax_(old, r);
      }
      out = cvt<Td>(r);
    }
}

// Inclusive scans along n of [outer, n, inner] (from the end when REVERSE) by KIND (0 sums, 1
// products, 2 maxima, 3 minima), in A (double for floats, rounded once; for integers an unsigned
// 64-bit integer, which wraps as the interpreter's does, or for maxima and minima a signed or
// unsigned 64-bit one); src and dst may be one buffer.
template <int KIND, bool REVERSE, typename A, typename Ts, typename Td>
inline void cumsum(const Ts* s, Td* d, int outer, int n, int inner) {
  for (int o = 0; o < outer; ++o)
    for (int i = 0; i < inner; ++i) {
      A run = A(KIND == 1 ? 1 : 0);
      for (int t = 0; t < n; ++t) {
        const int k = REVERSE ? n - 1 - t : t;
        const long long at = (static_cast<long long>(o) * n + k) * inner + i;
        const A v = static_cast<A>(s[at]);
        if constexpr (KIND == 0) run = run + v;
        if constexpr (KIND == 1) run = run * v;
        if constexpr (KIND == 2) run = t == 0 ? v : fmax_(run, v);
        if constexpr (KIND == 3) run = t == 0 ? v : fmin_(run, v);
        if constexpr (std::is_floating_point<A>::value) d[at] = cvt<Td>(run); else d[at] = static_cast<Td>(run);
      }
    }
}

// Atomic updates of elements the blocks' threads share (OP 0 add, 1 max, 2 min), combined as
// the interpreter does: 16- and 8-bit floats in float, rounded back; integers wrap.  A float or
// an integer of 32 or 64 bits adds with OpenMP's atomic; the rest loop on a compare-and-swap of
// the element's bytes.
template <int OP, typename T>
inline T combine(T a, T b) {
  if constexpr (is_low_float<T>::value) {
    const float x = static_cast<float>(a), y = static_cast<float>(b);
    return T(OP == 0 ? x + y : OP == 1 ? fmax_(x, y) : fmin_(x, y));
  } else if constexpr (OP == 0) {
    return static_cast<T>(a + b);
  } else {
    return OP == 1 ? fmax_(a, b) : fmin_(a, b);
  }
}
template <int OP, typename T>
inline void atomic_update(T* p, T v) {
  if constexpr (OP == 0 && (std::is_floating_point<T>::value || (std::is_integral<T>::value && sizeof(T) >= 4))) {
#pragma omp atomic update
    *p += v;
  } else {
    T old;
    __atomic_load(p, &old, __ATOMIC_RELAXED);
    while (true) {
      T want = combine<OP>(old, v);
      if (std::memcmp(&want, &old, sizeof(T)) == 0) return;
      if (__atomic_compare_exchange(p, &old, &want, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return;
    }
  }
}

// A device_assert's failure, in the GPU's record (tl/assert.cuh, tlc/device_assert.py): the
// site + 1, block x | y << 32, block z | thread << 32, unused, the values; the first failure wins.
inline unsigned long long assert_word(double v) {
  unsigned long long u;
  std::memcpy(&u, &v, 8);
  return u;
}
inline unsigned long long assert_word(long long v) { return static_cast<unsigned long long>(v); }
inline unsigned long long assert_word(unsigned long long v) { return v; }
template <typename... V>
inline void assert_fail(unsigned long long* record, unsigned site, int bx, int by, int bz, long long thread, V... values) {
  unsigned long long none = 0;
  if (!__atomic_compare_exchange_n(&record[0], &none, site + 1ull, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) return;
  record[1] = static_cast<unsigned int>(bx) | (static_cast<unsigned long long>(static_cast<unsigned int>(by)) << 32);
  record[2] = static_cast<unsigned int>(bz) | (static_cast<unsigned long long>(thread) << 32);
  const unsigned long long words[] = {0ull, assert_word(values)...};
  for (unsigned i = 1; i < sizeof(words) / sizeof(words[0]); ++i) record[3 + i] = words[i];
}

}  // namespace tl
