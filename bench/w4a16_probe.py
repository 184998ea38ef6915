"""Issue #18, session 25 (helper C): what bounds the w4a16 decode kernels on the H200.

bench/w4a16_stream_probe.tl streams the int4 weight of N = K = 8192 (32 MiB of words) through
the same cp.async ring the w4a16 kernels use, nearly without work a word, as row-major tiles
(the std layout: a K step reads BN pieces of 4 * BKW bytes 4 KiB apart) and as tiles stored one
after another (TILED = 1: each step's tile contiguous).  Beside them, in the same process: a
torch read of the 32 MiB (row sums) and F.linear f16 at M = 1.  Every output is checked before
its time counts: the probe's byte sums exactly against PyTorch's, F.linear against F.linear in
f32 of the weight dequantized (as bench/lowbit.py does).

    python bench/w4a16_probe.py [--min-ms 100] [--json out.json] [--ring]

--ring (session 29, helper D): bench/w4a16_ring_probe.tl instead, std.gemm's matmul_w4a16
through the TMA ring (config.json's sm_90a rule at M = 1: K steps of 256 on 6 stages, 2 blocks
an SM) with the dequantization and the gemm removed (RING_PROBES: the rule's tiles, K steps of
512 on 4 stages, and the rule's ring with the weight's box alone), beside matmul_w4a16 at the rule and F.linear f16 at M = 1: the ring's
stream ceiling at these tiles apart from the consumers' work.
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

N = K = 8192
KW = K // 8
# (label, TILED, BN, BKW, stages, THREADS, S, BLOCKS)
PROBES = [("gemv-like rows BN16 BKW128 st4", 0, 16, 128, 4, 128, 1, 0),
          ("gemv-like tiles BN16 BKW128 st4", 1, 16, 128, 4, 128, 1, 0),
          ("splitk-like rows BN64 BKW64 st2 S4", 0, 64, 64, 2, 128, 4, 0),
          ("splitk-like tiles BN64 BKW64 st2 S4", 1, 64, 64, 2, 128, 4, 0),
          ("rows BN16 BKW128 st8", 0, 16, 128, 8, 128, 1, 0),
          ("tiles BN16 BKW128 st8", 1, 16, 128, 8, 128, 1, 0),
          ("rows BN16 BKW256 st4", 0, 16, 256, 4, 128, 1, 0)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--min-ms", type=float, default=100.0)
    ap.add_argument("--json")
    ap.add_argument("--calib", action="store_true", help="The probe and a torch read at 1, 2 and 4 times the "
                    "weight's 32 MiB, and a launch of one element: the fixed cost and the slope.")
    import torch
    import torch.nn.functional as F

    ap.add_argument("--ring", action="store_true", help="The TMA ring's stream without the dequantization "
                    "(bench/w4a16_ring_probe.tl) beside matmul_w4a16 at its M = 1 rule and F.linear.")
    args = ap.parse_args(argv)
    if args.calib:
        return calibrate(torch, args)
    if args.ring:
        return ring(torch, args)

    from lowbit import dequantize_uint4_torch, w4a16_weight
    from tlc.timing import Checked, compare_checked, tolerance

    quant = tlc.load("std.quant", target="cuda")
    gemm = tlc.load("std.gemm", target="cuda")
    probe = tlc.load(str(ROOT / "bench/w4a16_stream_probe.tl"), target="cuda")
    W4, scales, zeros, q, _ = w4a16_weight(torch, quant, gemm, N, K, 128)
    deq = dequantize_uint4_torch(torch, q, scales.half().float(), zeros, K, 128).half()
    byte = (W4.view(torch.int32) & 255).float()  # [N, KW]
    contenders = {}
    for label, tiled, bn, bkw, st, thr, s, blocks in PROBES:
        steps = KW // bkw // s
        if tiled:
            # tile t = bx * KW / BKW + bz * steps + k holds rows bx * BN .. of W's memory read as [N * KW / BKW, BKW]
            t = byte.reshape(N * KW // bkw // bn, bn, bkw).reshape(N // bn, s, steps, bn, bkw)
            ref = t.sum(dim=(2, 4)).permute(1, 0, 2).reshape(s, N)
            Wv = W4.view(N * KW // bkw, bkw)
        else:
            ref = byte.reshape(N, s, KW // s).sum(dim=2).t().contiguous()
            Wv = W4
        out = torch.empty(s, N, dtype=torch.float32, device="cuda")
        run = probe.stream_w4.launcher(Wv, out, KW=KW, TILED=tiled, BN=bn, BKW=bkw, stages=st, THREADS=thr,
                                       BLOCKS=blocks)
        contenders[label] = Checked(run, ref, out=out, rtol=0.0, atol=0.0)
    A = torch.randn(1, K, device="cuda").half()
    ref = F.linear(A.float(), deq.float())
    Wi = W4.view(torch.int32)
    rs = torch.empty(N, dtype=torch.int64, device="cuda")
    want = Wi.sum(dim=1)
    contenders["torch row sums of the 32 MiB (read)"] = Checked(lambda: torch.sum(Wi, dim=1, out=rs), want, out=rs,
                                                                rtol=0, atol=0)
    Ct = torch.empty(1, N, dtype=torch.float16, device="cuda")
    contenders["F.linear f16"] = Checked(lambda: torch.mm(A, deq.t(), out=Ct), ref, out=Ct,
                                         **tolerance("float16", ref, 32))
    ms, verdicts = compare_checked(contenders, min_ms=args.min_ms)
    return _report(contenders, ms, verdicts, args)


def _report(contenders, ms, verdicts, args) -> int:
    """Prints each contender's time and GB/s of the int4 weight (or why its check failed) and
    writes them to --json."""
    rows = []
    for label in contenders:
        r = {"variant": label}
        if not verdicts[label].ok:
            r["error"] = verdicts[label].why
            print(f"{label:<44} !! {r['error'][:160]}", flush=True)
        else:
            r["us"] = ms[label] * 1e3
            r["GBs_weight"] = N * K / 2 / (ms[label] * 1e-3) / 1e9
            print(f"{label:<44} {r['us']:8.1f} us  {r['GBs_weight']:7.0f} GB/s of int4 weight", flush=True)
        rows.append(r)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


# (label, the ring probe's kernel, its constants): config.json's matmul_w4a16 rule at M = 1, twice
# the bytes a stage on 4 stages, and the rule's ring with the weight's box alone
RING_PROBES = [("ring probe BK=256 stages=6", "ring_w4", {"BK": 256, "stages": 6}),
               ("ring probe BK=512 stages=4", "ring_w4", {"BK": 512, "stages": 4}),
               ("ring probe weight alone BK=256 stages=6", "ring_w4_weight", {"BK": 256, "stages": 6})]


def ring_reference(A, W4, scales, zeros, BK: int, G: int = 128, kernel: str = "ring_w4"):
    """What bench/w4a16_ring_probe.tl's ring_w4 writes, in f64 (NumPy or torch arrays; W4 an
    integer one): each row's bytes (word & 255) summed, plus, a K step k of BK columns, scales
    and zeros at the step's first group rounded down to 8 and 16 groups and A[0, k * BK]
    (ring_w4_weight: the bytes alone)."""
    out = (W4 & 255).sum(1) * 1.0
    if kernel == "ring_w4_weight":
        return out
    for k in range(-(-A.shape[1] // BK)):
        g = k * BK // G
        s = scales[:, g // 8 * 8] if g // 8 * 8 < scales.shape[1] else 0.0
        z = zeros[:, g // 16 * 16] * 1.0 if g // 16 * 16 < zeros.shape[1] else 0.0
        out = out + s + z + float(A[0, k * BK])
    return out


def ring(torch, args) -> int:
    """--ring: the ring probe's rows, matmul_w4a16 at its M = 1 rule and F.linear f16, N = K =
    8192 g128 at M = 1, each output checked first (the probe's sums against ring_reference)."""
    import torch.nn.functional as F
    from lowbit import dequantize_uint4_torch, w4a16_weight
    from tlc.timing import Checked, compare_checked, tolerance

    quant = tlc.load("std.quant", target="cuda")
    gemm = tlc.load("std.gemm", target="cuda")
    probe = tlc.load(str(ROOT / "bench/w4a16_ring_probe.tl"), target="cuda")
    W4, scales, zeros, q, _ = w4a16_weight(torch, quant, gemm, N, K, 128)
    deq = dequantize_uint4_torch(torch, q, scales.half().float(), zeros, K, 128).half()
    A = torch.randn(1, K, device="cuda").half()
    contenders = {}
    for label, kernel, consts in RING_PROBES:
        out = torch.empty(N, dtype=torch.float32, device="cuda")
        want = ring_reference(A.double(), W4.view(torch.int32), scales.double(), zeros.double(),
                              consts["BK"], kernel=kernel).float()
        args = (W4, out) if kernel == "ring_w4_weight" else (A, W4, scales, zeros, out)
        run = getattr(probe, kernel).launcher(*args, **consts)
        contenders[label] = Checked(run, want, out=out, rtol=1e-5, atol=1e-2)
    ref = F.linear(A.float(), deq.float())
    C = torch.empty(1, N, dtype=torch.float16, device="cuda")
    contenders["matmul_w4a16 at the M = 1 rule"] = Checked(gemm.matmul_w4a16.launcher(A, W4, scales, zeros, C), ref,
                                                           out=C, **tolerance("float16", ref, 8))
    Ct = torch.empty(1, N, dtype=torch.float16, device="cuda")
    contenders["F.linear f16"] = Checked(lambda: torch.mm(A, deq.t(), out=Ct), ref, out=Ct,
                                         **tolerance("float16", ref, 32))
    ms, verdicts = compare_checked(contenders, min_ms=args.min_ms)
    return _report(contenders, ms, verdicts, args)


def calibrate(torch, args) -> int:
    """--calib: time = fixed + bytes / bandwidth, from the probe (the gemv's tiles, and the
    split-K's in 4 parts) and torch's f32 row sums of f16 over 32, 64 and 128 MiB, and a fill of
    one element (a launch and the events alone); each output checked first."""
    from tlc.timing import Checked, compare_checked

    probe = tlc.load(str(ROOT / "bench/w4a16_stream_probe.tl"), target="cuda")
    g = torch.Generator(device="cuda").manual_seed(3)
    contenders = {}
    for mult in (1, 2, 4):
        kw = KW * mult
        W = torch.randint(-2 ** 31, 2 ** 31 - 1, (N, kw), device="cuda", generator=g, dtype=torch.int32)
        byte = (W & 255).float()
        for label, bn, bkw, st, s in (("gemv-like BN16 BKW128 st4", 16, 128, 4, 1), ("splitk-like BN64 BKW64 st2 S4", 64, 64, 2, 4)):
            out = torch.empty(s, N, dtype=torch.float32, device="cuda")
            ref = byte.reshape(N, s, kw // s).sum(dim=2).t().contiguous()
            run = probe.stream_w4.launcher(W.view(torch.uint32), out, KW=kw, TILED=0, BN=bn, BKW=bkw, stages=st,
                                           THREADS=128, BLOCKS=0)
            contenders[f"probe {label} {32 * mult} MiB"] = Checked(run, ref, out=out, rtol=0.0, atol=0.0)
        x = torch.randn(N, 2 * kw, device="cuda", generator=g).half()  # as many bytes as W
        o = torch.empty(N, dtype=torch.float32, device="cuda")
        want = torch.sum(x, dim=1, dtype=torch.float32)
        contenders[f"torch f16 row sums {32 * mult} MiB"] = Checked(
            lambda x=x, o=o: torch.sum(x, dim=1, dtype=torch.float32, out=o), want, out=o, rtol=1e-6, atol=1e-6)
    one = torch.empty(1, dtype=torch.float32, device="cuda")
    contenders["fill of one element"] = Checked(lambda: one.fill_(0.0), torch.zeros(1, device="cuda"), out=one,
                                                rtol=0.0, atol=0.0)
    ms, verdicts = compare_checked(contenders, min_ms=args.min_ms)
    rows = []
    for label in contenders:
        r = {"variant": label}
        if not verdicts[label].ok:
            r["error"] = verdicts[label].why
            print(f"{label:<44} !! {r['error'][:160]}", flush=True)
        else:
            r["us"] = ms[label] * 1e3
            print(f"{label:<44} {r['us']:8.1f} us", flush=True)
        rows.append(r)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
