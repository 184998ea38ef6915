"""Why std.attention's flash_decode_paged trails flash_decode (#19): one process, each output checked.

bench/attention.py's decode rows (B=64, H=32, one new token, SK=8192, D=128, f16; MHA and GQA
with 8 KV heads) with the cache in four forms, every contender's O checked against the f32
reference (16 f16 units, bench/attention.py's tolerance) before the median of alternating runs
counts, cuDNN timed beside them on the contiguous cache:

- contig: flash_decode on K, V (B, HK, SK, D): each block's keys one contiguous run.
- contig3: contig with STAGES=3 (BLOCKS=264, blocks_per_sm 3 then unreachable: two fit).
- paged: flash_decode_paged on vLLM's layout (NP, PAGE, HK, D), pages shuffled (the table row).
- inorder: the same layout, the pages in order (page p of sequence b at b * SK / PAGE + p): what
  the table's order costs (DRAM pages, TLB reach).
- paged3: paged with STAGES=3 (BLOCKS=264: two blocks an SM fit): two pages in flight a block
  where STAGES=2 keeps one, for a table whose every step may miss the TLB.
- hnd: flash_decode_paged on pages of one KV head each, (NP, PAGE, 1, D), shuffled: a page a
  contiguous 16 KB where vLLM's layout reads PAGE runs of 256 bytes HK * 256 bytes apart (each
  (sequence, KV head) one sequence of G query heads: the same bytes, the same kernel).

    python bench/decode_paged.py [--rows mha,gqa] [--min-ms 100]

GB/s count K and V once (2 * B * HK * SK * D * 2 bytes), as bench/attention.py's decode rows.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import tlc  # noqa: E402
from tlc.timing import Checked, compare_checked  # noqa: E402

from attention import ROWS, forward_inputs, paged, vendor  # noqa: E402

CASES = {"mha": "decode_f16", "gqa": "decode_f16_gqa"}
PAGE = 64


def shuffled_pages(torch, pages, seed=2):
    """`pages` (N, ...) at random places of a new cache, and where each went (N,) int32."""
    perm = torch.randperm(pages.shape[0], device=pages.device, generator=torch.Generator(device="cuda").manual_seed(seed))
    out = torch.empty_like(pages)
    out[perm] = pages
    return out, perm.to(torch.int32)


def contenders(torch, F, mod, case):
    """`case`'s contenders (name -> tlc.timing.Checked, cuDNN last) and its K and V bytes."""
    from torch.nn.attention import SDPBackend

    spec = ROWS[CASES[case]]
    _, B, H, HK, S, SK, D, causal, _ = spec
    G, mp = H // HK, SK // PAGE
    q, k, v, scale, ref, tol = forward_inputs(torch, F, spec)
    outs = {}
    lse = torch.empty(B, H, S, device="cuda", dtype=torch.float32)

    def out(name, shape=None):
        outs[name] = torch.empty(shape or q.shape, device="cuda", dtype=q.dtype)
        return outs[name]
    runs = {}
    o = out("contig")
    runs["contig"] = lambda o=o: mod.flash_decode(q, k, v, o, lse, scale)
    o = out("contig3")
    runs["contig3"] = lambda o=o: mod.flash_decode(q, k, v, o, lse, scale, STAGES=3, BLOCKS=264)
    kp, vp, table, lengths = paged(torch, k, v, PAGE)
    o = out("paged")
    runs["paged"] = lambda o=o: mod.flash_decode_paged(q, kp, vp, table, lengths, o, lse, scale)
    o = out("paged3")
    runs["paged3"] = lambda o=o: mod.flash_decode_paged(q, kp, vp, table, lengths, o, lse, scale, STAGES=3, BLOCKS=264)
    # the same layout, pages in order
    ki, vi = (x.reshape(B, HK, mp, PAGE, D).permute(0, 2, 3, 1, 4).reshape(B * mp, PAGE, HK, D).contiguous()
              for x in (k, v))
    order = torch.arange(B * mp, device="cuda", dtype=torch.int32).reshape(B, mp)
    o = out("inorder")
    runs["inorder"] = lambda o=o: mod.flash_decode_paged(q, ki, vi, order, lengths, o, lse, scale)
    # a page per KV head: sequence (b, hk) of G query heads, its pages shuffled
    kh, perm = shuffled_pages(torch, k.reshape(B * HK * mp, PAGE, 1, D))
    vh = torch.empty_like(kh)
    vh[perm.long()] = v.reshape(B * HK * mp, PAGE, 1, D)
    table_h = perm.reshape(B * HK, mp)
    lengths_h = torch.full((B * HK,), SK, dtype=torch.int32, device="cuda")
    qh = q.reshape(B * HK, G, S, D)
    oh = out("hnd", (B * HK, G, S, D))
    lse_h = torch.empty(B * HK, G, S, device="cuda", dtype=torch.float32)
    runs["hnd"] = lambda o=oh: mod.flash_decode_paged(qh, kh, vh, table_h, lengths_h, o, lse_h, scale)
    checked = {name: Checked(run, ref.reshape(outs[name].shape), out=outs[name], **tol) for name, run in runs.items()}
    checked["cudnn"] = Checked(vendor(torch, F, SDPBackend.CUDNN_ATTENTION, q, k, v, scale, causal), ref, **tol)
    return checked, 2.0 * B * HK * SK * D * q.element_size()


def measure(torch, F, mod, case, min_ms):
    checked, kv_bytes = contenders(torch, F, mod, case)
    ms, verdicts = compare_checked(checked, min_ms=min_ms)
    for name in checked:
        if not verdicts[name].ok:
            print(f"{case:4} {name:8} {verdicts[name].why}", flush=True)
            continue
        rate = kv_bytes / ms[name] / 1e6
        print(f"{case:4} {name:8} {ms[name] * 1e3:8.1f} us  {rate:7.1f} GB/s  {ms['cudnn'] / ms[name]:.3f}x cuDNN"
              f"  {ms['contig'] / ms[name]:.3f}x contig", flush=True)
    del checked
    torch.cuda.empty_cache()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="mha,gqa")
    ap.add_argument("--min-ms", type=float, default=100.0)
    args = ap.parse_args(argv)
    import torch
    import torch.nn.functional as F

    mod = tlc.load(str(ROOT / "stdlib" / "attention.tl"), target="cuda")
    print(torch.cuda.get_device_name(), flush=True)
    for case in args.rows.split(","):
        measure(torch, F, mod, case, args.min_ms)


if __name__ == "__main__":
    main()
