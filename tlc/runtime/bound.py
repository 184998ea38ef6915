"""A launch with fixed arguments, checked once (`Kernel.launcher`, LANGUAGE.md section 7): for
the hottest loops, where even the fast path's per-call checks (`fastpath.py`) count.

Owns turning one checked call (`args.Binder`) into what the launch itself takes, made once: the
grid, the loaded function and the C arguments as CuPy's own argument objects, so that a launch
allocates nothing.  Each call reads only PyTorch's current stream (a launcher of PyTorch tensors
launches where PyTorch works, as every tlc call does) or leaves CuPy its own.  The launcher holds
its arrays: what they point to stays allocated while it lives.
"""
from __future__ import annotations

import numpy as np

from . import host_asserts
from .args import Bound, LaunchArgumentError
from .grid import launches_blocks


class BoundLaunch:
    """`run()` launches the kernel with the arguments it was made with."""

    __slots__ = ("name", "arrays", "fn", "grid", "block", "args", "smem", "empty", "_device", "_raw_stream",
                 "_streams", "_torch_stream", "_check")

    def __init__(self, compiled, bound: Bound, device: int, values: dict):
        for slot, array, _ in bound.host:
            name = compiled.binder.names[slot]
            raise LaunchArgumentError(f"'{name}' is a NumPy array, which a launch copies to the GPU each time; "
                                      f"a launcher launches GPU arrays only: pass cupy.asarray({name}) or "
                                      f"torch.from_numpy({name}).cuda()")
        self.name, self.arrays = compiled.name, values
        self.grid = compiled.grid(bound.values)
        self.empty = not launches_blocks(compiled.name, self.grid)  # an error here, not at the first call
        args = compiled.kernel_args(bound)
        self.fn = compiled.function_for(device, args)
        self.block, self.smem, self._device = compiled.block, compiled.smem, device
        self.args = [c_argument(a) for a in args]
        # a kernel with device_asserts is read after every launch, unless (HOST_DECIDED_ASSERTS)
        # the host finds that these sizes make every one hold (runtime/host_asserts.py)
        decided = compiled.assert_sites and host_asserts.HOST_DECIDED_ASSERTS and \
            compiled.asserts_hold is not None and compiled.asserts_hold(bound.values)
        self._check = compiled.check_asserts if compiled.assert_sites and not decided else None
        self._raw_stream = self._streams = self._torch_stream = None
        if bound.torch_device >= 0:
            from .launch import torch_raw_stream

            self._raw_stream, self._streams = torch_raw_stream(), compiled._streams
            self._torch_stream = compiled.torch_stream
            self._torch_stream(device)  # PyTorch's current stream, made a CuPy one now

    def __call__(self) -> None:
        if self.empty:
            return  # nothing to run
        stream = None
        if self._raw_stream is not None:
            stream = self._streams.get(self._raw_stream(self._device))
            if stream is None:  # a stream PyTorch has not used with this kernel before
                stream = self._torch_stream(self._device)
        self.fn(self.grid, self.block, self.args, self.smem, stream)
        if self._check is not None:
            self._check()

    def __repr__(self) -> str:
        return f"<tlc launcher of {self.name}, grid {self.grid}>"


_cscalar = None


def cscalar():
    """CuPy's argument object for a value (`CScalar`), which a launch passes as it is, with no
    conversion or allocation; None where this CuPy has no such class (it converts each value
    at each launch)."""
    global _cscalar
    if _cscalar is None:
        try:
            from cupy._core._scalar import CScalar
        except ImportError:
            CScalar = False
        _cscalar = CScalar
    return _cscalar or None


def c_argument(value):
    """`value` (a CuPy array, or a NumPy scalar of the C type) as CuPy's argument object."""
    made = cscalar()
    if made is None:
        return value
    if hasattr(value, "data") and hasattr(value.data, "ptr"):  # a CuPy array: its address
        return made(np.uint64(value.data.ptr))
    if isinstance(value, np.generic) and value.dtype.kind in "biuf":  # a number (a tensor map stays bytes)
        return made(value)
    return value
