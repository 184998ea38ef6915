#endif  // TL_PRIMITIVES

using tl_softmax_layout_0 = tl::Blocked<4, 1024, 128, 8>;
using tl_softmax_layout_1 = tl::Kept<tl_softmax_layout_0, 0>;

extern "C" __global__ void __launch_bounds__(128, 6) softmax(const half* __restrict__ x, half* __restrict__ y, int M, int N) {
  extern __shared__ __align__(1024) unsigned char tl_smem[];
#ifdef __CUDACC_RTC__
  __builtin_assume(M >= 0); __builtin_assume(N >= 0);  // sizes of arrays
#endif
  const int bx = blockIdx.x;
  (void)bx;
  if (M < 1) return;  // no block runs with one 0
  float row[tl_softmax_layout_0::REGS];  // fragment [4, 1024]: blocked(vec=8, threads=128)
  float row_max[tl_softmax_layout_1::REGS];  // fragment [4]: replicated(blocked(vec=8, threads=128), dropped=[1])
  float row_sum[tl_softmax_layout_1::REGS];  // fragment [4]: replicated(blocked(vec=8, threads=128), dropped=[1])
  float tile_max[tl_softmax_layout_1::REGS];  // fragment [4]: replicated(blocked(vec=8, threads=128), dropped=[1])
  float tile_sum[tl_softmax_layout_1::REGS];  // fragment [4]: replicated(blocked(vec=8, threads=128), dropped=[1])
  float rcp_row_sum0[tl_softmax_layout_1::REGS];  // fragment [4]: replicated(blocked(vec=8, threads=128), dropped=[1])
  constexpr int TL_RED_STRIDE = 64;
  int tl_red_phase = 0;
  // 18: tiles = cdiv(N, BN)
#line 18 "examples/softmax.tl"
  int tiles = 0;
  tiles = (tl::floordiv<int>((N - 1), 1024) + 1);
  // 19: fill(row_max, -inf(f32))
#line 19 "examples/softmax.tl"
  #pragma unroll
  for (int tl_r = 0; tl_r < tl_softmax_layout_1::REGS; ++tl_r) row_max[tl_r] = (-__int_as_float(0x7f800000));
  // 20: clear(row_sum)
#line 20 "examples/softmax.tl"
  #pragma unroll
  for (int tl_r = 0; tl_r < tl_softmax_layout_1::REGS; ++tl_r) row_sum[tl_r] = 0.0f;
  // 21: for t in range(tiles):
#line 21 "examples/softmax.tl"
  for (int t = 0; t < tiles; t += 1) {
    // 22: copy(x[bx * BM, t * BN], row)
#line 22 "examples/softmax.tl"
    tl::copy_g2f<tl_softmax_layout_0>(row, x, N, M, N, (bx * 4), (t * 1024));
    // 23: for i, j in parallel(BM, BN):
#line 23 "examples/softmax.tl"
    // parallel (i, j) over [4, 1024]: blocked(vec=8, threads=128)
    #pragma unroll
    for (int tl_r = 0; tl_r < tl_softmax_layout_0::REGS; ++tl_r) {
      const int i = tl_softmax_layout_0::row(threadIdx.x, tl_r);
      const int j = tl_softmax_layout_0::col(threadIdx.x, tl_r);
      if (!tl_softmax_layout_0::valid(threadIdx.x, tl_r)) continue;
      // 24: row[i, j] = where(t * BN + j < N, row[i, j], -inf(f32))
#line 24 "examples/softmax.tl"
      row[tl_r] = ((((t * 1024) + j) < N) ? row[tl_r] : (-__int_as_float(0x7f800000)));
    }
    // 25: reduce_max(row, tile_max, dim=1)
#line 25 "examples/softmax.tl"
    {  // reduce_max(row -> tile_max, dim=1)
      float tl_part[tl_softmax_layout_1::REGS];
      tl::reduce_slots<tl::Op::max, tl_softmax_layout_0, tl_softmax_layout_1, 31u>(tl_part, row);
      tl_red_phase ^= 1;
      tl::reduce_warps_to_scratch<tl::Op::max, tl_softmax_layout_1, 128, 4, false>(reinterpret_cast<float*>(tl_smem + 0 + tl_red_phase * TL_RED_STRIDE), tl_part);
      tl::reduce_finish_fragment<tl::Op::max, true, tl_softmax_layout_1, 4, 4>(tile_max, reinterpret_cast<float*>(tl_smem + 0 + tl_red_phase * TL_RED_STRIDE));
    }
    // 26: for i in parallel(BM):
#line 26 "examples/softmax.tl"
    // parallel (i) over [4]: replicated(blocked(vec=8, threads=128), dropped=[1])
    #pragma unroll
    for (int tl_r = 0; tl_r < tl_softmax_layout_1::REGS; ++tl_r) {
      const int i = tl_softmax_layout_1::col(threadIdx.x, tl_r);
      if (!tl_softmax_layout_1::valid(threadIdx.x, tl_r)) continue;
      // 27: new_max = max(row_max[i], tile_max[i])
#line 27 "examples/softmax.tl"
      float new_max = 0.0f;
      new_max = fmaxf(row_max[tl_r], tile_max[tl_r]);
      // 28: row_sum[i] = row_sum[i] * exp(row_max[i] - new_max)
#line 28 "examples/softmax.tl"
      row_sum[tl_r] = (row_sum[tl_r] * tl::fast_exp2(((row_max[tl_r] - new_max) * 1.4426950408889634f)));
      // 29: row_max[i] = new_max
#line 29 "examples/softmax.tl"
      row_max[tl_r] = new_max;
    }
    // 30: for i, j in parallel(BM, BN):
#line 30 "examples/softmax.tl"
    // parallel (i, j) over [4, 1024]: blocked(vec=8, threads=128)
    #pragma unroll
    for (int tl_r = 0; tl_r < tl_softmax_layout_0::REGS; ++tl_r) {
      const int i = tl_softmax_layout_0::row(threadIdx.x, tl_r);
      const int j = tl_softmax_layout_0::col(threadIdx.x, tl_r);
      if (!tl_softmax_layout_0::valid(threadIdx.x, tl_r)) continue;
      // 31: row[i, j] = exp(row[i, j] - row_max[i])
#line 31 "examples/softmax.tl"
      row[tl_r] = tl::fast_exp2(((row[tl_r] - row_max[tl_softmax_layout_1::slot(tl_r)]) * 1.4426950408889634f));
    }
    // 32: reduce_sum(row, tile_sum, dim=1)
#line 32 "examples/softmax.tl"
    {  // reduce_sum(row -> tile_sum, dim=1)
      float tl_part[tl_softmax_layout_1::REGS];
      tl::reduce_slots<tl::Op::sum, tl_softmax_layout_0, tl_softmax_layout_1, 31u>(tl_part, row);
      tl_red_phase ^= 1;
      tl::reduce_warps_to_scratch<tl::Op::sum, tl_softmax_layout_1, 128, 4, false>(reinterpret_cast<float*>(tl_smem + 0 + tl_red_phase * TL_RED_STRIDE), tl_part);
      tl::reduce_finish_fragment<tl::Op::sum, true, tl_softmax_layout_1, 4, 4>(tile_sum, reinterpret_cast<float*>(tl_smem + 0 + tl_red_phase * TL_RED_STRIDE));
    }
    // 33: for i in parallel(BM):
#line 33 "examples/softmax.tl"
    // parallel (i) over [4]: replicated(blocked(vec=8, threads=128), dropped=[1])
    #pragma unroll
    for (int tl_r = 0; tl_r < tl_softmax_layout_1::REGS; ++tl_r) {
      const int i = tl_softmax_layout_1::col(threadIdx.x, tl_r);
      if (!tl_softmax_layout_1::valid(threadIdx.x, tl_r)) continue;
      // 34: row_sum[i] = row_sum[i] + tile_sum[i]
#line 34 "examples/softmax.tl"
      row_sum[tl_r] = (row_sum[tl_r] + tile_sum[tl_r]);
    }
  }
  // 35: for t in range(tiles):
#line 35 "examples/softmax.tl"
  for (int t = 0; t < tiles; t += 1) {
    // 36: if tiles > 1:
#line 36 "examples/softmax.tl"
    if ((tiles > 1)) {
      // 37: copy(x[bx * BM, t * BN], row)
#line 37 "examples/softmax.tl"
      tl::copy_g2f<tl_softmax_layout_0>(row, x, N, M, N, (bx * 4), (t * 1024));
      // 38: for i, j in parallel(BM, BN):
#line 38 "examples/softmax.tl"
      // parallel (i, j) over [4, 1024]: blocked(vec=8, threads=128)
      #pragma unroll
      for (int tl_r = 0; tl_r < tl_softmax_layout_0::REGS; ++tl_r) {
        const int i = tl_softmax_layout_0::row(threadIdx.x, tl_r);
        const int j = tl_softmax_layout_0::col(threadIdx.x, tl_r);
        if (!tl_softmax_layout_0::valid(threadIdx.x, tl_r)) continue;
        // 39: row[i, j] = exp(row[i, j] - row_max[i])
#line 39 "examples/softmax.tl"
        row[tl_r] = tl::fast_exp2(((row[tl_r] - row_max[tl_softmax_layout_1::slot(tl_r)]) * 1.4426950408889634f));
      }
    }
    // 41: row[i, j] = row[i, j] / row_sum[i]
#line 41 "examples/softmax.tl"
    // parallel (i) over [4]: replicated(blocked(vec=8, threads=128), dropped=[1])
    #pragma unroll
    for (int tl_r = 0; tl_r < tl_softmax_layout_1::REGS; ++tl_r) {
      const int i = tl_softmax_layout_1::col(threadIdx.x, tl_r);
      if (!tl_softmax_layout_1::valid(threadIdx.x, tl_r)) continue;
      rcp_row_sum0[tl_r] = (1.0f / row_sum[tl_r]);
    }
    // 40: for i, j in parallel(BM, BN):
#line 40 "examples/softmax.tl"
    // parallel (i, j) over [4, 1024]: blocked(vec=8, threads=128)
    // row -> y: stored a run at a time, as the loop finishes each
    const tl::FragmentStore<tl_softmax_layout_0, half> tl_store0(y, N, M, N, (bx * 4), (t * 1024));
    #pragma unroll
    for (int tl_r0 = 0; tl_r0 < tl_softmax_layout_0::REGS; tl_r0 += tl_softmax_layout_0::RUN) {
      if (!tl_softmax_layout_0::valid(threadIdx.x, tl_r0)) continue;  // a run is valid or not as a whole
      {  // the run's shared reads, one vector each
        const int i = tl_softmax_layout_0::row(threadIdx.x, tl_r0);
        (void)i;
        const int j = tl_softmax_layout_0::col(threadIdx.x, tl_r0);
        (void)j;
      }
      #pragma unroll
      for (int tl_e = 0; tl_e < tl_softmax_layout_0::RUN; ++tl_e) {
        const int tl_r = tl_r0 + tl_e;
        const int i = tl_softmax_layout_0::row(threadIdx.x, tl_r);
        (void)i;
        const int j = tl_softmax_layout_0::col(threadIdx.x, tl_r);
        (void)j;
        // 41: row[i, j] = row[i, j] / row_sum[i]
#line 41 "examples/softmax.tl"
        row[tl_r] = (row[tl_r] * rcp_row_sum0[tl_softmax_layout_1::slot(tl_r)]);
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
extern "C" cudaError_t launch_softmax(const half* x, half* y, int M, int N, cudaStream_t stream) {
  tl::HostGrid tl_g;
  const long long tl_extents[3] = {tl_g.extent(tl_g.add(tl_g.floordiv(tl_g.sub(static_cast<long long>(M), 1LL), 4LL), 1LL)), 1LL, 1LL};
  const long long tl_most[3] = {2147483647LL, 65535LL, 65535LL};
  if (tl_g.empty_despite_division()) return cudaSuccess;  // an extent of 0 beside one that divides by zero
  if (!tl_g.ok) return cudaErrorInvalidValue;
  if (!tl::HostGrid::fits(tl_extents, tl_most, 0)) return cudaErrorInvalidConfiguration;
  if (tl_extents[0] == 0 || tl_extents[1] == 0 || tl_extents[2] == 0) return cudaSuccess;  // an empty tensor
  const dim3 tl_grid(static_cast<unsigned>(tl_extents[0]), static_cast<unsigned>(tl_extents[1]), static_cast<unsigned>(tl_extents[2]));
  ::softmax<<<tl_grid, 128, 128, stream>>>(x, y, M, N);
  return cudaGetLastError();
}
#endif
