"""Inputs and outputs of `tlc run`: arrays from `.npy` files or numbers, random arrays shaped
by `--shape`, outputs as .npy bytes (`tlc.files.write_all` writes them), and a one-line summary
of an array.

Owns every error a user can make with them (a missing shape symbol, an unreadable file, a
wrong dtype or rank), each naming the parameter; no output file is ever left half-written.
"""
from __future__ import annotations

import math
import os

import numpy as np

from .diagnostics import TlcError
from .dtypes import DType, from_numpy
from .typecheck import CheckedFunction
from .typecheck.consteval import NotConstant, evaluate
from .parser import nodes as n
from .runtime.args import I32_MAX
from .scalars import ScalarError, scalar_value


class InputError(TlcError):
    """A `--in`, `--shape` or `--out` that does not fit the kernel."""


def parse_assignments(items, what: str) -> dict:
    """`NAME=VALUE` options (repeatable, commas allowed) as a dict."""
    out = {}
    for item in items:
        for part in item.split(","):
            if not part.strip():
                continue
            name, eq, value = part.partition("=")
            if not eq or not name.strip():  # 'BM', '=3': no name
                raise InputError(f"{what} takes NAME=VALUE, not '{part}'")
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
    """The value of `--in NAME=NUMBER` for a scalar of `dtype`, checked as the Python API
    checks it (`tlc.scalars`): `--in n=1099511627776` for an i32 says so, not NumPy."""
    value = None
    if dtype.is_bool and text in ("True", "true", "False", "false"):
        value = text in ("True", "true")
    for parse in (lambda t: int(t, 0), float):
        if value is None:
            try:
                value = parse(text)
            except ValueError:
                pass
    if value is None:
        raise InputError(f"--in {param}={text}: '{param}' is a scalar of type {dtype}; give a number")
    if value in (math.inf, -math.inf) and "inf" not in text.lower():  # 1e400: beyond even a double
        raise InputError(f"--in {param}={text}: scalar '{param}' ({dtype}) cannot hold {text}")
    try:
        return dtype.numpy().type(scalar_value(dtype, value))
    except ScalarError as e:
        raise InputError(f"--in {param}={text}: scalar '{param}' ({dtype}) {e}") from None


def load_arrays(fn: CheckedFunction, ins: dict) -> dict:
    """The arrays that `ins` gives for `fn`'s array parameters, read from their .npy files (a
    dtype parameter is bound from them before `prepare` checks them)."""
    arrays = {}
    for p in fn.tensor_params:
        if p.name in ins:
            text = ins[p.name]
            if not os.path.exists(text) and _is_number(text):
                raise InputError(f"--in {p.name}={text}: '{p.name}' is an array ({p.type}); "
                                 f"give a .npy file: --in {p.name}=FILE.npy")
            arrays[p.name] = load_npy(p.name, text)
    return arrays


def _is_number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        try:
            int(text, 0)
            return True
        except ValueError:
            return False


def shape_size(name: str, text: str) -> int:
    """`--shape NAME=TEXT`'s size: a whole number from 0 to I32_MAX, as the launchers check a
    shape symbol (its digits counted before int(), which refuses 4301 of them)."""
    digits = text.strip().lstrip("+-")
    if len(digits) > 10:
        raise InputError(f"--shape {name}={text}: a size is at most {I32_MAX} (shape symbols are i32)")
    try:
        size = int(text)
    except ValueError:
        raise InputError(f"--shape {name}={text}: a size is a whole number") from None
    if size < 0:
        raise InputError(f"--shape {name}={text}: a size cannot be negative")
    if size > I32_MAX:
        raise InputError(f"--shape {name}={text}: a size is at most {I32_MAX} (shape symbols are i32)")
    return size


def prepare(fn: CheckedFunction, ins: dict, shapes: dict, seed: int = 0, arrays: dict | None = None) -> dict:
    """Every runtime argument of `fn` (already specialized): from `ins` (a path or a number;
    `arrays` holds the files already read), else random, shaped by `shapes` and by the symbols
    the given arrays bind."""
    if seed < 0:  # NumPy's generators take any whole number from 0 up
        raise InputError(f"--seed {seed}: a seed is a whole number from 0 up")
    unknown = set(ins) - {p.name for p in fn.runtime_params}
    if unknown:
        names = ", ".join(p.name for p in fn.runtime_params)
        raise InputError(f"'{fn.name}' has no array or scalar parameter {', '.join(sorted(unknown))}; it takes {names}")
    symbols: dict = {}
    for k, v in shapes.items():
        if k not in fn.shape_symbols:
            raise InputError(f"--shape {k}: '{fn.name}' has no shape symbol '{k}'"
                             + (f"; its symbols are {', '.join(fn.shape_symbols)}" if fn.shape_symbols else ""))
        symbols[k] = shape_size(k, v)
    arrays = load_arrays(fn, ins) if arrays is None else arrays
    values: dict = {}
    for p in fn.runtime_params:
        if p.name not in ins or p.role != "tensor":
            continue
        text, arr = ins[p.name], arrays[p.name]
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
    random_shapes = {}
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
        for axis, d in enumerate(p.type.shape):
            if isinstance(d, n.Name) and d.id in fn.shape_symbols:
                if d.id not in symbols:
                    raise InputError(f"'{p.name}' is {p.type}: give the size of '{d.id}' with --shape {d.id}=..., "
                                     f"or the array with --in {p.name}=FILE.npy")
                shape.append(symbols[d.id])
            else:
                try:  # a constant, or an expression of the symbols (K // 2)
                    shape.append(int(evaluate(d, {**fn.constants, **symbols})))
                except NotConstant:
                    raise InputError(f"cannot tell the size of '{p.name}' ({p.type}): give the sizes of its "
                                     "symbols with --shape") from None
                if shape[-1] < 0:  # conv2d's output of a kernel larger than the image
                    raise InputError(_negative_dimension(p, axis, d, shape[-1], symbols))
        random_shapes[p] = tuple(shape)
    _check_memory(random_shapes)
    rng = np.random.default_rng(seed)
    for p, shape in random_shapes.items():
        values[p.name] = random_array(rng, shape, p.type.dtype)
    return values


def _negative_dimension(p, axis: int, d, size: int, symbols: dict) -> str:
    """The error of a random input whose dimension, an expression of the sizes given, is below 0."""
    from .typecheck.dims import free_names
    from .typecheck.types import format_dim

    names = dict.fromkeys(x.id for x in free_names(d) if x.id in symbols)
    given = ", ".join(f"{name} = {symbols[name]}" for name in names)
    return (f"--shape: '{p.name}' is {p.type}, whose axis {axis}, {format_dim(d)}, is {size} with {given}: "
            "give sizes that make it 0 or more")


def _check_memory(shapes: dict) -> None:
    """Refuse random inputs that cannot be allocated, before allocating them (NumPy would end
    in MemoryError, or the machine would swap): their bytes, and the 4 bytes an element that
    `random_array` draws them through, against the memory available now."""
    if not shapes:
        return
    sizes = {p: math.prod(shape) for p, shape in shapes.items()}
    need = sum(size * p.type.dtype.itemsize for p, size in sizes.items()) + 4 * max(sizes.values())
    free = available_memory()
    if free is not None and need > free:
        names = ", ".join(f"{p.name} ({p.type.dtype}[{', '.join(map(str, shapes[p]))}])" for p in shapes)
        raise InputError(f"--shape: the random inputs {names} take {_gib(need)} but {_gib(free)} of memory "
                         f"is available; give smaller sizes")


def _gib(size: int) -> str:
    return f"{size / 2**30:.1f} GiB"


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation (Linux's MemAvailable), or None when the
    system does not say."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def random_array(rng, shape: tuple, dtype: DType) -> np.ndarray:
    """Random values of `dtype`, never all zero: normal floats, small integers, random bools;
    drawn in at most 4 bytes an element besides the result."""
    if dtype.is_bool:
        return rng.random(shape, dtype=np.float32) < 0.5
    if dtype.is_int:
        lo = 0 if dtype.kind == "uint" else -8
        hi = lo + (15 if dtype.packed else 16)  # i4: -8..7, u4: 0..15
        drawn = rng.integers(lo, hi + 1, size=shape, dtype=np.int8 if dtype.packed else dtype.numpy())
        return drawn.astype(dtype.numpy(), copy=False)
    if dtype.name == "e8m0":  # scales: powers of two from 1/16 to 16
        return np.exp2(rng.integers(-4, 5, size=shape).astype(np.float32)).astype(dtype.numpy())
    drawn = rng.standard_normal(shape, dtype=np.float64 if dtype.bits == 64 else np.float32)
    return drawn.astype(dtype.numpy(), copy=False)


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
