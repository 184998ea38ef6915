"""A tile op's repeat call on the GPU: everything that depends only on the arrays' kinds, dtypes
and shapes worked out once, so that the call allocates the result and launches, nothing else.

Why: a tile op's call is budgeted like a kernel launch (a few microseconds), while planning,
binding by name, the shape bucket, the target's arch, dicts of arguments and the general
launch path cost tens of microseconds a call (bench/fusion.py measured 40-80 us).  `TileOp`
makes a `CachedCall` after a call that the general path checked and ran, keyed by what that
check depended on (`runtime.args.signature`); a later call with the same signature runs through it.

The launches: CuPy arrays through each kernel's `call_positional` fast path (which checks and
falls back on its own); PyTorch tensors by their pointers (`CompiledKernel.by_pointers`: their dtypes,
shapes and device are the signature's, their contiguity is checked here, the scalars are
converted and checked as the general path converts them); NumPy or mixed kinds through the
general path by name (their uploads dominate anyway).
"""
from __future__ import annotations

import numpy as np

from .runtime.args import CUPY, NUMPY, TORCH


class CachedCall:
    """`call(args)` -> the result, or None when an argument needs the general path (a
    non-contiguous PyTorch tensor: the general path explains)."""

    def __init__(self, prog, compiled: list, params: tuple, kinds: dict, store: dict, empty, device: int):
        """`params`: the tile op's runtime parameter names in order; `kinds`: its arrays' kinds
        by name, as the caller passed them; `store`: the first call's
        arrays by name (arguments as the launches took them, temporaries, result), which the
        general path has just launched with; `empty(shape, dtype)` allocates like it did."""
        names = list(params) + [t.name for t in prog.temps] + [prog.result.name]
        index = {n: i for i, n in enumerate(names)}
        self.n_params = len(params)
        self.allocs = tuple((tuple(store[t.name].shape), t.dtype) for t in prog.temps + (prog.result,))
        self.empty = empty
        every = set(kinds.values())
        self.torch = tuple(i for i, n in enumerate(params) if kinds.get(n) == TORCH) if every == {TORCH} else ()
        self.uploads = tuple(i for i, n in enumerate(params) if kinds.get(n) == NUMPY)
        self.to_numpy = every == {NUMPY}
        self.launches = []
        for launch, c in zip(prog.launches, compiled):
            slots = tuple(index[p.name] for p in launch.kernel.params)
            flat = tuple(launch.flat and p.kind == "tensor" for p in launch.kernel.params)
            if self.torch:
                run = c.by_pointers(arguments(launch, store), device)
                flat = (False,) * len(flat)  # a pointer is the same for a flat view
            elif every == {CUPY}:
                run = c.call_positional
            else:
                run = _by_name(c, tuple(p.name for p in launch.kernel.params))
            self.launches.append((run, slots, flat if any(flat) else None))

    def __call__(self, args: tuple):
        for i in self.torch:
            if not args[i].is_contiguous():
                return None
        store = list(args)
        if self.uploads:
            from .runtime import DeviceArray

            for i in self.uploads:
                store[i] = DeviceArray.from_numpy(args[i])
        empty = self.empty
        for shape, dt in self.allocs:
            store.append(empty(shape, dt))
        for run, slots, flat in self.launches:
            if flat is None:
                run(tuple([store[j] for j in slots]))
            else:
                run(tuple([_flat(store[j]) if f else store[j] for j, f in zip(slots, flat)]))
        out = store[-1]
        return out.numpy() if self.to_numpy else out


def arguments(launch, store: dict) -> dict:
    """One launch's arguments by parameter name, from the arrays in `store` (a flat launch
    takes its tensors as one-dimensional views)."""
    out = {}
    for p in launch.kernel.params:
        v = store[p.name]
        out[p.name] = _flat(v) if launch.flat and p.kind == "tensor" else v
    return out


def _by_name(compiled, names: tuple):
    call = compiled.call

    def run(t: tuple) -> None:
        call(dict(zip(names, t)))
    return run


def _flat(a):
    if hasattr(a, "reshape"):
        return a.reshape(-1)
    view = a.__class__.__new__(a.__class__)
    view.__dict__.update(a.__dict__)
    view.shape = (int(np.prod(a.shape, dtype=np.int64)),)
    return view
