"""Variants of the attention backward against cuDNN's, one process, one shape (#19).

Each variant is `label=PATH:KERNEL[:K=V,K=V...]` (PATH `std` for std.attention), called as
flash_bwd is: (q, k, v, o, do, lse, dq, dk, dv, scale, CAUSAL=..., constants).  O and LSE come
from std.attention's flash_fwd (untimed); the f32 reference gradients from PyTorch's math
backend a batch at a time; every variant's dQ, dK, dV are checked against it (bench/attention.py's
tolerance, 32 units of f16) before its time counts, and each is run twice more to say whether
its gradients are the same bit for bit.  cuDNN's backward (through autograd, its forward untimed)
is timed in the same alternating rounds (tlc.timing.compare).  TFLOP/s count 2.5x the forward's
4 * B * H * S * SK * D, halved for a causal mask.

With --grids each tlc variant's kernels (flash_bwd's three grids) are also timed one by one
(PyTorch's profiler, the mean of 10 calls after the timing), to say which grid the time goes to.
--causal both runs the full and the causal mask in one process (one compile of each variant).
--flags LABEL=MODULE.NAME=VALUE[+MODULE.NAME=VALUE...] compiles LABEL's kernel with those
switches of tlc's code generator set (tlc.codegen.MODULE.NAME: an int, a bool as 0 or 1, or a
word), from a copy of its file
whose kernel is renamed KERNEL_LABEL: a cache entry of its own (the program cache keys a kernel
by its text, not by the switches).  A copy has no config.json: give its tiles as constants.

    python bench/attention_bwd.py [--causal [both]] [--grids] [--flags ...] [--shape B,H,HK,S,D]
                                  [--min-ms 200] VARIANT...
"""
from __future__ import annotations

import argparse
import importlib
import json
import math
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import tlc  # noqa: E402
from tlc.timing import Checked, compare, tolerance, verify  # noqa: E402

from switches import switched  # noqa: E402  (bench/, this file's folder)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("variants", nargs="+")
    ap.add_argument("--causal", nargs="?", const="causal", default="full", choices=("causal", "both"))
    ap.add_argument("--grids", action="store_true")
    ap.add_argument("--flags", action="append", default=[], metavar="LABEL=MODULE.NAME=VALUE[+...]")
    ap.add_argument("--shape", default="4,32,32,4096,128")
    ap.add_argument("--min-ms", type=float, default=200.0)
    ap.add_argument("--no-cudnn", action="store_true")
    ap.add_argument("--json")
    ap.add_argument("--probe", help="labels to run once first, exiting with 3 if one hangs")
    ap.add_argument("--probe-s", type=float, default=5.0)
    args = ap.parse_args(argv)
    B, H, HK, S, D = (int(x) for x in args.shape.split(","))
    std = tlc.load("std.attention", target="cuda")
    flags = dict(parse_flags(f) for f in args.flags)
    kernels, copies = {}, tempfile.mkdtemp(prefix="attention_bwd_")
    for v in args.variants:
        label, _, rest = v.partition("=")
        path, kernel, *consts = rest.split(":")
        if label in flags:  # a renamed copy, compiled with the switches at its first call
            file = ROOT / ("stdlib/attention.tl" if path == "std" else path)
            text = file.read_text().replace(f"def {kernel}(", f"def {kernel}_{label}(")
            copy = Path(copies) / f"{label}_{file.name}"
            copy.write_text(text)
            mod, kernel = tlc.load(str(copy), target="cuda"), f"{kernel}_{label}"
        else:
            mod = std if path == "std" else tlc.load(str(ROOT / path), target="cuda")
        c = dict(kv.split("=") for kv in consts[0].split(",")) if consts and consts[0] else {}
        kernels[label] = (getattr(mod, kernel), {k: {"True": True, "False": False}.get(x) if x in ("True", "False")
                                                  else int(x) for k, x in c.items()}, flags.get(label, ()))
    results = {}
    for causal in {"full": [False], "causal": [True], "both": [False, True]}[args.causal]:
        results["causal" if causal else "full"] = one_mask(args, kernels, std, causal, B, H, HK, S, D)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


def parse_flags(text: str) -> tuple:
    """`LABEL=MODULE.NAME=VALUE[+...]` -> (LABEL, ((module, NAME, VALUE), ...)); a switch that
    tlc.codegen does not have is an error here, before anything compiles."""
    label, _, rest = text.partition("=")
    out = []
    for item in rest.split("+"):
        where, _, value = item.partition("=")
        module, _, name = where.rpartition(".")
        mod = importlib.import_module(f"tlc.codegen.{module}")
        if not hasattr(mod, name):
            raise SystemExit(f"--flags {text}: tlc.codegen.{module} has no switch {name}")
        out.append((mod, name, int(value) if value.lstrip("-").isdigit() else value))
    return label, tuple(out)


def switches(flags):
    """tlc.codegen's switches set to `flags`' values (each converted to the constant's type)
    inside the block, restored after it."""
    return switched((mod, name, type(getattr(mod, name))(value)) for mod, name, value in flags)


def kernel_times(run, calls: int = 10) -> dict:
    """Mean microseconds of each GPU kernel that `run` launches, over `calls` calls (PyTorch's
    profiler: CUPTI sees every launch, tlc's included)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    run()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            run()
        torch.cuda.synchronize()
    device = lambda e: getattr(e, "device_time_total", None) or getattr(e, "cuda_time_total", 0)  # noqa: E731
    return {e.key: device(e) / calls for e in prof.key_averages() if device(e) > 0}


def one_mask(args, kernels, std, causal, B, H, HK, S, D):
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

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

        fn, consts, flags = kernels[label]
        dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
        torch.cuda.synchronize()
        with switches(flags):
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
    for label, (fn, consts, flags) in kernels.items():
        dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
        for x in (dq, dk, dv):
            x.fill_(float("nan"))

        def run(fn=fn, consts=consts, dq=dq, dk=dk, dv=dv):
            fn(q, k, v, o, do, lse, dq, dk, dv, scale, CAUSAL=causal, **consts)
            return dq, dk, dv
        with switches(flags):  # the first call compiles
            verdicts[label] = verify(Checked(lambda run=run: flat(run()), ref, **tol))
        first = flat(run()).clone()
        same[label] = all(torch.equal(first, flat(run())) for _ in range(2))
        timed[label] = run
        print(f"{label}: {'ok' if verdicts[label].ok else 'WRONG: ' + verdicts[label].why}, "
              f"{'deterministic' if same[label] else 'NOT bit-identical run to run'}", flush=True)
    if not args.no_cudnn:
        xs = [x.detach().clone().requires_grad_() for x in (q, k, v)]
        try:  # (a shape cuDNN's backward does not take: the variants are still timed against each other)
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                out = F.scaled_dot_product_attention(*xs, scale=scale, is_causal=causal, enable_gqa=group > 1)
            timed["cudnn"] = lambda: torch.autograd.grad(out, xs, do, retain_graph=True)
            verdicts["cudnn"] = verify(Checked(lambda: flat(timed["cudnn"]()), ref, **tol))
        except RuntimeError as e:
            timed.pop("cudnn", None)
            print(f"cudnn: not run ({str(e).splitlines()[0][:160]})", flush=True)
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
    if args.grids:  # each kernel's own time (a product of the forward's two is flops / 5)
        for x in timed:
            if x in ms and x != "cudnn":
                us = kernel_times(timed[x])
                print(f"  {x:24} " + "; ".join(f"{name} {t / 1e3:.3f} ms" for name, t in sorted(us.items())))
                results[x]["kernels_us"] = us
    return results


if __name__ == "__main__":
    main()
