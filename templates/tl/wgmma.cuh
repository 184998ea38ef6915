// tl/wgmma.cuh (sm_90a): block-level gemm on Hopper's warpgroup tensor cores.  Operands come
// from shared memory through matrix descriptors, in the 128-byte swizzled layout that
// tl::smem_index lays out (128-byte segments stored one after the other, each a 1024-byte
// aligned run of 8-row swizzle atoms); each warpgroup (128 threads) computes 64 rows of the
// accumulator with wgmma.mma_async.m64nNkK, whose register layout is tl::MmaAcc<M, N, M/16, 1>
// for every operand type (f32 or s32 accumulators); or 128 rows, two m64 instructions a K
// step, tl::MmaAcc<M, N, M/32, 1, true>; or, 64 rows over G warpgroups, G column blocks of
// N / G, one m64 instruction each, tl::MmaAcc<64, N, 4, G, false, true>.  K is 32 bytes of K:
// 16 for f16/bf16, 32 for f8 and 8-bit integers, 8 for tf32.
namespace tl {

__device__ __forceinline__ void fence_proxy_async() {
  // Shared memory written by ordinary stores or cp.async is read next by the tensor cores
  // (the async proxy): each writer fences before the barrier that orders the two.
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory"); }
// wgmma_wait where the code puts it.  ptxas moves a wait up over the instructions before it
// (waiting earlier is always safe) when that lets it write the registers the waited-for wgmma
// reads sooner: attention's deferred P @ V, waited for after the softmax, was waited for before
// it (FlashAttention 3's intra-warpgroup overlap lost), since the softmax's conversions into the
// next P's registers then interleave with its exponentials.  ptxas schedules within a basic
// block: a branch it cannot resolve ends one here (on the dynamic shared memory's size, never 0
// in a kernel whose wgmma reads shared memory), two instructions that keep the wait in place.
template <int N>
__device__ __forceinline__ void wgmma_wait_in_place() {
  asm volatile(
      "{\n.reg .pred p;\n.reg .b32 s;\nmov.u32 s, %%dynamic_smem_size;\nsetp.eq.u32 p, s, %0;\n@p brkpt;\n}\n" ::"n"(0)
      : "memory");
  wgmma_wait<N>();
}

// The accumulators are written by the tensor cores after the instruction that names them has
// "returned": after waiting, tie each register to this point so that the compiler neither
// reads it earlier nor moves it (CUTLASS's warpgroup_fence_operand).
template <int N>
__device__ __forceinline__ void fence_registers(float* r) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
}
template <int N>
__device__ __forceinline__ void fence_registers(int* r) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+r"(r[i])::"memory");
}
// 16-bit values in pairs (a wgmma's register A, read by the tensor cores until the wait).
template <int N>
__device__ __forceinline__ void fence_registers(half* r) {
  static_assert(N % 2 == 0, "16-bit registers in pairs");
#pragma unroll
  for (int i = 0; i < N / 2; ++i) asm volatile("" : "+r"(reinterpret_cast<unsigned*>(r)[i])::"memory");
}
template <int N>
__device__ __forceinline__ void fence_registers(__nv_bfloat16* r) {
  fence_registers<N>(reinterpret_cast<half*>(r));
}

// A shared-memory matrix descriptor with the 128-byte swizzle: start address, leading and
// stride byte offsets (PTX ISA, "Matrix Descriptor Format"), all in units of 16 bytes.
__device__ __forceinline__ unsigned long long wgmma_desc(const void* p, unsigned lbo, unsigned sbo) {
  const unsigned long long addr = smem_addr(p);
  return ((addr & 0x3FFFF) >> 4) | (static_cast<unsigned long long>((lbo & 0x3FFFF) >> 4) << 16) |
         (static_cast<unsigned long long>((sbo & 0x3FFFF) >> 4) << 32) | (1ull << 62);
}

// The descriptor of B at K step k: B is N x K stored K-major (TRANS_B, B_ROWS = N) or K x N
// stored N-major (B_ROWS = K), in 128-byte swizzled segments.
template <typename TB, int B_ROWS, bool TRANS_B>
__device__ __forceinline__ unsigned long long wgmma_b_desc(const TB* B, int k) {
  constexpr int SEG = 128 / static_cast<int>(sizeof(TB));
  if constexpr (TRANS_B) {
    return wgmma_desc(B + (k / SEG) * B_ROWS * SEG + k % SEG, 16, 1024);
  } else {
    // N-major: 64-column segments B_ROWS * 128 bytes apart (LBO), 8-row groups of K 1024 apart.
    return wgmma_desc(B + k * SEG, B_ROWS * 128, 1024);
  }
}

// The elements from B's start to its K step k, as wgmma_b_desc places it.
template <typename TB, int B_ROWS, bool TRANS_B>
__host__ __device__ constexpr int wgmma_b_offset(int k) {
  return TRANS_B ? (k / (128 / static_cast<int>(sizeof(TB)))) * B_ROWS * (128 / static_cast<int>(sizeof(TB))) +
                       k % (128 / static_cast<int>(sizeof(TB)))
                 : k * (128 / static_cast<int>(sizeof(TB)));
}

// A descriptor moved by `elements` of type T: its start address field is the byte address / 16
// in 14 bits, and every step of a gemm is a multiple of 16 bytes inside shared memory (< 256 KB),
// so the sum never carries out of the field.  A gemm computes its operands' descriptors once and
// adds constants for each K step and band (CUTLASS's descriptor iterator): building each from
// its pointer cost ~13 instructions an HGMMA (address conversion, masks, R2UR), the issue of MLA
// decode's 36 HGMMA.64x32x16 a page.
template <typename T>
__device__ __forceinline__ unsigned long long wgmma_desc_add(unsigned long long desc, int elements) {
  const unsigned lo = static_cast<unsigned>(desc) + static_cast<unsigned>(elements * static_cast<int>(sizeof(T)) / 16);
  return (desc & 0xFFFFFFFF00000000ull) | lo;  // the low word only: no carry to propagate
}

// acc += op(A) @ op(B): A is M x K stored K-major (A_ROWS = M) or, with TRANS_A (16-bit), K x M
// stored M-major (A_ROWS = K), B is K x N stored N-major
// (B_ROWS = K) or, with TRANS_B, N x K stored K-major (B_ROWS = N).  MMA is the
// wgmma.m64nNkK wrapper for this N and these operand types (templates/wgmma_mma.cuh.j2);
// B's element type TB differs from A's only for mixed f8 or 8-bit integer formats.  PENDING
// groups may stay in flight on return (1 in a pipeline that overlaps them with the next
// copies; the accumulator is then read only after tl::wgmma_wait<0>).  BANDS: the 64-row
// bands each warpgroup owns (A_ROWS = 64 x warpgroups x BANDS), one instruction each, their
// accumulators MMA::REGS registers apart.  COLUMNS: the warpgroups that split N (A_ROWS = 64,
// MMA the instruction of N / COLUMNS), warpgroup g reading all of A and B's columns g * MMA::N
// .. (rows of a K-major B, 128-byte segments of an N-major one).  gemm_wgmma_issue only issues
// and commits the group (the pingpong's turn: codegen/warpspec waits for it after handing the
// tensor cores over).  CLEAR: acc = A @ op(B) unless `keep`, the first K step's scale-d 0 (MMA
// rendered with scale_d), where a wgmma in flight forbids clearing the registers by instructions;
// CLEAR 2: always, the first K step's instruction (MMA::zero) only writing the accumulator.
template <typename MMA, typename T, int K, int A_ROWS, int B_ROWS, bool TRANS_B, typename TB = T, int BANDS = 1,
          int COLUMNS = 1, int CLEAR = 0, bool TRANS_A = false>
__device__ __forceinline__ void gemm_wgmma_issue(const T* A, const TB* B, typename MMA::Acc* acc, bool keep = false) {
  constexpr int SEG = 128 / static_cast<int>(sizeof(T));
  static_assert(sizeof(T) == sizeof(TB), "wgmma operands of one width");
  static_assert(K % MMA::K == 0 && (TRANS_A ? A_ROWS == K : A_ROWS % 64 == 0),
                "whole m64 steps of the instruction's K");
  static_assert((TRANS_B && !TRANS_A) || sizeof(T) == 2, "wgmma reads only 16-bit operands MN-major");
  static_assert(COLUMNS == 1 || ((TRANS_A || A_ROWS == 64) && BANDS == 1 && MMA::N % (TRANS_B ? 8 : SEG) == 0),
                "warpgroups side by side: 64 rows, B's parts whole swizzle atoms");
  // the warpgroup, uniform in the warp as the compiler sees it (the descriptors then stay in
  // uniform registers, no R2UR an instruction)
  const int wg = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x) / 128, 0);
  if constexpr (COLUMNS > 1) B += TRANS_B ? wg * MMA::N * SEG : wg * (MMA::N / SEG) * B_ROWS * SEG;
  // K-major A: 8-row atoms 1024 bytes apart (SBO); a step inside a 128-byte row moves the start.
  // M-major A (TRANS_A: K x M, A_ROWS = K): as an N-major B, each 64 rows of M a segment of
  // A_ROWS 128-byte rows (LBO), 8-row groups of K 1024 bytes apart, a K step 16 rows on.
  const unsigned long long da =
      TRANS_A ? wgmma_desc(A + (COLUMNS > 1 ? 0 : wg * BANDS * A_ROWS * SEG), A_ROWS * 128, 1024)
              : wgmma_desc(A + (COLUMNS > 1 ? 0 : wg * BANDS * 64 * SEG), 16, 1024);
  const unsigned long long db = wgmma_b_desc<TB, B_ROWS, TRANS_B>(B, 0);
  wgmma_fence();
#pragma unroll
  for (int k = 0; k < K; k += MMA::K) {
    const unsigned long long dbk = wgmma_desc_add<TB>(db, wgmma_b_offset<TB, B_ROWS, TRANS_B>(k));
#pragma unroll
    for (int band = 0; band < BANDS; ++band) {
      const unsigned long long dak = wgmma_desc_add<T>(
          da, TRANS_A ? k * SEG + band * A_ROWS * SEG : (k / SEG) * A_ROWS * SEG + k % SEG + band * 64 * SEG);
      if constexpr (CLEAR == 2) {
        if (k == 0) MMA::zero(acc + band * MMA::REGS, dak, dbk);
        else MMA::run(acc + band * MMA::REGS, dak, dbk);
      } else if constexpr (CLEAR) {
        MMA::run(acc + band * MMA::REGS, dak, dbk, k > 0 || keep);
      } else {
        MMA::run(acc + band * MMA::REGS, dak, dbk);
      }
    }
  }
  wgmma_commit();
}

template <typename MMA, typename T, int K, int A_ROWS, int B_ROWS, bool TRANS_B, int PENDING, typename TB = T,
          int BANDS = 1, int COLUMNS = 1, bool TRANS_A = false>
__device__ __forceinline__ void gemm_wgmma(const T* A, const TB* B, typename MMA::Acc* acc) {
  // With nothing left in flight, the accumulators' last writes (a clear) are tied to before the
  // fence, else ptxas may sink them past it and serialize the wgmmas (its C7519 note).
  if constexpr (PENDING == 0) fence_registers<MMA::REGS * BANDS>(acc);
  gemm_wgmma_issue<MMA, T, K, A_ROWS, B_ROWS, TRANS_B, TB, BANDS, COLUMNS, false, TRANS_A>(A, B, acc);
  wgmma_wait<PENDING>();
  if constexpr (PENDING == 0) fence_registers<MMA::REGS * BANDS>(acc);
}

// acc += A @ op(B) with A (f16 or bf16) in registers: wgmma's register-A form (MMA a wrapper
// rendered with register_a), A laid out as the accumulator of an M x K wgmma (tlc's wgmma_a),
// so a previous gemm's accumulator, cast, is read where it lies.  B as in gemm_wgmma.  The
// wgmma reads the registers asynchronously: the call waits for it before returning, so that
// nothing overwrites them early (after gemm_wgmma_rs_issue, the caller waits).
template <typename MMA, typename T, int K, int B_ROWS, bool TRANS_B, int BANDS = 1, bool CLEAR = false>
__device__ __forceinline__ void gemm_wgmma_rs_issue(const T* regs, const T* B, float* acc, bool keep = false) {
  static_assert(sizeof(T) == 2 && K % 16 == 0 && MMA::K == 16, "whole k16 steps of 16-bit operands");
  static_assert(TRANS_B || sizeof(T) == 2, "wgmma reads only 16-bit operands MN-major");
  constexpr int KP = K / 8;  // 8-column pieces of A per 64-row band
  // Packed before the fence: a register written between two wgmmas that read registers makes
  // ptxas insert a warpgroup.arrive before each (its C7519 note), serializing them.
  unsigned a[K / 16][BANDS][4];
#pragma unroll
  for (int k = 0; k < K; k += 16)
#pragma unroll
    for (int band = 0; band < BANDS; ++band) a_from_registers(a[k / 16][band], regs + (band * KP + k / 8) * 4);
  const unsigned long long db = wgmma_b_desc<T, B_ROWS, TRANS_B>(B, 0);
  fence_registers<MMA::REGS * BANDS>(acc);  // as in gemm_wgmma
  wgmma_fence();
#pragma unroll
  for (int k = 0; k < K; k += 16) {
    const unsigned long long dbk = wgmma_desc_add<T>(db, wgmma_b_offset<T, B_ROWS, TRANS_B>(k));
#pragma unroll
    for (int band = 0; band < BANDS; ++band) {
      if constexpr (CLEAR) MMA::run(acc + band * MMA::REGS, a[k / 16][band], dbk, k > 0 || keep);
      else MMA::run(acc + band * MMA::REGS, a[k / 16][band], dbk);
    }
  }
  wgmma_commit();
}

template <typename MMA, typename T, int K, int B_ROWS, bool TRANS_B, int BANDS = 1>
__device__ __forceinline__ void gemm_wgmma_rs(const T* regs, const T* B, float* acc) {
  gemm_wgmma_rs_issue<MMA, T, K, B_ROWS, TRANS_B, BANDS>(regs, B, acc);
  wgmma_wait<0>();
  fence_registers<MMA::REGS * BANDS>(acc);
}

}  // namespace tl
