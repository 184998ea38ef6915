"""#18, session 25 (helper B), round 1: the few-tile, long-K GEMMs on the H200 before a split-K
schedule goes into the compiler.  Each contender's output is checked first (tlc.timing), then
all of a group are timed alternately in this process against PyTorch (cuDNN / cuBLAS).

    python bench/splitk_r1.py bwdw     # std.conv's conv2d_bwd_weight (32 x 56 x 56 x 64, 3 x 3)
                                       # at its tiles and at 64 x 64 tiles (F = C = 64), SPLIT
    python bench/splitk_r1.py gemm     # std.gemm at M=N=512 K=16384, 1024^2 x 8192 (matmul now splits
                                       # K: schedule/split_k.py) and at the 1x1 row's GEMM (M=3136
                                       # N=2048 K=512): matmul's tiles, matmul_splitk
    PYTHONPATH=bench/.old_B python bench/splitk_r1.py gemm-old   # the few-tile rows with a tlc before it
"""
import sys
from pathlib import Path

import tlc
from tlc.timing import Checked, compare_checked, tolerance


def table(title, contenders, flops, min_ms):
    ms, ok = compare_checked(contenders, min_ms=min_ms)
    ref = next(iter(contenders))
    for name in contenders:
        if not ok[name].ok:
            print(f"  {title} {name:34}: wrong: {ok[name].why}", flush=True)
            continue
        r = f"{ms[ref] / ms[name]:.3f}x {ref}" if ok[ref].ok else ""
        print(f"  {title} {name:34}: {ms[name] * 1e3:8.1f} us {flops / ms[name] / 1e9:6.1f} TFLOP/s {r}", flush=True)


def bwdw(torch, g):
    Nb, H, W, C, F, KS = 32, 56, 56, 64, 64, 3
    x = torch.randn(Nb, H, W, C, device="cuda", dtype=torch.float16, generator=g)
    dy = torch.randn(Nb, H, W, F, device="cuda", dtype=torch.float16, generator=g)
    nchw = lambda t: t.permute(0, 3, 1, 2)  # noqa: E731
    wshape = (F, C, KS, KS)
    ref = torch.nn.grad.conv2d_weight(nchw(x).float(), wshape, nchw(dy).float(), padding=1).permute(0, 2, 3, 1)
    conv = tlc.load("std.conv", target="cuda")
    tol = tolerance("float16", ref, 32)
    xc, dyc = nchw(x).contiguous(memory_format=torch.channels_last), nchw(dy).contiguous(memory_format=torch.channels_last)
    contenders = {"cudnn": Checked(lambda: torch.nn.grad.conv2d_weight(xc, wshape, dyc, padding=1).permute(0, 2, 3, 1),
                                   ref, **tol)}
    variants = {"tlc default (128x128, SPLIT 16)": {},
                "64x64 T128 SPLIT 44": dict(BM=64, BN=64, THREADS=128, SPLIT=44, stages=4),
                "64x64 T128 SPLIT 44 st6": dict(BM=64, BN=64, THREADS=128, SPLIT=44, stages=6)}
    for name, kw in variants.items():
        dw = torch.empty(F, KS, KS, C, device="cuda", dtype=torch.float16)
        contenders[name] = Checked(lambda dw=dw, kw=kw: conv.conv2d_bwd_weight(dy, x, dw, S=1, P=1, **kw), ref, out=dw, **tol)
    # one grid of output tiles, K split by the compiler (schedule/split_k.py): no SPLIT, no second grid
    one = tlc.load(str(Path(__file__).parent / "B_bwdw_split.tl"), target="cuda")
    for name, kw in {"split-K by the compiler 64x64 st4": {}, "split-K by the compiler 64x64 st6": dict(stages=6)}.items():
        dw = torch.empty(F, KS, KS, C, device="cuda", dtype=torch.float16)
        run = lambda dw=dw, kw=kw: one.conv2d_bwd_weight(dy, x, dw, S=1, P=1, **kw)  # noqa: E731
        contenders[name] = Checked(run, ref, out=dw, **tol)
        run()
        first = dw.clone()
        same = True
        for _ in range(3):
            run()
            same = same and bool(torch.equal(dw, first))
        print(f"  bwd_weight {name}: three more runs {'bit-identical' if same else 'DIFFER'}", flush=True)
    table("bwd_weight 32x56x56x64 3x3", contenders, 2.0 * Nb * H * W * C * F * KS * KS, 60)


def gemm(torch, g, old=False):
    lib = tlc.load("std.gemm", target="cuda")
    shapes = {
        (512, 512, 16384): {"matmul default": ("mm", {}),
                            "matmul 128x128 st4": ("mm", dict(BM=128, BN=128, stages=4)),
                            "matmul_splitk S=8 + reduce": ("sk", dict(S=8))},
        (1024, 1024, 8192): {"matmul default": ("mm", {}),
                             "matmul 128x128 st4": ("mm", dict(BM=128, BN=128, stages=4))},
        (3136, 2048, 512): {"matmul default (128x256)": ("mm", {}),
                            "matmul 128x128 st4": ("mm", dict(BM=128, BN=128, stages=4)),
                            "matmul 64x256 st4": ("mm", dict(BM=64, BN=256, stages=4))},
    }
    if old:  # the tlc before split-K: the few-tile shapes only
        shapes = {k: {n: v for n, v in x.items() if v[0] == "mm"} for k, x in shapes.items() if k[0] < 3136}
    for (M, N, K), variants in shapes.items():
        a = torch.randn(M, K, device="cuda", dtype=torch.float16, generator=g)
        b = torch.randn(K, N, device="cuda", dtype=torch.float16, generator=g)
        ref = a.float() @ b.float()
        tol = tolerance("float16", ref, 16)
        contenders = {"cublas": Checked(lambda a=a, b=b: a @ b, ref, **tol)}
        for name, (how, kw) in variants.items():
            c = torch.empty(M, N, device="cuda", dtype=torch.float16)
            if how == "mm":
                contenders[name] = Checked(lambda c=c, kw=kw: lib.matmul(a, b, c, **kw), ref, out=c, **tol)
                if not old:  # split-K's sums in a fixed order: the same bits every run
                    lib.matmul(a, b, c, **kw)
                    first = c.clone()
                    same = True
                    for _ in range(3):
                        lib.matmul(a, b, c, **kw)
                        same = same and bool(torch.equal(c, first))
                    print(f"  gemm {M}x{N}x{K} {name}: three more runs {'bit-identical' if same else 'DIFFER'}", flush=True)
            else:
                P = torch.empty(kw["S"], M, N, device="cuda", dtype=torch.float32)

                def both(c=c, P=P):
                    lib.matmul_splitk(a, b, P)
                    lib.splitk_reduce(P, c)
                contenders[name] = Checked(both, ref, out=c, **tol)
        table(f"gemm {M}x{N}x{K}", contenders, 2.0 * M * N * K, 40)


def main():
    import torch
    g = torch.Generator(device="cuda").manual_seed(0)
    print(f"tlc from {tlc.__file__}", flush=True)
    if sys.argv[1] == "gemm-old":
        gemm(torch, g, old=True)
    else:
        {"bwdw": bwdw, "gemm": gemm}[sys.argv[1]](torch, g)


if __name__ == "__main__":
    main()
