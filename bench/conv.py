"""std.conv against cuDNN (torch.nn.functional.conv2d on channels_last f16 tensors), one
process, on the GPU (issue 18's benchmark).

Rows: the convolutions of ResNet-50 at batch 64 (one of each distinct shape: the 7x7 stem, the
1x1 and 3x3 convolutions of each stage, the stride-2 ones), a 3x3 convolution at 56 x 56 x 256,
and depthwise 3x3 convolutions.  Each contender runs once first and its whole output is
compared with PyTorch's f32 convolution of the same f16 inputs (tlc.timing.compare_checked: a
wrong one is reported and never timed); then tlc and cuDNN are timed alternately in this
process (CUDA events, the L2 flushed before each run, the median; tlc.timing), and the table
gives each one's TFLOP/s (2 * N * OH * OW * F * K * K * C / G flops) and tlc's time over
cuDNN's ratio as cuDNN / tlc (above 1.0: tlc faster).

    python bench/conv.py [--quick] [--only NAME,NAME] [--json out.json] [--variant [ROW:]BM=64,BN=256 ...] [--min-ms 60]
                         [--gemm]  # also std.gemm's matmul_nt and cuBLAS on each row's GEMM
                         [--source FILE.tl[@BN=256,...] ...]   # also FILE's conv2d (same signature, these
                                                  # constants over the row's), checked and timed:
                                                  # bench/conv_im2col_gather.tl, bench/conv_im2col_tma.tl (the
                                                  # TMA im2col ring), bench/conv_rows_tma.tl (stride 1)
    python bench/conv.py --dry-run    # no GPU: every row's kernel at a small batch on the interpreter
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# name: (N, H, W, C, F, K, stride, pad, groups)
ROWS = {
    "r50_stem_7x7": (64, 224, 224, 3, 64, 7, 2, 3, 1),
    "r50_s1_1x1_64": (64, 56, 56, 64, 64, 1, 1, 0, 1),
    "r50_s1_3x3_64": (64, 56, 56, 64, 64, 3, 1, 1, 1),
    "r50_s1_1x1_256": (64, 56, 56, 64, 256, 1, 1, 0, 1),
    "r50_s1_1x1_in256": (64, 56, 56, 256, 64, 1, 1, 0, 1),
    "r50_s2_3x3_128": (64, 56, 56, 128, 128, 3, 2, 1, 1),
    "r50_s2_3x3_128b": (64, 28, 28, 128, 128, 3, 1, 1, 1),
    "r50_s2_1x1_512": (64, 28, 28, 128, 512, 1, 1, 0, 1),
    "r50_s3_3x3_256": (64, 14, 14, 256, 256, 3, 1, 1, 1),
    "r50_s3_1x1_1024": (64, 14, 14, 256, 1024, 1, 1, 0, 1),
    "r50_s4_3x3_512": (64, 7, 7, 512, 512, 3, 1, 1, 1),
    "r50_s4_1x1_2048": (64, 7, 7, 512, 2048, 1, 1, 0, 1),
    "conv3x3_56_256": (64, 56, 56, 256, 256, 3, 1, 1, 1),
    "dw3x3_56_256": (64, 56, 56, 256, 256, 3, 1, 1, 256),
    "dw3x3_s2_112_96": (64, 112, 112, 96, 96, 3, 2, 1, 96),
}
QUICK = ("r50_s1_3x3_64", "r50_s3_3x3_256", "r50_s4_1x1_2048", "conv3x3_56_256", "dw3x3_56_256")


def out_size(h, k, s, p, d=1):
    return (h + 2 * p - d * (k - 1) - 1) // s + 1


def tiles(N, H, W, C, F, K, S, P, G) -> dict:
    """The constants std.conv's kernel runs a row with: narrower output-channel tiles for few
    channels (F = 64 fills half of a 128-wide tile)."""
    if G == C and G == F:
        return {}
    return {"BN": 64} if F <= 64 else {}


def _consts(variant: str) -> dict:
    """"BM=64,BN=256,FLAT=False" -> {"BM": 64, "BN": 256, "FLAT": False}."""
    def value(k, v):
        if v in ("True", "False"):
            return v == "True"
        try:
            return int(v)
        except ValueError:
            raise SystemExit(f"bench/conv.py: --variant {variant}: {k}={v} is not an integer, True or False") from None
    return {k: value(k, v) for k, v in (kv.split("=", 1) for kv in variant.split(",") if kv)}


def row_variants(name: str, variants) -> list:
    """The --variant constants that row `name` runs: each without a row, and ROW:CONSTS of its own."""
    return [v.partition(":")[2] if ":" in v else v for v in variants if ":" not in v or v.partition(":")[0] == name]


def run_rows(names, dry_run: bool, variants=(), min_ms: float = 60, sources=(), same_gemm: bool = False) -> list:
    import numpy as np

    import tlc

    if dry_run:
        sys.path.insert(0, str(ROOT / "tests" / "stdlib"))
        import conv_kit as ck  # the NumPy references

        conv = tlc.load("std.conv", target="cpu")
        out = []
        rng = np.random.default_rng(0)
        for name in names:
            N, H, W, C, F, K, S, P, G = ROWS[name]
            N, H, W = 1, min(H, 9), min(W, 9)
            C, F = min(C, 32 if G == 1 else 16), min(F, 32 if G == 1 else 16)
            G = C if G > 1 else 1
            x = rng.standard_normal((N, H, W, C)).astype(np.float16)
            w = rng.standard_normal((F, K, K, C // G)).astype(np.float16)
            ref = ck.conv2d(x, w, S, P, groups=G) if G == 1 else ck.depthwise_conv2d(x, w.reshape(C, K, K), S, P)
            y = np.full(ref.shape, np.nan, np.float16)
            if G == 1:
                conv.conv2d(x, w, y, S=S, P=P, BM=32, BN=16, BK=16, stages=2, THREADS=64)
            else:
                conv.depthwise_conv2d(x, w.reshape(C, K, K), y, S=S, P=P)
            err = float(np.abs(y - ref).max() / np.abs(ref).max())
            out.append({"name": name, "rel_err": err, "ok": err < 1e-2})
            print(f"{name:20s} interp rel err {err:.2e} {'ok' if err < 1e-2 else 'WRONG'}", flush=True)
        return out

    import torch
    import torch.nn.functional as Fn

    from tlc.timing import Checked, compare_checked, tolerance

    torch.backends.cudnn.allow_tf32 = False  # the f32 references exact f32, not TF32 (PyTorch's default for convolutions)
    conv = tlc.load("std.conv", target="cuda")
    gemm = tlc.load("std.gemm", target="cuda") if same_gemm else None
    # FILE.tl or FILE.tl@BN=256,stages=4: that file's conv2d, with these constants over the row's
    others = {}
    for s in sources:
        path, _, extra = s.partition("@")
        others[f"tlc[{Path(path).name}{'@' + extra if extra else ''}]"] = (tlc.load(path, target="cuda"),
                                                                           _consts(extra) if extra else {})
    out = []
    for name in names:
        N, H, W, C, F, K, S, P, G = ROWS[name]
        OH, OW = out_size(H, K, S, P), out_size(W, K, S, P)
        flops = 2.0 * N * OH * OW * F * K * K * C / G
        gen = torch.Generator(device="cuda").manual_seed(0)
        xt = torch.randn(N, C, H, W, device="cuda", generator=gen).half().to(memory_format=torch.channels_last)
        wt = (torch.randn(F, C // G, K, K, device="cuda", generator=gen) / (K * K * C / G) ** 0.5).half() \
            .to(memory_format=torch.channels_last)
        x = xt.permute(0, 2, 3, 1)  # NHWC views of the same memory: no copy
        w = wt.permute(0, 2, 3, 1)
        assert x.is_contiguous() and w.is_contiguous()
        ref = Fn.conv2d(xt.float(), wt.float(), stride=S, padding=P, groups=G).permute(0, 2, 3, 1)
        y = torch.empty(N, OH, OW, F, device="cuda", dtype=torch.float16)
        tol = tolerance("float16", ref, 8)
        contenders = {}
        for label, extra in [("tlc", {}), *((f"tlc[{v}]", _consts(v)) for v in row_variants(name, variants))]:
            consts = {**tiles(N, H, W, C, F, K, S, P, G), **extra}
            out_y = y if label == "tlc" else torch.empty_like(y)
            try:
                if G == 1:
                    run = conv.conv2d.launcher(x, w, out_y, S=S, P=P, **consts)
                else:
                    run = conv.depthwise_conv2d.launcher(x, w.reshape(C, K, K), out_y, S=S, P=P, **consts)
            except Exception as e:  # a variant that does not fit (shared memory, registers): reported
                print(f"    {label}: {type(e).__name__}: {str(e).strip().splitlines()[0][:200]}", flush=True)
                continue
            contenders[label] = Checked(run, ref, out=out_y, **tol)
        for label, (module, extra) in others.items():
            if G == C and G == F and hasattr(module, "depthwise_conv2d"):  # a depthwise row: the file's depthwise kernel
                out_y = torch.empty_like(y)
                try:
                    run = module.depthwise_conv2d.launcher(x, w.reshape(C, K, K), out_y, S=S, P=P, **extra)
                except Exception as e:
                    print(f"    {label}: {type(e).__name__}: {str(e).strip().splitlines()[0][:200]}", flush=True)
                    continue
                contenders[label] = Checked(run, ref, out=out_y, **tol)
            elif G == 1 and hasattr(module, "conv2d"):
                out_y = torch.empty_like(y)
                try:
                    run = module.conv2d.launcher(x, w, out_y, S=S, P=P, **{**tiles(N, H, W, C, F, K, S, P, G), **extra})
                except Exception as e:  # reported, as a variant's
                    print(f"    {label}: {type(e).__name__}: {str(e).strip().splitlines()[0][:200]}", flush=True)
                    continue
                contenders[label] = Checked(run, ref, out=out_y, **tol)
        contenders["cudnn"] = Checked(lambda: Fn.conv2d(xt, wt, stride=S, padding=P, groups=G), ref.permute(0, 3, 1, 2),
                                      **tol)
        t0 = time.time()
        ms, verdicts = compare_checked(contenders, min_ms=min_ms)
        row = {"name": name, "shape": ROWS[name], "flops": flops,
               "verdicts": {k: (v.ok, v.why, v.rel_err) for k, v in verdicts.items()}}
        for k, v in ms.items():
            row[f"{k}_ms"] = v
            row[f"{k}_tflops"] = flops / v / 1e9
        if "tlc_ms" in row and "cudnn_ms" in row:
            row["ratio"] = row["cudnn_ms"] / row["tlc_ms"]
        out.append(row)
        bad = "; ".join(f"{k} {v.why}" for k, v in verdicts.items() if not v.ok)
        for k in ms:
            if k.startswith("tlc[") and "cudnn_ms" in row:
                print(f"    {k:32s} {row[f'{k}_tflops']:7.1f} TFLOP/s  ratio {row['cudnn_ms'] / row[f'{k}_ms']:5.2f}")
        print(f"{name:20s} tlc {row.get('tlc_tflops', float('nan')):7.1f} TFLOP/s  cudnn "
              f"{row.get('cudnn_tflops', float('nan')):7.1f} TFLOP/s  ratio {row.get('ratio', float('nan')):5.2f}"
              f"  ({time.time() - t0:.1f} s){'  ' + bad if bad else ''}", flush=True)
        del xt, wt, x, w, y, ref
        torch.cuda.empty_cache()
        if gemm and G == 1:
            row.update(_same_gemm(name, gemm, torch, (N * OH * OW, F, K * K * C), tiles(N, H, W, C, F, K, S, P, G),
                                  min_ms))
    return out


def _same_gemm(name: str, mod, torch, shape: tuple, consts: dict, min_ms: float) -> dict:
    """std.gemm's matmul_nt and cuBLAS (torch.mm) on the GEMM a convolution row is, [M, K] @ [N, K].T
    with M its output pixels, N its output channels and K its kernel positions times channels
    (random operands, each output checked first): what the GEMM schedule reaches at this size."""
    from tlc.timing import Checked, compare_checked, tolerance

    M, N, K = shape
    gen = torch.Generator(device="cuda").manual_seed(1)
    a = torch.randn(M, K, device="cuda", generator=gen).half()
    b = (torch.randn(N, K, device="cuda", generator=gen) / K ** 0.5).half()
    ref = a.float() @ b.float().T
    c = torch.empty(M, N, device="cuda", dtype=torch.float16)
    tol = tolerance("float16", ref, 8)
    ms, verdicts = compare_checked({"gemm_tlc": Checked(mod.matmul_nt.launcher(a, b, c, **consts), ref, out=c, **tol),
                                    "gemm_cublas": Checked(lambda: a @ b.T, ref, **tol)}, min_ms=min_ms)
    flops = 2.0 * M * N * K
    out = {f"{k}_tflops": flops / v / 1e9 for k, v in ms.items()}
    bad = "; ".join(f"{k} {v.why}" for k, v in verdicts.items() if not v.ok)
    print(f"    the same GEMM {M}x{N}x{K}: std.gemm matmul_nt {out.get('gemm_tlc_tflops', float('nan')):7.1f} "
          f"TFLOP/s  cuBLAS {out.get('gemm_cublas_tflops', float('nan')):7.1f}{'  ' + bad if bad else ''}", flush=True)
    del a, b, ref, c
    torch.cuda.empty_cache()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="only " + ", ".join(QUICK))
    ap.add_argument("--only", default="", help="comma-separated row names")
    ap.add_argument("--json", default="", help="write the rows here")
    ap.add_argument("--dry-run", action="store_true", help="the rows' kernels on the interpreter, no GPU")
    ap.add_argument("--variant", action="append", default=[],
                    help="also time tlc with these constants (BM=64,BN=256; ROW:BM=64 on that row only), each "
                         "checked; repeatable")
    ap.add_argument("--source", action="append", default=[],
                    help="also time this .tl file's conv2d (std.conv's signature) with the same tiles; repeatable")
    ap.add_argument("--gemm", action="store_true",
                    help="also time std.gemm's matmul_nt and cuBLAS on each row's GEMM ([pixels, K*K*C] @ [F, K*K*C].T)")
    ap.add_argument("--min-ms", type=float, default=60, help="each contender timed for at least this long (tlc.timing)")
    args = ap.parse_args(argv)
    names = [n for n in args.only.split(",") if n] or list(QUICK if args.quick else ROWS)
    unknown = [n for n in names if n not in ROWS]
    if unknown:
        ap.error(f"no such rows: {', '.join(unknown)}")
    strays = [v for v in args.variant if ":" in v and v.partition(":")[0] not in names]
    if strays:
        ap.error(f"--variant {strays[0]}: no such row among those run")
    rows = run_rows(names, args.dry_run, args.variant, args.min_ms, args.source, args.gemm)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0 if all(r.get("ok", all(v[0] for v in r.get("verdicts", {}).values())) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
