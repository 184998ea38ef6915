#endif  // TL_PRIMITIVES

using tl_softmax_layout_0 = tl::Blocked<4, 1024, 128, 4>;
using tl_softmax_layout_1 = tl::Kept<tl_softmax_layout_0, 0>;

extern "C" __global__ void __launch_bounds__(128) softmax(const half* __restrict__ x, half* __restrict__ y, int M, int N) {
  extern __shared__ __align__(128) unsigned char tl_smem[];
  const int bx = blockIdx.x;
  (void)bx;
  float row[tl_softmax_layout_0::REGS];  // fragment [4, 1024]: blocked(vec=4, threads=128)
  float row_max[tl_softmax_layout_1::REGS];  // fragment [4]: replicated(blocked(vec=4, threads=128), dropped=[1])
  float row_sum[tl_softmax_layout_1::REGS];  // fragment [4]: replicated(blocked(vec=4, threads=128), dropped=[1])
  // 13: copy(x[bx * BM, 0], row)
#line 13 "examples/softmax.tl"
  tl::copy_g2f<tl_softmax_layout_0>(row, x, N, M, N, (bx * 4), 0);
  // 14: for i, j in parallel(BM, BN):
#line 14 "examples/softmax.tl"
  // parallel (i, j) over [4, 1024]: blocked(vec=4, threads=128)
  #pragma unroll
  for (int tl_r = 0; tl_r < tl_softmax_layout_0::REGS; ++tl_r) {
    const int i = tl_softmax_layout_0::row(threadIdx.x, tl_r);
    const int j = tl_softmax_layout_0::col(threadIdx.x, tl_r);
    if (!tl_softmax_layout_0::valid(threadIdx.x, tl_r)) continue;
    // 15: row[i, j] = where(j < N, row[i, j], -inf(f32))
#line 15 "examples/softmax.tl"
    row[tl_r] = ((j < N) ? row[tl_r] : (-__int_as_float(0x7f800000)));
  }
  // 16: reduce_max(row, row_max, dim=1)
#line 16 "examples/softmax.tl"
  {  // reduce_max(row -> row_max, dim=1)
    constexpr int tl_slot[32] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3};
    float tl_part[4];
    #pragma unroll
    for (int tl_s = 0; tl_s < 4; ++tl_s) tl_part[tl_s] = tl::identity<tl::Op::max>(float());
    #pragma unroll
    for (int tl_r = 0; tl_r < tl_softmax_layout_0::REGS; ++tl_r) if (tl_softmax_layout_0::valid(threadIdx.x, tl_r)) tl_part[tl_slot[tl_r]] = tl::combine<tl::Op::max>(tl_part[tl_slot[tl_r]], tl::prepare<tl::Op::max>(tl::cvt<float>(row[tl_r])));
    #pragma unroll
    for (int tl_s = 0; tl_s < 4; ++tl_s) tl_part[tl_s] = tl::warp_allreduce<tl::Op::max, 31u>(tl_part[tl_s]);
    for (int tl_i = threadIdx.x; tl_i < 4; tl_i += 128) reinterpret_cast<float*>(tl_smem + 0)[tl_i] = tl::identity<tl::Op::max>(float());
    __syncthreads();
    constexpr int tl_first[4] = {0, 8, 16, 24};
    if ((threadIdx.x & 31u) == 0) {
    #pragma unroll
      for (int tl_s = 0; tl_s < 4; ++tl_s) tl::atomic_combine<tl::Op::max>(&reinterpret_cast<float*>(tl_smem + 0)[tl_softmax_layout_0::row(threadIdx.x, tl_first[tl_s])], tl_part[tl_s]);
    }
    __syncthreads();
    #pragma unroll
    for (int tl_r = 0; tl_r < tl_softmax_layout_1::REGS; ++tl_r) if (tl_softmax_layout_1::valid(threadIdx.x, tl_r)) row_max[tl_r] = tl::cvt<float>(reinterpret_cast<float*>(tl_smem + 0)[tl_softmax_layout_1::col(threadIdx.x, tl_r)]);
    __syncthreads();
  }
  // 17: for i, j in parallel(BM, BN):
#line 17 "examples/softmax.tl"
  // parallel (i, j) over [4, 1024]: blocked(vec=4, threads=128)
  #pragma unroll
  for (int tl_r = 0; tl_r < tl_softmax_layout_0::REGS; ++tl_r) {
    const int i = tl_softmax_layout_0::row(threadIdx.x, tl_r);
    const int j = tl_softmax_layout_0::col(threadIdx.x, tl_r);
    if (!tl_softmax_layout_0::valid(threadIdx.x, tl_r)) continue;
    // 18: row[i, j] = exp(row[i, j] - row_max[i])
#line 18 "examples/softmax.tl"
    row[tl_r] = expf((row[tl_r] - row_max[tl_r]));
  }
  // 19: reduce_sum(row, row_sum, dim=1)
#line 19 "examples/softmax.tl"
  {  // reduce_sum(row -> row_sum, dim=1)
    constexpr int tl_slot[32] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3};
    float tl_part[4];
    #pragma unroll
    for (int tl_s = 0; tl_s < 4; ++tl_s) tl_part[tl_s] = tl::identity<tl::Op::sum>(float());
    #pragma unroll
    for (int tl_r = 0; tl_r < tl_softmax_layout_0::REGS; ++tl_r) if (tl_softmax_layout_0::valid(threadIdx.x, tl_r)) tl_part[tl_slot[tl_r]] = tl::combine<tl::Op::sum>(tl_part[tl_slot[tl_r]], tl::prepare<tl::Op::sum>(tl::cvt<float>(row[tl_r])));
    #pragma unroll
    for (int tl_s = 0; tl_s < 4; ++tl_s) tl_part[tl_s] = tl::warp_allreduce<tl::Op::sum, 31u>(tl_part[tl_s]);
    for (int tl_i = threadIdx.x; tl_i < 4; tl_i += 128) reinterpret_cast<float*>(tl_smem + 0)[tl_i] = tl::identity<tl::Op::sum>(float());
    __syncthreads();
    constexpr int tl_first[4] = {0, 8, 16, 24};
    if ((threadIdx.x & 31u) == 0) {
    #pragma unroll
      for (int tl_s = 0; tl_s < 4; ++tl_s) tl::atomic_combine<tl::Op::sum>(&reinterpret_cast<float*>(tl_smem + 0)[tl_softmax_layout_0::row(threadIdx.x, tl_first[tl_s])], tl_part[tl_s]);
    }
    __syncthreads();
    #pragma unroll
    for (int tl_r = 0; tl_r < tl_softmax_layout_1::REGS; ++tl_r) if (tl_softmax_layout_1::valid(threadIdx.x, tl_r)) row_sum[tl_r] = tl::cvt<float>(reinterpret_cast<float*>(tl_smem + 0)[tl_softmax_layout_1::col(threadIdx.x, tl_r)]);
    __syncthreads();
  }
  // 20: for i, j in parallel(BM, BN):
#line 20 "examples/softmax.tl"
  // parallel (i, j) over [4, 1024]: blocked(vec=4, threads=128)
  #pragma unroll
  for (int tl_r = 0; tl_r < tl_softmax_layout_0::REGS; ++tl_r) {
    const int i = tl_softmax_layout_0::row(threadIdx.x, tl_r);
    const int j = tl_softmax_layout_0::col(threadIdx.x, tl_r);
    if (!tl_softmax_layout_0::valid(threadIdx.x, tl_r)) continue;
    // 21: row[i, j] = row[i, j] / row_sum[i]
#line 21 "examples/softmax.tl"
    row[tl_r] = (row[tl_r] / row_sum[tl_r]);
  }
  // 22: copy(row, y[bx * BM, 0])
#line 22 "examples/softmax.tl"
  tl::copy_f2g<tl_softmax_layout_0>(y, row, N, M, N, (bx * 4), 0);
}

#ifndef __CUDACC_RTC__
// Host launcher: device pointers, scalars and shape sizes; returns the launch's error code.
extern "C" cudaError_t launch_softmax(const half* x, half* y, int M, int N, cudaStream_t stream) {
  const dim3 tl_grid(static_cast<unsigned>(((((M + 4) - 1)) >= 0 ? (((M + 4) - 1)) / (4) : -((-(((M + 4) - 1)) + (4) - 1) / (4)))), 1, 1);
  if (tl_grid.x == 0 || tl_grid.y == 0 || tl_grid.z == 0) return cudaSuccess;
  softmax<<<tl_grid, 128, 16, stream>>>(x, y, M, N);
  return cudaGetLastError();
}
#endif
