"""A @kernel of a loaded module, callable with arrays (LANGUAGE.md section 7); the base of
`tileop.TileOp`, and what both share (the device, its target, the constants' cache key).

Owns binding a call's arguments to a kernel's parameters (arrays and scalars positionally in
declaration order, constants and dtypes as keywords, dtype parameters bound from the arrays),
the per-constants cache of scheduled kernels, choosing the executor, and completing a GPU
call's constants from the recorded configurations (config_table: config.json beside the module;
the interpreter keeps the kernel's own defaults, which give the same results).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .diagnostics import TlcError
from .runtime.args import array_dtype, signature

if TYPE_CHECKING:
    from . import ir
    from .dtypes import DType
    from .typecheck import CheckedFunction

# config_table, the IR, the AST and NumPy are imported where they are used: `import tlc`
# imports this module, and a call served from the caches needs none of them (issue #15)


class CallError(TlcError):
    """A call whose arguments do not fit the kernel: message names the parameter."""


class Kernel:
    """One @kernel of a loaded module, callable with arrays (a @tile_op is a `tlc.tileop.TileOp`)."""

    def __init__(self, module, fn: CheckedFunction, name: str | None = None, memo=None):
        # with `name`, `fn` is a function that returns the CheckedFunction: a kernel of a module
        # from the checked-module cache decodes its signature when something first reads what
        # comes of it (`_FROM_FN`), which a call found in the launch memo (`memo`:
        # runtime.checked_cache.LaunchMemo) never does
        self.module = module
        if name is None:
            self._set_fn(fn)
        else:
            self.name, self._fn_source = name, fn
        self._memo, self._memo_unread = memo, memo is not None
        self._scheduled: dict = {}
        self._generated: dict = {}  # (constants key, arch) -> GeneratedKernel
        self._compiled: dict = {}  # (constants key, device) -> runtime.CompiledKernel
        self._launchers: dict = {}  # (constants as given, device) -> the same, found without sorting
        self._fast = None  # the launcher for positional calls with default constants
        # ... and for a kernel whose constants follow its arrays (dtype parameters, config.json
        # rules): positional calls' launchers by the arrays' kinds, dtypes and shapes
        self._by_signature: dict = {}
        self._rules = None  # the recorded configurations (config.json beside the module), read once

    def _set_fn(self, fn: CheckedFunction) -> None:
        self.fn, self.name = fn, fn.name
        # what every call reads, worked out once (a launch's host time is budgeted in microseconds)
        self._runtime = fn.runtime_params
        self._runtime_names = tuple(p.name for p in fn.runtime_params)
        self._n_runtime = len(self._runtime_names)
        self._dtype_sources = {p.name: tuple(t.name for t in fn.tensor_params if _annotation_name(fn, t.name) == p.name)
                               for p in fn.params if p.role == "dtype"}

    def __getattr__(self, attr: str):
        # only for what normal lookup does not find: a lazy kernel's checked function, decoded now
        source = self.__dict__.get("_fn_source")
        if source is None or attr not in _FROM_FN:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {attr!r}")
        del self._fn_source
        self._set_fn(source())
        return getattr(self, attr)

    def __repr__(self) -> str:
        args = ", ".join(p.name for p in self.fn.runtime_params)
        return f"<tlc {self.fn.kind} {self.name}({args})>"

    def bind(self, args: tuple, kwargs: dict) -> tuple[dict, dict]:
        """(runtime arguments by name, constants by name) for one call."""
        runtime = self._runtime
        if len(args) > len(runtime):
            what = "array or scalar" if len(runtime) == 1 else "arrays and scalars"
            raise CallError(f"{self.name}() takes {len(runtime)} {what} "
                            f"({', '.join(p.name for p in runtime)}), {len(args)} given")
        values = {p.name: a for p, a in zip(runtime, args)}
        constants = {}
        for k, v in kwargs.items():
            p = self.fn.param(k)
            if p is None and k in self.fn.from_arrays:  # a specialized shape symbol, given
                constants[k] = v
                continue
            if p is None:
                known = [q.name for q in self.fn.params]
                raise CallError(f"{self.name}() has no parameter '{k}'; its parameters are {', '.join(known)}")
            if p.role in ("tensor", "scalar"):
                if k in values:
                    raise CallError(f"{self.name}() got two values for '{k}'")
                values[k] = v
            else:
                constants[k] = v
        missing = [p.name for p in runtime if p.name not in values and not p.has_default]
        if missing:
            raise CallError(f"{self.name}() is missing {', '.join(repr(m) for m in missing)}")
        for p in runtime:  # a scalar left out takes its default
            if p.name not in values and p.has_default:
                values[p.name] = p.value
        constants.update(self.dtypes_from_arrays(values, constants))
        constants.update(self.sizes_from_arrays(values, constants))
        return values, constants

    def sizes_from_arrays(self, values: dict, given=()) -> dict:
        """The sizes compiled in as constants (`fn.from_arrays`: the specialized shape symbols
        and `const` parameters standing as a dimension) that the arrays in `values` bind and
        `given` does not: `N` from `x: f32[M, N]`, from the first array that has it."""
        bound = {}
        for name, uses in self.fn.from_arrays.items():
            if name in given:
                continue
            if name in self.fn.ones:
                bound.update(self._one_or_not(name, uses, values))
                continue
            for use in uses:
                shape = getattr(values.get(use.param), "shape", None)
                if shape is None:
                    continue
                rank = len(self.fn.param(use.param).type.shape)
                if len(shape) != rank:
                    raise CallError(f"'{use.param}' has rank {len(shape)} but the kernel expects rank {rank} "
                                    f"({self.fn.param(use.param).type})")
                bound[name] = int(shape[use.axis])
                if bound[name] == 0:
                    raise CallError(_empty_size(self.fn, name, use))
                break
        return bound

    def _one_or_not(self, name: str, uses, values: dict) -> dict:
        """A symbol specialized on being 1 (`fn.ones`) bound from the first array that has it:
        1, or NOT_ONE (an empty array's 0 too: it stays a run-time size)."""
        from .typecheck.program import NOT_ONE

        for use in uses:
            shape = getattr(values.get(use.param), "shape", None)
            if shape is not None and len(shape) == len(self.fn.param(use.param).type.shape):
                return {name: 1 if int(shape[use.axis]) == 1 else NOT_ONE}
        return {}

    def dtypes_from_arrays(self, values: dict, given=()) -> dict:
        """The dtype parameters not in `given` that the arrays in `values` bind (`T` from an
        array `x: T[N]`): a call's, or `tlc run --in x=FILE.npy`'s."""
        bound = {}
        for name in self._dtype_sources:
            if name not in given:
                dt = self._dtype_from_arrays(name, values)
                if dt is not None:
                    bound[name] = dt
        return bound

    def _dtype_from_arrays(self, name: str, values: dict) -> DType | None:
        found = None
        for tensor in self._dtype_sources[name]:
            if tensor not in values:
                continue
            dt = array_dtype(values[tensor])
            if dt is None:
                continue
            if found is not None and dt != found[0]:
                raise CallError(f"the dtype parameter '{name}' is {found[0]} from '{found[1]}' but {dt} from '{tensor}'")
            found = (dt, tensor)
        return found[0] if found else None

    def recorded_rules(self) -> tuple:
        """The rules of the config.json beside this kernel's module (config_table), checked
        against the kernel's parameters once; () when it has none."""
        if self._rules is None:
            from . import config_table

            rules = config_table.rules_for(self.fn.module_path, self.name) if self.fn.module_path else ()
            known = {**{s: "shape" for s in self.fn.shape_symbols}, **{p.name: p.role for p in self.fn.params}}
            config_table.check_rules(rules, self.name, known, self.fn.module_path)
            self._rules = rules
        return self._rules

    def forget_rules(self) -> None:
        """Read config.json again at the next call (`tlc tune` recorded a rule)."""
        self._rules = None
        self._launchers.clear()
        self._by_signature.clear()
        self._fast = None

    def autotune(self, values: dict, constants: dict) -> None:
        """`autotune=True`: the first call of a shape bucket tunes the kernel for it (tlc.tune:
        the @autotune space, shapes and dtypes of this call's arrays) and records the winner
        in the config.json beside the module, or the per-user one where that folder is
        read-only; a bucket with a rule recorded by tlc tune is not tuned again."""
        from . import config_table, tune
        from .tune.space import bucket_when

        sizes = {}
        for sym, uses in self.fn.shape_symbols.items():
            use = next((u for u in uses if getattr(values.get(u.param), "shape", None) is not None), None)
            if use is not None:
                sizes[sym] = int(values[use.param].shape[use.axis])
        dtypes = {p.name: constants.get(p.name, p.value) for p in self.fn.params if p.role == "dtype"}
        arch = _device_arch(_current_device()) if self.module.target == "cuda" else "sm_80"
        when = bucket_when(sizes, dtypes)
        if any(r.archs == (arch,) and _when_of(r) == when for r in self.recorded_rules()):
            return
        defines = {k: v for k, v in constants.items() if self.fn.param(k) is not None and self.fn.param(k).role == "dtype"}
        user = not config_table.writable_folder(config_table.beside(self.fn.module_path))
        # compiled in this process: spawned workers would run again a calling script that has no
        # `if __name__ == "__main__":` (tlc tune compiles in parallel)
        tune.tune_kernel(self, [sizes], defines=defines, user_config=user, timer=tune.AUTOTUNE_TIMER, jobs=1,
                         progress=tune.Progress())  # minutes on a GPU: say what is happening

    def with_recorded(self, values: dict, constants: dict, arch: str) -> dict:
        """`constants` completed by the recorded configuration for a call on `arch` with the
        arrays in `values` (its shape bucket); a constant given by the caller always wins."""
        rules = self.recorded_rules()
        if not rules:
            return constants
        from . import config_table

        shapes = {}
        for sym, uses in self.fn.shape_symbols.items():
            use = next((u for u in uses if u.param in values), None)
            shape = getattr(values[use.param], "shape", None) if use else None
            if shape is not None and use.axis < len(shape):
                shapes[sym] = int(shape[use.axis])
        dtypes = {p.name: constants.get(p.name, p.value) for p in self.fn.params if p.role == "dtype"}
        chosen = config_table.choose(rules, arch, shapes, dtypes)
        return {**chosen, **constants} if chosen else constants

    def scheduled(self, constants: dict, arch: str = "sm_80") -> ir.Kernel:
        """The scheduled tile IR for `constants` and the target `arch` (which picks the gemm
        accumulator's layout and the shared-memory limit; the interpreter ignores both)."""
        key = (_constants_key(constants), arch)
        if key not in self._scheduled:
            from .schedule import schedule  # the scheduler, imported when first needed
            from .schedule.fit import schedule_fitting

            # defaults that need more shared memory than `arch` has are shrunk (schedule/fit.py)
            self._scheduled[key] = schedule_fitting(self.module.program, self.name, constants, target=arch,
                                                    schedule=schedule)
        return self._scheduled[key]

    def generated(self, constants: dict, arch: str = "sm_80"):
        """The generated CUDA kernel (`tlc.codegen.GeneratedKernel`) for `constants` and `arch`
        (`tlc build`); needs no GPU."""
        key = (_constants_key(constants), arch)
        if key not in self._generated:
            from .codegen import generate
            from .dump import dump_from_env

            dump_from_env(self, constants, arch)  # TLC_DUMP=DIR: every stage of this compile written out
            self._generated[key] = generate(self.scheduled(constants, arch), arch, sources=self.module.program.sources)
        return self._generated[key]

    def cuda_source(self, arch: str = "sm_80", **constants) -> str:
        """The generated `.cu` text for `constants` (`arch` is `sm_80` or `sm_90a`); needs no GPU.
        A kernel of several grids gives one file: each grid's kernel and launcher, then one
        launcher that runs them in order."""
        if self._grouped:
            from .codegen import generate_file

            return generate_file(list(self.scheduled_grids(constants, arch)), arch, sources=self.module.program.sources)
        return self.generated(constants, arch).source

    def compiled(self, constants: dict, device: int | None = None):
        """This kernel with `constants` compiled for a GPU (the current one by default) as a
        `runtime.CompiledKernel`, through the on-disk cache (keyed by the program's text, so a
        hit needs no scheduling or code generation)."""
        from . import runtime
        from .runtime.compile import current_device

        key = (_constants_key(constants), current_device() if device is None else device)
        compiled = self._compiled.get(key)
        if compiled is None:
            def build(arch):
                return self.scheduled(constants, arch), self.generated(constants, arch)

            compiled = self._compiled[key] = runtime.compile_program_kernel(
                self.module.sources, self.name, constants, key[1], build)
        return compiled

    def ir(self, **constants) -> str:
        """The scheduled tile IR as text (`tlc build --emit ir`), every grid's."""
        from . import ir

        return "\n".join(ir.print_kernel(k) for k in self.scheduled_grids(constants))

    @property
    def grid_count(self) -> int:
        """How many grids the kernel has: each is a launch, in order (LANGUAGE.md section 2)."""
        from .parser import nodes as n

        return sum(isinstance(s, n.With) for s in self.fn.node.body) if self.fn.kind == "kernel" else 1

    @property
    def _grouped(self) -> bool:
        """Whether a call runs the grids through `launch_NAME`: several grids, or workspaces."""
        return self.grid_count > 1 or bool(self.fn.workspaces)

    def with_workspaces(self, values: dict, kernel: ir.Kernel, on_gpu: bool) -> dict:
        """`values` and a fresh array for each alloc_global workspace of `kernel` (one grid's),
        sized from the arrays' shape symbols: uninitialized device memory on the GPU, zeros on
        the interpreter.  With PyTorch tensors the GPU's comes from PyTorch's caching allocator
        on its current stream, as theirs do, so that a CUDA graph captures the call (tlc.torch)."""
        if not kernel.workspaces:
            return values
        import numpy as np

        from .interp.numerics import np_dtype
        from .runtime.args import TORCH, array_kind, torch_dtype
        from .runtime.device_array import DeviceArray

        like = next((v for v in values.values() if array_kind(v) == TORCH), None) if on_gpu else None
        if like is not None:
            import torch

            def alloc(shape, dt):
                return torch.empty(shape, dtype=torch_dtype(torch, dt), device=like.device)
        else:
            alloc = DeviceArray

        sizes = {}
        for sym, uses in self.fn.shape_symbols.items():
            use = next((u for u in uses if getattr(values.get(u.param), "shape", None) is not None), None)
            if use is not None:
                sizes[sym] = int(values[use.param].shape[use.axis])
        out = dict(values)
        for name in kernel.workspaces:
            p = kernel.param(name)
            shape = tuple(d if isinstance(d, int) else sizes[d] for d in p.shape)
            out[name] = allocated(lambda: alloc(shape, p.dtype) if on_gpu else np.zeros(shape, np_dtype(p.dtype)),
                                  f"{self.name}() cannot allocate its workspace '{name}'", p.dtype, shape)
        return out

    def scheduled_grids(self, constants: dict, arch: str = "sm_80") -> tuple:
        """The scheduled kernel of each grid, in launch order (one for a kernel of one grid)."""
        if self.grid_count == 1:
            return (self.scheduled(constants, arch),)
        key = (_constants_key(constants), arch, "grids")
        if key not in self._scheduled:
            from .schedule import schedule_grids

            self._scheduled[key] = schedule_grids(self.module.program, self.name, constants, target=arch)
        return self._scheduled[key]

    def compiled_grids(self, constants: dict, device: int) -> tuple:
        """Each grid's kernel compiled for GPU `device` (`compiled`, per grid; cached on disk
        under `NAME#gridI`, a name no kernel can take)."""
        if self.grid_count == 1:
            return (self.compiled(constants, device),)
        from . import runtime
        from .codegen import generate

        key = (_constants_key(constants), device, "grids")
        if key not in self._compiled:
            def build_grid(i):
                def build(arch):
                    k = self.scheduled_grids(constants, arch)[i]
                    return k, generate(k, arch, sources=self.module.program.sources)
                return build

            self._compiled[key] = tuple(runtime.compile_program_kernel(
                self.module.sources, f"{self.name}#grid{i}", constants, device, build_grid(i))
                for i in range(self.grid_count))
        return self._compiled[key]

    def __call__(self, *args, **kwargs):
        fast = self._fast
        if fast is not None and not kwargs and len(args) == self._n_runtime:
            # All arguments positional, default constants, one GPU: straight to the launcher,
            # which still checks every argument (and explains through the general path).
            fast(args)
            return
        if self._by_signature and not kwargs:
            launch = self._by_signature.get(signature(args, _current_device()))
            if launch is not None:
                launch(args)
                return
        if self._memo_unread:  # a new process's first call: one like a call made before?
            self._memo_unread = False
            if not kwargs and self.module.target == "cuda" and self._launch_from_memo(args):
                return
        if "autotune" in kwargs and self.fn.param("autotune") is None:
            kwargs = dict(kwargs)
            if kwargs.pop("autotune"):
                self.autotune(*self.bind(args, kwargs))
        values, constants = self.bind(args, kwargs)
        if self.module.target == "cuda":
            device = _current_device()
            if self.recorded_rules():
                constants = self.with_recorded(values, constants, _device_arch(device))
            key = (tuple(constants.items()), device)
            launch = self._launchers.get(key)
            if launch is None and self._grouped:  # one launch per grid, in order, on one stream
                grids = self.compiled_grids(constants, device)

                def launch(values, grids=grids):
                    values = self.with_workspaces(values, grids[0].kernel, on_gpu=True)
                    for grid in grids:
                        grid.call(values)
                self._launchers[key] = launch
            if launch is None:  # checked one argument at a time; the fast paths are made at the next
                compiled = self.compiled(constants, key[1])  # call (a process that calls once never makes them)
                launch, self._launchers[key] = compiled.launch, lambda values, c=compiled: c.call(values)
            if self._grouped:  # the fast paths below launch one kernel, with no workspace
                remembered = fast_branch = False
            elif not kwargs and not constants and not self._dtype_sources and not self._rules and _single_gpu():
                self._fast = self._deferred(self.compiled(constants, key[1]))
                remembered, fast_branch = len(args) == len(self._runtime), True
            elif not kwargs and len(args) == len(self._runtime) and _single_gpu():
                # the constants were chosen from what the signature holds: the next call like
                # this one skips binding, dtype inference and the rules (tens of microseconds)
                self._remember(args, device, self._deferred(self.compiled(constants, key[1]), signature(args, device)))
                remembered, fast_branch = True, False
            else:
                remembered = fast_branch = False
            launch(values)
            if remembered and self._memo is not None:  # for the next process's first call like this one:
                from . import config_table

                files = config_table.rule_files(self.fn.module_path) if self.fn.module_path else []
                self._memo.record(self.name, self._runtime_names, args, device, _constants_key(constants),
                                  _device_arch(device), files, fast=fast_branch)
                self._memo = None  # once a process (a file written at every new shape would cost each ~0.3 ms)
            return
        cpp = self.module.target == "cpp"  # the cpu target's C++, else the interpreter
        kernels = self.scheduled_grids(constants, "cpu" if cpp else "sm_80")
        import numpy as np

        from .interp import run_kernel

        for p in self.fn.runtime_params:
            if p.name in values and p.role == "tensor" and not isinstance(values[p.name], np.ndarray):
                raise CallError(f"'{p.name}' must be a NumPy array on the CPU target, not {type(values[p.name]).__name__}")
        values = self.with_workspaces(values, kernels[0], on_gpu=False)
        if cpp:
            from . import cpu_executor

            cpu_executor.run(kernels, values, self.module.program.sources)
            return
        for kernel in kernels:
            run_kernel(kernel, values)

    def launcher(self, *args, **kwargs):
        """This kernel's launch with these arguments (a call's, on the GPU), checked once:
        `run = mod.k.launcher(x, y, 2.0)` then `run()` in a hot loop launches with no check,
        binding or allocation (`runtime.bound.BoundLaunch`).  The arrays are held as given:
        write new values into them, not new arrays."""
        if self.fn.kind != "kernel":
            raise CallError(f"{self.name}() is a tile op, which returns a new array at each call; "
                            f"launcher() takes a @kernel, whose outputs are among its arguments")
        if self._grouped:
            what = f"launches {self.grid_count} grids" if self.grid_count > 1 else "allocates workspaces at each call"
            raise CallError(f"{self.name}() {what}; launcher() holds one launch of one grid: call the kernel instead")
        values, constants = self.bind(args, kwargs)
        if self.module.target != "cuda":
            raise CallError(f"{self.name}.launcher() launches on the GPU, but this module runs on the "
                            f"{self.module.target} target; load it with target='cuda'")
        device = _current_device()
        if self.recorded_rules():
            constants = self.with_recorded(values, constants, _device_arch(device))
        return self.compiled(constants, device).bound(values, device)

    def _deferred(self, compiled, sig=None):
        """A launcher that makes `compiled`'s positional fast path at its first call and puts it
        where it was kept (`_fast`, or `_by_signature[sig]`), so that later calls reach it
        directly; making it costs a few tenths of a millisecond that one call need not pay."""
        def first_call(args):
            fast = compiled.call_positional
            if sig is None:
                if self._fast is first_call:
                    self._fast = fast
            elif self._by_signature.get(sig) is first_call:
                self._by_signature[sig] = fast
            return fast(args)
        return first_call

    def _launch_from_memo(self, args: tuple) -> bool:
        """Launch a call whose signature the launch memo holds (runtime.checked_cache.LaunchMemo), its kernel
        from the program cache, and keep its launcher as the general path would; False (nothing
        done) where the memo or the program cache has nothing for it."""
        from . import runtime

        if not _single_gpu():
            return False
        device = _current_device()
        found = self._memo.lookup(self.name, args, device)
        if found is None:
            return False
        names, constants_key, arch, fast = found
        compiled = runtime.cached_program_kernel(self.module.source_digests, self.name, constants_key, device, arch)
        if compiled is None:
            return False
        self._compiled.setdefault((constants_key, device), compiled)
        compiled.launch(dict(zip(names, args)))  # each argument checked, as at any first call
        self._memo = None  # served: nothing to record
        if fast:
            self._n_runtime = len(names)  # what the fast path's test reads, without the checked function
            self._fast = self._deferred(compiled)
        else:
            self._remember(args, device, self._deferred(compiled, signature(args, device)))
        return True

    def _remember(self, args: tuple, device: int, launch) -> None:
        """Keep `launch` for the later positional calls whose `signature` is that of `args`."""
        if len(self._by_signature) >= MAX_SIGNATURES:
            self._by_signature.clear()
        self._by_signature[signature(args, device)] = launch


# launchers kept per kernel or tile op for calls by signature (a shape that changes every call
# gains nothing from them)
MAX_SIGNATURES = 64

_get_device = None  # CuPy's getDevice, bound on the first CUDA call


# CuPy's runtime module is read as an attribute of cupy.cuda (`from cupy.cuda import runtime`),
# which `import cupy` has set: `from cupy.cuda.runtime import ...` imports cupy/cuda/runtime.py,
# a module that star-imports it again, 0.35 ms of a cached first call on the H200 (issue #15)
def allocated(make, what: str, dtype, shape: tuple):
    """`make()`, an array a call allocates (a workspace, a tile op's result); a `CallError`
    saying `what` and the array's size where the memory cannot hold it (NumPy's MemoryError,
    or its ValueError past 2**63 bytes; CuPy's out-of-memory is a MemoryError too)."""
    try:
        return make()
    except (MemoryError, ValueError):
        from math import prod

        from .inputs import _gib

        raise CallError(f"{what}: {dtype}[{', '.join(map(str, shape))}] takes "
                        f"{_gib(prod(shape) * dtype.itemsize)}") from None


def _current_device() -> int:
    global _get_device
    if _get_device is None:
        from cupy.cuda import runtime
        _get_device = runtime.getDevice
    return _get_device()


# what a lazy kernel (`Kernel.__init__` with a name) has once its checked function is decoded
_FROM_FN = frozenset({"fn", "_runtime", "_runtime_names", "_n_runtime", "_dtype_sources"})

_archs: dict = {}  # device -> the code generator's arch for it


def _device_arch(device: int) -> str:
    arch = _archs.get(device)
    if arch is None:
        from .runtime import target_arch
        arch = _archs[device] = target_arch(device)
    return arch


_gpu_count = None


def _single_gpu() -> bool:
    global _gpu_count
    if _gpu_count is None:
        from cupy.cuda import runtime
        _gpu_count = runtime.getDeviceCount()
    return _gpu_count == 1


def _constants_key(constants: dict) -> tuple:
    # str: 4, np.int64(4) and -D's "4" are one key; an int past 64 bits as itself (str refuses
    # one of more than 4300 digits; binding it is E150 anyway)
    return tuple(sorted((k, v if isinstance(v, int) and v.bit_length() > 64 else str(v)) for k, v in constants.items()))


def _empty_size(fn: CheckedFunction, name: str, use) -> str:
    """Why an empty array cannot be passed where its size is compiled in."""
    span, what = fn.to_specialize.get(name, (None, None))
    where = f"{what} at {span.file}:{span.line}:{span.col}" if span is not None and what else "a constant"
    return (f"'{use.param}' has size 0 on axis {use.axis}, but '{name}' is compiled into the kernel as "
            f"{where}, which cannot be 0; an empty array has nothing to compute: skip the call")


def _when_of(rule) -> dict:
    """A rule's "when" as config.json writes it."""
    return {**{name: [lo, hi] for name, lo, hi in rule.ranges}, **dict(rule.dtypes)}


def _annotation_name(fn: CheckedFunction, param: str) -> str | None:
    p = next((q for q in fn.node.params if q.name == param), None)
    return p.annotation.name if p is not None else None
