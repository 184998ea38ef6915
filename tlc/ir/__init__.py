"""The tile IR: nodes (`nodes.py`), their text (`printer.py`) and the verifier (`verify.py`).

The scheduler builds a `Kernel`; the interpreter (`tlc.interp`) and the code generator read it.
"""
from .nodes import (ARITH_OPS, Assert, ATOMIC_KINDS, BINARY_OPS, BIT_OPS, BUFFER_SCOPES, COMPARE_OPS,
                    LOGIC_OPS, LOOP_KINDS, MATH_FUNCS, REDUCE_KINDS, UNARY_OPS, Assign, Atomic,
                    BinOp, Break, Buffer, BufferRef, Call, Cast, Const, Continue, Copy, Dim, Expr,
                    Fill, For, Gemm, If, Kernel, LetScalar, Load, Node, Param, Parallel, Print,
                    Reduce, Region, SCAN_KINDS, Scan, Select, Stmt, Store, Sync, UnaryOp, Var)
from .verify import IRVerifyError, verify

__all__ = ["ARITH_OPS", "ATOMIC_KINDS", "BINARY_OPS", "BIT_OPS", "BUFFER_SCOPES", "COMPARE_OPS",
           "LOGIC_OPS", "LOOP_KINDS", "MATH_FUNCS", "REDUCE_KINDS", "UNARY_OPS", "Assert", "Assign",
           "Atomic", "BinOp", "Break", "Buffer", "BufferRef", "Call", "Cast", "Const", "Continue",
           "Copy", "Dim", "Expr", "Fill", "For", "Gemm", "If", "Kernel", "LetScalar", "Load",
           "Node", "Param", "Parallel", "Print", "Reduce", "Region", "SCAN_KINDS", "Scan", "Select", "Stmt", "Store",
           "Sync", "UnaryOp", "Var", "print_expr", "print_kernel", "IRVerifyError", "verify",
           "BulkReduce", "StagedStore", "StageLoad", "TensorMapSpec", "TileOrder", "WarpSpecialization"]

# the printer and the warp-specialization plan, imported at their first use: a launch from the
# program cache reads a few of the nodes' classes and neither (issue #15: ~6 ms of `import tlc`)
_LAZY = {"print_expr": ("printer", "expr"), "print_kernel": ("printer", "print_kernel"),
         **{name: ("warpspec", name) for name in ("BulkReduce", "StagedStore", "StageLoad", "TensorMapSpec", "TileOrder",
                                                  "WarpSpecialization")}}


def __getattr__(name: str):
    found = _LAZY.get(name)
    if found is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{found[0]}"), found[1])
    globals()[name] = value
    return value
