// tl/tma_store.cuh (sm_90a): a tile's epilogue through shared memory.  Each consumer warpgroup
// converts its rows of the accumulator into a staging buffer laid out as the TMA's 128-byte
// swizzle expects, and one of its threads stores them with cp.async.bulk.tensor.  The store
// runs while the warpgroup goes on to the next tile's math; the buffer is written again only
// once the store has read it.  Storing from registers instead kept the tensor cores idle
// for the whole epilogue: thousands of narrow scattered stores per tile.
namespace tl {

// The staging buffer of a ROWS x COLS tile of U is smem_index's 128-byte swizzled layout:
// 128-byte column segments (SEG elements), each ROWS rows of 128 bytes, the 16-byte chunk c of
// row r at chunk c ^ (r % 8), every segment 1024-byte aligned (CU_TENSOR_MAP_SWIZZLE_128B).  A run of a wgmma accumulator row
// (2 elements, 4 or 8 bytes) never straddles a chunk, and the 8 rows one store instruction of
// a warp writes land on 8 different chunks: no bank conflicts.
template <typename L, typename T, typename U, int ROWS, int COLS>
__device__ __forceinline__ void copy_f2s_staged(U* stage, const T* regs) {
  constexpr int SEG = 128 / static_cast<int>(sizeof(U));
  static_assert(COLS % SEG == 0, "the staged tile is whole 128-byte segments");
  constexpr int RUN = L::RUN;
  static_assert((RUN * sizeof(U)) <= 16 && 16 % (RUN * sizeof(U)) == 0, "a run stays inside a 16-byte chunk");
  unsigned char* base = reinterpret_cast<unsigned char*>(stage);
  const int t = threadIdx.x;
#pragma unroll
  for (int r0 = 0; r0 < L::REGS; r0 += RUN) {
    const int row = L::row(t, r0), col = L::col(t, r0);
    const int byte = (col % SEG) * static_cast<int>(sizeof(U));
    const int offset = (col / SEG) * ROWS * 128 + swizzle128(row * 128 + byte);  // smem_index's layout, in bytes
    store_run<RUN>(reinterpret_cast<U*>(base + offset), regs + r0);
  }
}

// A barrier over the `count` threads that name barrier `id` (1..15; 0 is __syncthreads'):
// a warpgroup synchronizes its own threads without waiting for the others.
__device__ __forceinline__ void bar_sync_named(int id, int count) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}
// This thread's arrival on barrier `id` of `count` threads, without waiting for the others
// (the warpgroups' turns of ping-pong: one arrives on the other's barrier, which syncs on it).
__device__ __forceinline__ void bar_arrive_named(int id, int count) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}

// One box of a staged tile out to the tensor at coordinates c (innermost first): stored, or
// with ADD added into the tensor's elements (cp.reduce.async.bulk.tensor .add, the element type
// the map's: f32 adds are the L2's, atomic element by element), in the open bulk group.
template <int RANK, bool ADD>
__device__ __forceinline__ void bulk_tensor_out(unsigned long long m, unsigned src, const int (&c)[5]) {
  if constexpr (ADD) {
    if constexpr (RANK == 2) {
      asm volatile("cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group [%0, {%2, %3}], [%1];\n"
                   ::"l"(m), "r"(src), "r"(c[0]), "r"(c[1]) : "memory");
    } else if constexpr (RANK == 3) {
      asm volatile("cp.reduce.async.bulk.tensor.3d.global.shared::cta.add.tile.bulk_group [%0, {%2, %3, %4}], [%1];\n"
                   ::"l"(m), "r"(src), "r"(c[0]), "r"(c[1]), "r"(c[2]) : "memory");
    } else if constexpr (RANK == 4) {
      asm volatile("cp.reduce.async.bulk.tensor.4d.global.shared::cta.add.tile.bulk_group [%0, {%2, %3, %4, %5}], [%1];\n"
                   ::"l"(m), "r"(src), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]) : "memory");
    } else {
      static_assert(RANK == 5, "the TMA takes tensors of rank 1 to 5");
      asm volatile("cp.reduce.async.bulk.tensor.5d.global.shared::cta.add.tile.bulk_group [%0, {%2, %3, %4, %5, %6}], [%1];\n"
                   ::"l"(m), "r"(src), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(c[4]) : "memory");
    }
  } else if constexpr (RANK == 2) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n"
                 ::"l"(m), "r"(src), "r"(c[0]), "r"(c[1]) : "memory");
  } else if constexpr (RANK == 3) {
    asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];\n"
                 ::"l"(m), "r"(src), "r"(c[0]), "r"(c[1]), "r"(c[2]) : "memory");
  } else if constexpr (RANK == 4) {
    asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [%0, {%2, %3, %4, %5}], [%1];\n"
                 ::"l"(m), "r"(src), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]) : "memory");
  } else {
    static_assert(RANK == 5, "the TMA takes tensors of rank 1 to 5");
    asm volatile("cp.async.bulk.tensor.5d.global.shared::cta.bulk_group [%0, {%2, %3, %4, %5, %6}], [%1];\n"
                 ::"l"(m), "r"(src), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(c[4]) : "memory");
  }
}

// Rows [row0, row0 + ROWS) of a staged tile (the buffer of copy_f2s_staged holding TILE_ROWS
// rows, `first` its first row to store) -> the tensor at (col0, row0, lead...), one TMA box
// of ROWS x SEG per segment; parts outside the tensor are not written.  With ADD the tile is
// added into the tensor instead (a tile's atomic_add, ir.BulkReduce).  One bulk group.
template <typename U, int ROWS, int COLS, int TILE_ROWS, int RANK, bool ADD = false>
__device__ __forceinline__ void tma_store_tile(const TensorMap* map, const U* stage, int first, int col0, int row0,
                                               const int (&lead)[RANK > 2 ? RANK - 2 : 1]) {
  constexpr int SEG = 128 / static_cast<int>(sizeof(U));
  const unsigned long long m = reinterpret_cast<unsigned long long>(map);
#pragma unroll
  for (int s = 0; s < COLS / SEG; ++s) {
    int c[5] = {col0 + s * SEG, row0, 0, 0, 0};
#pragma unroll
    for (int i = 2; i < RANK; ++i) c[i] = lead[RANK - 1 - i];
    bulk_tensor_out<RANK, ADD>(m, smem_addr(stage + s * TILE_ROWS * SEG + first * SEG), c);
  }
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}

// The issuing thread's stores have read their shared memory (the buffer may be written again).
__device__ __forceinline__ void tma_store_wait_read() { asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory"); }
// ... but the last N bulk groups (a staging buffer of two: the other one's add may still read).
template <int N>
__device__ __forceinline__ void bulk_wait_read() { asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory"); }
// ... and have completed (before the block exits).
__device__ __forceinline__ void tma_store_wait() { asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory"); }
// Where `on`: this thread's bulk adds (ir.BulkReduce) have completed, then its turn is counted
// (turn_done_if's release); predicated, not branched, as turn_done_if (under the wgmmas).
__device__ __forceinline__ void bulk_turn_done_if(int* p, bool on) {
  asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %1, 0;\n\t@p cp.async.bulk.wait_group 0;\n\t@p fence.acq_rel.gpu;\n"
               "\t@p red.relaxed.gpu.global.add.s32 [%0], 1;\n\t}" ::"l"(p), "r"(static_cast<int>(on)) : "memory");
}

}  // namespace tl
