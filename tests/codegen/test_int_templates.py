"""The integer helpers of tl/types.cuh (truncdiv, floordiv, pymod, shl, shr, ipow, iabs, imin,
imax, and tl::cvt of a float into an 8- or 16-bit integer, which saturates), compiled by nvcc as host code and run here on every pair of each integer dtype's edge
values, give what the interpreter's numerics give: both sides of the differential fuzz
(issue #16) checked without a GPU, division by zero and by -1, shift counts outside the width
and powers that wrap included."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from nvcc import run_host
from tlc.codegen import primitives
from tlc.codegen.cnames import c_type
from tlc.dtypes import DTYPES
from tlc.interp import numerics

EDGES = {
    "i8": [-128, -127, -9, -2, -1, 0, 1, 2, 3, 7, 8, 9, 127],
    "u8": [0, 1, 2, 3, 7, 8, 9, 128, 255],
    "i16": [-32768, -300, -1, 0, 1, 2, 15, 16, 17, 300, 32767],
    "u16": [0, 1, 2, 15, 16, 17, 300, 65535],
    "i32": [-2**31, -5, -1, 0, 1, 2, 3, 31, 32, 33, 2**31 - 1],
    "u32": [0, 1, 2, 3, 31, 32, 33, 2**31, 2**32 - 1],
    "i64": [-2**63, -5, -1, 0, 1, 3, 63, 64, 65, 2**63 - 1],
    "u64": [0, 1, 3, 63, 64, 65, 2**63, 2**64 - 1],
}
CONVERTED = [0.0, 1.5, -1.5, 127.9, 128.0, 200.0, 255.0, 256.0, 300.0, -129.0, 1e6, -1e6, 70000.0, -40000.0]
OPS = {"/": "truncdiv", "//": "floordiv", "%": "pymod", "<<": "shl", ">>": "shr", "**": "ipow",
       "min": "imin", "max": "imax"}


def program() -> str:
    """A host main printing each template's result on each pair, one line per dtype and op."""
    lines = []
    for name, values in EDGES.items():
        t = c_type(DTYPES[name])
        arr = ", ".join(f"static_cast<{t}>({v}ull)" if v >= 0 else f"static_cast<{t}>({v}ll)" for v in values)
        lines.append(f"  {{ const {t} v[] = {{{arr}}}; const int n = {len(values)};")
        for op in [*OPS.values(), "iabs"]:
            call = f"tl::iabs<{t}>(v[i])" if op == "iabs" else f"tl::{op}<{t}>(v[i], v[j])"
            inner = "" if op == "iabs" else "for (int j = 0; j < n; ++j) "
            lines.append(f'    printf("{name} {op}"); for (int i = 0; i < n; ++i) {inner}'
                         f'printf(" %lld", static_cast<long long>({call})); printf("\\n");')
        lines.append("  }")
    for name in ("u8", "i8", "u16", "i16"):  # floats within an int's range: x86 converts others otherwise
        t = c_type(DTYPES[name])
        calls = " ".join(f"printf(\" %lld\", static_cast<long long>(tl::cvt<{t}>({v}f)));" for v in CONVERTED)
        lines.append(f'  printf("{name} cvt"); {calls} printf("\\n");')
    return ("#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n#include <cstdio>\n" + primitives() +
            "\nint main() {\n" + "\n".join(lines) + "\n  return 0;\n}\n")


def interpreted(name: str, op: str) -> list:
    dt = DTYPES[name]
    values = np.array(EDGES[name], dt.numpy())
    if op == "cvt":
        out = numerics.cast(np.array(CONVERTED, np.float32), dt)
    elif op == "iabs":
        out = numerics.call("abs", [values], dt)
    else:
        a, b = (np.array(p, dt.numpy()) for p in zip(*itertools.product(values, values)))
        with np.errstate(all="ignore"):
            out = numerics.binop({v: k for k, v in OPS.items()}[op], a, b, dt)
    return out.astype(np.int64).tolist()  # as the C prints it: static_cast<long long>


@pytest.mark.nvcc
def test_int_templates_agree_with_the_interpreter(tmp_path):
    printed = run_host(program(), tmp_path, "ints").splitlines()
    wrong = []
    for line in printed:
        name, op, *values = line.split()
        want = interpreted(name, op)
        if [int(v) for v in values] != want:
            pairs = {"iabs": EDGES[name], "cvt": CONVERTED}.get(op) or list(itertools.product(EDGES[name], EDGES[name]))
            wrong += [f"{name} {op} {p}: C {int(v)}, interpreter {w}" for p, v, w in zip(pairs, values, want)
                      if int(v) != w]
    assert len(printed) == len(EDGES) * (len(OPS) + 1) + 4
    assert not wrong, "\n".join(wrong[:40])


@pytest.mark.nvcc
def test_nan_converts_to_zero_in_every_integer_type(tmp_path):
    """NaN is 0 in every integer, as on the interpreter: left to the conversion instruction, the
    H200 gave a double NaN as INT_MIN (f64 -> i16 was -32768) and x86 gives it as INT_MIN too."""
    names = ["i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64"]
    calls = " ".join(f'printf(" %lld", static_cast<long long>(tl::cvt<{c_type(DTYPES[n])}>({src}(nan(""))))); '
                     for n in names for src in ("static_cast<float>", "static_cast<double>"))
    source = ("#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n#include <cstdio>\n#include <cmath>\n" + primitives() +
              f"\nint main() {{\n  {calls}\n  printf(\"\\n\");\n  return 0;\n}}\n")
    printed = run_host(source, tmp_path, "nan").split()
    assert printed == ["0"] * (2 * len(names))
    for n in names:
        assert numerics.cast(np.array([np.nan, np.nan], np.float64), DTYPES[n]).tolist() == [0, 0]
