"""std.nn_train's and std.nn_layers' operators as table rows: inputs, constants and float64 NumPy
references, shared by the interpreter test (tests/stdlib/test_nn_train.py) and the GPU test
(tests/gpu/test_nn_train_gpu.py).

A row's `make(rng, dtype, shape)` returns the kernel's arguments (outputs filled with NaN, or
zeros where the kernel adds into them) and the checks: {argument index: (reference, tolerance
key, the output's dtype)}.  The references are computed from the very inputs the kernel reads
(already rounded to T).  FORWARDS holds each backward's forward as a float64 function of its
differentiable inputs, for the finite-difference test."""
from __future__ import annotations

from dataclasses import dataclass, field
from math import erf
from typing import Callable

import numpy as np

from op_tolerances import NUMPY, assert_close
from tlc import package_data

# the two modules the table covers, by name
PATHS = {m: str(package_data.stdlib().joinpath(f"{m}.tl")) for m in ("nn_train", "nn_layers")}
LAYERS = {"embedding", "embedding_bwd", "embedding_bwd_deterministic", "rope", "rope_bwd", "swiglu", "swiglu_bwd",
          "geglu", "geglu_bwd", "dropout", "batch_norm", "group_norm", "group_norm_bwd"}
FLOATS = ("f32", "f16", "bf16")
EPS = 1e-5
IGNORE = -100

# ---- float64 references ------------------------------------------------------------------------


def f64(a):
    return np.asarray(a, np.float64)


def log_softmax_ref(x):
    x = f64(x)
    m = x.max(-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(-1, keepdims=True))


def softmax_ref(x):
    return np.exp(log_softmax_ref(x))


def rms_norm_ref(x, w):
    x = f64(x)
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + EPS) * f64(w)


def layer_norm_ref(x, w, b):
    x = f64(x)
    c = x - x.mean(-1, keepdims=True)
    return c / np.sqrt((c * c).mean(-1, keepdims=True) + EPS) * f64(w) + f64(b)


def cross_entropy_ref(logits, target):
    lse = np.log(np.exp(f64(logits) - f64(logits).max(-1, keepdims=True)).sum(-1)) + f64(logits).max(-1)
    ok = (target != IGNORE) & (target >= 0) & (target < logits.shape[1])
    picked = f64(logits)[np.arange(len(target)), np.where(ok, target, 0)]
    return np.where(ok, lse - picked, 0.0), lse


def rope_ref(x, cos, sin, interleaved):
    x = f64(x)
    half = x.shape[-1] // 2
    lo = np.arange(half) * 2 if interleaved else np.arange(half)
    hi = lo + 1 if interleaved else lo + half
    c, s = f64(cos)[:, None, :], f64(sin)[:, None, :]
    y = np.empty_like(x)
    y[..., lo] = x[..., lo] * c - x[..., hi] * s
    y[..., hi] = x[..., lo] * s + x[..., hi] * c
    return y


def silu(u):
    return u / (1 + np.exp(-u))


def gelu_erf(u):
    return 0.5 * u * (1 + np.vectorize(erf)(u / np.sqrt(2)))


def gelu_tanh(u):
    return 0.5 * u * (1 + np.tanh(np.sqrt(2 / np.pi) * (u + 0.044715 * u ** 3)))


def glu_ref(x, act):
    x = f64(x)
    return act(x[:, 0, :]) * x[:, 1, :]


# The forward of each backward, as a float64 function of its differentiable inputs (by the
# backward's argument names) and of the other arguments: what finite differences differentiate.
FORWARDS = {
    "softmax_bwd": lambda x: softmax_ref(x),
    "log_softmax_bwd": lambda x: log_softmax_ref(x),
    "rms_norm_bwd": lambda x, weight: rms_norm_ref(x, weight),
    "layer_norm_bwd": lambda x, weight, bias: layer_norm_ref(x, weight, bias),
    "cross_entropy_bwd": lambda logits, target: cross_entropy_ref(logits, target)[0],
    "rope_bwd": lambda x, cos, sin, interleaved: rope_ref(x, cos, sin, interleaved),
    "swiglu_bwd": lambda x: glu_ref(x, silu),
    "geglu_bwd": lambda x, approx: glu_ref(x, gelu_tanh if approx else gelu_erf),
    "embedding_bwd": lambda weight, idx: f64(weight)[idx],
}

# ---- inputs ------------------------------------------------------------------------------------


def normal(rng, shape, dtype, scale=1.0, shift=0.0):
    return (rng.standard_normal(shape) * scale + shift).astype(np.float32).astype(NUMPY[dtype])


def nan(shape, dtype):
    return np.full(shape, np.nan, NUMPY[dtype])


def targets(rng, M, V, idtype="i64"):
    """Class indices with an ignored row and, past two rows, one out of range (also ignored)."""
    t = rng.integers(0, V, M)
    t[0] = IGNORE
    if M > 2:
        t[2] = V
    return t.astype(NUMPY[idtype])


@dataclass(frozen=True)
class Op:
    """One operator of the table: its rows are make(rng, dtype, shape) at each of `shapes`
    (a shape tuple and the constants that shape is run with)."""
    name: str
    make: Callable
    shapes: tuple
    dtypes: tuple = FLOATS
    consts: dict = field(default_factory=dict)  # constants of every row (INTERLEAVED, APPROX)


# (M, N) rows: one ragged tile, several tiles with a ragged last one, rows past M in a block, a
# row narrower than a warp's vectors; CM x CN tiles of the norms' weight-gradient grid, in SPLIT
# bands of rows (more bands than tiles of rows in the last: some bands empty).
ROWS = (((5, 50), dict(BM=2, BN=64, THREADS=32, CM=8, CN=16)),
        ((7, 200), dict(BM=2, BN=64, THREADS=32, CM=2, CN=32, SPLIT=2)),
        ((3, 24), dict(BM=1, BN=32, THREADS=64, CM=2, CN=16, SPLIT=4)))
# 2-D tiles of the tiled kernels (BM x BN blocks, ragged both ways)
TILES = (((9, 70), dict(BM=4, BN=32, THREADS=32)), ((3, 300), dict(BM=2, BN=128, THREADS=64)))
EMBED = (((11, 40, 70), dict(BD=32, THREADS=32)), ((3, 5, 300), dict(BD=128, THREADS=64)))
EMBED_SERIAL = (((11, 40, 70), dict(BLOCK=32, THREADS=32)), ((3, 5, 300), dict(BLOCK=128, THREADS=64)))
ROPE = (((5, 3, 16), dict(THREADS=32)), ((3, 2, 6), dict(THREADS=64)))
ROW_CONSTS = ("BM", "BN", "THREADS")


def row_consts(consts):
    return {k: v for k, v in consts.items() if k in ROW_CONSTS}


def make_log_softmax(rng, dtype, shape):
    x = normal(rng, shape, dtype, 3, 0.5)
    return [x, nan(shape, dtype)], {1: (log_softmax_ref(x), "log_softmax", dtype)}


def make_softmax_bwd(rng, dtype, shape):
    x = normal(rng, shape, "f32", 2)
    y = softmax_ref(x).astype(np.float32).astype(NUMPY[dtype])
    dy = normal(rng, shape, dtype)
    want = f64(y) * (f64(dy) - (f64(dy) * f64(y)).sum(-1, keepdims=True))
    return [dy, y, nan(shape, dtype)], {2: (want, "softmax_bwd", dtype)}


def make_log_softmax_bwd(rng, dtype, shape):
    x = normal(rng, shape, "f32", 2)
    y = log_softmax_ref(x).astype(np.float32).astype(NUMPY[dtype])
    dy = normal(rng, shape, dtype)
    want = f64(dy) - np.exp(f64(y)) * f64(dy).sum(-1, keepdims=True)
    return [dy, y, nan(shape, dtype)], {2: (want, "log_softmax_bwd", dtype)}


def rms_norm_grads(dy, x, w):
    dy, x, w = f64(dy), f64(x), f64(w)
    r = 1 / np.sqrt((x * x).mean(-1, keepdims=True) + EPS)
    g = dy * w
    return r * (g - x * r * r * (g * x).mean(-1, keepdims=True)), (dy * x * r).sum(0)


def layer_norm_grads(dy, x, w):
    dy, x, w = f64(dy), f64(x), f64(w)
    c = x - x.mean(-1, keepdims=True)
    r = 1 / np.sqrt((c * c).mean(-1, keepdims=True) + EPS)
    xh, g = c * r, dy * w
    return r * (g - g.mean(-1, keepdims=True) - xh * (g * xh).mean(-1, keepdims=True)), (dy * xh).sum(0), dy.sum(0)


def make_rms_norm_bwd(rng, dtype, shape):
    M, N = shape
    dy, x, w = normal(rng, shape, dtype), normal(rng, shape, dtype, 2, 0.5), normal(rng, N, dtype)
    dx, dw = rms_norm_grads(dy, x, w)
    return [dy, x, w, nan(shape, dtype), nan(N, dtype), EPS], {3: (dx, "rms_norm_bwd", dtype),
                                                              4: (dw, "rms_norm_bwd.dweight", dtype)}


def make_layer_norm_bwd(rng, dtype, shape):
    M, N = shape
    # a mean far from 0 (4 standard deviations): the centred sums must not cancel
    dy, x, w = normal(rng, shape, dtype), normal(rng, shape, dtype, 1, 4), normal(rng, N, dtype)
    dx, dw, db = layer_norm_grads(dy, x, w)
    return ([dy, x, w, nan(shape, dtype), nan(N, dtype), nan(N, dtype), EPS],
            {3: (dx, "layer_norm_bwd", dtype), 4: (dw, "layer_norm_bwd.dweight", dtype),
             5: (db, "layer_norm_bwd.dweight", dtype)})


def make_add_rms_norm(rng, dtype, shape):
    M, N = shape
    x, res, w = normal(rng, shape, dtype, 2), normal(rng, shape, dtype, 2), normal(rng, N, dtype)
    h = (f64(x) + f64(res)).astype(NUMPY[dtype])
    return ([x, res, w, nan(shape, dtype), nan(shape, dtype), EPS],
            {3: (rms_norm_ref(h, w), "add_rms_norm", dtype), 4: (f64(h), "add_rms_norm", dtype)})


def make_cross_entropy(rng, dtype, shape):
    M, V = shape
    logits, t = normal(rng, shape, dtype, 3), targets(rng, M, V)
    loss, lse = cross_entropy_ref(logits, t)
    return [logits, t, nan(M, "f32"), nan(M, "f32")], {2: (loss, "cross_entropy", "f32"),
                                                       3: (lse, "cross_entropy", "f32")}


def cross_entropy_grad(dloss, logits, t):
    M, V = logits.shape
    ok = (t != IGNORE) & (t >= 0) & (t < V)
    g = softmax_ref(logits)
    g[np.arange(M)[ok], t[ok]] -= 1
    return np.where(ok[:, None], g * f64(dloss)[:, None], 0.0)


def make_cross_entropy_bwd(rng, dtype, shape):
    M, V = shape
    logits, t, dloss = normal(rng, shape, dtype, 3), targets(rng, M, V), normal(rng, M, "f32")
    lse = cross_entropy_ref(logits, t)[1].astype(np.float32)
    return [dloss, logits, t, lse, nan(shape, dtype)], {4: (cross_entropy_grad(dloss, logits, t),
                                                            "cross_entropy_bwd", dtype)}


def indices(rng, M, V):
    """Row indices with repeats (the backward's sums), one out of range and one negative."""
    idx = rng.integers(0, max(1, V // 3), M)
    idx[0] = V
    if M > 1:
        idx[1] = -1
    return idx.astype(np.int64)


def make_embedding(rng, dtype, shape):
    M, V, D = shape
    w, idx = normal(rng, (V, D), dtype), indices(rng, M, V)
    want = np.where(((idx >= 0) & (idx < V))[:, None], f64(w)[np.clip(idx, 0, V - 1)], 0.0)
    return [w, idx, nan((M, D), dtype)], {2: (want, "embedding", dtype)}


def embedding_grad(dy, idx, V, padding_idx=-1):
    """np.add.at in f32 (the kernels' W), rows in order of m: the deterministic kernel's bits."""
    out = np.zeros((V, dy.shape[1]), np.float32)
    ok = (idx >= 0) & (idx < V) & (idx != padding_idx)
    np.add.at(out, idx[ok], dy[ok].astype(np.float32))
    return out


def make_embedding_bwd(rng, dtype, shape, deterministic=False):
    M, V, D = shape
    dy, idx = normal(rng, (M, D), dtype), indices(rng, M, V)
    pad = int(idx[-1]) if M > 3 else -1  # some rows name the padding index
    want = embedding_grad(dy, idx, V, pad)
    key = "exact" if deterministic else "embedding_bwd"
    return [dy, idx, np.zeros((V, D), np.float32), pad], {2: (f64(want), key, "f32")}


def rope_tables(rng, S, D):
    angle = rng.uniform(0, 2 * np.pi, (S, D // 2))
    return np.cos(angle).astype(np.float32), np.sin(angle).astype(np.float32)


def make_rope(rng, dtype, shape, interleaved=False, bwd=False):
    S, H, D = shape
    x = normal(rng, shape, dtype, 2)
    cos, sin = rope_tables(rng, S, D)
    want = rope_ref(x, cos, -sin if bwd else sin, interleaved)
    return [x, cos, sin, nan(shape, dtype)], {3: (want, "rope", dtype)}


def make_glu(rng, dtype, shape, act):
    M, N = shape
    x = normal(rng, (M, 2, N), dtype, 2)
    return [x, nan((M, N), dtype)], {1: (glu_ref(x, act), "glu", dtype)}


def glu_grads(dy, x, act, dact):
    g, u, dy = f64(x)[:, 0, :], f64(x)[:, 1, :], f64(dy)
    return np.stack([dy * u * dact(g), dy * act(g)], axis=1)


def silu_grad(u):
    s = 1 / (1 + np.exp(-u))
    return s * (1 + u * (1 - s))


def gelu_erf_grad(u):
    return 0.5 * (1 + np.vectorize(erf)(u / np.sqrt(2))) + u * np.exp(-0.5 * u * u) / np.sqrt(2 * np.pi)


def gelu_tanh_grad(u):
    k = np.sqrt(2 / np.pi)
    t = np.tanh(k * (u + 0.044715 * u ** 3))
    return 0.5 * (1 + t) + 0.5 * u * (1 - t * t) * k * (1 + 3 * 0.044715 * u * u)


def make_glu_bwd(rng, dtype, shape, act, dact):
    M, N = shape
    dy, x = normal(rng, (M, N), dtype), normal(rng, (M, 2, N), dtype, 2)
    return [dy, x, nan((M, 2, N), dtype)], {2: (glu_grads(dy, x, act, dact), "glu_bwd", dtype)}


OPS = [
    Op("log_softmax", make_log_softmax, ROWS),
    Op("softmax_bwd", make_softmax_bwd, ROWS),
    Op("log_softmax_bwd", make_log_softmax_bwd, ROWS),
    Op("rms_norm_bwd", make_rms_norm_bwd, ROWS),
    Op("layer_norm_bwd", make_layer_norm_bwd, ROWS),
    Op("add_rms_norm", make_add_rms_norm, ROWS),
    Op("cross_entropy", make_cross_entropy, ROWS),
    Op("cross_entropy.split", make_cross_entropy, ROWS, consts=dict(SPLIT=3)),
    Op("cross_entropy_bwd", make_cross_entropy_bwd, TILES),
    Op("embedding", make_embedding, EMBED),
    Op("embedding_bwd", make_embedding_bwd, EMBED),
    Op("embedding_bwd_deterministic", lambda r, d, s: make_embedding_bwd(r, d, s, True),
       EMBED_SERIAL),
    Op("rope", make_rope, ROPE),
    Op("rope.interleaved", lambda r, d, s: make_rope(r, d, s, True), ROPE, consts=dict(INTERLEAVED=True)),
    Op("rope_bwd", lambda r, d, s: make_rope(r, d, s, bwd=True), ROPE),
    Op("rope_bwd.interleaved", lambda r, d, s: make_rope(r, d, s, True, True), ROPE, consts=dict(INTERLEAVED=True)),
    Op("swiglu", lambda r, d, s: make_glu(r, d, s, silu), TILES),
    Op("swiglu_bwd", lambda r, d, s: make_glu_bwd(r, d, s, silu, silu_grad), TILES),
    Op("geglu", lambda r, d, s: make_glu(r, d, s, gelu_erf), TILES),
    Op("geglu.approx", lambda r, d, s: make_glu(r, d, s, gelu_tanh), TILES, consts=dict(APPROX=True)),
    Op("geglu_bwd", lambda r, d, s: make_glu_bwd(r, d, s, gelu_erf, gelu_erf_grad), TILES),
    Op("geglu_bwd.approx", lambda r, d, s: make_glu_bwd(r, d, s, gelu_tanh, gelu_tanh_grad), TILES,
       consts=dict(APPROX=True)),
]


def kernel_name(op: Op) -> str:
    """The kernel a row runs: its name before a dot (rope.interleaved runs rope)."""
    return op.name.split(".")[0]


def module_of(kernel: str) -> str:
    """The module ("nn_train" or "nn_layers") that holds a kernel of the table."""
    return "nn_layers" if kernel in LAYERS else "nn_train"


def kernel_consts(op: Op, consts: dict) -> dict:
    """The shape's constants that the kernel takes (the row kernels have no CM, CN)."""
    if op.make in (make_rms_norm_bwd, make_layer_norm_bwd):
        return {**consts, **op.consts}
    if op.shapes is ROWS:
        return {**row_consts(consts), **op.consts}
    return {**consts, **op.consts}


def compare(args: list, checks: dict, name: str, where: str) -> None:
    """Each output a row's kernel wrote against its reference (a deterministic kernel's bits
    exactly, the rest within op_tolerances')."""
    for index, (want, key, out_dtype) in checks.items():
        at = f"{where} output {index}"
        if key == "exact":
            np.testing.assert_array_equal(args[index], want.astype(args[index].dtype), err_msg=name + at)
        else:
            assert_close(args[index], want, key, out_dtype, at)


# ---- dropout: Philox-4x32-10 in NumPy ------------------------------------------------------------

PHILOX_M = (0xD2511F53, 0xCD9E8D57)
PHILOX_W = (0x9E3779B9, 0xBB67AE85)


def philox4x32(counter, key, rounds=10):
    """Random123's Philox-4x32-R of counters (4 arrays of uint32) under key (2 uint32): four
    arrays of uint32 words."""
    c = [np.asarray(v, np.uint64) & 0xFFFFFFFF for v in counter]
    k = [np.uint64(v) & np.uint64(0xFFFFFFFF) for v in key]
    for _ in range(rounds):
        p0, p1 = np.uint64(PHILOX_M[0]) * c[0], np.uint64(PHILOX_M[1]) * c[2]
        c = [((p1 >> np.uint64(32)) ^ c[1] ^ k[0]) & np.uint64(0xFFFFFFFF), p1 & np.uint64(0xFFFFFFFF),
             ((p0 >> np.uint64(32)) ^ c[3] ^ k[1]) & np.uint64(0xFFFFFFFF), p0 & np.uint64(0xFFFFFFFF)]
        k = [(k[0] + np.uint64(PHILOX_W[0])) & np.uint64(0xFFFFFFFF),
             (k[1] + np.uint64(PHILOX_W[1])) & np.uint64(0xFFFFFFFF)]
    return [v.astype(np.uint32) for v in c]


def dropout_keep(n: int, p: float, seed: int, offset: int):
    """Which of n elements dropout keeps: word e % 4 of Philox at counter (e // 4, 0, offset),
    key seed, its top 24 bits as u = w / 2^32, kept where u >= p (in f32, as the kernel)."""
    g = np.arange(n) // 4
    words = philox4x32([g, np.zeros_like(g), np.full_like(g, offset & 0xFFFFFFFF), np.full_like(g, offset >> 32)],
                       [seed & 0xFFFFFFFF, seed >> 32])
    w = np.choose(np.arange(n) % 4, words)
    return (w >> 8).astype(np.float32) * np.float32(2.0 ** -24) >= np.float32(p)


def make_dropout(rng, dtype, shape, p=0.3, seed=0x123456789ABCDEF, offset=5):
    (n,) = shape
    x = normal(rng, n, dtype)
    keep = dropout_keep(n, p, seed, offset)
    want = np.where(keep, x.astype(np.float32) / (np.float32(1) - np.float32(p)), 0).astype(NUMPY[dtype])
    return [x, nan(n, dtype), p, seed, offset], {1: (f64(want), "exact", dtype)}


DROPOUT = (((1000,), dict(BLOCK=64, THREADS=32)), ((37,), dict(BLOCK=16, THREADS=32)))
OPS.append(Op("dropout", make_dropout, DROPOUT))


# ---- the other norms ------------------------------------------------------------------------------

def make_batch_norm(rng, dtype, shape):
    B, C, L = shape
    x, w, b = normal(rng, (B * C, L), dtype, 2, 1), normal(rng, C, "f32"), normal(rng, C, "f32")
    mean, var = normal(rng, C, "f32"), rng.uniform(0.5, 2, C).astype(np.float32)
    c = np.arange(B * C) % C
    want = (f64(x) - f64(mean)[c, None]) / np.sqrt(f64(var)[c, None] + EPS) * f64(w)[c, None] + f64(b)[c, None]
    return [x, mean, var, w, b, nan((B * C, L), dtype), EPS], {5: (want, "batch_norm", dtype)}


def group_norm_ref(x, w, b, G):
    B, C, L = x.shape
    xg = f64(x).reshape(B, G, -1)
    xg = (xg - xg.mean(-1, keepdims=True)) / np.sqrt(xg.var(-1, keepdims=True) + EPS)
    return xg.reshape(B, C, L) * f64(w)[:, None] + f64(b)[:, None]


def make_group_norm(rng, dtype, shape):
    B, C, L, G = shape
    x, w, b = normal(rng, (B, C, L), dtype, 1, 3), normal(rng, C, dtype), normal(rng, C, dtype)
    return [x, w, b, nan((B, C, L), dtype), EPS], {3: (group_norm_ref(x, w, b, G), "group_norm", dtype)}


NCL = (((3, 5, 37), dict(BM=4, BL=16, THREADS=32)), ((2, 3, 300), dict(BM=2, BL=128, THREADS=64)))
# (B, C, L, G): a group of one tile and of several, a ragged last tile, one group of all channels,
# steps of four whole tiles then the rest (300 = 4 * 64 + 44: 2 whole tiles and a ragged one)
GROUPS = (((2, 6, 10, 3), dict(G=3, BLOCK=16, THREADS=32)), ((3, 4, 50, 2), dict(G=2, BLOCK=64, THREADS=32)),
          ((1, 4, 7, 1), dict(G=1, BLOCK=64, THREADS=64)), ((2, 4, 300, 2), dict(G=2, BLOCK=16, THREADS=32)))
OPS += [Op("batch_norm", make_batch_norm, NCL), Op("group_norm", lambda r, d, s: make_group_norm(r, d, s), GROUPS)]


def group_norm_grads(dy, x, w, G):
    B, C, L = x.shape
    xg = f64(x).reshape(B, G, -1)
    c = xg - xg.mean(-1, keepdims=True)
    r = 1 / np.sqrt((c * c).mean(-1, keepdims=True) + EPS)
    xh, g = c * r, (f64(dy) * f64(w)[:, None]).reshape(B, G, -1)
    dx = r * (g - g.mean(-1, keepdims=True) - xh * (g * xh).mean(-1, keepdims=True))
    return dx.reshape(B, C, L), (f64(dy) * xh.reshape(B, C, L)).sum((0, 2)), f64(dy).sum((0, 2))


def make_group_norm_bwd(rng, dtype, shape):
    B, C, L, G = shape
    dy, x, w = normal(rng, (B, C, L), dtype), normal(rng, (B, C, L), dtype, 1, 3), normal(rng, C, dtype)
    dx, dw, db = group_norm_grads(dy, x, w, G)
    return ([dy, x, w, nan((B, C, L), dtype), nan(C, dtype), nan(C, dtype), EPS],
            {3: (dx, "layer_norm_bwd", dtype), 4: (dw, "layer_norm_bwd.dweight", dtype),
             5: (db, "layer_norm_bwd.dweight", dtype)})


GROUPS_BWD = tuple((shape, {**consts, "BL": 8}) for shape, consts in GROUPS)
OPS.append(Op("group_norm_bwd", make_group_norm_bwd, GROUPS_BWD))
FORWARDS["group_norm_bwd"] = lambda x, weight, bias, groups: group_norm_ref(x, weight, bias, groups)


def make_add_layer_norm(rng, dtype, shape):
    M, N = shape
    x, res = normal(rng, shape, dtype, 2, 3), normal(rng, shape, dtype, 2)
    w, b = normal(rng, N, dtype), normal(rng, N, dtype)
    h = (f64(x) + f64(res)).astype(NUMPY[dtype])
    return ([x, res, w, b, nan(shape, dtype), nan(shape, dtype), EPS],
            {4: (layer_norm_ref(h, w, b), "add_layer_norm", dtype), 5: (f64(h), "add_layer_norm", dtype)})


OPS.append(Op("add_layer_norm", make_add_layer_norm, ROWS))
