"""A tlc kernel or tile op registered as a `torch.library` custom operator: its schema, its real
implementation on CUDA and CPU tensors, its fake (meta) implementation for torch.compile, and
its autograd formula when a backward kernel is given.

Why each part is as it is:
- The real implementation launches through the kernel's own call (`Kernel.__call__`), on
  PyTorch's current stream, with every tensor it allocates (outputs, a tile op's result and
  temporaries, alloc_global workspaces) from PyTorch's caching allocator: so a CUDA graph
  captures it, and replays it, like any PyTorch operator (no host synchronization, no memory of
  another allocator).  A kernel compiles at its first call: run an operator once before
  capturing it, as PyTorch's own warm-up does.
- CPU tensors run on tlc's cpu target (the C++ one, or the interpreter) through NumPy views of
  the same memory, so an operator works in a CPU model and in the tests of a machine with no GPU.
- The fake implementation allocates the results from `OpSignature.result_specs`: the shapes
  and dtypes the tl signature gives, with PyTorch's symbolic sizes where torch.compile traces
  dynamic shapes.
- The backward is an operator of its own (`NAME_backward`), so the backward graph that
  AOTAutograd traces holds it as one node too.
"""
from __future__ import annotations

import numpy as np

from ..runtime.args import tl_dtype_of_torch, torch_dtype
from .signature import OpError, OpSignature


_LIBRARIES: dict = {}  # namespace -> its torch.library.Library (a registration lives as long as it)


def register(name: str, kernel, *, outputs=(), mutates=None, constants=None, backward=None,
             backward_constants=None, grads=None, cpu_target=None):
    """The operator `torch.ops.NAMESPACE.NAME` (an `OpOverloadPacket`) for `kernel` (a
    `tlc.Kernel` or `tlc.TileOp`); see `tlc.torch.op`.

    Defined through `torch.library.Library` with the implementation on the CPU and CUDA keys,
    not `torch.library.custom_op`: that one wraps every call in Python layers (autograd,
    in-place bookkeeping, a torch.compile guard) that cost 20-40 us a call where the
    dispatcher alone costs a few, and a decode step calls hundreds of operators.  Autograd is
    Python's only where a backward is given; without one, backpropagating through the operator
    gets PyTorch's warning for an operator with no autograd kernel."""
    import torch

    namespace, _, opname = name.partition("::")
    if not namespace or not opname.isidentifier() or not namespace.isidentifier():
        raise OpError(f"an operator's name is 'namespace::name' (two identifiers), not '{name}'")
    sig = OpSignature(kernel, outputs, constants, mutates)
    if not any(a.kind == "tensor" for a in sig.args):
        raise OpError(f"'{kernel.name}' takes no input tensor, so its operator would not know the device to run on")
    lib = _LIBRARIES.get(namespace)
    if lib is None:
        lib = _LIBRARIES[namespace] = torch.library.Library(namespace, "FRAGMENT")
    try:
        lib.define(opname + sig.schema())
    except RuntimeError as e:
        raise OpError(f"cannot define the operator '{name}': {str(e).splitlines()[0]}") from None
    run = _implementation(sig, cpu_target)
    for key in ("CPU", "CUDA"):
        lib.impl(opname, run, key)
    torch.library.register_fake(name, _fake(sig), lib=lib)
    op = getattr(getattr(torch.ops, namespace), opname)
    if backward is not None:
        _attach_backward(name, lib, sig, backward, backward_constants, grads, cpu_target)
    op.tlc_signature = sig
    return op


# ---- the real implementation ------------------------------------------------------------------

def _implementation(sig: OpSignature, cpu_target):
    import torch

    kernels = {}  # executor target -> this kernel or tile op loaded for it (sharing the checked program)
    names = tuple(a.name for a in sig.args)
    tensors = tuple(i for i, a in enumerate(sig.args) if a.kind == "tensor")
    allocates = bool(sig.results) and not sig.tile_op
    # the kernel's runtime parameters in order, each an operator argument (its index) or a result
    # the operator allocates (-1 - its index)
    slots = tuple(names.index(p.name) if p.name in names else -1 - [r.name for r in sig.results].index(p.name)
                  for p in sig.fn.runtime_params)
    specs: dict = {}  # the input tensors' shapes and dtypes -> the results' (shape, torch dtype)
    constants = sig.constants

    def kernel_for(target: str):
        k = kernels.get(target)
        if k is None:
            own = sig.kernel
            if own.module.target == target:
                k = own
            else:
                from ..api import Module

                k = getattr(Module(own.module.program, target), own.name)
            kernels[target] = k = _with_constants(k, constants) if constants else k
        return k

    def result_specs(args: tuple) -> tuple:
        key = tuple((args[i].shape, args[i].dtype) for i in tensors)
        found = specs.get(key)
        if found is None:
            shapes = {names[i]: tuple(args[i].shape) for i in tensors}
            dtypes = {names[i]: tl_dtype_of_torch(args[i].dtype) for i in tensors}
            found = specs[key] = tuple((shape, torch_dtype(torch, dt)) for shape, dt in sig.result_specs(shapes, dtypes))
        return found

    def run(*args, **kwargs):
        if kwargs or len(args) != len(names):
            values = sig.bind(args, kwargs)
            args = tuple(values[n] for n in names)
        device = args[tensors[0]].device
        write_back = None
        for i in tensors:
            t = args[i]
            if t.device != device:
                raise OpError(f"'{names[i]}' is on {t.device} but '{names[tensors[0]]}' is on {device}")
            if not t.is_contiguous():  # tlc reads dense row-major arrays
                args = args[:i] + (t.contiguous(),) + args[i + 1:]
                if sig.args[i].mutated:
                    write_back = (write_back or []) + [(t, args[i])]
        outs = tuple(torch.empty(shape, dtype=dt, device=device) for shape, dt in result_specs(args)) if allocates else ()
        call = tuple(args[j] if j >= 0 else outs[-1 - j] for j in slots)
        if device.type == "cuda":
            if sig.asserts and torch.cuda.is_current_stream_capturing():
                raise OpError(f"'{sig.kernel.name}' has a device_assert, whose failure record is read after each "
                              "launch, a synchronization that a CUDA graph cannot capture: leave the asserts out "
                              "of kernels you capture")
            if device.index == torch.cuda.current_device():
                out = kernel_for("cuda")(*call)
            else:
                with torch.cuda.device(device):
                    out = kernel_for("cuda")(*call)
        elif device.type == "cpu":
            target = cpu_target or (sig.kernel.module.target if sig.kernel.module.target in ("cpu", "cpp") else "cpp")
            out = kernel_for(target)(*(_numpy_view(a) if isinstance(a, torch.Tensor) else a for a in call))
            if out is not None:
                out = _from_numpy(torch, out)
        else:
            raise OpError(f"tlc runs on CUDA and CPU tensors, not on {device.type}")
        for original, dense in write_back or ():
            original.copy_(dense)
        if sig.tile_op:
            return out
        return outs[0] if len(outs) == 1 else (outs or None)

    run.__name__ = sig.kernel.name
    return run


def _with_constants(kernel, constants: dict):
    """`kernel` (a Kernel or TileOp) as a callable of its own whose calls bind `constants` as
    if given as keywords, so that a positional call keeps the kernel's cached launch (a call
    with keywords binds every argument again, tens of microseconds)."""
    base = type(kernel)

    class Fixed(base):
        def bind(self, args, kwargs):
            return super().bind(args, {**constants, **kwargs})

    Fixed.__name__ = Fixed.__qualname__ = f"{base.__name__}WithConstants"
    if hasattr(kernel, "schedule_rules"):
        return Fixed(kernel.module, kernel.fn, kernel.schedule_rules)
    return Fixed(kernel.module, kernel.fn)


def _numpy_view(t):
    """A NumPy array sharing `t`'s memory (ml_dtypes for bf16 and f8, which NumPy lacks)."""
    t = t.detach()
    dt = tl_dtype_of_torch(t.dtype)
    if dt is not None and dt.name in ("bf16", "f8e4m3", "f8e5m2"):
        import torch

        bits = torch.int16 if dt.bits == 16 else torch.uint8
        return t.view(bits).numpy().view(dt.numpy())
    return t.numpy()


def _from_numpy(torch, a: np.ndarray):
    from ..dtypes import from_numpy

    dt = from_numpy(a.dtype)
    if dt is not None and dt.name in ("bf16", "f8e4m3", "f8e5m2"):
        bits = np.int16 if dt.bits == 16 else np.uint8
        return torch.from_numpy(np.ascontiguousarray(a).view(bits)).view(torch_dtype(torch, dt))
    return torch.from_numpy(np.ascontiguousarray(a))


# ---- the fake implementation --------------------------------------------------------------------

def _fake(sig: OpSignature):
    import torch

    checks = tuple(sig.symbol_checks())

    def fake(*args, **kwargs):
        values = sig.bind(args, kwargs)
        tensors = [a.name for a in sig.args if a.kind == "tensor"]
        shapes = {}
        for a in sig.args:
            if a.kind == "tensor":
                shapes[a.name] = tuple(values[a.name].shape)
        for sym, (p, axis), others in checks:
            for q, qaxis in others:
                if len(shapes[p]) > axis and len(shapes[q]) > qaxis:
                    torch._check(shapes[q][qaxis] == shapes[p][axis],
                                 lambda: f"{sig.kernel.name}: shape symbol '{sym}' is {shapes[p][axis]} from '{p}' "
                                         f"(axis {axis}) but {shapes[q][qaxis]} from '{q}' (axis {qaxis})")
        if not sig.results:
            return None
        dtypes = {n: tl_dtype_of_torch(values[n].dtype) for n in tensors}
        like = values[tensors[0]]
        outs = tuple(like.new_empty(shape, dtype=torch_dtype(torch, dt)) for shape, dt in sig.result_specs(shapes, dtypes))
        return outs[0] if len(outs) == 1 else outs

    return fake


# ---- autograd -------------------------------------------------------------------------------------

def _attach_backward(name, lib, sig: OpSignature, backward, backward_constants, grads, cpu_target):
    """Register `backward` (a tlc kernel or tile op) as `name`'s gradient.  Its parameters are
    matched by name: `dy` (d + a result's name) receives that result's gradient, a forward
    input's or result's name receives the saved tensor or scalar; its results are the gradients
    of the forward inputs they are named after (`dx` of `x`; a tile op's result is the gradient
    of the first tensor input, or of `grads=("x",)`)."""
    import torch

    if sig.mutated:
        raise OpError(f"backward: '{sig.kernel.name}' mutates {', '.join(repr(m) for m in sig.mutated)}; "
                      f"an operator with a gradient returns its outputs: outputs={sig.mutated!r}")
    if not sig.results:
        raise OpError(f"backward: '{sig.kernel.name}' returns nothing to take a gradient of; name its outputs: "
                      "outputs=('y',)")
    forward_inputs = [a.name for a in sig.args]
    tensor_inputs = [a.name for a in sig.args if a.kind == "tensor"]
    results = [r.name for r in sig.results]
    bfn = backward.fn
    incoming = {f"d{r}": i for i, r in enumerate(results)}
    if bfn.kind == "tile_op":
        of = tuple(grads) if grads else tensor_inputs[:1]
        if len(of) != 1:
            raise OpError("grads: a backward tile op returns the gradient of one input; name one")
        bouts = ()
    else:
        names = {p.name for p in bfn.tensor_params}
        of = tuple(grads) if grads else tuple(x for x in tensor_inputs if f"d{x}" in names and f"d{x}" not in incoming)
        bouts = tuple(f"d{x}" for x in of)
    for x in of:
        if x not in tensor_inputs:
            raise OpError(f"grads: '{x}' is not a tensor input of '{sig.kernel.name}'; its tensor inputs are "
                          f"{', '.join(tensor_inputs)}")
    if not of:
        raise OpError(f"backward: '{backward.name}' has no parameter named d + an input of '{sig.kernel.name}' "
                      f"({', '.join('d' + x for x in tensor_inputs)}), so it computes no gradient")
    bsig = OpSignature(backward, bouts, backward_constants)
    sources = []  # per backward argument: ("grad", i) | ("input", name) | ("result", i)
    for a in bsig.args:
        if a.name in incoming:
            sources.append(("grad", incoming[a.name]))
        elif a.name in forward_inputs:
            sources.append(("input", a.name))
        elif a.name in results:
            sources.append(("result", results.index(a.name)))
        else:
            raise OpError(f"backward: '{backward.name}' takes '{a.name}', which is neither an input nor a result of "
                          f"'{sig.kernel.name}' nor the gradient of a result ({', '.join(incoming)})")
    bop = register(f"{name}_backward", backward, outputs=bouts, constants=backward_constants, cpu_target=cpu_target)
    saved_inputs = tuple(dict.fromkeys(s[1] for s in sources if s[0] == "input"))
    saved_results = tuple(dict.fromkeys(s[1] for s in sources if s[0] == "result"))
    position = {x: i for i, x in enumerate(forward_inputs)}

    def setup_context(ctx, inputs, output):
        values = sig.bind(tuple(inputs), {})
        outs = output if isinstance(output, tuple) else (output,)
        ctx.scalars = {x: values[x] for x in saved_inputs if not isinstance(values[x], torch.Tensor)}
        ctx.save_for_backward(*(values[x] for x in saved_inputs if isinstance(values[x], torch.Tensor)),
                              *(outs[i] for i in saved_results))

    def grad_fn(ctx, *grad_outputs):
        saved = list(ctx.saved_tensors)
        tensors = {x: saved.pop(0) for x in saved_inputs if x not in ctx.scalars}
        outs = {i: saved.pop(0) for i in saved_results}
        args = []
        for kind, key in sources:
            if kind == "grad":
                args.append(grad_outputs[key].contiguous())  # materialized: zeros for an unused result
            elif kind == "input":
                args.append(ctx.scalars[key] if key in ctx.scalars else tensors[key])
            else:
                args.append(outs[key])
        got = bop(*args)
        got = got if isinstance(got, tuple) else (got,)
        out = [None] * len(forward_inputs)
        for x, g in zip(of, got):
            out[position[x]] = g
        return tuple(out)

    torch.library.register_autograd(name, grad_fn, setup_context=setup_context, lib=lib)
