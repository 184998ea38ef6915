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

// The element offset of (r, c) in a shared ROWS x COLS tile: rows padded by PAD elements, or
// (SWIZZLE = 128) the 16-byte chunks permuted by Swizzle<3,4,3> on byte offsets (the chunk
// index inside each 128-byte line XORed with the line's index mod 8), so that any 8 rows an
// ldmatrix reads at one column hit 8 different bank groups.  16-byte chunks stay whole.
template <typename T, int ROWS, int COLS, int PAD, int SWIZZLE>
__host__ __device__ __forceinline__ int smem_index(int r, int c) {
  if constexpr (SWIZZLE != 0) {
    constexpr int ROW = COLS * static_cast<int>(sizeof(T));
    if constexpr (ROW > 128) {
      // Rows wider than 128 bytes are cut into 128-byte segments stored one after the other
      // (segment-major), each a ROWS x 128-byte block: the layout wgmma's 128-byte swizzle
      // mode reads, and for ldmatrix the same spread over banks.
      static_assert(ROW % 128 == 0, "a swizzled row is whole 128-byte segments");
      constexpr int SEG = 128 / static_cast<int>(sizeof(T));
      const int seg = c / SEG;
      return seg * ROWS * SEG + swizzle128(r * 128 + (c % SEG) * static_cast<int>(sizeof(T))) /
                                    static_cast<int>(sizeof(T));
    } else {
      static_assert(128 % ROW == 0, "a swizzled row divides a 128-byte line");
      return swizzle128(r * ROW + c * static_cast<int>(sizeof(T))) / static_cast<int>(sizeof(T));
    }
  } else {
    return r * (COLS + PAD) + c;
  }
}

// A 32-bit value the compiler cannot see through: a pipelined ring's table entry, read an
// iteration before the copies that use it (codegen/copies.py table_loads), passes through this
// where the copies read it.  Left visible, ptxas moved the loaded value into a uniform register
// right after its load (the entry is the same in every lane), waiting there for the load.
__device__ __forceinline__ int opaque(int v) {
  int r;
  asm volatile("mov.b32 %0, %1;" : "=r"(r) : "r"(v));
  return r;
}

__device__ __forceinline__ void cp_async_16_full(void* dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr(dst)), "l"(src));
}

// The same tile element by element, by THREADS workers of which this thread is `worker`
// (unaligned rows; also the warp-specialized producer's copy when the TMA cannot be used).
template <typename T, int ROWS, int COLS, int THREADS, int PAD, int SWIZZLE>
__device__ __forceinline__ void copy_g2s_elements(T* smem, const T* g, long long stride, long long rows, long long cols,
                                                  long long row0, long long col0, int worker) {
#pragma unroll 1
  for (int i = worker; i < ROWS * COLS; i += THREADS) {
    const int r = i / COLS, c = i % COLS;
    const long long gr = row0 + r, gc = col0 + c;
    const bool in = gr >= 0 && gr < rows && gc >= 0 && gc < cols;
    smem[smem_index<T, ROWS, COLS, PAD, SWIZZLE>(r, c)] = in ? g[gr * stride + gc] : cvt<T>(0.0f);
  }
}

// Rounds of THREADS 16-byte vectors that are RPR whole rows each (THREADS a multiple of the VPR
// vectors a row): a thread's row steps by RPR a round, its column stays.  A swizzled tile's shared
// offsets repeat every PERIOD rounds, shifted by a constant (the swizzle's pattern is 1024 bytes,
// PATTERN rows), so that `dst` keeps PERIOD offsets a thread and the rest are immediates.
template <typename T, int ROWS, int COLS, int THREADS, int PAD, int SWIZZLE>
struct RowRounds {
  static constexpr int VPR = COLS / (16 / static_cast<int>(sizeof(T)));  // vectors per row
  static constexpr int RPR = THREADS / VPR;  // rows a round
  static constexpr int ROW_BYTES = COLS * static_cast<int>(sizeof(T));
  static constexpr int PATTERN = SWIZZLE == 0 ? 1 : ROW_BYTES >= 128 ? 8 : 1024 / ROW_BYTES;  // rows
  static constexpr int PERIOD = PATTERN % RPR == 0 ? PATTERN / RPR : RPR % PATTERN == 0 ? 1 : PATTERN;
  // round i's destination of the thread whose first row is r0 and column c
  static __device__ __forceinline__ T* dst(T* smem, int r0, int c, int i) {
    return smem + smem_index<T, ROWS, COLS, PAD, SWIZZLE>(r0 + (i % PERIOD) * RPR, c) +
           (i / PERIOD) * smem_index<T, ROWS, COLS, PAD, SWIZZLE>(PERIOD * RPR, 0);
  }
};

// global[row0 : row0+ROWS, col0 : col0+COLS] (a row-major tensor with `rows` x `cols`
// elements and `stride` elements between rows) -> a shared ROWS x COLS tile.  Three paths,
// chosen once per call (the choice is the same in every thread): a tile wholly inside the
// tensor with 16-byte aligned rows (the common case: no bounds arithmetic per vector, and
// the per-thread offsets are loop invariants the compiler hoists), an aligned tile at the
// tensor's edge (16-byte vectors, zero-filled where they leave the tensor), and unaligned rows
// (element by element).
template <typename T, int ROWS, int COLS, int THREADS, int PAD, int SWIZZLE, bool ASYNC>
__device__ __forceinline__ void copy_g2s(T* smem, const T* g, long long stride, long long rows, long long cols,
                                         long long row0, long long col0) {
  constexpr int VEC = 16 / sizeof(T);
  constexpr int VPR = COLS / VEC;  // vectors per row
  constexpr int VECS = ROWS * VPR;
  constexpr int ROUNDS = (VECS + THREADS - 1) / THREADS;
  if constexpr (COLS % VEC != 0) {  // rows that hold no whole number of vectors: never vectors
    // (instantiated, the vector paths would divide by VPR = 0)
    copy_g2s_elements<T, ROWS, COLS, THREADS, PAD, SWIZZLE>(smem, g, stride, rows, cols, row0, col0, threadIdx.x);
  } else {
    const bool vector_ok = (stride % VEC == 0) && (col0 % VEC == 0) &&  // whole vectors a row: above
                           ((reinterpret_cast<unsigned long long>(g) & 15) == 0);
    if (vector_ok && row0 >= 0 && col0 >= 0 && row0 + ROWS <= rows && col0 + COLS <= cols) {
      const T* base = g + row0 * stride + col0;
      if constexpr (THREADS % VPR == 0 && ROUNDS > 1 && sizeof(T) == 2 && COLS * sizeof(T) > 128) {
        // (16-bit rows wider than the swizzle atom only: ptxas -v on sm_80 spilled std.gemm's
        // matmul_i8 (128-byte i8 rows, 28 bytes) and a tf32 skinny tile (256-byte f32 rows, 8 bytes)
        // with this form, where the plain one below does not)
        // Whole rows a round, the shared offsets a thread keeps a swizzle period's (RowRounds):
        // computing each round's own kept one register per vector live (16 for a 64 x 512
        // tile), which MLA's 128-register accumulator could not spare.
        using R = RowRounds<T, ROWS, COLS, THREADS, PAD, SWIZZLE>;
        const int r0 = static_cast<int>(threadIdx.x) / VPR, c = (static_cast<int>(threadIdx.x) % VPR) * VEC;
  #pragma unroll
        for (int i = 0; i < ROUNDS; ++i) {
          if (ROWS % R::RPR == 0 || r0 + i * R::RPR < ROWS) {
            T* dst = R::dst(smem, r0, c, i);
            const T* s = base + static_cast<long long>(r0 + i * R::RPR) * stride + c;
            if constexpr (ASYNC) cp_async_16_full(dst, s);
            else *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(s);
          }
        }
      } else {
  #pragma unroll
        for (int i = 0; i < ROUNDS; ++i) {
          const int v = static_cast<int>(threadIdx.x) + i * THREADS;
          if (VECS % THREADS == 0 || v < VECS) {
            const int r = v / VPR, c = (v % VPR) * VEC;
            T* dst = smem + smem_index<T, ROWS, COLS, PAD, SWIZZLE>(r, c);
            const T* src = base + static_cast<long long>(r) * stride + c;
            if constexpr (ASYNC) cp_async_16_full(dst, src);
            else *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
          }
        }
      }
    } else if (vector_ok) {
  #pragma unroll 1  // edge tiles only: keep the code small (compile time, instruction cache)
      for (int i = 0; i < ROUNDS; ++i) {
        const int v = static_cast<int>(threadIdx.x) + i * THREADS;
        if (VECS % THREADS != 0 && v >= VECS) continue;
        const int r = v / VPR, c = (v % VPR) * VEC;
        const long long gr = row0 + r, gc = col0 + c;
        const long long avail = (gr < rows && gr >= 0) ? (cols - gc) : 0;
        const int bytes = avail <= 0 ? 0 : (avail >= VEC ? 16 : static_cast<int>(avail) * static_cast<int>(sizeof(T)));
        const T* src = bytes ? g + gr * stride + gc : g;
        T* dst = smem + smem_index<T, ROWS, COLS, PAD, SWIZZLE>(r, c);
        if constexpr (ASYNC) {
          cp_async_16(dst, src, bytes);
        } else if (bytes == 16) {
          *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
        } else {
  #pragma unroll 1
          for (int e = 0; e < VEC; ++e) dst[e] = (e * static_cast<int>(sizeof(T)) < bytes) ? src[e] : cvt<T>(0.0f);
        }
      }
    } else {
      copy_g2s_elements<T, ROWS, COLS, THREADS, PAD, SWIZZLE>(smem, g, stride, rows, cols, row0, col0, threadIdx.x);
    }
  }
}

// A shared ROWS x COLS tile -> global, converting to U; elements outside are skipped.  A tile
// of one dtype wholly inside the tensor with 16-byte aligned rows moves in 16-byte vectors (a
// shared vector is 16 bytes at one smem_index, as copy_g2s writes them); any other element by
// element.
template <typename T, typename U, int ROWS, int COLS, int THREADS, int PAD, int SWIZZLE>
__device__ __forceinline__ void copy_s2g(U* g, const T* smem, long long stride, long long rows, long long cols,
                                         long long row0, long long col0) {
  if constexpr (sizeof(T) == sizeof(U) && COLS % (16 / sizeof(T)) == 0) {
    constexpr int VEC = 16 / sizeof(T);
    constexpr int VPR = COLS / VEC;
    if (stride % VEC == 0 && col0 % VEC == 0 && (reinterpret_cast<unsigned long long>(g) & 15) == 0 &&
        row0 >= 0 && col0 >= 0 && row0 + ROWS <= rows && col0 + COLS <= cols) {
      U* base = g + row0 * stride + col0;
#pragma unroll
      for (int i = 0; i < (ROWS * VPR + THREADS - 1) / THREADS; ++i) {
        const int v = static_cast<int>(threadIdx.x) + i * THREADS;
        if ((ROWS * VPR) % THREADS == 0 || v < ROWS * VPR) {
          const int r = v / VPR, c = (v % VPR) * VEC;
          *reinterpret_cast<uint4*>(base + static_cast<long long>(r) * stride + c) =
              *reinterpret_cast<const uint4*>(smem + smem_index<T, ROWS, COLS, PAD, SWIZZLE>(r, c));
        }
      }
      return;
    }
  }
  for (int i = threadIdx.x; i < ROWS * COLS; i += THREADS) {
    const int r = i / COLS, c = i % COLS;
    const long long gr = row0 + r, gc = col0 + c;
    if (gr >= 0 && gr < rows && gc >= 0 && gc < cols)
      g[gr * stride + gc] = cvt<U>(smem[smem_index<T, ROWS, COLS, PAD, SWIZZLE>(r, c)]);
  }
}

// Shared tile -> shared tile with conversion (also what a global->shared copy with a dtype
// change becomes after its load), element by element.
template <typename T, typename U, int ROWS, int COLS, int THREADS, int PAD_T, int SW_T, int PAD_U, int SW_U>
__device__ __forceinline__ void copy_s2s(U* dst, const T* src) {
  for (int i = threadIdx.x; i < ROWS * COLS; i += THREADS) {
    const int r = i / COLS, c = i % COLS;
    dst[smem_index<U, ROWS, COLS, PAD_U, SW_U>(r, c)] = cvt<U>(src[smem_index<T, ROWS, COLS, PAD_T, SW_T>(r, c)]);
  }
}

// After a cp.async ring: stage `stage` of a staged shared buffer (ELEMS elements a stage,
// padding included) copied into stage 0, so that the code after the loop, which names stage 0,
// reads the last iteration's tile (schedule/last_stage.py).  The stages share one layout, so
// the bytes move as they are: 16 at a time when the stage is a whole number of 16-byte vectors
// (the stages of a ring start 16-byte aligned, as cp.async needs).
template <typename T, int ELEMS, int THREADS>
__device__ __forceinline__ void copy_stage_to_first(T* buf, int stage) {
  if constexpr ((ELEMS * sizeof(T)) % 16 == 0) {
    int4* dst = reinterpret_cast<int4*>(buf);
    const int4* src = reinterpret_cast<const int4*>(buf + stage * ELEMS);
    for (int i = threadIdx.x; i < static_cast<int>(ELEMS * sizeof(T) / 16); i += THREADS) dst[i] = src[i];
  } else {
    const T* src = buf + stage * ELEMS;
    for (int i = threadIdx.x; i < ELEMS; i += THREADS) buf[i] = src[i];
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
    smem[smem_index<U, ROWS, COLS, PAD, SWIZZLE>(r, c)] = in ? cvt<U>(g[gr * stride + gc]) : cvt<U>(0.0f);
  }
}

// A per-thread (local) ROWS x COLS tile <- global, element by element, converting to U.
template <typename T, typename U, int ROWS, int COLS>
__device__ __forceinline__ void copy_g2l(U* local, const T* g, long long stride, long long rows, long long cols,
                                         long long row0, long long col0) {
  for (int i = 0; i < ROWS * COLS; ++i) {
    const long long gr = row0 + i / COLS, gc = col0 + i % COLS;
    local[i] = (gr >= 0 && gr < rows && gc >= 0 && gc < cols) ? cvt<U>(g[gr * stride + gc]) : cvt<U>(0.0f);
  }
}

// A per-thread (local) tile -> global: every thread holds the same tile, so thread 0 writes it.
template <typename T, typename U, int ROWS, int COLS>
__device__ __forceinline__ void copy_l2g(U* g, const T* local, long long stride, long long rows, long long cols,
                                         long long row0, long long col0) {
  if (threadIdx.x != 0) return;
  for (int i = 0; i < ROWS * COLS; ++i) {
    const long long gr = row0 + i / COLS, gc = col0 + i % COLS;
    if (gr >= 0 && gr < rows && gc >= 0 && gc < cols) g[gr * stride + gc] = cvt<U>(local[i]);
  }
}

}  // namespace tl
