"""What `tlc run` and `tlc build` do, behind the CLI's options: prepare inputs, run on the
chosen executor (and the interpreter for `--check`), time, write outputs; generate one file
for several kernels.  Returns text for the CLI to print; raises `TlcError`s for the user's
mistakes."""
from __future__ import annotations

import copy as _copy
import os
from dataclasses import field

import numpy as np

from . import files, inputs, ir
from .diagnostics import TlcError
from .frozen import record
from .schedule import bind_constants

TOLERANCE = {"f64": 1e-9, "f32": 1e-4, "f16": 2e-2, "bf16": 3e-2, "f8e4m3": 0.15, "f8e5m2": 0.3}


@record
class Report:
    lines: list = field(default_factory=list)
    failed: str | None = None


def _defines(defines) -> dict:
    return inputs.parse_assignments(defines, "-D")


def run(k, *, ins=(), shapes=(), outs=(), defines=(), check=False, bench=False, seed=0, dump=None) -> Report:
    report = Report()
    given = inputs.parse_assignments(ins, "--in")
    arrays = inputs.load_arrays(k.fn, given)
    constants = _defines(defines)
    constants = {**k.dtypes_from_arrays(arrays, constants), **constants}  # T from x: T[N], as in Python
    fn = bind_constants(k.module.program, k.fn, constants)
    values = inputs.prepare(fn, given, inputs.parse_assignments(shapes, "--shape"), seed, arrays)
    out_paths = inputs.parse_assignments(outs, "--out")
    if k.fn.kind == "tile_op":
        return _run_tile_op(k, report, constants, values, out_paths, check, bench)
    for name in out_paths:
        p = fn.param(name)
        if p is None or p.role != "tensor":
            raise inputs.InputError(f"--out {name}: '{k.name}' has no array parameter '{name}'")
    constants = {**constants, **k.sizes_from_arrays(values, constants)}  # the specialized sizes
    if dump:  # --dump DIR: every stage of this compile (tlc/dump.py)
        from .dump import dump_kernel, target_arch

        paths = dump_kernel(k, constants, target_arch(k), dump)
        report.lines.append(f"wrote the compile's {len(paths)} stages to {paths[0].parent}")
    kernels = k.scheduled_grids(constants)  # one per grid, run in order
    from .ir.walk import written_names

    written = [p.name for p in fn.tensor_params if any(p.name in written_names(x.body) for x in kernels)]
    where = _where(k.module.target)
    report.lines.append(f"running {k.name} on {where}")
    reference = _copy.deepcopy(values) if check else None
    k(**values, **constants)
    if check:
        from .interp import run_kernel

        reference = k.with_workspaces(reference, kernels[0], on_gpu=False)
        for kernel in kernels:
            run_kernel(kernel, reference)
        worst, culprit = 0.0, None
        for name in written:
            err = _relative_error(values[name], reference[name])
            if err >= worst:
                worst, culprit = err, name
        _report_check(report, worst, culprit, fn.param(culprit).type.dtype.name if culprit else "f32", k.module.target)
    if bench:
        if len(kernels) > 1:
            raise TlcError(f"--bench times one kernel; '{k.name}' has {len(kernels)} grids (time it from Python "
                           "with tlc.timing)")
        report.lines.extend(_bench(k, constants, values, kernels[0]))
    for name in written:
        if name not in out_paths:
            report.lines.append(inputs.summary(name, values[name]))
    write_outputs({name: (path, values[name]) for name, path in out_paths.items()}, report)
    return report


def _run_tile_op(k, report: Report, constants: dict, values: dict, out_paths: dict, check: bool, bench: bool) -> Report:
    """A tile op's result is a new array, shown and written as `result`."""
    for name in out_paths:
        if name != TILE_OP_RESULT:
            raise inputs.InputError(f"--out {name}: a tile op's output is called '{TILE_OP_RESULT}' "
                                    f"(--out {TILE_OP_RESULT}=FILE.npy)")
    if bench:
        raise TlcError("--bench times one kernel; time a tile op from Python with tlc.timing (see bench/fusion.py)")
    where = _where(k.module.target)
    report.lines.append(f"running {k.name} on {where}")
    got = k(**_copy.deepcopy(values), **constants)
    if k.module.target != "cpu" and not isinstance(got, np.ndarray):
        got = got.numpy() if hasattr(got, "numpy") else got.get()
    if check:
        want = k.run_on_interpreter(values, constants)
        _report_check(report, _relative_error(got, want), TILE_OP_RESULT, k.fn.returns.dtype.name, k.module.target)
    if TILE_OP_RESULT in out_paths:
        write_outputs({TILE_OP_RESULT: (out_paths[TILE_OP_RESULT], got)}, report)
    else:
        report.lines.append(inputs.summary(TILE_OP_RESULT, got))
    return report


TILE_OP_RESULT = "result"


def _relative_error(got, want) -> float:
    """The largest difference relative to the largest reference value; infinite when the two
    disagree on how many NaNs there are."""
    got, want = got.astype(np.float64), want.astype(np.float64)
    if np.isnan(got).sum() != np.isnan(want).sum():
        return float("inf")
    scale = max(float(np.abs(want).max(initial=0.0)), 1e-30)
    return float(np.nanmax(np.abs(got - want), initial=0.0)) / scale


def _report_check(report: Report, err: float, culprit: str | None, dt: str, target: str = "cuda") -> None:
    """`--check`'s line, and the failure when `err` is above the tolerance of `dt`."""
    report.lines.append(f"check against the interpreter: largest relative error {err:.3g}"
                        + (f" (in {culprit})" if culprit else ""))
    tol = TOLERANCE.get(dt, 0.0)
    if err > tol:
        device = "cpu target's" if target == "cpp" else "GPU"
        report.failed = f"error: the {device} result differs from the interpreter by {err:.3g} (tolerance {tol:g} for {dt})"


def _where(target: str) -> str:
    """Where a kernel runs, in `tlc run`'s first line."""
    if target == "cpu":
        return "the CPU reference interpreter"
    if target == "cpp":
        from .runtime.cpp import find_compiler

        return f"the cpu target (C++ with OpenMP, {os.path.basename(find_compiler())})"
    return _gpu_name()


def _gpu_name() -> str:
    from . import runtime
    from .runtime import compile as c

    dev = c.current_device()
    import cupy

    name = cupy.cuda.runtime.getDeviceProperties(dev)["name"]
    name = name.decode() if isinstance(name, bytes) else name
    return f"the GPU ({name}, {runtime.target_arch(dev)})"


def _bench(k, constants, values, kernel) -> list:
    from . import runtime
    from .workload import flops, traffic_bytes

    compiled = k.compiled(constants)
    ms = runtime.benchmark(compiled, values)
    scalars = {p.name: values[p.name] for p in kernel.params if p.kind == "scalar" and p.name in values}
    symbols = {}
    for p in kernel.params:
        if p.kind == "tensor":
            for d, size in zip(p.shape, values[p.name].shape):
                if isinstance(d, str):
                    symbols[d] = int(size)
    work = flops(kernel, {**{k2: int(v) if np.ndim(v) == 0 and float(v).is_integer() else v for k2, v in scalars.items()},
                          **symbols})
    moved = traffic_bytes(kernel, values)
    parts = [f"bench: {ms * 1e3:.1f} us median"]
    if work:
        parts.append(f"{work / ms / 1e9:.1f} TFLOP/s")
    parts.append(f"{moved / ms / 1e6:.1f} GB/s (each tensor moved once)")
    return [", ".join(parts)]


def build(file: str, *, kernels=(), defines=(), arch="sm_80", emit="cu", header=False, line_directives=True,
          shapes=(), dump=None):
    """(the text, or bytes for a cubin, of FILE's kernels for `arch`; the C header of their
    launchers when `header`, else None).  A tile op contributes the kernels it is scheduled
    into (tiles chosen for `shapes`, NAME=SIZE of its shape symbols, where given), and with
    `emit == "ir"` its fusion plan.  Writes nothing: the caller writes once all is built."""
    from . import targets
    from .api import load
    from .codegen import generate_file, header as make_header

    host = targets.get(arch).host  # the cpu target: one C++ file, no CUDA header, no PTX
    if host and emit in ("ptx", "cubin"):
        raise TlcError(f"--arch {arch} emits C++ (--emit cu) or the tile IR (--emit ir); --emit {emit} is for the GPU targets")
    mod = load(file, target="cpu")
    chosen = list(kernels) or list(mod.kernels)
    constants = _defines(defines)
    sizes = {}
    for name, v in inputs.parse_assignments(shapes, "--shape").items():
        sizes[name] = inputs.shape_size(name, v)
    scheduled, ir_text = [], []
    for name in chosen:
        if name not in mod.kernels:
            raise TlcError(f"{file} has no kernel '{name}'; its kernels are: {', '.join(mod.kernels) or 'none'}")
        k = mod.kernels[name]
        own = {c: v for c, v in constants.items() if k.fn.param(c) is not None or c in k.fn.from_arrays}
        if k.fn.kind == "kernel":  # --shape sizes the shape symbols compiled in as constants
            own.update({s: v for s, v in sizes.items() if s in k.fn.from_arrays and s not in own})
        if k.fn.kind == "tile_op":
            prog = k.program(own, arch, {s: v for s, v in sizes.items() if s in k.fn.shape_symbols})
            scheduled.extend(prog.kernels)
            ir_text.append(prog.describe())
            ir_text.extend(ir.print_kernel(x) for x in prog.kernels)
        else:
            if dump:  # --dump DIR: every stage of this kernel's compile (tlc/dump.py)
                from .dump import dump_kernel

                dump_kernel(k, own, arch, dump)
            grids = k.scheduled_grids(own, arch)
            scheduled.extend(grids)
            ir_text.extend(ir.print_kernel(x) for x in grids)
    if not scheduled:
        raise TlcError(f"{file} defines no @kernel or @tile_op to build")
    unused = set(constants) - {p.name for s in chosen for p in mod.kernels[s].fn.params} \
        - {name for s in chosen for name in mod.kernels[s].fn.from_arrays}
    if unused:
        raise TlcError(f"-D {', '.join(sorted(unused))}: no kernel built from {file} has such a constant")
    head = None
    if header and not host:
        cu_name = os.path.basename(header if isinstance(header, str) else file).rsplit(".", 1)[0] + ".cu"
        head = make_header(scheduled, arch, cu_name, file)
    if emit == "ir":
        return "\n".join(ir_text), head
    source = generate_file(scheduled, arch, line_directives=line_directives, sources=mod.program.sources,
                           source_name=file)
    if emit == "cu":
        return source, head
    from .runtime import nvcc_compile

    out = nvcc_compile(source, arch, emit, name=os.path.basename(file).rsplit(".", 1)[0])
    return (out.binary.decode() if emit == "ptx" else out.binary), head


def write_outputs(arrays: dict, report: Report) -> None:
    """`--out`: every array written as .npy, or none (see tlc.files.write_all)."""
    try:
        files.write_all([(path, inputs.npy_bytes(array)) for path, array in arrays.values()])
    except files.FileError as e:
        raise files.FileError(f"--out: {e}") from None
    report.lines.extend(f"wrote {name} to {path}" for name, (path, _) in arrays.items())
