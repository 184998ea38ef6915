"""The cpu target's numerics against the interpreter's, bit for bit where the interpreter's are
NumPy's own order (templates/cpp/prelude.h's `half`, tl_cpu.h's reductions) and against the
correctly rounded value for its exponentials (tl::exp2_wide); each kernel generated and
compiled (no E345 warning), a g++ build each, so under -m slow."""
from __future__ import annotations

import numpy as np
import pytest

import tlc
from tlc.runtime import cpp as runtime_cpp

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(runtime_cpp.compiler_unavailable_reason() is not None,
                                 reason="no C++ compiler (g++ or $CXX) here")]


def run_both(source: str, kernel: str, make, capsys, **constants) -> tuple[list, list]:
    """The kernel's arrays after a run on the cpu target and one on the interpreter, from the
    same inputs; the cpu target's run must be its generated code's (no warning)."""
    got = []
    for target in ("cpp", "interp"):
        args = make()
        getattr(tlc.compile_source(source, target=target, path=f"{kernel}.tl"), kernel)(*args, **constants)
        got.append(args)
    assert "warning[" not in capsys.readouterr().err
    return got[0], got[1]


CONVERT_F16 = """\
@kernel
def convert(a: f16[N], b: f32[N], c: f32[N], d: f16[N], e: f64[N], g: f16[N]):
    with grid(cdiv(N, 1024), threads=128) as bx:
        for i in parallel(1024):
            b[bx * 1024 + i] = f32(a[bx * 1024 + i])
            d[bx * 1024 + i] = f16(c[bx * 1024 + i])
            g[bx * 1024 + i] = f16(e[bx * 1024 + i])
"""


def test_half_converts_bit_for_bit_as_numpy(capsys):
    """Every f16 into f32, and f32 and f64 values into f16: both signs of zero, subnormals and
    the rounding into them, ties to even, overflow to infinity from 65520 on, NaN payloads; an
    f64 rounded once (not through f32)."""
    rng = np.random.default_rng(0)
    n = 4 << 16
    every_half = np.resize(np.arange(1 << 16, dtype=np.uint16).view(np.float16), n)
    finite = np.arange(0x7c00, dtype=np.uint16).view(np.float16).astype(np.float64)  # 0 .. 65504
    ties = np.concatenate([finite[:-1] + finite[1:], -finite[:-1] - finite[1:]]) / 2  # halfway between neighbours
    special = [0, -0.0, np.inf, -np.inf, 65504, 65519.996, 65520, 2.0 ** -24, 2.0 ** -25, 3 * 2.0 ** -26, 2.0 ** -14,
               float.fromhex("0x1.ffcp-15")]
    singles = np.concatenate([np.array(special, np.float32), ties.astype(np.float32),
                              rng.integers(0, 1 << 32, 100000, dtype=np.uint64).astype(np.uint32).view(np.float32),
                              (rng.standard_normal(n) * np.exp2(rng.integers(-27, 17, n))).astype(np.float32)])[:n]
    # doubles a hair off a tie: through float they would land on it and round to even
    doubles = np.concatenate([ties * (1 + 2.0 ** -40), ties * (1 - 2.0 ** -40), ties, [1e300, -1e300, 1e-300],
                              rng.standard_normal(n) * 1e4])[:n]
    mine, ref = run_both(CONVERT_F16, "convert", lambda: [every_half.copy(), np.zeros(n, np.float32), singles.copy(),
                                                         np.zeros(n, np.float16), doubles.copy(),
                                                         np.zeros(n, np.float16)], capsys)
    with np.errstate(over="ignore"):
        assert np.array_equal(ref[3].view(np.uint16), singles.astype(np.float16).view(np.uint16))
        assert np.array_equal(ref[5].view(np.uint16), doubles.astype(np.float16).view(np.uint16))
    for got, want, bits in ((mine[1], ref[1], np.uint32), (mine[3], ref[3], np.uint16), (mine[5], ref[5], np.uint16)):
        assert np.array_equal(got.view(bits), want.view(bits))


REDUCTIONS = """\
@kernel
def rows(x: f32[R, C], s: f32[R], mx: f32[R], mn: f32[R], am: f32[R], cols: f32[C], more: f32[R],
         BR: const = 4, BC: const = 1024):
    with grid(cdiv(R, BR), threads=128) as bx:
        t = fragment(f32[BR, BC])
        r = fragment(f32[BR])
        cs = fragment(f32[BC])
        copy(x[bx * BR, 0], t)
        reduce_sum(t, r, dim=1)
        copy(r, s[bx * BR])
        reduce_max(t, r, dim=1)
        copy(r, mx[bx * BR])
        reduce_min(t, r, dim=1)
        copy(r, mn[bx * BR])
        reduce_absmax(t, r, dim=1)
        copy(r, am[bx * BR])
        reduce_sum(t, cs, dim=0)
        copy(cs, cols)
        copy(s[bx * BR], r)
        reduce_sum(t, r, dim=1, clear=False)
        copy(r, more[bx * BR])
"""


@pytest.mark.parametrize("width", [5, 100, 700, 1024])
def test_reductions_match_the_interpreter_bit_for_bit(width, capsys):
    """A row's float sum in NumPy's pairwise order (under 8, up to 128, halves of longer rows),
    a column's in order from the first row, with clear=False; maxima and minima ignore NaN
    (NaN only for a row of NaN). Values of wide range, so that any other order shows."""
    rng = np.random.default_rng(width)
    x = (rng.standard_normal((4, width)) * np.exp2(rng.integers(-20, 20, (4, width)))).astype(np.float32)
    x[1, ::3] = np.nan
    x[2, :] = np.nan
    x[2, width // 2] = -3.0
    x[3, :] = np.nan
    outputs = [4] * 4 + [width, 4]  # s, mx, mn, am, cols, more
    mine, ref = run_both(REDUCTIONS, "rows", lambda: [x.copy()] + [np.zeros(n, np.float32) for n in outputs], capsys,
                         BC=width)
    for a, b in zip(mine[1:], ref[1:]):
        assert np.array_equal(a.view(np.uint32), b.view(np.uint32))
    assert np.isnan(ref[1][3]) and ref[2][2] == -3.0 and ref[3][2] == -3.0


EXPONENTIALS = """\
@kernel
def exps(x: f32[N], e: f32[N], e2: f32[N], sg: f32[N], p: f32[N], lg: f32[N], lg2: f32[N], th: f32[N]):
    with grid(cdiv(N, 1024), threads=128) as bx:
        for i in parallel(1024):
            th[bx * 1024 + i] = tanh(x[bx * 1024 + i] / 4.0)
            e[bx * 1024 + i] = exp(x[bx * 1024 + i])
            e2[bx * 1024 + i] = exp2(x[bx * 1024 + i])
            sg[bx * 1024 + i] = sigmoid(x[bx * 1024 + i])
            lg[bx * 1024 + i] = log(p[bx * 1024 + i])
            lg2[bx * 1024 + i] = log2(p[bx * 1024 + i])
"""


def test_exponentials_logarithms_and_tanh_are_the_correctly_rounded_values(capsys):
    """exp, exp2, log, log2 and tanh of f32 are the float64 values rounded once (NumPy's float32
    ones, the interpreter's, are an ulp off in a tenth to two fifths of them); infinities, NaN,
    overflow, underflow into subnormals, subnormal and negative arguments, 0 of either sign
    (tanh's sign of 0 too: compared bit for bit), tanh's two forms either side of 1/8.
    sigmoid is 1 / (1 + exp(-x)) as the interpreter computes it, within the few ulp that its
    exp's ulp becomes."""
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.uniform(-104, 89, 60000), rng.standard_normal(20000) * 4, rng.uniform(-150, -126, 2000),
                        rng.uniform(-0.6, 0.6, 4000), [0, -0.0, np.inf, -np.inf, np.nan, 88.72, 88.73, 128, 127.99,
                                                       -149, -149.5, -150, -103.97, -103.98, 1e-30, -1e-30, 0.5,
                                                       -0.5, 0.49999997, 40]]).astype(np.float32)
    p = np.resize(np.concatenate([[0, -0.0, -1, np.inf, -np.inf, np.nan, 1, 2.0 ** -149, 2.0 ** -126, 3.4e38,
                                   np.sqrt(0.5), np.sqrt(2)],
                                  rng.integers(1, 1 << 23, 2000) * 2.0 ** -149,  # subnormals
                                  1 + rng.standard_normal(10000) * 1e-4, np.exp(rng.uniform(-100, 88, 70000))]),
                  x.size).astype(np.float32)
    mine, ref = run_both(EXPONENTIALS, "exps", lambda: [x.copy()] + [np.zeros_like(x) for _ in range(3)]
                         + [p.copy(), np.zeros_like(p), np.zeros_like(p), np.zeros_like(x)], capsys)
    wide, positive = x.astype(np.float64), p.astype(np.float64)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        for got, want in ((mine[1], np.exp(wide)), (mine[2], np.exp2(wide)), (mine[5], np.log(positive)),
                          (mine[6], np.log2(positive))):
            assert np.array_equal(got, want.astype(np.float32), equal_nan=True)
    quarter = (x / np.float32(4)).astype(np.float64)
    assert np.array_equal(mine[7].view(np.uint32), np.tanh(quarter).astype(np.float32).view(np.uint32))
    close = np.isclose(mine[3], ref[3], rtol=2.0 ** -20, atol=0, equal_nan=True)
    assert close.all(), (x[~close], mine[3][~close], ref[3][~close])
