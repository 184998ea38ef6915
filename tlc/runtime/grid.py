"""Grid extents on the host: the code generator's `grid` IR expressions turned into Python once
per compiled kernel, then evaluated per launch on Python ints.

Owns the host meaning of the operators a grid extent can use (`//` floors and `%` takes the
divisor's sign, as in Python and as `cdiv` needs; `min`/`max` as binary ops or calls; casts
truncate toward zero as in C; selects, comparisons and logic), and the check of a grid
against the GPU's limits (`sm_limits.MAX_GRID`; the C launcher makes the same checks).  The
expressions become Python source text (`py_source`) for the fast paths (tlc/runtime/fastpath.py),
which evaluate them at every launch, where compiled text costs a fraction of closures' calls;
and closures over the same Python operators (`py_function`) for the general path's grid
(`compile_grid`), which a process that launches a kernel once would otherwise pay Python's
compiler for (0.34 ms of a cached first call on the H200).  Does not own the device meaning of
these operators (the code generator).
"""
from __future__ import annotations

import operator
from typing import Callable, Sequence

from ..diagnostics import TlcError
from ..dtypes import power_or_shift_fits
from ..ir.nodes import BinOp, Call, Cast, Const, Expr, Select, UnaryOp, Var
from ..targets.base import MAX_GRID, MAX_TILES

_PY_OPS = {"+", "-", "*", "/", "//", "%", "**", "<<", ">>", "&", "|", "^",
           "==", "!=", "<", "<=", ">", ">=", "and", "or"}


class GridError(TlcError):
    """A grid extent the host cannot evaluate, or one that evaluates to a bad value."""


class DividesByZero(GridError):
    """An extent or size that divides by zero at these sizes (std.attention's HK * (H // HK) of HK = 0)."""


def _power(a, b):
    """`a ** b`, refused before it is computed when its integer result passes 64 bits: no
    extent is that large, and Python's exact `n ** n` for n = 10**9 would run for hours."""
    if not power_or_shift_fits(a, b, "**", 64):
        raise GridError(f"a grid extent computes {a} ** {b}, which is beyond 64 bits")
    return a ** b


def _shift(a, b):
    """`a << b`, refused like `_power` when the result passes 64 bits."""
    if b != 0 and not power_or_shift_fits(a, b, "<<", 64):  # a << 0 is `a`, as large as it is
        raise GridError(f"a grid extent computes {a} << {b}, which is beyond 64 bits")
    return a << b


_SIZED = {"**": _power, "<<": _shift}
_HELPERS = {f.__name__: f for f in _SIZED.values()}


def py_source(expr: Expr, names: dict[str, str]) -> str:
    """`expr` as a Python expression; `names` maps each name it may read (scalar params, shape
    symbols) to the Python text that holds its value."""
    if isinstance(expr, Const):
        return repr(expr.value)
    if isinstance(expr, Var):
        if expr.name not in names:
            raise GridError(f"a grid extent reads '{expr.name}', which is neither a scalar "
                            f"parameter nor a shape symbol")
        return names[expr.name]
    if isinstance(expr, BinOp):
        a, b = py_source(expr.a, names), py_source(expr.b, names)
        if expr.op in ("min", "max"):
            return f"{expr.op}({a}, {b})"
        if expr.op not in _PY_OPS:
            raise GridError(f"a grid extent uses the operator '{expr.op}', which the host cannot evaluate")
        if expr.op in _SIZED:
            return f"{_SIZED[expr.op].__name__}({a}, {b})"
        return f"({a} {expr.op} {b})"
    if isinstance(expr, UnaryOp):
        x = py_source(expr.x, names)
        if expr.op not in ("-", "~", "not"):
            raise GridError(f"a grid extent uses the operator '{expr.op}', which the host cannot evaluate")
        return f"({expr.op} {x})"
    if isinstance(expr, Call):
        if expr.fn in ("min", "max") and len(expr.args) == 2:
            return f"{expr.fn}({', '.join(py_source(x, names) for x in expr.args)})"
        raise GridError(f"a grid extent calls '{expr.fn}', which the host cannot evaluate")
    if isinstance(expr, Cast):
        # int() truncates toward zero, as a C cast from float to integer does
        conv = "int" if expr.dtype.is_int else "bool" if expr.dtype.is_bool else "float"
        return f"{conv}({py_source(expr.x, names)})"
    if isinstance(expr, Select):
        cond, a, b = (py_source(x, names) for x in (expr.cond, expr.a, expr.b))
        return f"({a} if {cond} else {b})"
    raise GridError(f"a grid extent is a {type(expr).__name__}, which the host cannot evaluate")


def grid_source(grid: Sequence[Expr], names: dict[str, str], persistent_blocks: int | None = None,
                cluster: int = 1, kernel: str = "") -> str:
    """The launch grid `(x, y, z)` as one Python tuple expression (missing dimensions are 1);
    extents whose IR dtype is not an integer are checked by `extent` at run time.  With
    `persistent_blocks`, `grid` counts the tiles of a persistent kernel (named `kernel` in its
    errors), which launches at most that many blocks (one per SM), in clusters of `cluster` that
    take `cluster` tiles at a time."""
    if not 1 <= len(grid) <= 3:
        raise GridError(f"a launch grid has 1 to 3 dimensions, not {len(grid)}")
    parts = [py_source(e, names) if e.dtype.is_int else f"extent({py_source(e, names)})" for e in grid]
    text = "(" + ", ".join(parts + ["1"] * (3 - len(parts))) + ")"
    if not persistent_blocks:
        return text
    return f"persistent({text}, {int(persistent_blocks)}, {int(cluster)}, {kernel!r})"


def compile_grid(grid: Sequence[Expr], slots: dict[str, int], persistent_blocks: int | None = None,
                 cluster: int = 1, kernel: str = "") -> Callable[[Sequence], tuple[int, int, int]]:
    """A function of a launch's values (indexed by `slots`) giving the grid `(x, y, z)`; its
    errors name `kernel`.  Made of closures over Python's own operators (`py_function`), those of
    `grid_source`'s text (the function the fast paths compile): compiling that text cost a
    cached first call 0.34 ms on the H200, more than the launch it serves, and writing it,
    which nothing the general path runs reads, ~0.1 M instructions (#15)."""
    if not 1 <= len(grid) <= 3:
        raise GridError(f"a launch grid has 1 to 3 dimensions, not {len(grid)}")
    parts = [py_function(e, slots) if e.dtype.is_int else _extent_of(py_function(e, slots)) for e in grid]
    parts += [lambda vals: 1] * (3 - len(parts))
    x, y, z = parts

    def tiles(vals):
        try:
            return x(vals), y(vals), z(vals)
        except ZeroDivisionError:
            return empty_despite_division(parts, vals)

    def blocks(vals):
        return persistent(tiles(vals), most, cluster, kernel)
    most = int(persistent_blocks or 0)
    return _guarded(blocks if persistent_blocks else tiles, None,
                    what=f"the grid of kernel '{kernel}'" if kernel else "a grid extent")


def empty_despite_division(parts: Sequence[Callable], vals) -> tuple:
    """A grid one of whose extents divides by zero: empty where another extent is 0 (no block
    runs, so none reads the value that divided: std.attention's flash_decode, whose split count
    divides by its items B * HK * ..., at B = 0), the extent that divided given as 0; else the
    ZeroDivisionError again."""
    extents = []
    for part in parts:
        try:
            extents.append(part(vals))
        except ZeroDivisionError:
            extents.append(None)
    empty = _empty_grid(extents)
    if empty is None:
        raise ZeroDivisionError
    return empty


def _empty_grid(extents: list) -> tuple | None:
    """Extents, None for each that divided by zero: the empty grid they make where another is 0
    (those that divided given as 0), else None."""
    return tuple(0 if n is None else n for n in extents) if 0 in extents else None


def _extent_of(f):
    return lambda vals: extent(f(vals))


# Python's operators by the name `py_source` writes them with (`and`, `or`, `**`, `<<` apart)
_OPERATORS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
              "//": operator.floordiv, "%": operator.mod, ">>": operator.rshift, "&": operator.and_,
              "|": operator.or_, "^": operator.xor, "==": operator.eq, "!=": operator.ne, "<": operator.lt,
              "<=": operator.le, ">": operator.gt, ">=": operator.ge, "min": min, "max": max, **_SIZED}
_UNARY = {"-": operator.neg, "~": operator.invert, "not": operator.not_}


def py_function(expr: Expr, slots: dict[str, int]) -> Callable:
    """`expr` as a function of the values (each name at its place in `slots`) that computes what
    `py_source`'s text computes, operator for operator (tests/runtime/test_grid.py evaluates
    both), with no call to Python's compiler; the same errors for what the host cannot
    evaluate."""
    if isinstance(expr, Const):
        value = expr.value
        return lambda vals: value
    if isinstance(expr, Var):
        if expr.name not in slots:
            raise GridError(f"a grid extent reads '{expr.name}', which is neither a scalar "
                            f"parameter nor a shape symbol")
        i = slots[expr.name]
        return lambda vals: vals[i]
    if isinstance(expr, BinOp):
        a, b = py_function(expr.a, slots), py_function(expr.b, slots)
        if expr.op == "and":
            return lambda vals: a(vals) and b(vals)
        if expr.op == "or":
            return lambda vals: a(vals) or b(vals)
        if expr.op not in _OPERATORS:
            raise GridError(f"a grid extent uses the operator '{expr.op}', which the host cannot evaluate")
        op = _OPERATORS[expr.op]
        return lambda vals: op(a(vals), b(vals))
    if isinstance(expr, UnaryOp):
        x = py_function(expr.x, slots)
        if expr.op not in _UNARY:
            raise GridError(f"a grid extent uses the operator '{expr.op}', which the host cannot evaluate")
        op = _UNARY[expr.op]
        return lambda vals: op(x(vals))
    if isinstance(expr, Call):
        if expr.fn in ("min", "max") and len(expr.args) == 2:
            op, (a, b) = _OPERATORS[expr.fn], (py_function(x, slots) for x in expr.args)
            return lambda vals: op(a(vals), b(vals))
        raise GridError(f"a grid extent calls '{expr.fn}', which the host cannot evaluate")
    if isinstance(expr, Cast):
        conv = int if expr.dtype.is_int else bool if expr.dtype.is_bool else float  # int() truncates toward zero
        x = py_function(expr.x, slots)
        return lambda vals: conv(x(vals))
    if isinstance(expr, Select):
        cond, a, b = (py_function(x, slots) for x in (expr.cond, expr.a, expr.b))
        return lambda vals: a(vals) if cond(vals) else b(vals)
    raise GridError(f"a grid extent is a {type(expr).__name__}, which the host cannot evaluate")


def persistent(tiles: tuple, blocks: int, cluster: int = 1, kernel: str = "") -> tuple:
    """The blocks of a persistent kernel over `tiles`: one dimension, at most `blocks`, whole
    clusters that each take `cluster` consecutive tiles; an empty or negative tile grid is
    passed on for the launch's own checks, more tiles than the kernel counts is an error."""
    if min(tiles) <= 0:
        return tiles
    count = tiles[0] * tiles[1] * tiles[2]
    if count > MAX_TILES:
        raise GridError(f"the persistent kernel '{kernel}' has {count} tiles ({' x '.join(map(str, tiles))}); "
                        f"it counts at most {MAX_TILES}")
    work = -(-count // cluster)
    return (cluster * min(work, blocks // cluster), 1, 1)


def launches_blocks(kernel: str, grid: tuple) -> bool:
    """Whether `grid` launches any block: False for an empty one (an extent of 0, as from an
    empty tensor: nothing to do); a `GridError` naming the dimension when the GPU cannot
    launch it (an extent below 0 or above `MAX_GRID`), never a truncated grid."""
    for axis, n, most in zip("xyz", grid, MAX_GRID):
        if not 0 <= n <= most:
            raise GridError(f"grid dimension {axis} of kernel '{kernel}' is {n}; the GPU allows 1 to {most}")
    return 0 not in grid


def compile_function(source: str, name: str, env: dict | None = None, what: str = "a grid extent") -> Callable:
    """Define the function `name` from Python `source`, with `extent`, `GridError` and `env` in
    its globals; a division by zero in it (or an overflow) becomes a `GridError` about `what`."""
    scope = {"extent": extent, "persistent": persistent, "GridError": GridError, **_HELPERS, **(env or {})}
    exec(compile(source, f"<tlc {name}>", "exec"), scope)
    return _guarded(scope[name], source, what)


def _guarded(fn: Callable, source: str | None, what: str) -> Callable:
    """`fn` with a division by zero (or an overflow) in it a `GridError` about `what`; `source`:
    its Python text, where it was compiled from one."""
    def guarded(*args):
        try:
            return fn(*args)
        except ZeroDivisionError:
            raise DividesByZero(f"{what} divides by zero") from None
        except (OverflowError, ValueError) as e:  # a float too large, a negative shift count
            raise GridError(f"{what} cannot be computed: {e}") from None
    guarded.unguarded = fn  # for callers that catch ZeroDivisionError themselves
    guarded.source = source
    return guarded


def extent(v) -> int:
    """A grid extent computed in floats, as an int; an error unless it is whole."""
    if isinstance(v, bool) or not isinstance(v, int):
        if isinstance(v, float) and v.is_integer():
            return int(v)
        raise GridError(f"a grid extent evaluated to {v!r}, not an integer")
    return v


def evaluate_int(expr: Expr, values: dict) -> int:
    """One integer expression over named scalar values (loop bounds for `tlc.workload`)."""
    names = {name: f"v[{name!r}]" for name in values}
    try:
        return int(eval(py_source(expr, names), {"extent": extent, **_HELPERS}, {"v": values}))  # noqa: S307 - our own IR text
    except ZeroDivisionError:
        raise DividesByZero("an extent divides by zero") from None
    except (OverflowError, ValueError) as e:  # a float too large, a negative shift count
        raise GridError(f"an extent cannot be computed: {e}") from None


def grid_extents(kernel, values: dict) -> list[int]:
    """`kernel`'s grid (x first) over `values` (its scalars and shape sizes by name), as the
    interpreter and the cpu target launch it; where a dimension cannot be computed, a
    `GridError` naming the kernel's line, the dimension, its expression and the sizes it read
    (the sizes are the caller's: `H // HK` of H = 2, HK = 8 divides by zero), unless it divides
    by zero and another dimension is 0: an empty grid (`empty_despite_division`)."""
    from ..ir.printer import expr as expr_text
    from ..ir.walk import variables

    def error(axis, g, e) -> GridError:
        read = sorted({v.name for v in variables(g) if v.name in values})
        where = f" ({kernel.span.file}:{kernel.span.line})" if kernel.span is not None else ""
        sizes = f" with {', '.join(f'{n} = {values[n]}' for n in read)}" if read else ""
        reason = str(e).removeprefix("an extent ").removeprefix("a grid extent ")
        return GridError(f"kernel '{kernel.name}'{where}: grid dimension {axis}, {expr_text(g)}{sizes}, {reason}")

    extents, divided = [], None  # the first dimension that divides by zero: its error
    for axis, g in zip("xyz", kernel.grid):
        try:
            extents.append(evaluate_int(g, values))
        except DividesByZero as e:
            extents.append(None)
            divided = divided or error(axis, g, e)
        except GridError as e:
            raise (divided or error(axis, g, e)) from None
    if divided is not None:
        empty = _empty_grid(extents)
        if empty is None:
            raise divided
        extents = list(empty)
    return extents
