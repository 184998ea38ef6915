// tl/mma.cuh: block-level gemm on sm_80 tensor cores: ldmatrix from (swizzled) shared memory
// and mma.sync.m16n8k16 with f32 accumulation into the MmaAcc layout of tl/layout.cuh.  And
// a SIMT fallback for every other case (f32 inputs, odd shapes, integer inputs).
namespace tl {

template <typename T> struct mma_kind;
template <> struct mma_kind<half> { static constexpr bool bf16 = false; };
template <> struct mma_kind<__nv_bfloat16> { static constexpr bool bf16 = true; };

__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldmatrix_x2(unsigned (&r)[2], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldmatrix_x2_trans(unsigned (&r)[2], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1]) : "r"(smem_addr(p)));
}

template <bool BF16>
__device__ __forceinline__ void mma_16816(float* d, const unsigned (&a)[4], const unsigned* b) {
  if constexpr (BF16) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
}

// acc (MmaAcc<M, N, WARPS_M, WARPS_N>) += op(A) @ op(B) over K.  A is M x K in shared memory
// (K x M with TRANS_A), B is K x N (N x K with TRANS_B); A_COLS / B_COLS are the stored
// tiles' shapes, PAD_* / SW_* their layouts.
template <typename T, int M, int N, int K, int WARPS_M, int WARPS_N, bool TRANS_A, bool TRANS_B,
          int A_ROWS, int A_COLS, int PAD_A, int SW_A, int B_ROWS, int B_COLS, int PAD_B, int SW_B>
__device__ __forceinline__ void gemm_mma_sm80(const T* A, const T* B, float* acc) {
  static_assert(K % 16 == 0, "mma.m16n8k16 steps K by 16");
  constexpr int WM = M / WARPS_M, WN = N / WARPS_N, MI = WM / 16, NI = WN / 8;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int m0 = (warp / WARPS_N) * WM, n0 = (warp % WARPS_N) * WN;
#pragma unroll
  for (int kk = 0; kk < K; kk += 16) {
    unsigned a[MI][4];
    unsigned b[NI][2];
#pragma unroll
    for (int mi = 0; mi < MI; ++mi) {
      if constexpr (!TRANS_A) {
        const int r = m0 + mi * 16 + lane % 16, c = kk + (lane / 16) * 8;
        ldmatrix_x4(a[mi], A + smem_index<T, A_ROWS, A_COLS, PAD_A, SW_A>(r, c));
      } else {
        const int blk = lane / 8;
        const int k = kk + (blk / 2) * 8 + lane % 8, m = m0 + mi * 16 + (blk % 2) * 8;
        ldmatrix_x4_trans(a[mi], A + smem_index<T, A_ROWS, A_COLS, PAD_A, SW_A>(k, m));
      }
    }
#pragma unroll
    for (int nj = 0; nj < NI / 2; ++nj) {
      unsigned r4[4];
      const int blk = lane / 8;
      if constexpr (!TRANS_B) {
        const int k = kk + (blk % 2) * 8 + lane % 8, n = n0 + nj * 16 + (blk / 2) * 8;
        ldmatrix_x4_trans(r4, B + smem_index<T, B_ROWS, B_COLS, PAD_B, SW_B>(k, n));
      } else {
        const int n = n0 + nj * 16 + (blk / 2) * 8 + lane % 8, k = kk + (blk % 2) * 8;
        ldmatrix_x4(r4, B + smem_index<T, B_ROWS, B_COLS, PAD_B, SW_B>(n, k));
      }
      b[2 * nj][0] = r4[0];
      b[2 * nj][1] = r4[1];
      b[2 * nj + 1][0] = r4[2];
      b[2 * nj + 1][1] = r4[3];
    }
    if constexpr (NI % 2 == 1) {
      unsigned r2[2];
      const int l = lane % 16;
      if constexpr (!TRANS_B) {
        ldmatrix_x2_trans(r2, B + smem_index<T, B_ROWS, B_COLS, PAD_B, SW_B>(kk + l, n0 + (NI - 1) * 8));
      } else {
        ldmatrix_x2(r2, B + smem_index<T, B_ROWS, B_COLS, PAD_B, SW_B>(n0 + (NI - 1) * 8 + l % 8, kk + (l / 8) * 8));
      }
      b[NI - 1][0] = r2[0];
      b[NI - 1][1] = r2[1];
    }
#pragma unroll
    for (int mi = 0; mi < MI; ++mi)
#pragma unroll
      for (int ni = 0; ni < NI; ++ni) mma_16816<mma_kind<T>::bf16>(acc + (mi * NI + ni) * 4, a[mi], b[ni]);
  }
}

// The SIMT fallback: each thread computes its own accumulator elements (layout L) from shared
// memory.  Exact for f32 (FFMA), and the path for integer inputs and shapes mma cannot tile.
template <typename L, typename TA, typename TB, typename TC, int K, bool TRANS_A, bool TRANS_B,
          int A_ROWS, int A_COLS, int PAD_A, int SW_A, int B_ROWS, int B_COLS, int PAD_B, int SW_B>
__device__ __forceinline__ void gemm_simt(const TA* A, const TB* B, TC* acc) {
  const int t = threadIdx.x;
#pragma unroll
  for (int r = 0; r < L::REGS; ++r) {
    if (!L::valid(t, r)) continue;
    const int i = L::row(t, r), j = L::col(t, r);
    TC sum = acc[r];
    for (int k = 0; k < K; ++k) {
      const TA x = TRANS_A ? A[smem_index<TA, A_ROWS, A_COLS, PAD_A, SW_A>(k, i)] : A[smem_index<TA, A_ROWS, A_COLS, PAD_A, SW_A>(i, k)];
      const TB y = TRANS_B ? B[smem_index<TB, B_ROWS, B_COLS, PAD_B, SW_B>(j, k)] : B[smem_index<TB, B_ROWS, B_COLS, PAD_B, SW_B>(k, j)];
      sum += cvt<TC>(x) * cvt<TC>(y);
    }
    acc[r] = sum;
  }
}

}  // namespace tl
