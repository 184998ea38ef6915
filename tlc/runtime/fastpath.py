"""The fast launch path: for one compiled kernel, a Python function written out and compiled
once that launches when every tensor argument is a plain CuPy array, or every one a PyTorch
tensor (by its address, on PyTorch's current stream), and every scalar a plain Python number,
with no loop, no helper call and no intermediate object; any other call it hands to the
general path (`fallback`).

Why generated code: a launch's host overhead is the goal (within 1 us of a bare
`cupy.RawKernel` call with the same arguments), and a generic loop over parameters costs
several microseconds in the interpreter.  This path only accepts; it never explains.  Any
argument it is not sure about (another array kind, a dtype or shape that does not match, a
written tensor that shares memory with another, a grid that is empty or too large, a kernel not
yet loaded on this device) sends the call to the general path (`launch.py`), which does the same
checks one by one and raises the error that names the parameter.  So this module holds no
error messages, and the general path stays the single definition of what is accepted.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from .args import SYMBOL_TYPES, _C_SCALARS
from ..ir.nodes import Const, DimExpr, host_dims
from ..scalars import float_limit
from .grid import compile_function, grid_source, py_source

_CACHE_SIZE = 4096  # distinct shape sizes, values of one scalar or tensor addresses, kept as ready C values


def build(compiled, fallback: Callable[[dict], object], positional: bool = False) -> Callable:
    """`call(args)` for `compiled` (a `launch.CompiledKernel`): launches and returns True, or
    returns `fallback(args)`.  With `positional`, `args` is a tuple in parameter order (what a
    positional call has), so no dict is built unless the call falls back."""
    import cupy

    from ..targets.base import MAX_GRID

    kernel_params, gen = compiled.params, compiled.launch_fields  # neither the IR nor the C decoded
    params = {p.name: p for p in kernel_params}
    contiguous = "_c_contiguous" if hasattr(cupy.ndarray, "_c_contiguous") else "flags.c_contiguous"
    names = tuple(p.name for p in kernel_params)
    if positional:
        def to_dict(t, _fallback=fallback, _names=names):
            return _fallback(dict(zip(_names, t)))
        fallback = to_dict
    env = {"fallback": fallback, "CUPY": cupy.ndarray, "get_device": cupy.cuda.runtime.getDevice, "functions": compiled._functions,
           "BLOCK": compiled.block, "SMEM": compiled.smem}
    lines = [f"if len(args) != {len(kernel_params)}:", "    return fallback(args)"]
    if positional:
        lines.append(", ".join(f"a{i}" for i in range(len(names))) + (", = args" if len(names) == 1 else " = args"))
    else:
        lines.append("try:")
        lines += [f"    a{i} = args[{p.name!r}]" for i, p in enumerate(kernel_params)]
        lines += ["except KeyError:", "    return fallback(args)"]
    tensors = [(i, p) for i, p in enumerate(kernel_params) if p.kind == "tensor"]
    single = cupy.cuda.runtime.getDeviceCount() == 1
    if tensors:
        env.update(TORCH=_Absent, PARAMETER=_Absent, streams=getattr(compiled, "_streams", {}),
                   raw_stream=None, _torch_dtypes={f"T{i}": p.dtype for i, p in tensors},
                   pointers={}, POINTER=_as_argument(np.uint64))  # address -> its C value
        for i, p in tensors:
            env[f"D{i}"], env[f"T{i}"] = p.dtype.numpy(), None
        # the first array's type picks the branch: CuPy arrays, or PyTorch tensors (their
        # pointers, launched on PyTorch's current stream); a mix takes the general path
        first = tensors[0][0]
        lines += [f"t = type(a{first})", "if t is CUPY:"]
        lines += _indent(_cupy_checks(tensors, contiguous, single))
        lines += ["elif t is TORCH or t is PARAMETER:"]
        lines += _indent(_torch_checks(tensors, single))
        lines += ["else:", "    return fallback(args)"]
    else:
        lines += ["device = 0" if single else "device = get_device()", "stream = None"]
    symbols: dict[str, str] = {}  # shape symbol -> local name holding its value
    for i, p in tensors:
        lines.append(f"s = a{i}.shape")
        checks = [f"len(s) != {len(p.shape)}"]
        for axis, d in enumerate(p.shape):
            if isinstance(d, int):
                checks.append(f"s[{axis}] != {d}")
            elif d in symbols:
                checks.append(f"s[{axis}] != {symbols[d]}")
        lines.append(_any_fails(checks))
        for axis, d in enumerate(p.shape):
            if isinstance(d, str) and d not in symbols:
                symbols[d] = f"n{len(symbols)}"
                lines.append(f"{symbols[d]} = s[{axis}]")
    for i, p in tensors:  # K // 2: once every symbol is read, each size computed and compared
        for axis, d in enumerate(p.shape):
            if isinstance(d, DimExpr):
                if d not in symbols:  # one that divides by zero (HK * (H // HK), HK = 0): the general path says so
                    symbols[d] = f"e{len(symbols)}"
                    size = py_source(d.expr, {k: v for k, v in symbols.items() if isinstance(k, str)})
                    lines += ["try:", f"    {symbols[d]} = {size}", "except ZeroDivisionError:", "    return fallback(args)"]
                lines.append(_any_fails([f"a{i}.shape[{axis}] != {symbols[d]}"]))
    lines += _overlap_checks(tensors, compiled.overlap_pairs, symbols)
    values = {k: v for k, v in symbols.items() if isinstance(k, str)}  # what the grid reads: shape symbols and scalars
    cargs, dims = [], {d.arg: d for d in host_dims(kernel_params)}
    for j, a in enumerate(gen.args):
        if a.kind == "tensor":
            cargs.append(f"p{j}")
        elif a.kind == "scalar":
            ctor = _C_SCALARS[" ".join(a.c_type.replace("const", " ").split())]
            env[f"C{j}"] = _as_argument(ctor)
            dt = params[a.name].dtype
            if dt.is_int:
                info = np.iinfo(dt.numpy())
                lines.append(_any_fails([f"type(a{j}) is not int", f"not {int(info.min)} <= a{j} <= {int(info.max)}"]))
            elif dt.is_bool:
                lines.append(_any_fails([f"type(a{j}) is not bool"]))
            else:
                # a number beyond what the dtype holds (or beyond 2**53, or NaN) takes the general
                # path, which accepts or refuses it as `tlc.scalars` says
                limit, whole = float_limit(dt), int(min(float_limit(dt), 2.0**53))
                lines.append(_any_fails([f"(type(a{j}) is not float or not {-limit!r} <= a{j} <= {limit!r}) and "
                                         f"(type(a{j}) is not int or not {-whole} <= a{j} <= {whole})"]))
            values[a.name] = f"a{j}"
            # a scalar usually repeats from launch to launch: keep its C value (a NumPy scalar
            # costs as much to make as the rest of this function); 0.0 is never kept, because
            # -0.0 == 0.0 would find it
            env[f"cache{j}"] = {}
            lines += [f"c{j} = cache{j}.get(a{j})", f"if c{j} is None:", f"    c{j} = C{j}(a{j})",
                      f"    if a{j} != 0:", f"        if len(cache{j}) > {_CACHE_SIZE}:",
                      f"            cache{j}.clear()", f"        cache{j}[a{j}] = c{j}"]
            cargs.append(f"c{j}")
        else:  # a shape symbol, or a dimension the launch computes (schedule/host_dims.py): its size checked above
            n, (most, ctor) = symbols[dims[a.name] if a.kind == "dim" else a.name], SYMBOL_TYPES[a.dtype.name]
            cache = f"{a.dtype.name}_cache"
            env[cache], env[f"np_{a.dtype.name}"] = env.get(cache, {}), _as_argument(ctor)
            lines += [f"if {n} > {most}:", "    return fallback(args)",
                      f"c{n} = {cache}.get({n})", f"if c{n} is None:",
                      f"    if len({cache}) > {_CACHE_SIZE}:", f"        {cache}.clear()",
                      f"    c{n} = {cache}[{n}] = np_{a.dtype.name}({n})"]
            cargs.append(f"c{n}")
    lines += _loop_checks(getattr(compiled, "counted_loops", ()), values, env)
    blocks = getattr(compiled, "persistent_blocks", None)
    # grid dimensions the kernel fixes need no check at run time
    checks = [f"not 0 < g[{d}] <= {MAX_GRID[d]}" for d, e in enumerate(gen.grid)
              if not (isinstance(e, Const) and 0 < e.value <= MAX_GRID[d])]
    if blocks:
        checks = ["not 0 < g[0]"]  # at most one block per SM, in one dimension
    lines += ["try:", f"    g = {grid_source(gen.grid, values, blocks, getattr(compiled, 'cluster', 1))}",
              "except Exception:", "    return fallback(args)",
              _any_fails(checks),
              "fn = functions.get(device)", "if fn is None:", "    return fallback(args)",
              f"a = [{', '.join(cargs)}]{_tensor_map_args(compiled, env, symbols)}"]
    if getattr(compiled, "built_flags", None) is not None:  # other TMA flags launch the generic build
        env["BUILT_FLAGS"] = compiled.built_flags
        lines += ["if a[-1] is not BUILT_FLAGS:", "    return fallback(args)"]
    whole = getattr(compiled, "whole_runs", None)
    if whole:  # a launch that may leave a copy's run ragged launches the generic build (launch.py's keeps_runs_whole)
        index = {p.name: i for i, p in enumerate(kernel_params)}
        ragged = [f"m{index[t]} & 15" for t, _, _ in whole] + \
            [f"{symbols[s]} % {run}" if run > 0 else f"({symbols[s]} % {-run} and {symbols[s]} != 1)"
             for _, s, run in whole if s and abs(run) > 1]  # a negative run: a multiple of it, or 1
        env["GENERIC"] = compiled._generic_functions
        lines += [f"if {' or '.join(ragged)}:", "    fn = GENERIC.get(device)", "    if fn is None:",
                  "        return fallback(args)"]
    lines += ["fn(g, BLOCK, a, SMEM, stream)", "return True"]
    source = "def fast(args):\n" + "".join(f"    {line}\n" for line in "\n".join(lines).split("\n"))
    return compile_function(source, "fast", env).unguarded


def _overlap_checks(tensors: list, pairs: tuple, symbols: dict) -> list:
    """A launch whose written tensor shares memory with another (`pairs`: positions in `tensors`,
    runtime/overlap.py) goes to the general path, which refuses it: `x{i}`, the end of tensor
    i's bytes from its address `m{i}` and its size (`b{k}`, from the sizes the checks read, each
    computed once however many tensors have it), then two integer compares a pair.  An empty
    array seems to overlap where it points inside another: the general path launches those."""
    if not pairs:
        return []
    lines, sizes = [], {}  # a size's text -> the local (or the constant) holding it
    for k in sorted({k for pair in pairs for k in pair}):
        i, p = tensors[k]
        fixed = p.dtype.itemsize
        for d in p.shape:
            fixed *= d if isinstance(d, int) else 1
        text = " * ".join([str(fixed)] + [symbols[d] for d in p.shape if not isinstance(d, int)])
        if text not in sizes:
            sizes[text] = text if text.isdigit() else f"b{len(sizes)}"
            if sizes[text] != text:
                lines.append(f"{sizes[text]} = {text}")
        lines.append(f"x{i} = m{i} + {sizes[text]}")
    overlaps = (f"m{tensors[a][0]} < x{tensors[b][0]} and m{tensors[b][0]} < x{tensors[a][0]}" for a, b in pairs)
    return lines + [_any_fails(overlaps)]


def _loop_checks(loops: tuple, values: dict, env: dict) -> list:
    """A launch one of whose `loops` (runtime/loop_bounds.py: a stepped loop whose bounds the
    host knows; no std kernel has one) would not count within i32 goes to the general path,
    which raises.  A constant step s > 0 needs only the bounds in range, the stop at most
    2**31 - s (a stop above that with no iteration goes to the general path too, which decides
    exactly); any other step `loop_bounds.counts_in_i32`, a call (~0.2 us more)."""
    if not loops:
        return []
    from ..ir.stepped_loops import constant
    from .loop_bounds import I32_MAX, I32_MIN, counts_in_i32

    env["COUNTS"] = counts_in_i32
    tests = []
    for loop in loops:
        start, stop, step = (py_source(b, values) for b in (loop.start, loop.stop, loop.step))
        s = constant(loop.step)
        if s is not None and s > 0:
            tests.append(f"not ({I32_MIN} <= {start} <= {I32_MAX} and {I32_MIN} <= {stop} <= {I32_MAX + 1 - s})")
        elif s is not None and s < 0:
            tests.append(f"not ({I32_MIN} <= {start} <= {I32_MAX} and {I32_MIN - 1 - s} <= {stop} <= {I32_MAX})")
        else:
            tests.append(f"not COUNTS({start}, {stop}, {step})")
    return ["try:", f"    stops = {' or '.join(tests)}", "except Exception:", "    return fallback(args)",
            "if stops:", "    return fallback(args)"]


def _tensor_map_args(compiled, env: dict, symbols: dict) -> str:
    """` + TMAPS(pointers, sizes)` for a kernel that takes tensor maps (launch.py's
    `kernel_args`, written out), else nothing."""
    specs = compiled.launch_fields.tensor_maps
    if not specs:
        return ""
    env["TMAPS"] = compiled.tensor_maps
    index = {p.name: i for i, p in enumerate(compiled.params)}
    pointers = ", ".join(f"m{index[s.param]}" for s in specs)
    sizes = ", ".join("(" + "".join(f"{d if isinstance(d, int) else symbols[d]}, " for d in s.launch_sizes) + ")" for s in specs)
    return f" + TMAPS(({pointers},), ({sizes},))"


def _cupy_checks(tensors, contiguous: str, single: bool) -> list:
    """CuPy arrays: each of the type, dtype, C-contiguous and on the current GPU; `m{i}` is its
    address, `p{i}` that as a launch argument."""
    lines = [_any_fails(f"type(a{i}) is not CUPY" for i, _ in tensors[1:]),  # the first one picked the branch
             _any_fails(f"a{i}.dtype is not D{i}" for i, _ in tensors),
             _any_fails(f"not a{i}.{contiguous}" for i, _ in tensors)]
    if single:
        lines.append("device = 0")  # the only GPU this process sees holds every device array
    else:
        lines += ["device = get_device()", _any_fails(f"a{i}.data.device_id != device" for i, _ in tensors)]
    for i, _ in tensors:
        lines += [f"m{i} = a{i}.data.ptr"] + _kept_pointer(i)
    return lines + ["stream = None"]


def _torch_checks(tensors, single: bool) -> list:
    """PyTorch tensors (or parameters): each of the dtype, contiguous and on the current GPU;
    `m{i}` is its address, `p{i}` that as a launch argument (`POINTER`), the stream PyTorch's
    current one on that GPU, as a CuPy stream the general path made
    (`launch.CompiledKernel.torch_stream`)."""
    lines = [_any_fails(f"(type(a{i}) is not TORCH and type(a{i}) is not PARAMETER)" for i, _ in tensors[1:]),
             _any_fails(f"a{i}.dtype is not T{i}" for i, _ in tensors),
             _any_fails(f"not a{i}.is_contiguous()" for i, _ in tensors)]
    if single:
        lines += [_any_fails(f"not a{i}.is_cuda" for i, _ in tensors), "device = 0"]
    else:
        lines += ["device = get_device()", _any_fails(f"a{i}.get_device() != device" for i, _ in tensors)]
    for i, _ in tensors:
        lines += [f"m{i} = a{i}.data_ptr()"] + _kept_pointer(i)
    return lines + ["stream = streams.get(raw_stream(device))", "if stream is None:", "    return fallback(args)"]


def _kept_pointer(i: int) -> list:
    """`p{i}`: the address `m{i}` as a launch argument.  An address repeats from call to call,
    so its C value is kept (passing the CuPy array itself would have CuPy build a shape and
    strides record for it at every launch, which a pointer parameter never reads)."""
    return [f"p{i} = pointers.get(m{i})", f"if p{i} is None:", f"    if len(pointers) > {_CACHE_SIZE}:",
            "        pointers.clear()", f"    p{i} = pointers[m{i}] = POINTER(m{i})"]


def enable_torch(fast) -> None:
    """Let the fast path `fast` (built by `build`) take PyTorch tensors: it is built before
    anything says that PyTorch is in use, and `import tlc` never imports it; the general path
    calls this at its first PyTorch launch."""
    scope = fast.__globals__
    if scope.get("TORCH", _Absent) is not _Absent or "_torch_dtypes" not in scope:
        return  # open already, or a kernel with no tensor
    import torch

    from .args import torch_dtype
    from .launch import torch_raw_stream

    for name, dt in scope["_torch_dtypes"].items():
        try:
            scope[name] = torch_dtype(torch, dt)
        except (KeyError, AttributeError):  # a dtype this PyTorch lacks: such tensors cannot come
            scope[name] = _Absent
    scope["raw_stream"] = torch_raw_stream()
    scope["PARAMETER"] = torch.nn.Parameter
    scope["TORCH"] = torch.Tensor  # last: the branch opens once everything it reads is there


def _as_argument(ctor):
    """`ctor` (a NumPy scalar type) made to give CuPy's argument object for the value
    (`bound.cscalar`), where this CuPy has one: kept in the fast path's caches, a value is
    passed with no conversion at the launch."""
    from .bound import cscalar

    made = cscalar()
    return ctor if made is None else (lambda v: made(ctor(v)))


class _Absent:
    """The type of nothing: PyTorch's tensor type until PyTorch is in use."""


def _indent(lines: list) -> list:
    return ["    " + part for line in lines for part in line.split("\n")]


def _any_fails(conditions) -> str:
    conditions = list(conditions)
    return f"if {' or '.join(conditions)}:\n    return fallback(args)" if conditions else ""
