#endif  // TL_PRIMITIVES

using tl_layernorm_layout_0 = tl::Blocked<4, 1024, 128, 8>;
using tl_layernorm_layout_1 = tl::Kept<tl_layernorm_layout_0, 1>;
using tl_layernorm_layout_2 = tl::Kept<tl_layernorm_layout_0, 0>;

extern "C" __global__ void __launch_bounds__(128, 4) layernorm(const half* __restrict__ x, const float* __restrict__ gamma_, const float* __restrict__ beta, half* __restrict__ y, int M, int N) {
  extern __shared__ __align__(1024) unsigned char tl_smem[];
#ifdef __CUDACC_RTC__
  __builtin_assume(M >= 0); __builtin_assume(N >= 0);  // sizes of arrays
#endif
  const int bx = blockIdx.x;
  (void)bx;
  if (M < 1) return;  // no block runs with one 0
  float row[tl_layernorm_layout_0::REGS];  // fragment [4, 1024]: blocked(vec=8, threads=128)
  float sq[tl_layernorm_layout_0::REGS];  // fragment [4, 1024]: blocked(vec=8, threads=128)
  float g[tl_layernorm_layout_1::REGS];  // fragment [1024]: replicated(blocked(vec=8, threads=128), dropped=[0])
  float b[tl_layernorm_layout_1::REGS];  // fragment [1024]: replicated(blocked(vec=8, threads=128), dropped=[0])
  float mean[tl_layernorm_layout_2::REGS];  // fragment [4]: replicated(blocked(vec=8, threads=128), dropped=[1])
  float inv_std[tl_layernorm_layout_2::REGS];  // fragment [4]: replicated(blocked(vec=8, threads=128), dropped=[1])
  constexpr int TL_RED_STRIDE = 64;
  int tl_red_phase = 0;
  // 20: tiles = cdiv(N, BN)
#line 20 "examples/layernorm.tl"
  int tiles = 0;
  tiles = (tl::floordiv<int>((N - 1), 1024) + 1);
  // 21: clear(mean)
#line 21 "examples/layernorm.tl"
  #pragma unroll
  for (int tl_r = 0; tl_r < tl_layernorm_layout_2::REGS; ++tl_r) mean[tl_r] = 0.0f;
  // 22: clear(inv_std)
#line 22 "examples/layernorm.tl"
  #pragma unroll
  for (int tl_r = 0; tl_r < tl_layernorm_layout_2::REGS; ++tl_r) inv_std[tl_r] = 0.0f;
  // 23: for t in range(tiles):
#line 23 "examples/layernorm.tl"
  for (int t = 0; t < tiles; t += 1) {
    // 24: copy(x[bx * BM, t * BN], row)
#line 24 "examples/layernorm.tl"
    tl::copy_g2f<tl_layernorm_layout_0>(row, x, N, M, N, (bx * 4), (t * 1024));
    // 25: reduce_sum(row, mean, dim=1, clear=False)
#line 25 "examples/layernorm.tl"
    {  // reduce_sum(row -> mean, dim=1)
      float tl_part[tl_layernorm_layout_2::REGS];
      tl::reduce_slots<tl::Op::sum, tl_layernorm_layout_0, tl_layernorm_layout_2, 31u>(tl_part, row);
      tl_red_phase ^= 1;
      tl::reduce_warps_to_scratch<tl::Op::sum, tl_layernorm_layout_2, 128, 4, false>(reinterpret_cast<float*>(tl_smem + 0 + tl_red_phase * TL_RED_STRIDE), tl_part);
      tl::reduce_finish_fragment<tl::Op::sum, false, tl_layernorm_layout_2, 4, 4>(mean, reinterpret_cast<float*>(tl_smem + 0 + tl_red_phase * TL_RED_STRIDE));
    }
  }
  // 27: mean[i] = mean[i] / N
#line 27 "examples/layernorm.tl"
  float rcp0 = (1.0f / tl::cvt<float>(N));
  // 26: for i in parallel(BM):
#line 26 "examples/layernorm.tl"
  // parallel (i) over [4]: replicated(blocked(vec=8, threads=128), dropped=[1])
  #pragma unroll
  for (int tl_r = 0; tl_r < tl_layernorm_layout_2::REGS; ++tl_r) {
    const int i = tl_layernorm_layout_2::col(threadIdx.x, tl_r);
    if (!tl_layernorm_layout_2::valid(threadIdx.x, tl_r)) continue;
    // 27: mean[i] = mean[i] / N
#line 27 "examples/layernorm.tl"
    mean[tl_r] = (mean[tl_r] * rcp0);
  }
  // 28: for t in range(tiles):
#line 28 "examples/layernorm.tl"
  for (int t = 0; t < tiles; t += 1) {
    // 29: if tiles > 1:
#line 29 "examples/layernorm.tl"
    if ((tiles > 1)) {
      // 30: copy(x[bx * BM, t * BN], row)
#line 30 "examples/layernorm.tl"
      tl::copy_g2f<tl_layernorm_layout_0>(row, x, N, M, N, (bx * 4), (t * 1024));
    }
    // 31: for i, j in parallel(BM, BN):
#line 31 "examples/layernorm.tl"
    // parallel (i, j) over [4, 1024]: blocked(vec=8, threads=128)
    #pragma unroll
    for (int tl_r = 0; tl_r < tl_layernorm_layout_0::REGS; ++tl_r) {
      const int i = tl_layernorm_layout_0::row(threadIdx.x, tl_r);
      const int j = tl_layernorm_layout_0::col(threadIdx.x, tl_r);
      if (!tl_layernorm_layout_0::valid(threadIdx.x, tl_r)) continue;
      // 32: row[i, j] = where(t * BN + j < N, row[i, j] - mean[i], 0.0)
#line 32 "examples/layernorm.tl"
      row[tl_r] = ((((t * 1024) + j) < N) ? (row[tl_r] - mean[tl_layernorm_layout_2::slot(tl_r)]) : 0.0f);
      // 33: sq[i, j] = row[i, j] * row[i, j]
#line 33 "examples/layernorm.tl"
      sq[tl_r] = (row[tl_r] * row[tl_r]);
    }
    // 34: reduce_sum(sq, inv_std, dim=1, clear=False)
#line 34 "examples/layernorm.tl"
    {  // reduce_sum(sq -> inv_std, dim=1)
      float tl_part[tl_layernorm_layout_2::REGS];
      tl::reduce_slots<tl::Op::sum, tl_layernorm_layout_0, tl_layernorm_layout_2, 31u>(tl_part, sq);
      tl_red_phase ^= 1;
      tl::reduce_warps_to_scratch<tl::Op::sum, tl_layernorm_layout_2, 128, 4, false>(reinterpret_cast<float*>(tl_smem + 0 + tl_red_phase * TL_RED_STRIDE), tl_part);
      tl::reduce_finish_fragment<tl::Op::sum, false, tl_layernorm_layout_2, 4, 4>(inv_std, reinterpret_cast<float*>(tl_smem + 0 + tl_red_phase * TL_RED_STRIDE));
    }
  }
  // 36: inv_std[i] = rsqrt(inv_std[i] / N + eps)
#line 36 "examples/layernorm.tl"
  float rcp1 = (1.0f / tl::cvt<float>(N));
  // 35: for i in parallel(BM):
#line 35 "examples/layernorm.tl"
  // parallel (i) over [4]: replicated(blocked(vec=8, threads=128), dropped=[1])
  #pragma unroll
  for (int tl_r = 0; tl_r < tl_layernorm_layout_2::REGS; ++tl_r) {
    const int i = tl_layernorm_layout_2::col(threadIdx.x, tl_r);
    if (!tl_layernorm_layout_2::valid(threadIdx.x, tl_r)) continue;
    // 36: inv_std[i] = rsqrt(inv_std[i] / N + eps)
#line 36 "examples/layernorm.tl"
    inv_std[tl_r] = rsqrtf(((inv_std[tl_r] * rcp1) + 1e-05f));
  }
  // 37: for t in range(tiles):
#line 37 "examples/layernorm.tl"
  for (int t = 0; t < tiles; t += 1) {
    // 38: if tiles > 1:
#line 38 "examples/layernorm.tl"
    if ((tiles > 1)) {
      // 39: copy(x[bx * BM, t * BN], row)
#line 39 "examples/layernorm.tl"
      tl::copy_g2f<tl_layernorm_layout_0>(row, x, N, M, N, (bx * 4), (t * 1024));
      // 40: for i, j in parallel(BM, BN):
#line 40 "examples/layernorm.tl"
      // parallel (i, j) over [4, 1024]: blocked(vec=8, threads=128)
      #pragma unroll
      for (int tl_r = 0; tl_r < tl_layernorm_layout_0::REGS; ++tl_r) {
        const int i = tl_layernorm_layout_0::row(threadIdx.x, tl_r);
        const int j = tl_layernorm_layout_0::col(threadIdx.x, tl_r);
        if (!tl_layernorm_layout_0::valid(threadIdx.x, tl_r)) continue;
        // 41: row[i, j] = row[i, j] - mean[i]
#line 41 "examples/layernorm.tl"
        row[tl_r] = (row[tl_r] - mean[tl_layernorm_layout_2::slot(tl_r)]);
      }
    }
    // 42: copy(gamma[t * BN], g)
#line 42 "examples/layernorm.tl"
    tl::copy_g2f<tl_layernorm_layout_1>(g, gamma_, N, 1, N, 0, (t * 1024));
    // 43: copy(beta[t * BN], b)
#line 43 "examples/layernorm.tl"
    tl::copy_g2f<tl_layernorm_layout_1>(b, beta, N, 1, N, 0, (t * 1024));
    // 44: for i, j in parallel(BM, BN):
#line 44 "examples/layernorm.tl"
    // parallel (i, j) over [4, 1024]: blocked(vec=8, threads=128)
    // row -> y: stored a run at a time, as the loop finishes each
    const tl::FragmentStore<tl_layernorm_layout_0, half> tl_store0(y, N, M, N, (bx * 4), (t * 1024));
    #pragma unroll
    for (int tl_r0 = 0; tl_r0 < tl_layernorm_layout_0::REGS; tl_r0 += tl_layernorm_layout_0::RUN) {
      if (!tl_layernorm_layout_0::valid(threadIdx.x, tl_r0)) continue;  // a run is valid or not as a whole
      {  // the run's shared reads, one vector each
        const int i = tl_layernorm_layout_0::row(threadIdx.x, tl_r0);
        (void)i;
        const int j = tl_layernorm_layout_0::col(threadIdx.x, tl_r0);
        (void)j;
      }
      #pragma unroll
      for (int tl_e = 0; tl_e < tl_layernorm_layout_0::RUN; ++tl_e) {
        const int tl_r = tl_r0 + tl_e;
        const int i = tl_layernorm_layout_0::row(threadIdx.x, tl_r);
        (void)i;
        const int j = tl_layernorm_layout_0::col(threadIdx.x, tl_r);
        (void)j;
        // 45: row[i, j] = row[i, j] * inv_std[i] * g[j] + b[j]
#line 45 "examples/layernorm.tl"
        row[tl_r] = (((row[tl_r] * inv_std[tl_layernorm_layout_2::slot(tl_r)]) * g[tl_layernorm_layout_1::slot(tl_r)]) + b[tl_layernorm_layout_1::slot(tl_r)]);
      }
      tl_store0.run(row, tl_r0);
    }
  }
}

#ifndef __CUDACC_RTC__
// Host launcher: device pointers, scalars and shape sizes; returns the launch's error code:
// cudaErrorInvalidValue when the grid divides by zero or overflows 64 bits, or a stepped loop's
// i32 counter would step past i32 (or by 0),
// cudaErrorInvalidConfiguration when the GPU cannot launch it (tl/host_grid.cuh).
extern "C" cudaError_t launch_layernorm(const half* x, const float* gamma_, const float* beta, half* y, int M, int N, cudaStream_t stream) {
  tl::HostGrid tl_g;
  const long long tl_extents[3] = {tl_g.extent(tl_g.add(tl_g.floordiv(tl_g.sub(static_cast<long long>(M), 1LL), 4LL), 1LL)), 1LL, 1LL};
  const long long tl_most[3] = {2147483647LL, 65535LL, 65535LL};
  if (tl_g.empty_despite_division()) return cudaSuccess;  // an extent of 0 beside one that divides by zero
  if (!tl_g.ok) return cudaErrorInvalidValue;
  if (!tl::HostGrid::fits(tl_extents, tl_most, 0)) return cudaErrorInvalidConfiguration;
  if (tl_extents[0] == 0 || tl_extents[1] == 0 || tl_extents[2] == 0) return cudaSuccess;  // an empty tensor
  const dim3 tl_grid(static_cast<unsigned>(tl_extents[0]), static_cast<unsigned>(tl_extents[1]), static_cast<unsigned>(tl_extents[2]));
  ::layernorm<<<tl_grid, 128, 128, stream>>>(x, gamma_, beta, y, M, N);
  return cudaGetLastError();
}
#endif
