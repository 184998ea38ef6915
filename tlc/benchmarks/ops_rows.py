"""The rows of `tlc bench ops` (ops.py): each a std operator at a large size beside PyTorch
eager's equivalent and a NumPy reference.  The operators' domains, scalars and references come
from the table-driven tests' tables (tests/stdlib/test_elementwise.py: one table for the tests
and the benchmark), so the suite runs from a source checkout.

Adding rows: a `Row` names the std module and operator, how to make its inputs (a domain per
tensor, see `host_inputs` / `device_inputs`), PyTorch's equivalent and a NumPy reference; append
rows for a module in its own section of `all_rows` below.
"""
from __future__ import annotations

import functools
import os
import sys
from dataclasses import field
from pathlib import Path
from typing import Callable

import numpy as np

from ..diagnostics import TlcError
from ..frozen import frozen

@frozen
class Row:
    """One benchmark row: std `module`'s `op` called as op(*tensors, *scalars, **constants)."""
    module: str
    op: str
    domains: tuple  # one input domain per tensor argument (host_inputs)
    torch: Callable  # PyTorch eager: torch(*tensors, *scalars)
    numpy: Callable  # the reference over float64 NumPy arrays: numpy(*arrays, *scalars)
    dtype: str = "f16"
    scalars: tuple = ()
    constants: dict = field(default_factory=dict)  # tlc constants; T=dtype is added unless given
    out_dtype: str | None = None  # the result's dtype when not `dtype` ("bool")
    out_shape: Callable | None = None  # a kernel's: (the inputs' shape) -> the output it writes, its last argument
    inputs: Callable | None = None  # (shape, seed) -> NumPy inputs, where domains do not say (index tensors)
    accumulates: bool = False  # the kernel adds into its output (counts[e] += ...): each launch zeroes it first
    # PyTorch's own inputs, made once before timing in the row's dtype: (*inputs) -> the tensors
    # `torch` takes (sigmoid_bwd's (dy, sigmoid(x)): aten's backward takes the forward's output,
    # which autograd saved); its result is checked against `torch` on their float64 copies
    torch_inputs: Callable | None = None
    # PyTorch's CUDA kernel rounds the scalars to the row's dtype (threshold's 0.3 is f16's
    # 0.30005): its result is checked against the reference of the rounded scalars
    torch_rounds_scalars: bool = False
    note: str = ""  # how PyTorch's result was checked where not as tlc's, or the inputs chosen; in the table
    kernel: str | None = None  # the std function, where not `op` (rows of one kernel with other constants)
    out_at: int | None = None  # the compared output's place among the kernel's tensors (default: last)

    @property
    def name(self) -> str:
        return f"{self.op} {self.dtype}"

    def tlc_constants(self) -> dict:
        return self.constants if self.constants else ({} if self.dtype == "bool" else {"T": self.dtype})

    def reference(self, *wide):
        """The float64 reference: `torch` on the inputs' float64 copies (through torch_inputs)."""
        return self.torch(*(self.torch_inputs(*wide) if self.torch_inputs else wide), *self.scalars)


# ---- inputs -------------------------------------------------------------------------------------------

def host_inputs(row: Row, shape, seed: int = 0) -> list:
    """NumPy inputs of `row` over its domains (test_elementwise's domains)."""
    from test_elementwise import inputs

    if row.inputs is not None:
        return row.inputs(shape, seed)
    rng = np.random.default_rng(seed)
    return [inputs(rng, d, "bool" if d == "bool" else row.dtype, shape) for d in row.domains]


_TORCH_DTYPES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16", "i32": "int32", "i8": "int8",
                 "bool": "bool", "f8e4m3": "float8_e4m3fn", "f8e5m2": "float8_e5m2"}


def device_inputs(row: Row, full, seed: int = 0) -> list:
    """PyTorch CUDA inputs of `row`, the same domains as host_inputs, drawn on the GPU."""
    import torch

    from test_elementwise import arg_shape

    if row.inputs is not None:  # made on the host: index tensors need their own values
        return [torch.from_numpy(a).cuda() for a in row.inputs(full, seed)]
    g = torch.Generator(device="cuda").manual_seed(seed)

    def draw(domain):
        shape = arg_shape(domain, full)
        domain = domain.partition("@")[0]
        n = lambda: torch.randn(shape, device="cuda", generator=g)  # noqa: E731
        r = lambda: torch.rand(shape, device="cuda", generator=g)  # noqa: E731
        if domain == "bool":
            return r() < 0.5
        x = {"normal": lambda: n() * 2, "wide": lambda: n() * 8,
             "nonzero": lambda: torch.where(r() < 0.5, -1.0, 1.0) * (0.25 + 3.75 * r()),
             "pos": lambda: 0.05 + 7.95 * r(), "neg": lambda: -4 * r(), "unit": lambda: 1.9 * r() - 0.95,
             "bounded": lambda: 16 * r() - 8,
             "ge1": lambda: 1 + 9 * r(), "halves": lambda: torch.round(n() * 6) / 2,
             "tiny": lambda: torch.where(r() < 0.5, n() * 1e-4, n() * 2),
             "tiny1p": lambda: torch.where(r() < 0.5, n() * 1e-4, -0.9 + 6.9 * r())}[domain]()
        return x.to(getattr(torch, _TORCH_DTYPES[row.dtype]))

    return [draw(d) for d in row.domains]


# ---- rows ---------------------------------------------------------------------------------------------

# Domains narrower than the test's where 2^27 draws would reach an f16 overflow (an infinite
# result never matches its reference, so both contenders would be reported wrong).
BENCH_DOMAINS = {"exp": ("bounded",), "expm1": ("bounded",), "sinh": ("bounded",), "cosh": ("bounded",),
                 "pow": ("pos", "unit")}


def _elementwise_rows() -> list[Row]:
    """std.elementwise: every operator of the test table that PyTorch has, in f16 (bool for the
    logical operators), with PyTorch's eager function beside it."""
    from test_elementwise import OPS

    by_name = {op.name: op for op in OPS}
    rows = []
    for name, torch_fn in _torch_elementwise().items():
        op = by_name[name]
        dtype = "bool" if op.dtypes == ("bool",) else "f16"
        domains = BENCH_DOMAINS.get(name, op.domains)
        rows.append(Row("std.elementwise", name, domains, torch_fn, op.ref, dtype, op.scalars,
                        out_dtype="bool" if op.out == "bool" or dtype == "bool" else None,
                        **_TORCH_AS_DEFINED.get(name, {})))
    return rows


def _forward(name):  # (dy, x) -> (dy, the forward's output in x's dtype): what autograd saves
    def fn(dy, x):
        import torch

        return dy, getattr(torch, name)(x)
    return fn


# Rows whose PyTorch kernel defines the operator at f16 apart from the real numbers (the H200's
# run found PyTorch's f16 results outside the float64 reference's tolerance): PyTorch is checked
# against its own definition, tlc against the real one, and the table says so.
_TORCH_AS_DEFINED = {
    "threshold": dict(torch_rounds_scalars=True,
                      note="torch checked with its threshold rounded to f16 (0.3 -> 0.30005), as its CUDA kernel does"),
    "sigmoid_bwd": dict(torch_inputs=_forward("sigmoid"), note="torch's input: sigmoid(x) in f16, as autograd saves it"),
    "tanh_bwd": dict(torch_inputs=_forward("tanh"), note="torch's input: tanh(x) in f16, as autograd saves it"),
}


def _torch_elementwise() -> dict:
    """PyTorch's eager equivalent of each std.elementwise operator (resolved when called, so
    that the dry run needs no PyTorch)."""
    def t(path):
        def fn(*a):
            import torch
            import torch.nn.functional as F  # noqa: F401

            obj = {"torch": torch, "F": F}[path.split(".")[0]]
            for part in path.split(".")[1:]:
                obj = getattr(obj, part)
            return obj(*a)
        return fn

    def f(expr):  # a lambda over torch and F, the tensors and scalars
        def fn(*a):
            import torch
            import torch.nn.functional as F

            return expr(torch, F, *a)
        return fn

    unary = {n: t(f"torch.{n}") for n in ["abs", "neg", "square", "sign", "reciprocal", "exp", "exp2", "expm1", "log",
                                            "log2", "log10", "log1p", "sqrt", "rsqrt", "sin", "cos", "tan", "atan",
                                            "asin", "acos", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
                                            "sigmoid", "erf", "floor", "ceil", "round", "trunc"]}
    acts = {n: t(f"F.{n}") for n in ["relu", "relu6", "selu", "silu", "mish", "softplus", "softsign", "hardsigmoid",
                                       "hardswish", "logsigmoid", "tanhshrink"]}
    acts.update({
        "leaky_relu": f(lambda torch, F, x, s: F.leaky_relu(x, s)), "elu": f(lambda torch, F, x, a: F.elu(x, a)),
        "celu": f(lambda torch, F, x, a: F.celu(x, a)), "gelu": f(lambda torch, F, x: F.gelu(x, approximate="tanh")),
        "gelu_erf": f(lambda torch, F, x: F.gelu(x)), "quick_gelu": f(lambda torch, F, x: x * torch.sigmoid(1.702 * x)),
        "hardtanh": f(lambda torch, F, x, lo, hi: F.hardtanh(x, lo, hi)),
        "softshrink": f(lambda torch, F, x, l: F.softshrink(x, l)), "hardshrink": f(lambda torch, F, x, l: F.hardshrink(x, l)),
        "threshold": f(lambda torch, F, x, th, v: F.threshold(x, th, v)),
        "relu_squared": f(lambda torch, F, x: torch.square(F.relu(x))),
        # backward: what autograd runs for each (aten's *_backward kernels)
        "relu_bwd": f(lambda torch, F, dy, x: torch.ops.aten.threshold_backward(dy, x, 0)),
        "sigmoid_bwd": f(lambda torch, F, dy, y: torch.ops.aten.sigmoid_backward(dy, y)),  # y = sigmoid(x):
        "tanh_bwd": f(lambda torch, F, dy, y: torch.ops.aten.tanh_backward(dy, y)),  # _TORCH_AS_DEFINED
        "silu_bwd": f(lambda torch, F, dy, x: torch.ops.aten.silu_backward(dy, x)),
        "gelu_bwd": f(lambda torch, F, dy, x: torch.ops.aten.gelu_backward(dy, x, approximate="tanh")),
        "gelu_erf_bwd": f(lambda torch, F, dy, x: torch.ops.aten.gelu_backward(dy, x)),
        "softplus_bwd": f(lambda torch, F, dy, x: torch.ops.aten.softplus_backward(dy, x, 1, 20)),
        "hardswish_bwd": f(lambda torch, F, dy, x: torch.ops.aten.hardswish_backward(dy, x)),
        "mish_bwd": f(lambda torch, F, dy, x: torch.ops.aten.mish_backward(dy, x)),
        "leaky_relu_bwd": f(lambda torch, F, dy, x, s: torch.ops.aten.leaky_relu_backward(dy, x, s, False)),
        "elu_bwd": f(lambda torch, F, dy, x, a: torch.ops.aten.elu_backward(dy, a, 1, 1, False, x)),
    })
    binary = {n: t(f"torch.{n}") for n in ["add", "sub", "mul", "div", "floor_divide", "remainder", "fmod", "pow",
                                             "maximum", "minimum", "atan2", "hypot", "copysign", "eq", "ne", "lt",
                                             "le", "gt", "ge", "logical_and", "logical_or", "logical_xor",
                                             "logical_not", "where", "lerp"]}
    binary.update({f"{name}_{kind}": t(f"torch.{name}") for name in ["add", "sub", "mul", "div", "maximum", "minimum"]
                   for kind in ("row", "col")})
    binary.update({"add_scalar": t("torch.add"), "mul_scalar": t("torch.mul"), "clamp": f(lambda torch, F, x, lo, hi: torch.clamp(x, lo, hi)),
                   "clamp_tensor": f(lambda torch, F, x, lo, hi: torch.clamp(x, lo, hi)),
                   "addcmul": f(lambda torch, F, x, a, b, v: torch.addcmul(x, a, b, value=v)),
                   "addcdiv": f(lambda torch, F, x, a, b, v: torch.addcdiv(x, a, b, value=v))})
    return {**unary, **acts, **binary}


def _cast_rows() -> list[Row]:
    """std.elementwise's conversions: f32 <-> f16 / bf16, and saturating f16 -> f8e4m3."""
    def to(name, sat=False):
        def fn(x):
            import torch

            d = getattr(torch, _TORCH_DTYPES[name])
            return (x.clamp(torch.finfo(d).min, torch.finfo(d).max) if sat else x).to(d)
        return fn

    def ref(name, sat=False):
        from op_tolerances import numpy_dtype

        def fn(x):
            if sat:
                import ml_dtypes

                info = ml_dtypes.finfo(numpy_dtype(name))
                x = np.clip(x, float(info.min), float(info.max))
            return x
        return fn

    pairs = [("f32", "f16", False), ("f16", "f32", False), ("f32", "bf16", False), ("bf16", "f32", False),
             ("f16", "f8e4m3", True), ("f32", "f8e5m2", True)]
    return [Row("std.elementwise", "convert_sat" if sat else "convert", ("wide",), to(d, sat), ref(d, sat), s,
                constants={"S": s, "D": d}, out_dtype=d) for s, d, sat in pairs]


def _reduce_rows() -> list[Row]:
    """std.reduce: each reduction along the rows (axis 1) and the columns (axis 0) of a
    (16384, 8192) f16 matrix, the scans along the rows, against PyTorch's eager reduction."""
    def f(expr):
        def fn(*a):
            import torch

            return expr(torch, *a)
        return fn

    tile_ops = {  # name -> (PyTorch over dim, NumPy over axis, domain)
        "sum": (lambda t, x, d: t.sum(x, dim=d), lambda x, a: x.sum(axis=a), "normal"),
        "mean": (lambda t, x, d: t.mean(x, dim=d), lambda x, a: x.mean(axis=a), "normal"),
        "max": (lambda t, x, d: t.amax(x, dim=d), lambda x, a: x.max(axis=a), "normal"),
        "min": (lambda t, x, d: t.amin(x, dim=d), lambda x, a: x.min(axis=a), "normal"),
        "var": (lambda t, x, d: t.var(x, dim=d, unbiased=False), lambda x, a: x.var(axis=a), "normal"),
        "std": (lambda t, x, d: t.std(x, dim=d, unbiased=False), lambda x, a: x.std(axis=a), "normal"),
        "norm_l1": (lambda t, x, d: t.linalg.vector_norm(x, 1, dim=d), lambda x, a: abs(x).sum(axis=a), "normal"),
        "norm_l2": (lambda t, x, d: t.linalg.vector_norm(x, 2, dim=d), lambda x, a: np.sqrt((x * x).sum(axis=a)),
                    "normal"),
        "norm_inf": (lambda t, x, d: t.linalg.vector_norm(x, float("inf"), dim=d), lambda x, a: abs(x).max(axis=a),
                     "normal"),
        "logsumexp": (lambda t, x, d: t.logsumexp(x, dim=d),
                      lambda x, a: np.log(np.exp(x - x.max(axis=a, keepdims=True)).sum(axis=a)) + x.max(axis=a), "normal"),
        "any": (lambda t, x, d: t.any(x, dim=d), lambda x, a: (x != 0).any(axis=a), "halves"),
        "all": (lambda t, x, d: t.all(x, dim=d), lambda x, a: (x != 0).all(axis=a), "halves"),
    }
    rows = []
    for name, (tf, nf, domain) in tile_ops.items():
        for axis in (1, 0):
            rows.append(Row("std.reduce", f"{name}_axis{axis}", (domain,), f(lambda t, x, tf=tf, d=axis: tf(t, x, d)),
                            lambda x, nf=nf, a=axis: nf(x, a), out_dtype="bool" if name in ("any", "all") else None))
    kernels = {  # name -> (PyTorch, NumPy, the output's shape and dtype)
        "argmax_axis1": (lambda t, x: t.argmax(x, dim=1).int(), lambda x: x.argmax(axis=1), lambda s: s[:1], "i32"),
        "argmax_axis0": (lambda t, x: t.argmax(x, dim=0).int(), lambda x: x.argmax(axis=0), lambda s: s[1:], "i32"),
        "argmin_axis1": (lambda t, x: t.argmin(x, dim=1).int(), lambda x: x.argmin(axis=1), lambda s: s[:1], "i32"),
        "cumsum": (lambda t, x: t.cumsum(x, dim=1), lambda x: np.cumsum(x, axis=1), lambda s: s, None),
        "cummax": (lambda t, x: t.cummax(x, dim=1).values, lambda x: np.maximum.accumulate(x, axis=1), lambda s: s, None),
        "cummin": (lambda t, x: t.cummin(x, dim=1).values, lambda x: np.minimum.accumulate(x, axis=1), lambda s: s, None),
        "cumsum_axis0": (lambda t, x: t.cumsum(x, dim=0), lambda x: np.cumsum(x, axis=0), lambda s: s, None),
        "cummax_axis0": (lambda t, x: t.cummax(x, dim=0).values, lambda x: np.maximum.accumulate(x, axis=0), lambda s: s,
                         None),
        "cummin_axis0": (lambda t, x: t.cummin(x, dim=0).values, lambda x: np.minimum.accumulate(x, axis=0), lambda s: s,
                         None),
    }
    # sums of integers in [-2, 2]: every partial sum of LARGE's rows and columns is exact in f16
    # (|S| < 2048), in any order; PyTorch's CUDA scan accumulates in f16, which left its cumsum
    # of normal draws up to 9.16 (rows) and 32.8 (columns) off on the H200
    sums = {"inputs": _small_integers, "note": "inputs: integers in [-2, 2], whose sums f16 holds (torch sums in f16)"}
    rows += [Row("std.reduce", name, ("normal",), f(tf), nf, out_dtype=dt, out_shape=shape,
                 **(sums if name.startswith("cumsum") else {}))
             for name, (tf, nf, shape, dt) in kernels.items()]
    # products of +-1 (exact in f16, as PyTorch's): a product of 2^13 factors of any other size
    # leaves f16's range
    rows += [Row("std.reduce", name, (), f(tf), nf, out_shape=lambda s: s, inputs=_signs)
             for name, tf, nf in (("cumprod", lambda t, x: t.cumprod(x, dim=1), lambda x: np.cumprod(x, axis=1)),
                                  ("cumprod_axis0", lambda t, x: t.cumprod(x, dim=0), lambda x: np.cumprod(x, axis=0)))]
    return rows + _sort_rows()


def _sort_rows() -> list[Row]:
    """std.reduce's topk (K = 8 and 64) and sort on (4096, 32768) f32 rows (issue 13's shape)
    against torch.topk and torch.sort(stable=True).  The values are compared (equal values'
    indices come in each one's order); the indices are an input the kernel writes, their
    bytes counted."""
    def topk_inputs(k):
        def fn(shape, seed=0):
            m, n = max(1, shape[0] // 4), shape[1] * 4
            return [np.random.default_rng(seed).standard_normal((m, n), dtype=np.float32), np.zeros((m, k), np.int32)]
        return fn

    def sort_inputs(shape, seed=0):
        m, n = max(1, shape[0] // 4), shape[1] * 4
        return [np.random.default_rng(seed).standard_normal((m, n), dtype=np.float32), np.zeros((m, n), np.int32)]

    def top(k):
        def fn(x, _):
            import torch

            return torch.topk(x, k).values
        return fn

    def sorted_values(x, _):
        import torch

        return torch.sort(x, stable=True).values

    rows = [Row("std.reduce", f"topk_k{k}", (), top(k), lambda x, _, k=k: -np.sort(-x, axis=1)[:, :k], "f32",
                kernel="topk", out_at=1, out_shape=lambda s, k=k: (s[0], k), inputs=topk_inputs(k))
            for k in (8, 64)]
    rows.append(Row("std.reduce", "sort", (), sorted_values, lambda x, _: np.sort(x, axis=1), "f32",
                    out_at=1, out_shape=lambda s: s,
                    inputs=sort_inputs))
    return rows


def _small_integers(shape, seed=0):
    return [np.random.default_rng(seed).integers(-2, 3, shape).astype(np.float16)]


def _signs(shape, seed=0):
    return [np.random.default_rng(seed).choice(np.array([-1, 1], np.float16), shape)]


def _data_rows() -> list[Row]:
    """std.data: data movement at 2^27 f16 elements of the (M, N) shape given, against PyTorch's
    eager equivalent (x.t().contiguous(), torch.cat, torch.gather, index_select, F.pad, x.repeat,
    torch.tril...).  Index tensors are i64 (PyTorch's), their bytes counted; gather and scatter
    run along the rows, index_select picks whole rows (an embedding lookup)."""
    def f16(rng, *shape):
        return (rng.standard_normal(shape) * 2).astype(np.float16)

    def mk(fn):  # (shape, seed) -> inputs, from fn(rng, M, N)
        return lambda shape, seed=0: fn(np.random.default_rng(seed), *shape)

    def perms(rng, m, n):  # each row a permutation of its columns (scatter writes every element once)
        return rng.permuted(np.tile(np.arange(n, dtype=np.int64), (m, 1)), axis=1)

    def torch_f(expr):
        def fn(*a):
            import torch
            import torch.nn.functional as F

            return expr(torch, F, *a)
        return fn

    def ix(a):  # an index array widened to float64 by the dry run, back to integers
        return a.astype(np.int64)

    def scattered(src, idx):
        y = np.empty_like(src)
        np.put_along_axis(y, ix(idx), src, 1)
        return y

    def padded(x, top, left, value):
        y = np.full((x.shape[0] + 2, x.shape[1] + 8), value)
        y[top:top + x.shape[0], left:left + x.shape[1]] = x
        return y

    perm = (0, 2, 1, 3)  # (batch, seq, heads, dim) -> (batch, heads, seq, dim)
    return [
        Row("std.data", "transpose", (), torch_f(lambda t, F, x: x.t().contiguous()), lambda x: x.T,
            out_shape=lambda s: s[::-1], inputs=mk(lambda r, m, n: [f16(r, m, n)])),
        Row("std.data", "transpose_batched", (), torch_f(lambda t, F, x: x.transpose(1, 2).contiguous()),
            lambda x: x.transpose(0, 2, 1), out_shape=lambda s: (s[0], s[2], s[1]),
            inputs=mk(lambda r, m, n: [f16(r, 16, m // 16, n)])),
        Row("std.data", "permute", (), torch_f(lambda t, F, x: x.permute(*perm).contiguous()),
            lambda x: x.transpose(perm),  # tiles of 32 rows of the 64-element last axis
            constants={"T": "f16", "BR": 32, "BC": 64, **dict(zip(("P0", "P1", "P2", "P3"), perm))},
            out_shape=lambda s: tuple(s[p] for p in perm), inputs=mk(lambda r, m, n: [f16(r, 8, max(m // 8, 1), max(n // 64, 1), 64)])),
        Row("std.data", "concat", (), torch_f(lambda t, F, a, b: t.cat([a, b], 1)), lambda a, b: np.concatenate([a, b], 1),
            out_shape=lambda s: (s[0], 2 * s[1]), inputs=mk(lambda r, m, n: [f16(r, m, n // 2), f16(r, m, n // 2)])),
        Row("std.data", "gather", (), torch_f(lambda t, F, x, i: t.gather(x, 1, i)),
            lambda x, i: np.take_along_axis(x, ix(i), 1), out_shape=lambda s: s,
            inputs=mk(lambda r, m, n: [f16(r, m, n, 1), r.integers(0, n, (m, n, 1))])),
        Row("std.data", "index_select", (), torch_f(lambda t, F, x, i: t.index_select(x, 1, i)),
            lambda x, i: x[:, ix(i), :], out_shape=lambda s: s,
            inputs=mk(lambda r, m, n: [f16(r, 1, m, n), r.integers(0, m, m)])),
        Row("std.data", "scatter", (), torch_f(lambda t, F, src, i: t.empty_like(src).scatter_(1, i, src)),
            scattered, out_shape=lambda s: s, inputs=mk(lambda r, m, n: [f16(r, m, n, 1), perms(r, m, n)[..., None]])),
        Row("std.data", "pad", (), torch_f(lambda t, F, x, top, left, v: F.pad(x, (left, 8 - left, top, 2 - top), value=v)),
            padded, scalars=(1, 3, -1.5), out_shape=lambda s: (s[0] + 2, s[1] + 8),
            inputs=mk(lambda r, m, n: [f16(r, m, n - 8)])),
        Row("std.data", "repeat", (), torch_f(lambda t, F, x: x.repeat(2, 2)), lambda x: np.tile(x, (2, 2)),
            out_shape=lambda s: (2 * s[0], 2 * s[1]), inputs=mk(lambda r, m, n: [f16(r, m // 2, n // 2)])),
        Row("std.data", "tril", (), torch_f(lambda t, F, x, k: t.tril(x, k)), lambda x, k: np.tril(x, k), scalars=(5,),
            out_shape=lambda s: s, inputs=mk(lambda r, m, n: [f16(r, m, n)])),
        Row("std.data", "triu", (), torch_f(lambda t, F, x, k: t.triu(x, k)), lambda x, k: np.triu(x, k), scalars=(-5,),
            out_shape=lambda s: s, inputs=mk(lambda r, m, n: [f16(r, m, n)])),
    ]


def _nn_train_rows() -> list[Row]:
    """std.nn_train and std.nn_layers: the one-output kernels at 2^27 f16 elements against PyTorch eager (the
    backward functions autograd calls for softmax and log_softmax; rope and the GLUs composed
    of eager operations, as a model without fused kernels runs them); NumPy references from
    tests/stdlib/nn_train_kit.py."""
    import nn_train_kit as kit

    def f16(rng, *shape):
        return (rng.standard_normal(shape) * 2).astype(np.float16)

    def mk(fn):  # (shape, seed) -> inputs, from fn(rng, M, N)
        return lambda shape, seed=0: fn(np.random.default_rng(seed), *shape)

    def torch_f(expr):
        def fn(*a):
            import torch
            import torch.nn.functional as F

            return expr(torch, F, *a)
        return fn

    def rope_torch(t, F, x, cos, sin):
        a, b = x.chunk(2, dim=-1)
        c, s = cos[:, None, :].to(x.dtype), sin[:, None, :].to(x.dtype)
        return t.cat([a * c - b * s, a * s + b * c], dim=-1)

    def tables(rng, s, d):
        angle = rng.uniform(0, 6, (s, d // 2))
        return [np.cos(angle).astype(np.float32), np.sin(angle).astype(np.float32)]

    def batch_norm_ref(x, mu, var, w, b, eps):  # row r of x is channel r % channels
        c = np.arange(len(x)) % channels
        return (x - mu[c, None]) / np.sqrt(var[c, None] + eps) * w[c, None] + b[c, None]

    def batch_norm_inputs(rng, m, n):  # x of (m // channels) samples; statistics and parameters in f32
        stats = [rng.standard_normal(channels), rng.uniform(0.5, 2, channels), rng.standard_normal(channels),
                 rng.standard_normal(channels)]
        return [f16(rng, max(channels, m // channels * channels), n), *(a.astype(np.float32) for a in stats)]

    # inputs and references are functions, not lambdas: tests/test_timing.py reads every lambda
    # here as a timed contender, where a cast would be timed
    def probs_inputs(r, m, n):
        return [f16(r, m, n), kit.softmax_ref(r.standard_normal((m, n))).astype(np.float16)]

    def logprobs_inputs(r, m, n):
        return [f16(r, m, n), kit.log_softmax_ref(r.standard_normal((m, n))).astype(np.float16)]

    def embedding_ref(w, i):
        return w[i.astype(np.int64)]

    heads, dim, channels, groups = 32, 128, 64, 32
    probs = mk(probs_inputs)
    logprobs = mk(logprobs_inputs)
    tokens = lambda m, n: max(1, m * n // (heads * dim))  # noqa: E731
    spatial = lambda m, n: max(1, m * n // (16 * channels))  # noqa: E731
    return [
        Row("std.nn_train", "log_softmax", (), torch_f(lambda t, F, x: t.log_softmax(x, -1)), kit.log_softmax_ref,
            out_shape=lambda s: s, inputs=mk(lambda r, m, n: [f16(r, m, n)])),
        Row("std.nn_train", "softmax_bwd", (), torch_f(lambda t, F, dy, y: t._softmax_backward_data(dy, y, -1, y.dtype)),
            lambda dy, y: y * (dy - (dy * y).sum(-1, keepdims=True)), out_shape=lambda s: s, inputs=probs),
        Row("std.nn_train", "log_softmax_bwd", (),
            torch_f(lambda t, F, dy, y: t._log_softmax_backward_data(dy, y, -1, y.dtype)),
            lambda dy, y: dy - np.exp(y) * dy.sum(-1, keepdims=True), out_shape=lambda s: s, inputs=logprobs),
        Row("std.nn_layers", "swiglu", (), torch_f(lambda t, F, x: F.silu(x[:, 0]) * x[:, 1]),
            lambda x: kit.glu_ref(x, kit.silu), out_shape=lambda s: (s[0], s[2]),
            inputs=mk(lambda r, m, n: [f16(r, m, 2, max(1, n // 2))])),
        Row("std.nn_layers", "geglu", (), torch_f(lambda t, F, x: F.gelu(x[:, 0]) * x[:, 1]),
            lambda x: kit.glu_ref(x, kit.gelu_erf), out_shape=lambda s: (s[0], s[2]),
            inputs=mk(lambda r, m, n: [f16(r, m, 2, max(1, n // 2))])),
        Row("std.nn_layers", "rope", (), torch_f(rope_torch), lambda x, c, s: kit.rope_ref(x, c, s, False),
            out_shape=lambda s: s,
            inputs=mk(lambda r, m, n: [f16(r, tokens(m, n), heads, dim), *tables(r, tokens(m, n), dim)])),
        Row("std.nn_layers", "embedding", (), torch_f(lambda t, F, w, i: F.embedding(i, w)),
            embedding_ref, out_shape=lambda s: s,
            inputs=mk(lambda r, m, n: [f16(r, m, n), r.integers(0, m, m)])),
        Row("std.nn_layers", "batch_norm", (),
            torch_f(lambda t, F, x, mu, var, w, b, eps: F.batch_norm(x.view(-1, channels, x.shape[1]), mu, var, w, b,
                                                                    False, 0.0, eps).view(x.shape)),
            batch_norm_ref, scalars=(kit.EPS,), out_shape=lambda s: s, inputs=mk(batch_norm_inputs)),
        Row("std.nn_layers", "group_norm", (),
            torch_f(lambda t, F, x, w, b, eps: F.group_norm(x, groups, w, b, eps)),
            lambda x, w, b, eps: kit.group_norm_ref(x, w, b, groups), scalars=(kit.EPS,), out_shape=lambda s: s,
            inputs=mk(lambda r, m, n: [f16(r, 16, channels, spatial(m, n)), f16(r, channels), f16(r, channels)])),
    ]


def _moe_rows() -> list[Row]:
    """std.moe: a layer of 64 experts, top-8, against PyTorch eager's equivalent (softmax or
    sigmoid and topk; DeepSeek-V3's group-limited routing of 256 experts in 8 groups as vLLM's
    grouped_topk; bincount; a stable sort with bincount and the padded runs' offsets; the
    row gather and the weighted sum of a model without fused kernels): the gate weights, counts,
    offsets and rows are compared (ids and the sorted order: tests/gpu/test_moe_gpu.py).  The routing rows take 2^21
    tokens' logits (256 MiB of f16; sigmoid's in f32, as a router's GEMM gives them, 2^20
    tokens), the histogram 2^26 i64 ids, the align step 2^17 ids (a prefill
    batch's), the row movers rows of 4096 f16.  Buffers the operator
    writes besides the compared one are inputs (their bytes counted)."""
    import moe_kit as kit

    E, K, BLOCK, D = 64, 8, 64, 4096

    def torch_f(expr):
        def fn(*a):
            import torch

            return expr(torch, *a)
        return fn

    def mk(fn):  # (shape, seed) -> inputs, from fn(rng, elements)
        return lambda shape, seed=0: fn(np.random.default_rng(seed), shape[0] * shape[1])

    def gate_inputs(dtype):
        def fn(r, n):
            m = max(1, n // E)
            return [kit.logits(r, m, E, dtype), np.zeros((m, K), np.int32)]
        return fn

    def grouped_inputs(r, n):  # DeepSeek-V3's 256 experts in 8 groups, each group offset apart
        m = max(1, n // 512)  # (no near-tie between groups, whose choice PyTorch and tlc might make apart)
        x = r.standard_normal((m, 256), dtype=np.float32) + np.repeat(np.arange(8, dtype=np.float32) * 0.5, 32)
        return [x, np.zeros(256, np.float32), np.zeros((m, K), np.int32)]

    def grouped_torch(t, x, bias, ids, *_):  # vLLM's grouped_topk in eager PyTorch
        s = x.sigmoid()
        sel = s + bias
        group_score = sel.view(len(x), 8, -1).topk(2, dim=-1).values.sum(-1)
        kept = t.zeros_like(group_score).scatter_(1, group_score.topk(3, dim=-1).indices, 1)
        mask = kept.unsqueeze(-1).expand(len(x), 8, 32).reshape(len(x), 256)
        top = sel.masked_fill(mask == 0, float("-inf")).topk(K, dim=-1).indices
        w = s.gather(1, top)
        return w / w.sum(-1, keepdim=True) * 2.5

    def grouped_weights(x, bias, ids, *_):
        return kit.grouped_ref(x, bias, K, 8, 3, 2.5, True, True)[0]

    def ids_of(r, n):  # n expert ids, skewed as a router's (not distinct a token: drawn at once)
        return r.choice(E, max(1, n), p=r.dirichlet(np.full(E, 0.3))).astype(np.int64)

    def align_inputs(r, n):
        ids = ids_of(r, min(n, 1 << 17))
        P, NB = kit.align_capacity(ids.size, E, BLOCK)
        return [ids, np.zeros(P, np.int32), np.zeros(NB, np.int32), np.zeros(ids.size, np.int32)]

    def align_torch(t, ids, *_):
        ids = ids.long()
        t.sort(ids, stable=True)
        padded = (t.bincount(ids, minlength=E) + BLOCK - 1) // BLOCK * BLOCK
        return t.cat([padded.new_zeros(1), padded.cumsum(0)]).int()

    def bincount(ids):
        return np.bincount(ids.astype(np.int64), minlength=E)

    def padded_offsets(ids, *_):
        return kit.align_ref(ids.astype(np.int64), E, BLOCK)[3]

    def layout(n):  # (D, BLOCK) of the row movers: a model's rows at full size, narrow in the dry run
        return (D, BLOCK) if n >= 1 << 20 else (64, 4)

    def padding(d):  # the rows an align step may add (E * (BLOCK - 1)), from the row width
        return E * (layout(1 << 20 if d == D else 0)[1] - 1)

    def rows_inputs(r, n):  # x[M, D] and the sorted order of M * K pairs, padded as vLLM's buffer
        d, block = layout(n)
        m = max(1, n // (d * K))
        rows = kit.align_ref(kit.routed(r, m, E, K), E, block)[0]
        return [(r.standard_normal((m, d), dtype=np.float32) * 2).astype(np.float16),
                np.concatenate([rows, np.full(m * K + padding(d) - len(rows), m * K, np.int32)])]

    def permute_torch(t, x, s, k):
        s = s.long()
        y = x[(s // k).clamp(max=x.shape[0] - 1)]
        y[s >= x.shape[0] * k] = 0
        return y

    def permuted(x, s, k):
        s = s.astype(np.int64)
        return np.where((s < len(x) * k)[:, None], x[np.minimum(s // k, len(x) - 1)], 0)

    def unpermute_inputs(r, n):  # y[P, D], each token's K rows, its gates
        d, block = layout(n)
        m = max(1, n // (d * K))
        positions = kit.align_ref(kit.routed(r, m, E, K), E, block)[2].reshape(m, K)
        y = (r.standard_normal((m * K + padding(d), d), dtype=np.float32) * 2).astype(np.float16)
        return [y, positions, r.random((m, K)).astype(np.float32)]

    def unpermuted(y, pos, w):
        return (y[pos.astype(np.int64)] * w[..., None]).sum(1)

    def topk_weights(score):
        def fn(x, ids):
            return kit.topk_ref(x, K, score, False)[0]
        return fn

    gates = dict(T="f16")  # BE = 64 and BM = 32 tokens a block from stdlib/config.json (E <= 64)
    return [
        Row("std.moe", "topk_softmax", (),
            torch_f(lambda t, x, ids: t.topk(t.softmax(x, -1, dtype=t.float32), K).values),
            topk_weights(kit.softmax), constants=gates, out_dtype="f32", out_shape=lambda s: (s[0], K),
            inputs=mk(gate_inputs("f16"))),
        Row("std.moe", "topk_sigmoid", (), torch_f(lambda t, x, ids: t.topk(t.sigmoid(x), K).values),
            topk_weights(kit.sigmoid), "f32", constants={**gates, "T": "f32"}, out_dtype="f32",
            out_shape=lambda s: (s[0], K),
            inputs=mk(lambda r, n: gate_inputs("f32")(r, n // 2))),
        Row("std.moe", "topk_grouped", (), torch_f(grouped_torch), grouped_weights, "f32", scalars=(8, 3, 2.5),
            constants={"T": "f32", "BE": 256, "GB": 8}, out_dtype="f32", out_shape=lambda s: (s[0], K),
            inputs=mk(grouped_inputs)),
        Row("std.moe", "expert_histogram", (), torch_f(lambda t, ids: t.bincount(ids, minlength=E).int()),
            bincount, "i64", constants={"I": "i64"}, accumulates=True,
            out_dtype="i32", out_shape=lambda s: (E,), inputs=mk(lambda r, n: [ids_of(r, n // 2)])),
        Row("std.moe", "moe_align_block_size", (), torch_f(align_torch), padded_offsets, "i64",
            constants={"I": "i64", "BLOCK": BLOCK}, out_dtype="i32", out_shape=lambda s: (E + 1,),
            inputs=mk(align_inputs)),
        Row("std.moe", "moe_permute", (), torch_f(permute_torch), permuted, scalars=(K,),
            out_shape=lambda s: (s[0] * K + padding(s[1]), s[1]), inputs=mk(rows_inputs)),
        Row("std.moe", "moe_unpermute", (),
            torch_f(lambda t, y, pos, w: (y[pos.long()] * w[..., None]).sum(1)), unpermuted,
            out_shape=lambda s: ((s[0] - padding(s[1])) // K, s[1]), inputs=mk(unpermute_inputs)),
    ]


def _broadcast_rows() -> list[Row]:
    """std.broadcast: each operator at y of (4, 4, M / 16, N) f16 elements (2^27), its first
    operand whole, the others broadcast along two dimensions each (b: (1, 4, 1, N), a bias per
    head; c: (4, 1, M / 16, 1), a value per position) as PyTorch eager broadcasts them."""
    import broadcast_kit as kit
    from test_elementwise import inputs

    torch_ops = {"add": lambda t, a, b: a + b, "sub": lambda t, a, b: a - b, "mul": lambda t, a, b: a * b,
                 "div": lambda t, a, b: a / b, "maximum": lambda t, a, b: t.maximum(a, b),
                 "minimum": lambda t, a, b: t.minimum(a, b), "pow": lambda t, a, b: t.pow(a, b),
                 "where": lambda t, c, a, b: t.where(c, a, b), "clamp": lambda t, x, lo, hi: t.clamp(x, lo, hi),
                 "lerp": lambda t, a, b, w: t.lerp(a, b, w)}
    domains = {"pow": ("pos", "unit")}  # 2^27 draws of the test's domains reach f16's overflow

    def torch_f(expr):
        def fn(*a):
            import torch

            return expr(torch, *a)
        return fn

    def shapes(m, n):
        full = (4, 4, max(1, m // 16), n)
        return [full, (1, 4, 1, n), (4, 1, full[2], 1)]

    def make(op):
        def fn(shape, seed=0):
            rng = np.random.default_rng(seed)
            doms = domains.get(op.name, op.domains)
            return [inputs(rng, d, "bool" if d == "bool" else "f16", s) for d, s in zip(doms, shapes(*shape))]
        return fn

    return [Row("std.broadcast", op.name, (), torch_f(torch_ops[op.name]), op.ref, out_shape=lambda s: s,
                inputs=make(op)) for op in kit.OPS]


@functools.lru_cache(maxsize=None)
def all_rows() -> tuple:
    """Every row, in table order (built on first use: the tables are tests/stdlib's)."""
    tables_folder()
    return tuple(_elementwise_rows() + _cast_rows() + _reduce_rows() + _data_rows() + _nn_train_rows() + _moe_rows()
                 + _broadcast_rows())
    # std.data, ...: their rows here


TABLES_ENV = "TLC_OPS_TABLES"  # the tables' folder, for a tlc installed apart from its checkout


def tables_folder() -> Path:
    """The folder of the table-driven tests' tables (tests/stdlib of this source checkout, or
    $TLC_OPS_TABLES, which bench/ops.py sets to its own checkout's), on sys.path: the rows take
    their operators' domains, scalars and NumPy references from there."""
    given = os.environ.get(TABLES_ENV)
    folder = Path(given) if given else Path(__file__).resolve().parents[2] / "tests" / "stdlib"
    if not (folder / "test_elementwise.py").is_file():
        raise TlcError(f"the ops suite reads its operators' tables from a source checkout's tests/stdlib, and "
                       f"this tlc ({Path(__file__).resolve().parents[1]}) is not one; run it from a clone of the "
                       "repository (pip install -e .) or set TLC_OPS_TABLES to a clone's tests/stdlib")
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
    return folder
