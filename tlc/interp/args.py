"""Launch arguments of the interpreter: checking them against the kernel's params.

Owns the errors a caller can cause at launch (a missing or unexpected argument, a wrong dtype,
rank or size, shape symbols that disagree, a read-only output) and binding shape symbols from
the arrays.  Every message names the parameter.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..diagnostics import TlcError
from ..dtypes import from_numpy
from ..ir.nodes import DimExpr, Kernel, Param
from ..runtime.args import dim_mismatch, dim_value, expected_size
from ..runtime.grid import GridError, evaluate_int
from ..runtime import loop_bounds, overlap
from .numerics import np_dtype
from ..ir.walk import written_names
from ..scalars import ScalarError, scalar_value


class InterpError(TlcError):
    """A kernel that cannot run on the interpreter (bad arguments, a loop with step 0, ...)."""


class ArgumentError(InterpError):
    """A launch argument that does not fit the kernel's parameters."""


@dataclass
class Bound:
    tensors: dict[str, np.ndarray]
    scalars: dict[str, object]  # scalar params and shape symbols as NumPy scalars
    symbols: dict[str, int]
    # the dimensions the launch computes (schedule/host_dims.py) by argument, as i32 NumPy scalars:
    # what the cpu target's entry takes (the interpreter reads the arrays' shapes)
    dims: dict[str, object] = field(default_factory=dict)


def _dims(p: Param) -> str:
    return f"{p.dtype}[{', '.join(str(d) for d in p.shape)}]"


def _dtype_name(dtype: np.dtype) -> str:
    dt = from_numpy(dtype)
    return dt.name if dt is not None else str(dtype)


def written_tensors(kernel: Kernel) -> set[str]:
    """Names that the kernel body stores to, copies into or updates atomically."""
    return written_names(kernel.body)


def _scalar(p: Param, value):
    try:
        return np_dtype(p.dtype).type(scalar_value(p.dtype, value))
    except ScalarError as e:
        raise ArgumentError(f"scalar '{p.name}' ({p.dtype}) {e}") from None


def bind(kernel: Kernel, args: dict) -> Bound:
    names = [p.name for p in kernel.params]
    for name in args:
        if name not in names:
            raise ArgumentError(f"unexpected argument '{name}'; kernel '{kernel.name}' takes "
                                f"{', '.join(names)}")
    written = written_tensors(kernel)
    tensors: dict[str, np.ndarray] = {}
    scalars: dict[str, object] = {}
    seen: dict[str, tuple[int, str, int]] = {}  # symbol -> (value, param, axis)
    expressions = []  # (param, axis, DimExpr, size)
    for p in kernel.params:
        if p.name not in args:
            raise ArgumentError(f"missing argument '{p.name}'")
        value = args[p.name]
        if p.kind == "scalar":
            scalars[p.name] = _scalar(p, value)
            continue
        if not isinstance(value, np.ndarray):
            raise ArgumentError(f"'{p.name}' must be a NumPy array ({_dims(p)}); got "
                                f"{type(value).__name__}")
        if value.dtype != np_dtype(p.dtype):
            raise ArgumentError(f"'{p.name}' has dtype {_dtype_name(value.dtype)} but the kernel "
                                f"expects {p.dtype}")
        if value.ndim != len(p.shape):
            raise ArgumentError(f"'{p.name}' has rank {value.ndim} but the kernel expects rank "
                                f"{len(p.shape)} ({_dims(p)})")
        for axis, (d, n) in enumerate(zip(p.shape, value.shape)):
            if isinstance(d, DimExpr):
                expressions.append((p.name, axis, d, n))  # checked once every symbol is bound
            elif isinstance(d, int):
                if d != n:
                    raise ArgumentError(f"'{p.name}' axis {axis} has size {n} but the kernel "
                                        f"expects {d}")
            elif d in seen and seen[d][0] != n:
                v0, p0, a0 = seen[d]
                raise ArgumentError(f"shape symbol '{d}' is {v0} in '{p0}' (axis {a0}) but {n} "
                                    f"in '{p.name}' (axis {axis})")
            elif d not in seen:  # the first use binds the symbol (as runtime/args.py's Binder)
                seen[d] = (n, p.name, axis)
        if p.name in written and not value.flags.writeable:
            raise ArgumentError(f"'{p.name}' is read-only but the kernel writes it")
        tensors[p.name] = value
    symbols = {d: v for d, (v, _, _) in seen.items()}
    dims = {}
    for name, axis, d, n in expressions:
        want = expected_size(evaluate_int, d.expr, symbols)
        if n != want:
            raise ArgumentError(dim_mismatch(name, axis, n, d, want, seen))
        if d.arg and d.arg not in dims:
            dims[d.arg] = np.int32(dim_value(name, d, n, ArgumentError))
    for d, v in symbols.items():
        dtype = kernel.symbol_dtype(d)
        if v > np.iinfo(np_dtype(dtype)).max:
            raise ArgumentError(f"shape symbol '{d}' is {v}, more than an {dtype} holds")
        scalars[d] = np_dtype(dtype).type(v)
    _refuse_shared_memory(kernel.name, tensors, written)
    _refuse_loops_past_i32(kernel, scalars)
    return Bound(tensors, scalars, symbols, dims)


def _refuse_loops_past_i32(kernel: Kernel, scalars: dict) -> None:
    """A loop whose i32 counter these sizes would step past i32 (or by 0): the interpreter's
    Python range would end where the cpu target's loop does not (runtime/loop_bounds.py)."""
    loops = loop_bounds.counted_loops(kernel)  # a walk of the body, as `written_names` is per call
    if not loops:
        return
    names = {k: v.item() if isinstance(v, np.generic) else v for k, v in scalars.items()}
    for loop in loops:
        try:
            values = tuple(evaluate_int(b, names) for b in (loop.start, loop.stop, loop.step))
        except GridError:  # a bound that divides by zero: the loop's own error, where it runs
            continue
        error = loop_bounds.loop_error(kernel.name, loop, values, names)
        if error is not None:
            raise ArgumentError(error)


def _refuse_shared_memory(kernel: str, tensors: dict, written: set) -> None:
    """A written tensor that shares memory with another argument, or repeats an element: the
    interpreter would compute in place where the GPU's `__restrict__` makes it undefined
    (runtime/overlap.py)."""
    names = tuple(tensors)
    for name in names:
        if name in written and overlap.repeats_elements(tensors[name]):
            raise ArgumentError(overlap.repeats_message(kernel, name))
    ranges = [overlap.host_range(tensors[n]) for n in names]
    for i, j in overlap.pairs(names, written):
        a, b = tensors[names[i]], tensors[names[j]]
        if overlap.ranges_overlap(ranges[i], ranges[j]) and overlap.host_arrays_share(a, b):
            raise ArgumentError(overlap.overlap_message(kernel, names[i], names[j], names[j] in written))
