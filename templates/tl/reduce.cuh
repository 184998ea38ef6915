// tl/reduce.cuh: the combining operators of reductions, their identities, warp all-reduces
// over a set of lane bits, atomics (float max/min through compare-and-swap), and the steps of
// reducing a tile along one dimension (tlc/codegen/reductions.py chooses which steps run).
namespace tl {

enum class Op { sum, max, min, absmax };

// Reductions accumulate in float (double for f64), int or (u32) unsigned; these are their
// starting values.
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

// u32 accumulates unsigned: in an int, max and min of values past 2^31 - 1 saw them negative.
template <Op OP> __device__ __forceinline__ unsigned identity(unsigned) {
  if constexpr (OP == Op::min) return 0xffffffffu;
  else return 0u;
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

template <Op OP>
__device__ __forceinline__ unsigned combine(unsigned a, unsigned b) {
  if constexpr (OP == Op::sum) return a + b;
  else if constexpr (OP == Op::max || OP == Op::absmax) return a > b ? a : b;
  else return a < b ? a : b;
}

// absmax's |x|: a float's as fabsf, which the max folds into its operand (FMNMX R, |x|), where
// `x < 0 ? -x : x` took a compare and a select an element (and kept -0.0 negative); NaN stays
// NaN, which fmaxf then leaves out, as before.
template <Op OP, typename T>
__device__ __forceinline__ T prepare(T x) {
  if constexpr (OP == Op::absmax && same_type<T, float>::value) return fabsf(x);
  else if constexpr (OP == Op::absmax && same_type<T, double>::value) return fabs(x);
  else if constexpr (OP == Op::absmax) return x < T(0) ? -x : x;
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

// atomic_add(..., order=): one thread of the block waits until the counter reads at least n
// (an acquire load, spinning), the block's threads meeting after it; after the block's updates
// and their meeting, one thread counts the block's turn done (a release: the updates its
// block's threads made before the barrier are seen by whoever acquires the count).  CUTLASS's
// GenericBarrier wait_eq / arrive_inc, with >= so that the block counts in any order of parts.
__device__ __forceinline__ void turn_wait(const int* p, int n) {
  int v;
  do {
    asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  } while (v < n);
}
// Two f32 adds at p and p + 1 (a pair of an mma accumulator's registers, codegen/atomic_pairs.py):
// one 8-byte vector red on sm_90 where both lie inside and p is 8-byte aligned, else one by one.
__device__ __forceinline__ void red_add_pair(float* p, float a, float b, bool in0, bool in1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (in0 && in1 && (reinterpret_cast<unsigned long long>(p) & 7) == 0) {
    asm volatile("red.global.add.v2.f32 [%0], {%1, %2};" ::"l"(p), "f"(a), "f"(b) : "memory");
    return;
  }
#endif
  if (in0) atomicAdd(p, a);
  if (in1) atomicAdd(p + 1, b);
}
// Under a warpgroup's wgmmas (codegen/turns.py) without a branch, which would make ptxas wait for
// them (its C7517): the count loaded early where `on` (0 elsewhere), spun on later only if short;
// the last iteration's count released where `on`, by predicated instructions.
__device__ __forceinline__ int turn_load(const int* p, bool on) {
  int v;
  asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %2, 0;\n\tmov.b32 %0, 0;\n\t@p ld.acquire.gpu.global.b32 %0, [%1];\n\t}"
               : "=r"(v) : "l"(p), "r"(static_cast<int>(on)) : "memory");
  return v;
}
__device__ __forceinline__ void turn_wait_from(const int* p, int n, int seen) {
  while (seen < n) seen = turn_load(p, true);
}
__device__ __forceinline__ void turn_done_if(int* p, bool on) {
  asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %1, 0;\n\t@p fence.acq_rel.gpu;\n\t@p red.relaxed.gpu.global.add.s32 [%0], 1;\n\t}"
               ::"l"(p), "r"(static_cast<int>(on)) : "memory");
}
__device__ __forceinline__ void turn_done(int* p) {
  asm volatile("fence.acq_rel.gpu;\n\tred.relaxed.gpu.global.add.s32 [%0], 1;" ::"l"(p) : "memory");
}

// atomicAdd(p, v) of every active lane, the lanes of the warp that update one address added
// once: they elect their lowest lane (__match_any_sync of the address), which adds v times their
// count (schedule/atomic_groups.py: a shared histogram's bins chosen by data, std.moe's
// expert_histogram, whose skewed ids put up to a fifth of a warp's lanes on one address, and
// the hardware serializes the lanes of one instruction at one address).  v must be the same in
// every lane (the pass takes constants), and p in shared memory (matched by its 32-bit shared
// address: MATCH.ANY.U32, where the generic pointer's is U64).
template <typename T>
__device__ __forceinline__ void atomic_add_grouped(T* p, T v) {
  const unsigned active = __activemask();
  const unsigned same = __match_any_sync(active, static_cast<unsigned>(__cvta_generic_to_shared(p)));
  if ((threadIdx.x & 31) == __ffs(same) - 1) atomicAdd(p, v * static_cast<T>(__popc(same)));
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
// f64: atomicAdd of a double (sm_60 on), max and min by compare-and-swap on its 64 bits.
template <Op OP>
__device__ __forceinline__ void atomic_combine(double* p, double v) {
  if constexpr (OP == Op::sum) {
    atomicAdd(p, v);
  } else {
    unsigned long long* ip = reinterpret_cast<unsigned long long*>(p);
    unsigned long long old = *ip;
    while (OP == Op::min ? __longlong_as_double(old) > v : __longlong_as_double(old) < v) {
      const unsigned long long assumed = old;
      old = atomicCAS(ip, assumed, static_cast<unsigned long long>(__double_as_longlong(v)));
      if (old == assumed) break;
    }
  }
}
template <Op OP>
__device__ __forceinline__ void atomic_combine(int* p, int v) {
  if constexpr (OP == Op::sum) atomicAdd(p, v);
  else if constexpr (OP == Op::max || OP == Op::absmax) atomicMax(p, v);
  else atomicMin(p, v);
}
template <Op OP>
__device__ __forceinline__ void atomic_combine(unsigned* p, unsigned v) {
  if constexpr (OP == Op::sum) atomicAdd(p, v);
  else if constexpr (OP == Op::max || OP == Op::absmax) atomicMax(p, v);
  else atomicMin(p, v);
}

// ---- reducing a tile along one dimension --------------------------------------------------
// A fragment in layout L reduces into the slots of K = Kept<L, KEEP> (its row or column
// statistic): each thread combines its own registers per slot, then the lanes that differ in
// the bits of MASK (which hold the same kept index in each slot).  When every holder of a kept
// index is in one such group, `part` is the result in every replica; otherwise the partials
// meet in a scratch array in shared memory, PARTS rows of NKEPT values, read by scratch_value.
// A max or min (exact in any order) over 16 or more registers a slot combines them in 4 chains,
// each a quarter of the registers, then the chains: a 64-register attention score tile's row
// max (2 slots) is 8 + 2 dependent FMNMX deep, not 32, before its exponentials can start.  A sum
// keeps its order (the registers' order, as the interpreter and the other targets add).
template <Op OP, typename L, typename K, unsigned MASK, typename Acc, typename T>
__device__ __forceinline__ void reduce_slots(Acc* part, const T* regs) {
  const int t = threadIdx.x;
  constexpr int CHAINS = OP != Op::sum && L::REGS >= 16 * K::REGS ? 4 : 1;
  if constexpr (CHAINS == 1) {
#pragma unroll
    for (int s = 0; s < K::REGS; ++s) part[s] = identity<OP>(Acc());
#pragma unroll
    for (int r = 0; r < L::REGS; ++r)
      if (L::valid(t, r)) part[K::slot(r)] = combine<OP>(part[K::slot(r)], prepare<OP>(cvt<Acc>(regs[r])));
  } else {
    // each chain starts from its first register (where every register is valid the flags fold
    // away after unrolling: no combine with the identity, as the single chain's first one)
    Acc chain[CHAINS][K::REGS];
    bool seen[CHAINS][K::REGS];
#pragma unroll
    for (int c = 0; c < CHAINS; ++c)
#pragma unroll
      for (int s = 0; s < K::REGS; ++s) chain[c][s] = identity<OP>(Acc()), seen[c][s] = false;
#pragma unroll
    for (int r = 0; r < L::REGS; ++r)
      if (L::valid(t, r)) {
        const int c = r * CHAINS / L::REGS, s = K::slot(r);
        const Acc x = prepare<OP>(cvt<Acc>(regs[r]));
        chain[c][s] = seen[c][s] ? combine<OP>(chain[c][s], x) : x;
        seen[c][s] = true;
      }
#pragma unroll
    for (int s = 0; s < K::REGS; ++s)
      part[s] = combine<OP>(combine<OP>(chain[0][s], chain[1][s]), combine<OP>(chain[2][s], chain[3][s]));
  }
  if constexpr (MASK != 0) {
#pragma unroll
    for (int s = 0; s < K::REGS; ++s) part[s] = warp_allreduce<OP, MASK>(part[s]);
  }
}

// The result is in `part`: the destination, in layout K, takes it (or combines with it).
template <Op OP, bool CLEAR, typename K, typename Acc, typename U>
__device__ __forceinline__ void reduce_assign(U* dst, const Acc* part) {
#pragma unroll
  for (int s = 0; s < K::REGS; ++s) dst[s] = CLEAR ? cvt<U>(part[s]) : cvt<U>(combine<OP>(cvt<Acc>(dst[s]), part[s]));
}

// The barrier a reduction's partials meet at: the block's (BAR 0), or named barrier BAR over
// the THREADS that compute (a warp-specialized kernel's consumers: its producer warpgroup,
// still copying, never reaches theirs).
template <int BAR, int THREADS>
__device__ __forceinline__ void reduce_barrier() {
  if constexpr (BAR == 0) __syncthreads();
  else asm volatile("bar.sync %0, %1;\n" ::"n"(BAR), "n"(THREADS) : "memory");
}

// Whole warps hold each kept index (MASK = 31): lane 0 of each warp writes its partials to the
// warp's row of scratch (WARPS x NKEPT).  INIT fills the rows first where some warp holds
// only some kept indices.
template <Op OP, typename K, int THREADS, int NKEPT, bool INIT, int BAR = 0, typename Acc>
__device__ __forceinline__ void reduce_warps_to_scratch(Acc* scratch, const Acc* part) {
  const int t = threadIdx.x;
  if constexpr (INIT) {
    for (int i = t; i < (THREADS / 32) * NKEPT; i += THREADS) scratch[i] = identity<OP>(Acc());
    reduce_barrier<BAR, THREADS>();
  }
  if ((t & 31) == 0) {
#pragma unroll
    for (int s = 0; s < K::REGS; ++s)
      if (K::valid(t, s)) scratch[(t / 32) * NKEPT + K::col(t, s)] = part[s];
  }
  reduce_barrier<BAR, THREADS>();
}

// The threads in PARTS equal blocks, each holding every kept index in one group of lanes and
// one slot (the warpgroups side by side of a column-split wgmma accumulator): the first lane of
// each group writes its block's row of scratch (PARTS x NKEPT), no initialization, no atomics.
template <typename K, int THREADS, int NKEPT, int PARTS, unsigned MASK, int BAR = 0, typename Acc>
__device__ __forceinline__ void reduce_parts_to_scratch(Acc* scratch, const Acc* part) {
  const int t = threadIdx.x;
  if ((t & MASK) == 0) {
#pragma unroll
    for (int s = 0; s < K::REGS; ++s)
      if (K::valid(t, s)) scratch[(t / (THREADS / PARTS)) * NKEPT + K::col(t, s)] = part[s];
  }
  reduce_barrier<BAR, THREADS>();
}

// Any other grouping: one scratch row of NKEPT values, combined into by atomics from the first
// lane of each group of lanes (or from every register, when MASK = 0 and slots repeat).
template <Op OP, typename K, int THREADS, int NKEPT, unsigned MASK, int BAR = 0, typename Acc>
__device__ __forceinline__ void reduce_atomic_to_scratch(Acc* scratch, const Acc* part) {
  const int t = threadIdx.x;
  for (int i = t; i < NKEPT; i += THREADS) scratch[i] = identity<OP>(Acc());
  reduce_barrier<BAR, THREADS>();
  if ((t & MASK) == 0) {
#pragma unroll
    for (int s = 0; s < K::REGS; ++s)
      if (K::valid(t, s)) atomic_combine<OP>(&scratch[K::col(t, s)], part[s]);
  }
  reduce_barrier<BAR, THREADS>();
}

// A shared ROWS x COLS tile reduced along DIM: thread t reduces kept indices t, t + THREADS, ...
// into one scratch row.
template <Op OP, typename T, int ROWS, int COLS, int PAD, int SWIZZLE, int DIM, int THREADS, typename Acc>
__device__ __forceinline__ void reduce_shared_to_scratch(Acc* scratch, const T* smem) {
  constexpr int NKEPT = DIM == 1 ? ROWS : COLS, LENGTH = DIM == 1 ? COLS : ROWS;
  for (int i = threadIdx.x; i < NKEPT; i += THREADS) {
    Acc v = identity<OP>(Acc());
    for (int j = 0; j < LENGTH; ++j) {
      const int r = DIM == 1 ? i : j, c = DIM == 1 ? j : i;
      v = combine<OP>(v, prepare<OP>(cvt<Acc>(smem[smem_index<T, ROWS, COLS, PAD, SWIZZLE>(r, c)])));
    }
    scratch[i] = v;
  }
  __syncthreads();
}

// Element k of the reduced vector: its PARTS partials in scratch combined.
template <Op OP, int PARTS, int NKEPT, typename Acc>
__device__ __forceinline__ Acc scratch_value(const Acc* scratch, int k) {
  Acc v = scratch[k];
#pragma unroll
  for (int p = 1; p < PARTS; ++p) v = combine<OP>(v, scratch[p * NKEPT + k]);
  return v;
}

// The reduced vector in scratch -> a destination: a fragment in layout D, a 1-D shared buffer,
// or a per-thread (local) array.  Reductions alternate between two scratch arrays
// (codegen/reductions.py), so the next one writes the other array and only a shared
// destination ends with a barrier (for its readers).
template <Op OP, bool CLEAR, typename D, int PARTS, int NKEPT, typename Acc, typename U>
__device__ __forceinline__ void reduce_finish_fragment(U* dst, const Acc* scratch) {
  const int t = threadIdx.x;
#pragma unroll
  for (int r = 0; r < D::REGS; ++r) {
    if (!D::valid(t, r)) continue;
    const Acc v = scratch_value<OP, PARTS, NKEPT>(scratch, D::col(t, r));
    dst[r] = CLEAR ? cvt<U>(v) : cvt<U>(combine<OP>(cvt<Acc>(dst[r]), v));
  }
}

template <Op OP, bool CLEAR, int PARTS, int NKEPT, int THREADS, int PAD, int SWIZZLE, typename Acc, typename U>
__device__ __forceinline__ void reduce_finish_shared(U* dst, const Acc* scratch) {
  for (int i = threadIdx.x; i < NKEPT; i += THREADS) {
    const Acc v = scratch_value<OP, PARTS, NKEPT>(scratch, i);
    U& d = dst[smem_index<U, 1, NKEPT, PAD, SWIZZLE>(0, i)];
    d = CLEAR ? cvt<U>(v) : cvt<U>(combine<OP>(cvt<Acc>(d), v));
  }
  __syncthreads();
}

template <Op OP, bool CLEAR, int PARTS, int NKEPT, typename Acc, typename U>
__device__ __forceinline__ void reduce_finish_local(U* dst, const Acc* scratch) {
  for (int i = 0; i < NKEPT; ++i) {
    const Acc v = scratch_value<OP, PARTS, NKEPT>(scratch, i);
    dst[i] = CLEAR ? cvt<U>(v) : cvt<U>(combine<OP>(cvt<Acc>(dst[i]), v));
  }
}

}  // namespace tl
