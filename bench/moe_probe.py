"""What bounds std.moe's moe_permute (0.63 of copy on the H200) and expert_histogram (0.76)?
Hand-written CUDA probes of the same work at bench/ops.py's sizes, one process, timed by
tlc.timing.compare beside the std kernels and PyTorch; every output checked first (the rows
exactly against torch's gather, the counts against torch.bincount).

moe_permute: y[p] = x[sorted_ids[p] // 8] (x 4096 x 4096 f16 = 32 MiB, y 36800 rows = 288 MiB):
each row of x is read 8 times.  Does y's stream evict x from the L2?  Variants: plain (16-byte
loads and stores, as std's), y stored with st.global.cs (evict-first), x loaded with an L2
evict_last policy, both.
expert_histogram: 2^26 i64 ids of 64 experts drawn as bench/ops.py draws them (skewed): the
loads alone (a sum, no histogram), shared atomics as std's, and the same with each warp's equal
ids added once (__match_any_sync, the leader adds the popcount).

    python3 bench/moe_probe.py [--min-ms 20]
"""
import argparse
import sys
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import tlc  # noqa: E402
from tlc.timing import compare  # noqa: E402

SRC = r"""
typedef unsigned short half;  // f16 bits: the probes only move them
struct __align__(16) V { unsigned a, b, c, d; };

__device__ __forceinline__ V ld_plain(const V* p) {
  const uint4 u = __ldg(reinterpret_cast<const uint4*>(p));
  return V{u.x, u.y, u.z, u.w};
}
__device__ __forceinline__ V ld_last(const V* p, unsigned long long pol) {
  V v;
  asm volatile("ld.global.nc.L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], %5;"
               : "=r"(v.a), "=r"(v.b), "=r"(v.c), "=r"(v.d) : "l"(p), "l"(pol));
  return v;
}
__device__ __forceinline__ void st_plain(V* p, V v) { *p = v; }
__device__ __forceinline__ void st_cs(V* p, V v) {
  asm volatile("st.global.cs.v4.u32 [%0], {%1,%2,%3,%4};" :: "l"(p), "r"(v.a), "r"(v.b), "r"(v.c), "r"(v.d) : "memory");
}

// one block a (row p, BD = 4096 columns): 128 threads, 4 vectors a thread
template <int MODE>
__device__ void permute(const half* x, const int* sorted_ids, half* y, int M, int D, int topk) {
  const int chunks = D / 4096;
  const int p = blockIdx.x / chunks, c0 = blockIdx.x % chunks * 4096;
  const int f = sorted_ids[p];
  const bool in = f >= 0 && f < M * topk;
  const V* src = reinterpret_cast<const V*>(x + (long long)(in ? f / topk : 0) * D + c0);
  V* dst = reinterpret_cast<V*>(y + (long long)p * D + c0);
  unsigned long long pol = 0;
  if (MODE & 2) asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(pol));
  V v[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const int i = k * 128 + threadIdx.x;
    v[k] = !in ? V{0, 0, 0, 0} : (MODE & 2) ? ld_last(src + i, pol) : ld_plain(src + i);
  }
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const int i = k * 128 + threadIdx.x;
    if (MODE & 1) st_cs(dst + i, v[k]); else st_plain(dst + i, v[k]);
  }
}
extern "C" __global__ void __launch_bounds__(128) permute_plain(const half* x, const int* s, half* y, int M, int D, int k) { permute<0>(x, s, y, M, D, k); }
extern "C" __global__ void __launch_bounds__(128) permute_cs(const half* x, const int* s, half* y, int M, int D, int k) { permute<1>(x, s, y, M, D, k); }
extern "C" __global__ void __launch_bounds__(128) permute_last(const half* x, const int* s, half* y, int M, int D, int k) { permute<2>(x, s, y, M, D, k); }
extern "C" __global__ void __launch_bounds__(128) permute_both(const half* x, const int* s, half* y, int M, int D, int k) { permute<3>(x, s, y, M, D, k); }

// 512 threads, 32768 ids a block, parts of 2048 (4 ids a thread, two 16-byte loads)
template <int MODE>
__device__ void hist(const long long* ids, int* counts, long long n, int E) {
  __shared__ int h[256];
  for (int e = threadIdx.x; e < 256; e += 512) h[e] = 0;
  __syncthreads();
  long long sum = 0;
  const long long base = (long long)blockIdx.x * 32768;
  for (int k = 0; k < 16; ++k) {
    long long v[4];
    const long long at = base + k * 2048 + threadIdx.x * 2;
#pragma unroll
    for (int h2 = 0; h2 < 2; ++h2) {
      const long long a = at + h2 * 1024;
      if (a + 1 < n) {
        const longlong2 w = __ldg(reinterpret_cast<const longlong2*>(ids + a));
        v[2 * h2] = w.x; v[2 * h2 + 1] = w.y;
      } else {
        v[2 * h2] = a < n ? ids[a] : -1; v[2 * h2 + 1] = -1;
      }
    }
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const long long id = v[q];
      if (MODE == 0) { sum += id; continue; }
      const bool ok = id >= 0 && id < E;
      if (MODE == 1) { if (ok) atomicAdd(&h[id], 1); continue; }
      // MODE 2: each warp's equal ids added once by their lowest lane
      const unsigned act = __ballot_sync(0xffffffffu, ok);
      if (ok) {
        const unsigned same = __match_any_sync(act, (int)id);
        if ((threadIdx.x & 31) == __ffs(same) - 1) atomicAdd(&h[id], __popc(same));
      }
    }
  }
  if (MODE == 0) { if (sum == -12345) counts[0] = 1; return; }
  __syncthreads();
  for (int e = threadIdx.x; e < E; e += 512) if (h[e]) atomicAdd(&counts[e], h[e]);
}
extern "C" __global__ void __launch_bounds__(512) hist_loads(const long long* i, int* c, long long n, int E) { hist<0>(i, c, n, E); }
extern "C" __global__ void __launch_bounds__(512) hist_atomics(const long long* i, int* c, long long n, int E) { hist<1>(i, c, n, E); }
extern "C" __global__ void __launch_bounds__(512) hist_match(const long long* i, int* c, long long n, int E) { hist<2>(i, c, n, E); }
"""


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--min-ms", type=float, default=20.0)
    args = ap.parse_args(argv)
    import cupy as cp

    mod = cp.RawModule(code=SRC, options=("-std=c++17",))
    copy_src = torch.empty(1 << 29, dtype=torch.uint8, device="cuda")
    copy_dst = torch.empty_like(copy_src)
    copy_ms = compare({"copy": lambda: copy_dst.copy_(copy_src)}, min_ms=args.min_ms)["copy"]
    copy_gbs = 2 * copy_src.numel() / copy_ms / 1e6
    print(f"copy {copy_gbs:.0f} GB/s")
    del copy_src, copy_dst

    def report(name, nbytes, ms, torch_ms):
        gbs = nbytes / ms / 1e6
        print(f"{name:<24} {ms * 1e3:8.1f} us {gbs:7.0f} GB/s  of copy {gbs / copy_gbs:.2f}  vs torch {torch_ms / ms:.2f}x")

    # ---- moe_permute: bench/ops.py's inputs
    import os
    os.environ.setdefault("TLC_OPS_TABLES", str(ROOT / "tests" / "stdlib"))
    from tlc.benchmarks.ops import LARGE
    from tlc.benchmarks.ops_rows import all_rows, device_inputs

    rows = {r.op: r for r in all_rows() if r.module == "std.moe"}
    row = rows["moe_permute"]
    x, s = device_inputs(row, LARGE)
    K = row.scalars[0]
    M, D = x.shape
    P = s.numel()
    want = row.torch(x, s, K)
    moe = tlc.load("std.moe", target="cuda")
    y = torch.empty(P, D, dtype=x.dtype, device="cuda")
    contenders = {"torch": lambda: row.torch(x, s, K)}
    std_launch = moe.moe_permute.launcher(x, s, y, K, **row.tlc_constants())
    contenders["std moe_permute"] = std_launch
    outs = {"std moe_permute": y}
    for v in ("plain", "cs", "last", "both"):
        out = torch.empty_like(y)
        fn = mod.get_function(f"permute_{v}")
        launch = (lambda fn=fn, out=out: fn((P * (D // 4096),), (128,), (x.data_ptr(), s.data_ptr(), out.data_ptr(),
                                                                          np.int32(M), np.int32(D), np.int32(K))))
        contenders[f"probe {v}"] = launch
        outs[f"probe {v}"] = out
    for name, out in outs.items():
        out.fill_(float("nan"))
        contenders[name]()
        torch.cuda.synchronize()
        assert torch.equal(out, want), f"{name}: wrong rows"
    ms = compare(contenders, min_ms=args.min_ms)
    nbytes = x.numel() * 2 + s.numel() * 4 + y.numel() * 2
    print(f"moe_permute: x {tuple(x.shape)} f16, {P} rows of y, {nbytes / 2**20:.0f} MiB counted")
    for name in contenders:
        report(name, nbytes, ms[name], ms["torch"])
    del x, s, y, outs, want
    torch.cuda.empty_cache()

    # ---- expert_histogram
    row = rows["expert_histogram"]
    (ids,) = device_inputs(row, LARGE)
    E = 64
    want = torch.bincount(ids, minlength=E).int()
    counts = {n: torch.zeros(E, dtype=torch.int32, device="cuda") for n in ("std", "atomics", "match", "loads")}
    n = ids.numel()
    blocks = (n + 32767) // 32768

    def probe(kind, out):
        fn = mod.get_function(f"hist_{kind}")
        def run():
            out.zero_()
            fn((blocks,), (512,), (ids.data_ptr(), out.data_ptr(), np.int64(n), np.int32(E)))
        return run

    std_launch = moe.expert_histogram.launcher(ids, counts["std"], **row.tlc_constants())

    def std_run():
        counts["std"].zero_()
        std_launch()
    contenders = {"torch": lambda: torch.bincount(ids, minlength=E), "std expert_histogram": std_run,
                  "probe atomics": probe("atomics", counts["atomics"]), "probe match": probe("match", counts["match"]),
                  "probe loads only": probe("loads", counts["loads"])}
    for name, out in (("std expert_histogram", counts["std"]), ("probe atomics", counts["atomics"]),
                      ("probe match", counts["match"])):
        contenders[name]()
        torch.cuda.synchronize()
        assert torch.equal(out, want), f"{name}: wrong counts"
    ms = compare(contenders, min_ms=args.min_ms)
    share = (want.max().item() / n)
    print(f"expert_histogram: {n} i64 ids, the largest expert {share:.2f} of them")
    for name in contenders:
        report(name, ids.numel() * 8 + E * 4, ms[name], ms["torch"])


if __name__ == "__main__":
    main()
