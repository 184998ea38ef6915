"""std.elementwise's atan, tan, erf, asinh, atanh, asin, acos, sin, cos, acosh and expm1 of f16 and
bf16 on the GPU take tl::fast_atan, fast_tan, fast_erf, fast_asinh, fast_atanh, fast_asin,
fast_acos, fast_sin, fast_cos, fast_acosh and fast_expm1 (the hardware's reciprocal, 2^x, log2
and square root, not the host stand-ins of
tests/codegen/test_fast_math16.py), and reciprocal of f16 fast_div_near (1 times MUFU.RCP's
reciprocal; of bf16 fast_div): on every finite 16-bit value, each result is the correctly
rounded one or, where that lies within 2^-15 of a tie, its neighbour."""
import math

import ml_dtypes
import numpy as np
import pytest

import tlc

pytestmark = pytest.mark.gpu

TARGET = "cuda"
REF = {"atan": np.arctan, "tan": np.tan, "erf": np.vectorize(math.erf, otypes=[np.float64]), "asinh": np.arcsinh,
       "atanh": np.arctanh, "asin": np.arcsin, "acos": np.arccos, "sin": np.sin, "cos": np.cos, "acosh": np.arccosh,
       "expm1": np.expm1, "reciprocal": lambda x: 1.0 / x}


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("name", list(REF))
def test_every_16_bit_value(name, dtype):
    np_dt = np.dtype(np.float16) if dtype == "f16" else np.dtype(ml_dtypes.bfloat16)
    x = np.arange(65536, dtype=np.uint16).view(np_dt).reshape(256, 256)
    x = np.where(np.isfinite(x.astype(np.float32)), x, np.zeros((), np_dt)).astype(np_dt)
    got = np.asarray(getattr(tlc.load("std.elementwise", target=TARGET), name)(x))
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # tan next to a pole: inf in f16; atanh: NaN beyond 1 (acosh below 1)
        want = REF[name](x.astype(np.float64))
        n = np.abs(_order(got) - _order(want.astype(np_dt)))
        tie_gap = np.abs(want - 0.5 * (got.astype(np.float64) + want.astype(np_dt).astype(np.float64)))
    nan = np.isnan(want)
    wrong = (np.isnan(got.astype(np.float32)) != nan) | (~nan & ((n > 1) | ((n == 1) & (tie_gap > 2.0 ** -15 * np.abs(want)))))
    assert not wrong.any(), (f"{name} {dtype}: {int(wrong.sum())} values off, e.g. x = "
                             f"{x[wrong][:4].astype(np.float32).tolist()}: {got[wrong][:4].astype(np.float32).tolist()}, "
                             f"want {want[wrong][:4].tolist()}")


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_atan2_of_every_16_bit_y(dtype):
    """atan2 (tl::fast_atan2_near of f16, fast_atan2 of bf16) of every finite y against four x
    each (the values rolled by 1, 61, 4099 and 32768 places: all signs and sizes), as above."""
    np_dt = np.dtype(np.float16) if dtype == "f16" else np.dtype(ml_dtypes.bfloat16)
    v = np.arange(65536, dtype=np.uint16).view(np_dt)
    v = np.where(np.isfinite(v.astype(np.float32)), v, np.zeros((), np_dt)).astype(np_dt)
    y = np.concatenate([v] * 4).reshape(1024, 256)
    x = np.concatenate([np.roll(v, k) for k in (1, 61, 4099, 32768)]).reshape(1024, 256)
    got = np.asarray(tlc.load("std.elementwise", target=TARGET).atan2(y, x))
    want = np.arctan2(y.astype(np.float64), x.astype(np.float64))
    n = np.abs(_order(got) - _order(want.astype(np_dt)))
    tie_gap = np.abs(want - 0.5 * (got.astype(np.float64) + want.astype(np_dt).astype(np.float64)))
    wrong = (n > 1) | ((n == 1) & (tie_gap > 2.0 ** -15 * np.abs(want)))
    assert not wrong.any(), (f"atan2 {dtype}: {int(wrong.sum())} values off, e.g. (y, x) = "
                             f"{list(zip(y[wrong][:4].astype(np.float32).tolist(), x[wrong][:4].astype(np.float32).tolist()))}: "
                             f"{got[wrong][:4].astype(np.float32).tolist()}, want {want[wrong][:4].tolist()}")


POW_VALUES = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, 3.0, -3.0, 2.5, -2.5, 1e-3, 7.0,
              -7.0, 65504.0, 0.9, 1.5, -1.5, 30.0, -31.0]


def _special_pairs(np_dt, count: int):
    """`count` pairs (a, b) of POW_VALUES, every pair several times, in a random order: special
    and plain pairs side by side in a warp."""
    v = np.array(POW_VALUES, np.float64)
    a, b = np.meshgrid(v, v, indexing="ij")
    reps = -(-count // a.size)
    a, b = np.tile(a.ravel(), reps).astype(np_dt), np.tile(b.ravel(), reps).astype(np_dt)
    order = np.random.default_rng(0).permutation(a.size)[:count]
    return a[order], b[order]


def _check_pow(a, b, got, np_dt, what: str) -> None:
    """`got` against np.power rounded to the dtype: NaN where it is NaN, its sign and infinities,
    and within 2 units of the dtype elsewhere."""
    got = got.astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        want = np.power(a.astype(np.float64), b.astype(np.float64)).astype(np_dt).astype(np.float64)
        ulp = np.abs(np.spacing(want.astype(np_dt))).astype(np.float64)
        same = (np.isnan(got) & np.isnan(want)) | ((got == want) & (np.signbit(got) == np.signbit(want))) | \
            (np.isfinite(want) & np.isfinite(got) & (np.signbit(got) == np.signbit(want)) & (np.abs(got - want) <= 2 * ulp))
    assert same.all(), (f"{what}: {int((~same).sum())} pairs off, e.g. (a, b) = "
                        f"{list(zip(a[~same][:4].tolist(), b[~same][:4].tolist()))}: {got[~same][:4].tolist()}, "
                        f"want {want[~same][:4].tolist()}")


@pytest.mark.parametrize("rare", [False, True])
@pytest.mark.parametrize("dtype", ["f16", "f32"])
def test_pow_special_values(dtype, rare, monkeypatch, tmp_path):
    """pow (tl::fast_pow_near of f16; with fast_math.RARE_POW_SPECIALS, fast_pow_near_rare: its
    special cases behind one branch an element, taken by a negative base or a NaN product) at
    every pair of special arguments (zeros of both signs, infinities, NaN, +-1, negative bases
    with odd, even and fractional powers), the pairs mixed within each warp, against np.power
    rounded to the dtype (_check_pow; f32: std.elementwise's powf).  The switch's kernels
    compile into a cache of their own (the cache key does not hold it)."""
    import tlc.schedule.fast_math as fm

    monkeypatch.setattr(fm, "RARE_POW_SPECIALS", rare)
    monkeypatch.setenv("TLC_CACHE_DIR", str(tmp_path))
    np_dt = np.dtype(np.float16) if dtype == "f16" else np.dtype(np.float32)
    a, b = _special_pairs(np_dt, 8 * len(POW_VALUES) ** 2)
    a, b = a.reshape(64, -1), b.reshape(64, -1)
    _check_pow(a, b, np.asarray(tlc.load("std.elementwise", target=TARGET).pow(a, b)), np_dt, f"pow {dtype}")


@pytest.mark.parametrize("n", [4096, 4093])
@pytest.mark.parametrize("runs", [False, True])
def test_broadcast_pow_special_values(runs, n, monkeypatch, tmp_path):
    """std.broadcast's pow of f16 (its rows a run loop: with codegen/rare_runs.py's
    RARE_POW_RUNS, the special cases tested once a run and the run computed again by the selects)
    at BLOCKS = 8 on the pairs above, rows of whole runs (n = 4096) and ragged ones (4093, the
    general build), against np.power as above."""
    from tlc.codegen import rare_runs

    monkeypatch.setattr(rare_runs, "RARE_POW_RUNS", runs)
    monkeypatch.setenv("TLC_CACHE_DIR", str(tmp_path))
    np_dt = np.dtype(np.float16)
    a, b = _special_pairs(np_dt, 16 * n)
    a, b = a.reshape(1, 2, 8, n), b.reshape(1, 2, 8, n)
    y = np.full_like(a, -12345.0)  # an element not written fails
    bc = tlc.load("std.broadcast", target=TARGET)
    bc.pow(a, b, y, BLOCKS=8)
    _check_pow(a, b, np.asarray(y), np_dt, f"broadcast pow, RARE_POW_RUNS {runs}, n {n}")


def _order(v):
    """16-bit floats as integers in their order (-0 and 0 one)."""
    u = v.view(np.uint16).astype(np.int32)
    return np.where(u & 0x8000, -(u & 0x7FFF), u)
