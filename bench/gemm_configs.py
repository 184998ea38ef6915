"""Tile configurations of std.gemm's f16/bf16 kernels against cuBLAS, for choosing the defaults
in stdlib/config.json: one process on the GPU, each configuration timed alternately with
torch.matmul on the same inputs (tlc.timing: L2 flushed, median over `--ms`), after checking
each output against a float32 reference (a wrong one is reported, never timed).

    python bench/gemm_configs.py --sizes 4096,8192 --kernel matmul --dtype f16
    python bench/gemm_configs.py --configs '[{"BM": 64, "BN": 128, "BK": 64, "stages": 5, "THREADS": 128}]'
    python bench/gemm_configs.py --kernel matmul_skinny --sizes 16,32   # decode: M x 8192 x 8192
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import tlc  # noqa: E402
from tlc.timing import Checked, tolerance  # noqa: E402

from checks import ratio, timed  # noqa: E402

F8_CONFIGS = [dict(BM=128, BN=256, BK=128, stages=3, THREADS=256), dict(BM=128, BN=256, BK=128, stages=4, THREADS=256),
              dict(BM=128, BN=192, BK=128, stages=4, THREADS=256), dict(BM=128, BN=128, BK=128, stages=5, THREADS=256)]
F8BS_CONFIGS = [dict(BM=128, BN=128, stages=s, THREADS=256) for s in (3, 4, 5, 6)]  # 128 x 256: two accumulators spill
CONFIGS = [dict(BM=128, BN=256, BK=64, stages=3, THREADS=256), dict(BM=128, BN=256, BK=64, stages=4, THREADS=256),
           dict(BM=128, BN=128, BK=64, stages=5, THREADS=256),
           dict(BM=64, BN=256, BK=64, stages=5, THREADS=128), dict(BM=128, BN=192, BK=64, stages=4, THREADS=256),
           # 128 rows a warpgroup (two m64 wgmma a K step): not yet timed
           dict(BM=256, BN=128, BK=64, stages=3, THREADS=256), dict(BM=128, BN=128, BK=64, stages=5, THREADS=128)]
# Each configuration's output and the vendor's are checked element by element against a float32
# reference before either is timed (bench/checks.py): 4 units of the output's precision
# (tlc.timing.tolerance; atol against the reference's RMS) above its one rounding (half a unit)
# and f32 (f8: about 14-bit) accumulation in another order; a wrong tile is off by far more.
ULPS = 4

DECODE_NK = 8192
SKINNY_CONFIGS = [dict(BM=16, BN=32, BK=256, stages=4, THREADS=128), dict(BM=16, BN=32, BK=128, stages=6, THREADS=64),
                  dict(BM=16, BN=64, BK=128, stages=6, THREADS=128)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="4096,8192")
    ap.add_argument("--kernel", default="matmul", choices=["matmul", "matmul_nt", "matmul_f8", "matmul_f8_blockscaled",
                                                                "matmul_skinny"])
    ap.add_argument("--dtype", default="f16", choices=["f16", "bf16"])
    ap.add_argument("--ms", type=float, default=200.0)
    ap.add_argument("--configs", help="a JSON list of constant sets to time instead of the built-in ones")
    ap.add_argument("--json")
    args = ap.parse_args()
    import torch

    kernel = getattr(tlc.load("std.gemm"), args.kernel)
    rows = []
    for n in (int(x) for x in args.sizes.split(",")):
        vendor, run, ref, configs, out_dtype = case(torch, kernel, args, n)
        configs = json.loads(args.configs) if args.configs else configs
        tol = tolerance(out_dtype, ref, ULPS)
        contenders = {"vendor": Checked(vendor[1], ref, **tol)}
        for i, cfg in enumerate(configs):
            c = torch.empty(ref.shape, device="cuda", dtype=out_dtype)
            contenders[i] = Checked(lambda c=c, cfg=cfg: run(c, cfg), ref, out=c, **tol)
        record: dict = {}
        ms = timed(record, contenders, min_ms=args.ms)
        skinny = args.kernel == "matmul_skinny"
        flops = 2.0 * n * DECODE_NK ** 2 if skinny else 2.0 * n ** 3
        label = args.kernel if args.kernel.startswith("matmul_f8") else f"{args.kernel} {args.dtype}"
        shape = f"M={n} N=K={DECODE_NK}" if skinny else f"{n}^3"
        print(f"{shape} {label}: {vendor[0]} " + (f"{flops / ms['vendor'] / 1e9:.0f} TFLOP/s" if "vendor" in ms
                                                   else record["wrong"]["vendor"]))
        for i, cfg in enumerate(configs):
            row = dict(size=n, config=cfg, rel_err=record["rel_err"][i])
            if i not in ms:
                row["error"] = record["wrong"][i]
                print(f"  {cfg}: {row['error']}")
            else:
                row.update(tflops=flops / ms[i] / 1e9, ratio=ratio(ms, "vendor", i))
                print(f"  {cfg}: {row['tflops']:.0f} TFLOP/s, {row['ratio']:.3f}x {vendor[0]}, "
                      f"rel err {row['rel_err']:.1e}")
            rows.append(row)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


def case(torch, kernel, args, n: int):
    """((vendor label, vendor call), run(C, constants), reference, configurations, C's dtype)
    for one size: f16/bf16 matmul or matmul_nt against cuBLAS; matmul_f8 against
    torch._scaled_mm; matmul_f8_blockscaled (unit scales per 128 of K) against the
    per-tensor call as the speed reference."""
    if args.kernel.startswith("matmul_f8"):
        a = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn)
        b = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn)
        one = torch.tensor(1.0, device="cuda")
        vendor = ("torch._scaled_mm",
                  lambda: torch._scaled_mm(a, b.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16))
        if args.kernel == "matmul_f8_blockscaled":
            kb = -(-n // 128)
            sa, sb = torch.ones(n, kb, device="cuda"), torch.ones(kb, kb, device="cuda")
            return vendor, lambda c, cfg: kernel(a, b, c, sa, sb, **cfg), a.float() @ b.float().T, F8BS_CONFIGS, \
                torch.bfloat16
        return vendor, lambda c, cfg: kernel(a, b, c, 1.0, 1.0, **cfg), a.float() @ b.float().T, F8_CONFIGS, \
            torch.bfloat16
    dt = torch.float16 if args.dtype == "f16" else torch.bfloat16
    if args.kernel == "matmul_skinny":  # a decode step: n rows against a DECODE_NK-square weight
        a = torch.randn(n, DECODE_NK, device="cuda", dtype=dt)
        w = torch.randn(DECODE_NK, DECODE_NK, device="cuda", dtype=dt)
        return (("F.linear", lambda: torch.nn.functional.linear(a, w)), lambda c, cfg: kernel(a, w, c, **cfg),
                a.float() @ w.float().T, SKINNY_CONFIGS, dt)
    a = torch.randn(n, n, device="cuda", dtype=dt)
    b = torch.randn(n, n, device="cuda", dtype=dt)
    nt = args.kernel == "matmul_nt"
    vendor = ("cuBLAS", (lambda: torch.matmul(a, b.T)) if nt else (lambda: torch.matmul(a, b)))
    ref = a.float() @ (b.float().T if nt else b.float())
    return vendor, lambda c, cfg: kernel(a, b, c, **cfg), ref, CONFIGS, dt


if __name__ == "__main__":
    main()
