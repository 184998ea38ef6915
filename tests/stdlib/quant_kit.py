"""std.quant's table: each operator's inputs, NumPy reference and check, shared by the
interpreter test (test_quant.py), the GPU test (tests/gpu/test_quant_gpu.py) and bench/lowbit.py.

The references compute what stdlib/quant.tl's header says, step by step in f32 as the kernels
do (NumPy's float32 products and divisions are IEEE's, as the GPU's are without fast math), so a
quantized tensor and its scales must match exactly: every q, every scale, NaN where NaN.  A
group of a granularity is a (bm, bn) tile of x: per tensor (M, N), per token (1, N), per channel
(M, 1), per group (1, G), per block (B, B); the scales have one element a tile, a ragged last
tile holding what exists.  The inputs hold NaN, +-inf, an all-zero row and values far apart in
size (rows scaled by e^N(0, 2)), so saturation, NaN handling and zero scales are all exercised.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import ml_dtypes
import numpy as np

from op_tolerances import NUMPY
from tlc import package_data

QUANT_PATH = str(package_data.stdlib().joinpath("quant.tl"))
FLOATS = ("f32", "f16", "bf16")
QTYPES = ("i8", "f8e4m3", "f8e5m2")
F32MAX = np.float32(np.finfo(np.float32).max)


def qmax(q: str) -> np.float32:
    return np.float32(127 if q == "i8" else ml_dtypes.finfo(NUMPY[q]).max)


def inputs(rng, M: int, N: int, dtype: str, specials: bool = True):
    """x[M, N] of `dtype`: normal values, each row scaled by e^N(0, 2); with `specials`, a NaN,
    +inf and -inf in rows 0, 3 and 4 and row 2 all zero (where the shape has them)."""
    x = rng.standard_normal((M, N)) * np.exp(rng.standard_normal((M, 1)) * 2)
    if M > 2:
        x[2] = 0
    if specials:
        x[0, min(5, N - 1)] = np.nan
        if M > 4:
            x[3, min(7, N - 1)] = np.inf
            x[4, N // 2] = -np.inf
    return x.astype(np.float32).astype(NUMPY[dtype])


def expand(a, bm: int, bn: int, M: int, N: int):
    """Each element of a (one a tile) repeated over its bm x bn tile, cut to M x N."""
    return np.repeat(np.repeat(a, bm, 0), bn, 1)[:M, :N]


def tile_reduce(v, bm: int, bn: int, fn):
    """fn (np.max / np.min) over each bm x bn tile of v, padded with 0."""
    M, N = v.shape
    SM, SN = -(-M // bm), -(-N // bn)
    p = np.zeros((SM * bm, SN * bn), v.dtype)
    p[:M, :N] = v
    return fn(p.reshape(SM, bm, SN, bn), axis=(1, 3))


def absmax(x, bm: int, bn: int):
    """Each tile's largest |x| in f32, NaN ignored, an infinite one taken as f32's largest."""
    a = np.abs(x.astype(np.float32))
    return np.minimum(tile_reduce(np.where(np.isnan(a), 0, a), bm, bn, np.max), F32MAX).astype(np.float32)


def recip(num, den):
    """num / den in f32 where den > 0, else 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, np.float32(num) / den, np.float32(0)).astype(np.float32)


def to_int(v, lo: int, hi: int):
    """rint(v) converted as the kernels convert: NaN 0, saturated to [lo, hi]; as int32."""
    r = np.rint(v.astype(np.float64))
    return np.clip(np.where(np.isnan(r), 0, r), lo, hi).astype(np.int32)


def saturate(v, q: str):
    """f32 values v converted to Q: rounded to nearest even, saturated, NaN kept (int: 0)."""
    if q == "i8":
        return to_int(v, -128, 127).astype(np.int8)
    m = qmax(q)
    return np.clip(v, -m, m).astype(NUMPY[q])


def ref_quantize(x, bm: int, bn: int, q: str, scales=None):
    """(q, scales) of x quantized over bm x bn tiles: dynamic where `scales` is None."""
    M, N = x.shape
    if scales is None:
        a = absmax(x, bm, bn)
        scales = (a / qmax(q)).astype(np.float32)
        inv = recip(qmax(q), a)
    else:
        inv = recip(1.0, scales)
    v = (x.astype(np.float32) * expand(inv, bm, bn, M, N)).astype(np.float32)
    return saturate(v, q), scales


def ref_dequantize(qv, scales, bm: int, bn: int, dtype: str):
    M, N = qv.shape
    return (qv.astype(np.float32) * expand(scales, bm, bn, M, N)).astype(np.float32).astype(NUMPY[dtype])


def pack(nibbles):
    """int32 values whose low 4 bits are stored: element 2k low, 2k + 1 high, odd N padded with 0."""
    M, N = nibbles.shape
    p = np.zeros((M, N + N % 2), np.int32)
    p[:, :N] = nibbles & 15
    return (p[:, 0::2] | p[:, 1::2] << 4).astype(np.uint8)


def unpack(packed, N: int, signed: bool):
    b = packed.astype(np.int32)
    v = np.stack([b & 15, b >> 4], axis=2).reshape(b.shape[0], -1)[:, :N]
    return np.where(v >= 8, v - 16, v) if signed else v


def ref_int4(x, G: int, scales=None):
    """(packed q, scales) of symmetric int4 over groups of G."""
    M, N = x.shape
    if scales is None:
        a = absmax(x, 1, G)
        scales = (a / np.float32(7)).astype(np.float32)
        inv = recip(7.0, a)
    else:
        inv = recip(1.0, scales)
    v = (x.astype(np.float32) * expand(inv, 1, G, M, N)).astype(np.float32)
    return pack(to_int(v, -8, 7)), scales


def ref_uint4(x, G: int, scales=None, zeros=None):
    """(packed q, scales, zeros) of asymmetric int4 with zero points over groups of G."""
    M, N = x.shape
    xf = x.astype(np.float32)
    if scales is None:
        v = np.where(np.isnan(xf), 0, xf)
        lo = tile_reduce(np.clip(v, -F32MAX, 0), 1, G, np.min)
        hi = tile_reduce(np.clip(v, 0, F32MAX), 1, G, np.max)
        r = (hi - lo).astype(np.float32)
        scales = (r / np.float32(15)).astype(np.float32)
        inv = recip(15.0, r)
        zeros = to_int((-lo * inv).astype(np.float32), -2 ** 31, 2 ** 31 - 1).astype(np.uint8)
    else:
        inv = recip(1.0, scales)
    v = to_int((xf * expand(inv, 1, G, M, N)).astype(np.float32), -2 ** 31, 2 ** 31 - 1).astype(np.int64)
    return pack(np.clip(v + expand(zeros.astype(np.int64), 1, G, M, N), 0, 15).astype(np.int32)), scales, zeros


def ref_mx(x, q: str):
    """(q, e8m0 scales as u8) of OCP MX over blocks of 32."""
    M, N = x.shape
    a = absmax(x, 1, 32)
    emax = int(np.floor(np.log2(qmax(q))))
    e = np.clip((a.view(np.int32) >> 23) - emax, 0, 254)
    inv = np.where(e < 254, ((254 - e) << 23).astype(np.int32).view(np.float32), np.float32(2.0 ** -127))
    v = (x.astype(np.float32) * expand(inv.astype(np.float32), 1, 32, M, N)).astype(np.float32)
    return saturate(v, q), e.astype(np.uint8)


def mx_scale(e8):
    e = e8.astype(np.int32)
    return np.where(e > 0, (e << 23).astype(np.int32).view(np.float32), np.float32(2.0 ** -127)).astype(np.float32)


def assert_same(got, want, what: str):
    """Bit-for-bit equal values (NaN where NaN; -0 and 0 alike), with the first difference."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape}, want {want.shape}"
    g, w = got.astype(np.float64), want.astype(np.float64)
    bad = ~((g == w) | (np.isnan(g) & np.isnan(w)))
    if bad.any():
        i = tuple(np.argwhere(bad)[0])
        raise AssertionError(f"{what}: {int(bad.sum())} of {bad.size} differ; first at {i}: got {g[i]!r}, want {w[i]!r}")


# ---- the table ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Op:
    name: str
    dtypes: tuple
    run_check: Callable  # (mod, rng, dtype, shape, consts) -> None

    def check(self, *args) -> None:
        with np.errstate(all="ignore"):  # the references overflow to inf, and multiply inf by 0, on purpose
            self.run_check(*args)


def _granular(kind: str):
    """(tile of a scale, the scales' shape) of a granularity at M x N with the consts."""
    def tile(M, N, c):
        return {"tensor": (M, N), "token": (1, N), "channel": (M, 1), "group": (1, c.get("G", 128)),
                "block": (c.get("B", 128), c.get("B", 128))}[kind]
    return tile


def _scales_shape(M, N, bm, bn):
    return (-(-M // bm), -(-N // bn))


def _flat(kind, s):
    """The kernels' scales as stored: [1] per tensor, [M] per token, [N] per channel."""
    return s.reshape(-1) if kind in ("tensor", "token", "channel") else s


def check_quantize(kind: str, static: bool):
    tile = _granular(kind)
    name = f"quantize_per_{kind}" + ("_static" if static and kind in ("tensor", "channel") else "")

    def check(mod, rng, dtype, shape, consts):
        M, N = shape
        bm, bn = tile(M, N, consts)
        for specials in (True, False):
            x = inputs(rng, M, N, dtype, specials)
            for q in QTYPES:
                where = f" {name} T={dtype} Q={q} {shape} {consts} specials={specials}"
                qv = np.zeros((M, N), NUMPY[q])
                qv[...] = 3
                s_shape = _scales_shape(M, N, bm, bn)
                if static:
                    # the dynamic scales, some halved (values saturate), one 0
                    s = ref_quantize(x, bm, bn, q)[1] * np.where(rng.random(s_shape) < 0.3, 0.5, 1).astype(np.float32)
                    s.reshape(-1)[-1] = 0
                    want_q, _ = ref_quantize(x, bm, bn, q, s)
                    args = [x, _flat(kind, s.copy()), qv] if kind in ("tensor", "channel") else [x, qv, _flat(kind, s.copy())]
                    kw = {} if kind in ("tensor", "channel") else {"DYNAMIC": False}
                    getattr(mod, name)(*args, Q=q, **consts, **kw)
                else:
                    want_q, want_s = ref_quantize(x, bm, bn, q)
                    s = np.full(s_shape, np.nan, np.float32)
                    sf = _flat(kind, s)
                    getattr(mod, name)(x, qv, sf, Q=q, **consts)
                    assert_same(sf.reshape(s_shape), want_s, "scales" + where)
                assert_same(qv, want_q, "q" + where)
    return check


def check_dequantize(kind: str):
    tile = _granular(kind)
    name = f"dequantize_per_{kind}"

    def check(mod, rng, dtype, shape, consts):
        M, N = shape
        bm, bn = tile(M, N, consts)
        x = inputs(rng, M, N, "f32")
        for q in QTYPES:
            qv, s = ref_quantize(x, bm, bn, q)
            y = np.full((M, N), np.nan, NUMPY[dtype])
            getattr(mod, name)(qv, _flat(kind, s), y, Q=q, **consts)
            assert_same(y, ref_dequantize(qv, s, bm, bn, dtype), f"y {name} T={dtype} Q={q} {shape} {consts}")
    return check


def check_int4(signed: bool, static: bool = False):
    def check(mod, rng, dtype, shape, consts):
        M, N = shape
        G = consts.get("G", 128)
        x = inputs(rng, M, N, dtype)
        where = f" T={dtype} {shape} {consts} static={static}"
        q = np.full((M, (N + 1) // 2), 0xAA, np.uint8)
        sh = (M, -(-N // G))
        if signed:
            if static:
                s = ref_int4(x, G)[1] * np.where(rng.random(sh) < 0.3, 0.5, 1).astype(np.float32)
                want_q, want_s = ref_int4(x, G, s)
                mod.quantize_int4(x, q, s, DYNAMIC=False, **consts)
            else:
                want_q, want_s = ref_int4(x, G)
                s = np.full(sh, np.nan, np.float32)
                mod.quantize_int4(x, q, s, **consts)
            assert_same(s, want_s, "scales quantize_int4" + where)
            assert_same(q, want_q, "q quantize_int4" + where)
            y = np.full((M, N), np.nan, NUMPY[dtype])
            mod.dequantize_int4(q, s, y, **consts)
            want_y = (unpack(q, N, True).astype(np.float32) * expand(s, 1, G, M, N)).astype(NUMPY[dtype])
        else:
            if static:
                _, s, z = ref_uint4(x, G)
                s = s * np.where(rng.random(sh) < 0.3, 0.5, 1).astype(np.float32)
                want_q, want_s, want_z = ref_uint4(x, G, s, z)
                mod.quantize_uint4(x, q, s, z, DYNAMIC=False, **consts)
            else:
                want_q, want_s, want_z = ref_uint4(x, G)
                s, z = np.full(sh, np.nan, np.float32), np.full(sh, 99, np.uint8)
                mod.quantize_uint4(x, q, s, z, **consts)
            assert_same(s, want_s, "scales quantize_uint4" + where)
            assert_same(z, want_z, "zeros quantize_uint4" + where)
            assert_same(q, want_q, "q quantize_uint4" + where)
            y = np.full((M, N), np.nan, NUMPY[dtype])
            mod.dequantize_uint4(q, s, z, y, **consts)
            want_y = ((unpack(q, N, False) - expand(z.astype(np.int32), 1, G, M, N)).astype(np.float32)
                      * expand(s, 1, G, M, N)).astype(NUMPY[dtype])
        assert_same(y, want_y, ("dequantize_int4" if signed else "dequantize_uint4") + where)
    return check


def check_mx(mod, rng, dtype, shape, consts):
    M, N = shape
    x = inputs(rng, M, N, dtype)
    for q in ("f8e4m3", "f8e5m2"):
        where = f" T={dtype} Q={q} {shape} {consts}"
        qv = np.zeros((M, N), NUMPY[q])
        e8 = np.full((M, -(-N // 32)), 255, np.uint8)
        mod.quantize_mx(x, qv, e8, Q=q, **consts)
        want_q, want_e = ref_mx(x, q)
        assert_same(e8, want_e, "scales quantize_mx" + where)
        assert_same(qv, want_q, "q quantize_mx" + where)
        y = np.full((M, N), np.nan, NUMPY[dtype])
        mod.dequantize_mx(qv, e8, y, Q=q, **consts)
        want_y = (qv.astype(np.float32) * expand(mx_scale(e8), 1, 32, M, N)).astype(NUMPY[dtype])
        assert_same(y, want_y, "dequantize_mx" + where)


def ref_compress(g, err, G: int):
    """(packed q, scales, new err) of one error-feedback step."""
    v = (g.astype(np.float32) + err).astype(np.float32)
    q, s = ref_int4(v, G)
    M, N = v.shape
    new = (v - (unpack(q, N, True).astype(np.float32) * expand(s, 1, G, M, N)).astype(np.float32)).astype(np.float32)
    return q, s, new


def check_compress(mod, rng, dtype, shape, consts, exact: bool = True):
    """Three steps of compress_int4 against ref_compress: q and scales exactly, the error within
    an f32 unit of v (a GPU contracts v - q * s into one FMA, rounding once)."""
    M, N = shape
    G = consts.get("G", 128)
    err = np.zeros((M, N), np.float32)
    for step in range(3):
        g = inputs(rng, M, N, dtype, specials=False)
        want_q, want_s, want_e = ref_compress(g, err, G)
        q = np.full((M, (N + 1) // 2), 0xAA, np.uint8)
        s = np.full((M, -(-N // G)), np.nan, np.float32)
        v = (g.astype(np.float32) + err).astype(np.float32)
        mod.compress_int4(g, err, q, s, **consts)
        where = f" compress_int4 T={dtype} {shape} {consts} step {step}"
        assert_same(s, want_s, "scales" + where)
        assert_same(q, want_q, "q" + where)
        if exact:
            assert_same(err, want_e, "err" + where)
        else:
            np.testing.assert_array_less(np.abs(err - want_e), 2 * np.spacing(np.abs(v)) + 1e-45, err_msg="err" + where)
            err[...] = want_e  # so the next step's inputs agree


OPS = [
    Op("quantize_per_tensor", FLOATS, check_quantize("tensor", False)),
    Op("quantize_per_tensor_static", FLOATS, check_quantize("tensor", True)),
    Op("dequantize_per_tensor", FLOATS, check_dequantize("tensor")),
    Op("quantize_per_token", FLOATS, lambda *a: (check_quantize("token", False)(*a), check_quantize("token", True)(*a))),
    Op("dequantize_per_token", FLOATS, check_dequantize("token")),
    Op("quantize_per_channel", FLOATS, check_quantize("channel", False)),
    Op("quantize_per_channel_static", FLOATS, check_quantize("channel", True)),
    Op("dequantize_per_channel", FLOATS, check_dequantize("channel")),
    Op("quantize_per_group", FLOATS, lambda *a: (check_quantize("group", False)(*a), check_quantize("group", True)(*a))),
    Op("dequantize_per_group", FLOATS, check_dequantize("group")),
    Op("quantize_per_block", FLOATS, lambda *a: (check_quantize("block", False)(*a), check_quantize("block", True)(*a))),
    Op("dequantize_per_block", FLOATS, check_dequantize("block")),
    Op("quantize_int4", FLOATS, lambda *a: (check_int4(True)(*a), check_int4(True, True)(*a))),
    Op("dequantize_int4", FLOATS, check_int4(True)),
    Op("quantize_uint4", FLOATS, lambda *a: (check_int4(False)(*a), check_int4(False, True)(*a))),
    Op("dequantize_uint4", FLOATS, check_int4(False)),
    Op("quantize_mx", FLOATS, check_mx),
    Op("dequantize_mx", FLOATS, check_mx),
    Op("compress_int4", FLOATS, check_compress),
]


def tiles(name: str):
    """(shape, consts) the interpreter test runs an operator at: ragged shapes (odd N, a last
    group, block and tile cut short) with small tiles, so that several blocks and tiles run."""
    small = {"THREADS": 32}
    if "per_token" in name:
        return [((7, 301), {**small, "BM": 2, "BN": 128}), ((3, 90), {**small, "BN": 128})]
    if name == "quantize_per_channel":  # row panels of 16: three, the last cut short
        return [((37, 301), {**small, "BM": 8, "BN": 64, "RM": 16})]
    if "per_tensor" in name or "per_channel" in name:
        return [((37, 301), {**small, "BM": 8, "BN": 64})]
    if "per_block" in name:
        return [((37, 301), {**small, "B": 16}), ((9, 40), {**small, "B": 32})]
    if "mx" in name:  # tiles of 4 blocks of 32: three a row, the last cut short (301 = 2 * 128 + 45)
        return [((19, 301), {**small, "BM": 4, "BN": 128}), ((9, 70), {**small, "BM": 2, "BN": 32})]
    return [((19, 301), {**small, "G": 32, "BM": 4}), ((9, 200), {**small, "G": 128, "BM": 8})]
