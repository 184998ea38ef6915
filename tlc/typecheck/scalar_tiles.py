"""Scalars where TileLang's tile statements reach them, and fragment elements outside `parallel`
loops (LANGUAGE.md, "Buffers inside the grid").

- `clear(x)` and `fill(x, v)` of a scalar variable (TileLang's `T.alloc_var`, a one-element
  buffer there) are `x = 0` and `x = v`, checked as those assignments.
- A fragment element written outside a parallel loop (`dA_cs_last[0] = ...`) is every thread
  writing its own replica; whether every thread holds that element is the layout's, so layout
  inference decides (schedule/layout_infer.py: the fragment is held whole in every thread, or
  E059).  What the checker can see is code that depends on the thread index: replicas written
  there would differ from thread to thread, so a read of the element would depend on which
  thread reads it (E280)."""
from __future__ import annotations

from ..parser import nodes as n
from .env import LOCAL
from .types import FRAGMENT, ScalarType, TensorType


def scalar_variable(checker, e) -> bool:
    """Whether `e` names a scalar variable (one a plain assignment introduced)."""
    if not isinstance(e, n.Name):
        return False
    sym = checker.scope.lookup(e.id)
    return sym is not None and sym.kind == LOCAL and isinstance(sym.type, ScalarType)


def set_scalar(checker, s: n.ExprStmt, name: str):
    """`clear(x)` as `x = 0` (`False` for a bool), `fill(x, v)` as `x = v`."""
    call = s.expr
    if not checker._arity(call, name, 2 if name == "fill" else 1):
        return s
    target = call.args[0]
    if name == "fill":
        value = call.args[1]
    else:
        dtype = checker.scope.lookup(target.id).type.dtype
        value = n.Constant(False if dtype.kind == "bool" else 0, call.span)
    return checker.stmt_Assign(n.Assign(target, value, None, s.span))


def fragment_store_per_thread(checker, target, value, span) -> None:
    """E280 for a fragment element written in code that depends on the thread index."""
    fragment = isinstance(target, n.Subscript) and isinstance(target.value.ty, TensorType) \
        and target.value.ty.scope == FRAGMENT
    per_thread = checker.thread_control or checker.reads_thread(target) or checker.reads_thread(value)
    if fragment and per_thread and not checker.in_parallel:
        checker.error("E280", "a fragment element written outside a parallel loop in code that depends on the thread "
                      "index: every thread writes its own replica of it, and they would differ", span,
                      "keep the per-thread value in a scalar, or write the element inside a parallel loop")
