"""std.broadcast's table: each operator's NumPy reference and operand domains (test_elementwise's
domains), the operand shapes it is run at, and the check, shared by the interpreter test
(test_broadcast.py), the GPU test (tests/gpu/test_broadcast_gpu.py) and the benchmark rows."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from op_tolerances import assert_close, numpy_dtype
from test_elementwise import inputs
from tlc import package_data

BROADCAST_PATH = str(package_data.stdlib().joinpath("broadcast.tl"))
FLOATS = ("f32", "f16", "bf16")
ALL = FLOATS + ("i32",)


@dataclass(frozen=True)
class Op:
    name: str
    ref: Callable  # over float64 operands (cond: bool), NumPy broadcasting them
    domains: tuple  # one per operand (test_elementwise.inputs)
    dtypes: tuple = FLOATS


OPS = [
    Op("add", np.add, ("normal", "normal"), ALL),
    Op("sub", np.subtract, ("normal", "normal"), ALL),
    Op("mul", np.multiply, ("normal", "normal"), ALL),
    Op("div", np.divide, ("normal", "nonzero")),
    Op("maximum", np.maximum, ("normal", "normal"), ALL),
    Op("minimum", np.minimum, ("normal", "normal"), ALL),
    Op("pow", np.power, ("pos", "normal")),
    Op("where", np.where, ("bool", "normal", "normal"), ALL),
    Op("clamp", lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi), ("normal", "neg", "pos"), ALL),
    Op("lerp", lambda a, b, w: a + w * (b - a), ("normal", "normal", "unit")),
]

# operand shapes (each of rank 4; y's is their broadcast): a bias over heads and features, an
# outer sum, a scalar, none broadcast (ragged rows and columns), both operands broadcast
BINARY = [((2, 3, 5, 7), (1, 3, 1, 7)), ((1, 1, 37, 1), (1, 1, 1, 45)), ((4, 1, 6, 33), (1, 1, 1, 1)),
          ((1, 1, 9, 70), (1, 1, 9, 70)), ((3, 1, 1, 1), (1, 2, 5, 1))]
TERNARY = [((2, 3, 5, 7), (1, 3, 1, 7), (2, 1, 5, 1)), ((1, 1, 37, 1), (1, 1, 1, 45), (1, 1, 1, 1)),
           ((1, 1, 9, 70),) * 3, ((1, 1, 1, 1), (3, 1, 4, 1), (1, 1, 1, 50))]


def shapes(op: Op) -> list:
    return BINARY if len(op.domains) == 2 else TERNARY


def operands(op: Op, dtype: str, rng, shape_set) -> list:
    return [inputs(rng, d, "bool" if d == "bool" else dtype, s) for d, s in zip(op.domains, shape_set)]


def check(mod, op: Op, dtype: str, rng, shape_set, consts: dict) -> None:
    """op at operand shapes `shape_set` against NumPy; y filled with NaN (or -1) first, so an
    element not written fails."""
    args = operands(op, dtype, rng, shape_set)
    out_shape = np.broadcast_shapes(*shape_set)
    y = np.full(out_shape, -1 if dtype == "i32" else np.nan, numpy_dtype(dtype))
    getattr(mod, op.name)(*args, y, **consts)
    want = op.ref(*(a if a.dtype == np.bool_ else a.astype(np.float64) for a in args))
    if dtype == "i32":
        want = want.astype(np.int64).astype(np.int32)  # wrapping, as the kernels do
    assert_close(y, want, op.name, dtype, f" shapes={shape_set} {consts}")
