"""A flattened element-wise tile op counts its elements in an i64 (`NUMEL`) and computes a
tile's first element in 64 bits: a tensor of [M, N] with more than 2^31 elements binds and gets
a grid, where an i32 count failed with an error naming a symbol the user never wrote."""
import numpy as np

import tlc
from runtime_kit import FakeDeviceArray
from tlc.codegen import generate
from tlc.dtypes import I64
from tlc.interp import run_kernel
from tlc.runtime.args import Binder
from tlc.runtime.grid import compile_grid, launches_blocks

SRC = """
@tile_op
def chain(x: f16[M, N], y: f16[M, N]) -> f16[M, N]:
    return x * y + exp(x)
"""


def flat_kernel():
    mod = tlc.compile_source(SRC, target="cpu", path="ops.tl")
    launch = mod.chain.program({}, "sm_80", {"M": 65536, "N": 65536}).launches[0]
    assert launch.flat
    return launch.kernel


def test_the_element_count_of_a_flat_view_is_an_i64():
    k = flat_kernel()
    gen = generate(k, "sm_80")
    assert k.wide_symbols == ("NUMEL",) and [(a.name, a.dtype) for a in gen.args if a.kind == "shape"] == [("NUMEL", I64)]
    assert "long long NUMEL" in gen.source
    assert "(tl::cvt<long long>(bx) * " in gen.source  # the tile's first element, in 64 bits


def test_more_than_2_31_elements_bind_and_get_a_grid():
    k = flat_kernel()
    gen = generate(k, "sm_80")
    n = 3 * 2**31 + 5
    binder = Binder(k, gen)
    bound = binder.bind({name: FakeDeviceArray((n,), np.float16) for name in ("x", "y", "out")}, device=0)
    numel = bound.args[binder.slots["NUMEL"]]
    assert type(numel) is np.int64 and numel == n
    grid = compile_grid(gen.grid, binder.slots, kernel=gen.name)(bound.values)
    assert launches_blocks(gen.name, grid) and grid[0] == -(-n // 1024)  # one run of 8 halves a thread


def test_the_interpreter_runs_the_i64_count():
    k = flat_kernel()
    rng = np.random.default_rng(1)
    x, y = (rng.standard_normal(3000).astype(np.float16) for _ in range(2))
    out = np.zeros(3000, np.float16)
    run_kernel(k, {"x": x, "y": y, "out": out})
    want = (x * y).astype(np.float32) + np.exp(x).astype(np.float32)
    assert np.allclose(out.astype(np.float32), want, rtol=3e-3, atol=3e-3)
