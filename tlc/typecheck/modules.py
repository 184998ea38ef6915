"""Modules and imports: module constants, the functions a file defines, `from std.x import`
and `from .x import` across files, with cycle detection.  A relative import reaches only the
main file's folder tree and the folders of $TLC_PATH, and reads only a regular file."""
from __future__ import annotations

import os

from ..diagnostics import DiagnosticError
from ..files import NotRegularFile, read_regular
from ..dtypes import DType, lookup
from ..package_data import stdlib
from ..parser import nodes as n, parse
from ..parser.depth import ast_depth, report_too_deep
from . import consteval
from .builtins import ALLOCATORS, LOOPS, TILE_STATEMENTS
from .env import ModuleEnv, did_you_mean

RESERVED_NAMES = TILE_STATEMENTS | ALLOCATORS | LOOPS | {"grid"}
from .functions import check_autotune, function_kind
from .types import ScalarType


class ProgramLoader:
    """Loads the main module and everything it imports into `ModuleEnv`s, reporting into `bag`."""

    def __init__(self, bag, sources: dict):
        self.bag = bag
        self.sources = sources
        self.modules: dict[str, ModuleEnv] = {}
        self.loading: list[str] = []
        self.defs: dict[str, tuple] = {}  # qualname -> (FunctionDef, kind, ModuleEnv, autotune)
        self.roots: tuple[str, ...] = ()  # where relative imports may reach: set by the main file's load

    def load(self, ast: n.Module, key: str, base_dir: str) -> ModuleEnv:
        if not self.roots:  # the main file: its folder, then those of TLC_PATH
            self.roots = (os.path.abspath(base_dir), *search_path())
        return self._load(ast, key, base_dir)

    def _load(self, ast: n.Module, key: str, base_dir: str) -> ModuleEnv:
        env = ModuleEnv(ast.path, key, ast=ast)
        self.modules[key] = env
        self.loading.append(key)
        for imp in ast.imports:
            self._import(imp, env, base_dir)
        self._constants(ast, env)
        for fn in ast.functions:
            if fn.name in env.functions or fn.name in env.constants:
                self.bag.error("E025", f"'{fn.name}' is already defined in this file", fn.name_span)
                continue
            kind = function_kind(fn, self.bag)
            if fn.name in RESERVED_NAMES and kind == "device":
                # a kernel or tile op may take the name: code cannot call it, so no call is ambiguous
                self.bag.error("E025", f"'{fn.name}' is a statement of the language; a device function cannot take "
                               "its name", fn.name_span, f"call it, e.g., '{fn.name}_tiles'")
                continue
            qual = f"{key}:{fn.name}"
            env.functions[fn.name] = (qual, kind, fn, env)
            self.defs[qual] = (fn, kind, env, check_autotune(fn, env, self.bag))
        self.loading.pop()
        return env

    # ---- constants ---------------------------------------------------------------------------
    def _constants(self, ast: n.Module, env: ModuleEnv) -> None:
        for c in ast.consts:
            if c.name in env.constants or c.name in env.functions:
                self.bag.error("E025", f"'{c.name}' is already defined in this file", c.span)
                continue
            kind = c.annotation.name if c.annotation is not None else None
            if c.annotation is not None and (kind not in ("const", "dtype") or c.annotation.dims is not None):
                self.bag.error("E051", f"a module constant is declared '{c.name}: const = ...' or '{c.name}: dtype = ...'",
                               c.annotation.span)
                continue
            if kind == "dtype" or (kind is None and isinstance(c.value, n.Name) and lookup(c.value.id)):
                dt = lookup(c.value.id) if isinstance(c.value, n.Name) else None
                if dt is None and isinstance(c.value, n.Name) and isinstance(env.constants.get(c.value.id), DType):
                    dt = env.constants[c.value.id]
                if dt is None:
                    self.bag.error("E045", f"the dtype constant '{c.name}' must name a dtype such as f16", c.value.span)
                    continue
                env.constants[c.name] = dt
                continue
            culprit = ast_depth(c)[1]
            if culprit is not None:
                report_too_deep(self.bag, culprit)
                continue
            try:
                value = consteval.evaluate(c.value, env.constants)
            except consteval.TooLarge as err:
                consteval.report_too_large(self.bag, err)
                continue
            except consteval.NotConstant as nc:
                bad = nc.node
                detail = f"'{bad.id}' is not a constant" if isinstance(bad, n.Name) else "it cannot be computed at compile time"
                self.bag.error("E031", f"the value of '{c.name}' must be a compile-time constant; {detail}", bad.span)
                continue
            if isinstance(value, (list, DType)):
                self.bag.error("E051", f"the constant '{c.name}' must be a number or a bool", c.value.span)
                continue
            env.constants[c.name] = value
            env.const_spans[c.name] = c.span

    # ---- imports ---------------------------------------------------------------------------
    def _import(self, imp: n.Import, env: ModuleEnv, base_dir: str) -> None:
        target = self._resolve(imp, base_dir)
        if target is None:
            return
        key, path, text = target
        if key in self.loading:
            chain = self.loading[self.loading.index(key):] + [key]
            shown = " -> ".join(_short(k) for k in chain)
            self.bag.error("E027", f"import cycle: {shown}", imp.span, "move the shared code into a third file")
            return
        other = self.modules.get(key)
        if other is None:
            try:
                ast = parse(text, path)
            except DiagnosticError as e:
                for d in e.diagnostics:
                    self.bag.items.append(d)
                return
            self.sources[path] = text
            other = self._load(ast, key, os.path.dirname(path))
        for name in imp.names:
            local = name.local
            if local in env.functions or local in env.constants:
                self.bag.error("E025", f"'{local}' is imported twice", name.span)
            elif name.name in other.functions:
                env.functions[local] = other.functions[name.name]
            elif name.name in other.constants:
                env.constants[local] = other.constants[name.name]
            else:
                shown = ("std." if imp.level == 0 else "." * imp.level) + (imp.module.removeprefix("std.") if imp.level == 0 else imp.module)
                self.bag.error("E028", f"module '{shown}' has no '{name.name}'", name.span,
                               did_you_mean(name.name, set(other.functions) | set(other.constants)))

    def _resolve(self, imp: n.Import, base_dir: str):
        if imp.level == 0:
            parts = imp.module.split(".")
            if parts[0] != "std" or len(parts) < 2:
                self.bag.error("E026", f"cannot import '{imp.module}': a module is either 'std.NAME' or relative, '.NAME'",
                               imp.span, f"for a file beside this one, write 'from .{imp.module} import ...'")
                return None
            ref = stdlib().joinpath(*parts[1:-1], parts[-1] + ".tl")
            if not ref.is_file():
                available = sorted(p.name[:-3] for p in stdlib().iterdir()
                                   if p.name.endswith(".tl"))
                self.bag.error("E026", f"the standard library has no module '{imp.module}'", imp.span,
                               f"it has: {', '.join('std.' + a for a in available)}" if available else None)
                return None
            return imp.module, f"<std>/{'/'.join(parts[1:])}.tl", ref.read_text(encoding="utf-8")
        base = base_dir
        for _ in range(imp.level - 1):
            base = os.path.dirname(base)
        if not imp.module:
            self.bag.error("E026", "name the module to import from: 'from .common import gelu'", imp.span)
            return None
        path = os.path.normpath(os.path.join(base, *imp.module.split("."))) + ".tl"
        key = os.path.abspath(path)
        if key in self.modules or key in self.loading:
            return key, path, self.sources.get(path, "")
        if not any(os.path.commonpath([key, root]) == root for root in self.roots):
            self.bag.error("E140", f"cannot import '{'.' * imp.level}{imp.module}': {key} is outside {self.roots[0]}, "
                           "the folder of the program's main file", imp.span,
                           "relative imports reach that folder and those below it; list more folders in TLC_PATH")
            return None
        try:
            text = read_regular(path).decode("utf-8")
        except FileNotFoundError:
            self.bag.error("E026", f"cannot find the module '{'.' * imp.level}{imp.module}' (looked for {path})", imp.span)
            return None
        except NotRegularFile as e:
            self.bag.error("E141", f"cannot import '{'.' * imp.level}{imp.module}': {path} is {e.kind}, "
                           "not a regular file", imp.span)
            return None
        except (OSError, UnicodeDecodeError) as e:
            self.bag.error("E026", f"cannot read the module '{'.' * imp.level}{imp.module}' ({path}): "
                           f"{getattr(e, 'strerror', None) or 'not UTF-8 text'}", imp.span)
            return None
        return key, os.path.relpath(path) if not os.path.isabs(base_dir or "") else path, text

    # ---- signatures -------------------------------------------------------------------------
    def signature(self, qualname: str):
        """Parameter and return types of a device function, from its annotations."""
        fn, kind, env, _ = self.defs[qualname]

        def scalar(t):
            if t is None:
                return None
            dt = lookup(t.name) or (env.constants.get(t.name) if isinstance(env.constants.get(t.name), DType) else None)
            return ScalarType(dt) if dt is not None and t.dims is None else None

        return [(p.name, scalar(p.annotation)) for p in fn.params], scalar(fn.returns)


def search_path() -> tuple[str, ...]:
    """The folders in $TLC_PATH (separated as in PATH) that relative imports may also reach."""
    return tuple(os.path.abspath(p) for p in os.environ.get("TLC_PATH", "").split(os.pathsep) if p)


def _short(key: str) -> str:
    return os.path.basename(key) if os.path.isabs(key) else key
