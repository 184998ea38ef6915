"""std.quant's kernels at several tile constants on the GPU, as fractions of the copy bandwidth.

For each kernel, its default constants run first; every other configuration's outputs must equal
the default's byte for byte before its time counts (bench/lowbit.py checks the defaults against
PyTorch, tests/gpu/test_quant_gpu.py against NumPy).  x: f16 [16384, 8192] (the ops suite's
LARGE shape), groups of 128 for int4, blocks of 32 for MX; bytes = inputs read + outputs written.

    python bench/quant_tiles.py [--only quantize_mx,dequantize_int4] [--min-ms 15]
        [--variants bench/quant_variants.tl]

--variants FILE: also time FILE's kernels named KERNEL__LABEL (KERNEL's form before a change,
say) beside KERNEL, on KERNEL's arguments, each output checked against the default's first.
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
# one group).  Since session 23 (H200, bench/results/quant_rows-h200-twentythird.txt) the
# defaults of quantize_per_token (one tile of 8192 a row on 256 threads at 4 blocks an SM: x read
# once, 64 KB of rows in flight an SM; config.json on sm_90a for f16 and bf16 rows of 4097..8192),
# dequantize_per_channel (32 rows a tile, the scales' registers used twice; config.json likewise)
# and dequantize_int4 (32 rows on 128 threads: the .tl) are the tiles that won; their rows here
# time the tiles they replaced, given whole (the table fills what a call leaves out).
# dequantize_per_token: 8 KB of q a block of 512 threads, 4 blocks an SM (32 KB in flight an SM)
# against 256 threads (40 registers, 6 blocks: 48 KB) or 2 rows a block (3: 48 KB)
CONFIGS = {
    "quantize_per_token": [{"BN": 4096, "THREADS": 256, "BLOCKS": 0}, {"BN": 8192, "THREADS": 512, "BLOCKS": 4}],
    "quantize_mx": [{"BM": 8}],
    "dequantize_mx": [{"BM": 8}],
    "quantize_int4": [{"BM": 32, "THREADS": 128}],
    "dequantize_int4": [{"BM": 64, "THREADS": 256}],
    "dequantize_per_channel": [{"BM": 16}],
    "dequantize_per_group": [{"BM": 32, "THREADS": 256}],
    "dequantize_per_token": [{"THREADS": 256}, {"BM": 2}],
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
    qt, st = torch.empty(M, N, device="cuda", dtype=torch.int8), torch.empty(M, device="cuda")
    return {"quantize_per_token": ((x, qt, st), [qt, st], {}),
            "quantize_mx": ((x, q8o, e8o), [q8o, e8o], {}),
            "dequantize_mx": ((q8, e8, y), [y], {}),
            "quantize_int4": ((x, q4o, s4o), [q4o, s4o], {"G": G}),
            "dequantize_int4": ((q4, s4, y), [y], {"G": G}),
            "dequantize_per_channel": ((qi, sc, y), [y], {}),
            "dequantize_per_group": ((qi, torch.rand(M, N // G, device="cuda") * 0.01, y), [y], {}),
            "dequantize_per_token": ((qi, torch.rand(M, device="cuda") * 0.01, y), [y], {})}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", help="Comma-separated kernel names.")
    ap.add_argument("--min-ms", type=float, default=15.0)
    ap.add_argument("--variants", help="A .tl file of KERNEL__LABEL kernels timed beside KERNEL.")
    args = ap.parse_args(argv)
    import torch

    from tlc.benchmarks.ceilings import copy_bandwidth
    from tlc.timing import compare

    quant = tlc.load("std.quant", target="cuda")
    variants = tlc.load(args.variants, target="cuda") if args.variants else None
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
        others = [(str(c), k, c) for c in CONFIGS[name]]
        if variants is not None:
            others += [(v.split("__", 1)[1], getattr(variants, v), {}) for v in variants.kernels
                       if v.split("__", 1)[0] == name]
        for label, kv, c in others:
            for o in outs:
                o.view(torch.uint8).fill_(0x7F)
            try:
                kv(*kargs, **fixed, **c)
                torch.cuda.synchronize()
            except Exception as e:  # noqa: BLE001 - a configuration that cannot run is reported
                print(f"{name} {label}: ERROR {type(e).__name__}: {str(e)[:150]}", flush=True)
                bad += 1
                continue
            if all(torch.equal(o.view(torch.uint8), w.view(torch.uint8)) for o, w in zip(outs, want)):
                fns[label] = (lambda kv=kv, c=c: kv(*kargs, **fixed, **c))
            else:
                print(f"{name} {label}: WRONG (outputs differ from the default's)", flush=True)
                bad += 1
        for c, t in compare(fns, min_ms=args.min_ms).items():
            print(f"{name:24s} {c:28s} {t * 1e3:8.1f} us  {nbytes / t / 1e6 / copy:5.2f} of copy", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
