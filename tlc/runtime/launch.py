"""A compiled kernel on the GPU: its binary loaded per device, and launches on the caller's
current stream.

Owns loading a binary (`cuModuleLoadData`, with the dynamic shared memory opt-in above 48 KB),
the stream a launch uses (PyTorch's current stream when a PyTorch tensor is passed, else
CuPy's), and the copies of NumPy arguments (in before, out after, only for tensors the kernel
writes).  Argument checks are `args.py`'s, grid arithmetic and limits `grid.py`'s.
"""
from __future__ import annotations

import functools

from .. import device_assert
from ..diagnostics import TlcError
from ..ir.nodes import Kernel
from .args import Binder, Bound, LaunchFacts
from . import host_asserts
from .grid import compile_grid, launches_blocks
from .whole_runs import size_keeps_runs_whole
from .driver_api import max_active_blocks, max_active_clusters

DEFAULT_SMEM_LIMIT = 48 * 1024  # above this a kernel must opt in to more dynamic shared memory


class LaunchError(TlcError):
    """A launch the GPU cannot make (not enough shared memory or registers; a grid it cannot
    launch is a `grid.GridError`)."""


class CompiledKernel:
    """A generated kernel's binary with everything a launch needs; call it with the
    arguments by parameter name: `compiled({"A": a, "B": b, "n": 7})`."""

    def __init__(self, kernel: Kernel, generated, binary: bytes, arch: str, facts: LaunchFacts | None = None,
                 generic: bool = False):
        # `kernel`: the IR, or (with its `facts`) a function that decodes it, called when
        # something first reads `kernel` (a launch from the program cache never does);
        # `generated`: a `GeneratedKernel`, or the `GeneratedLaunch` of one (the same);
        # `generic`: the binary takes any TMA flags (else those of `tensormap.built_flags`)
        self._kernel, self._generated, self.binary, self.arch = kernel, generated, binary, arch
        facts = facts or LaunchFacts.of(kernel)
        self.name = generated.name
        self.binder = Binder(facts, generated)
        self.block = (generated.threads, 1, 1)
        self.smem = generated.smem_bytes
        self._functions: dict[int, object] = {}  # device id -> loaded function
        self.cluster = generated.cluster
        # a kernel with device_asserts: its failure record read after every launch (set before
        # anything loads the module: a persistent kernel's block count loads it, below)
        self.assert_sites = facts.asserts
        self._records: dict[int, int] = {}  # device id -> address of the module's record
        # where every assert tests only sizes and integer scalars: their conditions on the host
        # (runtime/host_asserts.py; None where they test anything else)
        self.asserts_hold = host_asserts.holds(facts.assert_conds, self.binder.slots) if facts.asserts else None
        self.persistent_blocks = self._persistent_blocks(generated.persistent) if generated.persistent else None
        self.grid = compile_grid(generated.grid, self.binder.slots, self.persistent_blocks, self.cluster, self.name)
        # a kernel that copies through the TMA takes its tensors' maps after its own arguments
        self.tensor_maps = None
        # the flags the binary was built for (`tensormap.FLAGS`' object), or None: it takes any
        self.built_flags = None
        self._generic = None  # the generic build's CompiledKernel, once a launch needed it
        self._generic_functions: dict = {}  # its loaded functions (the fast path launches them too)
        # a kernel whose copies move whole runs is built for launches that keep them whole
        # (codegen/whole_runs.py, runtime/whole_runs.py), unless generic or it asserts (whose
        # record was read from one module; with host_asserts.WHOLE_RUNS_WITH_ASSERTS it keeps the
        # build and check_asserts reads the generic build's record too): the C argument slots of
        # the tensors whose addresses must be 16-byte aligned, and of the sizes that must be
        # multiples of a run
        self.whole_runs = None if generic or not host_asserts.whole_runs_build(facts.asserts) else \
            getattr(generated, "whole_runs", None)
        if self.whole_runs:
            slots = self.binder.slots
            self._whole_pointers = tuple(slots[t] for t, _, _ in self.whole_runs)
            self._whole_sizes = tuple((slots[size], run) for _, size, run in self.whole_runs if size and abs(run) > 1)
        if generated.tensor_maps:
            from .tensormap import FLAGS, LaunchTensorMaps, built_flags  # only a kernel that copies through the TMA needs it

            self.tensor_maps = LaunchTensorMaps(generated.tensor_maps)
            flags = None if generic else built_flags(generated.tensor_maps, facts.asserts)
            self.built_flags = None if flags is None else FLAGS[flags]
        # per map: the tensor's argument slot, and per dim its size or (symbol) the slot of its value
        self._map_slots = tuple((self.binder.slots[s.param],
                                 tuple((False, d) if isinstance(d, int) else (True, self.binder.slots[d]) for d in s.launch_sizes))
                                for s in generated.tensor_maps)
        self._streams: dict[int, object] = {}  # foreign stream pointer -> cupy Stream
        self._fast_paths: list = []  # the fast paths made, until PyTorch is in use: see `launch`
        self._torch = False

    @property
    def kernel(self) -> Kernel:
        """The kernel's tile IR."""
        if not isinstance(self._kernel, Kernel):
            self._kernel = self._kernel()
        return self._kernel

    @property
    def generated(self):
        """The generated kernel (`tlc.generated.GeneratedKernel`): its C source, arguments and launch."""
        if isinstance(self._generated, GeneratedLaunch):
            self._generated = self._generated.whole()
        return self._generated

    # What a launch reads of the kernel, without decoding the IR or the generated kernel of one
    # from the program cache (~15 ms of its second call, which made the fast path, on the H200)
    @property
    def params(self) -> tuple:
        """The kernel's parameters (its `LaunchFacts`')."""
        return self.binder.facts.params

    @property
    def overlap_pairs(self) -> tuple:
        """The tensors a launch checks do not share memory (`args.Binder`'s, runtime/overlap.py)."""
        return self.binder.overlap_pairs

    @property
    def counted_loops(self) -> tuple:
        """The loops whose i32 counter a launch checks, where the host can compute their bounds
        (`args.Binder`'s, runtime/loop_bounds.py)."""
        return tuple(loop for loop, _ in self.binder.loops)

    @property
    def launch_fields(self):
        """The generated kernel's name, grid, C arguments, tensor maps, ...: its `GeneratedLaunch`
        where it came from the program cache, else the `GeneratedKernel`."""
        return self._generated

    # The fast paths are made at their first use (writing and compiling one costs a few tenths
    # of a millisecond, which a process running a kernel from the cache once need not pay).

    @functools.cached_property
    def call(self):
        """`call(args)`: the generated fast path, falling back to `launch` (callers that launch
        in a loop may hold `call` itself and skip this object's `__call__`)."""
        return self._fast_path(positional=False)

    @functools.cached_property
    def call_positional(self):
        """`call_positional(values)`: the same for a tuple of the arguments in parameter order."""
        return self._fast_path(positional=True)

    def _fast_path(self, positional: bool):
        from . import fastpath  # here: a process that launches a kernel once never makes its fast path

        fast = fastpath.build(self, fallback=self.launch, positional=positional)
        if self._torch:
            fastpath.enable_torch(fast)
        else:
            self._fast_paths.append(fast)
        return self._checking(fast) if self.assert_sites else fast

    def _persistent_blocks(self, kind) -> int:
        """The most blocks of a persistent kernel that run at once on the current GPU: one per
        SM, in whole clusters that the GPU can place together (a GPC whose free SMs do not
        pair up leaves one out; a cluster that waits for a place would double the time); for
        `kind` "fill" (schedule/pipeline_rows.py), as many as the SMs hold."""
        from cupy.cuda import runtime

        device = runtime.getDevice()
        sms = device_attribute(device, "cudaDevAttrMultiProcessorCount")
        if kind == "fill":
            return sms * (max_active_blocks(self.function(device).ptr, self.block[0], self.smem) or 1)
        if self.cluster == 1:
            return sms
        fits = max_active_clusters(self.function(device).ptr, self.cluster, self.block[0], self.smem)
        return self.cluster * min(sms // self.cluster, fits or sms // self.cluster)

    def function(self, device: int):
        """The kernel loaded on GPU `device` (loaded once per device: a module belongs to a
        context)."""
        fn = self._functions.get(device)
        if fn is None:
            fn = self._functions[device] = self._load(device)
        return fn

    def function_for(self, device: int, args: list):
        """The function that launches `args` (`kernel_args`' list) on GPU `device`: this binary
        where it was built for the launch's TMA flags (the last argument) and its whole runs, else
        the generic build, compiled (or read from the cache) the first time a launch needs it."""
        if (self.built_flags is None or args[-1] is self.built_flags) and \
                (not self.whole_runs or self.keeps_runs_whole(args)):
            return self.function(device)
        if self._generic is None:
            from . import compile_kernel  # here: a launch whose maps all encode never needs it

            self._generic = compile_kernel(self.kernel, self.generated, generic=True)
            self._generic._functions = self._generic_functions
        return self._generic.function(device)

    @property
    def launched_generic(self) -> bool:
        """Whether a launch has needed the generic build (`function_for`)."""
        return self._generic is not None

    def keeps_runs_whole(self, args: list) -> bool:
        """Whether a launch with these C arguments (a tensor as a CuPy array or its address)
        keeps the runs of the kernel's copies whole: its `whole_runs` build can launch it."""
        for i in self._whole_pointers:
            a = args[i]
            if (a.data.ptr if hasattr(a, "data") and hasattr(a.data, "ptr") else int(a)) % 16:
                return False
        return all(size_keeps_runs_whole(int(args[i]), run) for i, run in self._whole_sizes)

    def _load(self, device: int):
        import cupy
        from cupy.cuda import driver, function

        with cupy.cuda.Device(device):
            module = function.Module()
            module.load(self.binary)
            fn = module.get_function(self.name)  # keeps `module` alive
            if self.assert_sites:
                self._records[device] = driver.moduleGetGlobal(module.ptr, device_assert.RECORD_SYMBOL)
            if self.smem > DEFAULT_SMEM_LIMIT:
                limit = device_attribute(device, "cudaDevAttrMaxSharedMemoryPerBlockOptin")
                if self.smem > limit:
                    raise LaunchError(f"kernel '{self.name}' needs {self.smem} bytes of shared memory "
                                      f"but this GPU allows {limit} per block; choose smaller tiles")
                driver.funcSetAttribute(fn.ptr, driver.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                        self.smem)
            fits = driver.funcGetAttribute(driver.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn.ptr)
            if self.block[0] > fits:
                regs = driver.funcGetAttribute(driver.CU_FUNC_ATTRIBUTE_NUM_REGS, fn.ptr)
                raise LaunchError(f"kernel '{self.name}' launches {self.block[0]} threads per block "
                                  f"but, at {regs} registers per thread, at most {fits} fit on this GPU")
        return fn

    def _checking(self, launch):
        def checked(args) -> None:
            launch(args)
            self.check_asserts()
        return checked

    def check_asserts(self) -> None:
        """Raise `DeviceAssertError` for a device_assert that failed in a launch since the last
        check, and clear the record.  It waits for the GPU: only kernels with asserts pay it."""
        import numpy as np
        from cupy.cuda import runtime

        if self._generic is not None:  # a whole-runs build's generic one: its own module's record
            self._generic.check_asserts()
        address = self._records.get(runtime.getDevice())
        if address is None:
            return
        runtime.deviceSynchronize()
        words = np.zeros(device_assert.RECORD_WORDS, np.uint64)
        runtime.memcpy(words.ctypes.data, address, words.nbytes, runtime.memcpyDeviceToHost)
        error = device_assert.decode(self.assert_sites, words)
        if error is not None:
            runtime.memset(address, 0, words.nbytes)
            raise error

    def __call__(self, args: dict) -> None:
        """Check `args` and launch over the whole grid; NumPy outputs are written back before
        this returns, device arrays are left to the stream."""
        self.call(args)

    def launch(self, args: dict) -> None:
        """The general path: any array kind, each check in turn, errors naming the parameter."""
        from cupy.cuda import runtime

        device = runtime.getDevice()
        bound = self.binder.bind(args, device, _pointer_device)
        grid = self.grid(bound.values)
        if not launches_blocks(self.name, grid):
            return  # an empty grid: nothing to run, nothing to copy
        self.function(device)  # loaded, and its limits checked, before anything is copied
        stream = None
        if bound.torch_device >= 0:
            stream = self.torch_stream(bound.torch_device)
            if not self._torch:  # the next calls like this one take the fast path
                self._torch = True
                if self._fast_paths:
                    from .fastpath import enable_torch

                    for fast in self._fast_paths:
                        enable_torch(fast)
                self._fast_paths = []
        if bound.host:
            self._launch_with_copies(device, grid, bound, stream)
        else:
            args = self.kernel_args(bound)
            self.function_for(device, args)(grid, self.block, args, self.smem, stream)

    def kernel_args(self, bound: Bound) -> list:
        """The launch's C arguments: the bound ones, then any tensor maps."""
        if self.tensor_maps is None:
            return bound.args
        pointers, sizes = [], []
        for slot, dims in self._map_slots:
            a = bound.args[slot]
            pointers.append(int(a.data.ptr) if hasattr(a, "data") and hasattr(a.data, "ptr") else int(a))
            sizes.append(tuple(bound.values[x] if symbolic else x for symbolic, x in dims))
        return list(bound.args) + self.tensor_maps(tuple(pointers), tuple(sizes))

    def _launch_with_copies(self, device: int, grid, bound: Bound, stream) -> None:
        import cupy
        import numpy as np

        stream = stream or cupy.cuda.get_current_stream()
        buffers = []
        for slot, array, written in bound.host:
            dense = np.ascontiguousarray(array)
            mem = cupy.cuda.alloc(dense.nbytes)
            if dense.nbytes:
                mem.copy_from_host_async(dense.ctypes.data, dense.nbytes, stream)
            bound.args[slot] = np.uint64(mem.ptr)
            buffers.append((mem, array, dense, written))
        args = self.kernel_args(bound)
        self.function_for(device, args)(grid, self.block, args, self.smem, stream)
        for mem, array, dense, written in buffers:
            if written and dense.nbytes:
                if dense is array:
                    mem.copy_to_host_async(array.ctypes.data, dense.nbytes, stream)
                else:  # a strided NumPy array: copy back densely, then scatter into it
                    out = np.empty_like(dense)
                    mem.copy_to_host_async(out.ctypes.data, out.nbytes, stream)
                    stream.synchronize()
                    array[...] = out
        stream.synchronize()  # the copies read pageable memory: finish before it can change

    def torch_stream(self, device: int):
        """PyTorch's current stream on `device` as a CuPy stream (one object per raw stream)."""
        ptr = torch_raw_stream()(device)
        s = self._streams.get(ptr)
        if s is None:
            import cupy

            s = self._streams[ptr] = _foreign_stream(cupy, ptr, device)
        return s

    def bound(self, args: dict, device: int):
        """A launch with `args` (param name -> GPU array or number) checked now, once:
        `bound.BoundLaunch`, whose call launches with nothing left to check."""
        from .bound import BoundLaunch

        return BoundLaunch(self, self.binder.bind(args, device, _pointer_device), device, args)

    def by_pointers(self, args: dict, device: int):
        """A relauncher for PyTorch tensors like those of `args` (same dtypes, shapes, device),
        checked once here: each call takes the arguments in parameter order and changes only
        the pointers and scalars (`pointer_launch.PointerLaunch`)."""
        from .pointer_launch import PointerLaunch

        return PointerLaunch(self, self.binder.bind(args, device, _pointer_device), device)


class CArg:
    """One C argument of a generated kernel, as a launch reads it (a `tlc.generated.KernelArg`'s
    fields)."""

    __slots__ = ("name", "kind", "dtype", "c_type")

    def __init__(self, name: str, kind: str, dtype, c_type: str):
        self.name, self.kind, self.dtype, self.c_type = name, kind, dtype, c_type


class GeneratedLaunch:
    """What a launch reads of a `GeneratedKernel` (its name, block, shared memory, grid, C
    arguments, tensor maps, cluster), as the program cache's entry holds it: a launch from the
    cache neither decodes the C source nor imports `tlc.generated`, whose data classes cost a
    new process a millisecond to create.  `whole()` decodes the generated kernel itself."""

    FIELDS = ("name", "threads", "smem_bytes", "grid", "tensor_maps", "persistent", "cluster", "arch", "whole_runs")

    def __init__(self, fields: dict, args: tuple, whole):
        if set(fields) != set(self.FIELDS) or not all(isinstance(a, tuple) and len(a) == 4 for a in args):
            raise ValueError("not the launch of a generated kernel")
        for name in self.FIELDS:
            setattr(self, name, fields[name])
        self.args = tuple(CArg(*a) for a in args)
        self.whole = whole

    @classmethod
    def fields_of(cls, generated) -> tuple:
        """(fields, args) of a `GeneratedKernel`, as the constructor takes them."""
        return ({name: getattr(generated, name) for name in cls.FIELDS},
                tuple((a.name, a.kind, a.dtype, a.c_type) for a in generated.args))


# the CUDA runtime's numbers of the device attributes a load asks for, where CuPy does not name them
_ATTRIBUTES = {"cudaDevAttrMultiProcessorCount": 16, "cudaDevAttrMaxSharedMemoryPerBlockOptin": 97}


def device_attribute(device: int, name: str) -> int:
    """One attribute of GPU `device` (`cudaDeviceGetAttribute`): CuPy's `Device.attributes`
    asks the driver for every attribute it knows, 2 ms of a cached first call on the H200."""
    from cupy.cuda import runtime

    return int(runtime.deviceGetAttribute(getattr(runtime, name, _ATTRIBUTES[name]), device))


_raw_stream = None


def torch_raw_stream():
    """PyTorch's current raw stream of a device as an int, without making a Stream object
    (the private accessor where this PyTorch has it: a launch's host cost is budgeted)."""
    global _raw_stream
    if _raw_stream is None:
        import torch

        _raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None) or \
            (lambda d: torch.cuda.current_stream(d).cuda_stream)
    return _raw_stream


def _pointer_device(ptr: int) -> int:
    """The GPU that owns a device pointer (for arrays known only by `__cuda_array_interface__`)."""
    from cupy.cuda import runtime

    return runtime.pointerGetAttributes(ptr).device


class _StreamHandle:
    """A raw stream pointer offered through the CUDA stream protocol (`__cuda_stream__`)."""

    def __init__(self, ptr: int):
        self.ptr = ptr

    def __cuda_stream__(self):
        return (0, self.ptr)


def _foreign_stream(cupy, ptr: int, device: int):
    """A CuPy stream object for another library's stream: `Stream.from_external` where CuPy has
    it (CuPy 14 deprecates `ExternalStream`), else `ExternalStream`."""
    if hasattr(cupy.cuda.Stream, "from_external"):
        return cupy.cuda.Stream.from_external(_StreamHandle(ptr))
    return cupy.cuda.ExternalStream(ptr, device)
