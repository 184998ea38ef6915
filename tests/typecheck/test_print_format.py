"""print()'s format checked against its values (issue #16: `print("%s", v)` type-checked and
then faulted on the device, which reads `%s`'s argument as an address), and the C format the
generator writes for each value's dtype.  Each diagnostic pinned to its exact text."""
import pytest

from tlc import print_format
from tlc.api import compile_source
from tlc.dtypes import DTYPES
from tlc.driver import check_source
from tlc.diagnostics import render_all

VALID = "  = hint: integers and bools take %d %i %u %o %x %X, floats %f %F %e %E %g %G; %% prints a percent sign"


def printing(call: str) -> str:
    return ("@kernel\ndef k(xs: f32[N], n: i64):\n    with grid(1, threads=32) as bx:\n        x = xs[0]\n"
            f"        {call}\n")


def rendered(call: str) -> str:
    r = check_source(printing(call), "t.tl")
    return render_all(r.diagnostics, r.sources)


def caret(call: str, start: int, length: int) -> str:
    return f"  |\n5 |         {call}\n  |         {' ' * start}{'^' * length}"


@pytest.mark.parametrize("call, code, message, at, hint", [
    ('print("%s", bx)', "E172", "'%s' would read its argument as the address of a string; print() prints numbers",
     (6, 4), VALID),
    ('print("%n", bx)', "E172", "'%n' would write through its argument as an address; print() prints numbers",
     (6, 4), VALID),
    ('print("%p", bx)', "E172", "'%p' would print its argument as an address; print() prints numbers", (6, 4), VALID),
    ('print("%c", bx)', "E172", "'%c' would print its argument as a character; print() prints numbers", (6, 4), VALID),
    ('print("%*d", bx)', "E171", "'%*d' takes its width from an argument, which print() does not do", (6, 5),
     "  = hint: write the width into the format, e.g. %8.3f"),
    ('print("%.*f", x)', "E171", "'%.*f' takes its precision from an argument, which print() does not do", (6, 6),
     "  = hint: write the precision into the format, e.g. %8.3f"),
    ('print("%1000d", bx)', "E171", "'%1000d' has a width of 1000; print() takes at most 999", (6, 8), None),
    ('print("%q", bx)', "E173", "'%q' is not a conversion print() knows", (6, 4), VALID),
    ('print("%a", x)', "E173", "'%a' is not a conversion print() knows", (6, 4), VALID),
    ('print("%lld", n)', "E174", "'%lld' has a length modifier; print() passes each value at the length of its dtype",
     (6, 6), "  = hint: write '%d'"),
    ('print("%hhd", bx)', "E174", "'%hhd' has a length modifier; print() passes each value at the length of its dtype",
     (6, 6), "  = hint: write '%d'"),
    ('print("x = %", bx)', "E170", "the format ends in an unfinished conversion '%'", (6, 7),
     "  = hint: write %% for a percent sign"),
    ('print("%f", bx)', "E175", "'%f' prints a float but the value is i32", (12, 2),
     "  = hint: write %d for i32 values, or convert the value: f32(...)"),
    ('print("%d %x", x, n)', "E175", "'%d' prints an integer but the value is f32", (15, 1),
     "  = hint: write %f for f32 values, or convert the value: i32(...)"),
    ('print("%d %d", bx)', "E053", "the format has 2 placeholders but 1 value is given", (0, 18), None),
    ('print("%%d", bx)', "E053", "the format has 0 placeholders but 1 value is given", (0, 16), None),
    # C's printf stops at a NUL, where the interpreter printed on ("a" against "a\x00b 1.000000")
    ('print("a\\x00b %d", bx)', "E170", "the format holds a NUL character ('\\x00'), where the device's printf "
     "stops", (6, 11), None),
])
def test_formats_print_cannot_take(call, code, message, at, hint):
    start, length = at
    expected = f"t.tl:5:{9 + start}: error[{code}]: {message}\n{caret(call, start, length)}"
    assert rendered(call) == expected + (f"\n{hint}" if hint else "")


def test_at_most_32_values_as_the_devices_printf_prints():
    """CUDA's printf ignores arguments past 32 (the interpreter printed all 33)."""
    call = f'print("{" ".join(["%d"] * 33)}", {", ".join(["bx"] * 33)})'
    assert rendered(call).splitlines()[0] == (
        f"t.tl:5:{9 + call.rindex('bx')}: error[E053]: print() prints at most 32 values, as the device's printf does; "
        "33 are given")  # at the 33rd value (the line is shown cut)
    assert rendered(call.replace("%d ", "", 1).replace("bx, ", "", 1)) == ""


def test_formats_print_takes():
    assert rendered('print("%d %5.2f %-3x %+i %o %X %e %G %%", bx, x, n, bx, bx, n, x, x)') == ""


@pytest.mark.parametrize("dtype, c_type, conversion", [
    ("i32", "int", "%5d"), ("i16", "int", "%5d"), ("u8", "int", "%5d"), ("bool", "int", "%5d"),
    ("u32", "long long", "%5lld"), ("i64", "long long", "%5lld"), ("u64", "unsigned long long", "%5llu"),
    ("f32", "double", "%5f"), ("f16", "double", "%5f"), ("bf16", "double", "%5f"), ("f64", "double", "%5f"),
])
def test_each_value_is_passed_as_its_conversion_reads_it(dtype, c_type, conversion):
    """A value passed as an int and read by %lld (or the reverse) prints garbage or faults:
    the conversion is written for the C type the value is cast to, one that holds it."""
    dt = DTYPES[dtype]
    fmt = "v=%5f" if dt.is_float else "v=%5d"
    assert (print_format.c_cast(dt), print_format.c_format(fmt + " %%", (dt,))) == (c_type, f"v={conversion} %%")


def test_the_generated_printf():
    mod = compile_source("@kernel\ndef k(xs: f32[N], n: i64, u: u32, h: f16):\n    with grid(1, threads=32) as bx:\n"
                         '        print("%d %x %u %.1f", bx, n, u, h)\n', target="cpu")
    line = next(line for line in mod.k.cuda_source().splitlines() if "printf(" in line)
    assert line.strip().startswith('if (threadIdx.x == 0) printf("%d %llx %llu %.1f\\n", static_cast<int>(bx), '
                                   'static_cast<long long>(n), static_cast<long long>(u), static_cast<double>(')


def test_the_interpreter_ends_each_print_with_a_newline_as_the_gpu_does(capsys):
    """The generator's printf adds a missing newline; the interpreter ran the lines together."""
    import numpy as np

    mod = compile_source("@kernel\ndef k(xs: f32[N], n: i64):\n    with grid(2, threads=32) as bx:\n"
                         '        print("block %d n=%d", bx, n)\n', target="cpu")
    mod.k(np.zeros(1, np.float32), -2**40)
    assert capsys.readouterr().out == "block 0 n=-1099511627776\nblock 1 n=-1099511627776\n"


def test_a_control_character_after_a_percent_sign_is_shown_escaped():
    r = check_source(printing('print("100%\\n", bx)'), "t.tl")
    assert [(d.code, d.message) for d in r.diagnostics] == [("E173", "'%\\n' is not a conversion print() knows")]
