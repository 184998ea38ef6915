"""#18, session 25 (helper B), round 2: split-K as a schedule decision (bf13d8c, ab35c7a), each
contender against PyTorch (cuBLAS / cuDNN) in one process, outputs checked first (tlc.timing).

    python bench/splitk_r2.py few      # std.gemm's matmul / matmul_nt at few output tiles: the
                                       # default 128 x 256 against 128 x 128 on 4 stages (a
                                       # config.json rule for small M, N?), 512^2 .. 2048^2
    python bench/splitk_r2.py regress [--label L]   # where nothing splits (4096^3, 8192^3) and a
                                       # decode step that now splits (matmul_skinny M=64 N=K=4096:
                                       # 2 parts; N=K=8192: none); run with the tlc before split-K
                                       # on PYTHONPATH (bench/.old_B) to compare the ratios
    PYTHONPATH=bench/.new_B python bench/splitk_r2.py spread   # the fixup shared out: every part adds
                                       # a share of the tile's slots where every unit is resident
                                       # (bench/.new_B's tlc), bit-identity over three reruns
    python bench/splitk_r2.py bwdw     # std.conv's conv2d_bwd_weight at ResNet's 3 x 3 layers,
                                       # batch 32: the defaults (config.json) and SPLIT 1 variants
"""
import sys

import tlc
from tlc.timing import Checked, compare_checked, tolerance


def table(title, contenders, flops, min_ms, nbytes=None):
    ms, ok = compare_checked(contenders, min_ms=min_ms)
    ref = next(iter(contenders))
    for name in contenders:
        if not ok[name].ok:
            print(f"  {title} {name:34}: wrong: {ok[name].why}", flush=True)
            continue
        r = f"{ms[ref] / ms[name]:.3f}x {ref}" if ok[ref].ok else ""
        extra = f" {nbytes / ms[name] / 1e6:7.1f} GB/s" if nbytes else ""
        print(f"  {title} {name:34}: {ms[name] * 1e3:9.1f} us {flops / ms[name] / 1e9:6.1f} TFLOP/s{extra} {r}", flush=True)


def few(torch, g):
    lib = tlc.load("std.gemm", target="cuda")
    small = dict(BM=128, BN=128, stages=4)
    for M, N, K in [(512, 512, 16384), (1024, 1024, 8192), (2048, 2048, 4096), (1024, 1024, 1024), (768, 3072, 4096)]:
        a = torch.randn(M, K, device="cuda", dtype=torch.float16, generator=g)
        b = torch.randn(K, N, device="cuda", dtype=torch.float16, generator=g)
        bt = b.T.contiguous()
        ref = a.float() @ b.float()
        tol = tolerance("float16", ref, 16)
        c = [torch.empty(M, N, device="cuda", dtype=torch.float16) for _ in range(4)]
        table(f"{M}x{N}x{K}", {"cublas": Checked(lambda: a @ b, ref, **tol),
                               "matmul 128x256": Checked(lambda: lib.matmul(a, b, c[0]), ref, out=c[0], **tol),
                               "matmul 128x128 st4": Checked(lambda: lib.matmul(a, b, c[1], **small), ref, out=c[1], **tol),
                               "matmul_nt 128x256": Checked(lambda: lib.matmul_nt(a, bt, c[2]), ref, out=c[2], **tol),
                               "matmul_nt 128x128 st4": Checked(lambda: lib.matmul_nt(a, bt, c[3], **small), ref, out=c[3],
                                                                **tol)},
              2.0 * M * N * K, 40)
        del a, b, bt, c, ref


def spread(torch, g):
    lib = tlc.load("std.gemm", target="cuda")
    small = dict(BM=128, BN=128, stages=4)
    for M, N, K in [(512, 512, 16384), (1024, 1024, 8192)]:
        a = torch.randn(M, K, device="cuda", dtype=torch.float16, generator=g)
        b = torch.randn(K, N, device="cuda", dtype=torch.float16, generator=g)
        ref = a.float() @ b.float()
        tol = tolerance("float16", ref, 16)
        c = [torch.empty(M, N, device="cuda", dtype=torch.float16) for _ in range(2)]
        for i, kw in enumerate(({}, small)):
            lib.matmul(a, b, c[i], **kw)
            first = c[i].clone()
            same = all(bool(torch.equal(c[i], first)) for _ in range(3) if lib.matmul(a, b, c[i], **kw) is None)
            print(f"  {M}x{N}x{K} {kw or 'default'}: three more runs {'bit-identical' if same else 'DIFFER'}", flush=True)
        table(f"{M}x{N}x{K}", {"cublas": Checked(lambda: a @ b, ref, **tol),
                               "matmul 128x256": Checked(lambda: lib.matmul(a, b, c[0]), ref, out=c[0], **tol),
                               "matmul 128x128 st4": Checked(lambda: lib.matmul(a, b, c[1], **small), ref, out=c[1], **tol)},
              2.0 * M * N * K, 40)
        del a, b, c, ref


def regress(torch, g):
    import torch.nn.functional as Fn
    lib = tlc.load("std.gemm", target="cuda")
    for M, N, K in [(4096, 4096, 4096), (8192, 8192, 8192)]:
        a = torch.randn(M, K, device="cuda", dtype=torch.float16, generator=g)
        b = torch.randn(K, N, device="cuda", dtype=torch.float16, generator=g)
        ref = a.float() @ b.float()
        tol = tolerance("float16", ref, 16)
        c = torch.empty(M, N, device="cuda", dtype=torch.float16)
        table(f"matmul {M}x{N}x{K}", {"cublas": Checked(lambda: a @ b, ref, **tol),
                                      "tlc": Checked(lambda: lib.matmul(a, b, c), ref, out=c, **tol)},
              2.0 * M * N * K, 60)
        del a, b, c, ref
    for M, N, K in [(64, 4096, 4096), (64, 8192, 8192)]:
        a = torch.randn(M, K, device="cuda", dtype=torch.float16, generator=g)
        w = torch.randn(N, K, device="cuda", dtype=torch.float16, generator=g)
        ref = a.float() @ w.float().T
        tol = tolerance("float16", ref, 16)
        c = torch.empty(M, N, device="cuda", dtype=torch.float16)
        table(f"skinny M={M} N={N} K={K}", {"F.linear": Checked(lambda: Fn.linear(a, w), ref, **tol),
                                            "tlc matmul_skinny": Checked(lambda: lib.matmul_skinny(a, w, c), ref, out=c,
                                                                         **tol)},
              2.0 * M * N * K, 40, nbytes=N * K * 2)
        del a, w, c, ref


def bwdw(torch, g):
    conv = tlc.load("std.conv", target="cuda")
    nchw = lambda t: t.permute(0, 3, 1, 2)  # noqa: E731
    variants = {"default": {}, "SPLIT 1 128x128": dict(SPLIT=1)}
    for Nb, H, C, F in [(32, 56, 64, 64), (32, 28, 128, 128), (32, 14, 256, 256), (32, 7, 512, 512)]:
        x = torch.randn(Nb, H, H, C, device="cuda", dtype=torch.float16, generator=g)
        dy = torch.randn(Nb, H, H, F, device="cuda", dtype=torch.float16, generator=g)
        wshape = (F, C, 3, 3)
        ref = torch.nn.grad.conv2d_weight(nchw(x).float(), wshape, nchw(dy).float(), padding=1).permute(0, 2, 3, 1)
        tol = tolerance("float16", ref, 32)
        xc = nchw(x).contiguous(memory_format=torch.channels_last)
        dyc = nchw(dy).contiguous(memory_format=torch.channels_last)
        contenders = {"cudnn": Checked(lambda: torch.nn.grad.conv2d_weight(xc, wshape, dyc, padding=1).permute(0, 2, 3, 1),
                                       ref, **tol)}
        for name, kw in variants.items():
            if name != "default" and F == 64:
                continue  # (the default is SPLIT 1 at 64 x 64 there)
            dw = torch.empty(F, 3, 3, C, device="cuda", dtype=torch.float16)
            contenders[name] = Checked(lambda dw=dw, kw=kw: conv.conv2d_bwd_weight(dy, x, dw, S=1, P=1, **kw), ref, out=dw,
                                       **tol)
        table(f"bwd_weight {Nb}x{H}x{H}x{C}->{F} 3x3", contenders, 2.0 * Nb * H * H * C * F * 9, 40)
        del x, dy, xc, dyc, ref


def main():
    import torch
    g = torch.Generator(device="cuda").manual_seed(0)
    print(f"{' '.join(sys.argv[1:])}: tlc from {tlc.__file__}", flush=True)
    {"few": few, "spread": spread, "regress": regress, "bwdw": bwdw}[sys.argv[1]](torch, g)


if __name__ == "__main__":
    main()
