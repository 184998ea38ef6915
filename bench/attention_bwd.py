"""Variants of the attention backward against cuDNN's, one process, one shape (#19).

Each variant is `label=PATH:KERNEL[:K=V,K=V...]` (PATH `std` for std.attention), called as
flash_bwd is: (q, k, v, o, do, lse, dq, dk, dv, scale, CAUSAL=..., constants).  O and LSE come
from std.attention's flash_fwd (untimed); the f32 reference gradients from PyTorch's math
backend a batch at a time; every variant's dQ, dK, dV are checked against it (bench/attention.py's
tolerance, 32 units of f16) before its time counts, and each is run twice more to say whether
its gradients are the same bit for bit.  cuDNN's backward (through autograd, its forward untimed)
is timed in the same alternating rounds (tlc.timing.compare).  TFLOP/s count 2.5x the forward's
4 * B * H * S * SK * D, halved for a causal mask.

    python bench/attention_bwd.py [--causal] [--shape B,H,HK,S,D] [--min-ms 200] VARIANT...
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import tlc  # noqa: E402
from tlc.timing import Checked, compare, tolerance, verify  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("variants", nargs="+")
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--shape", default="4,32,32,4096,128")
    ap.add_argument("--min-ms", type=float, default=200.0)
    ap.add_argument("--no-cudnn", action="store_true")
    ap.add_argument("--json")
    ap.add_argument("--probe", help="labels to run once first, exiting with 3 if one hangs")
    ap.add_argument("--probe-s", type=float, default=5.0)
    args = ap.parse_args(argv)
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    B, H, HK, S, D = (int(x) for x in args.shape.split(","))
    causal = args.causal
    std = tlc.load("std.attention", target="cuda")
    kernels = {}
    for v in args.variants:
        label, _, rest = v.partition("=")
        path, kernel, *consts = rest.split(":")
        mod = std if path == "std" else tlc.load(str(ROOT / path), target="cuda")
        c = dict(kv.split("=") for kv in consts[0].split(",")) if consts and consts[0] else {}
        kernels[label] = (getattr(mod, kernel), {k: {"True": True, "False": False}.get(x) if x in ("True", "False")
                                                  else int(x) for k, x in c.items()})
    gen = torch.Generator(device="cuda").manual_seed(0)
    dt = torch.float16
    q, k, v, do = (torch.randn(B, h, S, D, device="cuda", dtype=dt, generator=gen) for h in (H, HK, HK, H))
    scale = 1.0 / math.sqrt(D)
    refs = [torch.empty(x.shape, dtype=torch.float32, device="cuda") for x in (q, k, v)]
    group = H // HK
    with sdpa_kernel(SDPBackend.MATH):
        for b in range(B):
            xs = [x[b:b + 1].float().requires_grad_() for x in (q, k, v)]
            out = F.scaled_dot_product_attention(xs[0], xs[1].repeat_interleave(group, 1),
                                                 xs[2].repeat_interleave(group, 1), scale=scale, is_causal=causal)
            for r, g in zip(refs, torch.autograd.grad(out, xs, do[b:b + 1].float())):
                r[b:b + 1] = g
    ref = torch.cat([r.flatten() for r in refs])
    del refs
    tol = tolerance("float16", ref, 32)
    o, lse = torch.empty_like(q), torch.empty(B, H, S, device="cuda", dtype=torch.float32)
    std.flash_fwd(q, k, v, o, lse, scale, CAUSAL=causal)
    flat = lambda gs: torch.cat([g.flatten() for g in gs])  # noqa: E731
    for label in args.probe.split(",") if args.probe else ():
        # a variant whose blocks wait on each other (atomic_add's order=) could hang: run it once
        # first and give up on the whole process (exit 3) if it does not finish in time
        import os
        import time

        fn, consts = kernels[label]
        dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
        torch.cuda.synchronize()
        fn(q, k, v, o, do, lse, dq, dk, dv, scale, CAUSAL=causal, **consts)
        done = torch.cuda.Event()
        done.record()
        deadline = time.time() + args.probe_s
        while not done.query():
            if time.time() > deadline:
                print(f"{label}: still running after {args.probe_s} s: hung (exit 3)", flush=True)
                os._exit(3)
            time.sleep(0.01)
        print(f"{label}: ran to its end", flush=True)
    timed, verdicts, same = {}, {}, {}
    for label, (fn, consts) in kernels.items():
        dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
        for x in (dq, dk, dv):
            x.fill_(float("nan"))

        def run(fn=fn, consts=consts, dq=dq, dk=dk, dv=dv):
            fn(q, k, v, o, do, lse, dq, dk, dv, scale, CAUSAL=causal, **consts)
            return dq, dk, dv
        verdicts[label] = verify(Checked(lambda run=run: flat(run()), ref, **tol))
        first = flat(run()).clone()
        same[label] = all(torch.equal(first, flat(run())) for _ in range(2))
        timed[label] = run
        print(f"{label}: {'ok' if verdicts[label].ok else 'WRONG: ' + verdicts[label].why}, "
              f"{'deterministic' if same[label] else 'NOT bit-identical run to run'}", flush=True)
    if not args.no_cudnn:
        xs = [x.detach().clone().requires_grad_() for x in (q, k, v)]
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            out = F.scaled_dot_product_attention(*xs, scale=scale, is_causal=causal, enable_gqa=group > 1)
        timed["cudnn"] = lambda: torch.autograd.grad(out, xs, do, retain_graph=True)
        verdicts["cudnn"] = verify(Checked(lambda: flat(timed["cudnn"]()), ref, **tol))
    ms = compare({x: fn for x, fn in timed.items() if verdicts[x].ok}, min_ms=args.min_ms)
    flops = 2.5 * 4.0 * B * H * S * S * D * (0.5 if causal else 1.0)
    print(f"B={B} H={H} HK={HK} S={S} D={D} f16 {'causal' if causal else 'full'}; TFLOP/s (2.5x fwd flops)")
    results = {}
    for x in timed:
        if x in ms:
            rate = flops / ms[x] / 1e9
            rel = f"  {rate / (flops / ms['cudnn'] / 1e9):.3f}x cudnn" if "cudnn" in ms else ""
            print(f"  {x:24} {ms[x]:8.3f} ms {rate:7.1f}{rel}")
            results[x] = {"ms": ms[x], "rate": rate, "deterministic": same.get(x)}
        else:
            print(f"  {x:24} wrong: {verdicts[x].why}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
