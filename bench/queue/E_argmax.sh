# limit: 35
# Issue #13, session 24 (helper E): does a pipelined tile loop (a cp.async ring in shared memory,
# STAGES - 1 tiles ahead) lift argmax_axis0 (0.67 of copy this morning, bench/results/
# ops-h200-twentyfourth.txt, (16384, 8192) f16) and argmax_axis1 (0.78)?
# On the CPU: std.reduce's argmax_axis0 copies its [256, 32] tile straight into a fragment at the
# top of a plain loop: each thread's two LDG.128 (32 bytes) are all it has in flight, and only
# until the compare-and-select of the tile starts (2 blocks of 512 an SM: 32 KB an SM, where
# sum_axis0's 0.93 holds 64 KB).  argmax_axis1 (f16 rule: 2 rows of 1024 at 128 threads) likewise.
# bench/E_argmax.tl: the same kernels with `for k in pipelined(..., num_stages=STAGES)` and the tile
# copied through shared memory (x -> xs -> t); ptxas -v sm_90a (nvcc 13.0): argmax_axis0 64
# registers (2 blocks of 512 an SM, 53 KB of shared memory each at 3 stages), argmax_axis1 60, no
# spills in either build.
# Also the column scans (cumsum_axis0 0.75, cummax_axis0 0.72): their shared-memory traffic, 24 bytes
# an element for cumsum (cp.async 2, xs -> t 2, t -> run 4, the in-place scan 12, run -> out 4: about
# 100 us of an SM's 128 bytes a clock at (16384, 8192) f16, of the 167 it takes); bench/E_scans.tl
# scans the staged tile itself into `run` (cumsum(xs, run, dim=0)) and adds the carry on the way
# out: 12 bytes (cummax 14 -> 8).  ptxas -v sm_90a: cumsum 64 registers (86 KB of shared memory, 2
# blocks an SM, as std's), cummax 56; no spills; the interpreter agrees with NumPy (nans included).
# Asks, every output checked against torch's argmax of the same f16 values first (exact; also a
# (2048, 4096) of integers in [-2, 2], many ties: the first index must win; whole runs, the build
# timed): the std kernel against the pipelined one (3 and 4 stages, [128, 64] tiles), one compare per
# kernel; the scans, std's against E_scans.tl's (exact: cumsum of integers in [-2, 2] in f16).
set -o pipefail
timeout 33 python3 - <<'PY' 2>&1 | tee "$OUT/E_argmax.txt" | tail -40
import time
import torch, tlc
from tlc.timing import compare

t0 = time.time()
M, N = 16384, 8192
g = torch.Generator(device="cuda").manual_seed(0)
src = torch.randn(M, N, device="cuda", generator=g).half()
dst = torch.empty_like(src)
copy = compare({"copy": lambda: dst.copy_(src)}, min_ms=10)["copy"]
copy_gbs = 2 * src.numel() * 2 / copy / 1e6
print(f"copy {copy_gbs:.0f} GB/s", flush=True)
std = tlc.load("std.reduce", target="cuda")
piped = tlc.load("bench/E_argmax.tl", target="cuda")
ties = torch.randint(-2, 3, (2048, 4096), device="cuda", generator=g).half()  # whole runs: the build timed
PLAN = [("argmax_axis0", 0, {"std": (std, {}), "piped S3": (piped, {}), "piped S4": (piped, {"STAGES": 4}),
                             "piped 128x64 S3": (piped, {"BM": 128, "BN": 64, "STAGES": 3})}),
        ("argmax_axis1", 1, {"std": (std, {}), "piped S3": (piped, {})})]
for name, axis, variants in PLAN:
    runs = {}
    for label, (mod, c) in variants.items():
        fn = getattr(mod, name)
        good = True
        for x in (ties, src):
            y = torch.full((x.shape[1 - axis],), -7, device="cuda", dtype=torch.int32)
            fn(x, y, T="f16", **c)
            torch.cuda.synchronize()
            if not torch.equal(y, x.float().argmax(axis).int()):
                print(f"{name} {label} {tuple(x.shape)}: WRONG")
                good = False
        if good:
            runs[label] = (lambda fn=fn, y=y, c=c: fn(src, y, T="f16", **c))
    ms = compare(runs, min_ms=8)
    nbytes = src.numel() * 2
    print(f"{name} f16 [{time.time() - t0:.0f} s]: " + "  ".join(
        f"{k} {t * 1e3:.1f} us ({nbytes / t / 1e6 / copy_gbs:.2f})" for k, t in ms.items()), flush=True)
# the column scans: std's against bench/E_scans.tl's (the scan reading the staged tile)
small = torch.randint(-2, 3, (M, N), device="cuda", generator=g).half()
scans = tlc.load("bench/E_scans.tl", target="cuda")
SCANS = [("cumsum_axis0", torch.cumsum(small.float(), 0).half(), {"std": (std, {}), "from xs": (scans, {})}),
         ("cummax_axis0", torch.cummax(small, 0).values, {"std": (std, {}), "from xs 512t": (scans, {"THREADS": 512})})]
for name, want, variants in SCANS:
    runs = {}
    for label, (mod, c) in variants.items():
        fn = getattr(mod, name)
        y = torch.full_like(small, float("nan"))
        fn(small, y, T="f16", **c)
        torch.cuda.synchronize()
        if torch.equal(y, want):
            runs[label] = (lambda fn=fn, y=y, c=c: fn(small, y, T="f16", **c))
        else:
            print(f"{name} {label}: WRONG")
    ms = compare(runs, min_ms=8)
    nbytes = 2 * small.numel() * 2
    print(f"{name} f16 [{time.time() - t0:.0f} s]: " + "  ".join(
        f"{k} {t * 1e3:.1f} us ({nbytes / t / 1e6 / copy_gbs:.2f})" for k, t in ms.items()), flush=True)
PY
