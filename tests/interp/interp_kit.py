"""Short constructors for hand-built IR in the interpreter tests (no scheduler needed)."""
from __future__ import annotations

from tlc.dtypes import BOOL, DTYPES, F32, I32
from tlc.ir import BinOp, Const, Kernel, Load, Param, Var
from tlc.ir.nodes import COMPARE_OPS, LOGIC_OPS

dt = DTYPES


def c(value, dtype=None):
    if dtype is None:
        dtype = BOOL if isinstance(value, bool) else I32 if isinstance(value, int) else F32
    return Const(value, dtype)


def v(name, dtype=I32):
    return Var(name, dtype)


def op(o, a, b, dtype=None):
    if dtype is None:
        dtype = BOOL if o in COMPARE_OPS + LOGIC_OPS else a.dtype
    return BinOp(o, a, b, dtype)


def ld(name, *idx, dtype=F32):
    return Load(name, tuple(idx), dtype)


def tensor(name, dtype, *shape):
    return Param(name, "tensor", dtype, tuple(shape))


def scalar(name, dtype):
    return Param(name, "scalar", dtype)


def kernel(params, body, buffers=(), grid=(c(1),), block_vars=None, threads=128, name="k"):
    block_vars = block_vars or ("bx", "by", "bz")[:len(grid)]
    return Kernel(name, tuple(params), tuple(grid), tuple(block_vars), threads, tuple(buffers),
                  tuple(body))


def rand(rng, shape, dtype, lo=-4.0, hi=4.0):
    """Random non-zero values of a tlc dtype (zeros replaced, so no test passes on zeros)."""
    npdt = dtype.numpy()
    if dtype.is_float:
        x = rng.uniform(lo, hi, shape)
        x[x == 0] = 0.5
        return x.astype(npdt)
    x = rng.integers(int(lo), int(hi), shape, endpoint=True)
    x[x == 0] = 1
    return x.astype(npdt)
