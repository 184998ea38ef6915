"""#18, session 25 (helper B), round 3: this session's defaults against PyTorch in one process,
outputs checked first: std.gemm's matmul / matmul_nt at few output tiles (split-K, bf13d8c, and
config.json's tiles) against cuBLAS, and std.conv's conv2d_bwd_weight at ResNet's 3 x 3 layers
(batch 32) against cuDNN.

    python bench/splitk_r3.py
"""
import tlc
from splitk_r2 import table  # bench/ is the script's folder, first on sys.path
from tlc.timing import Checked, tolerance


def main():
    import torch
    print(f"tlc from {tlc.__file__}", flush=True)
    g = torch.Generator(device="cuda").manual_seed(0)
    lib = tlc.load("std.gemm", target="cuda")
    for M, N, K in [(512, 512, 16384), (1024, 1024, 8192)]:
        a = torch.randn(M, K, device="cuda", dtype=torch.float16, generator=g)
        b = torch.randn(K, N, device="cuda", dtype=torch.float16, generator=g)
        bt = b.T.contiguous()
        ref = a.float() @ b.float()
        tol = tolerance("float16", ref, 16)
        c, c2 = (torch.empty(M, N, device="cuda", dtype=torch.float16) for _ in range(2))
        table(f"{M}x{N}x{K}", {"cublas": Checked(lambda: a @ b, ref, **tol),
                               "matmul": Checked(lambda: lib.matmul(a, b, c), ref, out=c, **tol),
                               "matmul_nt": Checked(lambda: lib.matmul_nt(a, bt, c2), ref, out=c2, **tol)},
              2.0 * M * N * K, 40)
    conv = tlc.load("std.conv", target="cuda")
    nchw = lambda t: t.permute(0, 3, 1, 2)  # noqa: E731
    for Nb, H, C, F in [(32, 56, 64, 64), (32, 28, 128, 128), (32, 14, 256, 256), (32, 7, 512, 512)]:
        x = torch.randn(Nb, H, H, C, device="cuda", dtype=torch.float16, generator=g)
        dy = torch.randn(Nb, H, H, F, device="cuda", dtype=torch.float16, generator=g)
        wshape = (F, C, 3, 3)
        ref = torch.nn.grad.conv2d_weight(nchw(x).float(), wshape, nchw(dy).float(), padding=1).permute(0, 2, 3, 1)
        tol = tolerance("float16", ref, 32)
        xc, dyc = (nchw(t).contiguous(memory_format=torch.channels_last) for t in (x, dy))
        dw = torch.empty(F, 3, 3, C, device="cuda", dtype=torch.float16)
        table(f"bwd_weight {Nb}x{H}x{H}x{C}->{F} 3x3", {
            "cudnn": Checked(lambda: torch.nn.grad.conv2d_weight(xc, wshape, dyc, padding=1).permute(0, 2, 3, 1), ref, **tol),
            "tlc": Checked(lambda: conv.conv2d_bwd_weight(dy, x, dw, S=1, P=1), ref, out=dw, **tol)},
              2.0 * Nb * H * H * C * F * 9, 40)


if __name__ == "__main__":
    main()
