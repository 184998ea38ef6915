"""Snapshots of `print_kernel`: the text is stable, one statement per line, bodies indented."""
from dataclasses import dataclass

from tlc.dtypes import BF16, BOOL, F16, F32, I32, DTYPES
from tlc.ir import (Assign, Atomic, BinOp, Break, Buffer, BufferRef, Call, Cast, Const, Continue,
                    Copy, Fill, For, Gemm, If, Kernel, LetScalar, Load, Param, Parallel, Print,
                    Reduce, Region, Select, Store, Sync, UnaryOp, Var, print_expr, print_kernel,
                    samples, verify)

I64 = DTYPES["i64"]


def test_matmul_sample():
    assert print_kernel(samples.matmul()) == """\
kernel matmul(A: f16[M, K], B: f16[K, N], C: f16[M, N]):
  const T=f16, BM=128, BN=128, BK=32, stages=3
  grid (bx, by) in ((N + 127) // 128, (M + 127) // 128) threads=128
  shared As: f16[128, 32]
  shared Bs: f16[32, 128]
  fragment acc: f32[128, 128]
  fill acc = 0.0
  for k in pipelined(0, (K + 31) // 32, 1, stages=3):
    copy A[by * 128, k * 32]<128, 32> -> As
    copy B[k * 32, bx * 128]<32, 128> -> Bs
    gemm acc += As @ Bs
  copy acc -> C[by * 128, bx * 128]<128, 128>
"""


def test_softmax_sample():
    assert print_kernel(samples.softmax(F16, BM=2, BN=32)) == """\
kernel softmax(X: f16[M, N], Y: f16[M, N]):
  const T=f16, BM=2, BN=32
  grid (by) in ((M + 1) // 2) threads=128
  fragment xs: f32[2, 32]
  fragment mx: f32[2]
  fragment sm: f32[2]
  copy X[by * 2, 0]<2, 32> -> xs
  for i, j in parallel(2, 32):
    xs[i, j] = where(j < N, xs[i, j], -inf)
  reduce_max xs -> mx dim=1
  for i, j in parallel(2, 32):
    xs[i, j] = exp(xs[i, j] - mx[i])
  reduce_sum xs -> sm dim=1
  for i, j in parallel(2, 32):
    xs[i, j] = xs[i, j] / sm[i]
  copy xs -> Y[by * 2, 0]<2, 32>
"""


@dataclass(frozen=True)
class RowMajor:  # stands in for the scheduler's layout objects, which the printer only shows
    threads: int

    def __str__(self):
        return f"row_major(threads={self.threads})"


def test_every_statement_and_buffer_annotation():
    i, n, s = Var("i", I32), Var("n", I32), Var("s", F32)
    k = Kernel(
        name="all", params=(Param("X", "tensor", BF16, ("n", 64)), Param("n0", "scalar", I32)),
        grid=(Const(2, I32), Const(3, I32), Const(1, I32)), block_vars=("bx", "by", "bz"),
        threads=64,
        buffers=(Buffer("S", "shared", BF16, (16, 64), smem_offset=0),
                 Buffer("W", "shared", BF16, (64, 64), smem_offset=2048),
                 Buffer("F", "fragment", F32, (16, 64), layout=RowMajor(64)),
                 Buffer("R", "fragment", F32, (16,)), Buffer("L", "local", I32, (4,))),
        body=(
            Copy(Region("X", (Var("bx", I32), Const(0, I32)), (16, 64)), BufferRef("S")),
            Sync(),
            Copy(BufferRef("S"), BufferRef("F")),
            Gemm("S", "W", "F", trans_b=True),
            Reduce("absmax", "F", "R", 1, clear=False),
            Fill("L", Const(7, I32)),
            LetScalar("s", F32, Const(1.5, F32)),
            Print("s=%f\n", (s,)),
            For("k", Const(0, I32), n, Const(2, I32), "serial", 0, (
                If(BinOp(">", Var("k", I32), Const(8, I32), BOOL), (Break(),), (Continue(),)),
                Assign("s", BinOp("*", s, Const(2.0, F32), F32)),
            )),
            For("u", Const(0, I32), Const(4, I32), Const(1, I32), "unroll", 0, (
                Store("L", (Var("u", I32),), UnaryOp("-", Var("u", I32), I32)),
            )),
            Parallel(("i",), (16,), (
                If(UnaryOp("not", BinOp("<", i, n, BOOL), BOOL), (
                    Atomic("add", "X", (i, Const(0, I32)), Cast(s, BF16)),
                )),
                Store("R", (i,), Select(BinOp("and", BinOp(">=", i, Const(2, I32), BOOL),
                                                      Const(True, BOOL), BOOL),
                                        Call("pow", (Load("R", (i,), F32), Const(2.0, F32)), F32),
                                        Call("exp", (BinOp("max", s, Const(-1.0, F32), F32),), F32),
                                        F32)),
                Print("%d\n", (Cast(i, I64),), per_thread=True),
            )),
        ),
        constants=(("BM", 16), ("scale", 0.5), ("flag", True), ("T", BF16)),
        smem_bytes=10240,
    )
    verify(k)
    assert print_kernel(k) == """\
kernel all(X: bf16[n, 64], n0: i32):
  const BM=16, scale=0.5, flag=True, T=bf16
  grid (bx, by, bz) in (2, 3, 1) threads=64 smem=10240
  shared S: bf16[16, 64] @0
  shared W: bf16[64, 64] @2048
  fragment F: f32[16, 64] layout=row_major(threads=64)
  fragment R: f32[16]
  local L: i32[4]
  copy X[bx, 0]<16, 64> -> S
  sync
  copy S -> F
  gemm F += S @ W.T
  reduce_absmax F -> R dim=1 accumulate
  fill L = 7
  let s: f32 = 1.5
  print 's=%f\\n', s
  for k in range(0, n, 2):
    if k > 8:
      break
    else:
      continue
    s = s * 2.0
  for u in unroll(0, 4, 1):
    L[u] = -u
  for i in parallel(16):
    if not i < n:
      atomic_add X[i, 0], bf16(s)
    R[i] = where(i >= 2 and True, pow(R[i], 2.0), exp(max(s, -1.0)))
    print[per thread] '%d\\n', i64(i)
"""


def test_expression_parentheses_follow_python_precedence():
    a, b, c = (Var(x, I32) for x in "abc")

    def op(o, x, y, dt=I32):
        return BinOp(o, x, y, dt)

    assert print_expr(op("*", op("+", a, b), c)) == "(a + b) * c"
    assert print_expr(op("+", a, op("*", b, c))) == "a + b * c"
    assert print_expr(op("-", a, op("-", b, c))) == "a - (b - c)"
    assert print_expr(op("-", op("-", a, b), c)) == "a - b - c"
    assert print_expr(op("**", op("**", a, b), c)) == "(a ** b) ** c"
    assert print_expr(op("**", a, op("**", b, c))) == "a ** b ** c"
    assert print_expr(UnaryOp("-", op("+", a, b), I32)) == "-(a + b)"
    assert print_expr(op("<", op("<", a, b, BOOL), c, BOOL)) == "(a < b) < c"
    assert print_expr(op("&", a, op("<<", b, c))) == "a & b << c"
    assert print_expr(op("or", op("and", Var("p", BOOL), Var("q", BOOL), BOOL),
                         UnaryOp("not", Var("r", BOOL), BOOL), BOOL)) == "p and q or not r"


def test_constants_show_dtype_unless_default():
    assert print_expr(Const(1, I32)) == "1"
    assert print_expr(Const(1, I64)) == "1:i64"
    assert print_expr(Const(1, F32)) == "1.0"
    assert print_expr(Const(0.1, F16)) == "0.1:f16"
    assert print_expr(Const(1, BOOL)) == "True"
    assert print_expr(Const(float("inf"), F32)) == "inf"
