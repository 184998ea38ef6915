"""Binding constants: defaults, `-D NAME=VALUE`, Python keyword arguments and `config.json`
values are checked against the kernel's `const` and `dtype` parameters, then the kernel is
re-checked with them (`tlc.typecheck.specialize`)."""
from __future__ import annotations

from ..diagnostics import Diagnostic, DiagnosticError
from ..dtypes import DType, lookup
from ..scalars import digit_count, number_kind
from ..typecheck import CheckedFunction, CheckedProgram, specialize
from ..typecheck.program import NOT_ONE
from ..typecheck.consteval import LARGEST, RANGE_HINT, SMALLEST
from ..typecheck.env import did_you_mean


def parse_value(text: str):
    """A constant's value as written on the command line: int, float, bool or a dtype name."""
    t = text.strip()
    if t in ("True", "true"):
        return True
    if t in ("False", "false"):
        return False
    if len(t) > 40 and t.lstrip("+-").isdigit():
        return LARGEST + 1  # too large either way, and beyond what int() converts when very long
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
        if p is None and name in fn.ones and value is NOT_ONE:  # a size known not to be 1
            bindings[name] = value
            continue
        if p is None and name in fn.from_arrays:  # a specialized shape symbol's size
            size = _size(value)
            if size is None:
                errors.append(Diagnostic("E241", f"the shape symbol '{name}' is a size, an integer from 0 to {I32_MAX}; "
                                         f"it cannot be {raw!r}", fn.to_specialize[name][0] if name in fn.to_specialize else None))
                continue
            bindings[name] = size
            continue
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
            value = _constant_value(p.value, value)
            if value is None:
                kind = "a bool" if isinstance(p.value, bool) else "an integer" if isinstance(p.value, int) else "a number"
                errors.append(Diagnostic("E065", f"the constant '{name}' takes {kind}, not {raw!r}", p.span))
                continue
            if isinstance(value, int) and not SMALLEST <= value <= LARGEST:
                if isinstance(raw, str):
                    shown = raw if len(raw) <= 40 else f"a number of {len(raw.lstrip('+-'))} digits"
                else:
                    digits = digit_count(value)
                    shown = str(value) if digits <= 40 else f"a number of {digits} digits"
                errors.append(Diagnostic("E150", f"constant too large: '{name}' is given {shown}, which does not fit "
                                         "in 64 bits", p.span, RANGE_HINT))
                continue
        bindings[name] = value
    if errors:
        raise DiagnosticError(errors, program.sources)
    try:
        return specialize(program, fn.name, bindings)
    except DiagnosticError as e:
        raise DiagnosticError([_blame_constant(d, fn, bindings) for d in e.diagnostics], program.sources) from None


I32_MAX = 2**31 - 1  # a shape symbol is an i32, specialized or not


def _size(value) -> int | None:
    return int(value) if number_kind(value) == "int" and 0 <= int(value) <= I32_MAX else None


def _constant_value(default, value):
    """`value` as the Python number a constant with `default` takes (NumPy numbers converted),
    or None when it is not one: a bool constant takes a bool, 0 or 1; an integer constant an
    integer (not a bool); a float constant an integer or a float."""
    kind = number_kind(value)
    if isinstance(default, bool):
        return bool(value) if kind == "bool" or kind == "int" and value in (0, 1) else None
    if isinstance(default, int) or default is None:  # None: a size bound from the arrays
        return int(value) if kind == "int" else None
    return int(value) if kind == "int" else float(value) if kind == "float" else None


def _blame_constant(d: Diagnostic, fn: CheckedFunction, bindings: dict) -> Diagnostic:
    """An error that only a bound value causes is shown at the constant, naming the value."""
    if not bindings:
        return d
    shown = ", ".join(f"{k}={v}" for k, v in bindings.items())
    if d.code in ("E061", "E031", "E037", "E036", "E038", "E150", "E154") and len(bindings) == 1:
        name = next(iter(bindings))
        p = fn.param(name)
        return Diagnostic(d.code, f"with {shown}: {d.message}", p.span if p is not None else d.span,
                          f"the error is at {d.span.file}:{d.span.line}:{d.span.col}" if d.span else d.hint)
    return Diagnostic(d.code, f"with {shown}: {d.message}", d.span, d.hint)
