// tl/layout.cuh: fragment layouts, the C side of tlc/schedule/layout.py.  Thread t's register
// r holds element (row(t, r), col(t, r)); a 1-D fragment is one row.  Both sides must agree:
// tests/codegen check the formulas against the Python owner() functions.
namespace tl {

// Row-major runs of VEC elements dealt round-robin over THREADS.
template <int ROWS, int COLS, int THREADS, int VEC>
struct Blocked {
  static_assert(COLS % VEC == 0, "a run of VEC elements never crosses a row");
  static constexpr int SIZE = ROWS * COLS;
  static constexpr int RUNS = (SIZE + VEC - 1) / VEC;
  static constexpr int REGS = ((RUNS + THREADS - 1) / THREADS) * VEC;
  static constexpr int RUN = VEC;
  __host__ __device__ static __forceinline__ int linear(int t, int r) { return ((r / VEC) * THREADS + t) * VEC + r % VEC; }
  __host__ __device__ static __forceinline__ int row(int t, int r) { return linear(t, r) / COLS; }
  __host__ __device__ static __forceinline__ int col(int t, int r) { return linear(t, r) % COLS; }
  __host__ __device__ static __forceinline__ bool valid(int t, int r) { return linear(t, r) < SIZE; }
};

// The accumulator of mma.sync.m16n8k16 over WARPS_M x WARPS_N warps: lane l of a warp holds,
// in each 16x8 piece, rows l/4 and l/4+8 and columns 2*(l%4) and 2*(l%4)+1.
template <int M, int N, int WARPS_M, int WARPS_N>
struct MmaAcc {
  static constexpr int WM = M / WARPS_M, WN = N / WARPS_N;
  static_assert(WM % 16 == 0 && WN % 8 == 0, "each warp's tile is whole 16x8 pieces");
  static constexpr int REGS = WM * WN / 32;
  static constexpr int RUN = 2;
  __host__ __device__ static __forceinline__ int row(int t, int r) {
    const int warp = t / 32, lane = t % 32, piece = r / 4;
    return (warp / WARPS_N) * WM + (piece / (WN / 8)) * 16 + ((r % 4) / 2) * 8 + lane / 4;
  }
  __host__ __device__ static __forceinline__ int col(int t, int r) {
    const int warp = t / 32, lane = t % 32, piece = r / 4;
    return (warp % WARPS_N) * WN + (piece % (WN / 8)) * 8 + (lane % 4) * 2 + r % 2;
  }
  __host__ __device__ static __forceinline__ bool valid(int, int) { return true; }
};

// A fragment replicated over the threads of a 2-D layout L that share its index in dimension
// KEEP: register r holds element col(t, r) of the 1-D tile, in every replica.  `canonical` is
// true in exactly one replica of each element, the one that performs stores and atomics.
template <typename L, int KEEP>
struct Kept {
  static constexpr int REGS = L::REGS;
  static constexpr int RUN = KEEP == 1 ? L::RUN : 1;
  __host__ __device__ static __forceinline__ int row(int, int) { return 0; }
  __host__ __device__ static __forceinline__ int col(int t, int r) { return KEEP == 0 ? L::row(t, r) : L::col(t, r); }
  __host__ __device__ static __forceinline__ bool valid(int t, int r) { return L::valid(t, r); }
  __host__ __device__ static __forceinline__ bool canonical(int t, int r) {
    return (KEEP == 0 ? L::col(t, r) : L::row(t, r)) == 0;
  }
};

// A fragment <-> global tile of a row-major tensor (rows x cols, `stride` between rows), in
// the fragment's layout L; elements outside the tensor read as 0 and are not written.
template <typename L, typename T, typename U>
__device__ __forceinline__ void copy_g2f(U* regs, const T* g, long long stride, long long rows, long long cols,
                                         long long row0, long long col0) {
#pragma unroll
  for (int r = 0; r < L::REGS; ++r) {
    const int t = threadIdx.x;
    const long long gr = row0 + L::row(t, r), gc = col0 + L::col(t, r);
    const bool in = L::valid(t, r) && gr >= 0 && gr < rows && gc >= 0 && gc < cols;
    regs[r] = in ? cvt<U>(g[gr * stride + gc]) : cvt<U>(0.0f);
  }
}

template <typename L, typename T, typename U>
__device__ __forceinline__ void copy_f2g(U* g, const T* regs, long long stride, long long rows, long long cols,
                                         long long row0, long long col0) {
  const int t = threadIdx.x;
  constexpr int RUN = L::RUN;
#pragma unroll
  for (int r0 = 0; r0 < L::REGS; r0 += RUN) {
    const long long gr = row0 + L::row(t, r0), gc = col0 + L::col(t, r0);
    if (!L::valid(t, r0) || gr < 0 || gr >= rows) continue;
    // A whole run inside the tensor and aligned: one vector store of RUN elements.
    if constexpr (RUN == 2 && sizeof(U) == 2) {
      if (gc >= 0 && gc + 1 < cols && ((gr * stride + gc) % 2 == 0)) {
        __align__(4) U pair[2] = {cvt<U>(regs[r0]), cvt<U>(regs[r0 + 1])};
        *reinterpret_cast<unsigned*>(g + gr * stride + gc) = *reinterpret_cast<unsigned*>(pair);
        continue;
      }
    }
    if constexpr (RUN * sizeof(U) == 16 || RUN * sizeof(U) == 8) {
      if (gc >= 0 && gc + RUN <= cols && (((gr * stride + gc) * static_cast<long long>(sizeof(U))) % (RUN * sizeof(U)) == 0) &&
          ((reinterpret_cast<unsigned long long>(g) % (RUN * sizeof(U))) == 0)) {
        __align__(16) U run[RUN];
#pragma unroll
        for (int e = 0; e < RUN; ++e) run[e] = cvt<U>(regs[r0 + e]);
        if constexpr (RUN * sizeof(U) == 16)
          *reinterpret_cast<uint4*>(g + gr * stride + gc) = *reinterpret_cast<uint4*>(run);
        else
          *reinterpret_cast<uint2*>(g + gr * stride + gc) = *reinterpret_cast<uint2*>(run);
        continue;
      }
    }
#pragma unroll
    for (int e = 0; e < RUN; ++e) {
      const long long c = col0 + L::col(t, r0 + e), rr = row0 + L::row(t, r0 + e);
      if (L::valid(t, r0 + e) && rr >= 0 && rr < rows && c >= 0 && c < cols) g[rr * stride + c] = cvt<U>(regs[r0 + e]);
    }
  }
}

// Shared tile (COLS columns, PAD/SWIZZLE as in copy.cuh) <-> fragment, element by element.
template <typename L, typename T, typename U, int ROWS, int COLS, int PAD, int SWIZZLE>
__device__ __forceinline__ void copy_s2f(U* regs, const T* smem) {
#pragma unroll
  for (int r = 0; r < L::REGS; ++r) {
    const int t = threadIdx.x;
    if (L::valid(t, r)) regs[r] = cvt<U>(smem[smem_index<T, ROWS, COLS, PAD, SWIZZLE>(L::row(t, r), L::col(t, r))]);
  }
}

template <typename L, typename T, typename U, int ROWS, int COLS, int PAD, int SWIZZLE>
__device__ __forceinline__ void copy_f2s(U* smem, const T* regs) {
#pragma unroll
  for (int r = 0; r < L::REGS; ++r) {
    const int t = threadIdx.x;
    if (L::valid(t, r)) smem[smem_index<U, ROWS, COLS, PAD, SWIZZLE>(L::row(t, r), L::col(t, r))] = cvt<U>(regs[r]);
  }
}

}  // namespace tl
