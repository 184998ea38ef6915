"""`tlc bench nn`: the memory-bound kernels of std.nn against PyTorch on the GPU, one process
(about a minute; bench/rowwise.py runs it too).

Measures, by the same method in the same run (tlc.timing: CUDA events, warm-up, L2 flushed,
median over >= 300 ms, contenders alternating):
- the ceilings (ceilings.py): the device-to-device copy bandwidth of 1 GiB (bytes read +
  written) and cuBLAS's f16 rate (the roofline's roofs);
- std.nn softmax on (16384, 8192) f16 against torch.softmax (goals: >= 0.9x copy bandwidth,
  >= 1.0x torch);
- std.nn rms_norm and layer_norm on the same shape against F.rms_norm and F.layer_norm;
- std.nn silu_residual, a chain of 6 element-wise operations over 2^28 f16 elements, against
  the same 6 operations in PyTorch eager (goals: >= 0.9x copy bandwidth, >= 3x eager).
Every contender's output (PyTorch's too) is first checked element by element against a float32
reference; a wrong one is reported and never timed (checks.py).  Each kernel runs in each
configuration of its sweep; the fastest right one is the case's.
Prints GB/s (bytes the kernel must move: its inputs read once, its output written once), the
fraction of copy bandwidth and the ratio to torch; the registers, spills and 16-byte memory
instructions of each best configuration (nvcc + cuobjdump, where present).  Writes
nn-<gpu>.json (bench/rowwise.py: bench/results/rowwise-<gpu>.json) and a PNG chart beside it
(chart.py: ratio bars and a roofline).  Not a test: it asserts nothing about time.
"""
from __future__ import annotations

import argparse
import math
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import tlc

from ..timing import Checked, tolerance
from . import ceilings
from .checks import ratio, timed, us, write

M, N = 16384, 8192
ELEMS = 1 << 28
EPS = 1e-5
ALPHA, BETA, GAMMA = 1.5, -0.25, 0.75
# Constants swept per kernel (one GPU run picks the best): the whole row in registers (BN = N)
# at 256, 128 and 512 threads (the registers ptxas uses decide the blocks per SM: static
# figures in the commits that set these); the element-wise chain over 8 to 16 elements a thread.
SOFTMAX_CONFIGS = [dict(BN=8192, THREADS=256), dict(BN=8192, THREADS=128), dict(BN=8192, THREADS=512),
                   dict(BN=8192, THREADS=256, BLOCKS=4)]  # 4 blocks of 256 fit at 64 registers, no spills
NORM_CONFIGS = [dict(BN=8192, THREADS=256), dict(BN=8192, THREADS=128), dict(BN=8192, THREADS=512),
                dict(BN=8192, THREADS=256, BLOCKS=3)]  # rms_norm 66, layer_norm 78 registers, no spills
EW_CONFIGS = [dict(BLOCK=1024, THREADS=128), dict(BLOCK=2048, THREADS=256), dict(BLOCK=4096, THREADS=256),
              dict(BLOCK=4096, THREADS=512), dict(BLOCK=8192, THREADS=512)]
# The arithmetic each kernel must do, in operations per element of x, for the roofline's
# intensity (FLOP per byte moved): softmax max, subtract, exp, sum, scale; rms_norm square,
# sum, scale, weight; layer_norm sum, subtract, square, sum, scale, weight, bias; silu_residual
# its six operations with the sigmoid as three (exp, add, divide).
FLOPS_PER_ELEMENT = {"softmax": 5, "rms_norm": 4, "layer_norm": 7, "silu_residual": 8}
# Tolerance in units of f16's precision (tlc.timing.tolerance; atol against the reference's
# RMS): std.nn's kernels compute in f32 and round once (half a unit); PyTorch's fused kernels
# too; its eager element-wise chain rounds each of six results (about one unit at worst over
# 2^22 elements, in NumPy).  4 units cover them; a wrong row, tile or element is off by far more.
ULPS = 4


def main(argv=None, *, results_dir: Path | None = None, name: str = "nn") -> dict:
    """The suite, its options as `argv`; writes `name`-<gpu>.json (or --json) under
    `results_dir` (default: the current folder) and its chart beside it.  Returns the results."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="100 ms per contender instead of 300")
    ap.add_argument("--json", help="where to write the results (default <results_dir>/nn-<gpu>.json)")
    ap.add_argument("--no-chart", action="store_true", help="write no PNG chart (it needs matplotlib)")
    args = ap.parse_args(argv)
    import torch

    results: dict = {"suite": "nn", **ceilings.device_facts(torch), "shape": [M, N], "elements": ELEMS, "cases": []}
    min_ms = 100.0 if args.quick else 300.0
    print(f"GPU: {results['gpu']} ({results['arch']}), PyTorch {torch.__version__}")
    copy_gbs = ceilings.measure(torch, results, min_ms)
    rowwise(results, copy_gbs, min_ms)
    elementwise(results, copy_gbs, min_ms)
    sass_evidence(results)
    print(table(results["cases"]))
    write(results, args.json or Path(results_dir or ".") / f"{name}-{ceilings.gpu_slug(results['gpu'])}.json",
          chart=not args.no_chart)
    return results


def record_copy(results: dict, min_ms: float = 300.0) -> float:
    """The copy bandwidth into `results` ("copy": {"gbs"}): bench/plain.py's ceiling."""
    import torch

    gbs = ceilings.copy_bandwidth(torch, min_ms)
    results["copy"] = {"bytes": 2 << 30, "gbs": gbs}
    return gbs


def measure(results: dict, key: str, nbytes: int, elements: int, copy_gbs: float, torch_fn, tlc_fn, configs, out,
            ref, min_ms: float) -> dict:
    """Check torch and each tlc configuration against `ref` (each configuration writing `out`),
    then time the right ones alternately; record (in results["cases"]) and print the best."""
    tol = tolerance(out.dtype, ref, ULPS)
    names = {"tlc " + ",".join(f"{k}={v}" for k, v in cfg.items()): cfg for cfg in configs}
    record: dict = {"name": key, "bytes": nbytes, "flops": float(FLOPS_PER_ELEMENT[key] * elements)}
    ms = timed(record, {"torch": Checked(torch_fn, ref, **tol),
                        **{name: Checked(lambda cfg=cfg: tlc_fn(**cfg), ref, out=out, **tol)
                           for name, cfg in names.items()}}, min_ms=min_ms)
    rows = []
    for name, cfg in names.items():
        row = {"config": cfg, "rel_err": record["rel_err"][name]}
        if name in ms:
            t = ms[name]
            row.update(ms=t, gbs=nbytes / t / 1e6, of_copy=nbytes / t / 1e6 / copy_gbs, vs_torch=ratio(ms, "torch", name))
        else:
            row["error"] = record["wrong"][name]
        rows.append(row)
    ok = [r for r in rows if "ms" in r]
    torch_gbs = nbytes / ms["torch"] / 1e6 if "torch" in ms else math.nan
    record.update(torch={"ms": ms.get("torch"), "gbs": torch_gbs, "of_copy": torch_gbs / copy_gbs},
                  configs=rows, best=min(ok, key=lambda r: r["ms"]) if ok else None)
    results["cases"].append(record)
    print(f"{key}: torch {torch_gbs:.0f} GB/s ({torch_gbs / copy_gbs:.2f} of copy, {us(ms, 'torch')})")
    for r in rows:
        if "error" in r:
            print(f"  tlc {r['config']}: {r['error']}")
        else:
            print(f"  tlc {r['config']}: {r['gbs']:.0f} GB/s, {r['of_copy']:.2f} of copy, {r['vs_torch']:.2f}x torch, "
                  f"{r['ms'] * 1e3:.0f} us, rel err {r['rel_err']:.1e}")
    return record


def rowwise(results: dict, copy_gbs: float, min_ms: float = 300.0) -> None:
    import torch
    import torch.nn.functional as F

    nn = tlc.load("std.nn", target="cuda")
    torch.manual_seed(0)
    x = torch.randn(M, N, device="cuda", dtype=torch.float16) * 3
    w = torch.randn(N, device="cuda", dtype=torch.float16)
    b = torch.randn(N, device="cuda", dtype=torch.float16)
    y = torch.empty_like(x)
    nbytes = 2 * x.numel() * x.element_size()  # read x, write y (weights stay in L2)

    ref = torch.softmax(x.float(), dim=-1)
    measure(results, "softmax", nbytes, x.numel(), copy_gbs, lambda: torch.softmax(x, dim=-1),
            lambda **c: nn.softmax(x, y, **c), SOFTMAX_CONFIGS, y, ref, min_ms)

    def torch_rms():  # a PyTorch without F.rms_norm: the same in eager operations (its casts included)
        if hasattr(F, "rms_norm"):
            return F.rms_norm(x, (N,), w, EPS)
        return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + EPS).half() * w

    xf = x.float()
    ref = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS) * w.float()
    rms = measure(results, "rms_norm", nbytes, x.numel(), copy_gbs, torch_rms,
                  lambda **c: nn.rms_norm(x, w, y, EPS, **c), NORM_CONFIGS, y, ref, min_ms)
    rms["torch_impl"] = "F.rms_norm" if hasattr(F, "rms_norm") else "eager operations (no F.rms_norm)"
    ref = F.layer_norm(xf, (N,), w.float(), b.float(), EPS)
    measure(results, "layer_norm", nbytes, x.numel(), copy_gbs, lambda: F.layer_norm(x, (N,), w, b, EPS),
            lambda **c: nn.layer_norm(x, w, b, y, EPS, **c), NORM_CONFIGS, y, ref, min_ms)


def elementwise(results: dict, copy_gbs: float, min_ms: float = 300.0) -> None:
    import torch

    nn = tlc.load("std.nn", target="cuda")
    x = torch.randn(ELEMS, device="cuda", dtype=torch.float16)
    y = torch.empty_like(x)

    def eager():  # the same six operations, one kernel each
        t = x * ALPHA
        t = t + BETA
        s = torch.sigmoid(t)
        t = t * s
        t = t + x
        return t * GAMMA

    xf = x.float()
    tf = xf * ALPHA + BETA
    ref = GAMMA * (tf * torch.sigmoid(tf) + xf)
    del xf, tf
    measure(results, "silu_residual", 2 * x.numel() * x.element_size(), x.numel(), copy_gbs, eager,
            lambda **c: nn.silu_residual(x, y, ALPHA, BETA, GAMMA, **c), EW_CONFIGS, y, ref, min_ms)
    del ref


def sass_evidence(results: dict) -> None:
    """Registers, local memory and 16-byte global accesses in the machine code of each best
    configuration (nvcc + cuobjdump on this machine)."""
    if not shutil.which("nvcc") or not shutil.which("cuobjdump"):
        return
    arch = results["arch"]
    nn = tlc.load("std.nn", target="cuda")
    flags = ["-gencode=arch=compute_90a,code=sm_90a"] if arch == "sm_90a" else [f"-arch={arch}"]
    for case in results["cases"]:
        best = case.get("best")
        if not best:
            continue
        src = getattr(nn, case["name"]).cuda_source(arch=arch, **best["config"])
        with tempfile.TemporaryDirectory() as d:
            cu, cubin = Path(d) / "k.cu", Path(d) / "k.cubin"
            cu.write_text(src)
            log = subprocess.run(["nvcc", "-std=c++17", *flags, "-cubin", "-Xptxas", "-v", "-o", str(cubin), str(cu)],
                                 check=True, capture_output=True, text=True).stderr
            sass = subprocess.run(["cuobjdump", "-sass", str(cubin)], check=True, capture_output=True,
                                  text=True).stdout
        regs = re.search(r"Used (\d+) registers", log)
        bounds = re.search(r"__launch_bounds__\(([^)]*)\)", src)
        best["sass"] = {"registers": int(regs.group(1)) if regs else None,
                        "launch_bounds": bounds.group(1) if bounds else None,
                        "LDG.128": len(re.findall(r"\bLDG\.E\.128", sass)),
                        "STG.128": len(re.findall(r"\bSTG\.E\.128", sass)),
                        "LDL/STL": len(re.findall(r"\b(LDL|STL)\b", sass))}
        print(f"SASS {case['name']} {best['config']}: {best['sass']}")


def table(cases: list) -> str:
    """One line per kernel: its fastest right configuration against PyTorch."""
    lines = [f"{'kernel':<14} {'tlc GB/s':>9} {'of copy':>8} {'torch GB/s':>10} {'of copy':>8} {'vs torch':>9}  best"]
    for c in cases:
        best, t = c.get("best"), c["torch"]
        torch_cells = f"{t['gbs']:>10.0f} {t['of_copy']:>8.2f}" if t.get("ms") else f"{'WRONG':>10} {'':>8}"
        if best is None:
            lines.append(f"{c['name']:<14} {'WRONG':>9} {'':>8} {torch_cells} {'':>9}  no right configuration")
            continue
        config = ",".join(f"{k}={v}" for k, v in best["config"].items())
        lines.append(f"{c['name']:<14} {best['gbs']:>9.0f} {best['of_copy']:>8.2f} {torch_cells} "
                     f"{best['vs_torch']:>8.2f}x  {config}")
    return "\n".join(lines)
