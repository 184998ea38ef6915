"""Issue #18, session 25 (helper C): the w4a16 decode kernels at M = 1 (N = K = 8192 g128) as
Nsight Compute sees them, to say what bounds each: std.gemm's matmul_w4a16_gemv and its split-K
tensor-core kernel (BM = 8, K steps of 512 on 2 stages, 4 parts, then splitk_reduce),
bench/w4a16_gemv_half2.tl's f16-pair gemv, and bench/w4a16_stream_probe.tl streaming the same
32 MiB with ~no work (the gemv's tiles).  Each is run and its output checked first (the w4a16
kernels against F.linear in f32 of the dequantized weight, the probe's sums exactly), then each
runs once between cudaProfilerStart / Stop, which `ncu --profile-from-start off` profiles:

    ncu --profile-from-start off --clock-control none --section ... python3 bench/w4a16_ncu.py
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import tlc  # noqa: E402


def main() -> int:
    import torch
    import torch.nn.functional as F

    from lowbit import dequantize_uint4_torch, w4a16_weight
    from tlc.timing import Checked, tolerance, verify

    N = K = 8192
    quant = tlc.load("std.quant", target="cuda")
    gemm = tlc.load("std.gemm", target="cuda")
    probe = tlc.load(str(ROOT / "bench/w4a16_stream_probe.tl"), target="cuda")
    h2 = tlc.load(str(ROOT / "bench/w4a16_gemv_half2.tl"), target="cuda").w4a16_gemv_half2
    W4, scales, zeros, q, _ = w4a16_weight(torch, quant, gemm, N, K, 128)
    deq = dequantize_uint4_torch(torch, q, scales.half().float(), zeros, K, 128).half()
    A = torch.randn(1, K, device="cuda").half()
    ref = F.linear(A.float(), deq.float())
    tol = tolerance("float16", ref, 8)
    C1, C2, C3 = (torch.empty(1, N, dtype=torch.float16, device="cuda") for _ in range(3))
    P = torch.empty(4, 1, N, dtype=torch.float32, device="cuda")
    out = torch.empty(1, N, dtype=torch.float32, device="cuda")
    pref = (W4.view(torch.int32) & 255).float().sum(dim=1)[None]
    gemv = gemm.matmul_w4a16_gemv.launcher(A, W4, scales, zeros, C1)
    half2 = h2.launcher(A, W4, scales, zeros, C2)
    sk = gemm.matmul_w4a16_splitk.launcher(A, W4, scales, zeros, P, BM=8, BK=512, stages=2)
    red = gemm.splitk_reduce.launcher(P, C3)
    st = probe.stream_w4.launcher(W4, out, KW=K // 8, TILED=0, BN=16, BKW=128, stages=4, THREADS=128)
    runs = {"gemv": (gemv, Checked(gemv, ref, out=C1, **tol)),
            "half2": (half2, Checked(half2, ref, out=C2, **tol)),
            "splitk+reduce": (lambda: (sk(), red()), Checked(lambda: (sk(), red()), ref, out=C3, **tol)),
            "probe": (st, Checked(st, pref, out=out, rtol=0.0, atol=0.0))}
    ok = True
    for name, (_, c) in runs.items():
        v = verify(c)
        print(f"{name}: {'ok' if v.ok else 'WRONG ' + v.why}", flush=True)
        ok &= v.ok
    if not ok:
        return 1
    for _ in range(3):
        for fn, _ in runs.values():
            fn()
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    for fn, _ in runs.values():
        fn()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
