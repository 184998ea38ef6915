"""Binding constants: defaults, `-D NAME=VALUE`, Python keyword arguments and `config.json`
values are checked against the kernel's `const` and `dtype` parameters, then the kernel is
re-checked with them (`tlc.typecheck.specialize`)."""
from __future__ import annotations

from ..diagnostics import Diagnostic, DiagnosticError
from ..dtypes import DType, lookup
from ..typecheck import CheckedFunction, CheckedProgram, specialize
from ..typecheck.env import did_you_mean


def parse_value(text: str):
    """A constant's value as written on the command line: int, float, bool or a dtype name."""
    t = text.strip()
    if t in ("True", "true"):
        return True
    if t in ("False", "false"):
        return False
    try:
        return int(t, 0)
    except ValueError:
        pass
    try:
        return float(t)
    except ValueError:
        pass
    dt = lookup(t)
    return dt if dt is not None else t


def bind_constants(program: CheckedProgram, fn: CheckedFunction, values: dict) -> CheckedFunction:
    """`fn` re-checked with `values` (name -> value, strings parsed) bound over the defaults."""
    bindings, errors = {}, []
    known = {p.name: p for p in fn.params if p.role in ("const", "dtype")}
    for name, raw in values.items():
        value = parse_value(raw) if isinstance(raw, str) else raw
        p = known.get(name)
        if p is None:
            hint = did_you_mean(name, known) or (f"its constants are: {', '.join(known)}" if known else
                                                 f"'{fn.name}' has no constants")
            errors.append(Diagnostic("E064", f"'{fn.name}' has no constant or dtype parameter '{name}'", None, hint))
            continue
        if p.role == "dtype":
            if isinstance(value, str):
                value = lookup(value)
            if not isinstance(value, DType):
                errors.append(Diagnostic("E065", f"the dtype parameter '{name}' takes a dtype such as f16, not {raw!r}",
                                         p.span))
                continue
        else:
            default = p.value
            if isinstance(value, (str, DType)) or isinstance(value, float) and isinstance(default, int) \
                    and not isinstance(default, bool):
                kind = "an integer" if isinstance(default, int) and not isinstance(default, bool) else \
                    "a bool" if isinstance(default, bool) else "a number"
                errors.append(Diagnostic("E065", f"the constant '{name}' takes {kind}, not {raw!r}", p.span))
                continue
        bindings[name] = value
    if errors:
        raise DiagnosticError(errors, program.sources)
    try:
        return specialize(program, fn.name, bindings)
    except DiagnosticError as e:
        raise DiagnosticError([_blame_constant(d, fn, bindings) for d in e.diagnostics], program.sources) from None


def _blame_constant(d: Diagnostic, fn: CheckedFunction, bindings: dict) -> Diagnostic:
    """An error that only a bound value causes is shown at the constant, naming the value."""
    if not bindings:
        return d
    shown = ", ".join(f"{k}={v}" for k, v in bindings.items())
    if d.code in ("E061", "E031", "E037", "E036", "E038") and len(bindings) == 1:
        name = next(iter(bindings))
        p = fn.param(name)
        return Diagnostic(d.code, f"with {shown}: {d.message}", p.span if p is not None else d.span,
                          f"the error is at {d.span.file}:{d.span.line}:{d.span.col}" if d.span else d.hint)
    return Diagnostic(d.code, f"with {shown}: {d.message}", d.span, d.hint)
