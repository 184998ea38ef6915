"""Integer arithmetic in the generated C computes what the interpreter computes (issue #16; the
first differential fuzz run): 8- and 16-bit results wrap to their dtype where C promotes to
int, tl::floordiv, pymod, imin and imax are called with their type named (an int operand met
a narrow one: NVRTC's "more than one instance of overloaded function"), % of an unsigned type
compiles under -Werror, shift counts outside the width and integer powers have NumPy's
results instead of C's undefined behaviour, an integer literal met by an operand widened
to i64 compares in i64, and - of a negative constant is not `--`.  Each
case is one kernel `out = EXPR(a, b)` over two input vectors; the reference is NumPy's
arithmetic in the dtype.  tests/gpu/test_narrow_ints_gpu.py runs the same kernels on the GPU."""
from __future__ import annotations

import functools

import numpy as np
import pytest

from nvcc import BUILD_ARCHS, compile_object
from tlc import runner
from tlc.api import compile_source
from tlc.codegen.cnames import literal
from tlc.dtypes import DTYPES

KERNEL = """
@kernel
def {name}(x: {dt}[N], y: {dt}[N], out: {dt}[N], BLOCK: const = 32):
    with grid(cdiv(N, BLOCK), threads=32) as bx:
        a = fragment({dt}[BLOCK])
        b = fragment({dt}[BLOCK])
        copy(x[bx * BLOCK], a)
        copy(y[bx * BLOCK], b)
        for i in parallel(BLOCK):
            a[i] = {expr}
        copy(a, out[bx * BLOCK])
"""
EDGES = {"u8": [0, 1, 2, 7, 100, 127, 128, 200, 253, 255], "i8": [0, 1, -1, 2, 7, -7, 100, 127, -127, -128],
         "u16": [0, 1, 2, 7, 255, 256, 1000, 32768, 65534, 65535],
         "i16": [0, 1, -1, 7, -7, 255, -256, 32767, -32767, -32768],
         "i32": [0, 1, -1, 3, -3, 8, -8, 2**31 - 1, -2**31, 12345], "u32": [0, 1, 2, 3, 8, 2**31, 2**32 - 1, 7, 100, 5],
         "f32": [0.0, 1.0, -1.0, 0.5, -0.5, 2.5, 100.0, -100.0, 1e-3, 7.0]}
SHIFTS = [0, 1, 7, 8, 9, 15, 16, 31, 32, 33, 40, 63, 64, -1]


def _pow(x, y):
    """Integer ** as the language defines it: wrapping, and 1 / x**|y| truncated for y < 0."""
    out = []
    for a, b in zip(x.tolist(), y.tolist()):
        if b >= 0:
            out.append(pow(a, b, 1 << 64) if a >= 0 else pow(a, b))
        else:
            out.append(1 if a == 1 else (-1 if b % 2 else 1) if a == -1 else 0)
    bits = x.dtype.itemsize * 8
    return np.array([v % (1 << bits) for v in out], np.uint64).astype(x.dtype.str.replace("i", "u")).view(x.dtype)


# (kernel, dtype, expression, reference on NumPy arrays x, y of the dtype, the y values or None
# for the dtype's edges reversed); the seed is the fuzz case it reduces (tests/fuzz/FINDINGS.md)
CASES = [
    ("u8_add_shift", "u8", "((a[i] & 255) + (a[i] & 255)) >> 1", lambda x, y: (x + x) >> 1, None),  # seed 350
    ("u16_floordiv", "u16", "((a[i] & 255) - 1) // 4 + 1", lambda x, y: ((x & 255) - 1) // 4 + 1, None),  # seed 21
    ("i16_abs_mod", "i16", "abs(a[i] & 255) % 7", lambda x, y: np.abs(x & 255) % 7, None),  # seed 316
    ("i8_min_floordiv", "i8", "min(((a[i] & 127) - 1) // 1 + 1, (a[i] & 127) * (a[i] & 127))",
     lambda x, y: np.minimum(((x & 127) - 1) // 1 + 1, (x & 127) * (x & 127)), None),  # seed 359
    ("u8_mul_mod", "u8", "(a[i] * b[i]) % 7", lambda x, y: (x * y) % 7, None),  # seed 288
    ("u16_max_floordiv", "u16", "max((a[i] & a[i]) | b[i], ((a[i] & 255) - 1) // 1 + 1)",
     lambda x, y: np.maximum(x | y, ((x & 255) - 1) // 1 + 1), None),  # seed 661
    ("u16_mul", "u16", "a[i] * b[i]", lambda x, y: x * y, None),
    ("i8_neg", "i8", "-a[i] + b[i]", lambda x, y: -x + y, None),
    ("u8_not", "u8", "(~a[i]) >> 4", lambda x, y: (~x) >> 4, None),
    ("i16_sub_cmp", "i16", "where(a[i] - b[i] < 0, a[i], b[i])", lambda x, y: np.where(x - y < 0, x, y), None),
    ("u8_shl", "u8", "a[i] << b[i]", np.left_shift, SHIFTS),
    ("i8_shr", "i8", "a[i] >> b[i]", np.right_shift, SHIFTS),
    ("i16_shl", "i16", "a[i] << b[i]", np.left_shift, SHIFTS),
    ("i32_shl", "i32", "a[i] << b[i]", np.left_shift, SHIFTS),
    ("i32_shr", "i32", "a[i] >> b[i]", np.right_shift, SHIFTS),
    ("u32_shr", "u32", "a[i] >> b[i]", np.right_shift, [s % 2**32 for s in SHIFTS]),
    ("i32_pow", "i32", "a[i] ** b[i]", _pow, [0, 1, 2, 3, 5, -1, -2, -3, 31, 40]),
    ("u8_pow", "u8", "a[i] ** b[i]", _pow, [0, 1, 2, 3, 5, 2, 8, 1, 3, 2]),
    # a literal an i32 cannot hold is E157 (tests/typecheck/test_literal_range.py); widened, it
    # compares mathematically on both targets
    ("i32_wide_literal", "i32", "where(i64(a[i]) < 3000000000, a[i] + 1, b[i])",
     lambda x, y: x + np.int32(1), None),
    ("f32_neg_const", "f32", "a[i] + -SCALE", lambda x, y: x + np.float32(0.5), None),  # seed 180
]
# A float converted to an 8- or 16-bit integer saturates to it (NaN gives 0): C converted through
# a 32-bit integer and kept the low bits (300.0 -> u8 44, not 255).
CONVERT = """
@kernel
def {name}(x: {src}[N], out: {dst}[N], BLOCK: const = 32):
    with grid(cdiv(N, BLOCK), threads=32) as bx:
        a = fragment({src}[BLOCK])
        r = fragment({dst}[BLOCK])
        copy(x[bx * BLOCK], a)
        for i in parallel(BLOCK):
            r[i] = {dst}(a[i])
        copy(r, out[bx * BLOCK])
"""
CONVERSIONS = [(f"{src}_to_{dst}", src, dst) for src, dst in
               [("f32", "u8"), ("f32", "i8"), ("f64", "i16"), ("f32", "u16"), ("f16", "u8"), ("bf16", "i8")]]
FLOATS = [0.0, 1.5, -1.5, 127.9, 128.0, 200.0, 255.0, 256.0, 300.0, -129.0, 1e6, -1e6, 65535.0, 70000.0,
          -40000.0, float("nan"), float("inf"), -float("inf")]
SOURCE = ("SCALE: const = -0.5\n" + "".join(KERNEL.format(name=n, dt=dt, expr=e) for n, dt, e, _, _ in CASES)
          + "".join(CONVERT.format(name=n, src=src, dst=dst) for n, src, dst in CONVERSIONS))
N = 40  # a second, partial block


@functools.cache
def interpreted():
    return compile_source(SOURCE, target="cpu", path="narrow.tl")


def inputs(dt: str, shifts):
    """x: the dtype's edge values, repeated; y: the given values, or the edges reversed."""
    np_dt = DTYPES[dt].numpy()
    edges = EDGES[dt]
    x = np.array([edges[k % len(edges)] for k in range(N)]).astype(np_dt)
    ys = edges[::-1] if shifts is None else shifts
    y = np.array([ys[(k // len(edges) + k) % len(ys)] for k in range(N)]).astype(np_dt)
    return x, y


def expected(dt, ref, shifts):
    x, y = inputs(dt, shifts)
    with np.errstate(over="ignore"):
        return ref(x, y).astype(x.dtype)


def test_the_numpy_spelling_of_each_kernel():
    """Hand-checked values of a few cases, so that the references above mean what they say."""
    assert expected("u8", CASES[0][3], None)[8] == 125  # (253 + 253) >> 1: 250 >> 1
    x, y = inputs("i32", SHIFTS)
    got = dict(zip(zip(x.tolist(), y.tolist()), expected("i32", np.left_shift, SHIFTS).tolist()))
    assert all(v == 0 for (a, s), v in got.items() if s >= 32 or s < 0)
    assert _pow(np.array([2, 2, -1, -1, 3], np.int32), np.array([31, 32, -3, -2, -1], np.int32)).tolist() == \
        [-2**31, 0, -1, 1, 0]


@pytest.mark.parametrize("name,dt,expr,ref,shifts", CASES, ids=[c[0] for c in CASES])
def test_interpreter_computes_in_the_dtype(name, dt, expr, ref, shifts):
    mod = interpreted()
    x, y = inputs(dt, shifts)
    out = np.zeros_like(x)
    getattr(mod, name)(x, y, out)
    np.testing.assert_array_equal(out, expected(dt, ref, shifts))


def converted(src: str, dst: str):
    """(the float inputs as `src`, what each converts to in `dst`: truncated and saturated)."""
    with np.errstate(over="ignore"):  # 1e6 is inf as an f16
        x = np.array(FLOATS, np.float64).astype(DTYPES[src].numpy())
    info = np.iinfo(DTYPES[dst].numpy())
    v = np.trunc(x.astype(np.float64))
    want = np.where(np.isnan(v), 0, np.clip(np.nan_to_num(v, posinf=info.max, neginf=info.min), info.min, info.max))
    return x, want.astype(DTYPES[dst].numpy())


def check_conversion(mod, name: str, src: str, dst: str) -> None:
    x, want = converted(src, dst)
    out = np.zeros_like(want)
    getattr(mod, name)(x, out)
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("name,src,dst", CONVERSIONS, ids=[c[0] for c in CONVERSIONS])
def test_interpreter_saturates_a_float_into_a_narrow_integer(name, src, dst):
    check_conversion(interpreted(), name, src, dst)


@pytest.mark.nvcc
@pytest.mark.parametrize("arch", BUILD_ARCHS)
def test_every_kernel_compiles_with_werror(arch, tmp_path):
    path = tmp_path / "narrow.tl"
    path.write_text(SOURCE)
    compile_object(runner.build(str(path), arch=arch)[0], arch, tmp_path)


def test_a_literal_its_dtype_cannot_hold_is_written_wrapped():
    """As the interpreter's constants (numerics.const): `b < 3000000000` of an i32 b compared
    in 64 bits in the C and wrapped interpreted."""
    written = {(n, v): literal(v, DTYPES[n]) for n, v in [("i32", 3000000000), ("u32", 2**33 + 1), ("u32", -1),
                                                          ("i64", 2**63), ("u64", -1), ("i8", 255)]}
    assert list(written.values()) == ["(-1294967296)", "1u", "4294967295u", "(-9223372036854775807LL - 1)",
                                      "18446744073709551615ull", "static_cast<signed char>(-1)"]
