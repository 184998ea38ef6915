"""Inputs and outputs of `tlc run`: arrays from `.npy` files or numbers, random arrays shaped
by `--shape`, outputs as .npy bytes (`tlc.files.write_all` writes them), and a one-line summary
of an array.

Owns every error a user can make with them (a missing shape symbol, an unreadable file, a
wrong dtype or rank), each naming the parameter; no output file is ever left half-written.
"""
from __future__ import annotations

import numpy as np

from .diagnostics import TlcError
from .dtypes import DType, from_numpy
from .typecheck import CheckedFunction
from .typecheck.consteval import NotConstant, evaluate
from .parser import nodes as n


class InputError(TlcError):
    """A `--in`, `--shape` or `--out` that does not fit the kernel."""


def parse_assignments(items, what: str) -> dict:
    """`NAME=VALUE` options (repeatable, commas allowed) as a dict."""
    out = {}
    for item in items:
        for part in item.split(","):
            if not part.strip():
                continue
            if "=" not in part:
                raise InputError(f"{what} takes NAME=VALUE, not '{part}'")
            name, value = part.split("=", 1)
            out[name.strip()] = value.strip()
    return out


def load_npy(param: str, path: str) -> np.ndarray:
    try:
        with open(path, "rb") as f:
            magic = f.read(6)
    except FileNotFoundError:
        raise InputError(f"--in {param}: no such file: {path}") from None
    except OSError as e:
        raise InputError(f"--in {param}: cannot read {path}: {e.strerror}") from None
    if magic != b"\x93NUMPY":
        raise InputError(f"--in {param}: {path} is not a .npy file (write one with numpy.save)")
    try:
        return np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise InputError(f"--in {param}: no such file: {path}") from None
    except (OSError, ValueError, EOFError) as e:
        raise InputError(f"--in {param}: cannot read {path} as a .npy array ({e})") from None


def _number(param: str, text: str, dtype: DType):
    try:
        value = int(text, 0) if dtype.is_int or dtype.is_bool else float(text)
    except ValueError:
        raise InputError(f"--in {param}={text}: '{param}' is a scalar of type {dtype}; give a number") from None
    return dtype.numpy().type(value)


def prepare(fn: CheckedFunction, ins: dict, shapes: dict, seed: int = 0) -> dict:
    """Every runtime argument of `fn` (already specialized): from `ins` (a path or a number),
    else random, shaped by `shapes` and by the symbols the given arrays bind."""
    rng = np.random.default_rng(seed)
    unknown = set(ins) - {p.name for p in fn.runtime_params}
    if unknown:
        names = ", ".join(p.name for p in fn.runtime_params)
        raise InputError(f"'{fn.name}' has no array or scalar parameter {', '.join(sorted(unknown))}; it takes {names}")
    symbols: dict = {}
    for k, v in shapes.items():
        if k not in fn.shape_symbols:
            raise InputError(f"--shape {k}: '{fn.name}' has no shape symbol '{k}'"
                             + (f"; its symbols are {', '.join(fn.shape_symbols)}" if fn.shape_symbols else ""))
        try:
            symbols[k] = int(v)
        except ValueError:
            raise InputError(f"--shape {k}={v}: a size is a whole number") from None
        if symbols[k] < 0:
            raise InputError(f"--shape {k}={v}: a size cannot be negative")
    values: dict = {}
    for p in fn.runtime_params:
        if p.name not in ins or p.role != "tensor":
            continue
        text = ins[p.name]
        arr = load_npy(p.name, text)
        want = p.type.dtype
        got = from_numpy(arr.dtype)
        if got != want:
            raise InputError(f"--in {p.name}: {text} holds {got or arr.dtype} values, but '{p.name}' is {p.type}")
        if arr.ndim != p.type.rank:
            raise InputError(f"--in {p.name}: {text} has {arr.ndim} dimension{'s' * (arr.ndim != 1)}, but '{p.name}' is {p.type}")
        for axis, (d, size) in enumerate(zip(p.type.shape, arr.shape)):
            if isinstance(d, n.Name) and d.id in fn.shape_symbols:
                if d.id in symbols and symbols[d.id] != size:
                    raise InputError(f"shape symbol '{d.id}' is {symbols[d.id]} from "
                                     f"{'--shape' if d.id in shapes else 'another input'} but {size} in '{p.name}' "
                                     f"(axis {axis}, {text})")
                symbols[d.id] = size
        values[p.name] = np.ascontiguousarray(arr)
    for p in fn.runtime_params:
        if p.name in values:
            continue
        if p.role == "scalar":
            if p.name in ins:
                values[p.name] = _number(p.name, ins[p.name], p.type.dtype)
            elif not p.has_default:
                raise InputError(f"the scalar parameter '{p.name}' needs a value: --in {p.name}=NUMBER")
            continue
        shape = []
        for d in p.type.shape:
            if isinstance(d, n.Name) and d.id in fn.shape_symbols:
                if d.id not in symbols:
                    raise InputError(f"'{p.name}' is {p.type}: give the size of '{d.id}' with --shape {d.id}=..., "
                                     f"or the array with --in {p.name}=FILE.npy")
                shape.append(symbols[d.id])
            else:
                try:
                    shape.append(int(evaluate(d, fn.constants)))
                except NotConstant:
                    raise InputError(f"cannot tell the size of '{p.name}'") from None
        values[p.name] = random_array(rng, tuple(shape), p.type.dtype)
    return values


def random_array(rng, shape: tuple, dtype: DType) -> np.ndarray:
    """Random values of `dtype`, never all zero: normal floats, small integers, random bools."""
    if dtype.is_bool:
        return rng.random(shape) < 0.5
    if dtype.is_int:
        lo = 0 if dtype.kind == "uint" else -8
        return rng.integers(lo, lo + 17, size=shape).astype(dtype.numpy())
    return rng.standard_normal(shape).astype(np.float32).astype(dtype.numpy())


def npy_bytes(array: np.ndarray) -> bytes:
    """`array` as the bytes of a .npy file (written by the caller, see tlc.files.write_all)."""
    import io

    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=False)
    return buf.getvalue()


def summary(name: str, array: np.ndarray) -> str:
    dt = from_numpy(array.dtype)
    shape = ", ".join(map(str, array.shape))
    if array.size == 0:
        return f"{name}: {dt}[{shape}] (empty)"
    data = array.astype(np.float64)
    finite = np.isfinite(data)
    stats = (f"min {data[finite].min():.6g}  max {data[finite].max():.6g}  mean {data[finite].mean():.6g}"
             if finite.any() else "no finite values")
    bad = int((~finite).sum())
    return f"{name}: {dt}[{shape}]  {stats}" + (f"  ({bad} non-finite)" if bad else "")
