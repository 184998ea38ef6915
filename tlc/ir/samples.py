"""Hand-built IR of two reference kernels: the GEMM of LANGUAGE.md section 2 and a row softmax.

Owns nothing the compiler depends on.  These show the scheduler what IR a `.tl` kernel becomes
(constants bound, casts explicit), and give the printer, verifier, interpreter and code
generator the same kernels to test before the scheduler exists.
"""
from __future__ import annotations

from ..dtypes import BOOL, F16, F32, I32, DType
from .nodes import (BinOp, Buffer, BufferRef, Call, Const, Copy, Expr, Fill, For, Gemm, Kernel,
                    Load, Param, Parallel, Reduce, Region, Select, Store, Var)


def i32(v: int) -> Const:
    return Const(v, I32)


def add(a: Expr, b: Expr) -> BinOp:
    return BinOp("+", a, b, a.dtype)


def mul(a: Expr, b: Expr) -> BinOp:
    return BinOp("*", a, b, a.dtype)


def cdiv(a: Expr, b: int) -> BinOp:
    """`cdiv(a, b)` as the scheduler spells it: `(a + (b - 1)) // b`."""
    return BinOp("//", add(a, i32(b - 1)), i32(b), I32)


def matmul(dtype: DType = F16, BM: int = 128, BN: int = 128, BK: int = 32, stages: int = 3,
           threads: int = 128) -> Kernel:
    """`C = A @ B` with A: T[M, K], B: T[K, N], C: T[M, N], accumulated in an f32 fragment."""
    M, N, K = (Var(s, I32) for s in "MNK")
    bx, by, k = Var("bx", I32), Var("by", I32), Var("k", I32)
    body = (
        Fill("acc", Const(0.0, F32)),
        For("k", i32(0), cdiv(K, BK), i32(1), "pipelined", stages, (
            Copy(Region("A", (mul(by, i32(BM)), mul(k, i32(BK))), (BM, BK)), BufferRef("As")),
            Copy(Region("B", (mul(k, i32(BK)), mul(bx, i32(BN))), (BK, BN)), BufferRef("Bs")),
            Gemm("As", "Bs", "acc"),
        )),
        Copy(BufferRef("acc"), Region("C", (mul(by, i32(BM)), mul(bx, i32(BN))), (BM, BN))),
    )
    return Kernel(
        name="matmul",
        params=(Param("A", "tensor", dtype, ("M", "K")), Param("B", "tensor", dtype, ("K", "N")),
                Param("C", "tensor", dtype, ("M", "N"))),
        grid=(cdiv(N, BN), cdiv(M, BM)), block_vars=("bx", "by"), threads=threads,
        buffers=(Buffer("As", "shared", dtype, (BM, BK)), Buffer("Bs", "shared", dtype, (BK, BN)),
                 Buffer("acc", "fragment", F32, (BM, BN))),
        body=body,
        constants=(("T", dtype), ("BM", BM), ("BN", BN), ("BK", BK), ("stages", stages)),
    )


def softmax(dtype: DType = F32, BM: int = 4, BN: int = 64, threads: int = 128) -> Kernel:
    """`Y = softmax(X, axis=1)` for X, Y: T[M, N] with N <= BN, computed in f32.

    Columns past N read as 0 from the copy, so a parallel pass sets them to -inf before the
    max; rows past M compute garbage that the final copy does not write.
    """
    N = Var("N", I32)
    by, i, j = Var("by", I32), Var("i", I32), Var("j", I32)
    xs = Load("xs", (i, j), F32)
    body = (
        Copy(Region("X", (mul(by, i32(BM)), i32(0)), (BM, BN)), BufferRef("xs")),
        Parallel(("i", "j"), (BM, BN), (
            Store("xs", (i, j), Select(BinOp("<", j, N, BOOL), xs, Const(float("-inf"), F32), F32)),
        )),
        Reduce("max", "xs", "mx", 1),
        Parallel(("i", "j"), (BM, BN), (
            Store("xs", (i, j), Call("exp", (BinOp("-", xs, Load("mx", (i,), F32), F32),), F32)),
        )),
        Reduce("sum", "xs", "sm", 1),
        Parallel(("i", "j"), (BM, BN), (
            Store("xs", (i, j), BinOp("/", xs, Load("sm", (i,), F32), F32)),
        )),
        Copy(BufferRef("xs"), Region("Y", (mul(by, i32(BM)), i32(0)), (BM, BN))),
    )
    return Kernel(
        name="softmax",
        params=(Param("X", "tensor", dtype, ("M", "N")), Param("Y", "tensor", dtype, ("M", "N"))),
        grid=(cdiv(Var("M", I32), BM),), block_vars=("by",), threads=threads,
        buffers=(Buffer("xs", "fragment", F32, (BM, BN)), Buffer("mx", "fragment", F32, (BM,)),
                 Buffer("sm", "fragment", F32, (BM,))),
        body=body,
        constants=(("T", dtype), ("BM", BM), ("BN", BN)),
    )
