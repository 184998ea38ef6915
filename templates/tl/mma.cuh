// tl/mma.cuh: block-level gemm on sm_80 tensor cores: ldmatrix from (swizzled) shared memory
// and mma.sync with f32 (or s32) accumulation into the MmaAcc layout of tl/layout.cuh.  And a
// SIMT fallback for every other case (exact f32 inputs, odd shapes, other integer inputs).
namespace tl {

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

__device__ __forceinline__ void mma_16816_f16(float* d, unsigned a0, unsigned a1, unsigned a2, unsigned a3,
                                              unsigned b0, unsigned b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
               "{%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// f32 -> tf32 as the tensor cores read it: the low 13 bits of the mantissa dropped (toward 0).
__device__ __forceinline__ unsigned tf32_bits(unsigned x) { return x & 0xFFFFE000u; }
__device__ __forceinline__ float tf32_truncate(float x) { return __uint_as_float(tf32_bits(__float_as_uint(x))); }

// One mma.sync per 16 x 8 piece of the accumulator, by operand types (and tf32 precision).
// Every instruction reads 32 bytes of K (K = 16 for 16-bit types, 32 for 8-bit, 8 for tf32),
// so ldmatrix loads the operands of all of them alike from K-major rows: a[4] holds rows
// (g, g + 8) x 16-byte halves of the 32 bytes, b[2] column g x the two halves, g = lane / 4.
template <typename TA, typename TB, bool TF32> struct mma_op;

template <> struct mma_op<half, half, false> {
  static constexpr int K = 16, PARTS = 1;
  using Acc = float;
  __device__ static __forceinline__ void run(float* d, const unsigned (&a)[4], const unsigned* b, int) {
    mma_16816_f16(d, a[0], a[1], a[2], a[3], b[0], b[1]);
  }
};
template <> struct mma_op<__nv_bfloat16, __nv_bfloat16, false> {
  static constexpr int K = 16, PARTS = 1;
  using Acc = float;
  __device__ static __forceinline__ void run(float* d, const unsigned (&a)[4], const unsigned* b, int) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
};
template <> struct mma_op<float, float, true> {
  static constexpr int K = 8, PARTS = 1;
  using Acc = float;
  __device__ static __forceinline__ void run(float* d, const unsigned (&a)[4], const unsigned* b, int) {
    // Truncated as wgmma does, so that both targets and the interpreter round alike.
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(tf32_bits(a[0])), "r"(tf32_bits(a[1])), "r"(tf32_bits(a[2])), "r"(tf32_bits(a[3])),
                   "r"(tf32_bits(b[0])), "r"(tf32_bits(b[1])));
  }
};
template <> struct mma_op<signed char, signed char, false> {
  static constexpr int K = 32, PARTS = 1;
  using Acc = int;
  __device__ static __forceinline__ void run(int* d, const unsigned (&a)[4], const unsigned* b, int) {
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
};

#ifdef TL_HAS_FP8
template <typename T> struct is_e4m3 { static constexpr bool value = false; };
template <> struct is_e4m3<__nv_fp8_e4m3> { static constexpr bool value = true; };

// f8 before sm_89 has no mma: each byte converts exactly to f16 and two m16n8k16 sum the 32 of
// K.  Which K a register half stands for does not matter as long as A and B agree: thread
// (g, t) holds bytes 4t..4t+3 of both halves, and the f16 mma reads pairs 2t, 2t+1 and
// 2t+8, 2t+9; A's and B's pairs are converted from the same bytes, so each product is right.
// Two f8 values (bytes `pair` * 2 and + 1 of x) as an f16x2, exactly: every e4m3 and e5m2
// value is an f16.  sm_89 converts in one instruction; before it, bit operations: e5m2 is the
// top byte of an f16, and e4m3 placed so (sign, 4+3 bits shifted right by one) is the f16 of
// its value / 256 (normal and subnormal alike), so a multiply by 256 finishes it; its NaN
// (S.1111.111) is restored after.
template <typename T>
__device__ __forceinline__ unsigned fp8x2_to_f16x2(unsigned x, int pair) {
#if __CUDA_ARCH__ >= 890
  const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(x >> (16 * pair)),
                                                   is_e4m3<T>::value ? __NV_E4M3 : __NV_E5M2);
  return static_cast<unsigned>(h.x) | (static_cast<unsigned>(h.y) << 16);
#else
  const unsigned y = __byte_perm(x, 0u, pair ? 0x3424u : 0x1404u);  // byte b of each half -> b << 8
  if constexpr (!is_e4m3<T>::value) {
    return y;
  } else {
    const unsigned mag = (y >> 1) & 0x3F803F80u;
    const unsigned h = (y & 0x80008000u) | mag;
    const __half2 scaled = __hmul2(*reinterpret_cast<const __half2*>(&h), __float2half2_rn(256.0f));
    // 480 only comes from NaN (the largest e4m3 is 448).
    return *reinterpret_cast<const unsigned*>(&scaled) | (__heq2_mask(__habs2(scaled), __float2half2_rn(480.0f)) & 0x7FFF7FFFu);
  }
#endif
}

template <typename TA, typename TB> struct mma_op_fp8 {
  static constexpr int K = 32;
  static constexpr int PARTS = 2;  // one f16 mma per 16 bytes of K: fewer converted registers live at once
  using Acc = float;
  __device__ static __forceinline__ void run(float* d, const unsigned (&a)[4], const unsigned* b, int part) {
    const unsigned ra = a[2 * part], rb = a[2 * part + 1];  // rows g and g + 8
    mma_16816_f16(d, fp8x2_to_f16x2<TA>(ra, 0), fp8x2_to_f16x2<TA>(rb, 0), fp8x2_to_f16x2<TA>(ra, 1),
                  fp8x2_to_f16x2<TA>(rb, 1), fp8x2_to_f16x2<TB>(b[part], 0), fp8x2_to_f16x2<TB>(b[part], 1));
  }
};
template <> struct mma_op<__nv_fp8_e4m3, __nv_fp8_e4m3, false> : mma_op_fp8<__nv_fp8_e4m3, __nv_fp8_e4m3> {};
template <> struct mma_op<__nv_fp8_e4m3, __nv_fp8_e5m2, false> : mma_op_fp8<__nv_fp8_e4m3, __nv_fp8_e5m2> {};
template <> struct mma_op<__nv_fp8_e5m2, __nv_fp8_e4m3, false> : mma_op_fp8<__nv_fp8_e5m2, __nv_fp8_e4m3> {};
template <> struct mma_op<__nv_fp8_e5m2, __nv_fp8_e5m2, false> : mma_op_fp8<__nv_fp8_e5m2, __nv_fp8_e5m2> {};
#endif

// f8 from sm_89 on (the sm_89 target asks for it; the instruction does not exist on sm_80):
// mma.sync reads e4m3/e5m2 operands itself, m16n8k32 from the same registers as s8's.
template <typename TA, typename TB> struct mma_f8;
#ifdef TL_HAS_FP8
// One line each, no backslash continuation: the generated .cu carries this text, and no line of
// it continues onto the next (a .tl comment's trailing backslash must not; tests/codegen/test_source_text.py).
#define TL_MMA_F8_D "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
#define TL_MMA_F8_AB "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1])
#define TL_MMA_F8(TYPES) asm volatile("mma.sync.aligned.m16n8k32.row.col.f32." TYPES ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n" : TL_MMA_F8_D : TL_MMA_F8_AB)
template <typename TA, typename TB> struct mma_f8 {
  static constexpr int K = 32, PARTS = 1;
  using Acc = float;
  __device__ static __forceinline__ void run(float* d, const unsigned (&a)[4], const unsigned* b, int) {
    if constexpr (is_e4m3<TA>::value && is_e4m3<TB>::value) TL_MMA_F8("e4m3.e4m3");
    else if constexpr (is_e4m3<TA>::value) TL_MMA_F8("e4m3.e5m2");
    else if constexpr (is_e4m3<TB>::value) TL_MMA_F8("e5m2.e4m3");
    else TL_MMA_F8("e5m2.e5m2");
  }
};
#undef TL_MMA_F8
#undef TL_MMA_F8_D
#undef TL_MMA_F8_AB
#endif

// The B operands of NI mma instructions side by side (columns n0 .. n0 + 8 NI) at K step kk:
// B is K x N in shared memory (N x K with TRANS_B), read by ldmatrix four 8x8 matrices at a
// time, two for an odd last instruction.
template <typename TB, int NI, bool TRANS_B, int B_ROWS, int B_COLS, int PAD_B, int SW_B>
__device__ __forceinline__ void load_b_sm80(unsigned (&b)[NI][2], const TB* B, int kk, int n0) {
  constexpr int E = 16 / static_cast<int>(sizeof(TB));  // elements per 16 bytes: half an instruction's K
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int nj = 0; nj < NI / 2; ++nj) {
    unsigned r4[4];
    const int blk = lane / 8;
    if constexpr (!TRANS_B) {
      const int k = kk + (blk % 2) * 8 + lane % 8, n = n0 + nj * 16 + (blk / 2) * 8;
      ldmatrix_x4_trans(r4, B + smem_index<TB, B_ROWS, B_COLS, PAD_B, SW_B>(k, n));
    } else {
      const int n = n0 + nj * 16 + (blk / 2) * 8 + lane % 8, k = kk + (blk % 2) * E;
      ldmatrix_x4(r4, B + smem_index<TB, B_ROWS, B_COLS, PAD_B, SW_B>(n, k));
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
      ldmatrix_x2_trans(r2, B + smem_index<TB, B_ROWS, B_COLS, PAD_B, SW_B>(kk + l, n0 + (NI - 1) * 8));
    } else {
      ldmatrix_x2(r2, B + smem_index<TB, B_ROWS, B_COLS, PAD_B, SW_B>(n0 + (NI - 1) * 8 + l % 8, kk + (l / 8) * E));
    }
    b[NI - 1][0] = r2[0];
    b[NI - 1][1] = r2[1];
  }
}

// acc (MmaAcc<M, N, WARPS_M, WARPS_N>) += op(A) @ op(B) over K.  A is M x K in shared memory
// (K x M with TRANS_A), B is K x N (N x K with TRANS_B); A_COLS / B_COLS are the stored
// tiles' shapes, PAD_* / SW_* their layouts.  B's element type TB differs from A's only for
// mixed f8 formats; TF32 multiplies f32 operands as tf32; F8_MMA takes f8 operands to the f8
// mma (sm_89 on) instead of converting them to f16.  Operands other than 16-bit ones must be
// K-major (ldmatrix transposes only 16-bit elements).
template <typename T, int M, int N, int K, int WARPS_M, int WARPS_N, bool TRANS_A, bool TRANS_B,
          int A_ROWS, int A_COLS, int PAD_A, int SW_A, int B_ROWS, int B_COLS, int PAD_B, int SW_B,
          typename TB = T, bool TF32 = false, bool F8_MMA = false>
__device__ __forceinline__ void gemm_mma_sm80(const T* A, const TB* B, typename mma_op<T, TB, TF32>::Acc* acc) {
  using OP = typename conditional<F8_MMA, mma_f8<T, TB>, mma_op<T, TB, TF32>>::type;
  constexpr int E = 16 / static_cast<int>(sizeof(T));  // elements per 16 bytes: half an instruction's K
  static_assert(K % OP::K == 0, "whole mma steps of K");
  static_assert(sizeof(T) == 2 || (!TRANS_A && TRANS_B), "ldmatrix transposes only 16-bit operands");
  constexpr int WM = M / WARPS_M, WN = N / WARPS_N, MI = WM / 16, NI = WN / 8;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int m0 = (warp / WARPS_N) * WM, n0 = (warp % WARPS_N) * WN;
#pragma unroll
  for (int kk = 0; kk < K; kk += OP::K) {
    unsigned a[MI][4];
    unsigned b[NI][2];
#pragma unroll
    for (int mi = 0; mi < MI; ++mi) {
      if constexpr (!TRANS_A) {
        const int r = m0 + mi * 16 + lane % 16, c = kk + (lane / 16) * E;
        ldmatrix_x4(a[mi], A + smem_index<T, A_ROWS, A_COLS, PAD_A, SW_A>(r, c));
      } else {
        const int blk = lane / 8;
        const int k = kk + (blk / 2) * 8 + lane % 8, m = m0 + mi * 16 + (blk % 2) * 8;
        ldmatrix_x4_trans(a[mi], A + smem_index<T, A_ROWS, A_COLS, PAD_A, SW_A>(k, m));
      }
    }
    load_b_sm80<TB, NI, TRANS_B, B_ROWS, B_COLS, PAD_B, SW_B>(b, B, kk, n0);
#pragma unroll
    for (int part = 0; part < OP::PARTS; ++part)
#pragma unroll
      for (int mi = 0; mi < MI; ++mi)
#pragma unroll
        for (int ni = 0; ni < NI; ++ni) OP::run(acc + (mi * NI + ni) * 4, a[mi], b[ni], part);
  }
}

// Two 16-bit values as the f16x2 / bf16x2 register an mma operand takes, x in the low half.
__device__ __forceinline__ unsigned pack2(half x, half y) {
  return static_cast<unsigned>(__half_as_ushort(x)) | (static_cast<unsigned>(__half_as_ushort(y)) << 16);
}
__device__ __forceinline__ unsigned pack2(__nv_bfloat16 x, __nv_bfloat16 y) {
  return static_cast<unsigned>(__bfloat16_as_ushort(x)) | (static_cast<unsigned>(__bfloat16_as_ushort(y)) << 16);
}

// The A operand of one m16n8k16 (or wgmma k16) step from a fragment A in an accumulator
// layout: the 8 registers from r of A's piece pair (rows g and g + 8, columns 2t, 2t + 1 of
// two 8-column pieces) are, in order, the instruction's a0 .. a3 (schedule/operand_layout.py).
template <typename T>
__device__ __forceinline__ void a_from_registers(unsigned (&a)[4], const T* regs) {
#pragma unroll
  for (int i = 0; i < 4; ++i) a[i] = pack2(regs[2 * i], regs[2 * i + 1]);
}

// acc (MmaAcc<M, N, WARPS, 1>) += A @ op(B) over K with A (f16 or bf16) in registers, laid out
// as MmaAcc<M, K, WARPS, 1> (tlc's mma_a): each warp multiplies its own rows, and no value
// moves between threads.  B is as in gemm_mma_sm80.
template <typename T, int M, int N, int K, int WARPS, bool TRANS_B, int B_ROWS, int B_COLS, int PAD_B, int SW_B>
__device__ __forceinline__ void gemm_mma_sm80_rs(const T* regs, const T* B, float* acc) {
  using OP = mma_op<T, T, false>;
  static_assert(sizeof(T) == 2 && K % 16 == 0 && M % (16 * WARPS) == 0 && N % 8 == 0, "whole m16n8k16 steps");
  constexpr int MI = M / WARPS / 16, NI = N / 8, KP = K / 8;  // KP: 8-column pieces of A per row band
#pragma unroll
  for (int kk = 0; kk < K; kk += 16) {
    unsigned b[NI][2];
    load_b_sm80<T, NI, TRANS_B, B_ROWS, B_COLS, PAD_B, SW_B>(b, B, kk, 0);
#pragma unroll
    for (int mi = 0; mi < MI; ++mi) {
      unsigned a[4];
      a_from_registers(a, regs + (mi * KP + kk / 8) * 4);
#pragma unroll
      for (int ni = 0; ni < NI; ++ni) OP::run(acc + (mi * NI + ni) * 4, a, b[ni], 0);
    }
  }
}

// The SIMT fallback: each thread computes its own accumulator elements (layout L) from shared
// memory.  Exact for f32 (FFMA) unless TF32 (operands truncated as the tensor cores do), and
// the path for integer inputs and shapes mma cannot tile.
// The K loop is outermost and unrolled only twice: the registers (unrolled, so acc stays in
// registers) times a fully unrolled K made nvcc's work REGS * K statements (512 x 64 took
// NVRTC minutes); each element still adds its products in K order, as before.
template <typename L, typename TA, typename TB, typename TC, int K, bool TRANS_A, bool TRANS_B,
          int A_ROWS, int A_COLS, int PAD_A, int SW_A, int B_ROWS, int B_COLS, int PAD_B, int SW_B,
          bool TF32 = false>
__device__ __forceinline__ void gemm_simt(const TA* A, const TB* B, TC* acc) {
  const int t = threadIdx.x;
#pragma unroll 2
  for (int k = 0; k < K; ++k) {
#pragma unroll
    for (int r = 0; r < L::REGS; ++r) {
      if (!L::valid(t, r)) continue;
      const int i = L::row(t, r), j = L::col(t, r);
      const TA x = TRANS_A ? A[smem_index<TA, A_ROWS, A_COLS, PAD_A, SW_A>(k, i)] : A[smem_index<TA, A_ROWS, A_COLS, PAD_A, SW_A>(i, k)];
      const TB y = TRANS_B ? B[smem_index<TB, B_ROWS, B_COLS, PAD_B, SW_B>(j, k)] : B[smem_index<TB, B_ROWS, B_COLS, PAD_B, SW_B>(k, j)];
      if constexpr (TF32) {
        acc[r] += tf32_truncate(x) * tf32_truncate(y);
      } else {
        acc[r] += cvt<TC>(x) * cvt<TC>(y);
      }
    }
  }
}

}  // namespace tl
