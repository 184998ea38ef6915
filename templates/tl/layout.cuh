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
  // Unsigned, so that / and % by a power of two are shifts and masks, and the column of a run's
  // e-th register folds to the run's column + e.
  __host__ __device__ static __forceinline__ unsigned linear(int t, int r) {
#ifdef __CUDA_ARCH__
    // Every thread that touches a fragment is one of the THREADS: knowing it, the compiler sees
    // which run lies in which row, and addresses all of a thread's runs from one pointer.
    __builtin_assume(t >= 0 && t < THREADS);
#endif
    return (static_cast<unsigned>(r / VEC) * THREADS + static_cast<unsigned>(t)) * VEC + static_cast<unsigned>(r % VEC);
  }
  __host__ __device__ static __forceinline__ int row(int t, int r) { return static_cast<int>(linear(t, r) / COLS); }
  __host__ __device__ static __forceinline__ int col(int t, int r) { return static_cast<int>(linear(t, r) % COLS); }
  // Every register is valid when the runs are whole rounds over the threads.
  __host__ __device__ static __forceinline__ bool valid(int t, int r) { return RUNS % THREADS == 0 || linear(t, r) < SIZE; }
};

// The accumulator of mma.sync.m16n8k16 over WARPS_M x WARPS_N warps: lane l of a warp holds,
// in each 16x8 piece, rows l/4 and l/4+8 and columns 2*(l%4) and 2*(l%4)+1.  With
// WGMMA_BANDS (one column of warps) a warp's 16-row bands lie 64 rows apart, as a warpgroup's
// m64 wgmma instructions, one per 64 rows it owns, lay them (schedule/layout.py).  With
// WGMMA_COLUMNS (64 rows, four warps a column) warpgroup g = warp / 4 owns columns g * WN ..,
// warp w rows 16 (w % 4) .., one m64 wgmma's accumulator a warpgroup.
template <int M, int N, int WARPS_M, int WARPS_N, bool WGMMA_BANDS = false, bool WGMMA_COLUMNS = false>
struct MmaAcc {
  static constexpr int WM = M / WARPS_M, WN = N / WARPS_N;
  static_assert(WM % 16 == 0 && WN % 8 == 0, "each warp's tile is whole 16x8 pieces");
  static_assert(!WGMMA_BANDS || WARPS_N == 1, "wgmma's bands: one column of warps");
  static_assert(!WGMMA_COLUMNS || (M == 64 && WARPS_M == 4 && !WGMMA_BANDS), "wgmma's columns: 64 rows a warpgroup");
  static constexpr int REGS = WM * WN / 32;
  static constexpr int RUN = 2;
  // Unsigned, as Blocked's: the thread is one of the block's, so that nvcc knows the indices
  // are never negative and sees that both columns of a pair, (lane % 4) * 2 and that + 1,
  // divide by 2 (a packed int4 byte) or 8 to the same value: their loads merge.
  __host__ __device__ static __forceinline__ unsigned thread(int t) {
#ifdef __CUDA_ARCH__
    __builtin_assume(t >= 0 && t < WARPS_M * WARPS_N * 32);
#endif
    return static_cast<unsigned>(t);
  }
  __host__ __device__ static __forceinline__ int row(int t, int r) {
    const unsigned warp = thread(t) / 32, lane = thread(t) % 32, band = (static_cast<unsigned>(r) / 4) / (WN / 8);
    const unsigned in_band = ((static_cast<unsigned>(r) % 4) / 2) * 8 + lane / 4;
    if (WGMMA_BANDS) return static_cast<int>((warp / 4) * 4 * WM + band * 64 + (warp % 4) * 16 + in_band);
    if (WGMMA_COLUMNS) return static_cast<int>((warp % 4) * 16 + in_band);
    return static_cast<int>((warp / WARPS_N) * WM + band * 16 + in_band);
  }
  __host__ __device__ static __forceinline__ int col(int t, int r) {
    const unsigned warp = thread(t) / 32, lane = thread(t) % 32, piece = static_cast<unsigned>(r) / 4;
    return static_cast<int>((WGMMA_COLUMNS ? warp / 4 : warp % WARPS_N) * WN + (piece % (WN / 8)) * 8 +
                            (lane % 4) * 2 + static_cast<unsigned>(r) % 2);
  }
  __host__ __device__ static __forceinline__ bool valid(int, int) { return true; }
};

// How the registers of a 2-D layout L group by their index in dimension KEEP: registers of one
// slot hold the same kept index in every thread (slot(r)), rep(s) is the first register of
// slot s.  Where no such grouping exists, each register is its own slot (COUNT == L::REGS).
template <typename L, int KEEP>
struct Slots {
  static constexpr int COUNT = L::REGS;
  __host__ __device__ static constexpr int slot(int r) { return r; }
  __host__ __device__ static constexpr int rep(int s) { return s; }
};

// Blocked: when a row is whole rounds of runs (COLS % (THREADS * VEC) == 0) or a round is
// whole rows ((THREADS * VEC) % COLS == 0), a row is every ROUNDS-th group of runs and a
// column the same position in each ROUNDS runs, in every thread.
template <int ROWS, int COLS, int THREADS, int VEC, int KEEP>
struct Slots<Blocked<ROWS, COLS, THREADS, VEC>, KEEP> {
  static constexpr int SPAN = THREADS * VEC;
  static constexpr bool GROUPS = COLS % SPAN == 0 || SPAN % COLS == 0;
  static constexpr int ROUNDS = COLS / SPAN > 1 ? COLS / SPAN : 1;
  static constexpr int REGS = Blocked<ROWS, COLS, THREADS, VEC>::REGS;
  static constexpr int PER_ROW = VEC * ROUNDS;
  static constexpr int COUNT = !GROUPS ? REGS : KEEP == 0 ? (REGS / VEC + ROUNDS - 1) / ROUNDS
                                                          : (REGS < PER_ROW ? REGS : PER_ROW);
  __host__ __device__ static constexpr int slot(int r) { return !GROUPS ? r : KEEP == 0 ? r / PER_ROW : r % PER_ROW; }
  __host__ __device__ static constexpr int rep(int s) { return !GROUPS ? s : KEEP == 0 ? s * PER_ROW : s; }
};

// The mma accumulator: rows by (row band, upper or lower 8), columns by (piece, pair element).
template <int M, int N, int WARPS_M, int WARPS_N, bool WGMMA_BANDS, bool WGMMA_COLUMNS, int KEEP>
struct Slots<MmaAcc<M, N, WARPS_M, WARPS_N, WGMMA_BANDS, WGMMA_COLUMNS>, KEEP> {
  static constexpr int WM = M / WARPS_M, WN = N / WARPS_N;
  static constexpr int COUNT = KEEP == 0 ? (WM / 16) * 2 : (WN / 8) * 2;
  __host__ __device__ static constexpr int slot(int r) {
    return KEEP == 0 ? ((r / 4) / (WN / 8)) * 2 + (r % 4) / 2 : ((r / 4) % (WN / 8)) * 2 + r % 2;
  }
  __host__ __device__ static constexpr int rep(int s) {
    return KEEP == 0 ? (s / 2) * (WN / 8) * 4 + (s % 2) * 2 : (s / 2) * 4 + s % 2;
  }
};

// A fragment replicated over the threads of a 2-D layout L that share its index in dimension
// KEEP (a row statistic: KEEP = 0): one register per slot of L, slot s holding element
// col(t, s) of the 1-D tile in every replica.  A loop over L reads the replica of its register
// r at slot(r).  `canonical` is true in exactly one replica of each element, the one that
// performs stores and atomics.
template <typename L, int KEEP>
struct Kept {
  using S = Slots<L, KEEP>;
  static constexpr int REGS = S::COUNT;
  static constexpr int RUN = KEEP == 1 ? L::RUN : 1;
  __host__ __device__ static constexpr int slot(int r) { return S::slot(r); }
  __host__ __device__ static __forceinline__ int row(int, int) { return 0; }
  __host__ __device__ static __forceinline__ int col(int t, int s) {
    return KEEP == 0 ? L::row(t, S::rep(s)) : L::col(t, S::rep(s));
  }
  __host__ __device__ static __forceinline__ bool valid(int t, int s) { return L::valid(t, S::rep(s)); }
  __host__ __device__ static __forceinline__ bool canonical(int t, int s) {
    return (KEEP == 0 ? L::col(t, S::rep(s)) : L::row(t, S::rep(s))) == 0;
  }
};

// Whether thread t's register r is the one copy of its element that writes memory: always,
// except in the replicas of a replicated fragment.
template <typename L> struct is_kept { static constexpr bool value = false; };
template <typename L, int KEEP> struct is_kept<Kept<L, KEEP>> { static constexpr bool value = true; };
template <typename L>
__device__ __forceinline__ bool writes(int t, int r) {
  if constexpr (is_kept<L>::value) return L::canonical(t, r);
  else return true;
}

// A run of N consecutive elements of T in memory <-> N registers of U, moved as the widest
// vectors (16, 8 or 4 bytes) that the run's size divides into; `p` must be aligned to that.
template <int N, typename T>
struct RunAccess {
  static constexpr int BYTES = N * static_cast<int>(sizeof(T));
  static constexpr int VBYTES = BYTES % 16 == 0 ? 16 : BYTES % 8 == 0 ? 8 : BYTES % 4 == 0 ? 4 : static_cast<int>(sizeof(T));
  static constexpr int ELEMS = VBYTES / static_cast<int>(sizeof(T));  // elements per access
};
template <int VBYTES> struct VectorOf { using type = unsigned short; };
template <> struct VectorOf<16> { using type = uint4; };
template <> struct VectorOf<8> { using type = uint2; };
template <> struct VectorOf<4> { using type = unsigned; };
template <> struct VectorOf<1> { using type = unsigned char; };

// A vector load that asks the L2 to keep its lines (schedule/l2_policy.py: a gather's rows,
// which other blocks may read again): ld.global.nc with an evict_last cache policy, made once
// per call (createpolicy; ptxas keeps one where the calls are inlined together; not volatile, so
// that ptxas may schedule the loads as it does plain ones: 53 -> 42 registers in moe_permute's
// ragged build, the plain copy's count).  Without KEEP, the plain load.
template <bool KEEP, typename V>
__device__ __forceinline__ V load_vector(const V* p) {
  if constexpr (!KEEP) {
    return *p;
  } else {
    unsigned long long policy;
    asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
    V v;
    if constexpr (sizeof(V) == 16) {
      asm("ld.global.nc.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
          : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p), "l"(policy));
    } else if constexpr (sizeof(V) == 8) {
      asm("ld.global.nc.L2::cache_hint.v2.u32 {%0, %1}, [%2], %3;" : "=r"(v.x), "=r"(v.y) : "l"(p), "l"(policy));
    } else if constexpr (sizeof(V) == 4) {
      asm("ld.global.nc.L2::cache_hint.u32 %0, [%1], %2;" : "=r"(v) : "l"(p), "l"(policy));
    } else if constexpr (sizeof(V) == 2) {
      asm("ld.global.nc.L2::cache_hint.u16 %0, [%1], %2;" : "=h"(v) : "l"(p), "l"(policy));
    } else {
      unsigned short w;
      asm("ld.global.nc.L2::cache_hint.u8 %0, [%1], %2;" : "=h"(w) : "l"(p), "l"(policy));
      v = static_cast<V>(w);
    }
    return v;
  }
}

// A run of 4-byte (or wider) elements to global memory is stored by st.global.v4/v2 in PTX:
// written as a plain store of the union's vector, nvcc split it into scalar stores (48
// st.global.f32 and no vector store for an [8, 256] f32 tile).  Narrower runs take it from a
// fragment of at most 16 registers a thread that already holds the stored dtype (no
// conversion): the plain store of a copied 16-bit tile was split into st.global.v2.u16
// (std.data's tril, permute, index_select: 8 4-byte stores a thread where 2 of 16 bytes do).
// Wider fragments keep the plain store: through this asm, the f16 softmax row (32 halves a
// thread at 4 blocks an SM) spilled 20 bytes.
__device__ __forceinline__ void store_global_vector(void* p, uint4 v) {
  asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}
__device__ __forceinline__ void store_global_vector(void* p, uint2 v) {
  asm volatile("st.global.v2.b32 [%0], {%1, %2};" ::"l"(p), "r"(v.x), "r"(v.y) : "memory");
}

// A copy of 1-byte elements (bool, u8, i8) into registers of their own type moves the bytes as
// they are, a vector's words into the registers' words (memcpy), never element by element: a
// bool read as a bool is tested (!= 0) and stored back as 0 or 1, and a byte read alone is
// extracted from its word, each packed again where the registers are read as words (a parallel
// loop of bytewise logic: codegen/byte_words.py).  Every path of a copy fills the same words, so
// that where a whole run's path and a partial one's meet no word is split into bytes.
// Integers and bools only: an f8 fragment (std.quant's dequantizers) is converted where it is
// read, and its bytes moved by memcpy put sm_80's dequantize_per_block (f16, f8e5m2) in local
// memory (24 bytes spilled, ptxas -v).
template <typename T> struct byte_int { static constexpr bool value = false; };
template <> struct byte_int<bool> { static constexpr bool value = true; };
template <> struct byte_int<char> { static constexpr bool value = true; };
template <> struct byte_int<signed char> { static constexpr bool value = true; };
template <> struct byte_int<unsigned char> { static constexpr bool value = true; };
template <typename T, typename U> struct raw_bytes {
  static constexpr bool value = same_type<T, U>::value && byte_int<T>::value;
};

// Registers 4w .. 4w + 3 of a fragment of 1-byte elements as one 32-bit word (byte e of the
// word register 4w + e), and back: a parallel loop's bytewise logic, four elements an
// instruction (codegen/byte_words.py).  memcpy (a builtin of nvcc's and NVRTC's device code;
// NVRTC has no __builtin_memcpy), so that the fragment's words stay whole registers where every
// access to it is a word.
template <typename T>
__device__ __forceinline__ unsigned bytes_word(const T* regs, int w) {
  static_assert(sizeof(T) == 1, "a word of 1-byte registers");
  unsigned x;
  memcpy(&x, regs + 4 * w, 4);
  return x;
}
template <typename T>
__device__ __forceinline__ void set_bytes_word(T* regs, int w, unsigned x) {
  static_assert(sizeof(T) == 1, "a word of 1-byte registers");
  memcpy(regs + 4 * w, &x, 4);
}
// where(c, a, b) byte by byte, c's bytes 0 or 1 (bools): c * 0xff is each byte's mask.
__device__ __forceinline__ unsigned select_bytes(unsigned c, unsigned a, unsigned b) {
  const unsigned m = c * 0xffu;
  return (a & m) | (b & ~m);
}
// where(c[r + e], a[r + e], b[r + e]) into out[r + e], e = 0..3, of 16-bit fragments a, b and out
// as two 32-bit words each and a bool fragment c as one (bytes 0 or 1): each word's mask is its
// two bools spread to its halves (PRMT) times 0xff (codegen/byte_words.py).  Element by element,
// ptxas held each bool and each half in a register of its own (std.broadcast.where, 32 elements
// a thread: 111 registers on sm_90a, 77 as words).
template <typename T>
__device__ __forceinline__ void select_halves4(T* out, const bool* c, const T* a, const T* b, int r) {
  static_assert(sizeof(T) == 2, "four 16-bit registers");
  unsigned cw, aw[2], bw[2];
  memcpy(&cw, c + r, 4);
  memcpy(aw, a + r, 8);
  memcpy(bw, b + r, 8);
  const unsigned m0 = __byte_perm(cw, 0, 0x1100) * 0xffu, m1 = __byte_perm(cw, 0, 0x3322) * 0xffu;
  aw[0] = (aw[0] & m0) | (bw[0] & ~m0);
  aw[1] = (aw[1] & m1) | (bw[1] & ~m1);
  memcpy(out + r, aw, 8);
}

// WIDE (FragmentStore's VECTOR_RUNS): a fragment of any size whose registers hold the stored dtype
// takes the asm store too (see FragmentStore).
template <int N, bool GLOBAL = false, int REGS = 0, bool WIDE = false, typename T, typename U>
__device__ __forceinline__ void store_run(U* p, const T* regs) {
  using A = RunAccess<N, U>;
  using V = typename VectorOf<A::VBYTES>::type;
#pragma unroll
  for (int i = 0; i < N; i += A::ELEMS) {
    union { V v; U e[A::ELEMS]; } u;
    if constexpr (raw_bytes<T, U>::value) {
      memcpy(&u.v, regs + i, sizeof(V));
    } else {
#pragma unroll
      for (int e = 0; e < A::ELEMS; ++e) {
        if constexpr (same_type<T, U>::value) u.e[e] = regs[i + e];  // as copy_s2f: no round trip
        else u.e[e] = cvt<U>(regs[i + e]);
      }
    }
    if constexpr (GLOBAL && (sizeof(U) >= 4 || (same_type<T, U>::value && (REGS <= 16 || WIDE))) && sizeof(V) >= 8) {
      store_global_vector(p + i, u.v);
    } else {
      *reinterpret_cast<V*>(p + i) = u.v;
    }
  }
}

// A pair of an mma accumulator's registers (2q, 2q + 1: one row, adjacent columns), converted,
// to p and p + 1 of a global tensor (codegen/store_pairs.py): one store of both where both lie
// inside and p is aligned to the pair, else each inside one alone, as the scalar loop stores them.
template <typename U>
__host__ __device__ __forceinline__ void store_pair(U* p, U a, U b, bool in0, bool in1) {
  using V = typename VectorOf<2 * sizeof(U)>::type;
  static_assert(sizeof(V) == 2 * sizeof(U), "a pair of 1-, 2- or 4-byte elements");
  if (in0 && in1 && reinterpret_cast<unsigned long long>(p) % sizeof(V) == 0) {
    union { V v; U e[2]; } u;
    u.e[0] = a;
    u.e[1] = b;
    *reinterpret_cast<V*>(p) = u.v;
    return;
  }
  if (in0) p[0] = a;
  if (in1) p[1] = b;
}

// A run of N consecutive elements of shared memory into N registers, as the widest vectors its
// bytes allow (the caller keeps `p` aligned to them: codegen/shared_runs.py): a parallel loop's
// read of a shared buffer at its column, one run at a time, where element reads stay scalar.
template <int N, typename T>
__device__ __forceinline__ void load_run(T (&regs)[N], const T* p) {
  using A = RunAccess<N, T>;
  using V = typename VectorOf<A::VBYTES>::type;
#pragma unroll
  for (int i = 0; i < N; i += A::ELEMS) {
    union { V v; T e[A::ELEMS]; } u;
    u.v = *reinterpret_cast<const V*>(p + i);
#pragma unroll
    for (int e = 0; e < A::ELEMS; ++e) regs[i + e] = u.e[e];
  }
}

// A fragment <-> global tile of a row-major tensor (rows x cols, `stride` between rows), in
// the fragment's layout L; elements outside the tensor read as 0 and are not written.  Each
// run of L::RUN registers (consecutive columns) that lies inside the tensor moves as vectors
// when the tensor's rows and the tile's origin keep them aligned (decided once per call);
// the rest element by element.  A replicated fragment is written by its canonical replicas.
// The tensor's bounds are taken relative to the tile's origin once, so that the checks per
// run are 32-bit compares of the layout's own (row, col).
struct TileBounds {
  int row_lo, row_hi, col_lo, col_hi;  // (r, c) of the tile is inside iff lo <= r < hi, lo <= c < hi
  __device__ __forceinline__ TileBounds(long long rows, long long cols, long long row0, long long col0)
      : row_lo(clamp(-row0)), row_hi(clamp(rows - row0)), col_lo(clamp(-col0)), col_hi(clamp(cols - col0)) {}
  __device__ static __forceinline__ int clamp(long long x) {
    return x < -(1 << 30) ? -(1 << 30) : x > (1 << 30) ? (1 << 30) : static_cast<int>(x);
  }
  __device__ __forceinline__ bool row_in(int r) const { return r >= row_lo && r < row_hi; }
  __device__ __forceinline__ bool col_in(int c) const { return c >= col_lo && c < col_hi; }
};

// TL_WHOLE_RUNS: the runtime's build for launches under which every run a copy between a
// fragment and a tensor moves lies wholly inside the tensor or wholly outside it, aligned (the
// tensors' bases 16-byte aligned, their last sizes multiples of the runs, the tiles' column
// origins multiples of them: runtime/whole_runs.py checks, codegen/whole_runs.py says which):
// the copies' alignment tests and element-by-element paths are compiled out (a run outside
// reads as 0, as before), about half of a row-wise kernel's code.  A SHIFTED copy keeps both.
struct RunsBuild {  // (a class member: a namespace's constant that no kernel reads is a warning)
#ifdef TL_WHOLE_RUNS
  static constexpr bool RAGGED_RUNS = false;
#else
  static constexpr bool RAGGED_RUNS = true;
#endif
};

// A run of N elements of a tensor in global memory, at `p` (column `col` of `cols`), into N
// registers: a parallel loop's read of a tensor at its column plus an offset constant along
// the run (codegen/shared_runs.py).  `inside` says whether the run's other indices are inside
// the tensor.  A run inside it and aligned moves as the widest vectors its bytes allow; any
// other run element by element, those outside reading 0 (the address of an element outside is
// formed, never read).  Under TL_WHOLE_RUNS (the column's origin a multiple of N, `cols` too,
// the base aligned: codegen/whole_runs.py) a run is whole or wholly outside: its vectors are
// loaded with no branch and no predicate, from `p` or, for a run outside, from ZeroRun's
// zeros, so that nvcc issues the loads of a loop's unrolled taps together and loads a run that
// two unrolled taps read (a depthwise convolution's input row, read by the taps of the output
// rows below it) once: a predicated or branched load it neither hoists nor merges (std.conv's
// depthwise_conv2d at BH=4 rows unrolled, sm_90a: 36 LDG.128 a thread as predicated loads
// behind a branch a row, 18 so, issued before the weights' barrier).
// The caller's `inside` is a `&` of its tests, not `&&`: nvcc made branches of the `&&`, one
// copy of each tap's code for a row inside and one for a row outside.

// BYTES bytes of zeros in global memory, read by a run outside its tensor (a static local: one
// per translation unit that loads one, nothing in those that do not; a class member, as
// RunsBuild's, so that a kernel that reads none draws no warning)
struct ZeroRun {
  static constexpr int BYTES = 256;
  __device__ static __forceinline__ const void* get() {
    static uint4 zeros[BYTES / 16];
    return zeros;
  }
};

template <int N, typename T>
__device__ __forceinline__ void load_run_global(T (&regs)[N], const T* p, bool inside, int col, int cols) {
  using A = RunAccess<N, T>;
  using V = typename VectorOf<A::VBYTES>::type;
  // both paths fill the same vectors, so that the registers meet packed (the element path
  // packs; the vector path's halves are read in place, no unpacking a run)
  union { V v[N / A::ELEMS]; T e[N]; } u;
  if constexpr (!RunsBuild::RAGGED_RUNS) {
    static_assert(A::BYTES <= ZeroRun::BYTES, "load_run_global: a run longer than ZeroRun's zeros");
    const bool whole = inside & (col >= 0) & (col < cols);
    const V* q = reinterpret_cast<const V*>(whole ? static_cast<const void*>(p) : ZeroRun::get());
#pragma unroll
    for (int i = 0; i < N / A::ELEMS; ++i) u.v[i] = q[i];
  } else if (inside && col >= 0 && col <= cols - N && reinterpret_cast<unsigned long long>(p) % A::VBYTES == 0) {
#pragma unroll
    for (int i = 0; i < N / A::ELEMS; ++i) u.v[i] = reinterpret_cast<const V*>(p)[i];
  } else {
#pragma unroll
    for (int e = 0; e < N; ++e) u.e[e] = inside && col + e >= 0 && col + e < cols ? p[e] : cvt<T>(0.0f);
  }
#pragma unroll
  for (int e = 0; e < N; ++e) regs[e] = u.e[e];
}

template <typename L, typename T>
__device__ __forceinline__ bool runs_aligned(const T* g, long long stride, long long col0) {
  constexpr int E = RunAccess<L::RUN, T>::ELEMS;
  return (reinterpret_cast<unsigned long long>(g) % RunAccess<L::RUN, T>::VBYTES) == 0 && stride % E == 0 &&
         col0 % E == 0;
}

// Loads are issued for every run before any is converted: a conversion waits for its load, so
// converting run by run would leave one vector in flight per thread instead of all of them.
// The copies of a batch (schedule/batch_loads.py) issue every load of the batch before the
// first conversion waits for one: where every run of every copy of the batch lies inside its
// tensor, aligned (g2f_whole: the common case, decided per thread), the loads and then the
// conversions run in one basic block (g2f_load, g2f_convert); elsewhere copy by copy.  Split
// run by run instead, ptxas kept each copy's bounds and predicates across the batch (128
// registers for layer_norm's three copies of 32 halves a thread, 95 as three copy_g2f calls).
template <typename L, typename T>
__device__ __forceinline__ bool g2f_whole(const T* g, long long stride, long long rows, long long cols, long long row0,
                                          long long col0) {
  constexpr int RUN = L::RUN;
  const int t = threadIdx.x;
  const TileBounds in(rows, cols, row0, col0);
  bool all = !RunsBuild::RAGGED_RUNS || runs_aligned<L>(g, stride, col0);
#pragma unroll
  for (int k = 0; k < L::REGS / RUN; ++k) {
    const int lr = L::row(t, k * RUN), lc = L::col(t, k * RUN);
    all = all && L::valid(t, k * RUN) && in.row_in(lr) && in.col_in(lc) && in.col_in(lc + RUN - 1);
  }
  return all;
}

template <typename L, typename T>
struct G2FVectors {
  using A = RunAccess<L::RUN, T>;
  using V = typename VectorOf<A::VBYTES>::type;
  static constexpr int NV = L::REGS / A::ELEMS;
  V v[NV];
};

template <typename L, typename T>
__device__ __forceinline__ G2FVectors<L, T> g2f_load(const T* g, long long stride, long long row0, long long col0) {
  using R = G2FVectors<L, T>;
  constexpr int RUN = L::RUN, NV = RUN / R::A::ELEMS;
  const int t = threadIdx.x;
  const T* tile = g + row0 * stride + col0;
  R out;
#pragma unroll
  for (int k = 0; k < L::REGS / RUN; ++k) {
    const T* p = tile + static_cast<long long>(L::row(t, k * RUN)) * stride + L::col(t, k * RUN);
#pragma unroll
    for (int v = 0; v < NV; ++v) out.v[k * NV + v] = *reinterpret_cast<const typename R::V*>(p + v * R::A::ELEMS);
  }
  return out;
}

template <typename L, typename T, typename U>
__device__ __forceinline__ void g2f_convert(U* regs, const G2FVectors<L, T>& in) {
  using R = G2FVectors<L, T>;
#pragma unroll
  for (int v = 0; v < R::NV; ++v) {
    // bytes, and in the TL_WHOLE_RUNS build a type into itself, as the vectors are (as copy_g2f's
    // whole runs: the batch's registers and its fallback's then meet packed alike, not merged 16
    // bits at a time)
    if constexpr (raw_bytes<T, U>::value || (!RunsBuild::RAGGED_RUNS && same_type<T, U>::value)) {
      memcpy(regs + v * R::A::ELEMS, &in.v[v], sizeof(typename R::V));
    } else {
      union { typename R::V v; T e[R::A::ELEMS]; } u;
      u.v = in.v[v];
#pragma unroll
      for (int e = 0; e < R::A::ELEMS; ++e) {
        // a 16-bit float into its own type is itself: through float and back it was HADD2.F32 and
        // F2FP a pair, which ptxas keeps (a NaN's payload), on every f16 tile a batch loads
        // (std.reduce's sum_axis0 at (16384, 8192), f16, sm_90a: 267 -> 171 SASS instructions a
        // step of its column loop's hot path, 64 elements a thread)
        if constexpr (same_type<T, U>::value) regs[v * R::A::ELEMS + e] = u.e[e];
        else regs[v * R::A::ELEMS + e] = cvt<U>(u.e[e]);
      }
    }
  }
}

// A tile whose origin may lie `s` elements past a vector boundary (0 < s < ELEMS), in a tensor
// whose rows are aligned: std.data.pad's x[r0 - top, c0 - left], split's x[r, Na + c].  Each
// whole run is read as the NV + 1 aligned vectors it overlaps (each holds one of the run's
// elements, so none reaches past the row's last aligned vector) and its elements are shifted
// out of their words (funnel shifts, the word offset picked by selects), where element by
// element each thread issued RUN 2-byte loads (BATCH below: which tiles load every run first).
// Only the copies the code generator marks
// SHIFTED (a column origin offset by a run-time size: codegen/copies.py) have the path: compiled
// into every copy, it left NVVM making none of a kernel's loads ld.global.nc.  run_shift: the
// tile's shift in elements, or -1 where the rows are not aligned (or runs narrower than 8 bytes).
template <typename L, typename T>
__device__ __forceinline__ int run_shift(const T* g, long long stride, long long col0) {
  using A = RunAccess<L::RUN, T>;
  constexpr int E = A::ELEMS;
  if (A::VBYTES < 8 || reinterpret_cast<unsigned long long>(g) % A::VBYTES != 0 || stride % E != 0) return -1;
  return static_cast<int>(((col0 % E) + E) % E);
}

template <typename L, bool KEEP = false, typename T, typename U>
__device__ __forceinline__ void copy_g2f_shifted(U* regs, const T* g, long long stride, long long rows, long long cols,
                                                 long long row0, long long col0, int shift) {
  constexpr int RUN = L::RUN, RUNS = L::REGS / RUN;
  using A = RunAccess<RUN, T>;
  using V = typename VectorOf<A::VBYTES>::type;
  constexpr int NV = RUN / A::ELEMS, W = A::VBYTES / 4;  // vectors per run, words per vector
  const int t = threadIdx.x;
  const TileBounds in(rows, cols, row0, col0);
  const T* tile = g + row0 * stride + col0;
  const int bytes = shift * static_cast<int>(sizeof(T)), q = bytes / 4, r = 8 * (bytes % 4);
  // Where a thread's runs' vectors take at most 16 words (f16 and bf16 tiles of two runs, 1-byte
  // tiles), every whole run's vectors are loaded before the first is shifted: pad's two runs a
  // thread waited for each other (0.68 of copy on the H200 at (16384, 8192) f16; std.data.tril,
  // the same tile unshifted, 0.99).  More (f32's four runs, i64's eight) run by run: batched, split
  // f32 spilled 8 bytes on sm_80 at the 10 blocks an SM its estimate asks.
  constexpr bool BATCH = RUNS * (NV + 1) * W <= 16;
  union Raw { V v[NV + 1]; unsigned w[(NV + 1) * W]; };
  Raw raw[RUNS];
  bool whole[RUNS];
#pragma unroll
  for (int k = 0; k < RUNS; ++k) {
    const int lr = L::row(t, k * RUN), lc = L::col(t, k * RUN);
    const T* p = tile + static_cast<long long>(lr) * stride + lc;
    whole[k] = L::valid(t, k * RUN) && in.row_in(lr) && in.col_in(lc) && in.col_in(lc + RUN - 1);
    if (BATCH && whole[k]) {
#pragma unroll
      for (int v = 0; v <= NV; ++v) raw[k].v[v] = load_vector<KEEP>(reinterpret_cast<const V*>(p - shift) + v);
    }
  }
#pragma unroll
  for (int k = 0; k < RUNS; ++k) {
    const int r0 = k * RUN, lr = L::row(t, r0), lc = L::col(t, r0);
    const T* p = tile + static_cast<long long>(lr) * stride + lc;
    if (whole[k]) {
      if constexpr (!BATCH) {
#pragma unroll
        for (int v = 0; v <= NV; ++v) raw[k].v[v] = load_vector<KEEP>(reinterpret_cast<const V*>(p - shift) + v);
      }
      union { unsigned w[NV * W]; T e[RUN]; } out;
#pragma unroll
      for (int i = 0; i < NV * W; ++i) {
        unsigned lo = raw[k].w[i], hi = raw[k].w[i + 1];
#pragma unroll
        for (int c = 1; c < W; ++c) {
          lo = q == c ? raw[k].w[i + c] : lo;
          hi = q == c ? raw[k].w[i + c + 1] : hi;
        }
        out.w[i] = __funnelshift_r(lo, hi, r);
      }
      if constexpr (raw_bytes<T, U>::value) {
        memcpy(regs + r0, out.w, RUN);
      } else {
#pragma unroll
        for (int e = 0; e < RUN; ++e) regs[r0 + e] = cvt<U>(out.e[e]);
      }
      continue;
    }
    const bool row_in = L::valid(t, r0) && in.row_in(lr);
#pragma unroll
    for (int e = 0; e < RUN; ++e) regs[r0 + e] = row_in && in.col_in(lc + e) ? cvt<U>(p[e]) : cvt<U>(0.0f);
  }
}

template <typename L, bool SHIFTED = false, bool KEEP = false, typename T, typename U>
__device__ __forceinline__ void copy_g2f(U* regs, const T* g, long long stride, long long rows, long long cols,
                                         long long row0, long long col0) {
  constexpr int RUN = L::RUN, RUNS = L::REGS / RUN;
  using A = RunAccess<RUN, T>;
  using V = typename VectorOf<A::VBYTES>::type;
  constexpr int NV = RUN / A::ELEMS;  // vectors per run
  const int t = threadIdx.x;
  if constexpr (SHIFTED) {
    if (const int shift = run_shift<L>(g, stride, col0); shift > 0) {  // the same in every thread
      copy_g2f_shifted<L, KEEP>(regs, g, stride, rows, cols, row0, col0, shift);
      return;
    }
  }
  constexpr bool RAGGED = RunsBuild::RAGGED_RUNS || SHIFTED;
  const bool aligned = !RAGGED || runs_aligned<L>(g, stride, col0);
  const TileBounds in(rows, cols, row0, col0);
  const T* tile = g + row0 * stride + col0;
  V raw[RUNS][NV];
  bool whole[RUNS];  // the run lies inside the tensor and was loaded as vectors
#pragma unroll
  for (int k = 0; k < RUNS; ++k) {
    const int lr = L::row(t, k * RUN), lc = L::col(t, k * RUN);
    const T* p = tile + static_cast<long long>(lr) * stride + lc;
    whole[k] = aligned && L::valid(t, k * RUN) && in.row_in(lr) && in.col_in(lc) && in.col_in(lc + RUN - 1);
    if constexpr (!RAGGED) {  // a run not whole lies outside the tensor: zeros, as whole vectors
#pragma unroll
      for (int v = 0; v < NV; ++v) raw[k][v] = whole[k] ? load_vector<KEEP>(reinterpret_cast<const V*>(p + v * A::ELEMS)) : V{};
    } else if (whole[k]) {
#pragma unroll
      for (int v = 0; v < NV; ++v) raw[k][v] = load_vector<KEEP>(reinterpret_cast<const V*>(p + v * A::ELEMS));
    }
  }
#pragma unroll
  for (int k = 0; k < RUNS; ++k) {
    const int r0 = k * RUN;
    if (!RAGGED || whole[k]) {
      // bytes as they are, and in the TL_WHOLE_RUNS build a type into itself (as g2f_convert):
      // element by element through float, a half was HADD2.F32 and F2FP (which ptxas keeps: a
      // NaN's payload) and a run's zeros or loaded halves were merged 16 bits at a time (PRMT)
      // (var_axis1 of (16384, 8192) f16, sm_90a: 64 -> 42 registers).  The ragged build keeps
      // the conversions: without them ptxas took more registers there (var_axis1 spilled 8
      // bytes, std.elementwise's mish_bwd 24, rms_norm 70 -> 102 registers).
      if constexpr (raw_bytes<T, U>::value || (!RAGGED && same_type<T, U>::value)) {
        memcpy(regs + r0, raw[k], sizeof(raw[k]));
      } else {
#pragma unroll
        for (int v = 0; v < NV; ++v) {
          union { V v; T e[A::ELEMS]; } u;
          u.v = raw[k][v];
#pragma unroll
          for (int e = 0; e < A::ELEMS; ++e) regs[r0 + v * A::ELEMS + e] = cvt<U>(u.e[e]);
        }
      }
      continue;
    }
    if constexpr (RAGGED) {
      const int lr = L::row(t, r0), lc = L::col(t, r0);
      const T* p = tile + static_cast<long long>(lr) * stride + lc;
      const bool row_in = L::valid(t, r0) && in.row_in(lr);
      if constexpr (raw_bytes<T, U>::value) {  // the bytes as they are, into the run's words
        unsigned char b[RUN];
#pragma unroll
        for (int e = 0; e < RUN; ++e) b[e] = row_in && in.col_in(lc + e) ? reinterpret_cast<const unsigned char*>(p)[e] : 0;
        memcpy(regs + r0, b, RUN);
      } else {
#pragma unroll
        for (int e = 0; e < RUN; ++e) regs[r0 + e] = row_in && in.col_in(lc + e) ? cvt<U>(p[e]) : cvt<U>(0.0f);
      }
    }
  }
}

// A fragment's runs to a global tile, a run at a time: whether the runs are aligned and the
// tile's bounds are decided once, when it is made; `run(regs, r0)` stores registers r0 ..
// r0 + RUN.  copy_f2g stores every run the same way; a parallel loop whose fragment is copied
// out right after it stores each run as it finishes computing it (schedule/fold_stores.py), so
// that a run's registers are free for the next (the plain layer_norm: 80 registers and 52 bytes
// of spills at 3 blocks an SM with the copy after the loop, 79 and none folded).
// VECTOR_RUNS (codegen/shared_runs.py's RAGGED_VECTOR_STORES): in the general build (ragged
// runs), a whole run of a fragment wider than 16 registers that holds the stored 16- or 8-bit
// dtype is stored by st.global.v4 (store_global_vector), where nvcc split the union store into
// st.global.v2.u16 (std.broadcast's pow f16: 16 STG.E a thread for 4 STG.E.128, and at BLOCKS = 8
// 64 registers and 12 bytes of spills where the asm store takes 53 and none; sm_90a).
template <typename L, typename U, bool VECTOR_RUNS = false>
struct FragmentStore {
  U* tile;
  long long stride;
  bool aligned;
  TileBounds in;
  __device__ __forceinline__ FragmentStore(U* g, long long stride_, long long rows, long long cols, long long row0,
                                           long long col0)
      : tile(g + row0 * stride_ + col0), stride(stride_), aligned(!RunsBuild::RAGGED_RUNS || runs_aligned<L>(g, stride_, col0)),
        in(rows, cols, row0, col0) {}
  template <typename T>
  __device__ __forceinline__ void run(const T* regs, int r0) const {
    constexpr int RUN = L::RUN;
    const int t = threadIdx.x;
    const int lr = L::row(t, r0), lc = L::col(t, r0);
    if (!L::valid(t, r0) || !writes<L>(t, r0) || !in.row_in(lr)) return;
    U* p = tile + static_cast<long long>(lr) * stride + lc;
    if (aligned && in.col_in(lc) && in.col_in(lc + RUN - 1)) {
      store_run<RUN, true, L::REGS, VECTOR_RUNS && RunsBuild::RAGGED_RUNS>(p, regs + r0);
      return;
    }
    if constexpr (RunsBuild::RAGGED_RUNS) {  // (else a run not whole lies outside the tensor)
#pragma unroll
      for (int e = 0; e < RUN; ++e) {
        if (!in.col_in(lc + e)) continue;
        if constexpr (same_type<T, U>::value) p[e] = regs[r0 + e];  // as store_run: no round trip
        else p[e] = cvt<U>(regs[r0 + e]);
      }
    }
  }
};

// The whole fragment, as FragmentStore::run does run by run.  Written out rather than sharing
// a function with it: through the struct, or through a free function taking the run's bounds
// (by value or by reference, the pointer computed before or after the checks), ptxas scheduled
// std.gemm's epilogues differently, 8 to 96 SASS instructions a kernel (sm_90a), unmeasured.
template <typename L, typename T, typename U>
__device__ __forceinline__ void copy_f2g(U* g, const T* regs, long long stride, long long rows, long long cols,
                                         long long row0, long long col0) {
  constexpr int RUN = L::RUN;
  const int t = threadIdx.x;
  const bool aligned = !RunsBuild::RAGGED_RUNS || runs_aligned<L>(g, stride, col0);
  const TileBounds in(rows, cols, row0, col0);
  U* tile = g + row0 * stride + col0;
#pragma unroll
  for (int r0 = 0; r0 < L::REGS; r0 += RUN) {
    const int lr = L::row(t, r0), lc = L::col(t, r0);
    U* p = tile + static_cast<long long>(lr) * stride + lc;
    if (!L::valid(t, r0) || !writes<L>(t, r0) || !in.row_in(lr)) continue;
    if (aligned && in.col_in(lc) && in.col_in(lc + RUN - 1)) {
      store_run<RUN, true, L::REGS>(p, regs + r0);
      continue;
    }
    if constexpr (RunsBuild::RAGGED_RUNS) {  // (else a run not whole lies outside the tensor)
#pragma unroll
      for (int e = 0; e < RUN; ++e)
        if (in.col_in(lc + e)) p[e] = cvt<U>(regs[r0 + e]);
    }
  }
}

// A tile of a vector (a 1-D tensor of `cols` elements, or a tensor read as one: an element-wise
// tile op's flat view), the tile at column `col0`, which the code generator proved never negative
// (a block index times the tile: codegen/copies.py `flat_origin`).  In the TL_WHOLE_RUNS build a
// run is whole or wholly outside the vector, so that a run is inside iff its first column is
// below `cols`: one 64-bit compare a run, where TileBounds' 32-bit clamps of the origin and its
// tests of both ends took 30 SASS instructions before the first load (std.elementwise's f16 abs at
// one run a thread, sm_90a: 78 instructions -> 49, its load issued 11 instructions after the block
// index is read, 38 before, as PyTorch's vectorized_elementwise_kernel's is).  The general build takes
// copy_g2f / copy_f2g / g2f_whole as they are.
template <typename L, typename T, typename U>
__device__ __forceinline__ void copy_g2f_flat(U* regs, const T* g, long long cols, long long col0) {
  if constexpr (RunsBuild::RAGGED_RUNS) {
    copy_g2f<L>(regs, g, cols, 1, cols, 0, col0);
  } else {
    using R = G2FVectors<L, T>;
    constexpr int RUN = L::RUN, NV = RUN / R::A::ELEMS;  // vectors per run
    const int t = threadIdx.x;
    R in;
#pragma unroll
    for (int k = 0; k < L::REGS / RUN; ++k) {  // every load before the first conversion, as copy_g2f
      const long long c = col0 + L::col(t, k * RUN);
      const bool whole = L::valid(t, k * RUN) && c < cols;
#pragma unroll
      for (int v = 0; v < NV; ++v)
        in.v[k * NV + v] = whole ? *reinterpret_cast<const typename R::V*>(g + c + v * R::A::ELEMS) : typename R::V{};
    }
    g2f_convert(regs, in);  // a type into itself as its bytes, as copy_g2f's whole runs
  }
}

template <typename L, typename T, typename U>
__device__ __forceinline__ void copy_f2g_flat(U* g, const T* regs, long long cols, long long col0) {
  if constexpr (RunsBuild::RAGGED_RUNS) {
    copy_f2g<L>(g, regs, cols, 1, cols, 0, col0);
  } else {
    constexpr int RUN = L::RUN;
    const int t = threadIdx.x;
#pragma unroll
    for (int r0 = 0; r0 < L::REGS; r0 += RUN) {
      const long long c = col0 + L::col(t, r0);
      if (L::valid(t, r0) && writes<L>(t, r0) && c < cols) store_run<RUN, true, L::REGS>(g + c, regs + r0);
    }
  }
}

// g2f_whole of a vector's tile at `col0` (never negative), as copy_g2f_flat tests its runs.
template <typename L, typename T>
__device__ __forceinline__ bool g2f_whole_flat(const T* g, long long cols, long long col0) {
  if constexpr (RunsBuild::RAGGED_RUNS) {
    return g2f_whole<L>(g, cols, 1, cols, 0, col0);
  } else {
    const int t = threadIdx.x;
    bool all = true;
#pragma unroll
    for (int k = 0; k < L::REGS / L::RUN; ++k) all = all && L::valid(t, k * L::RUN) && col0 + L::col(t, k * L::RUN) < cols;
    return all;
  }
}

// Shared tile (COLS columns, PAD/SWIZZLE as in copy.cuh) <-> fragment, element by element; with
// RUNS (the caller knows the tile unswizzled and its rows and base aligned to a run's widest
// vector: codegen/copies.py) a run at a time as vectors.  Element loads left nvcc and NVRTC to
// merge them, which they did differently: the pipelined plain layer_norm's row out of its ring
// was 4 LDS.128 a thread from nvcc and 8 LDS.64 from NVRTC 13.0 (156.8 us against 151.3 on the
// H200, session 12).
template <typename L, typename T, typename U, int ROWS, int COLS, int PAD, int SWIZZLE, bool RUNS = false>
__device__ __forceinline__ void copy_s2f(U* regs, const T* smem) {
  if constexpr (RUNS) {
    static_assert(SWIZZLE == 0, "runs of a swizzled tile are not contiguous");
    const int t = threadIdx.x;
#pragma unroll
    for (int r0 = 0; r0 < L::REGS; r0 += L::RUN) {
      if (!L::valid(t, r0)) continue;
      T run[L::RUN];
      load_run<L::RUN>(run, smem + smem_index<T, ROWS, COLS, PAD, SWIZZLE>(L::row(t, r0), L::col(t, r0)));
#pragma unroll
      for (int e = 0; e < L::RUN; ++e) {
        if constexpr (same_type<T, U>::value) regs[r0 + e] = run[e];
        else regs[r0 + e] = cvt<U>(run[e]);
      }
    }
  } else {
#pragma unroll
    for (int r = 0; r < L::REGS; ++r) {
      const int t = threadIdx.x;
      // a value of the fragment's own type as it is: ptxas keeps cvt's 16-bit round trip through
      // float (HADD2.F32, then F2FP) here, as in the pipelined plain layer_norm's copies of its
      // staged f16 weights (0.60 of copy with it, 0.80 without: H200, session 11)
      if (!L::valid(t, r)) continue;
      const T v = smem[smem_index<T, ROWS, COLS, PAD, SWIZZLE>(L::row(t, r), L::col(t, r))];
      if constexpr (same_type<T, U>::value) regs[r] = v;
      else regs[r] = cvt<U>(v);
    }
  }
}

// f32 into f16 or bf16 converts a run's pairs with one packed conversion (cvt.rn.f16x2.f32,
// rounding as cvt<U>): a single cvt.rn.f16.f32 reading a wgmma accumulator after a pipelined
// loop that kept one group in flight made ptxas serialize every wgmma of the loop (its C7514
// note; std.conv's conv2d, a wait after each HGMMA), the packed one does not.  The SASS is the
// same otherwise (ptxas paired the single conversions into F2FP.PACK_AB itself).
template <typename L, typename T, typename U, int ROWS, int COLS, int PAD, int SWIZZLE>
__device__ __forceinline__ void copy_f2s(U* smem, const T* regs) {
  const int t = threadIdx.x;
  if constexpr (same_type<T, float>::value && (same_type<U, half>::value || same_type<U, __nv_bfloat16>::value) &&
                L::RUN % 2 == 0 && L::REGS % 2 == 0) {
#pragma unroll
    for (int r = 0; r < L::REGS; r += 2) {
      U lo, hi;
      if constexpr (same_type<U, half>::value) {
        const half2 p = __floats2half2_rn(regs[r], regs[r + 1]);
        lo = p.x, hi = p.y;
      } else {
        const __nv_bfloat162 p = __floats2bfloat162_rn(regs[r], regs[r + 1]);
        lo = p.x, hi = p.y;
      }
      const int i = smem_index<U, ROWS, COLS, PAD, SWIZZLE>(L::row(t, r), L::col(t, r));
      // r and r + 1 are neighbours of one run (RUN even): an even column's pair is 4 aligned,
      // adjacent bytes in shared memory (a swizzle moves 16-byte pieces, an even row length
      // keeps the parity), one 32-bit store for the two (the probabilities of MLA decode:
      // STS.U16 twice before)
      if ((SWIZZLE != 0 || (COLS + PAD) % 2 == 0) && L::col(t, r) % 2 == 0 && L::valid(t, r) && L::valid(t, r + 1)) {
        U pair[2] = {lo, hi};
        *reinterpret_cast<unsigned*>(smem + i) = *reinterpret_cast<const unsigned*>(pair);
        continue;
      }
      if (L::valid(t, r)) smem[i] = lo;
      if (L::valid(t, r + 1)) smem[smem_index<U, ROWS, COLS, PAD, SWIZZLE>(L::row(t, r + 1), L::col(t, r + 1))] = hi;
    }
  } else if constexpr (same_type<T, U>::value && sizeof(U) == 2 && L::RUN % 2 == 0 && L::REGS % 2 == 0) {
    // a 16-bit fragment as it is (attention backward's dS, schedule/stage_operand.py): each even
    // column's pair one 32-bit store, as above (32 STS.U16 a thread and a conversion through
    // float each, ptxas's cvt round trip, before).  The thread index read anew here: the
    // addresses are then computed where stored, not held in registers across a loop (16 a
    // thread for a 128 x 64 tile over 256 threads put attention backward's dK/dV ring over the
    // registers a warpgroup has: ptxas's C7512)
    int u;
    asm volatile("mov.u32 %0, %%tid.x;\n" : "=r"(u));
#pragma unroll
    for (int r = 0; r < L::REGS; r += 2) {
      const int i = smem_index<U, ROWS, COLS, PAD, SWIZZLE>(L::row(u, r), L::col(u, r));
      if ((SWIZZLE != 0 || (COLS + PAD) % 2 == 0) && L::col(u, r) % 2 == 0 && L::valid(u, r) && L::valid(u, r + 1)) {
        *reinterpret_cast<unsigned*>(smem + i) = *reinterpret_cast<const unsigned*>(regs + r);
        continue;
      }
      if (L::valid(u, r)) smem[i] = regs[r];
      if (L::valid(u, r + 1)) smem[smem_index<U, ROWS, COLS, PAD, SWIZZLE>(L::row(u, r + 1), L::col(u, r + 1))] = regs[r + 1];
    }
  } else {
#pragma unroll
    for (int r = 0; r < L::REGS; ++r) {
      if (L::valid(t, r)) smem[smem_index<U, ROWS, COLS, PAD, SWIZZLE>(L::row(t, r), L::col(t, r))] = cvt<U>(regs[r]);
    }
  }
}

// Whether layout L is an mma accumulator (MmaAcc), whose 16-bit pairs are stmatrix's fragments.
template <typename L> struct MmaAccOf { static constexpr bool value = false; };
template <int M, int N, int WARPS_M, int WARPS_N, bool B, bool C>
struct MmaAccOf<MmaAcc<M, N, WARPS_M, WARPS_N, B, C>> { static constexpr bool value = true; };

// The shared element the lane of thread t addresses in the stmatrix of registers r0 .. r0 + 7 of
// an MmaAcc fragment (two 8-column pieces of one 16-row band, their rows l/4 and l/4 + 8): lane l
// gives matrix l / 8 (the band's rows 8 on when odd, its second piece from 2) its row l % 8, at
// the piece's first column, the position the lane 4 (l % 8) of the warp holds there.
template <typename L, typename U, int ROWS, int COLS, int PAD, int SWIZZLE>
__host__ __device__ __forceinline__ int stmatrix_row(int t, int r0) {
  const int lane = t % 32, j = lane / 8, owner = t - lane + 4 * (lane % 8);
  const int r = r0 + (j % 2) * 2 + (j / 2) * 4;
  return smem_index<U, ROWS, COLS, PAD, SWIZZLE>(L::row(owner, r), L::col(owner, r));
}

// copy_f2s of a 16-bit MmaAcc fragment by stmatrix (sm_90): four 8x8 matrices an instruction,
// each lane's register m the pair it holds of matrix m, one row address a lane; the same
// elements at the same places as copy_f2s's 32-bit stores, a quarter the instructions and one
// address a lane a group (codegen/copies.py STMATRIX: FlashAttention 3's dS store).  Rows of 8
// elements stay 16 contiguous, aligned bytes (the 128-byte swizzle moves 16-byte pieces).
template <typename L, typename U, int ROWS, int COLS, int PAD, int SWIZZLE>
__device__ __forceinline__ void copy_f2s_stmatrix(U* smem, const U* regs) {
  static_assert(sizeof(U) == 2 && MmaAccOf<L>::value && L::WN % 16 == 0 && L::REGS % 8 == 0,
                "stmatrix: a 16-bit mma accumulator of whole 16-column pieces a warp");
  static_assert(SWIZZLE != 0 || (COLS + PAD) % 8 == 0, "stmatrix: rows of 16-byte pieces");
  int u;  // the thread index read where stored, as copy_f2s does
  asm volatile("mov.u32 %0, %%tid.x;\n" : "=r"(u));
#pragma unroll
  for (int r0 = 0; r0 < L::REGS; r0 += 8) {
    const unsigned* w = reinterpret_cast<const unsigned*>(regs + r0);
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n"
                 ::"r"(smem_addr(smem + stmatrix_row<L, U, ROWS, COLS, PAD, SWIZZLE>(u, r0))), "r"(w[0]), "r"(w[1]),
                 "r"(w[2]), "r"(w[3])
                 : "memory");
  }
}

// A fragment <-> a dense shared tile (COLS columns, no padding or swizzle) in the fragment's
// layout L, run by run: each run of L::RUN consecutive columns moves as the widest vectors its
// bytes allow.  What an exchange between two layouts goes through (a parallel loop that reads a
// fragment in another layout, a copy between fragments of different layouts); the tile and
// the base pointer are aligned to a run, as the layouts' runs are.
template <typename L, typename T, typename U, int COLS>
__device__ __forceinline__ void exchange_f2s(U* smem, const T* regs) {
  const int t = threadIdx.x;
#pragma unroll
  for (int r0 = 0; r0 < L::REGS; r0 += L::RUN)
    if (L::valid(t, r0)) store_run<L::RUN>(smem + L::row(t, r0) * COLS + L::col(t, r0), regs + r0);
}

// Only column C of the fragment to SMEM (ROWS x COLS, unpadded), by the thread whose run holds
// it: the exchange of a loop that reads one column (a scan's last, the next tile's carry).
template <typename L, typename T, int COLS>
__device__ __forceinline__ void exchange_f2s_column(T* smem, const T* regs, int c) {
  const int t = threadIdx.x;
#pragma unroll
  for (int r0 = 0; r0 < L::REGS; r0 += L::RUN) {
    if (!L::valid(t, r0)) continue;
#pragma unroll
    for (int e = 0; e < L::RUN; ++e)  // (a register picked by a constant: never an array in local memory)
      if (L::col(t, r0 + e) == c) smem[L::row(t, r0) * COLS + c] = regs[r0 + e];
  }
}

template <typename L, typename T, typename U, int COLS>
__device__ __forceinline__ void exchange_s2f(U* regs, const T* smem) {
  using A = RunAccess<L::RUN, T>;
  using V = typename VectorOf<A::VBYTES>::type;
  const int t = threadIdx.x;
#pragma unroll
  for (int r0 = 0; r0 < L::REGS; r0 += L::RUN) {
    if (!L::valid(t, r0)) continue;
    const T* p = smem + L::row(t, r0) * COLS + L::col(t, r0);
#pragma unroll
    for (int i = 0; i < L::RUN; i += A::ELEMS) {
      union { V v; T e[A::ELEMS]; } u;
      u.v = *reinterpret_cast<const V*>(p + i);
#pragma unroll
      for (int e = 0; e < A::ELEMS; ++e) regs[r0 + i + e] = cvt<U>(u.e[e]);
    }
  }
}

}  // namespace tl
