"""T10: which operand dtypes a gemm takes together, and its `precision=` keyword ("tf32" on
f32 operands); each diagnostic with its exact text."""
import pytest

from test_diagnostics import kernel_body, rendered


def gemm(a: str, b: str, c: str, *keywords: str) -> str:
    call = ", ".join(["a", "b", "c", *keywords])
    return kernel_body(f"a = shared({a}[BM, 32])", f"b = shared({b}[32, BM])", f"c = fragment({c}[BM, BM])",
                       f"gemm({call})")


@pytest.mark.parametrize("a,b,c,keywords", [
    ("f8e4m3", "f8e5m2", "f32", ()),
    ("f8e5m2", "f8e4m3", "f32", ()),
    ("i8", "u8", "i32", ()),
    ("i8", "i8", "i32", ()),
    ("f32", "f32", "f32", ('precision="tf32"',)),
    ("f32", "f32", "f32", ('precision="ieee"',)),
    ("f16", "f16", "f32", ('precision="ieee"',)),
])
def test_accepted(a, b, c, keywords):
    assert rendered(gemm(a, b, c, *keywords)) == ""


CASES = {
    'E037_gemm_mixed_16_bit': (
        gemm("f16", "bf16", "f32"),
        "t.tl:7:9: error[E037]: gemm operands have different dtypes: f16 and bf16\n  |\n7 |         gemm(a, b, c)\n"
        "  |         ^^^^^^^^^^^^^\n  = hint: only the two f8 formats mix (f8e4m3 with f8e5m2), and i8 with u8",
    ),
    'E037_gemm_integer_widths': (
        gemm("i8", "i16", "i32"),
        "t.tl:7:9: error[E037]: gemm operands have different dtypes: i8 and i16\n  |\n7 |         gemm(a, b, c)\n"
        "  |         ^^^^^^^^^^^^^\n  = hint: only the two f8 formats mix (f8e4m3 with f8e5m2), and i8 with u8",
    ),
    'E037_gemm_precision_unknown': (
        gemm("f32", "f32", "f32", 'precision="fp16"'),
        't.tl:7:33: error[E037]: gemm precision must be "ieee" or "tf32", found "fp16"\n  |\n'
        '7 |         gemm(a, b, c, precision="fp16")\n  |                                 ^^^^^^\n'
        '  = hint: "tf32" multiplies f32 operands on tensor cores with 10-bit mantissas; "ieee" is exact',
    ),
    'E037_gemm_precision_not_a_string': (
        gemm("f32", "f32", "f32", "precision=BM"),
        't.tl:7:33: error[E037]: gemm precision must be "ieee" or "tf32", found the name \'BM\'\n  |\n'
        '7 |         gemm(a, b, c, precision=BM)\n  |                                 ^^\n'
        '  = hint: "tf32" multiplies f32 operands on tensor cores with 10-bit mantissas; "ieee" is exact',
    ),
    'E037_gemm_tf32_of_f16': (
        gemm("f16", "f16", "f32", 'precision="tf32"'),
        't.tl:7:9: error[E037]: gemm precision="tf32" is a mode of f32 operands, but a and b are f16\n  |\n'
        '7 |         gemm(a, b, c, precision="tf32")\n  |         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n'
        '  = hint: drop precision=: f16, bf16, f8 and integer operands multiply exactly',
    ),
    'E034_gemm_misspelt_keyword': (
        gemm("f32", "f32", "f32", 'precison="tf32"'),
        't.tl:7:23: error[E034]: gemm() has no argument \'precison\'\n  |\n'
        '7 |         gemm(a, b, c, precison="tf32")\n  |                       ^^^^^^^^^^^^^^^\n'
        '  = hint: it takes trans_a, trans_b, precision',
    ),
}


@pytest.mark.parametrize("name", CASES)
def test_diagnostic(name):
    src, want = CASES[name]
    assert rendered(src) == want


def test_precision_reaches_the_ir():
    from tlc.driver import check_source
    from tlc.ir import print_kernel
    from tlc.schedule import schedule

    r = check_source(gemm("f32", "f32", "f32", 'precision="tf32"'), "t.tl")
    assert r.ok
    text = print_kernel(schedule(r.program, "k", {}))
    assert "gemm c += a @ b (precision tf32)" in text
