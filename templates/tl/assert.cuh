// tl/assert.cuh: device_assert's failure record, read back by the runtime (tlc/device_assert.py).
// A kernel with asserts defines `__device__ unsigned long long tl_assert_record[12]` beside it:
// word 0 the failing site + 1 (0: none failed), 1 blockIdx.x | blockIdx.y << 32,
// 2 blockIdx.z | threadIdx.x << 32, 3 unused, 4.. the values (a double's bits, or the integer
// sign- or zero-extended).  No trap: a trap ends the CUDA context and the record with it.
// The Python runtime reads it after each launch; a C caller of an nvcc-built .cu calls
// tl_assert_record_KERNEL(out) (beside the kernel: copies the record out and clears it).
namespace tl {

__device__ __forceinline__ unsigned long long assert_word(double v) {
  return static_cast<unsigned long long>(__double_as_longlong(v));
}
__device__ __forceinline__ unsigned long long assert_word(long long v) { return static_cast<unsigned long long>(v); }
__device__ __forceinline__ unsigned long long assert_word(unsigned long long v) { return v; }

// The launch's first failing thread writes the record; every thread goes on.  Out of line: the
// passing path is one compare and branch.
template <typename... V>
__device__ __noinline__ void assert_fail(unsigned long long* record, unsigned site, V... values) {
  if (atomicCAS(record, 0ull, static_cast<unsigned long long>(site) + 1ull) != 0ull) return;
  record[1] = blockIdx.x | (static_cast<unsigned long long>(blockIdx.y) << 32);
  record[2] = blockIdx.z | (static_cast<unsigned long long>(threadIdx.x) << 32);
  const unsigned long long words[] = {0ull, assert_word(values)...};
  for (unsigned i = 1; i <= sizeof...(V) && i <= 8; ++i) record[3 + i] = words[i];
  __threadfence();
}

}  // namespace tl
