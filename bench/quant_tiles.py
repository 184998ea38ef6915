"""std.quant's kernels at several tile constants on the GPU, as fractions of the copy bandwidth.

For each kernel, its default constants run first; every other configuration's outputs must equal
the default's byte for byte before its time counts (bench/lowbit.py checks the defaults against
PyTorch, tests/gpu/test_quant_gpu.py against NumPy).  x: f16 [16384, 8192] (the ops suite's
LARGE shape), groups of 128 for int4, blocks of 32 for MX; bytes = inputs read + outputs written.

    python bench/quant_tiles.py [--only quantize_mx,dequantize_int4] [--min-ms 15]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import tlc  # noqa: E402

M, N, G = 16384, 8192, 128
# kernel -> the configurations timed after its default ({}): BM rows of BN columns (int4: BM rows of
# one group)
CONFIGS = {
    "quantize_mx": [{"BM": 8}, {"BM": 32, "BN": 512}, {"BM": 8, "BN": 2048}],
    "dequantize_mx": [{"BM": 8}, {"BM": 32, "BN": 512}, {"BM": 8, "BN": 2048}],
    "quantize_int4": [{"BM": 32, "THREADS": 128}, {"BM": 128, "THREADS": 512}],
    "dequantize_int4": [{"BM": 32, "THREADS": 128}, {"BM": 128, "THREADS": 512}],
    "dequantize_per_channel": [{"BN": 1024, "BM": 4}, {"BN": 512, "BM": 8}, {"BN": 1024, "BM": 8}],
}


def cases(torch, quant):
    """kernel -> (args, the outputs among them)."""
    x = torch.randn(M, N, device="cuda", dtype=torch.float16)
    q8 = torch.empty(M, N, device="cuda", dtype=torch.float8_e4m3fn)
    e8 = torch.empty(M, N // 32, device="cuda", dtype=torch.uint8)
    quant.quantize_mx(x, q8, e8)
    q4 = torch.empty(M, N // 2, device="cuda", dtype=torch.uint8)
    s4 = torch.empty(M, N // G, device="cuda")
    quant.quantize_int4(x, q4, s4, G=G)
    qi = torch.randint(-128, 128, (M, N), device="cuda", dtype=torch.int8)
    sc = torch.rand(N, device="cuda") * 0.01
    y = torch.empty(M, N, device="cuda", dtype=torch.float16)
    q8o, e8o = torch.empty_like(q8), torch.empty_like(e8)
    q4o, s4o = torch.empty_like(q4), torch.empty_like(s4)
    return {"quantize_mx": ((x, q8o, e8o), [q8o, e8o], {}),
            "dequantize_mx": ((q8, e8, y), [y], {}),
            "quantize_int4": ((x, q4o, s4o), [q4o, s4o], {"G": G}),
            "dequantize_int4": ((q4, s4, y), [y], {"G": G}),
            "dequantize_per_channel": ((qi, sc, y), [y], {})}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", help="Comma-separated kernel names.")
    ap.add_argument("--min-ms", type=float, default=15.0)
    args = ap.parse_args(argv)
    import torch

    from tlc.benchmarks.ceilings import copy_bandwidth
    from tlc.timing import compare

    quant = tlc.load("std.quant", target="cuda")
    copy = copy_bandwidth(torch, args.min_ms)
    print(f"copy {copy:.0f} GB/s", flush=True)
    bad = 0
    for name, (kargs, outs, fixed) in cases(torch, quant).items():
        if args.only and name not in args.only.split(","):
            continue
        k = getattr(quant, name)
        nbytes = sum(a.numel() * a.element_size() for a in kargs)
        k(*kargs, **fixed)
        torch.cuda.synchronize()
        want = [o.clone() for o in outs]
        fns = {"{}": (lambda k=k: k(*kargs, **fixed))}
        for c in CONFIGS[name]:
            for o in outs:
                o.view(torch.uint8).fill_(0x7F)
            try:
                k(*kargs, **fixed, **c)
                torch.cuda.synchronize()
            except Exception as e:  # noqa: BLE001 - a configuration that cannot run is reported
                print(f"{name} {c}: ERROR {type(e).__name__}: {str(e)[:150]}", flush=True)
                bad += 1
                continue
            if all(torch.equal(o.view(torch.uint8), w.view(torch.uint8)) for o, w in zip(outs, want)):
                fns[str(c)] = (lambda k=k, c=c: k(*kargs, **fixed, **c))
            else:
                print(f"{name} {c}: WRONG (outputs differ from the default's)", flush=True)
                bad += 1
        for c, t in compare(fns, min_ms=args.min_ms).items():
            print(f"{name:24s} {c:28s} {t * 1e3:8.1f} us  {nbytes / t / 1e6 / copy:5.2f} of copy", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
