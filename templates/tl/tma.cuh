// tl/tma.cuh (sm_90a): the tensor memory accelerator, mbarriers and register reallocation,
// the pieces of a warp-specialized pipeline.  A producer warpgroup fills the stages of a ring
// in shared memory (one elected thread issues TMA copies; when the host could not describe a
// tensor to the TMA, all 128 producer threads copy element by element instead) and a "full"
// mbarrier per stage says when a stage has landed; the consumer warpgroups compute on it and
// arrive on the stage's "empty" mbarrier when the producer may overwrite it.
namespace tl {

// A CUtensorMap (cuda.h), opaque to the kernel: 128 bytes the host encodes with
// cuTensorMapEncodeTiled and passes as a __grid_constant__ parameter.
struct alignas(128) TensorMap {
  unsigned long long opaque[16];
};

__device__ __forceinline__ void mbar_init(unsigned long long* bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(count) : "memory");
}
// Makes the initialized barriers visible to the async proxy (the TMA) and to other threads.
__device__ __forceinline__ void fence_barrier_init() { asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory"); }

__device__ __forceinline__ void mbar_arrive(unsigned long long* bar) {
  asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];\n" ::"r"(smem_addr(bar)) : "memory");
}
// `count` arrivals at once, made by one thread for several (a warpgroup's warps, once the
// store its issuing thread made has read a ring stage: StagedStore.in_stage).
__device__ __forceinline__ void mbar_arrive_count(unsigned long long* bar, unsigned count) {
  asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(count) : "memory");
}
// One arrival of this thread, made when its cp.async copies issued so far have landed (the
// barrier's count includes it: noinc); a producer that gathers rows through cp.async.
__device__ __forceinline__ void cp_async_mbar_arrive_noinc(unsigned long long* bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(smem_addr(bar)) : "memory");
}
// One arrival that also announces `bytes` of TMA transactions the phase must wait for.
__device__ __forceinline__ void mbar_arrive_expect_tx(unsigned long long* bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(bytes)
               : "memory");
}
// Waits until the phase of parity `parity` has completed.  A fresh barrier counts the phase
// before its first as complete with parity 1, which lets a producer start on empty stages.
__device__ __forceinline__ void mbar_wait(unsigned long long* bar, unsigned parity) {
  asm volatile(
      "{\n"
      ".reg .pred tl_done;\n"
      "TL_WAIT:\n"
      "mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 tl_done, [%0], %1;\n"
      "@!tl_done bra TL_WAIT;\n"
      "}\n" ::"r"(smem_addr(bar)),
      "r"(parity)
      : "memory");
}

__device__ __forceinline__ void prefetch_tensor_map(const TensorMap* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<unsigned long long>(map)) : "memory");
}

// One box of a tensor (coordinates innermost first, elements; outside the tensor the box
// reads as zeros) -> shared memory at `dst`, completing `bar`'s transactions by its bytes.
template <int RANK>
__device__ __forceinline__ void tma_load(void* dst, const TensorMap* map, unsigned long long* bar, const int (&c)[RANK]) {
  const unsigned long long m = reinterpret_cast<unsigned long long>(map);
  const unsigned d = smem_addr(dst), b = smem_addr(bar);
  if constexpr (RANK == 1) {
    asm volatile("cp.async.bulk.tensor.1d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3}], [%2];\n"
                 ::"r"(d), "l"(m), "r"(b), "r"(c[0]) : "memory");
  } else if constexpr (RANK == 2) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\n"
                 ::"r"(d), "l"(m), "r"(b), "r"(c[0]), "r"(c[1]) : "memory");
  } else if constexpr (RANK == 3) {
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], [%2];\n"
                 ::"r"(d), "l"(m), "r"(b), "r"(c[0]), "r"(c[1]), "r"(c[2]) : "memory");
  } else if constexpr (RANK == 4) {
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6}], [%2];\n"
                 ::"r"(d), "l"(m), "r"(b), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]) : "memory");
  } else {
    static_assert(RANK == 5, "the TMA takes tensors of rank 1 to 5");
    asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6, %7}], [%2];\n"
                 ::"r"(d), "l"(m), "r"(b), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(c[4]) : "memory");
  }
}

// A ROWS x COLS tile in the 128-byte swizzled layout of tl::smem_index is 128-byte column
// segments, each one TMA box of ROWS x SEG elements written with CU_TENSOR_MAP_SWIZZLE_128B
// (the same XOR of 16-byte chunks by row mod 8, given 1024-byte aligned segments).
template <typename T, int ROWS, int COLS, int RANK>
__device__ __forceinline__ void tma_load_tile(T* smem, const TensorMap* map, unsigned long long* bar, int col0, int row0,
                                              const int (&lead)[RANK > 2 ? RANK - 2 : 1]) {
  constexpr int SEG = 128 / static_cast<int>(sizeof(T));
  static_assert(COLS % SEG == 0, "a TMA tile is whole 128-byte segments");
#pragma unroll
  for (int s = 0; s < COLS / SEG; ++s) {
    int c[RANK];
    c[0] = col0 + s * SEG;
    if constexpr (RANK > 1) c[1] = row0;
#pragma unroll
    for (int i = 2; i < RANK; ++i) c[i] = lead[RANK - 1 - i];
    tma_load<RANK>(smem + s * ROWS * SEG, map, bar, c);
  }
}

// A ROWS x COLS im2col tile of an NHWC image (an implicit GEMM's A operand: a row a pixel, COLS
// channels of one kernel position) through a map of the TMA's im2col mode (cuTensorMapEncodeIm2col,
// its box ROWS pixels x one 128-byte column segment): the first pixel's window at (c, w, h, n),
// innermost first, the kernel position's offsets (ow, oh) added to every pixel's; the TMA walks
// the pixels across rows and images itself, and reads the padding and pixels past the last as
// zeros.  Each segment lands 128-byte swizzled, as tma_load_tile's.
template <typename T, int ROWS, int COLS>
__device__ __forceinline__ void tma_load_im2col(T* smem, const TensorMap* map, unsigned long long* bar, int c, int w,
                                                int h, int n, int ow, int oh) {
  constexpr int SEG = 128 / static_cast<int>(sizeof(T));
  static_assert(COLS % SEG == 0, "an im2col tile is whole 128-byte segments");
  const unsigned long long m = reinterpret_cast<unsigned long long>(map);
  const unsigned b = smem_addr(bar);
  const unsigned short dw = static_cast<unsigned short>(ow), dh = static_cast<unsigned short>(oh);
#pragma unroll
  for (int s = 0; s < COLS / SEG; ++s) {
    asm volatile(
        "cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6}], "
        "[%2], {%7, %8};\n" ::"r"(smem_addr(smem + s * ROWS * SEG)),
        "l"(m), "r"(b), "r"(c + s * SEG), "r"(w), "r"(h), "r"(n), "h"(dw), "h"(dh)
        : "memory");
  }
}

// Tile t of a persistent kernel's grid (tiles_x x tiles_y x any): z slowest; inside a z,
// groups of GROUP rows (y) with y fastest, so the blocks running at once cover a patch of
// GROUP rows and few columns, and share their operands' tiles in L2.  A bijection.  Every value
// is non-negative (t < the tiles, each count at least 1): divided in unsigned, without the sign
// fixups of an int division, and each remainder from its quotient (std.gemm's matmul on sm_90a,
// whose producer and consumer each place two tiles a step: 1,704 -> 1,600 SASS instructions,
// its loops over K unchanged).
template <int GROUP>
__host__ __device__ __forceinline__ void persistent_tile(int t, int tiles_x, int tiles_y, int& x, int& y, int& z) {
  const unsigned per_z = static_cast<unsigned>(tiles_x) * static_cast<unsigned>(tiles_y);
  const unsigned zu = static_cast<unsigned>(t) / per_z;
  const unsigned r = static_cast<unsigned>(t) - zu * per_z;
  const unsigned in_group = GROUP * static_cast<unsigned>(tiles_x);
  const unsigned group = r / in_group;
  const unsigned i = r - group * in_group;
  const unsigned first_y = group * GROUP;
  const unsigned left = static_cast<unsigned>(tiles_y) - first_y;
  const unsigned rows = left < GROUP ? left : GROUP;
  const unsigned q = i / rows;
  z = static_cast<int>(zu);
  y = static_cast<int>(first_y + (i - q * rows));
  x = static_cast<int>(q);
}

// Tile t of a persistent kernel whose tiles' work grows with x (a causal attention's query
// blocks): x taken from both ends, tiles_x - 1 - i / 2 at even i and i / 2 at odd (i = t % tiles_x),
// then y, then z from t / tiles_x; a block takes tiles 2u and 2u + 1, whose work sums to about
// the same for every u, so that a fixed walk leaves no block the longest tiles.  A bijection.
__host__ __device__ __forceinline__ void paired_tile(int t, int tiles_x, int tiles_y, int& x, int& y, int& z) {
  const unsigned q = static_cast<unsigned>(t) / static_cast<unsigned>(tiles_x);
  const unsigned i = static_cast<unsigned>(t) - q * static_cast<unsigned>(tiles_x);
  const unsigned zu = q / static_cast<unsigned>(tiles_y);
  x = static_cast<int>((i & 1u) ? i / 2u : static_cast<unsigned>(tiles_x) - 1u - i / 2u);
  y = static_cast<int>(q - zu * static_cast<unsigned>(tiles_y));
  z = static_cast<int>(zu);
}

// Stream-K (schedule/stream_k.py, whose `tail` and `walk` are this in Python): a block's
// segments (tile, k0, k1) of a persistent launch of `blocks` blocks over `tiles` tiles of
// `steps` K steps.  The tiles before the tail's R go whole, tiles block, block + blocks, ...;
// the tail's R * steps steps, counted on from the whole tiles', are split into `blocks` even
// runs, each cut at the tiles' edges.  Not `on` (a split-K launch of several parts): the tiles
// whole.  A run's first segment may end a tile it does not start (a contributor), its last
// may start one it does not end (the finisher, whose contributors are the next blocks).
// The walk counts in 32 bits, the tail's steps from its first tile's (a tail of more than
// INT_MAX steps is not streamed): the producer runs it in 40 or 48 registers (setmaxnreg,
// stream_k.registers), where a 64-bit division's call spilled (std.gemm's matmul_skinny and
// matmul_tn, ptxas -v sm_90a: 48-96 bytes); each tile's next() takes one 32-bit division.
__host__ __device__ __forceinline__ int stream_tail(int tiles, int steps, int blocks, bool alone, int slots, int min_steps) {
  if (tiles <= 0 || steps < min_steps || blocks > slots || tiles % blocks == 0 || (!alone && 2 * tiles <= blocks)) return 0;
  int r = tiles % blocks;
  if (tiles > blocks && 2 * r < blocks) r += blocks;
  if (static_cast<long long>(r) * steps > 0x7fffffffLL) return 0;
  const int n = r * steps;
  if (n < 2 * blocks) return 0;
  // the busiest block's steps, tiles whole, less its steps streamed: the whole tiles' waves
  // differ by one or two, times the steps, less its run of the tail's n
  const int waves = (tiles + blocks - 1) / blocks - (tiles - r) / blocks;
  const int least = (steps + 3) / 4 > 2 ? (steps + 3) / 4 : 2;
  return waves * steps - (n + blocks - 1) / blocks >= least ? r : 0;
}
struct StreamWalk {
  int steps, blocks, block, whole, next_whole;
  int pos, hi, tail;  // the run [pos, hi) of the tail's steps (counted from its first tile's), its length
  bool on;
  __host__ __device__ __forceinline__ StreamWalk(int tiles, int steps_, int blocks_, int block_, bool on_, bool alone, int slots,
                                        int min_steps)
      : steps(steps_), blocks(blocks_), block(block_) {
    const int r = on_ ? stream_tail(tiles, steps_, blocks_, alone, slots, min_steps) : 0;
    on = r > 0;
    whole = tiles - r;
    next_whole = block_;
    tail = r * steps_;
    const int q = tail / blocks_, rem = tail % blocks_;  // b * tail / blocks without the product
    pos = block_ * q + block_ * rem / blocks_;
    hi = (block_ + 1) * q + (block_ + 1) * rem / blocks_;
  }
  __host__ __device__ __forceinline__ bool next(int& t, int& k0, int& k1) {
    if (next_whole < whole) {
      t = next_whole;
      k0 = 0;
      k1 = steps;
      next_whole += blocks;
      return true;
    }
    if (pos >= hi) return false;
    const int i = pos / steps, start = i * steps, end = hi < start + steps ? hi : start + steps;
    t = whole + i;
    k0 = pos - start;
    k1 = end - start;
    pos = end;
    return true;
  }
  // the blocks after this one (a finisher of tile t) that run a segment of t
  __host__ __device__ __forceinline__ int contributors(int t) const {
    const long long end = static_cast<long long>(t - whole + 1) * steps;  // its end in the tail's steps
    return static_cast<int>((end * blocks - 1) / tail) - block;
  }
};

// Count t of a dynamic tile order (TileOrder.dynamic): x from its end down (a causal
// attention's longest query blocks first), then y, then z, so that the counts taken last are
// the shortest tiles and the blocks running at once share a row's K and V in L2.  A bijection.
__host__ __device__ __forceinline__ void heavy_tile(int t, int tiles_x, int tiles_y, int& x, int& y, int& z) {
  const unsigned q = static_cast<unsigned>(t) / static_cast<unsigned>(tiles_x);
  const unsigned i = static_cast<unsigned>(t) - q * static_cast<unsigned>(tiles_x);
  const unsigned zu = q / static_cast<unsigned>(tiles_y);
  x = static_cast<int>(static_cast<unsigned>(tiles_x) - 1u - i);
  y = static_cast<int>(q - zu * static_cast<unsigned>(tiles_y));
  z = static_cast<int>(zu);
}

// Clusters (thread block clusters of sm_90): this block's rank, a barrier over every thread
// of the cluster (threads that have exited do not hold it up), an arrival on the barrier at
// the same shared offset in every block of the cluster, and the multicast variant of
// tma_load_tile: with `share`, block `rank` loads rows [rank * PART, (rank + 1) * PART) of
// the tile into every block's shared memory, completing each block's own `bar`; without, it
// loads all the parts into its own (the same bytes arrive either way).
__device__ __forceinline__ unsigned cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
template <int CLUSTER>
__device__ __forceinline__ void mbar_arrive_cluster(unsigned long long* bar) {
#pragma unroll
  for (unsigned cta = 0; cta < CLUSTER; ++cta) {
    unsigned remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(smem_addr(bar)), "r"(cta));
    // No .release.cluster: that fences all of the thread's memory traffic at GPU scope (a
    // MEMBAR.GPU behind every store of the epilogue); a consumer's release only orders reads
    // of shared memory that its wgmma_wait has already completed.
    asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(remote) : "memory");
  }
}
template <int RANK>
__device__ __forceinline__ void tma_load_multicast(void* dst, const TensorMap* map, unsigned long long* bar,
                                                   const int (&c)[RANK], unsigned short mask) {
  const unsigned long long m = reinterpret_cast<unsigned long long>(map);
  const unsigned d = smem_addr(dst), b = smem_addr(bar);
  if constexpr (RANK == 2) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%3, %4}], [%2], %5;\n"
                 ::"r"(d), "l"(m), "r"(b), "r"(c[0]), "r"(c[1]), "h"(mask) : "memory");
  } else if constexpr (RANK == 3) {
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%3, %4, %5}], [%2], %6;\n"
                 ::"r"(d), "l"(m), "r"(b), "r"(c[0]), "r"(c[1]), "r"(c[2]), "h"(mask) : "memory");
  } else if constexpr (RANK == 4) {
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%3, %4, %5, %6}], [%2], %7;\n"
                 ::"r"(d), "l"(m), "r"(b), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "h"(mask) : "memory");
  } else {
    static_assert(RANK == 5, "multicast copies take tensors of rank 2 to 5");
    asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%3, %4, %5, %6, %7}], [%2], %8;\n"
                 ::"r"(d), "l"(m), "r"(b), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(c[4]), "h"(mask)
                 : "memory");
  }
}
template <typename T, int ROWS, int COLS, int RANK, int CLUSTER>
__device__ __forceinline__ void tma_load_tile_multicast(T* smem, const TensorMap* map, unsigned long long* bar, int col0,
                                                        int row0, const int (&lead)[RANK > 2 ? RANK - 2 : 1],
                                                        unsigned rank, bool share) {
  constexpr int SEG = 128 / static_cast<int>(sizeof(T));
  constexpr int PART = ROWS / CLUSTER;  // rows per block, a whole number of 8-row swizzle atoms
  static_assert(COLS % SEG == 0 && ROWS % (8 * CLUSTER) == 0, "a multicast tile splits into swizzle atoms");
#pragma unroll
  for (int s = 0; s < COLS / SEG; ++s) {
    int c[RANK];
    c[0] = col0 + s * SEG;
#pragma unroll
    for (int i = 2; i < RANK; ++i) c[i] = lead[RANK - 1 - i];
    if (share) {  // this block's part, for every block of the cluster
      c[1] = row0 + static_cast<int>(rank) * PART;
      tma_load_multicast<RANK>(smem + s * ROWS * SEG + rank * PART * SEG, map, bar, c,
                               static_cast<unsigned short>((1u << CLUSTER) - 1));
    } else {  // the blocks' tiles differ: every part, for this block only
#pragma unroll
      for (int p = 0; p < CLUSTER; ++p) {
        c[1] = row0 + p * PART;
        tma_load<RANK>(smem + s * ROWS * SEG + p * PART * SEG, map, bar, c);
      }
    }
  }
}

// A tile from a box whose rows run along another dimension of the tensor (the others 1: a
// weight [F, K, K, C]'s rows of one kernel position), `c0` its origin innermost first, the rows'
// coordinate c0[ROWC].  In a cluster of CLUSTER > 1, as tma_load_tile_multicast: each block
// loads ROWS / CLUSTER of the rows into every block of the cluster where `share`, else all of
// them into its own; a block alone (CLUSTER = 1) loads the whole box (tma_load_box).
template <typename T, int ROWS, int COLS, int RANK, int CLUSTER, int ROWC>
__device__ __forceinline__ void tma_load_box_multicast(T* smem, const TensorMap* map, unsigned long long* bar,
                                                       const int (&c0)[RANK], unsigned rank, bool share) {
  constexpr int SEG = 128 / static_cast<int>(sizeof(T));
  constexpr int PART = ROWS / CLUSTER;
  static_assert(COLS % SEG == 0, "a TMA tile is whole 128-byte segments");
  static_assert(CLUSTER == 1 || ROWS % (8 * CLUSTER) == 0, "a multicast tile splits into swizzle atoms");
#pragma unroll
  for (int s = 0; s < COLS / SEG; ++s) {
    int c[RANK];
#pragma unroll
    for (int i = 0; i < RANK; ++i) c[i] = c0[i];
    c[0] += s * SEG;
    if (CLUSTER > 1 && share) {
      c[ROWC] = c0[ROWC] + static_cast<int>(rank) * PART;
      tma_load_multicast<RANK>(smem + s * ROWS * SEG + rank * PART * SEG, map, bar, c,
                               static_cast<unsigned short>((1u << CLUSTER) - 1));
    } else if constexpr (CLUSTER == 1) {
      tma_load<RANK>(smem + s * ROWS * SEG, map, bar, c);
    } else {
#pragma unroll
      for (int p = 0; p < CLUSTER; ++p) {
        c[ROWC] = c0[ROWC] + p * PART;
        tma_load<RANK>(smem + s * ROWS * SEG + p * PART * SEG, map, bar, c);
      }
    }
  }
}

template <typename T, int ROWS, int COLS, int RANK>
__device__ __forceinline__ void tma_load_box(T* smem, const TensorMap* map, unsigned long long* bar, const int (&c0)[RANK]) {
  tma_load_box_multicast<T, ROWS, COLS, RANK, 1, 1>(smem, map, bar, c0, 0u, false);
}

// The tile of block `rank` of a cluster in a persistent kernel: the cluster takes tiles
// pair * CLUSTER .. pair * CLUSTER + CLUSTER - 1 of persistent_tile's order; a block past the
// last tile gets y = tiles_y (its copies read zeros; the kernel skips its epilogue).  True
// when all the cluster's tiles have the same x and z: they then need the same tile of every
// operand that does not depend on y, which the cluster multicasts.
template <int GROUP, int CLUSTER>
__host__ __device__ __forceinline__ bool cluster_tile(int pair, int tiles_x, int tiles_y, int tiles, unsigned rank, int& x,
                                             int& y, int& z) {
  int x0, y0, z0;
  persistent_tile<GROUP>(pair * CLUSTER, tiles_x, tiles_y, x0, y0, z0);
  x = x0, y = y0, z = z0;
  bool share = true;
#pragma unroll
  for (int r = 1; r < CLUSTER; ++r) {
    int xr = x0, yr = tiles_y, zr = z0;
    if (pair * CLUSTER + r < tiles) persistent_tile<GROUP>(pair * CLUSTER + r, tiles_x, tiles_y, xr, yr, zr);
    share = share && xr == x0 && zr == z0;
    if (static_cast<unsigned>(r) == rank) x = xr, y = yr, z = zr;
  }
  return share;
}

// Reads its arguments: scalars that only one role of a specialized kernel needs.
template <typename... T>
__device__ __forceinline__ void unused(const T&...) {}

template <int N>
__device__ __forceinline__ void setmaxnreg_inc() { asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N)); }
template <int N>
__device__ __forceinline__ void setmaxnreg_dec() { asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N)); }

}  // namespace tl

#ifndef __CUDACC_RTC__
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cstring>
namespace tl {
// The host side, for the C launchers: encode a row-major tensor's map (dims innermost first,
// strides in bytes for dims 1..RANK-1) with the driver's cuTensorMapEncodeTiled, found through
// the runtime so that programs need not link libcuda.  False when the driver refuses it (an
// unaligned base or row pitch): the kernel then copies without the TMA.  `swizzle` false: the
// box lands unswizzled (a 1-D buffer's run of elements).
inline bool encode_tensor_map(TensorMap* map, int dtype, int rank, const void* base, const cuuint64_t* dims,
                              const cuuint64_t* strides, const cuuint32_t* box, bool swizzle = true) {
  static PFN_cuTensorMapEncodeTiled_v12000 encode = nullptr;
  if (encode == nullptr) {
    cudaDriverEntryPointQueryResult found;
    void* fn = nullptr;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found) != cudaSuccess ||
        found != cudaDriverEntryPointSuccess)
      return false;
    encode = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  }
  const cuuint32_t ones[5] = {1, 1, 1, 1, 1};
  CUtensorMap out;
  const CUresult r = encode(&out, static_cast<CUtensorMapDataType>(dtype), static_cast<cuuint32_t>(rank), const_cast<void*>(base),
                            dims, strides, box, ones, CU_TENSOR_MAP_INTERLEAVE_NONE,
                            swizzle ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE,
                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) return false;
  static_assert(sizeof(CUtensorMap) == sizeof(TensorMap), "a tensor map is 128 bytes");
  memcpy(map, &out, sizeof(TensorMap));
  return true;
}
}  // namespace tl
#endif
