#endif  // TL_PRIMITIVES

using tl_vector_add_layout_0 = tl::Blocked<1, 1024, 128, 4>;

extern "C" __global__ void __launch_bounds__(128, 12) vector_add(const float* __restrict__ x, const float* __restrict__ y, float* __restrict__ out, float alpha, int N) {
#ifdef __CUDACC_RTC__
  __builtin_assume(N >= 0);  // sizes of arrays
#endif
  const int bx = blockIdx.x;
  (void)bx;
  if (N < 1) return;  // no block runs with one 0
  float xs[tl_vector_add_layout_0::REGS];  // fragment [1024]: blocked(vec=4, threads=128)
  float ys[tl_vector_add_layout_0::REGS];  // fragment [1024]: blocked(vec=4, threads=128)
  // 13: copy(x[bx * BLOCK], xs)
#line 13 "examples/vector_add.tl"
  if (tl::g2f_whole_flat<tl_vector_add_layout_0>(x, N, (bx * 1024)) && tl::g2f_whole_flat<tl_vector_add_layout_0>(y, N, (bx * 1024))) {  // load batch 1: every load, then the conversions
    const auto tl_batch0 = tl::g2f_load<tl_vector_add_layout_0>(x, N, 0, (bx * 1024));
    const auto tl_batch1 = tl::g2f_load<tl_vector_add_layout_0>(y, N, 0, (bx * 1024));
    tl::g2f_convert(xs, tl_batch0);
    tl::g2f_convert(ys, tl_batch1);
  } else {
    tl::copy_g2f_flat<tl_vector_add_layout_0>(xs, x, N, (bx * 1024));
    // 14: copy(y[bx * BLOCK], ys)
#line 14 "examples/vector_add.tl"
    tl::copy_g2f_flat<tl_vector_add_layout_0>(ys, y, N, (bx * 1024));
  }
  // 15: for i in parallel(BLOCK):
#line 15 "examples/vector_add.tl"
  // parallel (i) over [1024]: blocked(vec=4, threads=128)
  // ys -> out: stored a run at a time, as the loop finishes each
  const tl::FragmentStore<tl_vector_add_layout_0, float> tl_store0(out, N, 1, N, 0, (bx * 1024));
  #pragma unroll
  for (int tl_r0 = 0; tl_r0 < tl_vector_add_layout_0::REGS; tl_r0 += tl_vector_add_layout_0::RUN) {
    if (!tl_vector_add_layout_0::valid(threadIdx.x, tl_r0)) continue;  // a run is valid or not as a whole
    {  // the run's shared reads, one vector each
      const int i = tl_vector_add_layout_0::col(threadIdx.x, tl_r0);
      (void)i;
    }
    #pragma unroll
    for (int tl_e = 0; tl_e < tl_vector_add_layout_0::RUN; ++tl_e) {
      const int tl_r = tl_r0 + tl_e;
      const int i = tl_vector_add_layout_0::col(threadIdx.x, tl_r);
      (void)i;
      // 16: ys[i] = alpha * xs[i] + ys[i]
#line 16 "examples/vector_add.tl"
      ys[tl_r] = ((alpha * xs[tl_r]) + ys[tl_r]);
    }
    tl_store0.run(ys, tl_r0);
  }
}

#ifndef __CUDACC_RTC__
// Host launcher: device pointers, scalars and shape sizes; returns the launch's error code:
// cudaErrorInvalidValue when the grid divides by zero or overflows 64 bits, or a stepped loop's
// i32 counter would step past i32 (or by 0),
// cudaErrorInvalidConfiguration when the GPU cannot launch it (tl/host_grid.cuh).
extern "C" cudaError_t launch_vector_add(const float* x, const float* y, float* out, float alpha, int N, cudaStream_t stream) {
  tl::HostGrid tl_g;
  const long long tl_extents[3] = {tl_g.extent(tl_g.add(tl_g.floordiv(tl_g.sub(static_cast<long long>(N), 1LL), 1024LL), 1LL)), 1LL, 1LL};
  const long long tl_most[3] = {2147483647LL, 65535LL, 65535LL};
  if (tl_g.empty_despite_division()) return cudaSuccess;  // an extent of 0 beside one that divides by zero
  if (!tl_g.ok) return cudaErrorInvalidValue;
  if (!tl::HostGrid::fits(tl_extents, tl_most, 0)) return cudaErrorInvalidConfiguration;
  if (tl_extents[0] == 0 || tl_extents[1] == 0 || tl_extents[2] == 0) return cudaSuccess;  // an empty tensor
  const dim3 tl_grid(static_cast<unsigned>(tl_extents[0]), static_cast<unsigned>(tl_extents[1]), static_cast<unsigned>(tl_extents[2]));
  ::vector_add<<<tl_grid, 128, 0, stream>>>(x, y, out, alpha, N);
  return cudaGetLastError();
}
#endif
