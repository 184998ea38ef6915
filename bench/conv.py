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
    python bench/conv.py --bwd [--only ...] [--variant ...] [--source FILE.tl ...]
                                      # the backwards instead: std.conv's conv2d_bwd_data (dx) and
                                      # conv2d_bwd_weight (dw) against cuDNN's (aten.convolution_backward
                                      # on the channels_last tensors, as autograd calls it) on each row of
                                      # one group; --variant DATA:BM=64 / WEIGHT:SPLIT=1 for one of them,
                                      # FILE's conv2d_bwd_data / conv2d_bwd_weight too (the stem: dw only)
    python bench/conv.py --dry-run    # no GPU: every row's kernel at a small batch on the interpreter
    TLC_CACHE_DIR=... python bench/conv.py --stream-k ...   # stream-K on (schedule/stream_k.py; off by default)
    TLC_CACHE_DIR=... python bench/conv.py --tiled-1x1 ...  # 1x1 windows as tiled boxes (im2col_tma.TILED_IDENTITY)
    TLC_CACHE_DIR=... python bench/conv.py --no-pad-odd-rows ...  # odd-chunk gemm operand rows unpadded (smem.ODD_CHUNK_ROWS off)
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


def _load_sources(tlc, sources) -> dict:
    """FILE.tl or FILE.tl@BN=256,stages=4 (--source): label -> (that file's module, its constants)."""
    out = {}
    for src in sources:
        path, _, extra = src.partition("@")
        out[f"tlc[{Path(path).name}{'@' + extra if extra else ''}]"] = (tlc.load(path, target="cuda"),
                                                                        _consts(extra) if extra else {})
    return out


def _contender(label: str, launcher, ref, out, tol: dict):
    """`launcher()`'s launch checked against `ref` (tlc.timing.Checked), or None where it cannot
    launch (a variant that does not fit: shared memory, registers), which is reported."""
    from tlc.timing import Checked

    try:
        run = launcher()
    except Exception as e:
        print(f"    {label}: {type(e).__name__}: {str(e).strip().splitlines()[0][:200]}", flush=True)
        return None
    return Checked(run, ref, out=out, **tol)


def _launch(kernel, *args, **kwargs):
    """A run of `kernel` on these arguments for timing: its launcher() where it is one grid; a kernel
    of several grids (conv2d_bwd_weight: the tiles' parts, then dw's sum of them), which launcher()
    cannot hold, called whole at each run, its Python call's microseconds timed with it (launched
    once here, so that a variant that cannot launch is reported as launcher()'s are)."""
    if kernel.grid_count == 1:
        return kernel.launcher(*args, **kwargs)
    kernel(*args, **kwargs)
    return lambda: kernel(*args, **kwargs)


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
    others = _load_sources(tlc, sources)  # each file's conv2d, with its constants over the row's
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
        own = [("tlc", conv, {}), *((f"tlc[{v}]", conv, _consts(v)) for v in row_variants(name, variants))]
        for label, module, extra in own + [(label, m, e) for label, (m, e) in others.items()]:
            out_y = y if label == "tlc" else torch.empty_like(y)
            if G == C and G == F and hasattr(module, "depthwise_conv2d"):  # a depthwise row
                make = (lambda m=module, o=out_y, e=extra: m.depthwise_conv2d.launcher(
                    x, w.reshape(C, K, K), o, S=S, P=P, **{**tiles(N, H, W, C, F, K, S, P, G), **e}))
            elif G == 1 and hasattr(module, "conv2d"):
                make = (lambda m=module, o=out_y, e=extra: m.conv2d.launcher(
                    x, w, o, S=S, P=P, **{**tiles(N, H, W, C, F, K, S, P, G), **e}))
            else:
                continue
            c = _contender(label, make, ref, out_y, tol)
            if c is not None:
                contenders[label] = c
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


def bwd_variants(name: str, kind: str, variants) -> list:
    """The --variant constants that row `name`'s backward `kind` ("data", "weight") runs: each
    variant's filters before its constants (DATA, WEIGHT, a row's name; none: every one) must
    all match: "DATA:r50_s1_3x3_64:BN=64" is dx's on that row."""
    out = []
    for v in variants:
        *filters, consts = v.split(":")
        if all(f == kind.upper() or f == name for f in filters):
            out.append(consts)
    return out


def run_bwd(names, variants=(), min_ms: float = 60, sources=()) -> list:
    """The backwards of each row of one group: dx (not for the stem, whose input is the image)
    and dw, tlc and cuDNN timed alternately, every output checked first against PyTorch's f32
    gradient (torch.nn.grad).  The --variants as bwd_variants picks them."""
    import torch

    import tlc
    from tlc.timing import Checked, compare_checked, tolerance

    torch.backends.cudnn.allow_tf32 = False
    conv = tlc.load("std.conv", target="cuda")
    others = _load_sources(tlc, sources)
    out = []
    for name in names:
        N, H, W, C, F, K, S, P, G = ROWS[name]
        if G != 1:
            continue
        OH, OW = out_size(H, K, S, P), out_size(W, K, S, P)
        flops = 2.0 * N * OH * OW * F * K * K * C
        gen = torch.Generator(device="cuda").manual_seed(0)
        xt = torch.randn(N, C, H, W, device="cuda", generator=gen).half().to(memory_format=torch.channels_last)
        wt = (torch.randn(F, C, K, K, device="cuda", generator=gen) / (K * K * C) ** 0.5).half() \
            .to(memory_format=torch.channels_last)
        dyt = torch.randn(N, F, OH, OW, device="cuda", generator=gen).half().to(memory_format=torch.channels_last)
        x, w, dy = (t.permute(0, 2, 3, 1) for t in (xt, wt, dyt))  # NHWC views, no copy
        nhwc = lambda t: t.permute(0, 2, 3, 1)  # noqa: E731

        def cudnn(mask):
            return lambda: torch.ops.aten.convolution_backward(dyt, xt, wt, None, [S, S], [P, P], [1, 1], False,
                                                               [0, 0], 1, mask)
        for kind in ("data", "weight"):
            if kind == "data" and C < 8:
                continue  # the stem: its input is the image, no gradient wanted
            if kind == "data":
                ref = nhwc(torch.nn.grad.conv2d_input(xt.shape, wt.float(), dyt.float(), stride=S, padding=P))
                fn, args, res = "conv2d_bwd_data", lambda o: (dy, w, o), torch.empty_like(x)
                vendor = cudnn([True, False, False])
                pick = 0
            else:
                ref = nhwc(torch.nn.grad.conv2d_weight(xt.float(), wt.shape, dyt.float(), stride=S, padding=P))
                fn, args, res = "conv2d_bwd_weight", lambda o: (dy, x, o), torch.empty_like(w)
                vendor = cudnn([False, True, False])
                pick = 1
            tol = tolerance("float16", ref, 16)
            contenders = {}
            own = [("tlc", conv, {}), *((f"tlc[{v}]", conv, _consts(v)) for v in bwd_variants(name, kind, variants))]
            for label, module, extra in own + [(label, m, e) for label, (m, e) in others.items()]:
                if not hasattr(module, fn):
                    continue
                o = res if label == "tlc" else torch.empty_like(res)
                c = _contender(label, lambda m=module, o=o, e=extra: _launch(getattr(m, fn), *args(o), S=S, P=P, **e),
                               ref, o, tol)
                if c is not None:
                    contenders[label] = c
            contenders["cudnn"] = Checked(lambda v=vendor, i=pick: nhwc(v()[i]), ref, **tol)
            t0 = time.time()
            ms, verdicts = compare_checked(contenders, min_ms=min_ms)
            row = {"name": f"{name}:{kind}", "shape": ROWS[name], "flops": flops,
                   "verdicts": {k: (v.ok, v.why, v.rel_err) for k, v in verdicts.items()}}
            row.update({f"{k}_ms": v for k, v in ms.items()})
            out.append(row)
            bad = "; ".join(f"{k} {v.why}" for k, v in verdicts.items() if not v.ok)
            base = ms.get("cudnn")
            for k, v in ms.items():
                if k != "cudnn":
                    print(f"{name + ' d' + kind[0]:24s} {k:40s} {v * 1e3:8.1f} us {flops / v / 1e9:6.1f} TFLOP/s"
                          f"  ratio {base / v if base else float('nan'):5.2f}", flush=True)
            print(f"{name + ' d' + kind[0]:24s} {'cudnn':40s} {base * 1e3 if base else float('nan'):8.1f} us"
                  f"  ({time.time() - t0:.1f} s){'  ' + bad if bad else ''}", flush=True)
        del xt, wt, dyt, x, w, dy
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
    ap.add_argument("--stream-k", action="store_true",
                    help="stream-K on (tlc.schedule.stream_k.STREAM_K = True; off by default until timed): give the "
                         "process a TLC_CACHE_DIR of its own (the kernel cache's keys do not hold the switch)")
    ap.add_argument("--tiled-1x1", action="store_true",
                    help="an identity window's im2col tile (1x1, stride 1, no padding) as tiled boxes of x as "
                         "[N*H*W, C] (tlc.schedule.im2col_tma.TILED_IDENTITY = True; off by default until timed): "
                         "give the process a TLC_CACHE_DIR of its own")
    ap.add_argument("--no-pad-odd-rows", action="store_true",
                    help="a gemm operand's rows of an even number of 16-byte chunks left unpadded "
                         "(tlc.schedule.smem.ODD_CHUNK_ROWS = False, the default until session 28): the stem's "
                         "mma.sync operands; give the process a TLC_CACHE_DIR of its own")
    ap.add_argument("--bwd", action="store_true", help="the backwards (conv2d_bwd_data, conv2d_bwd_weight) against cuDNN's")
    ap.add_argument("--min-ms", type=float, default=60, help="each contender timed for at least this long (tlc.timing)")
    args = ap.parse_args(argv)
    names = [n for n in args.only.split(",") if n] or list(QUICK if args.quick else ROWS)
    unknown = [n for n in names if n not in ROWS]
    if unknown:
        ap.error(f"no such rows: {', '.join(unknown)}")
    strays = [v for v in args.variant if ":" in v and any(f not in names and not (args.bwd and f in ("DATA", "WEIGHT"))
                                                          for f in v.split(":")[:-1])]
    if strays:
        ap.error(f"--variant {strays[0]}: no such row among those run")
    if args.stream_k:
        from tlc.schedule import stream_k
        stream_k.STREAM_K = True
        print("stream-K on (tlc.schedule.stream_k.STREAM_K = True)", flush=True)
    if args.tiled_1x1:
        from tlc.schedule import im2col_tma
        im2col_tma.TILED_IDENTITY = True
        print("1x1 windows as tiled boxes (tlc.schedule.im2col_tma.TILED_IDENTITY = True)", flush=True)
    if args.no_pad_odd_rows:
        from tlc.schedule import smem
        smem.ODD_CHUNK_ROWS = False
        print("odd-chunk rows unpadded (tlc.schedule.smem.ODD_CHUNK_ROWS = False)", flush=True)
    if args.bwd:
        rows = run_bwd(names, args.variant, args.min_ms, args.source)
    else:
        rows = run_rows(names, args.dry_run, args.variant, args.min_ms, args.source, args.gemm)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0 if all(r.get("ok", all(v[0] for v in r.get("verdicts", {}).values())) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
