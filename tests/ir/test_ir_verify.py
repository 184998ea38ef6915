"""The verifier: one malformed kernel per rule, each rejected with its exact message."""
import dataclasses

import pytest

from tlc.diagnostics import Span, TlcError
from tlc.dtypes import BOOL, F16, F32, I32, DTYPES
from tlc.ir import (Assign, Atomic, BinOp, Break, Buffer, BufferRef, Call, Const, Continue, Copy,
                    Fill, For, Gemm, If, IRVerifyError, Kernel, LetScalar, Load, Param, Parallel,
                    Print, Reduce, Region, Scan, Select, Store, Sync, UnaryOp, Var, samples, verify)

I64 = DTYPES["i64"]
i, k, n, x = Var("i", I32), Var("k", I32), Var("n", I32), Var("x", F32)
ZERO, ONE, F1 = Const(0, I32), Const(1, I32), Const(1.0, F32)


def lt(a, b):
    return BinOp("<", a, b, BOOL)


def make(*body, **changes) -> Kernel:
    """A valid kernel around `body`; `changes` replace Kernel fields."""
    base = Kernel(
        name="t",
        params=(Param("A", "tensor", F16, ("M", "K")), Param("C", "tensor", F16, ("M", 128)),
                Param("n", "scalar", I32)),
        grid=(Const(4, I32),), block_vars=("bx",), threads=128,
        buffers=(Buffer("As", "shared", F16, (128, 32)), Buffer("Bs", "shared", F16, (32, 128)),
                 Buffer("acc", "fragment", F32, (128, 128)), Buffer("row", "fragment", F32, (128,)),
                 Buffer("t", "local", F32, (4,))),
        body=tuple(body), constants=(("BM", 128), ("T", F16)))
    return dataclasses.replace(base, **changes)


def par(*body, extents=(128,), names=("i",)):
    return Parallel(names, extents, tuple(body))


def loop(*body, kind="serial", stages=0, step=ONE, start=ZERO, stop=n):
    return For("k", start, stop, step, kind, stages, tuple(body))


CASES = {
    # kernel header
    "grid rank": (make(grid=(ONE,) * 4, block_vars=("a", "b", "c", "d")),
                  "grid has 4 dimensions; a kernel has 1 to 3"),
    "block vars": (make(grid=(ONE, ONE)), "grid has 2 dimensions but 1 block variable"),
    "threads": (make(threads=0), "threads must be positive, got 0"),
    "param kind": (make(params=(Param("A", "matrix", F16, (4,)),)),
                   "param 'A' has kind 'matrix'; expected 'tensor' or 'scalar'"),
    "scalar shape": (make(params=(Param("n", "scalar", I32, (4,)),)), "scalar param 'n' has a shape"),
    "tensor dim": (make(params=(Param("A", "tensor", F16, (4, 0)),)),
                   "param 'A' axis 1 is 0; expected a positive size or a shape symbol"),
    "symbol clash": (make(params=(Param("n", "scalar", I32), Param("A", "tensor", F16, ("n",)))),
                     "shape symbol 'n' of 'A' is also a scalar"),
    "grid dtype": (make(grid=(F1,)), "grid extent 1.0 has dtype f32, not an integer"),
    "buffer scope": (make(buffers=(Buffer("X", "global", F32, (4,)),)),
                     "buffer 'X' has scope 'global'; expected shared, fragment or local"),
    "buffer dim": (make(buffers=(Buffer("X", "shared", F32, (0,)),)),
                   "buffer 'X' axis 0 is 0; expected a positive int"),
    "duplicate": (make(buffers=(Buffer("A", "shared", F32, (4,)),)), "'A' is declared twice"),
    # names and scalars
    "unknown name": (make(LetScalar("y", I32, Var("q", I32))), "unknown name 'q'"),
    "tensor as scalar": (make(LetScalar("y", F16, Var("A", F16))), "'A' is a tensor, not a scalar"),
    "dtype as scalar": (make(LetScalar("y", I32, Var("T", I32))), "'T' is a dtype, not a scalar"),
    "var dtype": (make(LetScalar("y", I64, Var("M", I64))), "'M' is i32 but is used as i64"),
    "let scope": (make(If(lt(n, ONE), (LetScalar("y", I32, ONE),)), Assign("y", ZERO)),
                  "unknown name 'y'"),
    "shadowing": (make(LetScalar("y", I32, ONE), loop(LetScalar("y", I32, ONE))),
                  "'y' is declared twice"),
    "let dtype": (make(LetScalar("y", I32, F1)), "value of 'y' is f32 but 'y' is declared i32"),
    "assign dtype": (make(LetScalar("y", I32, ONE), Assign("y", F1)),
                     "value of 'y' is f32 but 'y' is declared i32"),
    "assign non-let": (make(Assign("n", ONE)),
                       "cannot assign to 'n': only scalars declared by let can be assigned"),
    "assign across parallel": (make(LetScalar("y", I32, ONE), par(Assign("y", i))),
                               "'y' is declared outside parallel and assigned inside it; each "
                               "index needs its own scalar"),
    # expressions
    "binary op": (make(LetScalar("y", I32, BinOp("@", n, n, I32))), "unknown binary operator '@'"),
    "compare dtype": (make(LetScalar("y", I32, BinOp("<", n, n, I32))), "'<' yields bool, not i32"),
    "narrowing": (make(LetScalar("y", F16, BinOp("+", F1, Const(1.0, F16), F16))),
                  "operand of '+' is f32, which does not convert to f16 without a cast"),
    "bit op on float": (make(LetScalar("y", F32, BinOp("<<", F1, F1, F32))),
                        "'<<' needs integer operands, got f32"),
    "unary op": (make(LetScalar("y", I32, UnaryOp("+", n, I32))), "unknown unary operator '+'"),
    "invert float": (make(LetScalar("y", F32, UnaryOp("~", F1, F32))),
                     "'~' needs an integer operand, got f32"),
    "unknown function": (make(LetScalar("y", F32, Call("gelu", (F1,), F32))),
                         "unknown function 'gelu'"),
    "arity": (make(LetScalar("y", F32, Call("pow", (F1,), F32))), "'pow' takes 2 arguments, got 1"),
    "where condition": (make(LetScalar("y", F32, Select(n, F1, F1, F32))),
                        "condition of where has dtype i32, not bool"),
    "where branches": (make(LetScalar("y", F32, Select(lt(n, n), F1, Const(1.0, F16), F32))),
                       "branches of where are f32 and f16 but the result is f32"),
    "load non-tensor": (make(LetScalar("y", I32, Load("n", (ZERO,), I32))),
                        "'n' is not a tensor or buffer"),
    "index count": (make(LetScalar("y", F16, Load("A", (ZERO,), F16))),
                    "'A' has rank 2 but is indexed with 1 index"),
    "index dtype": (make(LetScalar("y", F16, Load("A", (ZERO, F1), F16))),
                    "index 1 of 'A' has dtype f32, not an integer"),
    "load dtype": (make(LetScalar("y", F32, Load("A", (ZERO, ZERO), F32))),
                   "load of 'A' has dtype f32 but 'A' is f16"),
    # copy
    "copy global to global": (make(Copy(Region("A", (ZERO, ZERO), (4, 4)),
                                        Region("C", (ZERO, ZERO), (4, 4)))),
                              "copy from 'A' to 'C': both sides are global tensors"),
    "copy whole tensor": (make(Copy(BufferRef("A"), BufferRef("As"))),
                          "copy of the whole tensor 'A' needs a region"),
    "region rank": (make(Copy(Region("A", (ZERO,), (128,)), BufferRef("row"))),
                    "region of 'A' has 1 offset but 'A' has rank 2"),
    "region extents": (make(Copy(Region("A", (ZERO, ZERO), (128,)), BufferRef("row"))),
                       "region of 'A' has 2 offsets but 1 extent"),
    "copy shapes": (make(Copy(BufferRef("As"), BufferRef("Bs"))),
                    "copy from 'As' [128, 32] to 'Bs' [32, 128]: shapes differ"),
    # gemm
    "gemm operand scope": (make(Gemm("A", "Bs", "acc")),
                           "gemm operand 'A' must be a shared or fragment buffer, not global"),
    "gemm accumulator scope": (make(Gemm("As", "Bs", "Bs")),
                               "gemm accumulator 'Bs' must be a fragment buffer, not shared"),
    "gemm rank": (make(Gemm("As", "Bs", "row")), "gemm operand 'row' must have rank 2, got 1"),
    "gemm dtypes": (make(Gemm("As", "acc", "acc")),
                    "gemm operands 'As' (f16) and 'acc' (f32) differ in dtype"),
    "gemm shapes": (make(Gemm("Bs", "As", "acc", trans_a=True)),
                    "gemm shapes disagree: 'Bs'.T [32, 128] @ 'As' [128, 32] into 'acc' [128, 128]"),
    # fill, reduce, atomics
    "fill target": (make(Fill("A", Const(0.0, F16))),
                    "fill target 'A' must be a shared, fragment or local buffer, not global"),
    "fill dtype": (make(Fill("As", F1)), "fill value is f32 but 'As' is f16"),
    "reduce kind": (make(Reduce("prod", "acc", "row")), "unknown reduction 'prod'"),
    "reduce dim": (make(Reduce("sum", "acc", "row", 2)),
                   "reduce_sum dim 2 is out of range for 'acc' of rank 2"),
    "reduce shape": (make(Reduce("max", "acc", "t", 1)),
                     "reduce_max of 'acc' [128, 128] along dim 1 gives [128], but 't' is [4]"),
    "reduce scope": (make(Reduce("sum", "A", "row")),
                     "reduce source 'A' must be a shared, fragment or local buffer, not global"),
    "scan of a fragment into another": (make(Scan("sum", "acc", "row", 1)),
                                         "cumsum of a fragment runs in place along its last dimension, not 'acc' "
                                         "into 'row' along dim 1"),
    "scan of a fragment's columns": (make(Scan("max", "acc", "acc", 0)),
                                     "cummax of a fragment runs in place along its last dimension, not 'acc' "
                                     "into 'acc' along dim 0"),
    "atomic kind": (make(Atomic("mul", "C", (ZERO, ZERO), Const(1.0, F16))), "unknown atomic 'mul'"),
    "atomic scope": (make(Atomic("add", "acc", (ZERO, ZERO), F1)),
                     "atomic_add target 'acc' must be a global tensor or a shared buffer"),
    "atomic dtype": (make(Atomic("max", "C", (ZERO, ZERO), F1)),
                     "atomic_max into 'C' of dtype f16 is given f32; insert a cast"),
    "store dtype": (make(Store("C", (ZERO, ZERO), F1)),
                    "store into 'C' of dtype f16 is given f32; insert a cast"),
    "store rank": (make(Store("row", (ZERO, ZERO), F1)),
                   "'row' has rank 1 but is indexed with 2 indices"),
    # loops and control flow
    "loop kind": (make(loop(kind="vector")), "unknown loop kind 'vector'"),
    "loop bound": (make(loop(stop=F1)), "bound of loop 'k' has dtype f32, not an integer"),
    "loop step": (make(loop(step=ZERO)), "loop 'k' has step 0"),
    "stages": (make(loop(kind="pipelined")), "pipelined loop 'k' needs stages >= 1, got 0"),
    "parallel extent": (make(par(extents=(0,))), "parallel extent of 'i' must be positive, got 0"),
    "parallel vars": (make(par(names=("i", "j"))), "parallel has 2 variables but 1 extent"),
    "nested parallel": (make(par(par(names=("j",)))), "parallel nested inside parallel"),
    "if condition": (make(If(n, ())), "if condition has dtype i32, not bool"),
    "break outside loop": (make(Break()), "break outside a serial loop"),
    "break in pipelined": (make(loop(Break(), kind="pipelined", stages=2)),
                           "break outside a serial loop"),
    "continue across parallel": (make(loop(par(Continue()))), "continue outside a serial loop"),
    "copy in parallel": (make(par(Copy(BufferRef("As"), BufferRef("As")))), "copy inside parallel"),
    "gemm in parallel": (make(par(Gemm("As", "Bs", "acc"))), "gemm inside parallel"),
    "sync in parallel": (make(par(Sync())), "sync inside parallel"),
    "print per thread outside": (make(Print("x", (), per_thread=True)),
                                 "print outside parallel cannot be per_thread"),
    "print once inside": (make(par(Print("x", ()))), "print inside parallel must be per_thread"),
    "local escapes parallel": (make(par(Store("t", (ZERO,), F1)), Store("C", (ZERO, ZERO),
                                    Const(1.0, F16)), LetScalar("y", F32, Load("t", (ZERO,), F32))),
                               "local buffer 't' is written inside parallel and used outside it"),
}


@pytest.mark.parametrize("rule", list(CASES))
def test_rule(rule):
    kernel, message = CASES[rule]
    with pytest.raises(IRVerifyError) as e:
        verify(kernel)
    assert str(e.value) == f"kernel 't': {message}"
    assert isinstance(e.value, TlcError)


def test_well_formed_kernels_pass():
    for k in (samples.matmul(), samples.softmax(), make(par(Store("t", (ZERO,), F1),
                                                          Store("row", (i,), Load("t", (ZERO,), F32))))):
        assert verify(k) is k
    # the same scalar name in sibling scopes is two declarations, not one declared twice
    verify(make(If(lt(n, ONE), (LetScalar("y", I32, ONE),), (LetScalar("y", I32, ZERO),))))
    # break inside a serial loop inside a parallel body
    verify(make(par(loop(If(lt(Var("k", I32), i), (Break(),))))))
    verify(make(Scan("sum", "acc", "acc", 1), Scan("min", "row", "row", 0, reverse=True)))  # in registers


def test_error_carries_the_node_span():
    span = Span("g.tl", 3, 5, 3, 9)
    with pytest.raises(IRVerifyError) as e:
        verify(make(Assign("n", ONE, span=span)))
    assert e.value.span == span and e.value.kernel == "t"
