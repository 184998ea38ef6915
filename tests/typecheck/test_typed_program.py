"""What the checker hands to the scheduler: typed expressions, parameters by role, shape
symbols, constants, and specialization with bound values."""
import pytest

from tlc.diagnostics import DiagnosticError
from tlc.driver import check_source
from tlc.dtypes import BF16, F16, F32
from tlc.parser import nodes as n
from tlc.typecheck import specialize
from tlc.typecheck.types import FRAGMENT, SHARED, ScalarType, TensorType

GEMM = """
@autotune(BM=[64, 128], BK=[32, 64])
@kernel
def matmul(A: T[M, K], B: T[K, N], C: T[M, N],
           T: dtype = f16, BM: const = 128, BN: const = 128, BK: const = 32, stages: const = 3):
    with grid(cdiv(N, BN), cdiv(M, BM), threads=128) as (bx, by):
        As = shared(T[BM, BK])
        Bs = shared(T[BK, BN])
        acc = fragment(f32[BM, BN])
        clear(acc)
        for k in pipelined(cdiv(K, BK), stages=stages):
            copy(A[by * BM, k * BK], As)
            copy(B[k * BK, bx * BN], Bs)
            gemm(As, Bs, acc)
        copy(acc, C[by * BM, bx * BN])
"""


def checked(src=GEMM):
    r = check_source(src, "g.tl")
    assert r.ok, r.diagnostics
    return r.program


def walk(node):
    """Every AST node under `node`."""
    if isinstance(node, tuple):
        for x in node:
            yield from walk(x)
        return
    if not hasattr(node, "__dataclass_fields__"):
        return
    yield node
    for f in node.__dataclass_fields__:
        if f not in ("span", "ty"):
            yield from walk(getattr(node, f))


def test_params_by_role_and_constants():
    f = checked().function("matmul")
    assert [(p.name, p.role) for p in f.params] == [
        ("A", "tensor"), ("B", "tensor"), ("C", "tensor"), ("T", "dtype"),
        ("BM", "const"), ("BN", "const"), ("BK", "const"), ("stages", "const")]
    assert f.constants["BM"] == 128 and f.constants["T"] == F16
    assert f.autotune == {"BM": [64, 128], "BK": [32, 64]}
    assert [p.name for p in f.runtime_params] == ["A", "B", "C"]


def test_shape_symbols_record_every_use():
    f = checked().function("matmul")
    assert {k: [(u.param, u.axis) for u in v] for k, v in f.shape_symbols.items()} == {
        "M": [("A", 0), ("C", 0)], "K": [("A", 1), ("B", 0)], "N": [("B", 1), ("C", 1)]}


def test_every_expression_is_typed():
    f = checked().function("matmul")
    exprs = [x for x in walk(f.body) if isinstance(x, (n.Name, n.BinOp, n.Call, n.Subscript, n.Constant))]
    assert exprs and all(x.ty is not None for x in exprs)


def test_buffers_have_scope_and_shape():
    f = checked().function("matmul")
    allocs = {s.target.id: s.target.ty for s in walk(f.body) if isinstance(s, n.Assign)}
    assert allocs["As"] == TensorType(F16, (n.Name("BM"), n.Name("BK")), SHARED)
    assert allocs["acc"].scope == FRAGMENT and allocs["acc"].dtype == F32


def test_specialize_binds_dtype_and_constants():
    prog = checked()
    f = specialize(prog, "matmul", {"T": BF16, "BM": 64})
    assert f.constants["BM"] == 64 and f.constants["T"] == BF16
    assert f.param("A").type.dtype == BF16


def test_specialize_reports_shape_errors_with_bound_values():
    prog = checked(GEMM.replace("acc = fragment(f32[BM, BN])", "acc = fragment(f32[BM, 128])"))
    with pytest.raises(DiagnosticError) as e:
        specialize(prog, "matmul", {"BN": 64})
    assert e.value.diagnostics[0].code == "E037"


def test_tile_op_types():
    prog = checked("""
def gelu(x: f32) -> f32:
    return 0.5 * x * (1.0 + tanh(0.7978845608 * (x + 0.044715 * x * x * x)))

@fuse
@tile_op
def linear_gelu(x: f16[M, K], w: f16[N, K], b: f32[N]) -> f16[M, N]:
    h = x @ w.T + b
    return f16(gelu(h))
""")
    f = prog.function("linear_gelu")
    assert f.kind == "tile_op" and f.fuse
    assign = f.body[0]
    assert assign.value.ty == TensorType(F32, (n.Name("M"), n.Name("N")), "value")
    assert f.returns.dtype == F16


def test_scalar_literal_promotion_in_kernel_body():
    prog = checked("""
@kernel
def scale(X: f16[N], alpha: f32):
    with grid(cdiv(N, 128), threads=128) as bx:
        for i in parallel(128):
            y = X[bx * 128 + i] * 2.0
            z = X[bx * 128 + i] * alpha
            X[bx * 128 + i] = f16(z) + y
""")
    f = prog.function("scale")
    stmts = [s for s in walk(f.body) if isinstance(s, n.Assign) and isinstance(s.target, n.Name)]
    assert stmts[0].target.ty == ScalarType(F16)
    assert stmts[1].target.ty == ScalarType(F32)
