"""Tile configurations of std.gemm's f16/bf16 kernels against cuBLAS, for choosing the defaults
in tlc/stdlib/config.json: one process on the GPU, each configuration timed alternately with
torch.matmul on the same inputs (tlc.timing: L2 flushed, median over `--ms`).

    python bench/gemm_configs.py --sizes 4096,8192 --kernel matmul --dtype f16
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import tlc  # noqa: E402
from tlc.timing import compare  # noqa: E402

F8_CONFIGS = [dict(BM=128, BN=256, BK=128, stages=3, THREADS=256), dict(BM=128, BN=256, BK=128, stages=4, THREADS=256),
              dict(BM=128, BN=192, BK=128, stages=4, THREADS=256), dict(BM=128, BN=128, BK=128, stages=5, THREADS=256)]
F8BS_CONFIGS = [dict(BM=128, BN=128, stages=s, THREADS=256) for s in (3, 4, 5, 6)]  # 128 x 256: two accumulators spill
CONFIGS = [dict(BM=128, BN=256, BK=64, stages=3, THREADS=256), dict(BM=128, BN=256, BK=64, stages=4, THREADS=256),
           dict(BM=128, BN=128, BK=64, stages=5, THREADS=256),
           dict(BM=64, BN=256, BK=64, stages=5, THREADS=128), dict(BM=128, BN=192, BK=64, stages=4, THREADS=256)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="4096,8192")
    ap.add_argument("--kernel", default="matmul", choices=["matmul", "matmul_nt", "matmul_f8", "matmul_f8_blockscaled"])
    ap.add_argument("--dtype", default="f16", choices=["f16", "bf16"])
    ap.add_argument("--ms", type=float, default=200.0)
    ap.add_argument("--json")
    args = ap.parse_args()
    import torch

    dt = torch.float16 if args.dtype == "f16" else torch.bfloat16
    mod = tlc.load("std.gemm")
    kernel = getattr(mod, args.kernel)
    rows = []
    if args.kernel.startswith("matmul_f8"):
        rows = fp8(torch, kernel, args)
    for n in (int(s) for s in args.sizes.split(",") if not args.kernel.startswith("matmul_f8")):
        a = torch.randn(n, n, device="cuda", dtype=dt)
        b = torch.randn(n, n, device="cuda", dtype=dt)
        ref = (a.float() @ (b.float().T if args.kernel == "matmul_nt" else b.float()))
        vendor = (lambda: torch.matmul(a, b.T)) if args.kernel == "matmul_nt" else (lambda: torch.matmul(a, b))
        contenders, outs = {"cublas": vendor}, {}
        for i, cfg in enumerate(CONFIGS):
            c = torch.empty(n, n, device="cuda", dtype=dt)
            outs[i] = c
            contenders[i] = (lambda c=c, cfg=cfg: kernel(a, b, c, **cfg))
        try:
            ms = compare(contenders, min_ms=args.ms)
        except Exception as e:  # noqa: BLE001 - one configuration that cannot launch is a row, not a crash
            print(f"{n}^3: {type(e).__name__}: {e}")
            continue
        flops = 2.0 * n ** 3
        print(f"{n}^3 {args.kernel} {args.dtype}: cuBLAS {flops / ms['cublas'] / 1e9:.0f} TFLOP/s")
        for i, cfg in enumerate(CONFIGS):
            err = float((outs[i].float() - ref).norm() / ref.norm())
            row = dict(size=n, config=cfg, tflops=flops / ms[i] / 1e9, ratio=ms["cublas"] / ms[i], rel_err=err)
            rows.append(row)
            print(f"  {cfg}: {row['tflops']:.0f} TFLOP/s, {row['ratio']:.3f}x cuBLAS, rel err {err:.1e}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


def fp8(torch, kernel, args) -> list:
    """matmul_f8 (per-tensor scales) against torch._scaled_mm, matmul_f8_blockscaled (scales
    per 128 of K) against the per-tensor vendor call as the speed reference."""
    rows = []
    for n in (int(s) for s in args.sizes.split(",")):
        a = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn)
        b = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn)
        one = torch.tensor(1.0, device="cuda")
        contenders = {"vendor": lambda: torch._scaled_mm(a, b.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)}
        ref = a.float() @ b.float().T
        blocked = args.kernel == "matmul_f8_blockscaled"
        kb = -(-n // 128)
        sa, sb = torch.ones(n, kb, device="cuda"), torch.ones(kb, kb, device="cuda")
        configs = F8BS_CONFIGS if blocked else F8_CONFIGS
        outs = {}
        for i, cfg in enumerate(configs):
            c = outs[i] = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
            call_args = (a, b, c, sa, sb) if blocked else (a, b, c, 1.0, 1.0)
            contenders[i] = (lambda call_args=call_args, cfg=cfg: kernel(*call_args, **cfg))
        ms = compare(contenders, min_ms=args.ms)
        flops = 2.0 * n ** 3
        print(f"{n}^3 {args.kernel}: torch._scaled_mm {flops / ms['vendor'] / 1e9:.0f} TFLOP/s")
        for i, cfg in enumerate(configs):
            err = float((outs[i].float() - ref).norm() / ref.norm())
            row = dict(size=n, config=cfg, tflops=flops / ms[i] / 1e9, ratio=ms["vendor"] / ms[i], rel_err=err)
            rows.append(row)
            print(f"  {cfg}: {row['tflops']:.0f} TFLOP/s, {row['ratio']:.3f}x torch._scaled_mm, rel err {err:.1e}")
    return rows


if __name__ == "__main__":
    main()
