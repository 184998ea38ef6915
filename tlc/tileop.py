"""Calling a tile op from Python (LANGUAGE.md section 7): `y = mod.linear_gelu(x, w, b)`.

Owns running a `TileOpProgram`: binding the shape symbols from the arrays, allocating the
result and the temporaries as arrays of the inputs' kind (NumPy on the interpreter; on the GPU
CuPy, PyTorch on the inputs' device, or device buffers copied back to NumPy for NumPy inputs),
and launching each kernel in order.  The plan is cached per constants, target and shape bucket;
a positional call on the GPU is cached further per arrays' kinds, dtypes and shapes
(`tileop_call.CachedCall`: a repeat call only allocates the result and launches).
"""
from __future__ import annotations

import numpy as np

from . import ir
from .dtypes import DType
from .kernel import CallError, Kernel, _constants_key, _current_device, _device_arch, allocated
from .runtime.args import CUPY, DEVICE, NUMPY, TORCH, array_kind, signature, torch_dtype
from .schedule import schedule_tile_op
from .schedule.tileops.rules import DEFAULT_RULES, Rules, bucket
from .tileop_call import CachedCall, arguments


class TileOp(Kernel):
    """One @tile_op of a loaded module: called like a kernel, returns a new array."""

    def __init__(self, module, fn, rules: Rules = DEFAULT_RULES):
        super().__init__(module, fn)
        self.schedule_rules = rules
        self._programs: dict = {}
        self._compiled_launches: dict = {}
        # self._by_signature (Kernel's): runtime.args.signature -> tileop_call.CachedCall

    def with_rules(self, **rules) -> "TileOp":
        """This tile op scheduled with other scheduling numbers (`tlc.schedule.tileops.Rules`
        fields, e.g. `ew_runs=2`), as a separate callable with its own plans and kernels; what
        bench/fusion.py sweeps."""
        from dataclasses import replace

        return TileOp(self.module, self.fn, replace(self.schedule_rules, **rules))

    def program(self, constants: dict | None = None, arch: str = "sm_80", sizes: dict | None = None):
        """The `TileOpProgram` (kernels, launches, fusion plan) for `constants` and `arch`, with
        tiles chosen for shape symbols of `sizes` (symbol -> size; default sizes otherwise)."""
        constants = constants or {}
        buckets = {k: bucket(v) for k, v in (sizes or {}).items()}
        key = (_constants_key(constants), arch, tuple(sorted(buckets.items())))
        if key not in self._programs:
            self._programs[key] = schedule_tile_op(self.module.program, self.name, constants, target=arch,
                                                   sizes=buckets, rules=self.schedule_rules)
        return self._programs[key]

    def scheduled(self, constants: dict, arch: str = "sm_80") -> ir.Kernel:
        prog = self.program(constants, arch)
        if len(prog.launches) != 1:
            raise CallError(f"'{self.name}' is scheduled into {len(prog.launches)} kernels; "
                            "use .program() to see them")
        return prog.launches[0].kernel

    def generated(self, constants: dict, arch: str = "sm_80"):
        raise CallError(f"'{self.name}' is a tile op: its kernels are in .program(); "
                        "`tlc build -k NAME` writes them to one file")

    def cuda_source(self, arch: str = "sm_80", **constants) -> str:
        """The generated `.cu` text of every kernel of this tile op."""
        from .codegen import generate_file

        prog = self.program(constants, arch)
        return generate_file(list(prog.kernels), arch, sources=self.module.program.sources,
                             source_name=self.module.program.path)

    def ir(self, **constants) -> str:
        prog = self.program(constants)
        return "\n".join([prog.describe()] + [ir.print_kernel(k) for k in prog.kernels])

    def __call__(self, *args, **kwargs):
        cached = not kwargs and len(args) == len(self._runtime) and self.module.target == "cuda"
        if cached:
            call = self._by_signature.get(signature(args, _current_device()))
            if call is not None:
                out = call(args)
                if out is not None:
                    return out
        values, constants = self.bind(args, kwargs)
        sizes = self._sizes(values)
        cuda = self.module.target == "cuda"
        cpp = self.module.target == "cpp"  # the cpu target's C++, else the interpreter
        prog = self.program(constants, _device_arch(_current_device()) if cuda else "cpu" if cpp else "sm_80", sizes)
        if not cuda:
            return self._run_cpu(prog, values, sizes, cpp)
        return self._run_cuda(prog, values, sizes, args if cached else None)

    def run_on_interpreter(self, values: dict, constants: dict | None = None) -> np.ndarray:
        """The result computed by the reference interpreter (`tlc run --check`), from NumPy
        copies of `values`."""
        host = {k: (v if isinstance(v, (np.ndarray, np.generic)) or np.ndim(v) == 0 and not hasattr(v, "shape")
                    else _to_numpy(v)) for k, v in values.items()}  # np.generic: a scalar from `--in s=0.5`
        sizes = self._sizes(host)
        return self._run_cpu(self.program(constants or {}, "sm_80", sizes), host, sizes)

    # ---- arguments -------------------------------------------------------------------------------
    def _sizes(self, values: dict) -> dict:
        sizes, seen = {}, {}
        for p in self.fn.tensor_params:
            a = values[p.name]
            shape = getattr(a, "shape", None)
            if shape is None or array_kind(a) not in (NUMPY, CUPY, TORCH, DEVICE):
                raise CallError(f"'{p.name}' must be an array, not {type(a).__name__}")
            dims = p.type.shape
            if len(shape) != len(dims):
                raise CallError(f"'{p.name}' must have {len(dims)} dimension{'s' * (len(dims) != 1)}, "
                                f"found {len(shape)}")
            for axis, (d, size) in enumerate(zip(dims, shape)):
                name = getattr(d, "id", None)
                if name is None or name not in self.fn.shape_symbols:
                    continue
                if name in sizes and sizes[name] != int(size):
                    other, other_axis = seen[name]
                    raise CallError(f"shape symbol '{name}' is {sizes[name]} from '{other}' (axis {other_axis}) "
                                    f"but {int(size)} from '{p.name}' (axis {axis})")
                sizes[name] = int(size)
                seen[name] = (p.name, axis)
        return sizes

    @staticmethod
    def _shape(t, sizes: dict) -> tuple:
        return tuple(d if isinstance(d, int) else sizes[d] for d in t.shape)

    # ---- executors ---------------------------------------------------------------------------------
    def _run_cpu(self, prog, values: dict, sizes: dict, cpp: bool = False):
        from . import cpu_executor
        from .interp import run_kernel

        for p in self.fn.tensor_params:
            if not isinstance(values[p.name], np.ndarray):
                raise CallError(f"'{p.name}' must be a NumPy array on the CPU target, not {type(values[p.name]).__name__}")
        store = dict(values)
        for t in prog.temps + (prog.result,):
            store[t.name] = self._allocated(prog, t, sizes, lambda shape, dt: np.empty(shape, dt.numpy()))
        for launch in prog.launches:
            if cpp:
                cpu_executor.run((launch.kernel,), arguments(launch, store), self.module.program.sources)
            else:
                run_kernel(launch.kernel, arguments(launch, store))
        return store[prog.result.name]

    def prepare(self, *args, **kwargs):
        """(launch, result) for GPU arrays `args`: the result and the temporaries allocated
        once, and `launch()` running the kernels again into them, without the call's binding
        and allocation (what bench/fusion.py times as the kernels' own time)."""
        from .runtime import target_arch

        values, constants = self.bind(args, kwargs)
        sizes = self._sizes(values)
        prog = self.program(constants, target_arch(), sizes)
        store = self._allocate(prog, values, sizes)
        compiled = self._compiled_program(prog)
        launches = [(c, arguments(x, store)) for x, c in zip(prog.launches, compiled)]

        def launch():
            for c, a in launches:
                c.call(a)
        return launch, store[prog.result.name]

    def _run_cuda(self, prog, values: dict, sizes: dict, args: tuple | None = None):
        """PyTorch inputs: PyTorch results on their device.  CuPy inputs: CuPy arrays.  NumPy
        inputs: copied to the GPU once, the result copied back (temporaries stay there).  With
        the positional `args`, a call like this one is cached once this one has run."""
        store, empty = self._allocate(prog, values, sizes, with_empty=True)
        compiled = self._compiled_program(prog)
        for launch, c in zip(prog.launches, compiled):
            c.call(arguments(launch, store))
        kinds = {p.name: array_kind(values[p.name]) for p in self.fn.tensor_params}
        if args is not None:
            device = _current_device()
            self._remember(args, device, CachedCall(prog, compiled, self._runtime_names, kinds, store, empty, device))
        out = store[prog.result.name]
        return out.numpy() if set(kinds.values()) == {NUMPY} else out

    def _allocate(self, prog, values: dict, sizes: dict, with_empty: bool = False):
        """The arguments, temporaries and result of `prog` by name, on the GPU (and, with
        `with_empty`, the allocator `empty(shape, dtype)` it used)."""
        from .runtime import DeviceArray

        tensors = [values[p.name] for p in self.fn.tensor_params]
        kinds = {array_kind(a) for a in tensors}
        like = next((a for a in tensors if array_kind(a) == TORCH), None)
        if like is not None:
            import torch

            device = like.device

            def empty(shape, dt: DType):
                return torch.empty(shape, dtype=torch_dtype(torch, dt), device=device)
        elif kinds == {CUPY}:
            import cupy

            def empty(shape, dt: DType):
                return cupy.empty(shape, dt.numpy())
        else:
            empty = DeviceArray
        store = dict(values)
        for p in self.fn.tensor_params:
            if isinstance(values[p.name], np.ndarray):
                store[p.name] = DeviceArray.from_numpy(values[p.name])
        for t in prog.temps + (prog.result,):
            store[t.name] = self._allocated(prog, t, sizes, empty)
        return (store, empty) if with_empty else store

    def _allocated(self, prog, t, sizes: dict, empty):
        """The result or a temporary `t` of `prog`, made by `empty(shape, dtype)`; an error that
        names it where the memory cannot hold it."""
        shape = self._shape(t, sizes)
        what = "its result" if t is prog.result else "an intermediate result"
        return allocated(lambda: empty(shape, t.dtype), f"{self.name}() cannot allocate {what}", t.dtype, shape)

    def _compiled_program(self, prog) -> list:
        from . import runtime
        from .codegen import generate

        key = (id(prog), _current_device())
        if key not in self._compiled_launches:
            arch = _device_arch(key[1])
            self._compiled_launches[key] = [
                runtime.compile_kernel(x.kernel, generate(x.kernel, arch, sources=self.module.program.sources))
                for x in prog.launches]
        return self._compiled_launches[key]


def _to_numpy(a):
    if hasattr(a, "get"):
        return a.get()
    if hasattr(a, "cpu"):
        return a.cpu().numpy()
    return a.numpy()
