"""Helper A's probe (issue #19, flash_fwd on sm_90a): bench/attention.py's forward rows, tlc's
flash_fwd against cuDNN alone (no FlashAttention 2 row, to fit the queue's minute), each output
checked against the f32 math backend before it is timed (tlc.timing.compare_checked), the label
of the compiler variant this process runs under printed with each row.

    python3 bench/A_probe.py LABEL fwd_f16_d128,fwd_f16_d128_causal [--min-ms 100]
    python3 bench/A_probe.py LABEL fwd_f16_d128+keys:1024,8192  # keys: tlc alone, B=4 H=32 S=4096 D=128
                                                               # f16 against SK keys: a block's fixed
                                                               # cost is what the time does not scale
    python3 bench/A_probe.py LABEL solo:16384,32768            # the same with 16 blocks alone (B=1
                                                               # H=1 S=2048): the L2 uncontended
    python3 bench/A_probe.py LABEL fwd_f16_d128 --old bench/variant.tl     # rows: that file's
                                                               # flash_fwd timed beside std's too,
                                                               # named A_fwd_grid (--old repeats)
    python3 bench/A_probe.py LABEL "fwd_f16_d256{BM=64;THREADS=128;STAGES=3}"  # a row with other
                                                               # constants for both kernels
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import tlc  # noqa: E402
from tlc.timing import Checked, compare_checked  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("label")
    ap.add_argument("rows")
    ap.add_argument("--min-ms", type=float, default=100.0)
    ap.add_argument("--old", action="append", default=[],
                    help="a .tl whose flash_fwd (std's signature) rows time beside std's, named by the file (repeatable)")
    args = ap.parse_args()
    import torch
    import torch.nn.functional as F

    import attention as A

    mod = tlc.load("std.attention", target="cuda")
    args.olds = {Path(p).stem: tlc.load(p, target="cuda") for p in args.old}
    for part in args.rows.split("+"):  # rows, then keys:... (or either alone)
        if part.startswith("keys:"):
            keys(torch, F, A, mod, args, [int(x) for x in part[5:].split(",")])
        elif part.startswith("solo:"):  # 16 blocks alone on the GPU: B=1 H=1 S=2048
            keys(torch, F, A, mod, args, [int(x) for x in part[5:].split(",")], B=1, H=1, S=2048)
        else:
            rows(torch, F, A, mod, args, part.split(","))


def rows(torch, F, A, mod, args, names) -> None:
    from torch.nn.attention import SDPBackend

    for name in names:
        t = time.time()
        base, _, extra = name.partition("{")
        spec = A.ROWS[base]
        if extra:  # "row{K=V;K=V}": the row's constants, these on top
            spec = (*spec[:-1], {**spec[-1], **{k: int(v) for k, v in (x.split("=") for x in extra.rstrip("}").split(";"))}})
        dtype, B, H, HK, S, SK, D, causal, consts = spec
        q, k, v, scale, ref, tol = A.forward_inputs(torch, F, spec)
        o = torch.empty_like(q)
        lse = torch.empty(B, H, S, device="cuda", dtype=torch.float32)

        def tlc_run():
            mod.flash_fwd(q, k, v, o, lse, scale, CAUSAL=causal, **consts)
        contenders = {"tlc": Checked(tlc_run, ref, out=o, **tol),
                      "cudnn": Checked(A.vendor(torch, F, SDPBackend.CUDNN_ATTENTION, q, k, v, scale, causal), ref, **tol)}
        for label, old in args.olds.items():
            o_old = torch.empty_like(q)

            def old_run(old=old, o_old=o_old):
                old.flash_fwd(q, k, v, o_old, lse, scale, CAUSAL=causal, **consts)
            contenders[label] = Checked(old_run, ref, out=o_old, **tol)
        ms, verdicts = compare_checked(contenders, min_ms=args.min_ms)
        flops = 4.0 * B * H * S * SK * D * (0.5 if causal else 1.0)
        cells = []
        for label, verdict in verdicts.items():
            cells.append(f"{label} {flops / ms[label] / 1e9:6.1f}" if verdict.ok else f"{label} WRONG ({verdict.why})")
        ratio = f"{ms['cudnn'] / ms['tlc']:.3f}" if all(v.ok for v in verdicts.values()) else "-"
        for label in args.olds:
            if label in ms and "cudnn" in ms:
                ratio += f"  {label}/cudnn {ms['cudnn'] / ms[label]:.3f}"
            if label in ms and "tlc" in ms:
                ratio += f"  tlc/{label} {ms[label] / ms['tlc']:.3f}"
        print(f"[{args.label}] {name:26} {'  '.join(cells)} TFLOP/s  tlc/cudnn {ratio}  ({time.time() - t:.1f} s)",
              flush=True)
        del q, k, v, o, lse, ref
        torch.cuda.empty_cache()


def keys(torch, F, A, mod, args, lengths, B=4, H=32, S=4096) -> None:
    """flash_fwd at B=4 H=32 S=4096 D=128 f16 against each number of keys: time = blocks x (fixed +
    per-key-block), so the fixed part of a block (its launch, Q's load, the ring's fill, the
    epilogue) is what a straight line through the times leaves at zero keys.  With B=1 H=1
    S=2048 (solo:) 16 blocks run alone, each SM's loads uncontended: a key block's time there
    against the full grid's says whether the loop waits on the L2's bandwidth."""
    times = []
    for SK in lengths:
        spec = ("float16", B, H, H, S, SK, 128, False, {})
        q, k, v, scale, ref, tol = A.forward_inputs(torch, F, spec)
        o = torch.empty_like(q)
        lse = torch.empty(B, H, S, device="cuda", dtype=torch.float32)

        def tlc_run():
            mod.flash_fwd(q, k, v, o, lse, scale)
        ms, verdicts = compare_checked({"tlc": Checked(tlc_run, ref, out=o, **tol)}, min_ms=args.min_ms)
        if not verdicts["tlc"].ok:
            print(f"[{args.label}] SK={SK}: WRONG ({verdicts['tlc'].why})", flush=True)
            return
        flops = 4.0 * B * H * S * SK * 128
        times.append((SK, ms["tlc"]))
        print(f"[{args.label}] B={B} H={H} S={S} SK={SK:6}: {ms['tlc'] * 1e3:8.1f} us  {flops / ms['tlc'] / 1e9:6.1f} TFLOP/s",
              flush=True)
        del q, k, v, o, lse, ref
        torch.cuda.empty_cache()
    if len(times) > 1:
        (a, ta), (b, tb) = times[0], times[-1]
        slope = (tb - ta) / (b - a)
        print(f"[{args.label}] fit through SK={a} and {b}: {slope * 128 * 1e3:.2f} us a key block of 128 (all blocks), "
              f"{(ta - slope * a) * 1e3:.1f} us at zero keys", flush=True)


if __name__ == "__main__":
    main()
