"""The scheduler's own names never take a user's (tests/fuzz/FINDINGS.md, finding 18): a tile
op whose parameter, local, device function or own name is one the kernel builders give their
block indices, loop variables and buffers (`bx`, `i`, `acc`, `x_tile`...) checks, builds for
both targets and computes what NumPy does on the interpreter."""
from __future__ import annotations

import numpy as np
import pytest

from tileops_kit import assert_close, f32, module, rand, softmax

from tlc import runner
from tlc.diagnostics import render_all
from tlc.driver import check_source

# every name a builder of tlc/schedule/tileops gives out, and what `fresh` makes of a clash
BUILDER_NAMES = ["bx", "by", "i", "j", "k", "t", "tiles", "acc", "As", "Bs", "NUMEL", "out", "x_tile",
                 "out_tile", "tile_f32", "row_max", "row_sum", "row_exp", "tile_max", "tile_sum", "new_max",
                 "bx1", "i1"]

# `{n}` as a parameter (tensor and scalar) and as a local, of each kind of kernel
AS_VARIABLE = """
@tile_op
def ew(x: f32[M, N], {n}: f32[M, N]) -> f32[M, N]:
    return {n} * 2.0 + x

@tile_op
def ew_bcast(x: f32[M, N], {n}: f32[N]) -> f32[M, N]:
    return x * {n}

@tile_op
def ew_1d(x: f32[L], {n}: f32[L]) -> f32[L]:
    return x - {n}

@tile_op
def ew_scalar(x: f32[M, N], {n}: f32) -> f32[M, N]:
    return x * {n}

@tile_op
def mm({n}: f16[M, K], w: f16[K, N], b: f32[N]) -> f32[M, N]:
    return ({n} @ w) + b

@tile_op
def rows({n}: f32[M, N]) -> f32[M, N]:
    return softmax({n}, axis=1)

@tile_op
def row_sum({n}: f32[M, N]) -> f32[M, 1]:
    return sum({n}, axis=1, keepdims=True)

@tile_op
def col_mean({n}: f32[M, N]) -> f32[1, N]:
    return mean({n}, axis=0, keepdims=True)

@tile_op
def local_ew(x: f32[M, N]) -> f32[M, N]:
    {n} = x * 2.0
    return {n} + 1.0

@tile_op
def local_mm(x: f16[M, K], w: f16[K, N]) -> f32[M, N]:
    {n} = x @ w
    return {n} * 0.5

@tile_op
def local_rows(x: f32[M, N]) -> f32[M, N]:
    {n} = exp(x - max(x, axis=1, keepdims=True))
    return {n} / sum({n}, axis=1, keepdims=True)
"""

# `{n}` as a device function the kernels call, and as a tile op's own name
AS_FUNCTION = """
def {n}(a: f32) -> f32:
    return a * 2.0

@tile_op
def ew(x: f32[M, N]) -> f32[M, N]:
    return {n}(x)

@tile_op
def mm(x: f16[M, K], w: f16[K, N]) -> f32[M, N]:
    return {n}(x @ w)

@tile_op
def rows(x: f32[M, N]) -> f32[M, N]:
    return softmax({n}(x), axis=1)
"""

AS_TILE_OP = """
@tile_op
def {n}(x: f32[M, N], y: f32[N]) -> f32[M, N]:
    return x * y
"""

M, N, K, L = 37, 70, 24, 45


def _variable_calls(rng):
    x, y, h, w, b = rand(rng, (M, N)), rand(rng, (M, N)), rand(rng, (M, K), np.float16), \
        rand(rng, (K, N), np.float16), rand(rng, (N,))
    v, u, row = rand(rng, (L,)), rand(rng, (L,)), rand(rng, (N,))
    mm = f32(h) @ f32(w)
    e = np.exp(x - x.max(1, keepdims=True))
    return {"ew": ((x, y), y * 2.0 + x), "ew_bcast": ((x, row), x * row), "ew_1d": ((v, u), v - u),
            "ew_scalar": ((x, 1.5), x * 1.5), "mm": ((h, w, b), mm + b), "rows": ((x,), softmax(x, 1)),
            "row_sum": ((x,), x.sum(1, keepdims=True)), "col_mean": ((x,), x.mean(0, keepdims=True)),
            "local_ew": ((x,), x * 2.0 + 1.0), "local_mm": ((h, w), mm * 0.5),
            "local_rows": ((x,), e / e.sum(1, keepdims=True))}


def _function_calls(rng):
    x, h, w = rand(rng, (M, N)), rand(rng, (M, K), np.float16), rand(rng, (K, N), np.float16)
    return {"ew": ((x,), x * 2.0), "mm": ((h, w), (f32(h) @ f32(w)) * 2.0), "rows": ((x,), softmax(x * 2.0, 1))}


def _tile_op_calls(rng, name):
    x, y = rand(rng, (M, N)), rand(rng, (N,))
    return {name: ((x, y), x * y)}


CASES = [(kind, name) for kind in ("variable", "function", "tile_op") for name in BUILDER_NAMES]


@pytest.mark.parametrize("kind,name", CASES, ids=[f"{k}-{n}" for k, n in CASES])
def test_a_builder_name_in_the_tile_op(kind, name, tmp_path):
    source = {"variable": AS_VARIABLE, "function": AS_FUNCTION, "tile_op": AS_TILE_OP}[kind].format(n=name)
    path = tmp_path / "ops.tl"
    path.write_text(source)
    result = check_source(source, str(path))
    assert render_all(result.diagnostics, result.sources) == ""
    for arch in ("sm_80", "sm_90a"):
        runner.build(str(path), arch=arch)
    rng = np.random.default_rng(18)
    calls = {"variable": _variable_calls, "function": _function_calls,
             "tile_op": lambda r: _tile_op_calls(r, name)}[kind](rng)
    mod = module(source)
    for op, (args, want) in calls.items():
        assert_close(getattr(mod, op)(*args), f32(want), np.float32)


def test_a_clash_takes_the_next_name_and_no_clash_keeps_the_usual(tmp_path):
    """The block index of a tile op with a parameter `bx` is `bx1`; beside `x`, it is `bx`."""
    def block_index(param):
        path = tmp_path / f"{param}.tl"
        path.write_text(f"@tile_op\ndef op({param}: f32[M, N]) -> f32[M, N]:\n    return {param} * 2.0\n")
        text = runner.build(str(path), arch="sm_80")[0]
        return [line.strip() for line in text.splitlines() if "= blockIdx.x;" in line]
    assert block_index("bx") == ["const int bx1 = blockIdx.x;"]
    assert block_index("x") == ["const int bx = blockIdx.x;"]
