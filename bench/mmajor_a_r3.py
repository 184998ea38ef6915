"""#19, session 24: std kernels whose gemm reads A transposed (trans_a) now run on wgmma on
sm_90a (A M-major, 493811a), where they ran on mma.sync: std.gemm's matmul_tn and std.conv's
conv2d_bwd_weight, each against PyTorch (cuBLAS / cuDNN) in the same process, outputs checked
first.  Run once with this checkout's tlc and once with the tlc before 493811a on PYTHONPATH
(bench/.old_r3: tlc, templates, stdlib of 493811a~1, untracked) to compare the two ratios.

    python bench/mmajor_a_r3.py [--label LABEL]
"""
import argparse
import sys

import tlc
from tlc.timing import Checked, compare_checked, tolerance


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--label", default="new")
    args = ap.parse_args()
    import torch

    print(f"{args.label}: tlc from {tlc.__file__}")
    g = torch.Generator(device="cuda").manual_seed(0)
    gemm = tlc.load("std.gemm", target="cuda")
    for dt in (torch.float16, torch.bfloat16):  # a ragged shape first (no multiple of a tile)
        a = torch.randn(333, 1000, device="cuda", dtype=dt, generator=g)
        b = torch.randn(333, 700, device="cuda", dtype=dt, generator=g)
        c = torch.full((1000, 700), float("nan"), device="cuda", dtype=dt)
        gemm.matmul_tn(a, b, c, T="f16" if dt == torch.float16 else "bf16")
        want = a.T.double() @ b.double()
        print(f"  matmul_tn 1000 x 700 x 333 {dt}: rel err {float((c.double() - want).abs().max() / want.abs().max()):.2e}")
    # matmul_tn: C = A.T @ B, A (K, M), B (K, N)
    M = N = K = 8192
    a = torch.randn(K, M, device="cuda", dtype=torch.float16, generator=g)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16, generator=g)
    c = torch.empty(M, N, device="cuda", dtype=torch.float16)
    ref = (a.T.float() @ b.float())
    tol = tolerance("float16", ref, 16)
    contenders = {"tlc": Checked(lambda: gemm.matmul_tn(a, b, c), ref, out=c, **tol),
                  "torch": Checked(lambda: a.T @ b, ref, **tol)}
    ms, ok = compare_checked(contenders, min_ms=300)
    flops = 2.0 * M * N * K
    for x in contenders:
        print(f"  matmul_tn 8192^3 {x:6}: " + (f"{ms[x]:.3f} ms {flops / ms[x] / 1e9:.1f} TFLOP/s" if ok[x].ok
                                               else f"wrong: {ok[x].why}"))
    if all(v.ok for v in ok.values()):
        print(f"  matmul_tn ratio tlc/torch: {ms['torch'] / ms['tlc']:.3f}")
    del a, b, c, ref
    # conv2d_bwd_weight: ResNet's 56 x 56 x 64 layer, 3 x 3, batch 32 (NHWC)
    Nb, H, W, C, F, KS = 32, 56, 56, 64, 64, 3
    x = torch.randn(Nb, H, W, C, device="cuda", dtype=torch.float16, generator=g)
    dy = torch.randn(Nb, H, W, F, device="cuda", dtype=torch.float16, generator=g)
    dw = torch.empty(F, KS, KS, C, device="cuda", dtype=torch.float16)
    nchw = lambda t: t.permute(0, 3, 1, 2)  # noqa: E731
    wshape = (F, C, KS, KS)
    ref = torch.nn.grad.conv2d_weight(nchw(x).float(), wshape, nchw(dy).float(), padding=1).permute(0, 2, 3, 1)
    conv = tlc.load("std.conv", target="cuda")
    tol = tolerance("float16", ref, 32)
    xc, dyc = nchw(x).contiguous(memory_format=torch.channels_last), nchw(dy).contiguous(memory_format=torch.channels_last)
    contenders = {"tlc": Checked(lambda: conv.conv2d_bwd_weight(dy, x, dw, S=1, P=1), ref, out=dw, **tol),
                  "cudnn": Checked(lambda: torch.nn.grad.conv2d_weight(xc, wshape, dyc, padding=1).permute(0, 2, 3, 1),
                                   ref, **tol)}
    ms, ok = compare_checked(contenders, min_ms=300)
    flops = 2.0 * Nb * H * W * C * F * KS * KS
    for x_ in contenders:
        print(f"  conv2d_bwd_weight 32x56x56x64 3x3 {x_:6}: " + (
            f"{ms[x_]:.3f} ms {flops / ms[x_] / 1e9:.1f} TFLOP/s" if ok[x_].ok else f"wrong: {ok[x_].why}"))
    if all(v.ok for v in ok.values()):
        print(f"  conv2d_bwd_weight ratio tlc/cudnn: {ms['cudnn'] / ms['tlc']:.3f}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
