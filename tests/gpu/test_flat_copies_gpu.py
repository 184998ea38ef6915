"""Copies of a vector's tile (codegen/copies.py flat_origin: tl::copy_g2f_flat, copy_f2g_flat,
g2f_whole_flat) on the GPU, through both builds: element-wise tile ops (abs, add, a conversion
f32 -> f16) and vector_add (two f32 runs a thread, its copies a load batch: g2f_whole_flat), at
sizes whose last block is partial, whole (sizes multiples of the runs, aligned bases: the
TL_WHOLE_RUNS build, whose runs past the end read nothing and write nothing) and ragged or off 16
bytes (the general build); each result exactly PyTorch's, every element of the output written."""
from pathlib import Path

import numpy as np
import pytest

import tlc

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.gpu

# (M, N, offset in elements of each tensor's base, whether the launch keeps runs whole)
CASES = [(3, 1000, 0, True), (1, 8, 0, True), (5, 4096, 0, True), (3, 1001, 0, False), (2, 1000, 1, False)]


def placed(torch, shape, dtype, offset, g):
    n = int(np.prod(shape))
    buf = torch.empty(n + offset, dtype=dtype, device="cuda")
    t = buf[offset:].view(*shape)
    t.copy_((torch.randn(*shape, generator=g) * 4).to(dtype))
    return t


def test_elementwise_tile_ops():
    import torch

    ew = tlc.load("std.elementwise", target="cuda")
    for seed, (M, N, offset, _) in enumerate(CASES):
        g = torch.Generator().manual_seed(seed)
        a, b = placed(torch, (M, N), torch.float16, offset, g), placed(torch, (M, N), torch.float16, offset, g)
        wide = placed(torch, (M, N), torch.float32, offset, g)
        for name, args, want in (("abs", (a,), torch.abs(a)), ("add", (a, b), a + b),
                                 ("convert", (wide,), wide.to(torch.float16))):
            constants = {"S": "f32", "D": "f16"} if name == "convert" else {}
            launch, out = getattr(ew, name).prepare(*args, **constants)
            out.fill_(float("nan"))
            launch()
            assert torch.equal(out, want), (name, M, N, offset)


def test_vector_add_both_builds():
    import torch

    mod = tlc.load(str(ROOT / "examples" / "vector_add.tl"), target="cuda")
    for seed, (M, N, offset, whole) in enumerate(CASES):
        g = torch.Generator().manual_seed(seed)
        n = M * N
        x, y = placed(torch, (n,), torch.float32, offset, g), placed(torch, (n,), torch.float32, offset, g)
        out = placed(torch, (n,), torch.float32, offset, g)
        out.fill_(float("nan"))
        mod.vector_add(x, y, out, 0.5)  # alpha * x exact: a fused multiply-add rounds as PyTorch's two
        assert torch.equal(out, 0.5 * x + y), (n, offset)
        compiled = mod.vector_add.compiled({})
        assert compiled.whole_runs
        bound = compiled.binder.bind({"x": x, "y": y, "out": out, "alpha": 0.5}, 0)
        assert compiled.keeps_runs_whole(compiled.kernel_args(bound)) == (whole and n % 4 == 0), (n, offset)
