"""tlc kernels and tile ops as PyTorch operators (README "Calling tlc from PyTorch").

    import tlc, tlc.torch
    nn = tlc.load("std.nn")
    rms_norm = tlc.torch.op("mylib::rms_norm", nn.rms_norm, outputs=("y",))
    y = rms_norm(x, weight, 1e-6)            # a torch.library custom op: torch.compile traces it

`op` registers a `torch.library` custom operator whose schema, fake (meta) implementation and
mutation annotations come from the tl signature, so `torch.compile(fullgraph=True)` traces a
model through it without a graph break, and whose launches are CUDA-graph safe; with
`backward=` it has a gradient.  PyTorch is imported only here: `import tlc` never needs it.
"""
from __future__ import annotations

from .signature import OpError, OpSignature

__all__ = ["op", "OpError", "OpSignature"]


def op(name: str, kernel=None, *, outputs=(), mutates=None, constants=None, backward=None,
       backward_constants=None, grads=None, cpu_target=None):
    """Register `kernel` (a kernel or tile op of a loaded module) as the PyTorch operator `name`
    ("namespace::op") and return it: `torch.ops.namespace.op`, an `OpOverloadPacket` to call like
    a function, with `.tlc_signature` (`OpSignature`: its schema, arguments and results).

    - A tile op's operator takes its arrays and scalars and returns a new tensor.
    - A kernel's operator takes its arrays and scalars in declaration order and writes its
      output arrays in place (declared mutated in the schema: the tensors the scheduled kernel
      writes, or `mutates=` where tlc cannot schedule it without sizes); `outputs=("y",)` makes
      those parameters results instead: the operator allocates them from the inputs' sizes and
      dtypes and returns them, which a model under torch.compile and autograd wants.
    - `constants` fixes the kernel's constants and dtype parameters (`{"BM": 64}`); the rest
      are bound per call as a direct call binds them.
    - `backward` (a kernel or tile op) gives the operator a gradient: its parameter `dy` takes
      the gradient of the result `y`, parameters named like the forward's inputs or results take
      the saved values, and its outputs `dx` (a kernel's, by name; a tile op's result) are the
      gradients of the inputs `x` (`grads=("x",)` says which, otherwise the first tensor input
      for a backward tile op).  It is registered as the operator `name + "_backward"`.
    - CPU tensors run on `cpu_target` ("cpp", the cpu target's C++, or "interp"; by default the
      module's own when it was loaded for the CPU, else "cpp").

    With no `kernel`, returns the registration as a function of the kernel, as
    `torch.library.custom_op(name)` does: `tlc.torch.op("mylib::norm", outputs=("y",))(nn.rms_norm)`."""
    if kernel is None:
        def decorate(kernel):
            return op(name, kernel, outputs=outputs, mutates=mutates, constants=constants, backward=backward,
                      backward_constants=backward_constants, grads=grads, cpu_target=cpu_target)
        return decorate
    from .register import register

    return register(name, kernel, outputs=outputs, mutates=mutates, constants=constants, backward=backward,
                    backward_constants=backward_constants, grads=grads, cpu_target=cpu_target)
