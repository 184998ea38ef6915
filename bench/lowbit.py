"""Low-bit kernels on the GPU against PyTorch, one process (issue 18's benchmark): std.quant's
quantize / dequantize rows, each as a fraction of the device's copy bandwidth.

Every row runs tlc's kernel and PyTorch eager computing the same thing (quant_kit's definition:
scale = absmax / QMAX, q = rint(x * (QMAX / absmax)) saturated, f32 throughout), checks both
outputs (q and the scales) against a PyTorch reference of that definition element for element,
exactly, and only then times them (tlc.timing.compare: CUDA events, the L2 flushed by a read,
the median, the contenders alternating).  Bytes = inputs read + outputs written once (a
dynamic per-tensor or per-channel quantization reads x twice: its fraction of copy is at
most 2/3 of a one-pass kernel's); GB/s and its fraction of a device-to-device copy of 1 GiB
measured in the same run (tlc.benchmarks.ceilings).

    python bench/lowbit.py [--quick] [--only quantize_per_token,quantize_int4] [--json out.json]
    python bench/lowbit.py --w4a16 [--quick] [--m 1,4096] [--only "w4a16,w4a16 gemv"] [--json out.json] [--option MODULE.NAME=VALUE]
    python bench/lowbit.py --scaled [--quick] [--json out.json]

--w4a16: std.gemm's weight-only int4 GEMM instead (issue 18's w4a16 rows): a weight N = K = 8192
quantized by std.quant.quantize_uint4 (groups of 128, f32 scales, u8 zero points) and repacked by
repack_int4; decode (M = 1, 16, 64: matmul_w4a16, its split-K with splitk_reduce, and at M = 1
the CUDA-core GEMV matmul_w4a16_gemv) against
f16 F.linear on the weight dequantized in PyTorch, with each one's time as a fraction of the
copy bandwidth over the int4 weight alone (N * K / 2 bytes: what a decode kernel must read);
prefill (M = 4096: matmul_w4a16_prefill, and dequantize_w4a16 into an f16 buffer followed by
matmul_nt) against f16 F.linear (cuBLAS), in TFLOP/s.  Every
variant's output is checked against F.linear in f32 of the dequantized weight before its time
counts (tlc.timing.compare_checked).

--scaled: std.gemm's scaled 8-bit GEMMs (issue 18's W8A8 and row-wise f8 rows), 8192^3:
matmul_i8_scaled (i8 x i8, per-token x per-channel scales, bf16 out) against torch._int_mm (its
i32 product alone: the issue's reference) and against _int_mm followed by the scaling in PyTorch;
matmul_f8_rowwise (e4m3, bf16 out) against torch._scaled_mm's row-wise mode.  Each output is
checked against the f32 product of the same operands times the scales first.

tests/stdlib/test_quant.py checks the same kernels on the interpreter (no GPU here).
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import tlc  # noqa: E402

M, N = 16384, 8192  # the ops suite's LARGE shape: 256 MiB of f16


@dataclass(frozen=True)
class Row:
    name: str             # "quantize_per_token f16->i8"
    kernel: str           # std.quant's kernel
    make: Callable        # (torch, x) -> (tlc_args, out_names, torch_fn, reference dict, consts)


def _qmax(torch, q):
    return 127.0 if q == torch.int8 else float(torch.finfo(q).max)


def _sat(torch, v, q):
    if q == torch.int8:
        return torch.nan_to_num(v.round(), nan=0.0).clamp(-128, 127).to(torch.int8)
    m = _qmax(torch, q)
    return v.clamp(-m, m).to(q)


def _recip(torch, num, den):
    return torch.where(den > 0, num / den, torch.zeros_like(den))


def _div(torch, a, b: float):
    """a / b rounded once, as the kernels divide: PyTorch multiplies by the reciprocal when b is a
    Python number (a CPU scalar), which can differ in the last bit; a GPU tensor b divides."""
    return a / torch.tensor(b, device=a.device, dtype=torch.float32)


def _tiles(x, bm, bn):
    """x [M, N] seen as [M / bm, bm, N / bn, bn] (the shapes divide evenly here)."""
    return x.reshape(x.shape[0] // bm, bm, x.shape[1] // bn, bn)


def _per_tile(s):
    """Scales [M / bm, N / bn] against _tiles' view."""
    return s[:, None, :, None]


def quantize_grouped(torch, x, q, bm, bn):
    """PyTorch eager's dynamic quantization over bm x bn tiles: (q [M, N], scales [M / bm, N / bn])."""
    qm = _qmax(torch, q)
    a = torch.nan_to_num(_tiles(x, bm, bn).float().abs(), nan=0.0).amax(dim=(1, 3))
    a = a.clamp(max=torch.finfo(torch.float32).max)
    inv = _recip(torch, torch.tensor(qm, device=x.device), a)
    v = (_tiles(x, bm, bn).float() * _per_tile(inv)).reshape(x.shape)
    return _sat(torch, v, q), _div(torch, a, qm)


def dequantize_grouped(torch, qv, s, bm, bn, dtype):
    return (_tiles(qv, bm, bn).float() * _per_tile(s)).reshape(qv.shape).to(dtype)


def _qdtype(torch, qname):
    return getattr(torch, {"i8": "int8", "f8e4m3": "float8_e4m3fn", "f8e5m2": "float8_e5m2"}[qname])


def _flat(kind, s):
    """The kernels' scales as stored: [1] per tensor, [M] per token, [N] per channel."""
    return s.reshape(-1) if kind in ("tensor", "token", "channel") else s


def _quant_row(kind: str, qname: str, bm_bn):
    def make(torch, x):
        q = _qdtype(torch, qname)
        bm, bn = bm_bn(x.shape)
        want_q, want_s = quantize_grouped(torch, x, q, bm, bn)
        qout, sout = torch.empty_like(want_q), torch.empty_like(_flat(kind, want_s))
        ref = {"q": want_q, "scales": _flat(kind, want_s)}

        def torch_fn():
            qv, s = quantize_grouped(torch, x, q, bm, bn)
            return qv, _flat(kind, s)
        return [x, qout, sout], {"q": qout, "scales": sout}, torch_fn, ref, {"Q": qname}
    return make


def _dequant_row(kind: str, qname: str, bm_bn):
    def make(torch, x):
        bm, bn = bm_bn(x.shape)
        qv, s = quantize_grouped(torch, x, _qdtype(torch, qname), bm, bn)
        y = torch.empty_like(x)

        def torch_fn():
            return (dequantize_grouped(torch, qv, s, bm, bn, x.dtype),)
        return [qv, _flat(kind, s), y], {"y": y}, torch_fn, {"y": torch_fn()[0]}, {"Q": qname}
    return make


def quantize_int4_torch(torch, x, G):
    """(packed [M, N / 2] u8, scales [M, N / G]) of symmetric int4 in PyTorch eager."""
    a = torch.nan_to_num(_tiles(x, 1, G).float().abs(), nan=0.0).amax(dim=(1, 3))
    a = a.clamp(max=torch.finfo(torch.float32).max)
    inv = _recip(torch, torch.tensor(7.0, device=x.device), a)
    v = (_tiles(x, 1, G).float() * _per_tile(inv)).reshape(x.shape)
    n = torch.nan_to_num(v.round(), nan=0.0).clamp(-8, 7).to(torch.int32) & 15
    return (n[:, 0::2] | n[:, 1::2] << 4).to(torch.uint8), _div(torch, a, 7.0)


def _int4_rows():
    G = 128

    def quant(torch, x):
        want_q, want_s = quantize_int4_torch(torch, x, G)
        qout, sout = torch.empty_like(want_q), torch.empty_like(want_s)
        return ([x, qout, sout], {"q": qout, "scales": sout}, lambda: quantize_int4_torch(torch, x, G),
                {"q": want_q, "scales": want_s}, {"G": G})

    def dequant(torch, x):
        packed, s = quantize_int4_torch(torch, x, G)
        y = torch.empty_like(x)

        def torch_fn():
            b = packed.to(torch.int32)
            lo, hi = (b & 15) - ((b & 8) << 1), (b >> 4) - ((b & 128) >> 3)
            v = torch.stack([lo, hi], 2).reshape(x.shape)
            return ((_tiles(v, 1, G).float() * _per_tile(s)).reshape(x.shape).to(x.dtype),)
        return [packed, s, y], {"y": y}, torch_fn, {"y": torch_fn()[0]}, {"G": G}
    return [Row(f"quantize_int4 f16->i4 g{G}", "quantize_int4", quant),
            Row(f"dequantize_int4 i4->f16 g{G}", "dequantize_int4", dequant)]


def quantize_mx_torch(torch, x, q):
    """(q [M, N], e8m0 bytes [M, N / 32]) of OCP MX in PyTorch eager (std.quant's quantize_mx)."""
    m = _qmax(torch, q)
    emax = 8 if q == torch.float8_e4m3fn else 15
    a = torch.nan_to_num(_tiles(x, 1, 32).float().abs(), nan=0.0).amax(dim=(1, 3))
    a = a.clamp(max=torch.finfo(torch.float32).max)
    e = ((a.view(torch.int32) >> 23) - emax).clamp(0, 254)
    inv = torch.where(e < 254, ((254 - e) << 23).view(torch.float32), 2.0 ** -127)
    v = (_tiles(x, 1, 32).float() * _per_tile(inv)).reshape(x.shape)
    return v.clamp(-m, m).to(q), e.to(torch.uint8)


def _mx_rows():
    def quant(torch, x):
        want_q, want_e = quantize_mx_torch(torch, x, torch.float8_e4m3fn)
        qout, eout = torch.empty_like(want_q), torch.empty_like(want_e)
        return ([x, qout, eout], {"q": qout, "scales": eout},
                lambda: quantize_mx_torch(torch, x, torch.float8_e4m3fn), {"q": want_q, "scales": want_e}, {})

    def dequant(torch, x):
        qv, e = quantize_mx_torch(torch, x, torch.float8_e4m3fn)
        y = torch.empty_like(x)

        def torch_fn():
            s = torch.where(e > 0, (e.to(torch.int32) << 23).view(torch.float32), 2.0 ** -127)
            return ((_tiles(qv, 1, 32).float() * _per_tile(s)).reshape(x.shape).to(x.dtype),)
        return [qv, e, y], {"y": y}, torch_fn, {"y": torch_fn()[0]}, {}
    return [Row("quantize_mx f16->f8e4m3 (MXFP8, e8m0 / 32)", "quantize_mx", quant),
            Row("dequantize_mx f8e4m3->f16 (MXFP8)", "dequantize_mx", dequant)]


def rows() -> list:
    tensor = lambda s: s  # noqa: E731
    token = lambda s: (1, s[1])  # noqa: E731
    channel = lambda s: (s[0], 1)  # noqa: E731
    group = lambda s: (1, 128)  # noqa: E731
    block = lambda s: (128, 128)  # noqa: E731
    out = []
    for q in ("i8", "f8e4m3"):
        out += [Row(f"quantize_per_token f16->{q}", "quantize_per_token", _quant_row("token", q, token)),
                Row(f"dequantize_per_token {q}->f16", "dequantize_per_token", _dequant_row("token", q, token)),
                Row(f"quantize_per_group f16->{q} g128", "quantize_per_group", _quant_row("group", q, group)),
                Row(f"dequantize_per_group {q}->f16 g128", "dequantize_per_group", _dequant_row("group", q, group))]
    out += [Row("quantize_per_block f16->f8e4m3 128x128", "quantize_per_block", _quant_row("block", "f8e4m3", block)),
            Row("dequantize_per_block f8e4m3->f16 128x128", "dequantize_per_block",
                _dequant_row("block", "f8e4m3", block)),
            Row("quantize_per_tensor f16->f8e4m3 (2 reads)", "quantize_per_tensor",
                _quant_row("tensor", "f8e4m3", tensor)),
            Row("dequantize_per_tensor f8e4m3->f16", "dequantize_per_tensor", _dequant_row("tensor", "f8e4m3", tensor)),
            Row("quantize_per_channel f16->i8 (2 reads)", "quantize_per_channel", _quant_row("channel", "i8", channel)),
            Row("dequantize_per_channel i8->f16", "dequantize_per_channel", _dequant_row("channel", "i8", channel))]
    return out + _int4_rows() + _mx_rows()


def _bytes(args, reads_twice: bool) -> int:
    n = sum(a.numel() * a.element_size() for a in args)
    return n + (args[0].numel() * args[0].element_size() if reads_twice else 0)


def _same(torch, got, want) -> str:
    """'' where got equals want element for element (NaN where NaN), else what differs."""
    if got.shape != want.shape:
        return f"shape {tuple(got.shape)}, want {tuple(want.shape)}"
    g, w = got.double(), want.double()
    bad = ~((g == w) | (g.isnan() & w.isnan()))
    return f"{int(bad.sum())} of {bad.numel()} elements differ" if bool(bad.any()) else ""


def measure(row: Row, mod, torch, copy_gbs: float, min_ms: float, x) -> dict:
    from tlc.timing import compare

    args, outs, torch_fn, ref, consts = row.make(torch, x)
    kernel = getattr(mod, row.kernel)
    for o in outs.values():  # poison: an element never written shows (NaN; -128 or 0x80, never written here)
        o.view(torch.uint8).fill_(0x80 if o.dtype in (torch.int8, torch.uint8) else 0xFF)
    kernel(*args, **consts)
    torch.cuda.synchronize()
    record = {"row": row.name, "bytes": _bytes(args, "2 reads" in row.name)}
    wrong = "; ".join(f"{k}: {w}" for k, w in ((k, _same(torch, outs[k], ref[k])) for k in outs) if w)
    got_torch = torch_fn()
    torch_wrong = "; ".join(w for w in (_same(torch, g, r) for g, r in zip(got_torch, ref.values())) if w)
    contenders = {}
    if wrong:
        record["tlc_error"] = "WRONG: " + wrong
    else:
        contenders["tlc"] = lambda: kernel(*args, **consts)
    if torch_wrong:
        record["torch_error"] = "WRONG: " + torch_wrong
    else:
        contenders["torch"] = torch_fn
    ms = compare(contenders, min_ms=min_ms) if contenders else {}
    for who, t in ms.items():
        gbs = record["bytes"] / t / 1e6
        record[who] = {"ms": t, "gbs": gbs, "of_copy": gbs / copy_gbs}
    return record


def line(r: dict) -> str:
    def cell(who):
        if who in r:
            return f"{r[who]['ms'] * 1e3:8.1f} {r[who]['gbs']:6.0f} {r[who]['of_copy']:5.2f}"
        return f"{r.get(who + '_error', '-')[:30]:>20}"
    ratio = f"{r['torch']['ms'] / r['tlc']['ms']:5.2f}x" if "tlc" in r and "torch" in r else "    -"
    return f"{r['row']:<44} {r['bytes'] / 2 ** 20:6.0f}  {cell('tlc')}  {cell('torch')}  {ratio}"


HEADER = f"{'row':<44} {'MiB':>6}  {'tlc us':>8} {'GB/s':>6} {'copy':>5}  {'torch us':>8} {'GB/s':>6} {'copy':>5}  vs torch"


# ---- w4a16: std.gemm's weight-only int4 GEMM -----------------------------------------------------

W4_N = W4_K = 8192
W4_G = 128
W4_DECODE_M = (1, 16, 64)
W4_PREFILL_M = 4096
# (label, kernel, constants, split-K parts or 0): the decode variants timed at each M
# BN=32 on 64 threads: mma.sync (wgmma needs 64 rows of W), twice the blocks; split-K 8 on 4
# stages: smaller blocks, more of them on an SM; BN=128 on two warpgroups, split-K 2: 8 warps a
# block, as many blocks; split-K 4 on 3 stages: 33 KB a block at M = 16, 6 blocks an SM; BM=8:
# mma.sync (wgmma's n8 not taken), half the activations' tile of BM=16, where M = 1 uses one row
# "w4a16 gemv": matmul_w4a16_gemv, CUDA cores (M = 1 only: each row of A reads W again).
# stages=3, BN=128 on 256 threads, split-K 2 / 8 at 2-3 stages: how the time moves with the warps
# an SM holds (1 warpgroup a block, 128 blocks at N = 8192: one a SM) against the copies in flight;
# BK=256 / 512: K steps of two / four groups, 128 / 256 bytes of each weight row a step where
# BK=128 reads 64 (H200 s18 q1, BK=256 on 3 stages: 45.5 -> 32.5 us at M = 16, 53.3 -> 40.3 at 64);
# BN=128 / 256 on 2 / 4 warpgroups with split-K 4: A's tile read by N / BN blocks (at M = 64 and
# BN = 64, 128 MB of L2 reads against 32 MB of weight); BM=32 at M = 64: two blocks an SM, each
# weight tile read twice (the second time from L2, which holds the 32 MB of int4 weight);
# gemv BKW=256 on 256 threads, 2 stages, 4 blocks an SM (64 registers): twice the warps an SM
# (32, where the default's 512 blocks of 4 warps hold 16: N * BKW / 16 threads in all), 16 KB a
# block in flight (64 KB an SM; the default 3 x 8 KB a block); split-K 2 at K steps of 512
# (M = 16) / 256 (M = 64) on 2 stages: 256 blocks, two an SM (222 / 195 registers, 72 / 88 KB),
# where the default's 128 blocks put one block of 4 warps on an SM; BK=512 on 3 stages (M <= 16
# only: 105 KB): 32 KB of weight in flight an SM where 2 stages hold 16; BM=8 split-K 4 (M = 1):
# mma.sync, 512 blocks of 48 registers and 57 KB, 4 an SM, ~2.5 SASS a weight where the gemv
# takes ~5 (split-K kept the group divisions per weight until 40cc427: 5,152 SASS, now 2,544);
# "reduce": splitk_reduce's constants (RN=64: 128 blocks at N = 8192 where config.json's RN=256
# for M <= 16 gives 32, each adding its S rows of P one after another); "w4a16 split-K 2":
# config.json's split-K tiles for the call's M in 2 parts (on sm_90a since session 23: K steps
# of 512 at M <= 16, 256 at 33 .. 64, 2 stages: the fastest decode form at M = 16 and 64)
W4_DECODE_VARIANTS = [("w4a16", "matmul_w4a16", {}, 0),
                      ("w4a16 split-K 2", "matmul_w4a16_splitk", {}, 2),
                      ("w4a16 gemv", "matmul_w4a16_gemv", {}, 0),
                      ("w4a16 gemv BN=32 256 thr", "matmul_w4a16_gemv", {"BN": 32, "THREADS": 256}, 0),
                      ("w4a16 gemv BN=8 BKW=256", "matmul_w4a16_gemv", {"BN": 8, "BKW": 256}, 0),
                      ("w4a16 gemv stages=6", "matmul_w4a16_gemv", {"stages": 6}, 0),
                      ("w4a16 BN=32 64 threads", "matmul_w4a16", {"BN": 32, "THREADS": 64}, 0),
                      ("w4a16 BM=8", "matmul_w4a16", {"BM": 8}, 0),
                      ("w4a16 split-K 4", "matmul_w4a16_splitk", {}, 4),
                      ("w4a16 split-K 8 stages=4", "matmul_w4a16_splitk", {"stages": 4}, 8),
                      ("w4a16 BN=128 256 thr split-K 2", "matmul_w4a16_splitk", {"BN": 128, "THREADS": 256}, 2),
                      ("w4a16 split-K 4 stages=3", "matmul_w4a16_splitk", {"stages": 3}, 4),
                      ("w4a16 stages=3", "matmul_w4a16", {"stages": 3}, 0),
                      ("w4a16 BN=128 256 thr", "matmul_w4a16", {"BN": 128, "THREADS": 256}, 0),
                      ("w4a16 split-K 2 stages=3", "matmul_w4a16_splitk", {"stages": 3}, 2),
                      ("w4a16 split-K 8 stages=2", "matmul_w4a16_splitk", {"stages": 2}, 8),
                      ("w4a16 BK=256 stages=3", "matmul_w4a16", {"BK": 256, "stages": 3}, 0),
                      ("w4a16 BK=256 split-K 4 stages=3", "matmul_w4a16_splitk", {"BK": 256, "stages": 3}, 4),
                      ("w4a16 BK=256 stages=4", "matmul_w4a16", {"BK": 256, "stages": 4}, 0),
                      ("w4a16 BK=512 stages=2", "matmul_w4a16", {"BK": 512, "stages": 2}, 0),
                      ("w4a16 BM=32", "matmul_w4a16", {"BM": 32}, 0),
                      ("w4a16 BN=256 512 thr split-K 4 stages=3", "matmul_w4a16_splitk",
                       {"BN": 256, "THREADS": 512, "stages": 3}, 4),
                      ("w4a16 BN=128 256 thr split-K 4 stages=3", "matmul_w4a16_splitk",
                       {"BN": 128, "THREADS": 256, "stages": 3}, 4),
                      ("w4a16 gemv BKW=256 256 thr 4 blocks", "matmul_w4a16_gemv",
                       {"BKW": 256, "THREADS": 256, "stages": 2, "BLOCKS": 4}, 0),
                      ("w4a16 BK=512 stages=3", "matmul_w4a16", {"BK": 512, "stages": 3}, 0),
                      ("w4a16 BM=8 BK=512 split-K 4 stages=2", "matmul_w4a16_splitk", {"BM": 8, "BK": 512, "stages": 2}, 4),
                      ("w4a16 BK=512 split-K 2 stages=2", "matmul_w4a16_splitk", {"BK": 512, "stages": 2}, 2),
                      ("w4a16 BK=256 split-K 2 stages=2", "matmul_w4a16_splitk", {"BK": 256, "stages": 2}, 2),
                      ("w4a16 BK=512 split-K 2 stages=2 reduce RN=64", "matmul_w4a16_splitk",
                       {"BK": 512, "stages": 2, "reduce": {"RN": 64, "THREADS": 128}}, 2),
                      # session 25: a deeper ring at M = 1 that keeps 512 blocks in one wave (4-6
                      # blocks an SM: 46 / 36 KB), and 2 parts on 3 stages (256 blocks, 86 KB); H200
                      # (bench/results/w4a16_depth-h200-twentyfifth.txt): 27.2, 28.3 and 26.8 us against
                      # the default tiles' 26.3: no faster (each K step's copies cost as much as its
                      # dequantization: bench/results/w4a16_ncu-h200-twentyfifth.txt)
                      ("w4a16 BM=8 BK=256 split-K 4 stages=3", "matmul_w4a16_splitk",
                       {"m": (1,), "BM": 8, "BK": 256, "stages": 3}, 4),
                      ("w4a16 BM=8 BK=128 split-K 4 stages=4", "matmul_w4a16_splitk",
                       {"m": (1,), "BM": 8, "BK": 128, "stages": 4}, 4),
                      ("w4a16 BM=8 BK=512 split-K 2 stages=3", "matmul_w4a16_splitk",
                       {"m": (1,), "BM": 8, "BK": 512, "stages": 3}, 2),
                      # "path:kernel": a variant in a bench .tl file (its header says what it tries)
                      ("w4a16 gemv half2", "bench/w4a16_gemv_half2.tl:w4a16_gemv_half2", {}, 0),
                      # session 25: K steps of 64 words on 6 stages (29.0 us at M = 1 against the default's
                      # 24.9, bench/results/w4a16_chunked-h200-twentyfifth.txt)
                      ("w4a16 gemv BKW=64 stages=6", "matmul_w4a16_gemv", {"BKW": 64, "stages": 6}, 0),
                      # session 26: splitk_reduce with its parts unrolled, so that several parts' loads
                      # are in flight at once (bench/splitk_reduce_unrolled.tl)
                      ("w4a16 split-K 4 unrolled reduce", "matmul_w4a16_splitk",
                       {"reduce_kernel": "bench/splitk_reduce_unrolled.tl:splitk_reduce_unrolled"}, 4),
                      ("w4a16 split-K 2 unrolled reduce", "matmul_w4a16_splitk",
                       {"reduce_kernel": "bench/splitk_reduce_unrolled.tl:splitk_reduce_unrolled"}, 2),
                      # session 26: K steps of 256 in 4 parts,
                      # 512 blocks; M = 16's 120 registers and 38 KB hold 4 blocks of 4 warps an SM, where
                      # its default K steps of 512 take 200 registers, 2 blocks an SM
                      ("w4a16 BK=256 split-K 4 stages=2", "matmul_w4a16_splitk", {"BK": 256, "stages": 2}, 4),
                      # session 26 (D2), "options": the switches of W4_OPTION_SETS, in the process of the
                      # rows above (each set from a copy of std.gemm of its own): the weight through the
                      # TMA ring (schedule/dequant_ring.py) at config.json's tiles (3 blocks an SM where
                      # its gemm is mma.sync, M = 1; one with setmaxnreg otherwise, and "1 block an SM"),
                      # and deeper rings (15 KB a stage at M = 1, 51 KB at M = 16)
                      ("w4a16 TMA ring", "matmul_w4a16", {"options": "tma"}, 0),
                      ("w4a16 TMA ring 1 block an SM", "matmul_w4a16", {"options": "tma-1", "m": (1,)}, 0),
                      # M = 16 with D's WGMMA_REGISTER_A_MAX = 32: its gemm on mma.sync, so 3 blocks an SM
                      # (72 registers at K steps of 512, no spills) where wgmma's register A keeps one
                      ("w4a16 TMA ring mma.sync", "matmul_w4a16", {"options": "tma-mma", "m": (16,)}, 0),
                      ("w4a16 TMA ring BK=256 stages=6", "matmul_w4a16",
                       {"options": "tma", "m": (1,), "BM": 8, "BK": 256, "stages": 6}, 0),
                      ("w4a16 TMA ring BK=512 stages=4", "matmul_w4a16",
                       {"options": "tma", "m": (16,), "BK": 512, "stages": 4}, 0),
                      ("w4a16 TMA ring split-K 4", "matmul_w4a16_splitk", {"options": "tma", "m": (1,)}, 4),
                      ("w4a16 TMA ring split-K 2", "matmul_w4a16_splitk", {"options": "tma", "m": (16,)}, 2),
                      # two consumer warpgroups: a warp-specialized block holds an SM alone, and one
                      # warpgroup is one warp a scheduler to hide the dequantization's latencies (168
                      # registers, no spills; 192 / 224 KB on 4 stages at M = 1 / 16)
                      ("w4a16 TMA ring BN=128 256 thr split-K 2", "matmul_w4a16_splitk",
                       {"options": "tma", "BN": 128, "THREADS": 256, "BK": 512, "stages": 4}, 2),
                      # session 28: config.json's sm_90a rules at M <= 16 take the TMA ring (TMA=True);
                      # the cp.async ring at the rules they replaced, for bench/queue/V_D_flips.sh
                      ("w4a16 cp.async BK=256 stages=3", "matmul_w4a16", {"m": (1,), "TMA": False, "stages": 3}, 0),
                      ("w4a16 cp.async BK=512 stages=2", "matmul_w4a16", {"m": (16,), "TMA": False, "stages": 2}, 0),
                      # session 29, bench/queue/D_w4a16_split_ring.sh: the TMA ring split along K with its
                      # wave counting the blocks an SM holds (dequant_ring.DEQUANT_SPLIT) at config.json's
                      # rules (M = 1: 2 parts, two blocks of 4 consumer warps an SM; M = 16 on wgmma keeps
                      # one block an SM and one part), at K steps of 512 on 3 stages (83 KB: 2 blocks an SM),
                      # and M = 16 on mma.sync at 2 stages (2 blocks an SM); K steps of 512 on 4 stages at
                      # M = 1 unsplit (twice the bytes a stage, 64 KB of weight in flight a block)
                      ("w4a16 TMA split", "matmul_w4a16",
                       {"options": "tma-split", "m": (1,), "BM": 8, "BK": 256, "stages": 6, "TMA": True}, 0),
                      ("w4a16 TMA split M=16 rule", "matmul_w4a16",
                       {"options": "tma-split", "m": (16,), "BM": 16, "BK": 512, "stages": 4, "TMA": True}, 0),
                      ("w4a16 TMA split BK=512 stages=3", "matmul_w4a16",
                       {"options": "tma-split", "m": (1,), "BM": 8, "BK": 512, "stages": 3, "TMA": True}, 0),
                      ("w4a16 TMA BK=512 stages=4", "matmul_w4a16",
                       {"m": (1,), "BM": 8, "BK": 512, "stages": 4, "TMA": True}, 0),
                      ("w4a16 TMA split mma.sync stages=2", "matmul_w4a16",
                       {"options": "tma-split-mma", "m": (16,), "BM": 16, "BK": 512, "stages": 2, "TMA": True}, 0)]
# A variant's "options": compiler switches (MODULE.NAME=VALUE, as --option) set while its launchers
# compile, its kernels from a copy of std.gemm's text at a path of its own (the program cache's keys
# do not hold the switches), so that one process times it beside the defaults
W4_OPTION_SETS = {"tma": ("tlc.schedule.dequant_ring.DEQUANT_RING=1",),
                  # the same ring one block an SM with setmaxnreg, as every other warp-specialized one
                  "tma-1": ("tlc.schedule.dequant_ring.DEQUANT_RING=1", "tlc.schedule.dequant_ring.DEQUANT_BLOCKS=1"),
                  "tma-mma": ("tlc.schedule.dequant_ring.DEQUANT_RING=1",
                              "tlc.schedule.operand_layout.WGMMA_REGISTER_A_MAX=32"),
                  # the ring split along K by its blocks an SM (matmul_w4a16 at TMA=True: no DEQUANT_RING)
                  "tma-split": ("tlc.schedule.dequant_ring.DEQUANT_SPLIT=1",),
                  "tma-split-mma": ("tlc.schedule.dequant_ring.DEQUANT_SPLIT=1",
                                    "tlc.schedule.operand_layout.WGMMA_REGISTER_A_MAX=32")}
# BM = 256: each dequantized weight used by twice the rows (the dequantization costs per weight,
# the products per row); "dequantize_w4a16": the whole weight dequantized once into an f16
# buffer, then matmul_nt
W4_PREFILL_VARIANTS = [("w4a16_prefill", "matmul_w4a16_prefill", {}),
                       ("w4a16_prefill BM=256", "matmul_w4a16_prefill", {"BM": 256}),
                       ("dequantize + matmul_nt", "dequantize_w4a16", {})]


def _bound(make):
    """make(), a run; where it raises (a constant the kernel refuses), a run that raises it, which
    the check reports as that contender's error while the others are timed."""
    try:
        return make()
    except Exception as e:  # noqa: BLE001 - reported by the check
        def run(e=e):
            raise e
        return run


def _reduce_kernel(gemm, where):
    """The split-K rows' reduce: std.gemm's splitk_reduce, or "path:kernel" of a bench .tl."""
    if not where:
        return gemm.splitk_reduce
    path, name = where.split(":")
    return getattr(tlc.load(str(ROOT / path), target="cuda"), name)


_OPTION_MODULES: dict = {}


def _option_module(name: str | None, gemm):
    """std.gemm (`gemm`) where `name` is None, else a copy of its text at a path of its own for
    W4_OPTION_SETS[name] (one a process)."""
    if name is None:
        return gemm
    if name not in _OPTION_MODULES:
        import tempfile
        path = Path(tempfile.mkdtemp(prefix=f"lowbit-{name}-")) / "gemm.tl"
        path.write_text((ROOT / "stdlib" / "gemm.tl").read_text())
        _OPTION_MODULES[name] = tlc.load(str(path), target="cuda")
    return _OPTION_MODULES[name]


def _switched(name: str | None, make):
    """make() with W4_OPTION_SETS[name]'s switches set (each back as it was after), or as is."""
    import importlib

    from switches import switched
    settings = []
    for opt in W4_OPTION_SETS[name] if name else ():
        where, _, rest = opt.rpartition(".")
        attr, _, value = rest.partition("=")
        module = importlib.import_module(where)
        settings.append((module, attr, type(getattr(module, attr))(int(value))))
    with switched(settings):
        return make()


def _in_order(*launches):
    """One run of `launches` (bound launchers), one after another."""
    def run():
        for launch in launches:
            launch()
    return run


def w4a16_weight(torch, quant, gemm, N, K, G, dtype=None, seed=1):
    """(W4, scales, zeros, q, the weight dequantized in PyTorch in f32): a random weight of
    `dtype` (f16) quantized by std.quant.quantize_uint4 (q: the plain layout), repacked by
    std.gemm.repack_int4."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    w = torch.randn(N, K, device="cuda", generator=g).to(dtype or torch.float16)
    q = torch.empty(N, (K + 1) // 2, dtype=torch.uint8, device="cuda")
    scales = torch.empty(N, -(-K // G), dtype=torch.float32, device="cuda")
    zeros = torch.empty(N, -(-K // G), dtype=torch.uint8, device="cuda")
    quant.quantize_uint4(w, q, scales, zeros, G=G)
    W4 = torch.empty(N, 4 * -(-K // 32), dtype=torch.int32, device="cuda").view(torch.uint32)
    gemm.repack_int4(q, W4)
    deq = dequantize_uint4_torch(torch, q, scales, zeros, K, G)
    torch.cuda.synchronize()
    return W4, scales, zeros, q, deq


def dequantize_uint4_torch(torch, q, scales, zeros, K: int, G: int):
    """W[n, k] = (nibble - zeros[n, k // G]) * scales[n, k // G] in f32 from the plain layout
    (std.quant.quantize_uint4's: element 2k in byte k's low nibble, 2k + 1 in its high one)."""
    b = q.to(torch.int32)
    nib = torch.stack([b & 15, b >> 4], 2).reshape(q.shape[0], -1)[:, :K].float()
    idx = torch.arange(K, device=q.device) // G
    return (nib - zeros.float()[:, idx]) * scales.float()[:, idx]


def w4a16_rows(torch, copy_gbs: float, min_ms: float, only=None, sizes=None) -> list:
    """The decode and prefill rows (see the module's docstring), each variant checked first;
    `only`: the variants' labels to run (all where None; F.linear always), `sizes`: the Ms."""
    import torch.nn.functional as F

    from tlc.timing import Checked, compare_checked, tolerance

    quant = tlc.load("std.quant", target="cuda")
    gemm = tlc.load("std.gemm", target="cuda")
    N, K, G = W4_N, W4_K, W4_G
    W4, scales, zeros, q, _ = w4a16_weight(torch, quant, gemm, N, K, G)
    # the weight the kernels compute with: each scale rounded to f16 first (std.gemm's w4a16)
    deq = dequantize_uint4_torch(torch, q, scales.half().float(), zeros, K, G).half()
    weight_bytes = N * K // 2
    g = torch.Generator(device="cuda").manual_seed(2)
    out = []
    for M in sizes or (*W4_DECODE_M, W4_PREFILL_M):
        A = torch.randn(M, K, device="cuda", generator=g).half()
        ref = F.linear(A.float(), deq.float())
        tol = tolerance("float16", ref, 8)
        contenders = {}
        variants = W4_DECODE_VARIANTS if M < W4_PREFILL_M else [(*v, 0) for v in W4_PREFILL_VARIANTS]
        for label, kernel, consts, parts in variants:
            if only is not None and label not in only or "_gemv" in kernel and M > 1 or M not in consts.get("m", (M,)):
                continue
            C = torch.empty(M, N, dtype=torch.float16, device="cuda")
            options = consts.get("options")  # (W4_OPTION_SETS)
            mod = _option_module(options, gemm)
            # "m": the Ms it runs at (all by default)
            consts = {k: v for k, v in consts.items() if k not in ("m", "options")}
            if ":" in kernel:
                path, name = kernel.split(":")
                run = _bound(lambda path=path, name=name, C=C, consts=consts: getattr(
                    tlc.load(str(ROOT / path), target="cuda"), name).launcher(A, W4, scales, zeros, C, **consts))
            elif kernel == "dequantize_w4a16":
                Wd = torch.empty(N, K, dtype=torch.float16, device="cuda")

                def run(C=C, Wd=Wd, A=A):
                    gemm.dequantize_w4a16(W4, scales, zeros, Wd)
                    gemm.matmul_nt(A, Wd, C)
            elif parts:  # launchers: a call with constants binds its arguments each time (tens of us
                # of host work, which two calls a run need not hide under the timing's delay)
                P = torch.empty(parts, M, N, dtype=torch.float32, device="cuda")
                split = {k: v for k, v in consts.items() if k not in ("reduce", "reduce_kernel")}
                reduce = _reduce_kernel(mod, consts.get("reduce_kernel"))
                run = _switched(options, lambda: _bound(
                    lambda k=getattr(mod, kernel), P=P, C=C, split=split, consts=consts, reduce=reduce: _in_order(
                        k.launcher(A, W4, scales, zeros, P, **split), reduce.launcher(P, C, **consts.get("reduce", {})))))
            else:
                run = _switched(options, lambda: _bound(
                    lambda k=getattr(mod, kernel), C=C, consts=consts: k.launcher(A, W4, scales, zeros, C, **consts)))
            contenders[label] = Checked(run, ref, out=C, **tol)
        # F.linear(A, deq) as the product it is (torch.mm into a buffer the check can poison);
        # cuBLAS may add f16 partial sums in f16 (PyTorch's default allows it): 32 units, not 8
        Ct = torch.empty(M, N, dtype=torch.float16, device="cuda")
        contenders["F.linear f16"] = Checked(lambda Ct=Ct, A=A: torch.mm(A, deq.t(), out=Ct), ref, out=Ct,
                                             **tolerance("float16", ref, 32))
        ms, verdicts = compare_checked(contenders, min_ms=min_ms)
        torch_ms = ms.get("F.linear f16")
        for label in contenders:
            r = {"row": f"{'decode' if M < W4_PREFILL_M else 'prefill'} M={M} N={N} K={K} g{G}", "variant": label}
            if not verdicts[label].ok:
                r["error"] = verdicts[label].why
            elif label in ms:
                t = ms[label]
                r.update(ms=t, tflops=2 * M * N * K / t / 1e9, weight_of_copy=weight_bytes / t / 1e6 / copy_gbs,
                         vs_torch=(torch_ms / t) if torch_ms else None, rel_err=verdicts[label].rel_err)
            out.append(r)
            print(w4a16_line(r), flush=True)
        torch.cuda.empty_cache()
    return out


def printed_w4a16_rows(path: str) -> dict:
    """{(row, variant): (us, speedup over F.linear or None)} of the w4a16 rows a run printed to
    `path` (w4a16_line's format; a row that failed its check is left out): what the queued
    scripts answer from, so that a run cut by its timeout keeps the rows it printed."""
    line = re.compile(r"^(decode M=\d+ N=\d+ K=\d+ g\d+|prefill M=\d+ N=\d+ K=\d+ g\d+)\s+(.+?)\s+([0-9.]+) us "
                      r".*?(?:\s([0-9.]+)x)?\s*$")
    try:
        text = Path(path).read_text()
    except OSError:
        return {}
    return {(m.group(1), m.group(2).strip()): (float(m.group(3)), float(m.group(4)) if m.group(4) else None)
            for m in map(line.match, text.splitlines()) if m}


def w4a16_line(r: dict) -> str:
    head = f"{r['row']:<32} {r['variant']:<26}"
    if "error" in r:
        return f"{head} !! {r['error'][:150]}"
    vs = f"{r['vs_torch']:5.2f}x" if r.get("vs_torch") else "    -"
    return f"{head} {r['ms'] * 1e3:9.1f} us {r['tflops']:7.1f} TFLOP/s  weight/copy {r['weight_of_copy']:5.2f}  {vs}"


SCALED_SHAPES = [(8192, 8192, 8192)]


def scaled_rows(torch, min_ms: float) -> list:
    """The W8A8 and row-wise f8 rows (see the module's docstring), each contender checked first."""
    from tlc.timing import Checked, compare_checked, tolerance

    torch.backends.cuda.matmul.allow_tf32 = False  # the references in f32, not TF32
    gemm = tlc.load("std.gemm", target="cuda")
    g = torch.Generator(device="cuda").manual_seed(3)
    out = []
    for M, N, K in SCALED_SHAPES:
        sa = torch.rand(M, device="cuda", generator=g) / 64 + 1 / 256
        sb = torch.rand(N, device="cuda", generator=g) / 64 + 1 / 256
        A = torch.randint(-128, 128, (M, K), device="cuda", dtype=torch.int8, generator=g)
        B = torch.randint(-128, 128, (N, K), device="cuda", dtype=torch.int8, generator=g)
        exact = (A.double() @ B.double().t())  # |values| < 2**53: exact
        ref = (exact * sa.double()[:, None] * sb.double()[None, :]).float()
        C = torch.empty(M, N, dtype=torch.bfloat16, device="cuda")
        Ci = torch.empty(M, N, dtype=torch.int32, device="cuda")
        Ct = torch.empty(M, N, dtype=torch.bfloat16, device="cuda")
        int_ref = exact.to(torch.int64).to(torch.int32)  # the wrapped i32 product (no wrap at these values)
        del exact

        def scaled_in_torch(Ct=Ct):
            torch.mul(torch._int_mm(A, B.t()).float().mul_(sa[:, None]).mul_(sb[None, :]), 1, out=Ct)

        contenders = {
            "matmul_i8_scaled": Checked(lambda: gemm.matmul_i8_scaled(A, B, C, sa, sb), ref, out=C,
                                        **tolerance("bfloat16", ref, 2)),
            "torch._int_mm": Checked(lambda: torch._int_mm(A, B.t(), out=Ci), int_ref, out=Ci, rtol=0.0, atol=0.0),
            "_int_mm + scales": Checked(scaled_in_torch, ref, out=Ct, **tolerance("bfloat16", ref, 2)),
        }
        out += _scaled_report(f"W8A8 {M}x{N}x{K}", "matmul_i8_scaled", contenders, compare_checked(contenders, min_ms=min_ms), M, N, K)
        del ref, int_ref
        A8 = (torch.randn(M, K, device="cuda", generator=g)).to(torch.float8_e4m3fn)
        B8 = (torch.randn(N, K, device="cuda", generator=g)).to(torch.float8_e4m3fn)
        ref = ((A8.float() @ B8.float().t()) * sa[:, None] * sb[None, :])
        C8 = torch.empty(M, N, dtype=torch.bfloat16, device="cuda")
        sa_col, sb_row = sa[:, None].contiguous(), sb[None, :].contiguous()  # _scaled_mm's row-wise shapes
        contenders = {
            "matmul_f8_rowwise": Checked(lambda: gemm.matmul_f8_rowwise(A8, B8, C8, sa, sb), ref, out=C8,
                                         **tolerance("bfloat16", ref, 8)),
            "torch._scaled_mm rowwise": Checked(
                lambda: torch._scaled_mm(A8, B8.t(), scale_a=sa_col, scale_b=sb_row, out_dtype=torch.bfloat16, out=Ct),
                ref, out=Ct, **tolerance("bfloat16", ref, 8)),
        }
        out += _scaled_report(f"f8 row-wise {M}x{N}x{K}", "matmul_f8_rowwise", contenders, compare_checked(contenders, min_ms=min_ms), M, N, K)
        del ref
        torch.cuda.empty_cache()
    return out


def _scaled_report(row: str, ours: str, contenders: dict, measured, M: int, N: int, K: int) -> list:
    """One result per contender, each with its ratio to ours (above 1: tlc faster)."""
    ms, verdicts = measured
    out = []
    for label in contenders:
        r = {"row": row, "variant": label}
        if not verdicts[label].ok:
            r["error"] = verdicts[label].why
        elif label in ms:
            r.update(ms=ms[label], tflops=2 * M * N * K / ms[label] / 1e9, rel_err=verdicts[label].rel_err,
                     tlc_speedup=(ms[label] / ms[ours]) if ours in ms and label != ours else None)
        out.append(r)
        head = f"{row:<28} {label:<26}"
        if "error" in r:
            print(f"{head} !! {r['error'][:150]}", flush=True)
        else:
            vs = f"  tlc {r['tlc_speedup']:5.2f}x this" if r.get("tlc_speedup") else ""
            print(f"{head} {r['ms'] * 1e3:9.1f} us {r['tflops']:7.1f} TFLOP/s{vs}", flush=True)
    return out


def apply_switches(args) -> None:
    """The compiler switches the run asks for (--option), set before
    anything compiles."""
    if args.option:
        from ops_variants import apply_options
        apply_options(args.option)


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", help="Comma-separated kernel names (with --w4a16: the variants' labels).")
    ap.add_argument("--m", help="With --w4a16: comma-separated Ms (the decode ones and the prefill's by default).")
    ap.add_argument("--quick", action="store_true", help="50 ms a contender instead of 300.")
    ap.add_argument("--json", help="Where to write the results.")
    ap.add_argument("--w4a16", action="store_true", help="std.gemm's w4a16 rows instead of std.quant's.")
    ap.add_argument("--scaled", action="store_true", help="std.gemm's W8A8 and row-wise f8 rows instead.")
    ap.add_argument("--option", action="append", default=[],
                    help="MODULE.NAME=VALUE: a compiler switch for the run (bench/ops_variants.py's); caches of its own.")
    return ap


def main(argv=None) -> int:
    ap = parser()
    args = ap.parse_args(argv)
    apply_switches(args)
    selected = [r for r in rows() if not args.only or r.kernel in args.only.split(",")]
    import torch

    from tlc.benchmarks import ceilings

    min_ms = 50.0 if args.quick else 300.0
    results = {"suite": "lowbit", **ceilings.device_facts(torch), "shape": [M, N], "rows": []}
    print(f"GPU: {results['gpu']} ({results['arch']}), PyTorch {torch.__version__}, x: f16[{M}, {N}]")
    copy_gbs = ceilings.copy_bandwidth(torch, min_ms)
    results["copy_GBps"] = copy_gbs
    print(f"device-to-device copy: {copy_gbs:.0f} GB/s (read + write)")
    if args.scaled:
        results["rows"] = scaled_rows(torch, min_ms)
        if args.json:
            Path(args.json).write_text(json.dumps(results, indent=1))
        return 1 if any("error" in r for r in results["rows"]) else 0
    if args.w4a16:
        results["rows"] = w4a16_rows(torch, copy_gbs, min_ms, args.only and args.only.split(","),
                                     args.m and [int(v) for v in args.m.split(",")])
        if args.json:
            Path(args.json).write_text(json.dumps(results, indent=1))
        return 1 if any("error" in r for r in results["rows"] if not r["variant"].startswith("F.")) else 0
    print(HEADER, flush=True)
    mod = tlc.load("std.quant", target="cuda")
    g = torch.Generator(device="cuda").manual_seed(0)
    x = (torch.randn(M, N, device="cuda", generator=g)
         * torch.exp(torch.randn(M, 1, device="cuda", generator=g) * 2)).half()
    failures = 0
    for row in selected:
        try:
            r = measure(row, mod, torch, copy_gbs, min_ms, x)
        except Exception as e:  # noqa: BLE001 - a row that cannot run is reported, the rest go on
            r = {"row": row.name, "bytes": 0, "tlc_error": f"ERROR: {type(e).__name__}: {str(e)[:200]}"}
        failures += "tlc_error" in r
        results["rows"].append(r)
        print(line(r), flush=True)
        for who in ("tlc", "torch"):
            if who + "_error" in r:
                print(f"   !! {who}: {r[who + '_error']}", flush=True)
        torch.cuda.empty_cache()
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
