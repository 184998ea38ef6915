"""Bounds checks on scalars whose every value has a range (codegen/ranges.py scalar_ranges): a
digit `d = i32(k >> 8 & 255)` or a padded place `p + p // 32` of loop indices indexes shared
memory without a check; a scalar with a value of no range (a load, itself plus one) keeps it;
a loop's variable hides a scalar of its name only inside the loop."""
from tlc import ir
from tlc.codegen.ranges import scalar_ranges
from tlc.dtypes import lookup
from tlc.runner import build

SRC = """
def at(p: i32) -> i32:
    # a word of padding after every 32
    return p + p // 32


@kernel
def places(x: u32[N], y: i32[N], THREADS: const = 128):
    with grid(1, threads=THREADS) as b:
        h = shared(i32[256])
        s = shared(i32[264])
        for d in parallel(256):
            h[d] = 0
        for q in parallel(256):
            s[at(q)] = q
        for q in parallel(1024):
            d = i32((x[q] >> u32(8)) & u32(255))
            h[d] = q
        for q in parallel(1024):
            e = i32(x[q])
            y[q] = h[e] + s[at(q // 4)]
"""


def _line(src: str, text: str) -> str:
    return next(line for line in src.splitlines() if text in line and "//" not in line.split(text)[0])


def test_scalars_with_ranges_index_without_checks(tmp_path):
    path = tmp_path / "places.tl"
    path.write_text(SRC)
    src, _ = build(str(path), arch="sm_90a", kernels=("places",))
    assert "d >= 0" not in _line(src, "] = q;")  # h[d] = q: the digit is in [0, 255]
    assert ">= 0" not in _line(src, "s[")  # s[at(q)]: q + q // 32 of q in [0, 255] is in [0, 262]
    assert "e >= 0 && e < 256" in _line(src, "y[")  # h[e] of a loaded e: checked


I32, U32 = lookup("i32"), lookup("u32")


def _v(name):
    return ir.Var(name, I32)


def test_a_loop_variable_hides_the_scalar_and_self_reference_has_no_range():
    c = ir.Const
    body = (
        ir.LetScalar("n", I32, c(0, I32)),
        ir.For("i", c(0, I32), c(8, I32), c(1, I32), "serial", 1, (
            ir.Assign("n", ir.BinOp("+", _v("n"), c(1, I32), I32)),  # n + 1: no range
            ir.LetScalar("k", I32, ir.BinOp("*", _v("i"), c(4, I32), I32)),  # the loop's i: [0, 28]
        )),
        ir.LetScalar("i", I32, ir.Cast(ir.BinOp("&", ir.Var("u", U32), c(7, U32), U32), I32)),  # scalar i: [0, 7]
        ir.Parallel(("j",), (64,), (ir.LetScalar("m", I32, ir.BinOp("+", _v("j"), _v("i"), I32)),)),  # [0, 70]
    )
    assert scalar_ranges(body, {}) == {"k": (0, 28), "i": (0, 7), "m": (0, 70)}
