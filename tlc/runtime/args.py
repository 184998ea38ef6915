"""Launch arguments on the GPU: NumPy, CuPy and PyTorch arrays (and anything exposing
`__cuda_array_interface__`) checked against a kernel's params and turned into the values
`cuLaunchKernel` takes.

Owns every error a caller can cause at a GPU launch, worded as the interpreter words them
(`tlc/interp/args.py`), plus the GPU's own: a non-contiguous device array, an array on another
GPU, a PyTorch tensor on the CPU.  Owns nothing that needs a GPU: `Binder.bind` only reads
arrays, so it is tested on machines without one.  NumPy arrays are recorded for `launch.py` to
copy to the device and, when the kernel writes them, back.

This is the general path.  A launch with CuPy arrays only takes `fastpath.py` first, which
accepts what this module accepts and hands everything else, errors included, to this one.
Everything that depends only on the kernel is still worked out once, into tuples.
"""
from __future__ import annotations

import math
import sys
from typing import Callable

import numpy as np

from ..diagnostics import TlcError
from ..dtypes import DTYPES, DType, from_numpy
from ..frozen import frozen
from ..ir.nodes import DimExpr, Kernel, host_dims
from ..ir.stepped_loops import I32_MAX
from ..ir.walk import statements, variables, written_names
from ..scalars import ScalarError, float_limit, scalar_value
from . import loop_bounds, overlap
from .device_array import DeviceArray
from .grid import DividesByZero, GridError, compile_function, py_function, py_source

I32_MAX = 2**31 - 1
SYMBOL_TYPES = {"i32": (I32_MAX, np.int32), "i64": (2**63 - 1, np.int64)}  # a shape symbol's limit and C value
NUMPY, CUPY, TORCH, CAI, DEVICE, OTHER = range(6)  # how an argument's array is read


class LaunchArgumentError(TlcError):
    """A launch argument that does not fit the kernel: the message names the parameter."""


class LaunchContractError(TlcError):
    """The generated kernel's parameters disagree with its IR: a tlc bug."""


# ---- dtypes of foreign arrays ------------------------------------------------------------------

_NP_TO_TL: dict = {}
_TORCH_NAMES = {"bool": "bool", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
                "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
                "float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64",
                "float8_e4m3fn": "f8e4m3", "float8_e5m2": "f8e5m2"}
_TORCH_TO_TL: dict = {}
_TL_TO_TORCH = {tl: name for name, tl in _TORCH_NAMES.items()}


def tl_dtype_of_numpy(dtype) -> DType | None:
    try:
        return _NP_TO_TL[dtype]
    except KeyError:
        _NP_TO_TL[dtype] = found = from_numpy(dtype)
        return found


def tl_dtype_of_torch(dtype) -> DType | None:
    try:
        return _TORCH_TO_TL[dtype]
    except KeyError:
        name = _TORCH_NAMES.get(str(dtype).removeprefix("torch."))
        _TORCH_TO_TL[dtype] = found = DTYPES[name] if name else None
        return found


def torch_dtype(torch, dt: DType):
    """PyTorch's dtype for a tlc dtype (the inverse of `tl_dtype_of_torch`), from the module
    `torch` the caller has imported."""
    return getattr(torch, _TL_TO_TORCH[dt.name])


def array_dtype(value) -> DType | None:
    """The tlc dtype of an array of any kind the launcher takes, or None (not an array, or a
    dtype tlc lacks); binds dtype parameters from arguments."""
    kind = array_kind(value)
    if kind == NUMPY or kind == CUPY:
        return tl_dtype_of_numpy(value.dtype)
    if kind == TORCH:
        return tl_dtype_of_torch(value.dtype)
    if kind == DEVICE:
        return value.dtype
    if kind == CAI:
        return tl_dtype_of_numpy(np.dtype(value.__cuda_array_interface__["typestr"]))
    return None


def _dtype_name(tl: DType | None, foreign) -> str:
    return tl.name if tl is not None else str(foreign).removeprefix("torch.")


# ---- array kinds -------------------------------------------------------------------------------

_KINDS: dict[type, int] = {}


def array_kind(value) -> int:
    """NUMPY, CUPY, TORCH, DEVICE (a `DeviceArray`), CAI (any other `__cuda_array_interface__`)
    or OTHER; cached per type."""
    t = type(value)
    try:
        return _KINDS[t]
    except KeyError:
        pass
    cupy, torch = sys.modules.get("cupy"), sys.modules.get("torch")
    if isinstance(value, np.ndarray):
        kind = NUMPY
    elif cupy is not None and isinstance(value, cupy.ndarray):
        kind = CUPY
    elif torch is not None and isinstance(value, torch.Tensor):
        kind = TORCH
    elif isinstance(value, DeviceArray):
        kind = DEVICE
    elif hasattr(value, "__cuda_array_interface__"):
        kind = CAI
    else:
        kind = OTHER
    _KINDS[t] = kind
    return kind


def _c_strides(shape, itemsize: int) -> tuple:
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= n
    return tuple(reversed(strides))


def _cai_contiguous(shape, strides, itemsize: int) -> bool:
    if strides is None or 0 in shape:
        return True
    # a dimension of size 1 may carry any stride: it is never stepped over
    return all(n == 1 or s == c for n, s, c in zip(shape, strides, _c_strides(shape, itemsize)))


# ---- scalars -----------------------------------------------------------------------------------

_C_SCALARS = {
    "bool": np.bool_, "int8_t": np.int8, "signed char": np.int8, "char": np.int8,
    "uint8_t": np.uint8, "unsigned char": np.uint8, "int16_t": np.int16, "short": np.int16,
    "uint16_t": np.uint16, "unsigned short": np.uint16, "int": np.int32, "int32_t": np.int32,
    "unsigned": np.uint32, "unsigned int": np.uint32, "uint32_t": np.uint32,
    "long long": np.int64, "int64_t": np.int64, "long": np.int64,
    "unsigned long long": np.uint64, "uint64_t": np.uint64,
    "float": np.float32, "double": np.float64,
}


def scalar_converter(name: str, dt: DType, c_type: str) -> Callable:
    """`convert(value) -> (C value, Python value)` for a scalar param: the C value has the
    parameter's C type (CuPy would pass a bare int as `long long`), the Python value feeds the
    grid.  What is accepted is `tlc.scalars`'s; a plain Python number of the dtype's kind
    inside its range skips every other test."""
    c_type = " ".join(c_type.replace("const", " ").split())
    ctor = _C_SCALARS.get(c_type)
    if ctor is None:
        raise LaunchContractError(f"scalar '{name}' has the C type '{c_type}', which the launcher "
                                  f"does not know (a tlc bug)")

    def checked(value):
        try:
            return scalar_value(dt, value)
        except ScalarError as e:
            raise LaunchArgumentError(f"scalar '{name}' ({dt}) {e}") from None

    if dt.is_int:
        info = np.iinfo(dt.numpy())
        lo, hi = int(info.min), int(info.max)

        def convert(value):
            if type(value) is not int or not lo <= value <= hi:
                value = checked(value)
            return ctor(value), value
        return convert

    if dt.is_bool:
        def convert(value):
            if type(value) is not bool:
                value = checked(value)
            return ctor(value), value
        return convert

    limit = float_limit(dt)

    def convert(value):  # floats, f16 and bf16 passed as C float
        if type(value) is not float or not -limit <= value <= limit:
            value = checked(value)
        return ctor(value), value
    return convert


# ---- the binder --------------------------------------------------------------------------------

class Bound:
    """One launch's values: `args` in the kernel's C parameter order (pointers as uint64,
    CuPy arrays as themselves, scalars in their C types), `values` the same slots as Python
    numbers (for the grid), `host` the NumPy arrays to copy as `(slot, array, written)`, and
    `torch_device` the GPU of the first PyTorch tensor (its current stream is used), or -1."""

    __slots__ = ("args", "values", "host", "torch_device")

    def __init__(self, args, values, host, torch_device):
        self.args, self.values, self.host, self.torch_device = args, values, host, torch_device


@frozen
class LaunchFacts:
    """What a launch needs of a kernel's IR besides its `GeneratedKernel`: its name and params,
    its shape symbols, the params its body writes and its device_asserts (their sites, and their
    conditions: runtime/host_asserts.py).  The program cache stores these beside the IR, so that
    a launch from the cache decodes them and not the IR (the IR, a few thousand objects of tlc's
    data classes, is decoded when something asks)."""

    name: str
    params: tuple
    symbols: tuple
    written: frozenset
    asserts: tuple
    assert_conds: tuple = ()
    loops: tuple = ()  # the loops whose i32 counter a launch checks (runtime/loop_bounds.py)

    @staticmethod
    def of(kernel: Kernel) -> "LaunchFacts":
        from ..device_assert import sites

        conds = tuple(s.cond for s in statements(kernel.body) if getattr(s, "cond", None) is not None and hasattr(s, "fmt"))
        return LaunchFacts(kernel.name, tuple(kernel.params), kernel.shape_symbols(),
                           frozenset(written_names(kernel.body)), sites(kernel.body), conds,
                           loop_bounds.counted_loops(kernel))


class Binder:
    """Checks a launch's arguments against one kernel (its IR or its `LaunchFacts`) and binds
    them, with everything that depends only on the kernel worked out at construction."""

    def __init__(self, kernel: Kernel | LaunchFacts, generated):
        facts = kernel if isinstance(kernel, LaunchFacts) else LaunchFacts.of(kernel)
        self.facts = facts
        written, symbols, params = facts.written, facts.symbols, list(facts.params)
        expect = [(p.name, p.kind) for p in params] + [(s, "shape") for s in symbols] \
            + [(d.arg, "dim") for d in host_dims(params)]
        got = [(a.name, a.kind) for a in generated.args]
        if got != expect:
            raise LaunchContractError(f"the generated kernel '{generated.name}' takes {got} but its IR "
                                      f"has {expect} (a tlc bug)")
        self.names = tuple(p.name for p in params)
        # (a dimension the launch computes, schedule/host_dims.py, is no name of the .tl program:
        # its slot is found by its expression, whose checked size it is given)
        self.slots = {a.name: i for i, a in enumerate(generated.args) if a.kind != "dim"}
        self.n_args = len(generated.args)
        first: dict[str, tuple[str, int]] = {}
        tensors, scalars, expressions = [], [], []
        for i, (p, a) in enumerate(zip(params, generated.args)):
            if p.kind == "scalar":
                scalars.append((i, p.name, scalar_converter(p.name, p.dtype, a.c_type)))
                continue
            dims = []
            for axis, d in enumerate(p.shape):
                if isinstance(d, DimExpr):  # K // 2: the size goes to a slot past the args, checked after
                    slot = self.n_args + len(expressions)
                    self.slots.setdefault(d, slot)  # the tensor maps of launch.py read it there
                    expressions.append((slot, p.name, axis, d))
                    dims.append((axis, d, slot, None))
                elif isinstance(d, int):
                    dims.append((axis, d, -1, None))
                else:
                    origin = first.setdefault(d, (p.name, axis))
                    # the first use binds the symbol; later uses compare with it
                    dims.append((axis, d, self.slots[d], None if origin == (p.name, axis) else origin))
            label = f"{p.dtype}[{', '.join(str(d) for d in p.shape)}]"
            tensors.append((i, p.name, p.dtype, len(p.shape), tuple(dims), p.name in written, label))
        self.tensors, self.scalars = tuple(tensors), tuple(scalars)
        # the tensors that must not share memory (runtime/overlap.py), as positions in `tensors`
        self.overlap_pairs = overlap.pairs(tuple(t[1] for t in tensors), written)
        self.n_values = self.n_args + len(expressions)
        self.expressions = tuple((slot, name, axis, d, compile_function(
            f"def dim(vals):\n    return {py_source(d.expr, {s: f'vals[{self.slots[s]}]' for s in symbols})}\n", "dim",
            what=f"the dimension {d} of '{name}'"), first) for slot, name, axis, d in expressions)
        # per symbol: its slot, name, dtype (i32, or i64 for a flat view's count), the most it
        # holds and its C value's type
        self.symbols = tuple((self.slots[a.name], a.name, a.dtype, *SYMBOL_TYPES[a.dtype.name])
                             for a in generated.args if a.kind == "shape")
        # per dimension the launch computes: its slot, the slot of its checked size, its param and expression
        first_use = {}
        for slot, name, _, d in expressions:
            first_use.setdefault(d, (slot, name, d))
        dims = {d.arg: first_use[d] for d in host_dims(params)}
        self.dims = tuple((i, *dims[a.name]) for i, a in enumerate(generated.args) if a.kind == "dim")
        # per checked loop: its bounds as functions of the values (runtime/loop_bounds.py)
        self.loops = tuple(filter(None, (_loop_bounds(loop, self.slots) for loop in facts.loops)))

    def bind(self, args: dict, device: int, device_of: Callable[[int], int] | None = None) -> Bound:
        """Check `args` (param name -> array or number) for a launch on GPU `device`;
        `device_of(pointer)` names the GPU of a bare `__cuda_array_interface__` pointer."""
        if len(args) != len(self.names) or any(n not in args for n in self.names):
            self._names_error(args)
        kargs = [None] * self.n_args
        values = [None] * self.n_values
        host = []
        torch_device = -1
        ranges = []  # per tensor, the bytes [start, end) it lies in (runtime/overlap.py)
        for i, name, dt, rank, dims, written, label in self.tensors:
            v = args[name]
            kind = array_kind(v)
            if kind == CUPY:
                tl = tl_dtype_of_numpy(v.dtype)
                if tl is not dt and tl != dt:
                    self._dtype_error(name, tl, v.dtype, dt)
                shape = v.shape
                self._check_shape(name, shape, rank, dims, values, label)
                if not v.flags.c_contiguous:
                    self._contiguity_error(name, "cupy.ascontiguousarray({})")
                if v.data.device_id != device:
                    self._device_error(name, v.data.device_id, device)
                kargs[i] = v
                ranges.append(_dense_range(v.data.ptr, shape, dt))
            elif kind == TORCH:
                tl = tl_dtype_of_torch(v.dtype)
                if tl is not dt and tl != dt:
                    self._dtype_error(name, tl, v.dtype, dt)
                shape = tuple(v.shape)
                self._check_shape(name, shape, rank, dims, values, label)
                dev = v.get_device()
                if dev < 0:
                    raise LaunchArgumentError(f"'{name}' is a PyTorch tensor on the CPU; pass "
                                              f"{name}.cuda() or a NumPy array ({name}.numpy())")
                if not v.is_contiguous():
                    self._contiguity_error(name, "{}.contiguous()")
                if dev != device:
                    self._device_error(name, dev, device)
                if torch_device < 0:
                    torch_device = dev
                kargs[i] = np.uint64(v.data_ptr())
                ranges.append(_dense_range(v.data_ptr(), shape, dt))
            elif kind == NUMPY:
                tl = tl_dtype_of_numpy(v.dtype)
                if tl is not dt and tl != dt:
                    self._dtype_error(name, tl, v.dtype, dt)
                self._check_shape(name, v.shape, rank, dims, values, label)
                if written and not v.flags.writeable:
                    raise LaunchArgumentError(f"'{name}' is read-only but the kernel writes it")
                if written and overlap.repeats_elements(v):
                    raise LaunchArgumentError(overlap.repeats_message(self.facts.name, name))
                host.append((i, v, written))  # non-contiguous is fine: it is copied densely
                ranges.append(overlap.host_range(v))
            elif kind == CAI:
                cai = v.__cuda_array_interface__
                foreign = np.dtype(cai["typestr"])
                tl = tl_dtype_of_numpy(foreign)
                if tl is not dt and tl != dt:
                    self._dtype_error(name, tl, foreign, dt)
                shape = tuple(cai["shape"])
                self._check_shape(name, shape, rank, dims, values, label)
                if not _cai_contiguous(shape, cai.get("strides"), foreign.itemsize):
                    self._contiguity_error(name, "cupy.ascontiguousarray({})")
                ptr, readonly = cai["data"]
                if written and readonly:
                    raise LaunchArgumentError(f"'{name}' is read-only but the kernel writes it")
                if ptr and device_of is not None:
                    dev = device_of(ptr)
                    if dev != device:
                        self._device_error(name, dev, device)
                kargs[i] = np.uint64(ptr)
                ranges.append(_dense_range(ptr, shape, dt))
            elif kind == DEVICE:
                if v.dtype is not dt and v.dtype != dt:
                    self._dtype_error(name, v.dtype, None, dt)
                self._check_shape(name, v.shape, rank, dims, values, label)
                if v.device != device:
                    self._device_error(name, v.device, device)
                kargs[i] = np.uint64(v.ptr)
                ranges.append(_dense_range(v.ptr, v.shape, dt))
            else:
                raise LaunchArgumentError(f"'{name}' must be a NumPy, CuPy or PyTorch array "
                                          f"({label}); got {type(v).__name__}")
        for i, name, convert in self.scalars:
            kargs[i], values[i] = convert(args[name])
        for i, s, dtype, most, ctor in self.symbols:
            n = values[i]
            if n > most:
                raise LaunchArgumentError(f"shape symbol '{s}' is {n}, more than an {dtype} holds")
            kargs[i] = ctor(n)
        for slot, name, axis, d, size_of, first in self.expressions:
            want = expected_size(size_of, values)
            if values[slot] != want:
                seen = {s: (values[self.slots[s]], *first[s]) for s in first}
                raise LaunchArgumentError(dim_mismatch(name, axis, values[slot], d, want, seen))
        for i, slot, name, d in self.dims:
            kargs[i] = np.int32(dim_value(name, d, values[slot], LaunchArgumentError))
        for a, b in self.overlap_pairs:
            if overlap.ranges_overlap(ranges[a], ranges[b]):
                self._overlap_error(args, a, b)
        if self.loops:
            self.check_loops(values)
        return Bound(kargs, values, host, torch_device)

    def check_loops(self, values: list) -> None:
        """Raise for a loop whose i32 counter these values (`Bound.values`) would step past i32,
        or by 0 (runtime/loop_bounds.py); a bound that divides by zero is left to the loop."""
        for loop, bounds in self.loops:
            try:
                got = tuple(b(values) for b in bounds)
            except ZeroDivisionError:
                continue
            names = {v.name: values[self.slots[v.name]] for b in (loop.start, loop.stop, loop.step) for v in variables(b)}
            error = loop_bounds.loop_error(self.facts.name, loop, got, names)
            if error is not None:
                raise LaunchArgumentError(error)

    # -- the checks that carry on past the common case, and the errors ---------------------------

    @staticmethod
    def _check_shape(name, shape, rank, dims, values, label) -> None:
        if len(shape) != rank:
            raise LaunchArgumentError(f"'{name}' has rank {len(shape)} but the kernel expects rank "
                                      f"{rank} ({label})")
        for axis, d, slot, origin in dims:
            n = shape[axis]
            if slot < 0:
                if n != d:
                    raise LaunchArgumentError(f"'{name}' axis {axis} has size {n} but the kernel "
                                              f"expects {d}")
            elif origin is None:
                values[slot] = n
            elif values[slot] != n:
                raise LaunchArgumentError(f"shape symbol '{d}' is {values[slot]} in '{origin[0]}' "
                                          f"(axis {origin[1]}) but {n} in '{name}' (axis {axis})")

    def _names_error(self, args: dict):
        for name in args:
            if name not in self.names:
                raise LaunchArgumentError(f"unexpected argument '{name}'; kernel '{self.facts.name}' "
                                          f"takes {', '.join(self.names)}")
        missing = next(n for n in self.names if n not in args)
        raise LaunchArgumentError(f"missing argument '{missing}'")

    def _overlap_error(self, args: dict, a: int, b: int) -> None:
        """Tensors `a` (written) and `b` (positions in `tensors`) whose byte ranges overlap: an
        error, unless both are NumPy arrays that interleave without sharing an element (two
        columns of one array; each is copied to the GPU on its own)."""
        first, second = self.tensors[a], self.tensors[b]
        x, y = args[first[1]], args[second[1]]
        if array_kind(x) == NUMPY and array_kind(y) == NUMPY and not overlap.host_arrays_share(x, y):
            return
        raise LaunchArgumentError(overlap.overlap_message(self.facts.name, first[1], second[1], second[5]))

    @staticmethod
    def _dtype_error(name, tl, foreign, expected):
        raise LaunchArgumentError(f"'{name}' has dtype {_dtype_name(tl, foreign)} but the kernel "
                                  f"expects {expected}")

    @staticmethod
    def _contiguity_error(name, fix):
        raise LaunchArgumentError(f"'{name}' is not C-contiguous; tlc kernels read tensors as dense "
                                  f"row-major arrays: pass {fix.format(name)}")

    @staticmethod
    def _device_error(name, dev, device):
        raise LaunchArgumentError(f"'{name}' is on GPU {dev} but the kernel runs on the current "
                                  f"device, GPU {device}; move it there, or make GPU {dev} current "
                                  f"(cupy.cuda.Device({dev}).use())")


def _loop_bounds(loop, slots: dict):
    """`(loop, its start, stop and step as functions of a launch's values)`, or None where the
    host cannot evaluate a bound (an operator `grid.py_function` lacks): left unchecked."""
    try:
        return loop, tuple(py_function(b, slots) for b in (loop.start, loop.stop, loop.step))
    except GridError:
        return None


def _dense_range(ptr: int, shape: tuple, dt: DType) -> tuple[int, int]:
    """The bytes `[start, end)` of a C-contiguous device array of dtype `dt` at `ptr` (the
    binder has checked its dtype, shape and contiguity)."""
    return ptr, ptr + math.prod(shape) * dt.itemsize


def expected_size(size_of: Callable, *args) -> int | None:
    """A dimension expression's size, `size_of(*args)`, or None where it divides by zero at these
    sizes (HK = 0 in HK * (H // HK)): `dim_mismatch` says so."""
    try:
        return size_of(*args)
    except DividesByZero:
        return None


def dim_value(name: str, d: DimExpr, size: int, error: type) -> int:
    """The checked size `size` of `d`, a dimension of `name` the launch passes as an i32 argument
    (schedule/host_dims.py): one past i32 raises `error` (the kernel would compute it wrapped)."""
    if size > I32_MAX:
        raise error(f"the dimension {d} of '{name}' is {size}, more than an i32 holds")
    return size


def dim_mismatch(name: str, axis: int, size: int, d: DimExpr, want: int | None, seen: dict) -> str:
    """The error of an array whose size differs from its dimension's expression, or (`want`
    None) whose expression divides by zero at these sizes (std.attention's HK * (H // HK) of
    HK = 0); `seen` maps each symbol to (value, param, axis) where it was bound."""
    bound = ", ".join(f"{s} = {seen[s][0]} from '{seen[s][1]}' (axis {seen[s][2]})"
                      for s in dict.fromkeys(v.name for v in variables(d.expr)))
    if want is None:
        return f"'{name}' axis {axis} has size {size} but the kernel expects {d}, which divides by zero ({bound})"
    return f"'{name}' axis {axis} has size {size} but the kernel expects {d} = {want} ({bound})"


def signature(args: tuple, device: int) -> tuple:
    """What a call's checks and its shape- and dtype-chosen constants depend on: per array its
    kind, dtype and shape (and a PyTorch tensor's device), per scalar its type, and the
    current GPU.  Calls with equal signatures may reuse the first one's launcher."""
    sig = [device]
    for a in args:
        kind = array_kind(a)
        if kind == TORCH:
            sig.append((kind, a.dtype, a.shape, a.get_device()))
        elif kind in (CUPY, NUMPY, DEVICE):
            sig.append((kind, a.dtype, a.shape))
        else:
            sig.append(type(a))
    return tuple(sig)
