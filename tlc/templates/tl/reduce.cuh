// tl/reduce.cuh: the combining operators of reductions, their identities, warp all-reduces
// over a set of lane bits, and atomics (float max/min through compare-and-swap).
namespace tl {

enum class Op { sum, max, min, absmax };

// Reductions accumulate in float (double for f64) or int; these are their starting values.
template <Op OP> __device__ __forceinline__ float identity(float) {
  if constexpr (OP == Op::sum || OP == Op::absmax) return 0.0f;
  else if constexpr (OP == Op::max) return -__int_as_float(0x7f800000);
  else return __int_as_float(0x7f800000);
}
template <Op OP> __device__ __forceinline__ double identity(double) {
  if constexpr (OP == Op::sum || OP == Op::absmax) return 0.0;
  else if constexpr (OP == Op::max) return -__longlong_as_double(0x7ff0000000000000LL);
  else return __longlong_as_double(0x7ff0000000000000LL);
}
template <Op OP> __device__ __forceinline__ int identity(int) {
  if constexpr (OP == Op::sum || OP == Op::absmax) return 0;
  else if constexpr (OP == Op::max) return -2147483647 - 1;
  else return 2147483647;
}

template <Op OP>
__device__ __forceinline__ float combine(float a, float b) {
  if constexpr (OP == Op::sum) return a + b;
  else if constexpr (OP == Op::max || OP == Op::absmax) return fmaxf(a, b);
  else return fminf(a, b);
}
template <Op OP>
__device__ __forceinline__ double combine(double a, double b) {
  if constexpr (OP == Op::sum) return a + b;
  else if constexpr (OP == Op::max || OP == Op::absmax) return fmax(a, b);
  else return fmin(a, b);
}
template <Op OP>
__device__ __forceinline__ int combine(int a, int b) {
  if constexpr (OP == Op::sum) return a + b;
  else if constexpr (OP == Op::max || OP == Op::absmax) return a > b ? a : b;
  else return a < b ? a : b;
}

template <Op OP, typename T>
__device__ __forceinline__ T prepare(T x) {
  if constexpr (OP == Op::absmax) return x < T(0) ? -x : x;
  else return x;
}

// All-reduce across the lanes that differ only in the bits of MASK (a subset of 0..31).
template <Op OP, unsigned MASK, typename T>
__device__ __forceinline__ T warp_allreduce(T v) {
#pragma unroll
  for (int bit = 16; bit >= 1; bit >>= 1)
    if (MASK & bit) v = combine<OP>(v, __shfl_xor_sync(0xffffffffu, v, bit));
  return v;
}

__device__ __forceinline__ float atomic_max_f32(float* p, float v) {
  int* ip = reinterpret_cast<int*>(p);
  int old = *ip;
  while (__int_as_float(old) < v || (old != old)) {
    const int assumed = old;
    old = atomicCAS(ip, assumed, __float_as_int(v));
    if (old == assumed) break;
  }
  return __int_as_float(old);
}
__device__ __forceinline__ float atomic_min_f32(float* p, float v) {
  int* ip = reinterpret_cast<int*>(p);
  int old = *ip;
  while (__int_as_float(old) > v) {
    const int assumed = old;
    old = atomicCAS(ip, assumed, __float_as_int(v));
    if (old == assumed) break;
  }
  return __int_as_float(old);
}

template <Op OP>
__device__ __forceinline__ void atomic_combine(float* p, float v) {
  if constexpr (OP == Op::sum) atomicAdd(p, v);
  else if constexpr (OP == Op::max || OP == Op::absmax) atomic_max_f32(p, v);
  else atomic_min_f32(p, v);
}
template <Op OP>
__device__ __forceinline__ void atomic_combine(int* p, int v) {
  if constexpr (OP == Op::sum) atomicAdd(p, v);
  else if constexpr (OP == Op::max || OP == Op::absmax) atomicMax(p, v);
  else atomicMin(p, v);
}

}  // namespace tl
