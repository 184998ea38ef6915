"""Helper E, session 26 (#18): where std.gemm's block-scaled f8 GEMM (matmul_f8_blockscaled,
0.79x torch._scaled_mm in session 20) loses its time, and whether its 128 x 256 tiles (BN=256:
two 128-column halves into one partial-sum fragment) win it back.  One process on the GPU,
every contender's output checked against a float32 reference before it is timed (tlc.timing; 4
units of bf16 against the reference's RMS, as bench/gemm.py's f8 rows), the vendor timed in the
same run:

- torch._scaled_mm per tensor (the issue's reference) and with block-wise scales where this
  PyTorch has them;
- std.matmul_f8_blockscaled at its default and at BN=256 (`--configs` replaces them);
- unless --no-probes: std.matmul_f8 (per-tensor scales, no promotion) at 128 x 128 and at its
  rule's 128 x 192 (what the tile alone reaches), and bench/f8bs_probe.tl's bs_const (no scale
  loads), bs_tma (the scales through the TMA into the ring), bs_wide (128 x 192, B's scale
  chosen per column) and bs_pf (the scales read a K step ahead).

    python3 bench/f8bs_probe.py [--sizes 8192x8192x8192,4096x7168x2048] [--ms 40] [--no-probes]
    python3 bench/f8bs_probe.py --clears all   # schedule/scale_d_clears.py RING_SCALE_D_CLEARS for this process
    python3 bench/f8bs_probe.py --prefetch     # schedule/prefetch_loads.py on for this process
                                               # (each with its own TLC_CACHE_DIR: the cache keys ignore them)
    python3 bench/f8bs_probe.py --grouped 8x8192x4096x7168   # the grouped (MoE) kernel instead
    python3 bench/f8bs_probe.py --no-store-pairs ...  # codegen/store_pairs.py off (its own TLC_CACHE_DIR too)

--grouped EXMxNxK,...: std.matmul_grouped_f8_blockscaled over E experts of ragged groups of M rows
in all (sizes drawn once, seeded; some past a 128-row tile's edge, one group empty), at its
default (128 x 128) and at BN=256 with 3 and 4 stages (GROUPED_CONFIGS), each checked against the
groups' dequantized f32 products; the vendor row is torch._scaled_mm per tensor on the dense
M x N x K product of the same flops (PyTorch has no grouped block-scaled f8 GEMM to call).
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
from tlc.benchmarks.gemm_cases import _blockscaled_vendor  # noqa: E402
from tlc.timing import Checked, compare_checked, tolerance  # noqa: E402

STD_CONFIGS = {"std (default)": {}, "std BN=256 s3": dict(BN=256, stages=3), "std BN=256 s4": dict(BN=256, stages=4)}
GROUPED_CONFIGS = {"grouped (default)": {}, "grouped BN=256 s3": dict(BN=256, stages=3),
                   "grouped BN=256 s4": dict(BN=256, stages=4)}
PROBE_F8 = {"f8 128x128 s4": dict(BM=128, BN=128, BK=128, stages=4, THREADS=256),
            "f8 128x192 s4": dict(BM=128, BN=192, BK=128, stages=4, THREADS=256)}
PROBES = ("f8_128", "f8_192", "bs_const", "bs_tma", "bs_wide", "bs_pf")  # --probes' names, the rows' order


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="8192x8192x8192", help="MxNxK,...")
    ap.add_argument("--ms", type=float, default=40.0, help="milliseconds a contender is timed")
    ap.add_argument("--configs", help="JSON: label -> constants of matmul_f8_blockscaled (replaces the std rows; "
                    "with --grouped, of matmul_grouped_f8_blockscaled, replacing GROUPED_CONFIGS)")
    ap.add_argument("--no-probes", action="store_true", help="only the vendor's and std's rows")
    ap.add_argument("--probes", help="only these probe rows, comma-separated: " + ",".join(PROBES) + " (one a "
                    "process names the one that faults: session 28's 8192^3 run died of an illegal instruction)")
    ap.add_argument("--clears", choices=["none", "reused", "all"], help="schedule/scale_d_clears.py RING_SCALE_D_CLEARS")
    ap.add_argument("--prefetch", action="store_true", help="schedule/prefetch_loads.py PREFETCH_RING_LOADS on")
    ap.add_argument("--grouped", help="ExMxNxK,...: time matmul_grouped_f8_blockscaled instead (module docstring)")
    ap.add_argument("--no-store-pairs", action="store_true", help="codegen/store_pairs.py STORE_PAIRS off "
                    "(the epilogue's element stores, the default until session 28)")
    args = ap.parse_args()
    wanted = set(args.probes.split(",")) if args.probes else set(PROBES)
    if wanted - set(PROBES):
        ap.error(f"--probes: no probe named {sorted(wanted - set(PROBES))[0]} (the probes: {', '.join(PROBES)})")
    import torch

    if args.clears:
        from tlc.schedule import scale_d_clears
        scale_d_clears.RING_SCALE_D_CLEARS = args.clears
    if args.prefetch:
        import importlib
        importlib.import_module("tlc.schedule.prefetch_loads").PREFETCH_RING_LOADS = True
    if args.no_store_pairs:
        import importlib
        importlib.import_module("tlc.codegen.store_pairs").STORE_PAIRS = False
    gemm = tlc.load("std.gemm", target="cuda")
    if args.grouped:
        return grouped(torch, gemm, args)
    probe = tlc.load(str(ROOT / "bench/f8bs_probe.tl"), target="cuda")
    std_configs = json.loads(args.configs) if args.configs else STD_CONFIGS
    g = torch.Generator(device="cuda").manual_seed(0)
    for size in args.sizes.split(","):
        M, N, K = (int(x) for x in size.split("x"))
        kb, nb = -(-K // 128), -(-N // 128)
        A = torch.randn(M, K, device="cuda", generator=g).to(torch.float8_e4m3fn)
        B = torch.randn(N, K, device="cuda", generator=g).to(torch.float8_e4m3fn)
        SA = torch.rand(M, kb, device="cuda", generator=g) + 0.5
        SB = torch.rand(nb, kb, device="cuda", generator=g) + 0.5
        # bs_tma's transposed scales: SBT's rows padded to 4 (16-byte rows for the TMA)
        SAT = SA.t().contiguous()
        SBT = torch.zeros(kb, -(-nb // 4) * 4, device="cuda")
        SBT[:, :nb] = SB.t()
        plain = A.float() @ B.float().T
        deq_a = A.float() * SA.repeat_interleave(128, 1)[:, :K]
        deq_b = B.float() * SB.repeat_interleave(128, 0)[:N].repeat_interleave(128, 1)[:, :K]
        ref = deq_a @ deq_b.T
        del deq_a, deq_b
        tol, tol_plain = tolerance("bfloat16", ref, 4), tolerance("bfloat16", plain, 4)
        one = torch.tensor(1.0, device="cuda")

        def out():
            return torch.empty(M, N, device="cuda", dtype=torch.bfloat16)

        c = {}
        cv = out()
        c["scaled_mm per-tensor"] = Checked(lambda cv=cv: torch._scaled_mm(A, B.t(), scale_a=one, scale_b=one,
                                                                            out_dtype=torch.bfloat16, out=cv),
                                            plain, out=cv, **tol_plain)
        vendor = _blockscaled_vendor(torch, A, B, SA, SB, ref)
        if isinstance(vendor, str):
            print(f"{size}: torch._scaled_mm block-wise unavailable: {vendor}")
        else:
            c["scaled_mm blockwise"] = Checked(vendor, ref, **tol)
        for label, cfg in std_configs.items():
            co = out()
            c[label] = Checked(lambda co=co, cfg=cfg: gemm.matmul_f8_blockscaled(A, B, co, SA, SB, **cfg), ref, out=co,
                               **tol)
        if not args.no_probes:
            for (label, cfg), name in zip(PROBE_F8.items(), PROBES):
                if name in wanted:
                    co = out()
                    c[label] = Checked(lambda co=co, cfg=cfg: gemm.matmul_f8(A, B, co, 1.0, 1.0, **cfg), plain,
                                       out=co, **tol_plain)
            if "bs_const" in wanted:
                co = out()
                c["bs_const s4"] = Checked(lambda co=co: probe.bs_const(A, B, co, 1.0, 1.0), plain, out=co,
                                           **tol_plain)
            if "bs_tma" in wanted:
                co = out()
                c["bs_tma s4"] = Checked(lambda co=co: probe.bs_tma(A, B, co, SAT, SBT), ref, out=co, **tol)
            if "bs_wide" in wanted:
                co = out()
                c["bs_wide 128x192 s4"] = Checked(lambda co=co: probe.bs_wide(A, B, co, SA, SB), ref, out=co, **tol)
            if "bs_pf" in wanted:
                co = out()
                c["bs_pf s4"] = Checked(lambda co=co: probe.bs_pf(A, B, co, SA, SB), ref, out=co, **tol)
        ms, verdicts = compare_checked(c, min_ms=args.ms)
        flops = 2.0 * M * N * K
        base = "scaled_mm per-tensor"
        print(f"{size} (M x N x K), {args.ms:g} ms a contender, L2 flushed, medians"
              f"{', RING_SCALE_D_CLEARS ' + args.clears if args.clears else ''}"
              f"{', PREFETCH_RING_LOADS on' if args.prefetch else ''}:")
        print_rows(ms, verdicts, flops, base)
        del A, B, plain, ref, c
        torch.cuda.empty_cache()
    return 0


def print_rows(ms: dict, verdicts: dict, flops: float, base: str) -> None:
    """One line a contender: its time, TFLOP/s and ratio to `base`'s, or why it was not timed."""
    for label, v in verdicts.items():
        if not v.ok:
            print(f"  {label:<22} NOT TIMED: {v.why[:200]}")
            continue
        r = ms[base] / ms[label] if base in ms else float("nan")
        print(f"  {label:<22} {ms[label] * 1e3:8.1f} us {flops / ms[label] / 1e9:7.0f} TFLOP/s  {r:5.3f}x {base}"
              f"  rel err {v.rel_err:.1e}", flush=True)


def group_sizes(E: int, M: int) -> list:
    """E ragged group sizes adding up to M: about M / E each, seeded, the second group empty."""
    import numpy as np

    w = np.random.default_rng(E * 7919 + M).uniform(0.5, 1.5, E)
    w[1 % E] = 0.0 if E > 1 else w[0]
    sizes = np.floor(w / w.sum() * M).astype(int)
    sizes[0] += M - sizes.sum()
    return [int(x) for x in sizes]


def grouped(torch, gemm, args) -> int:
    """The --grouped rows (the module's docstring)."""
    g = torch.Generator(device="cuda").manual_seed(0)
    configs = json.loads(args.configs) if args.configs else GROUPED_CONFIGS
    for size in args.grouped.split(","):
        E, M, N, K = (int(x) for x in size.split("x"))
        kb, nb = -(-K // 128), -(-N // 128)
        sizes = group_sizes(E, M)
        offsets = torch.tensor([0, *torch.tensor(sizes).cumsum(0).tolist()], device="cuda", dtype=torch.int32)
        A = torch.randn(M, K, device="cuda", generator=g).to(torch.float8_e4m3fn)
        W = torch.randn(E, N, K, device="cuda", generator=g).to(torch.float8_e4m3fn)
        SA = torch.rand(M, kb, device="cuda", generator=g) + 0.5
        SB = torch.rand(E, nb, kb, device="cuda", generator=g) + 0.5
        deq_a = A.float() * SA.repeat_interleave(128, 1)[:, :K]
        ref = torch.empty(M, N, device="cuda")
        for e in range(E):
            rows = slice(int(offsets[e]), int(offsets[e + 1]))
            deq_w = W[e].float() * SB[e].repeat_interleave(128, 0)[:N].repeat_interleave(128, 1)[:, :K]
            ref[rows] = deq_a[rows] @ deq_w.T
        del deq_a
        dense_b = W[0]
        plain = A.float() @ dense_b.float().T
        tol, tol_plain = tolerance("bfloat16", ref, 4), tolerance("bfloat16", plain, 4)
        one = torch.tensor(1.0, device="cuda")
        c = {}
        cv = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
        c["scaled_mm per-tensor"] = Checked(lambda cv=cv: torch._scaled_mm(A, dense_b.t(), scale_a=one, scale_b=one,
                                                                            out_dtype=torch.bfloat16, out=cv),
                                            plain, out=cv, **tol_plain)
        for label, cfg in configs.items():
            co = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
            c[label] = Checked(lambda co=co, cfg=cfg: gemm.matmul_grouped_f8_blockscaled(A, W, offsets, co, SA, SB,
                                                                                         **cfg), ref, out=co, **tol)
        ms, verdicts = compare_checked(c, min_ms=args.ms)
        flops = 2.0 * M * N * K
        base = "scaled_mm per-tensor"
        print(f"grouped {size} (E x M x N x K; groups {sizes}), {args.ms:g} ms a contender, L2 flushed, medians"
              f"{', STORE_PAIRS off' if args.no_store_pairs else ''}; {base} on the dense {M} x {N} x {K}:")
        print_rows(ms, verdicts, flops, base)
        del A, W, plain, ref, c
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
