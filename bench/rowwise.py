"""Memory-bound kernels of std.nn against PyTorch on the GPU (one process, about a minute).

Measures, by the same method in the same run (tlc.timing: CUDA events, warm-up, L2 flushed,
median over >= 300 ms, contenders alternating):
- the device's copy bandwidth: a device-to-device copy of 1 GiB (bytes read + written);
- std.nn softmax on (16384, 8192) f16 against torch.softmax (goals: >= 0.9x copy bandwidth,
  >= 1.0x torch);
- std.nn rms_norm and layer_norm on the same shape against torch.nn.functional;
- std.nn silu_residual, a chain of 6 element-wise operations over 2^28 f16 elements, against
  the same 6 operations in PyTorch eager (goals: >= 0.9x copy bandwidth, >= 3x eager).
Every contender's output (PyTorch's too) is first checked element by element against a float32
reference; a wrong one is reported and never timed (bench/checks.py).
Prints GB/s (bytes the kernel must move: its inputs read once, its output written once), the
fraction of copy bandwidth and the ratio to torch; the registers, spills and 16-byte memory
instructions of each best configuration (nvcc + cuobjdump, where present).  Writes the numbers
to bench/results/rowwise-<gpu>.json (and --json).  Not a test: it asserts nothing about time.
"""
from __future__ import annotations

import argparse
import math
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import tlc  # noqa: E402
from tlc.timing import Checked, compare, tolerance  # noqa: E402

from checks import ratio, save, timed, us  # noqa: E402

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


def gpu_name() -> str:
    import cupy as cp

    name = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)["name"]
    return name.decode() if isinstance(name, bytes) else name


def short_name(name: str) -> str:
    m = re.search(r"\b([A-Z]+\d{2,4}[A-Z]?)\b", name)
    return (m.group(1) if m else re.sub(r"\W+", "-", name)).lower()


def copy_bandwidth(results: dict) -> float:
    import torch

    src = torch.empty(1 << 29, dtype=torch.float16, device="cuda").normal_()
    dst = torch.empty_like(src)
    ms = compare({"copy": lambda: dst.copy_(src)})["copy"]
    gbs = 2 * src.numel() * src.element_size() / ms / 1e6
    results["copy"] = {"bytes": 2 * src.numel() * src.element_size(), "ms": ms, "gbs": gbs}
    return gbs


# Tolerance in units of f16's precision (tlc.timing.tolerance; atol against the reference's
# RMS): std.nn's kernels compute in f32 and round once (half a unit); PyTorch's fused kernels
# too; its eager element-wise chain rounds each of six results (about one unit at worst over
# 2^22 elements, in NumPy).  4 units cover them; a wrong row, tile or element is off by far more.
ULPS = 4


def measure(results: dict, key: str, nbytes: int, copy_gbs: float, torch_fn, tlc_fn, configs, out, ref) -> None:
    """Check torch and each tlc configuration against `ref` (each configuration writing `out`),
    then time the right ones alternately; record and print the best."""
    tol = tolerance(out.dtype, ref, ULPS)
    names = {"tlc " + ",".join(f"{k}={v}" for k, v in cfg.items()): cfg for cfg in configs}
    record: dict = {"bytes": nbytes}
    ms = timed(record, {"torch": Checked(torch_fn, ref, **tol),
                        **{name: Checked(lambda cfg=cfg: tlc_fn(**cfg), ref, out=out, **tol)
                           for name, cfg in names.items()}})
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
    results[key] = record
    print(f"{key}: torch {torch_gbs:.0f} GB/s ({torch_gbs / copy_gbs:.2f} of copy, {us(ms, 'torch')})")
    for r in rows:
        if "error" in r:
            print(f"  tlc {r['config']}: {r['error']}")
        else:
            print(f"  tlc {r['config']}: {r['gbs']:.0f} GB/s, {r['of_copy']:.2f} of copy, {r['vs_torch']:.2f}x torch, "
                  f"{r['ms'] * 1e3:.0f} us, rel err {r['rel_err']:.1e}")


def rowwise(results: dict, copy_gbs: float) -> None:
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
    measure(results, "softmax", nbytes, copy_gbs, lambda: torch.softmax(x, dim=-1),
            lambda **c: nn.softmax(x, y, **c), SOFTMAX_CONFIGS, y, ref)

    def torch_rms():  # a PyTorch without F.rms_norm: the same in eager operations (its casts included)
        if hasattr(F, "rms_norm"):
            return F.rms_norm(x, (N,), w, EPS)
        return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + EPS).half() * w

    xf = x.float()
    ref = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS) * w.float()
    measure(results, "rms_norm", nbytes, copy_gbs, torch_rms, lambda **c: nn.rms_norm(x, w, y, EPS, **c),
            NORM_CONFIGS, y, ref)
    results["rms_norm"]["torch_impl"] = "F.rms_norm" if hasattr(F, "rms_norm") else "eager operations (no F.rms_norm)"
    ref = F.layer_norm(xf, (N,), w.float(), b.float(), EPS)
    measure(results, "layer_norm", nbytes, copy_gbs, lambda: F.layer_norm(x, (N,), w, b, EPS),
            lambda **c: nn.layer_norm(x, w, b, y, EPS, **c), NORM_CONFIGS, y, ref)


def elementwise(results: dict, copy_gbs: float) -> None:
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
    measure(results, "silu_residual", 2 * x.numel() * x.element_size(), copy_gbs, eager,
            lambda **c: nn.silu_residual(x, y, ALPHA, BETA, GAMMA, **c), EW_CONFIGS, y, ref)
    del ref


def sass_evidence(results: dict) -> None:
    """Registers, local memory and 16-byte global accesses in the machine code of each best
    configuration (nvcc + cuobjdump on this machine)."""
    if not shutil.which("nvcc") or not shutil.which("cuobjdump"):
        return
    from tlc.runtime import target_arch

    arch = target_arch()
    nn = tlc.load("std.nn", target="cuda")
    flags = ["-gencode=arch=compute_90a,code=sm_90a"] if arch == "sm_90a" else [f"-arch={arch}"]
    for key in ("softmax", "rms_norm", "layer_norm", "silu_residual"):
        best = results.get(key, {}).get("best")
        if not best:
            continue
        src = getattr(nn, key).cuda_source(arch=arch, **best["config"])
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
        print(f"SASS {key} {best['config']}: {best['sass']}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args()
    name = gpu_name()
    results: dict = {"gpu": name, "shape": [M, N], "elements": ELEMS}
    copy_gbs = copy_bandwidth(results)
    print(f"GPU: {name}; device-to-device copy: {copy_gbs:.0f} GB/s")
    rowwise(results, copy_gbs)
    elementwise(results, copy_gbs)
    sass_evidence(results)
    save(results, ROOT / "bench" / "results" / f"rowwise-{short_name(name)}.json", args.json)


if __name__ == "__main__":
    main()
