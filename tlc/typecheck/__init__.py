"""Type checking: AST -> typed program.  Entry points: `check_program(module, text)` (every
function with its constants at their defaults) and `specialize(program, name, bindings)`
(one function re-checked with constants and dtypes bound, as the scheduler needs).

Owns name resolution across files, dtypes and promotion (`rules.py`), shapes with symbolic
dimensions, memory scopes and every diagnostic from E020 on.  Never decides anything about
code generation.
"""
from __future__ import annotations

import os

from ..diagnostics import DiagnosticBag, DiagnosticError
from ..parser import nodes as n
from ..parser.depth import MAX_AST_DEPTH, ast_depth, report_too_deep, substituted_depth
from .functions import FunctionChecker
from .modules import ProgramLoader
from .program import CheckedFunction, CheckedParam, CheckedProgram, SymbolUse
from .types import DTypeValue, ScalarType, TensorType, format_dim, format_shape

__all__ = ["check_program", "specialize", "CheckedProgram", "CheckedFunction", "CheckedParam", "SymbolUse",
           "ScalarType", "TensorType", "DTypeValue", "format_dim", "format_shape"]


def _base_dir(path: str) -> str:
    return os.path.dirname(os.path.abspath(path)) if not path.startswith("<") else os.getcwd()


def check_program(module: n.Module, text: str | None = None) -> CheckedProgram:
    """Check a parsed file and what it imports; raises `DiagnosticError` with every error found."""
    bag = DiagnosticBag()
    sources = {module.path: text} if text is not None else {}
    loader = ProgramLoader(bag, sources)
    key = os.path.abspath(module.path) if not module.path.startswith("<") else module.path
    main = loader.load(module, key, _base_dir(module.path))
    functions = {}
    calls = {}
    depths = {}
    for qual, (fn, kind, env, autotune) in loader.defs.items():
        if kind is None:
            continue
        depths[qual], culprit = ast_depth(fn)
        if culprit is not None:
            report_too_deep(bag, culprit)
            continue
        if kind == "tile_op" and substituted_depth(fn)[1] is not None:
            report_too_deep(bag, substituted_depth(fn)[1], substituted=True)
            continue
        checker = FunctionChecker(fn, kind, env, loader, bag)
        try:
            functions[qual] = checker.check(autotune)
        except RecursionError:
            bag.error("E010", "the program is nested too deeply to compile", fn.name_span,
                      "split the deepest expression into named intermediate values")
            continue
        calls[qual] = checker.calls
    _check_recursion(calls, bag)
    if not bag:
        _check_inlined_depth(calls, depths, bag)
    if bag:
        raise DiagnosticError(bag.items, sources)
    names = {name: entry[0] for name, entry in main.functions.items()}
    return CheckedProgram(module.path, functions, names, sources, dict(main.constants),
                          modules=loader)


def specialize(program: CheckedProgram, name: str, bindings: dict) -> CheckedFunction:
    """Re-check the function `name` with constants and dtypes bound (name -> value or DType)."""
    loader: ProgramLoader = program.modules
    qual = program.names[name]
    fn, kind, env, autotune = loader.defs[qual]
    bag = DiagnosticBag()
    checked = FunctionChecker(fn, kind, env, loader, bag, overrides=bindings).check(autotune)
    if bag:
        raise DiagnosticError(bag.items, program.sources)
    return checked


def _check_recursion(calls: dict, bag: DiagnosticBag) -> None:
    """Device functions are inlined, so a call cycle can never be compiled."""
    state: dict = {}

    def visit(q, stack):
        state[q] = "active"
        for callee, span in calls.get(q, ()):
            if state.get(callee) == "active":
                cycle = stack[stack.index(callee):] + [callee] if callee in stack else [q, callee]
                bag.error("E056", "device functions are inlined and cannot call themselves: "
                          + " -> ".join(c.split(":")[-1] for c in cycle), span)
            elif callee not in state:
                visit(callee, stack + [callee])
        state[q] = "done"

    for q in list(calls):
        if q not in state:
            visit(q, [q])



def _check_inlined_depth(calls: dict, depths: dict, bag: DiagnosticBag) -> None:
    """Device functions are inlined where they are called, so a chain of calls nests as deep as
    the functions along it together (counted whole: a bound, not the exact depth)."""
    total: dict = {}

    def inlined(q):  # the call graph is acyclic here (E056 would have stopped it)
        if q not in total:
            total[q] = depths.get(q, 0) + max((inlined(c) for c, _ in calls.get(q, ())), default=0)
        return total[q]

    for q in calls:
        for callee, span in calls[q]:
            if depths.get(q, 0) + inlined(callee) > MAX_AST_DEPTH:
                bag.error("E155", f"this call nests more than {MAX_AST_DEPTH} levels deep once the device "
                          "functions it calls are inlined, more than the compiler allows", span,
                          "call fewer device functions inside each other")
                return
