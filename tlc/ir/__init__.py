"""The tile IR: nodes (`nodes.py`), their text (`printer.py`) and the verifier (`verify.py`).

The scheduler builds a `Kernel`; the interpreter (`tlc.interp`) and the code generator read it.
"""
from .nodes import (ARITH_OPS, Assert, ATOMIC_KINDS, BINARY_OPS, BIT_OPS, BUFFER_SCOPES, COMPARE_OPS,
                    LOGIC_OPS, LOOP_KINDS, MATH_FUNCS, REDUCE_KINDS, UNARY_OPS, Assign, Atomic,
                    BinOp, Break, Buffer, BufferRef, Call, Cast, Const, Continue, Copy, Dim, Expr,
                    Fill, For, Gemm, If, Kernel, LetScalar, Load, Node, Param, Parallel, Print,
                    Reduce, Region, SCAN_KINDS, Scan, Select, Stmt, Store, Sync, UnaryOp, Var)
from .printer import expr as print_expr, print_kernel
from .verify import IRVerifyError, verify
from .warpspec import StagedStore, StageLoad, TensorMapSpec, TileOrder, WarpSpecialization

__all__ = ["ARITH_OPS", "ATOMIC_KINDS", "BINARY_OPS", "BIT_OPS", "BUFFER_SCOPES", "COMPARE_OPS",
           "LOGIC_OPS", "LOOP_KINDS", "MATH_FUNCS", "REDUCE_KINDS", "UNARY_OPS", "Assert", "Assign",
           "Atomic", "BinOp", "Break", "Buffer", "BufferRef", "Call", "Cast", "Const", "Continue",
           "Copy", "Dim", "Expr", "Fill", "For", "Gemm", "If", "Kernel", "LetScalar", "Load",
           "Node", "Param", "Parallel", "Print", "Reduce", "Region", "SCAN_KINDS", "Scan", "Select", "Stmt", "Store",
           "Sync", "UnaryOp", "Var", "print_expr", "print_kernel", "IRVerifyError", "verify",
           "StagedStore", "StageLoad", "TensorMapSpec", "TileOrder", "WarpSpecialization"]
