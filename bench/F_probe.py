"""Helper F's decode probe (session 18, issue #19): std.attention's flash_decode and
flash_decode_paged (the flat walk over BLOCKS resident blocks) and variants of their constants,
against the kernels they replaced (bench/F_old_decode.tl: a grid of SPLITS blocks an item) and
cuDNN, in one process; every output checked against PyTorch's f32 math backend before it is
timed (tlc.timing.compare_checked, as bench/attention.py).  GB/s of K and V read once.

    python bench/F_probe.py [--min-ms 100] [--rows mha,gqa,mha_paged,gqa_paged]
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

import attention as A  # noqa: E402  (bench/attention.py: inputs, reference, vendors, paging)

ROWS = {"mha": ("float16", 64, 32, 32, 1, 8192, 128, False, {}),
        "gqa": ("float16", 64, 32, 8, 1, 8192, 128, False, {}),
        "mha_paged": ("float16", 64, 32, 32, 1, 8192, 128, False, {"PAGE": 64}),
        "gqa_paged": ("float16", 64, 32, 8, 1, 8192, 128, False, {"PAGE": 64})}
# the flat walk's constants: the default (396 blocks, 2 stages of 64 keys), two blocks an SM in
# three stages, 4 stages of 32 keys
VARIANTS = {"b264_s3": {"BLOCKS": 264, "STAGES": 3}, "bn32_s4": {"BN": 32, "STAGES": 4}}


def decode(torch, F, std, old, rows, min_ms):
    from torch.nn.attention import SDPBackend
    for name in rows:
        spec = ROWS[name]
        t0 = time.time()
        dtype, B, H, HK, S, SK, D, causal, consts = spec
        q, k, v, scale, ref, tol = A.forward_inputs(torch, F, spec)
        contenders = {}

        def add(label, fn, **c):
            o = torch.empty_like(q)
            lse = torch.empty(B, H, S, device="cuda", dtype=torch.float32)
            contenders[label] = Checked(lambda: fn(o, lse, **c), ref, out=o, **tol)
        if "PAGE" in consts:  # pages of 64 at shuffled places (the vendor reads the cache contiguous)
            kp, vp, table, lengths = A.paged(torch, k, v, consts["PAGE"])
            for label, mod in (("std", std), ("old", old)):
                add(label, lambda o, lse, mod=mod, **c: mod.flash_decode_paged(q, kp, vp, table, lengths, o, lse, scale, **c))
            add("stages3", lambda o, lse, **c: std.flash_decode_paged(q, kp, vp, table, lengths, o, lse, scale, **c),
                BLOCKS=264, STAGES=3)
        else:
            for label, mod in (("std", std), ("old", old)):
                add(label, lambda o, lse, mod=mod, **c: mod.flash_decode(q, k, v, o, lse, scale, **c))
            for label, c in VARIANTS.items():
                add(label, lambda o, lse, **c: std.flash_decode(q, k, v, o, lse, scale, **c), **c)
        contenders["cudnn"] = Checked(A.vendor(torch, F, SDPBackend.CUDNN_ATTENTION, q, k, v, scale, causal), ref, **tol)
        ms, verdicts = compare_checked(contenders, min_ms=min_ms)
        gb = 2.0 * B * HK * SK * D * q.element_size()
        rates = {lab: gb / ms[lab] / 1e6 for lab in ms}
        line = "  ".join(f"{lab} {rates[lab]:.0f}" + (f" ({rates[lab] / rates['cudnn']:.3f}x)" if "cudnn" in rates else "")
                         for lab in rates)
        print(f"decode {name} B={B} H={H} HK={HK} SK={SK} GB/s: {line}   ({time.time() - t0:.0f} s)", flush=True)
        for lab, verdict in verdicts.items():
            if not verdict.ok:
                print(f"    {lab}: {verdict.why}", flush=True)
        del q, k, v, ref, contenders
        torch.cuda.empty_cache()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--min-ms", type=float, default=100.0)
    ap.add_argument("--rows", default=",".join(ROWS))
    args = ap.parse_args()
    import torch
    import torch.nn.functional as F
    std = tlc.load("std.attention", target="cuda")
    old = tlc.load(str(ROOT / "bench" / "F_old_decode.tl"), target="cuda")
    decode(torch, F, std, old, args.rows.split(","), args.min_ms)


if __name__ == "__main__":
    main()
