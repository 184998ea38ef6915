"""`tlc profile` and `tlc.profile(kernel, *args, **constants)`: where a kernel's time goes.

Per grid of the kernel: the median time of a launch (`tlc.timing`: warm-up, L2 flushed), the
bytes its array arguments hold (each moved once: the least any implementation moves) and its
FLOPs (a `flops=` hint, else the gemms' 2*m*n*k from the tile IR, `tlc.workload`; else none)
as rates against ceilings measured in the same process (a device-to-device copy; a large f16
cuBLAS gemm when there are FLOPs); the compiled cubin's registers, local memory (spills),
shared memory and occupancy (report.py); optionally a Chrome-trace / Perfetto JSON of a
sequence of launches and Nsight Compute's counters (gpu.py); with --source, Nsight Compute's
warp stall samples per `.tl` line (source.py).
"""
from __future__ import annotations

import ast
import json
import operator

from ..diagnostics import TlcError
from .report import GridProfile, Profile, Resources, SmLimits, blocks_per_sm, chrome_trace, format_report, to_json

__all__ = ["profile", "profile_file", "Profile", "GridProfile", "Resources", "SmLimits", "blocks_per_sm",
           "chrome_trace", "format_report", "to_json", "flops_of"]


def profile(kernel, *args, flops: float | None = None, trace: str | None = None, launches: int = 10,
            min_ms: float = 200.0, **kwargs) -> Profile:
    """Profile `kernel` (a loaded module's kernel, `mod.matmul`) called with `args` and
    `kwargs` as a call takes them; on the GPU only.  `flops`: the FLOPs of one call, where the
    tile IR's gemms do not say; `trace`: write a Chrome-trace JSON of `launches` calls there."""
    from ..runtime.compile import current_device, require_cuda
    from ..runtime.device_array import DeviceArray
    from ..workload import flops as gemm_flops, traffic_bytes
    from . import gpu

    require_cuda()
    if kernel.module.target != "cuda":
        raise TlcError(f"profiling '{kernel.name}' needs the GPU; load the module with target='cuda' or 'auto'")
    if kernel.fn.kind != "kernel":
        raise TlcError(f"'{kernel.name}' is a @tile_op; profile the kernels it runs (tlc build -k {kernel.name} "
                       "lists them) or time the call with tlc.timing")
    import numpy as np

    values, constants = kernel.bind(args, kwargs)
    device = current_device()
    arch = _arch(device)
    if kernel.recorded_rules():
        constants = kernel.with_recorded(values, constants, arch)
    grids = kernel.compiled_grids(constants, device)
    values = {k: DeviceArray.from_numpy(v) if isinstance(v, np.ndarray) else v for k, v in values.items()}
    values = kernel.with_workspaces(values, grids[0].kernel, on_gpu=True)
    from ..runtime import benchmark
    from ..targets import get as get_target

    target = get_target(arch)
    profiles = []
    for compiled in grids:
        r = gpu.resources(compiled, device)
        blocks, why, warps = gpu.occupancy(compiled, device, r, target)
        work = flops if flops is not None and len(grids) == 1 else gemm_flops(compiled.kernel, _sizes(compiled.kernel, values))
        profiles.append(GridProfile(compiled.name, r, blocks, why, warps, benchmark(compiled, values, min_ms=min_ms),
                                    traffic_bytes(compiled.kernel, values), work or None))
    import cupy

    name = cupy.cuda.runtime.getDeviceProperties(device)["name"]
    name = name.decode() if isinstance(name, bytes) else name
    result = Profile(kernel.name, name, arch, profiles, gpu.copy_gbps(device),
                     gpu.gemm_tflops(device) if any(g.flops for g in profiles) else None, constants=dict(constants))
    if trace:
        sequence = gpu.timed_sequence([(c.name, lambda c=c: c(values)) for c in grids], launches)
        doc = chrome_trace([(n, start, dur, {"launch": i // len(grids)}) for i, (n, start, dur) in enumerate(sequence)],
                           name)
        with open(trace, "w") as f:
            json.dump(doc, f)
        result.trace = trace
    return result


def profile_file(file: str, kernel: str, *, ins=(), shapes=(), defines=(), seed: int = 0, flops: str | None = None,
                 trace: str | None = None, launches: int = 10, ncu_command: list | None = None,
                 source: bool = False, grid: int = 0) -> Profile:
    """`tlc profile`: KERNEL of FILE on random inputs shaped by `shapes` (or `ins`), `flops` an
    expression over its shape symbols ("2*M*N*K"); with `ncu_command`, that command (this
    profile of one launch) run again under Nsight Compute for the counters of grid `grid` (of a
    kernel of several: flash_bwd's dK/dV grid is 2), and with `source` once more for its
    samples per `.tl` line."""
    from .. import inputs
    from ..api import load
    from ..schedule import bind_constants

    mod = load(file, target="cuda")
    if kernel not in mod.kernels:
        raise TlcError(f"{file} has no kernel '{kernel}'; its kernels are: {', '.join(mod.kernels) or 'none'}")
    k = mod.kernels[kernel]
    if not 0 <= grid < k.grid_count:
        n = k.grid_count
        raise TlcError(f"--grid {grid}: '{kernel}' has {n} grid{'s' * (n != 1)}, numbered from 0"
                       + (f" to {n - 1}" if n > 1 else ""))
    given = inputs.parse_assignments(ins, "--in")
    arrays = inputs.load_arrays(k.fn, given)
    constants = inputs.parse_assignments(defines, "-D")
    constants = {**k.dtypes_from_arrays(arrays, constants), **constants}
    fn = bind_constants(mod.program, k.fn, constants)
    values = inputs.prepare(fn, given, inputs.parse_assignments(shapes, "--shape"), seed, arrays)
    hint = flops_of(flops, _array_sizes(k, values)) if flops else None
    result = profile(k, flops=hint, trace=trace, launches=launches, **values, **constants)
    if ncu_command:
        from .gpu import ncu_counters

        result.ncu = ncu_counters(result.grids[grid].name, ncu_command)
        result.ncu_grid = result.grids[grid].name
        if source:
            result.source = _source_view(k, result, ncu_command, grid)
    return result


def _source_view(k, result: Profile, ncu_command: list, grid: int = 0):
    """Grid `grid`'s samples per `.tl` line (source.py): ncu's source page of the run, the
    templates' lines placed by the PTX of the same source."""
    from ..runtime.compile import current_device
    from .gpu import lineinfo_ptx, ncu_source
    from .source import inline_sites, parse_ncu_source, source_view

    compiled = k.compiled_grids(result.constants, current_device())[grid]
    instructions = parse_ncu_source(ncu_source(compiled.name, ncu_command))
    if not instructions:
        raise TlcError(f"--source: Nsight Compute's source page held no instructions of '{compiled.name}' (its "
                       "SourceCounters section needs a GPU and driver that allow PC sampling)")
    return source_view(instructions, inline_sites(lineinfo_ptx(compiled)))


_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
        ast.FloorDiv: operator.floordiv, ast.Pow: operator.pow}


def flops_of(expression: str, sizes: dict) -> float:
    """`--flops`: a number or an arithmetic expression over the shape symbols ("2*M*N*K")."""
    def value(node):
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return node.value
        if isinstance(node, ast.Name) and node.id in sizes:
            return sizes[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](value(node.left), value(node.right))
        known = ", ".join(sorted(sizes)) or "none"
        raise TlcError(f"--flops {expression!r}: write a number or + - * / // ** over the shape symbols "
                       f"(here: {known})")

    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError:
        tree = None
    if tree is None:
        raise TlcError(f"--flops {expression!r} is not an expression")
    return float(value(tree.body))


def _sizes(kernel, values: dict) -> dict:
    """Shape symbols' sizes and scalars' values, for the tile IR's gemm count."""
    out = {p.name: values[p.name] for p in kernel.params if p.kind == "scalar" and p.name in values}
    for p in kernel.params:
        if p.kind == "tensor" and p.name in values:
            for d, size in zip(p.shape, values[p.name].shape):
                if isinstance(d, str):
                    out[d] = int(size)
    return out


def _array_sizes(k, values: dict) -> dict:
    """Each shape symbol's size in the arrays of a call."""
    out = {}
    for p in k.fn.params:
        shape = getattr(values.get(p.name), "shape", None)
        dims = getattr(p.type, "shape", None)
        if shape is not None and dims is not None:
            out.update({d: int(s) for d, s in zip(dims, shape) if isinstance(d, str)})
    return out


def _arch(device: int) -> str:
    from ..runtime import target_arch

    return target_arch(device)
