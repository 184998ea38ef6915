#endif  // TL_PRIMITIVES

using tl_matmul_layout_0 = tl::MmaAcc<128, 256, 2, 4>;

extern "C" __global__ void __launch_bounds__(256) matmul(const half* __restrict__ A, const half* __restrict__ B, half* __restrict__ C, int M, int K, int N) {
  extern __shared__ __align__(1024) unsigned char tl_smem[];
#ifdef __CUDACC_RTC__
  __builtin_assume(M >= 0); __builtin_assume(K >= 0); __builtin_assume(N >= 0);  // sizes of arrays
#endif
  const int bx = blockIdx.x;
  (void)bx;
  const int by = blockIdx.y;
  (void)by;
  if (N < 1 || M < 1) return;  // no block runs with one 0
  half* As = reinterpret_cast<half*>(tl_smem + 98304);
  half* Bs = reinterpret_cast<half*>(tl_smem + 0);
  float acc[tl_matmul_layout_0::REGS];  // fragment [128, 256]: mma_acc(warps=2x4, warp_tile=64x64)
  // 19: clear(acc)
#line 19 "examples/gemm.tl"
  #pragma unroll
  for (int tl_r = 0; tl_r < tl_matmul_layout_0::REGS; ++tl_r) acc[tl_r] = 0.0f;
  // 20: for k in pipelined(cdiv(K, BK), stages=stages):
#line 20 "examples/gemm.tl"
  {  // pipelined over 3 stages: copies run 2 iterations ahead through cp.async
    const int tl_n = (tl::floordiv<int>((K - 1), 64) + 1);
    for (int tl_s = 0; tl_s < 2; ++tl_s) {
      if (tl_s < tl_n) {
        const int k = tl_s;
        (void)k;
        tl::copy_g2s<half, 128, 64, 256, 0, 128, true>((As + ((tl_s) % 3) * 8192), A, K, M, K, (by * 128), (k * 64));
        tl::copy_g2s<half, 64, 256, 256, 0, 128, true>((Bs + ((tl_s) % 3) * 16384), B, N, K, N, (k * 64), (bx * 256));
      }
      tl::cp_async_commit();
    }
    for (int tl_k = 0; tl_k < tl_n; ++tl_k) {
      tl::cp_async_wait<1>();
      __syncthreads();
      if (tl_k + 2 < tl_n) {
        const int k = tl_k + 2;
        (void)k;
        tl::copy_g2s<half, 128, 64, 256, 0, 128, true>((As + ((tl_k + 2) % 3) * 8192), A, K, M, K, (by * 128), (k * 64));
        tl::copy_g2s<half, 64, 256, 256, 0, 128, true>((Bs + ((tl_k + 2) % 3) * 16384), B, N, K, N, (k * 64), (bx * 256));
      }
      tl::cp_async_commit();
      {
        const int k = tl_k;
        (void)k;
        // 23: gemm(As, Bs, acc)
#line 23 "examples/gemm.tl"
        tl::gemm_mma_sm80<half, 128, 256, 64, 2, 4, false, false, 128, 64, 0, 128, 64, 256, 0, 128>((As + ((tl_k) % 3) * 8192), (Bs + ((tl_k) % 3) * 16384), acc);
      }
    }
    tl::cp_async_wait<0>();
    __syncthreads();
  }
  // 24: copy(acc, C[by * BM, bx * BN])
#line 24 "examples/gemm.tl"
  tl::copy_f2g<tl_matmul_layout_0>(C, acc, N, M, N, (by * 128), (bx * 256));
}

#ifndef __CUDACC_RTC__
// Host launcher: device pointers, scalars and shape sizes; returns the launch's error code:
// cudaErrorInvalidValue when the grid divides by zero or overflows 64 bits, or a stepped loop's
// i32 counter would step past i32 (or by 0),
// cudaErrorInvalidConfiguration when the GPU cannot launch it (tl/host_grid.cuh).
extern "C" cudaError_t launch_matmul(const half* A, const half* B, half* C, int M, int K, int N, cudaStream_t stream) {
  tl::HostGrid tl_g;
  const long long tl_extents[3] = {tl_g.extent(tl_g.add(tl_g.floordiv(tl_g.sub(static_cast<long long>(N), 1LL), 256LL), 1LL)), tl_g.extent(tl_g.add(tl_g.floordiv(tl_g.sub(static_cast<long long>(M), 1LL), 128LL), 1LL)), 1LL};
  const long long tl_most[3] = {2147483647LL, 65535LL, 65535LL};
  if (tl_g.empty_despite_division()) return cudaSuccess;  // an extent of 0 beside one that divides by zero
  if (!tl_g.ok) return cudaErrorInvalidValue;
  if (!tl::HostGrid::fits(tl_extents, tl_most, 0)) return cudaErrorInvalidConfiguration;
  if (tl_extents[0] == 0 || tl_extents[1] == 0 || tl_extents[2] == 0) return cudaSuccess;  // an empty tensor
  const dim3 tl_grid(static_cast<unsigned>(tl_extents[0]), static_cast<unsigned>(tl_extents[1]), static_cast<unsigned>(tl_extents[2]));
  cudaError_t tl_err = cudaFuncSetAttribute(::matmul, cudaFuncAttributeMaxDynamicSharedMemorySize, 147456);
  if (tl_err != cudaSuccess) return tl_err;
  ::matmul<<<tl_grid, 256, 147456, stream>>>(A, B, C, M, K, N);
  return cudaGetLastError();
}
#endif
