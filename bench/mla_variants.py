"""std.attention's mla_decode beside variants of its own .tl text, one process, on the GPU.

Each variant is the module's text with one edit (the table VARIANTS); every contender's O is
checked against an f32 reference before it is timed (tlc.timing.compare_checked: the median of
alternating runs, L2 flushed before each).  The rows are bench/attention.py's MLA rows (B
sequences of SK cached tokens in shuffled pages of 64, 128 heads, SQ new tokens causal among
themselves), TFLOP/s counted as FlashMLA counts them, 2 * B * SQ * H * SK * (DK + DV).

    python bench/mla_variants.py [--rows mla_b64_kv4096_sq1,...] [--variants std,onewg]

Session 24's H200 (its second queue round, C_mla_vote): at B=132 KV=16384 SQ=1,
std 1238.6 us (0.49 of the dense peak), nosoftmax 1000.8, qkonly 612.3 (the scores' product
alone at 0.53 of peak: bound by shared memory), onewg 1067.0 against std's 1251.6 in its own
comparison (1.17x; 1.125x at B=64 KV=4096).  The accumulator's rescale under a warp vote
(skipped by a warp whose factors were all 1) made std 2% slower and the lazy rescale of
FlashAttention 4 on top of it gained nothing: neither is kept.  Round 3, SQ = 2: onewg 1.095x
and 1.106-1.108x std at B=64 KV=4096 and B=132 KV=16384 (0.50 and 0.55 of peak), onewg2 below
onewg (1.067x and 1.089x: its second barrier costs more than the overlapped rescale saves).

Session 25 (bench/results/E_r*_mla_*-h200-twentyfifth.txt), std with the scores on one
warpgroup (schedule/one_warpgroup.py).  Round 1, warpgroup 1 syncing before P's store: std 1.01x
split at B=64 KV=4096 SQ=1 (167.3 against 169.0 us) and B=132 KV=16384 SQ=1 (1213.9 against
1229.3); nosoftmax 1.26x / 1.30x std (0.56 / 0.65 of peak), hot 1.03x / 1.00x (the loads do not
bound it), onewg 1.08x / 1.09x std.  Round 2, warpgroup 1 arriving (WarpSpecialization.arrivals):
std 1.015x / 1.048x split (163.3 against 165.9, 1220.0 against 1278.5 us; 0.45 / 0.50 of peak),
SQ=2 1.02x / 1.049x (308.9 against 314.8, 2383.2 against 2500.4 us); onewg 1.049x / 1.060x std,
onewgsync 1.070x / 1.092x: the prototype is faster still, and faster syncing than arriving, so
the barrier's kind is not what separates them.  Their SASS per page has the same instructions
(128 FMUL of the rescale, 36 + 4 HGMMA, 32 MUFU, 2 barriers; 168 registers) but for std's
scores cleared by 32 FSEL where the prototype's first HGMMA takes scale-d 0, and the place of
the barriers among warpgroup 0's max and exponentials.

- std: the module as it is.
- split: std's .tl with P copied into shared memory from a second fragment, which the
  one-warpgroup rule (schedule/one_warpgroup.py) does not see: the scores split by columns,
  each warpgroup's m64n32, as std was before session 25.
- hot: a diagnostic, std's kernel on a page table whose every page of sequence b is its first
  (read from L2 after the first time), checked against that attention: how much the pages'
  loads from memory cost.
- nosoftmax: a diagnostic, not attention: P = the scores themselves (rounded to bf16), no row
  statistics, no rescale, no division: O = bf16(Q K^T) V, checked against that.  Its time is
  the two products, the loads and the ring without the softmax between them.
- qkonly: a diagnostic: the scores' product alone (each warpgroup's m64n32 over K = 576, both
  reading Q from shared memory), stored to shared memory, no P @ V: O = 0 (checked so).  Its
  time against the products' 1152 cycles a page at the peak says whether shared memory bounds it.
- onewg: a hand-written prototype (bench/mla_onewg.py): the scores of a page on one warpgroup,
  m64n64, the softmax without exchanges between the warpgroups, P and the factors published
  through shared memory; the rest is tlc's kernel.  What a schedule pass doing so would gain.
- onewgsync: onewg with warpgroup 1 syncing at barrier 6 where warpgroup 0 does (before P's
  store), as the schedule's consumers did before WarpSpecialization.arrivals, rather than
  arriving there at each iteration's top.
- onewg2: the same with the factors published before the exponentials (barrier 7): warpgroup 1
  rescales its half of O while warpgroup 0 computes P, and issues its P @ V as soon as P is
  stored, warpgroup 0 rescaling its half under that product.
- sumfirst: std's .tl with the page's row sums taken (and the running sum updated) before P is
  copied into shared memory, as the prototype orders them: warpgroup 0 then stores P and the
  factors right before the barrier that publishes them.
- carry: std compiled with schedule/warpspec.py CARRIED_MIN_STAGES 2: P @ V stays in flight into
  the next iteration (the tensor cores run it and the next page's scores back to back), its
  stage released there once the scores' wait completes it, one iteration later than std's.
- uniform: std compiled with codegen/sm80.py UNIFORM_GUARDS: warpgroup 0's guards test a warp
  index broadcast from lane 0 (`tl_warp < 4`), which ptxas sees uniform in the warp, where
  `threadIdx.x < 128` made it test the row maxima's shuffles for divergence (a BRA.DIV and
  WARPSYNCs that it schedules nothing across); its SASS then interleaves as the prototype's.
- unicarry: uniform and carry together.
- early: unicarry with codegen/sm90.py EARLY_CARRIED_RELEASE: the last page's P @ V waited for
  right after this page's scores are issued (warpgroup 0 waiting with 2 groups left in flight,
  warpgroup 1 with none) and its stage released there, where carry releases it once the scores
  are done: the producer's next page gets about a product's time more to arrive.
"""
from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import tlc  # noqa: E402
from tlc.timing import Checked, compare_checked, tolerance  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
from attention import mla_inputs  # noqa: E402
from switches import switched  # noqa: E402

ROWS = {f"mla_b{B}_kv{SK}_sq{SQ}": (B, SK, SQ) for B in (64, 132) for SK in (4096, 16384) for SQ in (1, 2)}
H, DK, DV, PAGE = 128, 576, 512, 64
PEAK = 989.0
# variants that are std compiled with modules' constants set otherwise: ((module, name, value), ...)
_CARRY = ("tlc.schedule.warpspec", "CARRIED_MIN_STAGES", 2)
_UNIFORM = ("tlc.codegen.sm80", "UNIFORM_GUARDS", True)
_EARLY = ("tlc.codegen.sm90", "EARLY_CARRIED_RELEASE", True)
FLAGS = {"carry": (_CARRY,), "uniform": (_UNIFORM,), "unicarry": (_UNIFORM, _CARRY), "early": (_UNIFORM, _CARRY, _EARLY)}
COMPILED = set()  # those compiled in this process


def flag(*settings):
    """Each (module, name, value) of `settings`: the module's constant set to the value while the
    block runs."""
    return switched(settings)

SOFTMAX_FROM = "            if first + kb * PAGE + PAGE > seen:\n"
SOFTMAX_TO = "            gemm(probs, kv_tile, acc)\n"
SPLIT_FROM = "            copy(scores, probs)\n"
SPLIT_TO = "            copy(scores, held)\n            copy(held, probs)\n"
SCORES_DECL = "        scores = fragment(f32[BM, PAGE])\n"
HELD_DECL = "        held = fragment(f32[BM, PAGE])\n"


def mla_text() -> str:
    src = (ROOT / "stdlib" / "attention.tl").read_text()
    start = src.index("@kernel\ndef mla_decode")
    return "LOG2E: const = 1.4426950408889634\n\n\n" + src[start:]


def variant(name: str) -> str:
    text = mla_text()
    if name in ("std", "hot"):  # (hot: std's kernel on another page table, measure's)
        return text
    if name in FLAGS:  # std's text under its own name (its own cache entry), compiled with its flag
        return text.replace("def mla_decode(", f"def mla_decode_{name}(")
    if name == "sumfirst":
        a = text.index(SPLIT_FROM)
        b = text.index("            for i, j in parallel(BM, DV):\n                acc[i, j] *= rescale[i]\n")
        return text[:a] + text[a + len(SPLIT_FROM):b] + SPLIT_FROM + text[b:]
    if name == "nosoftmax":
        a, b = text.index(SOFTMAX_FROM), text.index(SOFTMAX_TO)
        text = text[:a] + "            copy(scores, probs)\n" + text[b:]
        return text.replace("acc[i, j] = acc[i, j] / row_sum[i] if row_sum[i] > 0.0 else 0.0", "acc[i, j] = acc[i, j]")
    if name in ("split", "onewg", "onewg2", "onewgsync"):
        # P copied into shared memory from a second fragment: the one-warpgroup rule (schedule/
        # one_warpgroup.py) sees no product handed over, and the scores stay split by columns
        text = text.replace(SPLIT_FROM, SPLIT_TO).replace(SCORES_DECL, SCORES_DECL + HELD_DECL)
    if name in ("onewg", "onewg2", "onewgsync"):  # the prototypes' kernels under their own names (bench/mla_onewg.py)
        return text.replace("def mla_decode(", f"def mla_decode_{name}(")
    if name == "split":
        return text
    if name == "qkonly":
        a, b = text.index(SOFTMAX_FROM), text.index(SOFTMAX_TO) + len(SOFTMAX_TO)
        return text[:a] + "            copy(scores, probs)\n" + text[b:]
    raise SystemExit(f"no variant {name}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="mla_b64_kv4096_sq1,mla_b132_kv16384_sq1")
    ap.add_argument("--variants", default="std,nosoftmax,qkonly,onewg")
    ap.add_argument("--min-ms", type=float, default=200.0)
    ap.add_argument("--together", action="store_true", help="every variant in one comparison, the prototypes too")
    args = ap.parse_args(argv)
    import torch

    tmp = Path(tempfile.mkdtemp())
    mods = {}
    if {"onewg", "onewg2", "onewgsync"} & set(args.variants.split(",")):
        from mla_onewg import patch_runtime
        patch_runtime("mla_decode_onewg", "mla_decode_onewg2", "mla_decode_onewgsync")
    for v in args.variants.split(","):
        path = tmp / f"mla_{v}.tl"
        path.write_text(variant(v))
        mods[v] = tlc.load(str(path), target="cuda")
    print(torch.cuda.get_device_name(), flush=True)
    rows = args.rows.split(",")
    # the prototype last and in its own comparison with std: a hang there loses only its rows
    first = [v for v in mods if not v.startswith("onewg")]
    std = ["std"] if "std" in mods else []
    # the prototypes one more at a time, each comparison printed before the next starts
    proto = [std + ["onewg"]] if "onewg" in mods else []
    proto += [std + [v for v in ("onewg", "onewg2") if v in mods]] if "onewg2" in mods else []
    groups = ([first] if first and first != ["std"] or not proto else []) + proto
    if args.together:
        groups = [list(mods)]
    for group in groups:
        for row in rows:
            measure(torch, row, {v: mods[v] for v in group}, args.min_ms)


def measure(torch, row, mods, min_ms):
    """One row: every variant in `mods` checked against its reference, then timed alternating."""
    B, SK, SQ = ROWS[row]
    mp = SK // PAGE
    dt = torch.bfloat16
    q, keys, cache, table, lengths = mla_inputs(torch, dt, B, SQ, H, SK, DK, PAGE)
    scale = 1.0 / math.sqrt(DK)
    ref = torch.empty(B, SQ, H, DV, device="cuda", dtype=torch.float32)
    raw = torch.empty(B, SQ, H, DV, device="cuda", dtype=torch.float32)
    ref_lse = torch.empty(B, H, SQ, device="cuda", dtype=torch.float32)
    seen = torch.arange(SK, device="cuda")[None, :] <= torch.arange(SQ, device="cuda")[:, None] + SK - SQ
    # hot: every page of sequence b its first (table[b, 0]), read from L2 after the first time
    hot = "hot" in mods
    hot_table = table[:, :1].expand(B, mp).contiguous() if hot else None
    ref_hot, lse_hot = (torch.empty_like(ref), torch.empty_like(ref_lse)) if hot else (None, None)
    for b in range(B):
        k = keys[b * mp:(b + 1) * mp].reshape(SK, DK).float()
        s = torch.einsum("shd,kd->shk", q[b].float(), k)
        raw[b] = s.bfloat16().float() @ k[:, :DV]  # (nosoftmax reads whole pages, unmasked)
        s = (s * scale).masked_fill(~seen[:, None, :], float("-inf"))
        ref[b] = torch.softmax(s, dim=-1) @ k[:, :DV]
        ref_lse[b] = torch.logsumexp(s, dim=-1).transpose(0, 1)
        if hot:
            k = keys[b * mp].float().repeat(mp, 1)
            s = (torch.einsum("shd,kd->shk", q[b].float(), k) * scale).masked_fill(~seen[:, None, :], float("-inf"))
            ref_hot[b] = torch.softmax(s, dim=-1) @ k[:, :DV]
            lse_hot[b] = torch.logsumexp(s, dim=-1).transpose(0, 1)
        del s, k
    outs = {v: torch.empty(B, SQ, H, DV, device="cuda", dtype=dt) for v in mods}
    lses = {v: torch.full((B, H, SQ), float("nan"), device="cuda", dtype=torch.float32) for v in mods}
    checked = {}
    for v, mod in mods.items():
        want = raw if v == "nosoftmax" else torch.zeros_like(ref) if v == "qkonly" else ref_hot if v == "hot" else ref

        def run(fn=getattr(mod, f"mla_decode_{v}" if v.startswith("onewg") or v in FLAGS else "mla_decode"),
                o=outs[v], lse=lses[v], t=hot_table if v == "hot" else table, v=v):
            if v in FLAGS and v not in COMPILED:  # its first call compiles it, under its flag
                with flag(*FLAGS[v]):
                    fn(q, cache, t, lengths, o, lse, scale)
                COMPILED.add(v)
            fn(q, cache, t, lengths, o, lse, scale)
        checked[v] = Checked(run, want, out=outs[v], **tolerance("bfloat16", want, 16))
    ms, verdicts = compare_checked(checked, min_ms=min_ms)
    flops = 2.0 * B * SQ * H * SK * (DK + DV)
    for v in mods:
        lse_err = (lses[v] - (lse_hot if v == "hot" else ref_lse)).abs().max().item() \
            if v in ("std", "split", "hot", "onewg", "onewg2", "onewgsync", "sumfirst", *FLAGS) else 0.0
        if not verdicts[v].ok or not lse_err <= 1e-3:
            print(f"{row:24} {v:10} {verdicts[v].why or f'WRONG: LSE off by {lse_err:.3g}'}", flush=True)
            continue
        t = ms[v]
        ratio = f"  ({ms['std'] / t:.3f}x std)" if "std" in ms else ""
        print(f"{row:24} {v:10} {t * 1e3:9.1f} us  {flops / t / 1e9:6.1f} TFLOP/s = "
              f"{flops / t / 1e9 / PEAK:.3f} of peak{ratio}", flush=True)
    del q, keys, cache, ref, raw, outs
    torch.cuda.empty_cache()

if __name__ == "__main__":
    main()
