"""Code generation: scheduled tile IR -> a standalone CUDA C file.  Entry point:
`generate(kernel, arch)`; `generate_file(kernels)` for `tlc build` with several kernels.

Owns the decisions per target (`Sm80`: mma.sync, ldmatrix, cp.async) and the values handed to
the templates in `templates/`; the C itself lives in the templates and `templates/tl/*.cuh`.
Which generator a target uses, and the limits and features it reads, come from the target's
object (`tlc.targets`, found through the `tlc.targets` entry points), so a new architecture
subclasses the generator before it and overrides only what differs.
"""
from __future__ import annotations

import functools
import re

import jinja2

from .. import __version__, ir, package_data, targets
from ..primitives import text as primitive_text
from ..diagnostics import Diagnostic, DiagnosticError
from ..dtypes import I32, DType
from ..ir.nodes import host_dims
from ..generated import GeneratedKernel, KernelArg  # noqa: F401  (the runtime's contract: a leaf module)
from .cexpr import CodegenError
from .cnames import arg_c_name, c_name, c_type, comment_text
from . import host_grid
from .host_grid import launcher_grid, launcher_loops
from .sm80 import Sm80
from .warpspec import tma_dtype
from .whole_runs import kernel_facts


@functools.lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    from .precompiled_loader import PrecompiledLoader  # each template's code compiled ahead of time

    loader = PrecompiledLoader(str(package_data.templates()))
    return jinja2.Environment(loader=loader, undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                              trim_blocks=False, lstrip_blocks=False)


def primitives(files: tuple = Sm80.primitive_files) -> str:
    return primitive_text(files)


def _written(kernel: ir.Kernel) -> set[str]:
    from ..ir.walk import written_names
    return written_names(kernel.body)


def kernel_args(kernel: ir.Kernel) -> tuple[KernelArg, ...]:
    written = _written(kernel)
    out = []
    for p in kernel.params:
        if p.kind == "tensor":
            const = "" if p.name in written else "const "
            out.append(KernelArg(p.name, "tensor", p.dtype, f"{const}{c_type(p.dtype)}* __restrict__"))
        else:
            # 16- and 8-bit float scalars travel as float: every launcher can pass a float.
            ct = "float" if p.dtype.is_float and p.dtype.bits < 32 else c_type(p.dtype)
            out.append(KernelArg(p.name, "scalar", p.dtype, ct))
    for s in kernel.shape_symbols():
        dtype = kernel.symbol_dtype(s)
        out.append(KernelArg(s, "shape", dtype, c_type(dtype)))
    # the dimension expressions the launch computes (schedule/host_dims.py), named `tl_dim<i>` in C
    out.extend(KernelArg(d.arg, "dim", I32, "int") for d in host_dims(kernel.params))
    return tuple(out)


def specialized_params(kernel: ir.Kernel) -> list[str]:
    """The launcher's parameters for the shape symbols compiled in as constants: it takes each
    size as it would a dynamic one, after those, and refuses one that is not the compiled size."""
    return [f"int {c_name(s)}" for s, _ in kernel.specialized]


def uses_fp8(kernel: ir.Kernel) -> bool:
    """Whether the kernel needs CUDA's fp8 header: an f8 tensor or buffer, or an f8 value inside
    an expression alone (`f32(f8e4m3(x))`, `reinterpret(q, f8e4m3)`)."""
    from ..ir.walk import statement_exprs, statements, subexprs

    if any(t.dtype.name.startswith("f8") for t in list(kernel.params) + list(kernel.buffers)):
        return True
    return any(x.dtype.name.startswith("f8") for s in statements(kernel.body)
               for e in statement_exprs(s) for x in subexprs(e))


INTERPRETER_ONLY = ("i4", "u4", "e8m0")  # dtypes the interpreter runs and no generator emits yet


def interpreter_only_dtype(kernel: ir.Kernel):
    """(dtype, span) of the first tensor, buffer or value of the kernel whose dtype no code
    generator emits yet (the 4-bit integers, packed two a byte in memory; e8m0), or None."""
    from ..ir.walk import statement_exprs, statements, subexprs

    for t in list(kernel.params) + list(kernel.buffers):
        if t.dtype.name in INTERPRETER_ONLY:
            return t.dtype, getattr(t, "span", None) or kernel.span
    for s in statements(kernel.body):
        for e in statement_exprs(s):
            for x in subexprs(e):
                if x.dtype.name in INTERPRETER_ONLY:
                    return x.dtype, getattr(x, "span", None) or getattr(s, "span", None) or kernel.span
    return None


def generate(kernel: ir.Kernel, arch: str = "sm_80", *, line_directives: bool = True,
             sources: dict | None = None, source_name: str | None = None,
             fp8_header: bool | None = None) -> GeneratedKernel:
    target = targets.get(arch)
    if target.host:  # the cpu target: C++ with OpenMP (codegen/cpp)
        return _generate_host(kernel, arch, sources, source_name)
    found = interpreter_only_dtype(kernel)
    if found is not None:
        dt, span = found
        raise DiagnosticError([Diagnostic(
            "E420", f"the {arch} target does not generate {dt} values yet",
            span, f"{dt} runs on the interpreter (tlc.load(..., target=\"cpu\")); on the GPU, hold 4-bit values "
                  "two a byte in a u8 tensor and e8m0 scales in a u8 tensor (as std.quant does)")], sources or {})
    gen = target.code_generator()(kernel, sources, line_directives, target=target)
    try:
        out = gen.generate()
        grid = launcher_grid(kernel.grid, out.get("threads", kernel.threads))
    except CodegenError as e:
        # A construct this target cannot generate yet: the user's program is fine, the
        # target is not there yet; say so at the statement, as any diagnostic.
        raise DiagnosticError([Diagnostic("E069", f"the {arch} target: {e}", e.span or kernel.span)],
                              sources or {}) from None
    args = kernel_args(kernel)
    name = c_name(kernel.name)
    params, prologue, call_args, launcher_params = [], [], [], []
    for a in args:
        cname = arg_c_name(a)
        if a.kind == "scalar" and a.c_type != c_type(a.dtype):
            params.append(f"{a.c_type} tl_arg_{cname}")
            prologue.append(f"const {c_type(a.dtype)} {cname} = tl::cvt<{c_type(a.dtype)}>(tl_arg_{cname});")
        else:
            params.append(f"{a.c_type} {cname}")
        if a.kind == "dim":  # computed by the launcher from its sizes: host_dims below
            call_args.append(f"static_cast<int>(tl_dims[{len(call_args) - len(launcher_params)}])")
            continue
        launcher_params.append(f"{a.c_type.replace(' __restrict__', '')} {cname}")
        call_args.append(cname)
    launcher_params += specialized_params(kernel) + ["cudaStream_t stream"]
    tensor_maps = out.get("tensor_maps", ())
    params += out.get("extra_params", [])
    threads = out.get("threads", kernel.threads)
    # True: one block per SM walks the tiles (warp specialization); "fill": as many blocks as the
    # GPU holds at once walk the rows (schedule/pipeline_rows.py); False: a block per grid cell
    persistent = out.get("persistent", False) or ("fill" if kernel.launch_fill else False)
    cluster = out.get("cluster", 1)
    constants = comment_text(", ".join(f"{k}={v}" for k, v in kernel.constants))
    fp8 = uses_fp8(kernel) if fp8_header is None else fp8_header
    source = environment().get_template("kernel.cu.j2").render(
        version=__version__, source=comment_text(source_name or (kernel.span.file if kernel.span else "<tl>")), name=name,
        constants=constants, arch=arch, threads=threads, smem_bytes=out["smem_bytes"], fp8=fp8,
        min_blocks=out.get("min_blocks"), persistent=persistent, cluster=cluster,
        tensor_maps=[launcher_tensor_map(i, m) for i, m in enumerate(tensor_maps)],
        primitives=primitives(gen.primitive_files), preamble=out["preamble"], params=params, prologue=prologue, body=out["body"],
        assumed_sizes=out.get("assumed_sizes", ()),
        launcher=f"launch_{name}", launcher_params=launcher_params, call_args=call_args,
        specialized=[{"name": c_name(s), "value": v} for s, v in kernel.specialized],
        not_one=[c_name(s) for s in kernel.not_one], loops=launcher_loops(kernel),
        host_dims=[host_grid.expr(d.expr, "tl_d") for d in host_dims(kernel.params)], **grid)
    return GeneratedKernel(name, f"launch_{name}", source, args, threads, out["smem_bytes"],
                           tuple(kernel.grid), arch, tuple(tensor_maps), persistent, cluster,
                           whole_runs=kernel_facts(gen))


def _generate_host(kernel: ir.Kernel, arch: str, sources: dict | None, source_name: str | None) -> GeneratedKernel:
    """A host target's kernel (`tlc build --arch cpu`): its C++ file, whose entry runs the grid."""
    from . import cpp

    try:
        g = cpp.generate(kernel, source_name)
    except cpp.Unsupported as e:
        raise DiagnosticError([Diagnostic("E345", f"the {arch} target does not generate {e.what} yet",
                                          e.span or kernel.span)], sources or {}) from None
    return GeneratedKernel(g.name, g.entry, g.source, g.args, kernel.threads, 0, tuple(kernel.grid), arch)


def launcher_tensor_map(index: int, spec) -> dict:
    """What the C launcher encodes for one tensor map: dims innermost first, the byte strides
    of dims 1.., the box (one 128-byte column segment of a tile)."""
    dims = [str(d) if isinstance(d, int) else c_name(d) if isinstance(d, str) else
            host_grid.expr(d.expr) for d in reversed(spec.shape)]  # K // 2: checked at launch
    strides, pitch = [], str(spec.dtype.itemsize)
    for d in dims[:-1]:
        pitch = f"{pitch} * static_cast<cuuint64_t>({d})"
        strides.append(pitch)
    box = spec.box()
    return {"index": index, "param": c_name(spec.param), "dtype": tma_dtype(spec.dtype), "rank": len(dims),
            "store": spec.store, "swizzle": spec.swizzle, "im2col": spec.im2col is not None or spec.view is not None, "dims": [f"static_cast<cuuint64_t>({d})" for d in dims], "strides": strides, "box": box}


def generate_file(kernels: list, arch: str = "sm_80", *, line_directives: bool = True,
                  sources: dict | None = None, source_name: str | None = None) -> str:
    """One .cu holding several kernels: the primitives once, each kernel with its launcher."""
    if targets.get(arch).host:  # one C++ file: each kernel's block function and entry (primitives guarded)
        return "\n".join(generate(k, arch, sources=sources, source_name=source_name).source for k in kernels)
    parts = []
    fp8 = any(uses_fp8(k) for k in kernels)  # the first kernel's head holds the file's includes
    for i, k in enumerate(kernels):
        g = generate(k, arch, line_directives=line_directives, sources=sources, source_name=source_name,
                     fp8_header=fp8)
        text = g.source
        if i:
            text = text[text.index("#ifndef TL_PRIMITIVES"):]
            text = re.sub(r"#ifndef TL_PRIMITIVES.*?#endif  // TL_PRIMITIVES\n", "", text, flags=re.S)
        parts.append(text)
    parts.extend(grid_launcher(group) for group in grid_groups(kernels))
    return "\n".join(parts)


def grid_groups(kernels: list) -> list:
    """The kernels of each @kernel of several grids among `kernels`, in launch order."""
    groups: dict = {}
    for k in kernels:
        if k.grid_of:
            groups.setdefault(k.grid_of[0], []).append(k)
    return [sorted(g, key=lambda k: k.grid_of[1]) for g in groups.values() if len(g) == g[0].grid_of[2]]


def _launcher_params(k: ir.Kernel, written: set = frozenset()) -> list[str]:
    """A launcher's parameters; a tensor in `written` (another grid of the kernel writes it) is
    not const."""
    types = [(a.c_type.replace(' __restrict__', ''), a) for a in kernel_args(k) if a.kind != "dim"]
    return [f"{t.removeprefix('const ') if a.name in written else t} {c_name(a.name)}" for t, a in types] \
        + specialized_params(k) + ["cudaStream_t stream"]


def grid_launcher(group: list) -> str:
    """The C launcher of a @kernel of several grids or with workspaces: each grid's launcher in
    order (they all take the same parameters: the kernel's), the workspaces placed in the
    caller's memory, whose size `NAME_workspace_bytes` gives."""
    first = group[0]
    params = _launcher_params(first, set().union(*(_written(k) for k in group)))
    return environment().get_template("grids.cu.j2").render(
        name=c_name(first.grid_of[0]), launcher=f"launch_{c_name(first.grid_of[0])}",
        launcher_params=grouped_params(first, params), call_args=[p.split()[-1] for p in params],
        parts=[f"launch_{c_name(k.name)}" for k in group], workspaces=workspace_parts(first),
        size_params=[f"int {c_name(s)}" for s in first.shape_symbols()])


WORKSPACE_ALIGN = 256  # bytes: each workspace starts at a multiple of it in the caller's memory


def grouped_params(k: ir.Kernel, params: list) -> list:
    """launch_NAME's parameters: the grids' without the workspaces, which come from one block of
    the caller's memory, `void* workspace`, before the stream."""
    if not k.workspaces:
        return params
    own = [p for p in params[:-1] if p.split()[-1] not in {c_name(w) for w in k.workspaces}]
    return own + ["void* workspace", params[-1]]


def workspace_parts(k: ir.Kernel) -> list:
    """Per workspace: its C name, element type and size in bytes as a C expression of the
    shape symbols, rounded up to `WORKSPACE_ALIGN`."""
    out = []
    for name in k.workspaces:
        p = k.param(name)
        size = " * ".join([f"{p.dtype.itemsize}ull"] + [f"{d}ull" if isinstance(d, int) else
                                                         f"static_cast<unsigned long long>({c_name(d)})" for d in p.shape])
        out.append({"name": c_name(name), "type": c_type(p.dtype),
                    "bytes": f"(({size} + {WORKSPACE_ALIGN - 1}ull) / {WORKSPACE_ALIGN}ull * {WORKSPACE_ALIGN}ull)"})
    return out


def header(kernels: list, arch: str, cu_name: str, source_name: str) -> str:
    items = []
    for k in kernels:
        items.append({"launcher": f"launch_{c_name(k.name)}", "launcher_params": _launcher_params(k),
                      "doc": f"{c_name(k.name)}: {k.threads} threads per block, grid from the shape sizes"
                      + "".join(f"; compiled for {c_name(s)}={v}" for s, v in k.specialized)
                      + "".join(f"; compiled for {c_name(s)} != 1" for s in k.not_one)})
    for group in grid_groups(kernels):
        name = c_name(group[0].grid_of[0])
        written = set().union(*(_written(k) for k in group))
        items.append({"launcher": f"launch_{name}", "launcher_params": grouped_params(group[0], _launcher_params(group[0], written)),
                      "doc": f"{name}: its {len(group)} grid{'s' * (len(group) > 1)} in order (launch_{name}_grid0, ...) "
                             "on the stream" + ("; `workspace`: device memory of at least "
                                                f"{name}_workspace_bytes(...) bytes, its contents undefined"
                                                if group[0].workspaces else "")})
        if group[0].workspaces:
            items.append({"launcher": f"{name}_workspace_bytes", "return": "unsigned long long",
                          "launcher_params": [f"int {c_name(s)}" for s in group[0].shape_symbols()],
                          "doc": f"the bytes of device memory launch_{name} needs for its workspaces"})
    return environment().get_template("header.h.j2").render(version=__version__, source=comment_text(source_name),
                                                            cu_name=comment_text(cu_name), kernels=items)
