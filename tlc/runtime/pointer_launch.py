"""Relaunching one compiled kernel with PyTorch tensors by pointer: the C arguments of a first
launch, which `Binder` checked, with each call's pointers and scalars put in their slots, on
PyTorch's current stream.  For callers that launch the same kernel on like tensors again and
again (a tile op's repeat call, `tlc/tileop_call.py`) and whose arrays' dtypes, shapes and
device are already known to match: the general path checks everything, every time.  Nor does
a call compare its pointers for shared memory (runtime/overlap.py): the tensors a tile op's
kernels write are its temporaries and result, allocated for each call, so no argument is one."""
from __future__ import annotations

import numpy as np

from .args import Bound
from .grid import launches_blocks


class PointerLaunch:
    def __init__(self, compiled, bound: Bound, device: int):
        self.compiled, self.device = compiled, device
        self.template, self.values = list(bound.args), list(bound.values)
        self.tensors = tuple(t[0] for t in compiled.binder.tensors)
        self.scalars = tuple((t[0], t[2]) for t in compiled.binder.scalars)
        self.grid = compiled.grid(self.values)
        self.empty = not launches_blocks(compiled.name, self.grid)  # an error here, not at the first call
        self.fn = compiled.function(device)

    def __call__(self, t: tuple) -> None:
        c = self.compiled
        kargs = self.template.copy()
        for i in self.tensors:
            kargs[i] = np.uint64(t[i].data_ptr())
        values, grid, empty = self.values, self.grid, self.empty
        if self.scalars:
            values = values.copy()
            for i, convert in self.scalars:
                kargs[i], values[i] = convert(t[i])
            if c.binder.loops:  # a scalar bound of a stepped loop (runtime/loop_bounds.py)
                c.binder.check_loops(values)
            grid = c.grid(values)
            empty = not launches_blocks(c.name, grid)
        if empty:
            return  # nothing to run
        args = c.kernel_args(Bound(kargs, values, (), -1))  # and the tensor maps, if it takes them
        fn = self.fn if c.built_flags is None and not c.whole_runs else c.function_for(self.device, args)
        fn(grid, c.block, args, c.smem, c.torch_stream(self.device))
