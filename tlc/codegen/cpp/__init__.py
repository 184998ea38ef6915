"""Code generation for the cpu target: scheduled tile IR -> one C++17 file with OpenMP, whose
`extern "C"` entry runs the whole grid (tlc/runtime/cpp.py compiles and calls it).

Owns the file's decisions (the parameters and their C types, where each buffer lies in a
block's scratch, the block variables) and hands them to templates/cpp/kernel.cpp.j2; the
statements are `emit.BlockEmitter`'s, the C helpers templates/cpp/*.h and the host-portable
part of templates/tl/types.cuh, shared with the CUDA targets so that the integer and conversion
semantics are one text.  `generate` raises `Unsupported` for a construct it does not generate.
"""
from __future__ import annotations

import functools

from ... import __version__, ir, package_data
from ...frozen import frozen
from ..cnames import arg_c_name, c_name, c_type, comment_text
from .emit import BlockEmitter, Unsupported

__all__ = ["CppKernel", "generate", "Unsupported", "primitives"]

ALIGN = 64  # bytes: each buffer of a block's scratch starts at a multiple of it (a cache line)


@frozen
class CppKernel:
    name: str
    entry: str  # the extern "C" function: the kernel's arguments, then the grid's three extents
    source: str
    args: tuple  # codegen.KernelArg per parameter, in the entry's order
    stops: tuple = ()  # the entry returns k where the k-th of these (from 1) stopped it: ("while" | "step 0", loop)
    assert_sites: tuple = ()  # device_assert.sites: what the failure record's site indexes


@functools.lru_cache(maxsize=1)
def primitives() -> str:
    """The C every kernel file starts with: the prelude, types.cuh up to its first device-only
    function (what runs on a host as well), and tl_cpu.h."""
    root = package_data.templates()
    types = (root / "tl" / "types.cuh").read_text(encoding="utf-8")
    cut = types.find("\n__device__ ")
    if cut < 0:
        raise RuntimeError("templates/tl/types.cuh: no device-only function marks the end of its host-portable part")
    head = types.rfind("\n", 0, cut)  # a template line above it belongs to the device part too
    if types[head + 1:cut].startswith("template"):
        cut = head
    portable = types[:cut] + "\n}  // namespace tl\n"
    return "\n".join([(root / "cpp" / "prelude.h").read_text(encoding="utf-8"), portable,
                      (root / "cpp" / "tl_cpu.h").read_text(encoding="utf-8")])


def _check(kernel: ir.Kernel) -> None:
    """What the cpu target refuses before emitting: a warp-specialized schedule, a dtype only the
    interpreter runs (i4, u4, e8m0)."""
    from .. import interpreter_only_dtype

    if kernel.warp_spec is not None:
        raise Unsupported("a warp-specialized kernel (schedule it for the cpu target)", kernel.span)
    found = interpreter_only_dtype(kernel)
    if found is not None:
        raise Unsupported(f"{found[0]} values", found[1])


def generate(kernel: ir.Kernel, source_name: str | None = None) -> CppKernel:
    from .. import environment, kernel_args

    _check(kernel)
    args = kernel_args(kernel)
    name = c_name(kernel.name)
    params, prologue, call_args = [], [], []
    for a in args:
        cname = arg_c_name(a)
        if a.kind == "tensor":
            params.append(f"{a.c_type} {cname}")
        elif a.kind == "scalar" and a.c_type != c_type(a.dtype):  # a 16-bit float scalar travels as float
            params.append(f"{a.c_type} tl_arg_{cname}")
            prologue.append(f"const {c_type(a.dtype)} {cname} = tl::cvt<{c_type(a.dtype)}>(tl_arg_{cname});")
        else:
            params.append(f"{a.c_type} {cname}")
        call_args.append(params[-1].split()[-1])
    for var, slot in zip(kernel.block_vars, ("tl_bx", "tl_by", "tl_bz")):
        prologue.append(f"const int {c_name(var)} = {slot};")
    buffers, offset = [], 0
    for b in kernel.buffers:
        buffers.append({"name": c_name(b.name), "type": c_type(b.dtype), "offset": offset})
        offset += -(-b.dtype.itemsize * max(1, _count(b.shape)) // ALIGN) * ALIGN
    emitter = BlockEmitter(kernel)
    emitter.scopes[0].update(p.name for p in kernel.params)
    emitter.scopes[0].update(kernel.shape_symbols())
    emitter.scopes[0].update(kernel.block_vars)
    body = emitter.emit(kernel.body)
    constants = comment_text(", ".join(f"{k}={v}" for k, v in kernel.constants))
    source = environment().get_template("cpp/kernel.cpp.j2").render(
        version=__version__, source=comment_text(source_name or (kernel.span.file if kernel.span else "<tl>")),
        name=name, constants=constants, primitives=primitives(), params=params, prologue=prologue,
        buffers=buffers, body=body, entry=f"tl_run_{name}", scratch_bytes=max(offset, ALIGN), call_args=call_args)
    return CppKernel(name, f"tl_run_{name}", source, args, tuple(emitter.stops), emitter.assert_sites)


def _count(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n
