#endif  // TL_PRIMITIVES

using tl_vector_add_layout_0 = tl::Blocked<1, 1024, 128, 4>;

extern "C" __global__ void __launch_bounds__(128, 10) vector_add(const float* __restrict__ x, const float* __restrict__ y, float* __restrict__ out, float alpha, int N) {
  const int bx = blockIdx.x;
  (void)bx;
  float xs[tl_vector_add_layout_0::REGS];  // fragment [1024]: blocked(vec=4, threads=128)
  float ys[tl_vector_add_layout_0::REGS];  // fragment [1024]: blocked(vec=4, threads=128)
  // 13: copy(x[bx * BLOCK], xs)
#line 13 "examples/vector_add.tl"
  tl::copy_g2f<tl_vector_add_layout_0>(xs, x, N, 1, N, 0, (bx * 1024));
  // 14: copy(y[bx * BLOCK], ys)
#line 14 "examples/vector_add.tl"
  tl::copy_g2f<tl_vector_add_layout_0>(ys, y, N, 1, N, 0, (bx * 1024));
  // 15: for i in parallel(BLOCK):
#line 15 "examples/vector_add.tl"
  // parallel (i) over [1024]: blocked(vec=4, threads=128)
  #pragma unroll
  for (int tl_r = 0; tl_r < tl_vector_add_layout_0::REGS; ++tl_r) {
    const int i = tl_vector_add_layout_0::col(threadIdx.x, tl_r);
    if (!tl_vector_add_layout_0::valid(threadIdx.x, tl_r)) continue;
    // 16: ys[i] = alpha * xs[i] + ys[i]
#line 16 "examples/vector_add.tl"
    ys[tl_r] = ((alpha * xs[tl_r]) + ys[tl_r]);
  }
  // 17: copy(ys, out[bx * BLOCK])
#line 17 "examples/vector_add.tl"
  tl::copy_f2g<tl_vector_add_layout_0>(out, ys, N, 1, N, 0, (bx * 1024));
}

#ifndef __CUDACC_RTC__
// Host launcher: device pointers, scalars and shape sizes; returns the launch's error code.
extern "C" cudaError_t launch_vector_add(const float* x, const float* y, float* out, float alpha, int N, cudaStream_t stream) {
  const dim3 tl_grid(static_cast<unsigned>(((((N + 1024) - 1)) >= 0 ? (((N + 1024) - 1)) / (1024) : -((-(((N + 1024) - 1)) + (1024) - 1) / (1024)))), 1, 1);
  if (tl_grid.x == 0 || tl_grid.y == 0 || tl_grid.z == 0) return cudaSuccess;
  vector_add<<<tl_grid, 128, 0, stream>>>(x, y, out, alpha, N);
  return cudaGetLastError();
}
#endif
