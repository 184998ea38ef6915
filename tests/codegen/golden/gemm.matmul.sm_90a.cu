#endif  // TL_PRIMITIVES

using tl_matmul_layout_0 = tl::MmaAcc<128, 256, 8, 1>;
// wgmma.mma_async.m64n256k16 for f16 x f16 operands, f32 accumulation, B N-major.
struct tl_matmul_wgmma_n256_f16_nmajor {
  static constexpr int N = 256;
  static constexpr int REGS = 128;
  static constexpr int K = 16;
  using Acc = float;
  __device__ static __forceinline__ void run(Acc* d, unsigned long long a, unsigned long long b) {
    asm volatile(
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "
        "%128, %129, 1, 1, 1, 0, 1;\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), 
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), 
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), 
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), 
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), 
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), 
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), 
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), 
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), 
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), 
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), 
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), 
          "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), 
          "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), 
          "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), 
          "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
          
        : "l"(a), "l"(b)
        : "memory");
  }
};
// split-K's partial tiles (132 of 128 x 256 f32) and each tile's count of parts done
__device__ float4 tl_sk_slots_matmul[1081344];
__device__ int tl_sk_counts_matmul[132];

extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(384, 1) matmul(const half* __restrict__ A, const half* __restrict__ B, half* __restrict__ C, int M, int K, int N, const __grid_constant__ tl::TensorMap tl_map0, const __grid_constant__ tl::TensorMap tl_map1, const __grid_constant__ tl::TensorMap tl_map2, int tl_tma_flags) {
  extern __shared__ __align__(1024) unsigned char tl_smem[];
#ifdef TL_TMA_FLAGS
  constexpr int tl_tma = TL_TMA_FLAGS;  // this build's flags: the paths they turn off are compiled out
#else
  const int tl_tma = tl_tma_flags;  // bit 0: the copies' maps encoded, bit 1: the store's
#endif
#ifdef __CUDACC_RTC__
  __builtin_assume(M >= 0); __builtin_assume(K >= 0); __builtin_assume(N >= 0);  // sizes of arrays
#endif
  const int bx = blockIdx.x;
  (void)bx;
  const int by = blockIdx.y;
  (void)by;
  const int kpart = blockIdx.z;
  (void)kpart;
  if (N < 1 || M < 1) return;  // no block runs with one 0
  half* As = reinterpret_cast<half*>(tl_smem + 98304);
  half* Bs = reinterpret_cast<half*>(tl_smem + 0);
  float acc[tl_matmul_layout_0::REGS];  // fragment [128, 256]: mma_acc(warps=8x1, warp_tile=16x256)
  // 20: for k in pipelined(cdiv(K, BK), stages=stages):
#line 20 "examples/gemm.tl"
  {  // persistent, warp-specialized over 3 stages: threads 256..383 produce (TMA), 2 consumer warpgroups compute
    unsigned long long* tl_full = reinterpret_cast<unsigned long long*>(tl_smem + 147456);
    unsigned long long* tl_empty = tl_full + 3;
    const int tl_tiles_x = (static_cast<int>(static_cast<unsigned int>((N - 1)) / static_cast<unsigned int>(256)) + 1), tl_tiles_y = (static_cast<int>(static_cast<unsigned int>((M - 1)) / static_cast<unsigned int>(128)) + 1), tl_tiles_z = tl::imax<int>(1, (tl::floordiv<int>(((tl::floordiv<int>((K - 1), 64) + 1) - 1), tl::imax<int>(1, (tl::floordiv<int>(((tl::floordiv<int>((K - 1), 64) + 1) - 1), tl::imax<int>(1, tl::imin<int>(9, tl::imin<int>(tl::floordiv<int>(132, tl::imax<int>(((static_cast<int>(static_cast<unsigned int>((N - 1)) / static_cast<unsigned int>(256)) + 1) * (static_cast<int>(static_cast<unsigned int>((M - 1)) / static_cast<unsigned int>(128)) + 1)), 1)), tl::floordiv<int>(tl::sized_nonneg((tl::floordiv<int>((K - 1), 64) + 1)), 4))))) + 1))) + 1));
    if (threadIdx.x == 0) {
      for (int tl_s = 0; tl_s < 3; ++tl_s) {
        tl::mbar_init(tl_full + tl_s, (tl_tma & 1) ? 1 : 128);
        tl::mbar_init(tl_empty + tl_s, 16);  // one arrival per consumer warp of the cluster
      }
      tl::fence_barrier_init();
    }
    const unsigned tl_rank = tl::cluster_rank();  // this block's place in its cluster of 2
    tl::cluster_sync();  // the peer's barriers are ready before anyone copies into it
    if (threadIdx.x >= 256) {  // the producer warpgroup
      tl::setmaxnreg_dec<40>();
      const int tl_worker = threadIdx.x - 256;
      int tl_it = 0;  // position in the ring, counted across tiles
      if (tl_tma & 1) {
        if (tl_worker == 0) {
          tl::prefetch_tensor_map(&tl_map0);
          tl::prefetch_tensor_map(&tl_map1);
          tl::prefetch_tensor_map(&tl_map2);
          const int tl_tiles = tl_tiles_x * tl_tiles_y * tl_tiles_z;
          for (int tl_pair = blockIdx.x / 2; tl_pair < (tl_tiles + 1) / 2; tl_pair += gridDim.x / 2) {
            int bx, by, kpart;  // this block's tile: in a persistent kernel the grid counts tiles
            const bool tl_share = tl::cluster_tile<8, 2>(tl_pair, tl_tiles_x, tl_tiles_y, tl_tiles, tl_rank, bx, by, kpart);
            const bool tl_valid = tl_pair * 2 + static_cast<int>(tl_rank) < tl_tiles;
            tl::unused(tl_share, tl_valid);
            (void)bx;
            (void)by;
            (void)kpart;
            int kparts = tl::imax<int>(1, (tl::floordiv<int>(((tl::floordiv<int>((K - 1), 64) + 1) - 1), tl::imax<int>(1, (tl::floordiv<int>(((tl::floordiv<int>((K - 1), 64) + 1) - 1), tl::imax<int>(1, tl::imin<int>(9, tl::imin<int>(tl::floordiv<int>(132, tl::imax<int>(((static_cast<int>(static_cast<unsigned int>((N - 1)) / static_cast<unsigned int>(256)) + 1) * (static_cast<int>(static_cast<unsigned int>((M - 1)) / static_cast<unsigned int>(128)) + 1)), 1)), tl::floordiv<int>(tl::sized_nonneg((tl::floordiv<int>((K - 1), 64) + 1)), 4))))) + 1))) + 1));
            int kchunk = tl::imax<int>(1, (tl::floordiv<int>(((tl::floordiv<int>((K - 1), 64) + 1) - 1), kparts) + 1));
            tl::unused(kparts, kchunk);
            const int tl_n = kchunk;
            #pragma unroll 1  // WarpSpecialization.rolled: NVRTC's time follows the unrolled copies
            for (int tl_k = 0; tl_k < tl_n; ++tl_k, ++tl_it) {
              const int tl_stage = tl_it % 3;
              tl::mbar_wait(tl_empty + tl_stage, ((tl_it / 3) & 1) ^ 1);  // the consumers released it
              const int k = tl_k;
              (void)k;
              tl::mbar_arrive_expect_tx(tl_full + tl_stage, 49152);
              tl::tma_load_tile<half, 128, 64, 2>((As + ((tl_it) % 3) * 8192), &tl_map0, tl_full + tl_stage, (((kpart * kchunk) + k) * 64), (by * 128), {0});
              tl::tma_load_tile_multicast<half, 64, 256, 2, 2>((Bs + ((tl_it) % 3) * 16384), &tl_map1, tl_full + tl_stage, (bx * 256), (((kpart * kchunk) + k) * 64), {0}, tl_rank, tl_share);
            }
          }
        }
      } else {  // the host could not encode a tensor map (unaligned rows): copy element by element
        const int tl_tiles = tl_tiles_x * tl_tiles_y * tl_tiles_z;
        for (int tl_pair = blockIdx.x / 2; tl_pair < (tl_tiles + 1) / 2; tl_pair += gridDim.x / 2) {
          int bx, by, kpart;  // this block's tile: in a persistent kernel the grid counts tiles
          const bool tl_share = tl::cluster_tile<8, 2>(tl_pair, tl_tiles_x, tl_tiles_y, tl_tiles, tl_rank, bx, by, kpart);
          const bool tl_valid = tl_pair * 2 + static_cast<int>(tl_rank) < tl_tiles;
          tl::unused(tl_share, tl_valid);
          (void)bx;
          (void)by;
          (void)kpart;
          int kparts = tl::imax<int>(1, (tl::floordiv<int>(((tl::floordiv<int>((K - 1), 64) + 1) - 1), tl::imax<int>(1, (tl::floordiv<int>(((tl::floordiv<int>((K - 1), 64) + 1) - 1), tl::imax<int>(1, tl::imin<int>(9, tl::imin<int>(tl::floordiv<int>(132, tl::imax<int>(((static_cast<int>(static_cast<unsigned int>((N - 1)) / static_cast<unsigned int>(256)) + 1) * (static_cast<int>(static_cast<unsigned int>((M - 1)) / static_cast<unsigned int>(128)) + 1)), 1)), tl::floordiv<int>(tl::sized_nonneg((tl::floordiv<int>((K - 1), 64) + 1)), 4))))) + 1))) + 1));
          int kchunk = tl::imax<int>(1, (tl::floordiv<int>(((tl::floordiv<int>((K - 1), 64) + 1) - 1), kparts) + 1));
          tl::unused(kparts, kchunk);
          const int tl_n = kchunk;
          #pragma unroll 1  // WarpSpecialization.rolled: NVRTC's time follows the unrolled copies
          for (int tl_k = 0; tl_k < tl_n; ++tl_k, ++tl_it) {
            const int tl_stage = tl_it % 3;
            tl::mbar_wait(tl_empty + tl_stage, ((tl_it / 3) & 1) ^ 1);  // the consumers released it
            const int k = tl_k;
            (void)k;
            tl::copy_g2s_elements<half, 128, 64, 128, 0, 128>((As + ((tl_it) % 3) * 8192), A, K, M, K, (by * 128), (((kpart * kchunk) + k) * 64), tl_worker);
            tl::copy_g2s_elements<half, 64, 256, 128, 0, 128>((Bs + ((tl_it) % 3) * 16384), B, N, K, N, (((kpart * kchunk) + k) * 64), (bx * 256), tl_worker);
            tl::fence_proxy_async();  // plain stores, read next by the tensor cores
            tl::mbar_arrive(tl_full + tl_stage);
          }
        }
      }
      return;
    }
    tl::setmaxnreg_inc<232>();
    int tl_it = 0;
    const int tl_tiles = tl_tiles_x * tl_tiles_y * tl_tiles_z;
    for (int tl_pair = blockIdx.x / 2; tl_pair < (tl_tiles + 1) / 2; tl_pair += gridDim.x / 2) {
      int bx, by, kpart;  // this block's tile: in a persistent kernel the grid counts tiles
      const bool tl_share = tl::cluster_tile<8, 2>(tl_pair, tl_tiles_x, tl_tiles_y, tl_tiles, tl_rank, bx, by, kpart);
      const bool tl_valid = tl_pair * 2 + static_cast<int>(tl_rank) < tl_tiles;
      tl::unused(tl_share, tl_valid);
      (void)bx;
      (void)by;
      (void)kpart;
      // 19: clear(acc)
#line 19 "examples/gemm.tl"
      #pragma unroll
      for (int tl_r = 0; tl_r < tl_matmul_layout_0::REGS; ++tl_r) acc[tl_r] = 0.0f;
      // 20: for k in pipelined(cdiv(K, BK), stages=stages):
#line 20 "examples/gemm.tl"
      int kparts = tl::imax<int>(1, (tl::floordiv<int>(((tl::floordiv<int>((K - 1), 64) + 1) - 1), tl::imax<int>(1, (tl::floordiv<int>(((tl::floordiv<int>((K - 1), 64) + 1) - 1), tl::imax<int>(1, tl::imin<int>(9, tl::imin<int>(tl::floordiv<int>(132, tl::imax<int>(((static_cast<int>(static_cast<unsigned int>((N - 1)) / static_cast<unsigned int>(256)) + 1) * (static_cast<int>(static_cast<unsigned int>((M - 1)) / static_cast<unsigned int>(128)) + 1)), 1)), tl::floordiv<int>(tl::sized_nonneg((tl::floordiv<int>((K - 1), 64) + 1)), 4))))) + 1))) + 1));
      int kchunk = tl::imax<int>(1, (tl::floordiv<int>(((tl::floordiv<int>((K - 1), 64) + 1) - 1), kparts) + 1));
      tl::unused(kparts, kchunk);
      const int tl_n = kchunk;
      #pragma unroll 1  // WarpSpecialization.rolled: ptxas's time follows the HGMMA count
      for (int tl_k = 0; tl_k < tl_n; ++tl_k, ++tl_it) {
        const int tl_stage = tl_it % 3;
        tl::mbar_wait(tl_full + tl_stage, (tl_it / 3) & 1);
        {
          const int k = tl_k;
          (void)k;
          // 23: gemm(As, Bs, acc)
#line 23 "examples/gemm.tl"
          tl::gemm_wgmma<tl_matmul_wgmma_n256_f16_nmajor, half, 64, 128, 64, false, 1>((As + ((tl_it) % 3) * 8192), (Bs + ((tl_it) % 3) * 16384), acc);
        }
        // 20: for k in pipelined(cdiv(K, BK), stages=stages):
#line 20 "examples/gemm.tl"
        // the previous stage's wgmma has completed (one group stays in flight): release it
        if (tl_k > 0 && threadIdx.x % 32 == 0) tl::mbar_arrive_cluster<2>(tl_empty + (tl_it + 2) % 3);
      }
      tl::wgmma_wait<0>();
      tl::fence_registers<128>(acc);
      // and the last stage, which the next tile's copies will overwrite
      if (tl_n > 0 && threadIdx.x % 32 == 0) tl::mbar_arrive_cluster<2>(tl_empty + (tl_it + 2) % 3);
      if (tl_valid) {  // a block past the last tile stores nothing
        // split-K (schedule/split_k.py): the parts of K meet; the last adds the others' partial tiles in order
        bool tl_sk_epilogue = true;
        if (tl_tiles_z > 1) {
          const int tl_sk_tile = by * tl_tiles_x + bx;
          int* tl_sk_count = tl_sk_counts_matmul + tl_sk_tile;
          float4* tl_sk_slot = tl_sk_slots_matmul + static_cast<long long>(tl_sk_tile) * (tl_tiles_z - 1) * 8192;
          if (kpart < tl_tiles_z - 1) {  // a part before the last: its accumulator into its slot, counted
            float4* tl_sk_mine = tl_sk_slot + static_cast<long long>(kpart) * 8192;
            #pragma unroll
            for (int tl_r = 0; tl_r < tl_matmul_layout_0::REGS / 4; ++tl_r)
              tl_sk_mine[tl_r * 256 + threadIdx.x] = make_float4(acc[4 * tl_r], acc[4 * tl_r + 1], acc[4 * tl_r + 2], acc[4 * tl_r + 3]);
            tl::bar_sync_named(5, 256);  // every consumer's stores before the count
            if (threadIdx.x == 0) tl::turn_done(tl_sk_count);  // a release
            tl_sk_epilogue = false;
          } else {  // the last part: the others' slots added in their order, then the epilogue
            if (threadIdx.x == 0) tl::turn_wait(tl_sk_count, tl_tiles_z - 1);  // an acquire
            tl::bar_sync_named(5, 256);
            for (int tl_s = 0; tl_s < tl_tiles_z - 1; ++tl_s) {
              const float4* tl_sk_part = tl_sk_slot + static_cast<long long>(tl_s) * 8192;
              #pragma unroll
              for (int tl_r = 0; tl_r < tl_matmul_layout_0::REGS / 4; ++tl_r) {
                const float4 tl_v = __ldcg(tl_sk_part + tl_r * 256 + threadIdx.x);
                acc[4 * tl_r] += tl_v.x; acc[4 * tl_r + 1] += tl_v.y; acc[4 * tl_r + 2] += tl_v.z; acc[4 * tl_r + 3] += tl_v.w;
              }
            }
            if (threadIdx.x == 0) *tl_sk_count = 0;  // every part has counted: back to 0 for the next launch
          }
        }
        if (tl_sk_epilogue) {
          // 24: copy(acc, C[by * BM, bx * BN])
#line 24 "examples/gemm.tl"
          if (tl_tma & 2) {  // through shared memory: the TMA stores this warpgroup's rows while it goes on
            half* tl_stage_c = reinterpret_cast<half*>(tl_smem + 148480);
            const int tl_group = threadIdx.x / 128;
            if (threadIdx.x % 128 == 0) tl::tma_store_wait_read();  // the last tile's store has read the buffer
            tl::bar_sync_named(1 + tl_group, 128);
            tl::copy_f2s_staged<tl_matmul_layout_0, float, half, 128, 256>(tl_stage_c, acc);
            tl::fence_proxy_async();  // written by plain stores, read next by the TMA
            tl::bar_sync_named(1 + tl_group, 128);
            if (threadIdx.x % 128 == 0) tl::tma_store_tile<half, 64, 256, 128, 2>(&tl_map2, tl_stage_c, tl_group * 64, (bx * 256), (by * 128) + tl_group * 64, {0});
          } else {
            tl::copy_f2g<tl_matmul_layout_0>(C, acc, N, M, N, (by * 128), (bx * 256));
          }
        }
      }
    }
    if (threadIdx.x % 128 == 0) tl::tma_store_wait();  // this warpgroup's last store is done
    tl::cluster_sync();  // the peer may still arrive on this block's barriers until here
  }
}

#ifndef __CUDACC_RTC__
// Host launcher: device pointers, scalars and shape sizes; returns the launch's error code:
// cudaErrorInvalidValue when the grid divides by zero or overflows 64 bits, or a stepped loop's
// i32 counter would step past i32 (or by 0),
// cudaErrorInvalidConfiguration when the GPU cannot launch it (tl/host_grid.cuh).
extern "C" cudaError_t launch_matmul(const half* A, const half* B, half* C, int M, int K, int N, cudaStream_t stream) {
  tl::HostGrid tl_g;
  const long long tl_extents[3] = {tl_g.extent(tl_g.add(tl_g.floordiv(tl_g.sub(static_cast<long long>(N), 1LL), 256LL), 1LL)), tl_g.extent(tl_g.add(tl_g.floordiv(tl_g.sub(static_cast<long long>(M), 1LL), 128LL), 1LL)), tl_g.extent(tl_g.max(1LL, tl_g.add(tl_g.floordiv(tl_g.sub(tl_g.add(tl_g.floordiv(tl_g.sub(static_cast<long long>(K), 1LL), 64LL), 1LL), 1LL), tl_g.max(1LL, tl_g.add(tl_g.floordiv(tl_g.sub(tl_g.add(tl_g.floordiv(tl_g.sub(static_cast<long long>(K), 1LL), 64LL), 1LL), 1LL), tl_g.max(1LL, tl_g.min(9LL, tl_g.min(tl_g.floordiv(132LL, tl_g.max(tl_g.mul(tl_g.add(tl_g.floordiv(tl_g.sub(static_cast<long long>(N), 1LL), 256LL), 1LL), tl_g.add(tl_g.floordiv(tl_g.sub(static_cast<long long>(M), 1LL), 128LL), 1LL)), 1LL)), tl_g.floordiv(tl_g.add(tl_g.floordiv(tl_g.sub(static_cast<long long>(K), 1LL), 64LL), 1LL), 4LL))))), 1LL))), 1LL)))};
  const long long tl_most[3] = {2147483647LL, 65535LL, 65535LL};
  if (tl_g.empty_despite_division()) return cudaSuccess;  // an extent of 0 beside one that divides by zero
  if (!tl_g.ok) return cudaErrorInvalidValue;
  if (!tl::HostGrid::fits(tl_extents, tl_most, 2147483647LL)) return cudaErrorInvalidConfiguration;
  if (tl_extents[0] == 0 || tl_extents[1] == 0 || tl_extents[2] == 0) return cudaSuccess;  // an empty tensor
  const dim3 tl_grid(static_cast<unsigned>(tl_extents[0]), static_cast<unsigned>(tl_extents[1]), static_cast<unsigned>(tl_extents[2]));
  cudaError_t tl_err = cudaFuncSetAttribute(::matmul, cudaFuncAttributeMaxDynamicSharedMemorySize, 214016);
  if (tl_err != cudaSuccess) return tl_err;
  // Persistent: one block per SM at most, each looping over the grid's tiles.
  int tl_device = 0, tl_sms = 0;
  cudaGetDevice(&tl_device);
  cudaDeviceGetAttribute(&tl_sms, cudaDevAttrMultiProcessorCount, tl_device);
  // Clusters of 2 blocks take 2 tiles at a time.
  const unsigned long long tl_tiles = (1ull * tl_grid.x * tl_grid.y * tl_grid.z + 1) / 2;
  // as many clusters as the GPU places at once (a GPC's odd SM is left out)
  cudaLaunchConfig_t tl_config = {};
  tl_config.gridDim = dim3(2);
  tl_config.blockDim = dim3(384);
  tl_config.dynamicSmemBytes = 214016;
  int tl_fit = 0;
  if (cudaOccupancyMaxActiveClusters(&tl_fit, reinterpret_cast<const void*>(::matmul), &tl_config) != cudaSuccess || tl_fit <= 0)
    tl_fit = tl_sms / 2;
  const unsigned long long tl_clusters = static_cast<unsigned long long>(tl_fit < tl_sms / 2 ? tl_fit : tl_sms / 2);
  const dim3 tl_blocks(static_cast<unsigned>(2 * (tl_tiles < tl_clusters ? tl_tiles : tl_clusters)));
  // The TMA's view of each tensor; where the driver refuses one (rows not 16-byte aligned)
  // the kernel copies (bit 0 of tl_tma off) or stores (bit 1 off) without it.
  bool tl_tma_loads = true, tl_tma_store = true;
  tl::TensorMap tl_map0 = {};
  {
    const cuuint64_t dims[] = {static_cast<cuuint64_t>(K), static_cast<cuuint64_t>(M)};
    const cuuint64_t strides[] = {2 * static_cast<cuuint64_t>(K)};
    const cuuint32_t box[] = {64, 128};
    tl_tma_loads = tl_tma_loads && tl::encode_tensor_map(&tl_map0, 6, 2, A, dims, strides, box);
  }
  tl::TensorMap tl_map1 = {};
  {
    const cuuint64_t dims[] = {static_cast<cuuint64_t>(N), static_cast<cuuint64_t>(K)};
    const cuuint64_t strides[] = {2 * static_cast<cuuint64_t>(N)};
    const cuuint32_t box[] = {64, 32};
    tl_tma_loads = tl_tma_loads && tl::encode_tensor_map(&tl_map1, 6, 2, B, dims, strides, box);
  }
  tl::TensorMap tl_map2 = {};
  {
    const cuuint64_t dims[] = {static_cast<cuuint64_t>(N), static_cast<cuuint64_t>(M)};
    const cuuint64_t strides[] = {2 * static_cast<cuuint64_t>(N)};
    const cuuint32_t box[] = {64, 64};
    tl_tma_store = tl_tma_store && tl::encode_tensor_map(&tl_map2, 6, 2, C, dims, strides, box);
  }
  ::matmul<<<tl_blocks, 384, 214016, stream>>>(A, B, C, M, K, N, tl_map0, tl_map1, tl_map2, (tl_tma_loads ? 1 : 0) | (tl_tma_store ? 2 : 0));
  return cudaGetLastError();
}
#endif
