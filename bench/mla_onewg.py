"""A hand-written prototype, not tlc's output: mla_decode's consumer loop with the scores of a
page on ONE warpgroup (m64n64 over K = 576, its rows whole in its warps: the row max and sum by
quad shuffles, no exchange between warpgroups), P and the rescale factors published through
shared memory, both warpgroups then rescaling and accumulating their 256 columns of O as now.

It answers, before a schedule pass is built for it, what giving the scores to one warpgroup is
worth: the product's B operand is read once (each instruction m64n64k16 reads 2 KB of Q and 2
KB of K in 32 cycles: 128 B/clk, shared memory's rate, where the two m64n32 read 2 + 1 KB in 16
each, half again over it), and the softmax has no barrier between the warpgroups but the one
that publishes P.  bench/mla_variants.py's `onewg` row: tlc's generated kernel (the grid, the
producer, the ring and the tensor map unchanged), the consumers' part replaced by `consumers()`
below when NVRTC compiles it (tlc.runtime.built_source, patched in that process only).

Barriers: 5 (256 threads): P and the factors of page kb stored by warpgroup 0 before both read
them; 6 (256): warpgroup 1 arrives as each iteration starts (its P @ V of the previous page has
completed), warpgroup 0 waits before it overwrites P and the factors.  SPLITS = 1 only.
"""
from __future__ import annotations

import re

N64 = """
// tlc's consumers' fragments and reduction scratch, declared at the kernel's top, are unused here
#pragma nv_diag_suppress 177, 550
struct tl_proto_wgmma_n64_bf16 {
  static constexpr int N = 64;
  static constexpr int REGS = 32;
  static constexpr int K = 16;
  using Acc = float;
  __device__ static __forceinline__ void run(Acc* d, unsigned long long a, unsigned long long b) {
    asm volatile(
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
        "%32, %33, 1, 1, 1, 0, 0;\\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "l"(a), "l"(b)
        : "memory");
  }
};
using tl_proto_s = tl::MmaAcc<64, 64, 4, 1, false, false>;
"""

# Both prototypes open alike: warpgroup 0 computes the page's m64n64 scores, masks them and
# takes its two rows' maxima; they differ in when the factors and P are published.
SCORES = """
    tl::setmaxnreg_inc<232>();
    const int tl_wg = threadIdx.x / 128, tl_lane = threadIdx.x % 32;
    float* tl_fac = reinterpret_cast<float*>(tl_smem + RED);  // 64 factors, then 64 row sums
    float sc[tl_proto_s::REGS];
    float m_run[2] = {-__int_as_float(0x7f800000), -__int_as_float(0x7f800000)}, l_run[2] = {0.0f, 0.0f};
    int tl_it = 0;
    for (int tl_k = 0; tl_k < tl_n; ++tl_k, ++tl_it) {
      const int tl_stage = tl_it % 2;
      const int kb = tl_k;
      if (tl_wg == 1) tl::bar_arrive_named(6, 256);  // its P @ V of the last page is done
      tl::mbar_wait(tl_full + tl_stage, (tl_it / 2) & 1);
      if (tl_wg == 0) {
        #pragma unroll
        for (int r = 0; r < tl_proto_s::REGS; ++r) sc[r] = 0.0f;
        tl::fence_registers<32>(sc);
        tl::gemm_wgmma_issue<tl_proto_wgmma_n64_bf16, __nv_bfloat16, 512, 64, 64, true, __nv_bfloat16, 1, 1>(q_tile, (kv_tile + (tl_stage) * 32768), sc);
        tl::fence_registers<32>(sc);
        tl::gemm_wgmma_issue<tl_proto_wgmma_n64_bf16, __nv_bfloat16, 64, 64, 64, true, __nv_bfloat16, 1, 1>(qr_tile, (kr_tile + (tl_stage) * 4096), sc);
        tl::wgmma_wait<0>();
        tl::fence_registers<32>(sc);
        if (first + kb * 64 + 64 > seen) {
          #pragma unroll
          for (int r = 0; r < tl_proto_s::REGS; ++r)
            sc[r] = (first + kb * 64 + tl_proto_s::col(threadIdx.x, r) < seen) ? sc[r] : -__int_as_float(0x7f800000);
        }
        float fac[2], mlog[2];
        #pragma unroll
        for (int h = 0; h < 2; ++h) {  // the thread's two rows: registers r with (r % 4) / 2 == h
          float mx = -__int_as_float(0x7f800000);
          #pragma unroll
          for (int r = 2 * h; r < tl_proto_s::REGS; r += 4) mx = fmaxf(mx, fmaxf(sc[r], sc[r + 1]));
          mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
          mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
          const float m_new = fmaxf(m_run[h], mx);
          mlog[h] = m_new != -__int_as_float(0x7f800000) ? m_new * scale_log2 : 0.0f;
          fac[h] = tl::fast_exp2(m_run[h] * scale_log2 - mlog[h]);
          m_run[h] = m_new;
        }
"""

CONSUMERS = SCORES + """\
        float sum[2] = {0.0f, 0.0f};
        #pragma unroll
        for (int r = 0; r < tl_proto_s::REGS; ++r) {
          sc[r] = tl::fast_exp2(sc[r] * scale_log2 - mlog[(r % 4) / 2]);
          sum[(r % 4) / 2] += sc[r];
        }
        #pragma unroll
        for (int h = 0; h < 2; ++h) {
          sum[h] += __shfl_xor_sync(0xffffffffu, sum[h], 1);
          sum[h] += __shfl_xor_sync(0xffffffffu, sum[h], 2);
          l_run[h] = l_run[h] * fac[h] + sum[h];
        }
        tl::bar_sync_named(6, 256);  // warpgroup 1 no longer reads the last page's P and factors
        tl::copy_f2s<tl_proto_s, float, __nv_bfloat16, 64, 64, 0, 128>(probs, sc);
        if (tl_lane % 4 == 0) {
          tl_fac[tl_proto_s::row(threadIdx.x, 0)] = fac[0];
          tl_fac[tl_proto_s::row(threadIdx.x, 2)] = fac[1];
        }
        tl::fence_proxy_async();
      }
      tl::bar_sync_named(5, 256);  // P and the factors stored
      {
        float f[LK::REGS];
        #pragma unroll
        for (int q = 0; q < LK::REGS; ++q) f[q] = tl_fac[LK::col(threadIdx.x, q)];  // slot q's row
        #pragma unroll
        for (int r = 0; r < LACC::REGS; ++r) acc[r] *= f[LK::slot(r)];
      }
      tl::fence_registers<128>(acc);
      tl::gemm_wgmma_issue<WG256, __nv_bfloat16, 64, 64, 64, false, __nv_bfloat16, 1, 2>(probs, (kv_tile + (tl_stage) * 32768), acc);
      tl::wgmma_wait<0>();
      tl::fence_registers<128>(acc);
      if (threadIdx.x % 32 == 0) tl::mbar_arrive(tl_empty + tl_stage);
    }
    __syncthreads();  // every consumer is past its last wait
    if (tl_wg == 0 && tl_lane % 4 == 0) {
      tl_fac[64 + tl_proto_s::row(threadIdx.x, 0)] = l_run[0];
      tl_fac[64 + tl_proto_s::row(threadIdx.x, 2)] = l_run[1];
      #pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int i = tl_proto_s::row(threadIdx.x, 2 * h);
        if (h0 + i < H && b < B && s < SQ)
          LSE[((static_cast<long long>(b) * H + (h0 + i)) * SQ + s)] =
              l_run[h] > 0.0f ? m_run[h] * scale + logf(l_run[h]) : -__int_as_float(0x7f800000);
      }
    }
    __syncthreads();
    #pragma unroll
    for (int r = 0; r < LACC::REGS; ++r) {
      const float l = tl_fac[64 + LACC::row(threadIdx.x, r)];
      acc[r] = l > 0.0f ? tl::fast_div(acc[r], l) : 0.0f;
    }
  }
  tl::copy_f2g<LACC>((O + (static_cast<long long>(b) * SQ + s) * static_cast<long long>(H) * static_cast<long long>(512)), acc, 512, ((b >= 0 && b < B && s >= 0 && s < SQ) ? H : 0), 512, h0, 0);
}
"""


CONSUMERS_EARLY = SCORES + """\
        tl::bar_sync_named(6, 256);  // warpgroup 1 no longer reads the last page's P and factors
        if (tl_lane % 4 == 0) {
          tl_fac[tl_proto_s::row(threadIdx.x, 0)] = fac[0];
          tl_fac[tl_proto_s::row(threadIdx.x, 2)] = fac[1];
        }
        __syncwarp();
        tl::bar_arrive_named(7, 256);  // the factors: warpgroup 1 rescales while this one exponentiates
        float sum[2] = {0.0f, 0.0f};
        #pragma unroll
        for (int r = 0; r < tl_proto_s::REGS; ++r) {
          sc[r] = tl::fast_exp2(sc[r] * scale_log2 - mlog[(r % 4) / 2]);
          sum[(r % 4) / 2] += sc[r];
        }
        #pragma unroll
        for (int h = 0; h < 2; ++h) {
          sum[h] += __shfl_xor_sync(0xffffffffu, sum[h], 1);
          sum[h] += __shfl_xor_sync(0xffffffffu, sum[h], 2);
          l_run[h] = l_run[h] * fac[h] + sum[h];
        }
        tl::copy_f2s<tl_proto_s, float, __nv_bfloat16, 64, 64, 0, 128>(probs, sc);
        tl::fence_proxy_async();
      } else {
        tl::bar_sync_named(7, 256);  // the factors stored
        {
          float f[LK::REGS];
          #pragma unroll
          for (int q = 0; q < LK::REGS; ++q) f[q] = tl_fac[LK::col(threadIdx.x, q)];  // slot q's row
          #pragma unroll
          for (int r = 0; r < LACC::REGS; ++r) acc[r] *= f[LK::slot(r)];
        }
      }
      tl::bar_sync_named(5, 256);  // P stored: warpgroup 1 issues P @ V at once, warpgroup 0 rescales first
      if (tl_wg == 0) {
        float f[LK::REGS];
        #pragma unroll
        for (int q = 0; q < LK::REGS; ++q) f[q] = tl_fac[LK::col(threadIdx.x, q)];  // slot q's row
        #pragma unroll
        for (int r = 0; r < LACC::REGS; ++r) acc[r] *= f[LK::slot(r)];
      }
      tl::fence_registers<128>(acc);
      tl::gemm_wgmma_issue<WG256, __nv_bfloat16, 64, 64, 64, false, __nv_bfloat16, 1, 2>(probs, (kv_tile + (tl_stage) * 32768), acc);
      tl::wgmma_wait<0>();
      tl::fence_registers<128>(acc);
      if (threadIdx.x % 32 == 0) tl::mbar_arrive(tl_empty + tl_stage);
    }
    __syncthreads();  // every consumer is past its last wait
    if (tl_wg == 0 && tl_lane % 4 == 0) {
      tl_fac[64 + tl_proto_s::row(threadIdx.x, 0)] = l_run[0];
      tl_fac[64 + tl_proto_s::row(threadIdx.x, 2)] = l_run[1];
      #pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int i = tl_proto_s::row(threadIdx.x, 2 * h);
        if (h0 + i < H && b < B && s < SQ)
          LSE[((static_cast<long long>(b) * H + (h0 + i)) * SQ + s)] =
              l_run[h] > 0.0f ? m_run[h] * scale + logf(l_run[h]) : -__int_as_float(0x7f800000);
      }
    }
    __syncthreads();
    #pragma unroll
    for (int r = 0; r < LACC::REGS; ++r) {
      const float l = tl_fac[64 + LACC::row(threadIdx.x, r)];
      acc[r] = l > 0.0f ? tl::fast_div(acc[r], l) : 0.0f;
    }
  }
  tl::copy_f2g<LACC>((O + (static_cast<long long>(b) * SQ + s) * static_cast<long long>(H) * static_cast<long long>(512)), acc, 512, ((b >= 0 && b < B && s >= 0 && s < SQ) ? H : 0), 512, h0, 0);
}
"""


# CONSUMERS with warpgroup 1 syncing at barrier 6 (where warpgroup 0 does, before P's store)
# rather than arriving at each iteration's top: the kind of barrier the schedule emitted before
# WarpSpecialization.arrivals (session 25, round 2's onewgsync)
_ARRIVE = "      if (tl_wg == 1) tl::bar_arrive_named(6, 256);  // its P @ V of the last page is done\n"
_P_STORED = "      }\n      tl::bar_sync_named(5, 256);  // P and the factors stored\n"
CONSUMERS_SYNC = CONSUMERS.replace(_ARRIVE, "").replace(
    _P_STORED, "      } else {\n        tl::bar_sync_named(6, 256);  // both sync at 6\n      }\n" + _P_STORED[8:])


def consumers(source: str, prefix: str, early: bool = False, sync: bool = False) -> str:
    """`source` (tlc's mla_decode grid 0 at DK = 576, DV = 512, PAGE = 64, bf16, SPLITS = 1) with
    its consumers' part from `tl::setmaxnreg_inc` to the kernel's end replaced by CONSUMERS (or
    CONSUMERS_EARLY: the factors published at barrier 7 before the exponentials, so that
    warpgroup 1 rescales its accumulator while warpgroup 0 computes P and issues P @ V as soon as
    P is stored, warpgroup 0 rescaling its own under that product)."""
    red = re.search(r"tl_smem \+ (\d+) \+ tl_red_phase \* TL_RED_STRIDE", source)
    assert red, "no reduction scratch in the source"
    start = source.index("    tl::setmaxnreg_inc<232>();")
    body = ((CONSUMERS_EARLY if early else CONSUMERS_SYNC if sync else CONSUMERS).replace("RED", red.group(1)).replace("LACC", f"{prefix}_layout_1")
            .replace("LK", f"{prefix}_layout_3").replace("WG256", f"{prefix}_wgmma_n256_bf16_nmajor"))
    kernel = source.index('extern "C" __global__')
    return source[:kernel] + N64 + source[kernel:start] + body


def patch_runtime(kernel_name: str, early_name: str | None = None, sync_name: str | None = None):
    """Make the runtime compile `kernel_name`'s grid 0 as the prototype, `early_name`'s as the
    early one and `sync_name`'s as CONSUMERS_SYNC (this process only)."""
    import tlc.runtime as rt

    original = rt.built_source

    def built(generated, *args, **kwargs):  # runtime.built_source's arguments, whatever they are now
        text = original(generated, *args, **kwargs)
        if generated.name in (f"{kernel_name}_grid0", f"{early_name}_grid0", f"{sync_name}_grid0"):
            return consumers(text, f"tl_{generated.name}", early=generated.name == f"{early_name}_grid0",
                             sync=generated.name == f"{sync_name}_grid0")
        return text
    rt.built_source = built
