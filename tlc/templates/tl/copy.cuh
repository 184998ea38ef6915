// tl/copy.cuh: moving 2-D tiles between global and shared memory.  One block cooperates:
// thread t moves 16-byte vectors t, t + THREADS, ...; with ASYNC the vectors go through
// cp.async (sm_80+) and complete at the next tl::cp_async_wait.  Elements outside the tensor
// read as 0 and are never written.
namespace tl {

__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void cp_async_16(void* dst, const void* src, int src_bytes) {
  // src_bytes < 16 zero-fills the rest of the vector, which is how ragged edges read as 0.
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

// The element offset of (r, c) in a shared tile of COLS columns: rows padded by PAD elements,
// or the byte offset swizzled (SWIZZLE = 128).
template <typename T, int COLS, int PAD, int SWIZZLE>
__device__ __forceinline__ int smem_index(int r, int c) {
  if constexpr (SWIZZLE != 0) {
    return swizzle128((r * COLS + c) * static_cast<int>(sizeof(T))) / static_cast<int>(sizeof(T));
  } else {
    return r * (COLS + PAD) + c;
  }
}

// global[row0 : row0+ROWS, col0 : col0+COLS] (a row-major tensor with `rows` x `cols`
// elements and `stride` elements between rows) -> a shared ROWS x COLS tile.
template <typename T, int ROWS, int COLS, int THREADS, int PAD, int SWIZZLE, bool ASYNC>
__device__ __forceinline__ void copy_g2s(T* smem, const T* g, long long stride, long long rows, long long cols,
                                         long long row0, long long col0) {
  constexpr int VEC = 16 / sizeof(T);
  const bool vector_ok = (COLS % VEC == 0) && (stride % VEC == 0) && (col0 % VEC == 0) &&
                         ((reinterpret_cast<unsigned long long>(g) & 15) == 0);
  if (vector_ok) {
    constexpr int VECS = ROWS * COLS / VEC;
#pragma unroll
    for (int v = threadIdx.x; v < VECS; v += THREADS) {
      const int r = v / (COLS / VEC), c = (v % (COLS / VEC)) * VEC;
      const long long gr = row0 + r, gc = col0 + c;
      long long avail = (gr < rows && gr >= 0) ? (cols - gc) : 0;
      const int bytes = avail <= 0 ? 0 : (avail >= VEC ? 16 : static_cast<int>(avail) * static_cast<int>(sizeof(T)));
      const T* src = bytes ? g + gr * stride + gc : g;
      T* dst = smem + smem_index<T, COLS, PAD, SWIZZLE>(r, c);
      if constexpr (ASYNC) {
        cp_async_16(dst, src, bytes);
      } else if (bytes == 16) {
        *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
      } else {
#pragma unroll
        for (int e = 0; e < VEC; ++e) dst[e] = (e * static_cast<int>(sizeof(T)) < bytes) ? src[e] : cvt<T>(0.0f);
      }
    }
  } else {
    for (int i = threadIdx.x; i < ROWS * COLS; i += THREADS) {
      const int r = i / COLS, c = i % COLS;
      const long long gr = row0 + r, gc = col0 + c;
      const bool in = gr >= 0 && gr < rows && gc >= 0 && gc < cols;
      smem[smem_index<T, COLS, PAD, SWIZZLE>(r, c)] = in ? g[gr * stride + gc] : cvt<T>(0.0f);
    }
  }
}

// A shared ROWS x COLS tile -> global, converting to U; elements outside are skipped.
template <typename T, typename U, int ROWS, int COLS, int THREADS, int PAD, int SWIZZLE>
__device__ __forceinline__ void copy_s2g(U* g, const T* smem, long long stride, long long rows, long long cols,
                                         long long row0, long long col0) {
  for (int i = threadIdx.x; i < ROWS * COLS; i += THREADS) {
    const int r = i / COLS, c = i % COLS;
    const long long gr = row0 + r, gc = col0 + c;
    if (gr >= 0 && gr < rows && gc >= 0 && gc < cols)
      g[gr * stride + gc] = cvt<U>(smem[smem_index<T, COLS, PAD, SWIZZLE>(r, c)]);
  }
}

// Shared tile -> shared tile with conversion (also what a global->shared copy with a dtype
// change becomes after its load), element by element.
template <typename T, typename U, int ROWS, int COLS, int THREADS, int PAD_T, int SW_T, int PAD_U, int SW_U>
__device__ __forceinline__ void copy_s2s(U* dst, const T* src) {
  for (int i = threadIdx.x; i < ROWS * COLS; i += THREADS) {
    const int r = i / COLS, c = i % COLS;
    dst[smem_index<U, COLS, PAD_U, SW_U>(r, c)] = cvt<U>(src[smem_index<T, COLS, PAD_T, SW_T>(r, c)]);
  }
}

// Global -> shared with a dtype change: element by element (no cp.async, which cannot convert).
template <typename T, typename U, int ROWS, int COLS, int THREADS, int PAD, int SWIZZLE>
__device__ __forceinline__ void copy_g2s_convert(U* smem, const T* g, long long stride, long long rows,
                                                 long long cols, long long row0, long long col0) {
  for (int i = threadIdx.x; i < ROWS * COLS; i += THREADS) {
    const int r = i / COLS, c = i % COLS;
    const long long gr = row0 + r, gc = col0 + c;
    const bool in = gr >= 0 && gr < rows && gc >= 0 && gc < cols;
    smem[smem_index<U, COLS, PAD, SWIZZLE>(r, c)] = in ? cvt<U>(g[gr * stride + gc]) : cvt<U>(0.0f);
  }
}

}  // namespace tl
