// tl/scan.cuh: cumsum, cumprod, cummax and cummin, the inclusive scans of a shared tile along
// one dimension (tlc's ir.Scan; tlc/codegen/scans.py picks the arguments).  The tile is viewed
// as OUTER x N x INNER: N the dimension scanned, the dimensions before and after it flattened.
// OP combines (ScanOp: sums, products, maxima, minima) in ACC (float for 16- and 8-bit floats;
// for sums and products an unsigned integer, so that they wrap as the destination's width does;
// for maxima and minima the destination's own integer type) and stores in U.  By the lines' shape:
// - a block of fewer than 32 threads scans each line (o, :, i) in one thread;
// - lines across the rows (INNER whole warps wide; DST as wide as ACC, or maxima and minima):
//   a thread per line and chunk of the rows, consecutive threads on consecutive lines, the
//   chunks' totals combined across the block (two __syncthreads: every thread calls it);
// - lines that are whole rows of 2- or 4-byte elements, a multiple of 128 long (unpadded,
//   padded to 4 elements or swizzled): 128 at a time, a vector of 4 a lane scanned in registers,
//   then one shuffle scan of the lanes' totals and the carry of the segments before;
// - any other line: one warp's, 32 elements at a time, a shuffle scan inside the segment plus
//   the carry of the segments before it (after it, reversed), which the segment's last (first)
//   lane hands on; lanes past the end add 0 (multiply by 1, compare with the identity).
// The warps take the lines in turn; a partial last warp stays out of the shuffles.  SRC and DST
// may be one tile: each element is read before it is written.  Shared layouts are tlc's
// (smem_index, with the tile viewed as S_ROWS x S_COLS: its last dimension the columns).
namespace tl {

enum class ScanOp { sum, prod, max, min };

// max and min of floats as fmaxf/fminf (a nan against a number gives the number, as NumPy's
// fmax), of integers by comparison.  The identities: 0, 1, and for maxima and minima of floats a
// nan (so that a line of nans stays nan), of integers the lowest or highest value.
template <typename A> __device__ __forceinline__ A scan_max(A a, A b) { return a > b ? a : b; }
template <typename A> __device__ __forceinline__ A scan_min(A a, A b) { return a < b ? a : b; }
__device__ __forceinline__ float scan_max(float a, float b) { return fmaxf(a, b); }
__device__ __forceinline__ float scan_min(float a, float b) { return fminf(a, b); }
__device__ __forceinline__ double scan_max(double a, double b) { return fmax(a, b); }
__device__ __forceinline__ double scan_min(double a, double b) { return fmin(a, b); }
__device__ __forceinline__ float scan_lowest(float) { return __int_as_float(0x7fffffff); }
__device__ __forceinline__ double scan_lowest(double) { return __longlong_as_double(0x7fffffffffffffffLL); }
__device__ __forceinline__ int scan_lowest(int) { return -2147483647 - 1; }
__device__ __forceinline__ unsigned scan_lowest(unsigned) { return 0u; }
__device__ __forceinline__ long long scan_lowest(long long) { return -9223372036854775807LL - 1; }
__device__ __forceinline__ unsigned long long scan_lowest(unsigned long long) { return 0ull; }
__device__ __forceinline__ float scan_highest(float) { return __int_as_float(0x7fffffff); }
__device__ __forceinline__ double scan_highest(double) { return __longlong_as_double(0x7fffffffffffffffLL); }
__device__ __forceinline__ int scan_highest(int) { return 2147483647; }
__device__ __forceinline__ unsigned scan_highest(unsigned) { return 0xffffffffu; }
__device__ __forceinline__ long long scan_highest(long long) { return 9223372036854775807LL; }
__device__ __forceinline__ unsigned long long scan_highest(unsigned long long) { return ~0ull; }

template <ScanOp OP, typename A> __device__ __forceinline__ A scan_identity() {
  if constexpr (OP == ScanOp::sum) return A(0);
  else if constexpr (OP == ScanOp::prod) return A(1);
  else if constexpr (OP == ScanOp::max) return scan_lowest(A());
  else return scan_highest(A());
}

// `earlier` combined with `later`, the scan's step.
template <ScanOp OP, typename A> __device__ __forceinline__ A scan_combine(A earlier, A later) {
  if constexpr (OP == ScanOp::sum) return earlier + later;
  else if constexpr (OP == ScanOp::prod) return earlier * later;
  else if constexpr (OP == ScanOp::max) return scan_max(earlier, later);
  else return scan_min(earlier, later);
}

// 4 elements of BYTES each as one vector.
template <int BYTES> struct ScanVecOf { using type = uint4; };
template <> struct ScanVecOf<2> { using type = uint2; };
template <int BYTES> using ScanVec = typename ScanVecOf<BYTES>::type;

template <ScanOp OP, typename ACC, typename T, typename U, int OUTER, int N, int INNER, bool REVERSE, int THREADS,
          int S_ROWS, int S_COLS, int S_PAD, int S_SWIZZLE, int D_PAD, int D_SWIZZLE>
__device__ __forceinline__ void cumsum_shared(U* dst, const T* src) {
  constexpr int LINES = OUTER * INNER;
  if constexpr (THREADS < 32) {
    for (int line = threadIdx.x; line < LINES; line += THREADS) {
      const int base = (line / INNER) * N * INNER + line % INNER;
      ACC sum = scan_identity<OP, ACC>();
      for (int k = 0; k < N; ++k) {
        const int flat = base + (REVERSE ? N - 1 - k : k) * INNER;
        sum = scan_combine<OP>(sum, cvt<ACC>(src[smem_index<T, S_ROWS, S_COLS, S_PAD, S_SWIZZLE>(flat / S_COLS, flat % S_COLS)]));
        dst[smem_index<U, S_ROWS, S_COLS, D_PAD, D_SWIZZLE>(flat / S_COLS, flat % S_COLS)] = cvt<U>(sum);
      }
    }
  } else if constexpr (INNER % 32 == 0 && THREADS % 32 == 0 &&
                       (sizeof(U) == sizeof(ACC) || OP == ScanOp::max || OP == ScanOp::min) &&
                       (INNER < THREADS ? THREADS % INNER == 0 : INNER % THREADS == 0) &&
                       N >= 2 * (INNER < THREADS ? THREADS / INNER : 1)) {
    // Lines across the rows (a dimension before the last scanned, INNER whole warps wide): a
    // thread per line and chunk of the rows, consecutive threads on consecutive lines (no bank
    // conflicts, no shuffles).  Each thread scans its chunk into DST (of the accumulator's own
    // width, or maxima and minima, which any DST holds exactly), the block waits, each thread combines the totals of the chunks before
    // its own, the block waits, and each thread combines that into its chunk.  A chunk of at most
    // 32 (std.reduce's column scans: 256 rows, 8 chunks of 32) stays in registers: 32 loads in
    // flight and a chain of 32 combines instead of 32 dependent load-combine-store steps, then
    // 32 read-combine-writes; only its total goes to DST before the first wait.
    constexpr int COLS = INNER < THREADS ? INNER : THREADS;
    constexpr int GROUPS = THREADS / COLS;
    constexpr int CHUNK = (N + GROUPS - 1) / GROUPS;
    const int c = threadIdx.x % COLS;
    const int g = threadIdx.x / COLS;
    // the shared (row, column) of line (o, i)'s k-th element in scan order, and its index in SRC
    // and in DST; lines as wide as the tile's rows (a column scan of a 2-D tile) index the rows
    // directly, so that a chunk's elements lie at constant offsets from its first
    auto row_of = [&](int o, int i, int k) {
      const int kk = REVERSE ? N - 1 - k : k;
      return INNER == S_COLS ? o * N + kk : ((o * N + kk) * INNER + i) / S_COLS;
    };
    auto col_of = [&](int o, int i, int k) {
      const int kk = REVERSE ? N - 1 - k : k;
      return INNER == S_COLS ? i : ((o * N + kk) * INNER + i) % S_COLS;
    };
    auto in = [&](int o, int i, int k) {
      return smem_index<T, S_ROWS, S_COLS, S_PAD, S_SWIZZLE>(row_of(o, i, k), col_of(o, i, k));
    };
    auto out = [&](int o, int i, int k) {
      return smem_index<U, S_ROWS, S_COLS, D_PAD, D_SWIZZLE>(row_of(o, i, k), col_of(o, i, k));
    };
    if constexpr (CHUNK <= 32) {
      // A chunk of at most 32 held in registers: its loads issued together (the combines are the
      // only chain), only its total written before the block waits, each element written once.
      // Every chunk whole where the groups divide N (each thread's g below GROUPS).
      constexpr bool WHOLE = N % GROUPS == 0;
      for (int o = 0; o < OUTER; ++o) {
        for (int i0 = 0; i0 < INNER; i0 += COLS) {
          const int i = i0 + c;
          ACC v[CHUNK];
          ACC run = scan_identity<OP, ACC>();
#pragma unroll
          for (int r = 0; r < CHUNK; ++r) {
            const int k = g * CHUNK + r;
            if (WHOLE || k < N) {
              run = scan_combine<OP>(run, cvt<ACC>(src[in(o, i, k)]));
            }
            v[r] = run;
          }
          const int mine = (g + 1) * CHUNK - 1 < N ? (g + 1) * CHUNK - 1 : N - 1;
          if (WHOLE || g * CHUNK < N) {  // the chunk's total, where the chunks after it read it
            dst[out(o, i, mine)] = cvt<U>(run);
          }
          __syncthreads();
          ACC before = scan_identity<OP, ACC>();
#pragma unroll
          for (int h = 0; h < GROUPS - 1; ++h) {
            if (h < g) {
              const int last = (h + 1) * CHUNK - 1 < N ? (h + 1) * CHUNK - 1 : N - 1;
              before = scan_combine<OP>(before, cvt<ACC>(dst[out(o, i, last)]));
            }
          }
          __syncthreads();
#pragma unroll
          for (int r = 0; r < CHUNK; ++r) {
            const int k = g * CHUNK + r;
            if (WHOLE || k < N) {
              dst[out(o, i, k)] =
                  cvt<U>(g > 0 ? scan_combine<OP>(before, v[r]) : v[r]);
            }
          }
        }
      }
    } else {
      for (int o = 0; o < OUTER; ++o) {
        for (int i0 = 0; i0 < INNER; i0 += COLS) {
          const int i = i0 + c;
          ACC run = scan_identity<OP, ACC>();
          for (int r = 0; r < CHUNK; ++r) {
            const int k = g * CHUNK + r;
            if (k < N) {
              run = scan_combine<OP>(run, cvt<ACC>(src[in(o, i, k)]));
              dst[out(o, i, k)] = cvt<U>(run);
            }
          }
          __syncthreads();
          ACC before = scan_identity<OP, ACC>();
          for (int h = 0; h < g; ++h) {
            const int last = (h + 1) * CHUNK - 1 < N ? (h + 1) * CHUNK - 1 : N - 1;
            before = scan_combine<OP>(before, cvt<ACC>(dst[out(o, i, last)]));
          }
          __syncthreads();
          if (g > 0) {
            for (int r = 0; r < CHUNK; ++r) {
              const int k = g * CHUNK + r;
              if (k < N) {
                U& d = dst[out(o, i, k)];
                d = cvt<U>(scan_combine<OP>(before, cvt<ACC>(d)));
              }
            }
          }
        }
      }
    }
  } else if constexpr (INNER == 1 && N == S_COLS && N % 128 == 0 && (sizeof(T) == 2 || sizeof(T) == 4) &&
                       (sizeof(U) == 2 || sizeof(U) == 4) && (S_SWIZZLE != 0 || (S_COLS + S_PAD) % 4 == 0) &&
                       (D_SWIZZLE != 0 || (S_COLS + D_PAD) % 4 == 0)) {
    // Lines that are whole rows of 2- or 4-byte elements, 128 at a time: each lane reads its 4
    // consecutive elements as one 8- or 16-byte vector (a chunk a padded or swizzled row keeps whole),
    // scans them in registers, and one shuffle scan of the 32 lanes' totals serves all 128
    // elements: a quarter of the shuffles and of the steps the carry waits on.
    constexpr int WARPS = THREADS / 32;
    constexpr int SEGMENTS = N / 128;
    const int lane = threadIdx.x % 32;
    const int warp = threadIdx.x / 32;
    if (warp >= WARPS) return;
    for (int line = warp; line < LINES; line += WARPS) {
      ACC carry = scan_identity<OP, ACC>();
      for (int step = 0; step < SEGMENTS; ++step) {
        const int col = (REVERSE ? SEGMENTS - 1 - step : step) * 128 + lane * 4;
        const T* in = &src[smem_index<T, S_ROWS, S_COLS, S_PAD, S_SWIZZLE>(line, col)];
        alignas(16) T x[4];
        *reinterpret_cast<ScanVec<sizeof(T)>*>(x) = *reinterpret_cast<const ScanVec<sizeof(T)>*>(in);
        ACC v[4];
        ACC run = scan_identity<OP, ACC>();
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int i = REVERSE ? 3 - e : e;
          run = scan_combine<OP>(run, cvt<ACC>(x[i]));
          v[i] = run;
        }
        ACC incl = run;
#pragma unroll
        for (int off = 1; off < 32; off <<= 1) {
          const ACC other = REVERSE ? __shfl_down_sync(0xffffffffu, incl, off) : __shfl_up_sync(0xffffffffu, incl, off);
          if (REVERSE ? lane + off < 32 : lane >= off) incl = scan_combine<OP>(other, incl);
        }
        ACC before = REVERSE ? __shfl_down_sync(0xffffffffu, incl, 1) : __shfl_up_sync(0xffffffffu, incl, 1);
        before = (REVERSE ? lane == 31 : lane == 0) ? carry : scan_combine<OP>(carry, before);
        alignas(16) U out[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) out[e] = cvt<U>(scan_combine<OP>(before, v[e]));
        *reinterpret_cast<ScanVec<sizeof(U)>*>(&dst[smem_index<U, S_ROWS, S_COLS, D_PAD, D_SWIZZLE>(line, col)]) =
            *reinterpret_cast<const ScanVec<sizeof(U)>*>(out);
        carry = scan_combine<OP>(carry, __shfl_sync(0xffffffffu, incl, REVERSE ? 0 : 31));
      }
    }
  } else {
    constexpr int WARPS = THREADS / 32;  // whole warps: a partial last warp stays out of the shuffles
    constexpr int SEGMENTS = (N + 31) / 32;
    const int lane = threadIdx.x % 32;
    const int warp = threadIdx.x / 32;
    if (warp >= WARPS) return;
    for (int line = warp; line < LINES; line += WARPS) {
      const int base = (line / INNER) * N * INNER + line % INNER;
      ACC carry = scan_identity<OP, ACC>();
      for (int step = 0; step < SEGMENTS; ++step) {
        const int k = (REVERSE ? SEGMENTS - 1 - step : step) * 32 + lane;
        const int flat = base + k * INNER;
        const int row = flat / S_COLS, col = flat % S_COLS;
        ACC v = k < N ? cvt<ACC>(src[smem_index<T, S_ROWS, S_COLS, S_PAD, S_SWIZZLE>(row, col)]) : scan_identity<OP, ACC>();
#pragma unroll
        for (int off = 1; off < 32; off <<= 1) {
          const ACC other = REVERSE ? __shfl_down_sync(0xffffffffu, v, off) : __shfl_up_sync(0xffffffffu, v, off);
          if (REVERSE ? lane + off < 32 : lane >= off) v = scan_combine<OP>(other, v);
        }
        v = scan_combine<OP>(carry, v);
        if (k < N) dst[smem_index<U, S_ROWS, S_COLS, D_PAD, D_SWIZZLE>(row, col)] = cvt<U>(v);
        carry = __shfl_sync(0xffffffffu, v, REVERSE ? 0 : 31);
      }
    }
  }
}

// A fragment of ROWS x COLS (layout L) scanned in place along its rows, in registers: each
// thread scans its runs (L::RUN consecutive columns of one row, in U: exact there, as
// schedule/scan_registers.py requires), the runs' totals meet in TOTALS (ROWS x COLS / L::RUN
// in shared memory, unpadded), which cumsum_shared scans a row at a time, and each run combines
// the total of the runs before it (after it, reversed).  Two barriers: every thread calls it.
template <ScanOp OP, typename ACC, typename L, int ROWS, int COLS, bool REVERSE, int THREADS, typename U>
__device__ __forceinline__ void cumsum_fragment(U* regs, ACC* totals) {
  constexpr int RUN = L::RUN, RUNS = COLS / RUN;
  static_assert(COLS % RUN == 0, "a run never crosses a row");
  const int t = threadIdx.x;
#pragma unroll
  for (int r0 = 0; r0 < L::REGS; r0 += RUN) {
    if (!L::valid(t, r0)) continue;
    ACC acc = scan_identity<OP, ACC>();
#pragma unroll
    for (int e = 0; e < RUN; ++e) {
      const int r = REVERSE ? r0 + RUN - 1 - e : r0 + e;
      acc = scan_combine<OP>(acc, cvt<ACC>(regs[r]));
      regs[r] = cvt<U>(acc);
    }
    totals[L::row(t, r0) * RUNS + L::col(t, r0) / RUN] = acc;
  }
  __syncthreads();
  cumsum_shared<OP, ACC, ACC, ACC, ROWS, RUNS, 1, REVERSE, THREADS, ROWS, RUNS, 0, 0, 0, 0>(totals, totals);
  __syncthreads();
#pragma unroll
  for (int r0 = 0; r0 < L::REGS; r0 += RUN) {
    if (!L::valid(t, r0)) continue;
    const int c = L::col(t, r0) / RUN;
    if (REVERSE ? c + 1 >= RUNS : c == 0) continue;  // the first run has none before it
    const ACC before = totals[L::row(t, r0) * RUNS + (REVERSE ? c + 1 : c - 1)];
#pragma unroll
    for (int e = 0; e < RUN; ++e) regs[r0 + e] = cvt<U>(scan_combine<OP>(before, cvt<ACC>(regs[r0 + e])));
  }
}

}  // namespace tl
