"""What the language server says about a file, in tlc's own terms (Spans, 1-based lines and
columns counted in characters); server.py turns it into LSP messages.

Every answer comes from the compiler's own stages: diagnostics are `tlc check`'s (the driver's
parse and type check, then the scheduled check for one target), hover reads the types the
checker put on the typed AST, definitions the spans of the loader's functions and constants,
completion the language's builtin names, the dtypes and the std modules' top-level names.
"""
from __future__ import annotations

import dataclasses
import functools
import os
import re

from ..diagnostics import Diagnostic, DiagnosticError, Span, TlcError
from ..driver import CheckResult, check_source
from ..dtypes import DTYPES
from ..frozen import frozen
from ..package_data import stdlib
from ..parser import nodes as n
from ..parser import parse
from ..typecheck.builtins import BUILTIN_VALUES, DECORATORS
from ..typecheck.types import BuiltinRef, DTypeValue, FunctionRef, ScalarType, TensorType, format_shape

STD_PREFIX = "<std>/"  # how the loader names a std module's file in spans


def check(text: str, path: str, arch: str = "sm_80") -> CheckResult:
    """`tlc check PATH --arch ARCH` on the editor's text: parse and type check, then, when
    those pass, every kernel and tile op scheduled for `arch` with its default constants."""
    from ..scheduled_check import schedule_all

    try:
        result = check_source(text, path)
        if result.ok:
            result.diagnostics = schedule_all(result.program, arch, {}, {})
            result.sources = {**result.sources, **result.program.sources}
        return result
    except TlcError as e:  # what tlc check prints as one "error: ..." line
        return CheckResult([Diagnostic("E360", str(e), Span(path, 1, 1, 1, 1))], {path: text})
    except Exception as e:  # a bug in tlc, not in the file: said in the editor, not a dead server
        return CheckResult([Diagnostic("E361", f"internal compiler error while checking this file: "
                                               f"{type(e).__name__}: {e}", Span(path, 1, 1, 1, 1),
                                       "please report it with the file that caused it")], {path: text})


def std_file(span_file: str) -> str:
    """The file a span names: a std module's `<std>/nn.tl` is the installed stdlib's file."""
    if span_file.startswith(STD_PREFIX):
        return str(stdlib().joinpath(*span_file[len(STD_PREFIX):].split("/")))
    return span_file


# ---- the typed AST at a position -------------------------------------------------------------

def _nodes(x):
    """Every AST node under `x`, in field order (types and spans are not walked)."""
    if isinstance(x, (tuple, list)):
        for y in x:
            yield from _nodes(y)
    elif dataclasses.is_dataclass(x) and not isinstance(x, type):
        yield x
        for f in dataclasses.fields(x):
            if f.name not in ("span", "ty", "name_span"):
                yield from _nodes(getattr(x, f.name))


def _contains(span: Span | None, line: int, col: int) -> bool:
    return (span is not None and span.line == line == span.end_line and span.col <= col <= span.end_col)


@frozen
class Found:
    """The name under the cursor: its node (typed where the checker typed it), the checked
    function it is in (None at the top level) and its type."""

    name: str
    span: Span
    ty: object
    function: object = None


def name_at(program, path: str, line: int, col: int) -> Found | None:
    """The name at (line, col) of `path` in a checked program: a use in a function body, a
    parameter, or a name in an import."""
    for fn in program.functions.values():
        if fn.node.span is None or fn.node.span.file != path or not (fn.node.span.line <= line <= fn.node.span.end_line):
            continue
        for p in fn.params:
            if p.span is not None and p.span.line == line and p.span.col <= col <= p.span.col + len(p.name):
                ty = p.type if p.type is not None else (DTypeValue(p.value) if p.role == "dtype" else None)
                return Found(p.name, p.span, ty, fn)
        for node in _nodes(fn.body):
            if isinstance(node, n.Name) and _contains(node.span, line, col):
                return Found(node.id, node.span, node.ty, fn)
        for node in _nodes(fn.node.params):  # shape symbols and dtypes in the annotations
            if isinstance(node, n.Name) and _contains(node.span, line, col):
                return Found(node.id, node.span, None, fn)
    env = main_env(program)
    if env is not None and env.ast is not None:
        for imp in env.ast.imports:
            for name in imp.names:
                if _contains(name.span, line, col):
                    return Found(name.local, name.span, None)
        for c in env.ast.consts:
            if c.span is not None and c.span.line == line and c.span.col <= col <= c.span.col + len(c.name):
                return Found(c.name, c.span, None)
    return None


def main_env(program):
    loader = program.modules
    return next((m for m in loader.modules.values() if m.path == program.path), None) if loader else None


# ---- hover -----------------------------------------------------------------------------------

def hover_text(program, found: Found) -> str | None:
    """Markdown: the name with its dtype, shape and memory scope, or a function's signature."""
    ty = found.ty
    if isinstance(ty, TensorType):
        return (f"```tl\n{found.name}: {ty.scope} {ty}\n```\n"
                f"dtype `{ty.dtype.name}` · shape `{format_shape(ty.shape)}` · {ty.scope} memory")
    if isinstance(ty, ScalarType):
        value = found.function.constants.get(found.name) if found.function is not None else None
        what = "scalar" if not ty.const else "constant" if value is None else f"constant = {value}"
        return f"```tl\n{found.name}: {ty.dtype.name}\n```\n{what}"
    if isinstance(ty, DTypeValue):
        return f"```tl\n{found.name}: dtype = {ty.dtype.name}\n```"
    if isinstance(ty, BuiltinRef):
        return f"```tl\n{ty.name}\n```\nbuiltin"
    if found.function is not None and found.name in found.function.shape_symbols:
        return f"```tl\n{found.name}\n```\nshape symbol: a size taken from the arrays at each call"
    if found.function is None and found.name in program.constants:
        return f"```tl\n{found.name} = {program.constants[found.name]}\n```\nmodule constant"
    target = definition(program, found)
    fn = _function_named(program, found)
    if fn is not None and target is not None:
        kind = {"device": "device function", "tile_op": "tile op"}.get(fn.kind, fn.kind)
        return f"```tl\n{_signature(fn.node)}\n```\n{kind} in `{_module_name(target.file)}`"
    return None


def _module_name(span_file: str) -> str:
    if span_file.startswith(STD_PREFIX):
        return "std." + span_file[len(STD_PREFIX):-3].replace("/", ".")
    return os.path.basename(span_file)


def _signature(fn: n.FunctionDef) -> str:
    params = ", ".join(p.name + (f": {_type_text(p.annotation)}" if p.annotation else "") for p in fn.params)
    return f"def {fn.name}({params})" + (f" -> {_type_text(fn.returns)}" if fn.returns else "")


def _type_text(t: n.TypeExpr) -> str:
    return t.name + (format_shape(t.dims) if t.dims is not None else "")


def _function_named(program, found: Found):
    if isinstance(found.ty, FunctionRef):
        return program.functions.get(found.ty.qualname)
    env = main_env(program)
    entry = env.functions.get(found.name) if env is not None and found.function is None else None
    return program.functions.get(entry[0]) if entry else None


# ---- go to definition ------------------------------------------------------------------------

def definition(program, found: Found) -> Span | None:
    """Where the name under the cursor is defined: a function's name (in this file, an imported
    one or a std module), a module constant, a parameter, or a local's first binding."""
    if isinstance(found.ty, (BuiltinRef, DTypeValue)) and found.function is not None \
            and found.function.param(found.name) is None:
        return None  # the language's own name: no source defines it
    fn = _function_named(program, found)
    if fn is not None:
        return fn.node.name_span
    if found.function is not None:
        param = found.function.param(found.name)
        if param is not None and param.span is not None:
            s = param.span
            return Span(s.file, s.line, s.col, s.line, s.col + len(found.name))
        uses = [node.span for node in _nodes((found.function.node.params, found.function.node.body))
                if isinstance(node, n.Name) and node.id == found.name and node.span is not None]
        if uses:
            return min(uses, key=lambda s: (s.line, s.col))
    for env in _envs_seen_from(program, found):
        if found.name in env.const_spans:
            s = env.const_spans[found.name]
            return Span(s.file, s.line, s.col, s.line, s.col + len(found.name))
    return None


def _envs_seen_from(program, found: Found):
    """The modules whose constants the name may be: the function's own module, then every
    loaded module (an imported constant keeps its module's span)."""
    loader = program.modules
    if loader is None:
        return []
    first = [m for m in loader.modules.values()
             if found.function is not None and m.path == found.function.node.span.file]
    return first + [m for m in loader.modules.values() if m not in first]


# ---- completion ------------------------------------------------------------------------------

@frozen
class Completion:
    label: str
    kind: str  # builtin, dtype, decorator, module, function, constant
    detail: str
    import_line: str | None = None  # a std name not imported yet: the import that brings it


@functools.cache
def std_modules() -> dict[str, n.Module]:
    """The std modules by name (`nn`), parsed once."""
    out = {}
    for f in sorted(stdlib().iterdir(), key=lambda f: f.name):
        if f.name.endswith(".tl"):
            try:
                out[f.name[:-3]] = parse(f.read_text(encoding="utf-8"), STD_PREFIX + f.name)
            except DiagnosticError:
                continue
    return out


def _kind(fn: n.FunctionDef) -> str:
    return "kernel" if fn.has_decorator("kernel") else "tile_op" if fn.has_decorator("tile_op") else "function"


def _module_names(module: n.Module, name: str) -> list[Completion]:
    return ([Completion(f.name, "function", f"{_kind(f)} in std.{name}") for f in module.functions]
            + [Completion(c.name, "constant", f"constant in std.{name}") for c in module.consts])


FROM_STD = re.compile(r"^\s*from\s+std\.(\w*)$")
IMPORT_STD = re.compile(r"^\s*from\s+std\.(\w+)\s+import\s+(?:[\w\s,]*,\s*)?\w*$")
AFTER_AT = re.compile(r"^\s*@\w*$")


def completions(text: str, line: int, col: int) -> list[Completion]:
    """What may be written at (line, col): std module names after `from std.`, a module's names
    after `from std.NAME import`, decorators after `@`, else builtins, dtypes, this file's names
    and every std name (with the import it needs when this file has not imported it)."""
    lines = text.split("\n")
    prefix = lines[line - 1][:col - 1] if 1 <= line <= len(lines) else ""
    modules = std_modules()
    if m := FROM_STD.match(prefix):
        return [Completion(name, "module", f"std.{name}") for name in modules]
    if m := IMPORT_STD.match(prefix):
        return _module_names(modules[m.group(1)], m.group(1)) if m.group(1) in modules else []
    if AFTER_AT.match(prefix):
        return [Completion(d, "decorator", "decorator") for d in sorted(DECORATORS)]
    own, imported = _top_level_names(text)
    out = [Completion(b, "builtin", "builtin") for b in sorted(BUILTIN_VALUES)]
    out += [Completion(d, "dtype", "dtype") for d in DTYPES]
    out += [Completion(name, "function", "this file") for name in own]
    for name, module in modules.items():
        for c in _module_names(module, name):
            out.append(c if c.label in imported or c.label in own
                       else dataclasses.replace(c, import_line=f"from std.{name} import {c.label}\n"))
    return out


TOP_DEF = re.compile(r"^def\s+(\w+)|^(\w+)\s*(?::[^=]*)?=", re.M)
TOP_IMPORT = re.compile(r"^from\s+\S+\s+import\s+(.*)$", re.M)


def _top_level_names(text: str) -> tuple[list[str], set[str]]:
    """The file's own functions and constants, and the names it imports: from a parse of the
    text, or, while the line being typed keeps it from parsing, from its top-level lines."""
    try:
        module = parse(text, "<editor>")
    except DiagnosticError:
        own = [m.group(1) or m.group(2) for m in TOP_DEF.finditer(text)]
        imported = {part.split()[-1] for m in TOP_IMPORT.finditer(text) for part in m.group(1).split(",") if part.strip()}
        return own, imported
    own = [f.name for f in module.functions] + [c.name for c in module.consts]
    return own, {name.local for imp in module.imports for name in imp.names}
