"""IR nodes: value semantics (spans ignored), tuples for lists, normalized constants."""
from tlc.diagnostics import Span
from tlc.dtypes import BOOL, F32, I32
from tlc.ir import BinOp, Const, Kernel, Load, Param, Parallel, Store, Var, samples


def test_span_is_not_part_of_equality_or_hash():
    a = BinOp("+", Var("x", I32), Const(1, I32), I32, span=Span("a.tl", 1, 1, 1, 6))
    b = BinOp("+", Var("x", I32), Const(1, I32), I32)
    assert a == b and hash(a) == hash(b)
    assert "span" not in repr(a)


def test_lists_become_tuples_so_nodes_hash():
    s = Store("y", [Var("i", I32)], Load("x", [Var("i", I32)], F32))
    p = Parallel(["i"], [8], [s])
    assert p.vars == ("i",) and p.extents == (8,) and p.body == (s,)
    assert s.indices == (Var("i", I32),)
    assert {p: 1}[Parallel(("i",), (8,), (s,))] == 1


def test_constants_take_the_python_type_of_their_dtype():
    assert Const(0, F32).value == 0.0 and isinstance(Const(0, F32).value, float)
    assert isinstance(Const(2.0, I32).value, int)
    assert Const(1, BOOL).value is True
    assert Const(1, F32) == Const(1.0, F32)


def test_kernel_lookups():
    k = samples.matmul()
    assert isinstance(k, Kernel)
    assert k.shape_symbols() == ("M", "K", "N")
    assert k.param("B") == Param("B", "tensor", k.param("A").dtype, ("K", "N"))
    assert k.buffer("acc").scope == "fragment" and k.buffer("nope") is None
