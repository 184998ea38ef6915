"""Constants in schedule/lower.py: an explicit conversion of a constant converts it by the
language's rules (LANGUAGE.md section 3: int -> int wraps, float -> int saturates, floats round),
and a constant expression of integer literals is the literal of its exact value (T11).  Before,
`cast` retyped a constant without converting it and such an expression was computed in its own
weak i32, so every target (the IR is theirs) gave the wrong value, silently."""
import numpy as np
import pytest

import tlc

# (expression, the value every target must give); x[0] is 3
EXPRESSIONS = [
    ("f32(i8(300))", 44.0),  # was 300
    ("u8(300)", 44.0),
    ("i8(i16(300))", 44.0),
    ("u8(300.0)", 255.0),  # saturates; was 300
    ("i32(2.5e9)", 2147483647.0),
    ("i32(3000000000)", -1294967296.0),
    ("f16(0.1)", float(np.float16(0.1))),  # was 0.1
    ("f16(1e10)", np.inf),
    ("f8e4m3(1000.0)", 448.0),
    ("f64(f32(0.1))", float(np.float32(0.1))),
    ("f64(0.1)", 0.1),  # a literal is its exact number
    ("f16(0.5)", 0.5),
    ("i64(x[0]) + (1 << 40)", 2.0 ** 40 + 3),  # was 3
    ("i64(x[0]) * 2 ** 40", 3 * 2.0 ** 40),  # was 0
    ("f64(x[0]) * (10 ** 12)", 3e12),  # was 3 * -727379968
    ("2 ** 31", 2.0 ** 31),  # was -2**31
    ("i32(2 ** 40)", 0.0),  # the conversion wraps
    ("-(2 ** 7)", -128.0),
]
SOURCE = "@kernel\ndef k(x: f32[4], y: f64[{n}]):\n    with grid(1, threads=32) as b:\n{body}".format(
    n=len(EXPRESSIONS), body="".join(f"        y[{j}] = f64({e})\n" for j, (e, _) in enumerate(EXPRESSIONS)))


def run(target: str) -> np.ndarray:
    y = np.zeros(len(EXPRESSIONS))
    tlc.compile_source(SOURCE, target=target, path="constants.tl").k(np.full(4, 3.0, np.float32), y)
    return y


def expected() -> np.ndarray:
    return np.array([v for _, v in EXPRESSIONS])


def test_the_interpreter_converts_constants_by_the_rules():
    np.testing.assert_array_equal(run("interp"), expected())


@pytest.mark.slow  # a g++ build
def test_the_cpu_target_converts_constants_by_the_rules():
    np.testing.assert_array_equal(run("cpp"), expected())


def test_the_ir_holds_the_converted_constants():
    ir = tlc.compile_source(SOURCE, target="interp", path="constants.tl").k.ir()
    for line in ("y[0] = 44.0:f64", "y[3] = 255.0:f64", "y[6] = 0.0999755859375:f64", "y[7] = inf:f64",
                 "y[9] = 0.10000000149011612:f64", "y[10] = 0.1:f64", "y[12] = f64(i64(x[0]) + 1099511627776:i64)",
                 "y[16] = 0.0:f64"):
        assert f"\n  {line}\n" in ir, line


@pytest.mark.parametrize("expression,col,part", [("f32(2 ** 100000)", 20, "2 ** 100000"),
                                                 ("f32(i64(x[0]) + 2 ** 100)", 32, "2 ** 100")])
def test_a_constant_expression_past_64_bits_is_e150_at_its_part(expression, col, part):
    """Such a value wrapped to whatever it met (`f32(2 ** 100000)` was 0), and meeting a typed
    operand it escaped E157, whose check could not evaluate it."""
    source = f"@kernel\ndef k(x: f32[4], y: f32[4]):\n    with grid(1, threads=32) as b:\n        y[0] = {expression}\n"
    with pytest.raises(tlc.TlcError) as e:
        tlc.compile_source(source, target="interp", path="big.tl").k(np.ones(4, np.float32), np.ones(4, np.float32))
    assert str(e.value) == (
        f"big.tl:4:{col}: error[E150]: constant too large: this value does not fit in 64 bits\n  |\n"
        f"4 |         y[0] = {expression}\n  | {' ' * (col - 1)}{'^' * len(part)}\n"
        "  = hint: a compile-time integer lies between -2**63 and 2**64 - 1, the range of i64 and u64")


def test_a_tile_op_computes_constant_expressions_as_a_kernel_does():
    source = "@tile_op\ndef op(x: f32[M, N]) -> f64[M, N]:\n    return f64(x) * f64(i8(300)) + f64(2 ** 40){}\n"
    mod = tlc.compile_source(source.format(""), target="interp", path="op.tl")
    assert (mod.op(np.ones((2, 3), np.float32)) == 44 + 2 ** 40).all()  # was 44 + 0 (and 300 + 0 before)
    with pytest.raises(tlc.TlcError) as e:  # a LoweringError out of a tile op was a traceback
        tlc.compile_source(source.format(" + f64(2 ** 100)"), target="interp", path="op.tl").op(np.ones((2, 3), np.float32))
    assert str(e.value).startswith("op.tl:3:55: error[E150]: constant too large")
