"""std.nn's row-wise kernels through both builds on the GPU (runtime/whole_runs.py): launches
whose rows are whole 16-byte vectors on aligned bases take the TL_WHOLE_RUNS build; a ragged
row (N not a multiple of 8) or a base off 16 bytes takes the general build, compiled when the
first such launch comes; each result against NumPy, through the general path, the fast path
(PyTorch tensors and CuPy arrays) and a launcher, in one process alternating the two."""
import numpy as np
import pytest

import tlc

pytestmark = pytest.mark.gpu


def reference(name, x, w, b, eps=1e-5):
    x = x.astype(np.float64)
    if name == "softmax":
        e = np.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)
    if name == "rms_norm":
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w
    mean = x.mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + eps) * w + b


def arrays(torch, M, N, offset, seed):
    """x (M, N), weight, bias and y as f16 CUDA tensors whose bases lie `offset` elements past
    a 256-byte allocation (contiguous views)."""
    g = torch.Generator().manual_seed(seed)

    def place(shape):
        n = int(np.prod(shape))
        buf = torch.empty(n + offset, dtype=torch.float16, device="cuda")
        t = buf[offset:].view(*shape)
        t.copy_(torch.randn(*shape, generator=g).to(torch.float16))
        return t

    return place((M, N)), place((N,)), place((N,)), place((M, N))


def call(mod, name, x, w, b, y):
    if name == "softmax":
        return mod.softmax(x, y)
    if name == "rms_norm":
        return mod.rms_norm(x, w, y, 1e-5)
    return mod.layer_norm(x, w, b, y, 1e-5)


def check(name, x, w, b, y):
    want = reference(name, x.float().cpu().numpy(), w.float().cpu().numpy(), b.float().cpu().numpy())
    got = y.float().cpu().numpy()
    np.testing.assert_allclose(got, want, atol=2e-3 if name == "softmax" else 3e-2, rtol=1e-2)


@pytest.mark.parametrize("name", ["rms_norm", "softmax", "layer_norm"])
def test_whole_and_ragged_launches_alternate(name):
    import torch

    mod = tlc.load("std.nn", target="cuda")
    kernel = getattr(mod, name)
    # (M, N, offset in elements, the build that serves it)
    cases = [(33, 4096, 0, "whole"), (7, 1003, 0, "general"), (5, 8200, 0, "whole"), (9, 4096, 1, "general"),
             (4, 4100, 0, "general"), (65, 8, 0, "whole"), (3, 9000, 4, "general"), (17, 2048, 8, "whole")]
    for seed, (M, N, offset, build) in enumerate(cases):
        x, w, b, y = arrays(torch, M, N, offset, seed)
        y.fill_(float("nan"))
        call(mod, name, x, w, b, y)  # the general path (a fast path's first call goes there too)
        check(name, x, w, b, y)
        y.fill_(float("nan"))
        call(mod, name, x, w, b, y)  # the fast path
        check(name, x, w, b, y)
        compiled = kernel.compiled({})
        assert compiled.whole_runs, "std.nn's kernels have the whole-runs build"
        expect_generic = build == "general"
        args = {"x": x, "y": y} if name == "softmax" else {"x": x, "weight": w, "y": y, "eps": 1e-5}
        if name == "layer_norm":
            args["bias"] = b
        bound = compiled.binder.bind(args, 0)
        assert compiled.keeps_runs_whole(compiled.kernel_args(bound)) == (not expect_generic), (M, N, offset)
    # a launcher of each kind of launch
    for M, N, offset, _ in cases[:2]:
        x, w, b, y = arrays(torch, M, N, offset, 99)
        y.fill_(float("nan"))
        run = kernel.launcher(x, y) if name == "softmax" else \
            kernel.launcher(x, w, y, 1e-5) if name == "rms_norm" else kernel.launcher(x, w, b, y, 1e-5)
        run()
        check(name, x, w, b, y)


def test_cupy_arrays_take_both_builds():
    import cupy as cp
    import torch

    mod = tlc.load("std.nn", target="cuda")
    for seed, (M, N) in enumerate([(16, 4096), (16, 1001), (16, 4096)]):
        x, w, b, y = arrays(torch, M, N, 0, seed)
        cx, cw, cy = cp.asarray(x), cp.asarray(w), cp.full((M, N), cp.nan, cp.float16)
        for _ in range(2):  # the general path, then the fast path
            mod.rms_norm(cx, cw, cy, 1e-5)
            check("rms_norm", x, w, b, torch.as_tensor(cy.get()))
