"""std.nn_train and std.nn_layers on the GPU: the interpreter's table (tests/stdlib/nn_train_kit.py)
at its ragged shapes and at the sizes a model runs (the kernels' default constants: one
8192-column tile, rows of several tiles, a 50257-word vocabulary), and every backward against
PyTorch's autograd in f32.  dropout's rows compare bit for bit with the NumPy Philox, as on the
interpreter."""
from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest

import tlc

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "stdlib"))  # the shared kit
from nn_train_kit import (DROPOUT, EMBED, EMBED_SERIAL, GROUPS, GROUPS_BWD, NCL, OPS, ROPE, ROWS, TILES,  # noqa: E402
                          PATHS, compare, kernel_consts, kernel_name, module_of)
from op_tolerances import assert_close  # noqa: E402

pytestmark = pytest.mark.gpu

# the model-sized shapes run after each shape list's ragged ones, with the default constants
LARGE = [(ROWS, (((64, 8192), {}), ((33, 10000), {}), ((16, 50257), {}))),
         (TILES, (((257, 3000), {}), ((16, 50257), {}))),
         (EMBED, (((4096, 1000, 1024), {}),)),
         (EMBED_SERIAL, (((300, 50, 1000), {}),)),
         (ROPE, (((64, 32, 128), {}), ((7, 8, 64), {}))),
         (DROPOUT, ((((1 << 20) + 3,), {}),)),
         (NCL, (((32, 64, 3136), {}),)),
         (GROUPS, (((8, 64, 4096, 32), {}), ((4, 96, 49, 32), {}))),
         (GROUPS_BWD, (((8, 64, 4096, 32), {}), ((4, 96, 49, 32), {})))]


def large(shapes):
    return next(big for small, big in LARGE if small is shapes)


@pytest.fixture(scope="module")
def mod():
    """Both modules as one: mod.NAME is the kernel of whichever holds it."""
    mods = {m: tlc.load(path, target="cuda") for m, path in PATHS.items()}

    class Both:
        def __getattr__(self, name):
            return getattr(mods[module_of(name)], name)
    return Both()


@pytest.mark.parametrize("op,dtype", [pytest.param(op, d, id=f"{op.name}-{d}") for op in OPS for d in op.dtypes])
def test_table_on_the_gpu(mod, op, dtype):
    for shape, consts in op.shapes + large(op.shapes):
        args, checks = op.make(np.random.default_rng(len(shape)), dtype, shape)
        getattr(mod, kernel_name(op))(*args, **kernel_consts(op, consts))
        compare(args, checks, op.name, f" {dtype} shape={shape}")


# ---- backwards against PyTorch's autograd, f32 ----------------------------------------------------

def autograd(fn, inputs: dict, dy):
    """The gradients of sum(dy * fn(**inputs)) by PyTorch in f64 (a reference whose own
    rounding does not count against tlc's f32), by input name."""
    torch = pytest.importorskip("torch")
    leaves = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in inputs.items()}
    out = fn(**leaves)
    out.backward(torch.tensor(dy, dtype=torch.float64))
    return {k: v.grad.numpy() for k, v in leaves.items()}


def rope_torch(x, cos, sin, interleaved):
    import torch

    c, s = cos[:, None, :], sin[:, None, :]
    if interleaved:
        a, b = x[..., 0::2], x[..., 1::2]
        return torch.stack([a * c - b * s, a * s + b * c], dim=-1).flatten(-2)
    a, b = x.chunk(2, dim=-1)
    return torch.cat([a * c - b * s, a * s + b * c], dim=-1)


BWD_SHAPES = [(33, 10000), (64, 4096), (5, 50)]


@pytest.mark.parametrize("M,N", BWD_SHAPES)
def test_backwards_against_autograd(mod, M, N):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    rng = np.random.default_rng(M + N)
    n = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    x, dy, w, b = n(M, N) * 2 + 1, n(M, N), n(N), n(N)
    empty = lambda a: np.full_like(a, np.nan)  # noqa: E731

    y = F.softmax(torch.tensor(x), -1).numpy()
    dx = empty(x)
    mod.softmax_bwd(dy, y, dx)
    assert_close(dx, autograd(lambda x: F.softmax(x, -1), {"x": x}, dy)["x"], "softmax_bwd", "f32", terms=N)
    y = F.log_softmax(torch.tensor(x), -1).numpy()
    dx = empty(x)
    mod.log_softmax_bwd(dy, y, dx)
    assert_close(dx, autograd(lambda x: F.log_softmax(x, -1), {"x": x}, dy)["x"], "log_softmax_bwd", "f32", terms=N)

    dx, dw = empty(x), empty(w)
    mod.rms_norm_bwd(dy, x, w, dx, dw, 1e-5)
    want = autograd(lambda x, w: F.rms_norm(x, (N,), w, 1e-5), {"x": x, "w": w}, dy)
    assert_close(dx, want["x"], "rms_norm_bwd", "f32", terms=N)
    assert_close(dw, want["w"], "rms_norm_bwd.dweight", "f32")

    dx, dw, db = empty(x), empty(w), empty(b)
    mod.layer_norm_bwd(dy, x, w, dx, dw, db, 1e-5)
    want = autograd(lambda x, w, b: F.layer_norm(x, (N,), w, b, 1e-5), {"x": x, "w": w, "b": b}, dy)
    assert_close(dx, want["x"], "layer_norm_bwd", "f32", terms=N)
    assert_close(dw, want["w"], "layer_norm_bwd.dweight", "f32")
    assert_close(db, want["b"], "layer_norm_bwd.dweight", "f32")

    t = rng.integers(0, N, M)
    t[0] = -100
    loss, lse = np.full(M, np.nan, np.float32), np.full(M, np.nan, np.float32)
    mod.cross_entropy(x, t, loss, lse)
    assert_close(loss, F.cross_entropy(torch.tensor(x), torch.tensor(t), reduction="none").numpy(), "cross_entropy",
                 "f32", terms=N)
    dloss, dl = n(M), empty(x)
    mod.cross_entropy_bwd(dloss, x, t, lse, dl)
    want = autograd(lambda x: F.cross_entropy(x, torch.tensor(t), reduction="none"), {"x": x}, dloss)
    assert_close(dl, want["x"], "cross_entropy_bwd", "f32", terms=N)

    half = N // 2
    g, dg = n(M, 2, half), n(M, half)
    for kernel, act, consts in (("swiglu_bwd", F.silu, {}), ("geglu_bwd", F.gelu, {}),
                                ("geglu_bwd", lambda v: F.gelu(v, approximate="tanh"), dict(APPROX=True))):
        dx = empty(g)
        getattr(mod, kernel)(dg, g, dx, **consts)
        assert_close(dx, autograd(lambda x: act(x[:, 0]) * x[:, 1], {"x": g}, dg)["x"], "glu_bwd", "f32")

    V = 1000
    idx = rng.integers(0, V, M * 4)
    dye, dwe = n(M * 4, 64), np.zeros((V, 64), np.float32)
    mod.embedding_bwd(dye, idx, dwe)
    want = autograd(lambda w: F.embedding(torch.tensor(idx), w), {"w": n(V, 64)}, dye)["w"]
    assert_close(dwe, want, "embedding_bwd", "f32")


@pytest.mark.parametrize("interleaved", [False, True])
def test_rope_bwd_against_autograd(mod, interleaved):
    rng = np.random.default_rng(3)
    S, H, D = 64, 32, 128
    x, dy = rng.standard_normal((S, H, D)).astype(np.float32), rng.standard_normal((S, H, D)).astype(np.float32)
    angle = rng.uniform(0, 6, (S, D // 2))
    cos, sin = np.cos(angle).astype(np.float32), np.sin(angle).astype(np.float32)
    dx = np.full_like(x, np.nan)
    mod.rope_bwd(dy, cos, sin, dx, INTERLEAVED=interleaved)
    import torch

    want = autograd(lambda x: rope_torch(x, torch.tensor(cos), torch.tensor(sin), interleaved), {"x": x}, dy)["x"]
    assert_close(dx, want, "rope", "f32")


@pytest.mark.parametrize("B,C,L,G", [(8, 64, 4096, 32), (4, 96, 49, 32), (2, 6, 10, 3)])
def test_group_norm_bwd_against_autograd(mod, B, C, L, G):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(B * C + L)
    x, dy = rng.standard_normal((B, C, L)).astype(np.float32) + 1, rng.standard_normal((B, C, L)).astype(np.float32)
    w, b = rng.standard_normal(C).astype(np.float32), rng.standard_normal(C).astype(np.float32)
    dx, dw, db = np.full_like(x, np.nan), np.full_like(w, np.nan), np.full_like(b, np.nan)
    mod.group_norm_bwd(dy, x, w, dx, dw, db, 1e-5, G=G)
    want = autograd(lambda x, w, b: torch.nn.functional.group_norm(x, G, w, b, 1e-5), {"x": x, "w": w, "b": b}, dy)
    group = C // G * L  # a group's statistics sum this many values, a channel's gradients B * L
    assert_close(dx, want["x"], "layer_norm_bwd", "f32", terms=group)
    assert_close(dw, want["w"], "layer_norm_bwd.dweight", "f32", terms=B * L)
    assert_close(db, want["b"], "layer_norm_bwd.dweight", "f32", terms=B * L)


@pytest.mark.parametrize("name", ["group_norm", "group_norm_bwd"])
def test_group_norm_refuses_a_g_that_does_not_divide_c(mod, name):
    """G = 4 does not divide C = 6: refused before anything launches, as on the interpreter
    (tests/stdlib/test_nn_train.py), with NumPy arrays, CuPy arrays and PyTorch tensors, each
    twice (the second call takes the launcher the first one cached, the fast path)."""
    from tlc.runtime.args import LaunchArgumentError

    refused = {"group_norm": "'bias' axis 0 has size 6 but the kernel expects G * (C // G) = 4 (C = 6 from 'x' (axis 1))",
               "group_norm_bwd": "'dbias' axis 0 has size 6 but the kernel expects G * (C // G) = 4 "
                                 "(C = 6 from 'dy' (axis 1))"}[name]
    x, w = np.ones((2, 6, 7), np.float16), np.ones(6, np.float16)
    args = (x, w, w.copy(), x.copy(), 1e-5) if name == "group_norm" else (x, x.copy(), w, x.copy(), w.copy(), w.copy(), 1e-5)
    kinds = [lambda a: a]
    for lib in ("cupy", "torch"):
        try:
            m = __import__(lib)
        except ImportError:
            continue
        kinds.append((lambda a, m=m: m.asarray(a)) if lib == "cupy" else (lambda a, m=m: m.from_numpy(a).cuda()))
    for kind in kinds:
        given = tuple(kind(a) if isinstance(a, np.ndarray) else a for a in args)
        for _ in range(2):
            with pytest.raises(LaunchArgumentError) as e:
                getattr(mod, name)(*given, G=4)
            assert str(e.value) == refused
        getattr(mod, name)(*given, G=3)  # a G that divides C runs
