"""A launch from the program cache in a new process imports no code generator and no scheduling
pass, and decodes neither the IR nor the generated kernel (issue #15, time to first result):
the entry's first line holds the kernel's `LaunchFacts` and what a launch reads of its
`GeneratedKernel`, and the generated kernel and the IR are JSON texts after it, decoded when
something reads `CompiledKernel.generated` or `.kernel`.  On the H200 the imports were 230 of the 274 ms of a cached first
call.  The GPU is stood in for (NVRTC, the device's facts); nothing here launches."""
import json
import subprocess
import sys

import pytest

import tlc
import tlc.runtime
from tlc.runtime import compile as rc, launch
from tlc.runtime.args import LaunchFacts
from tlc.runtime.cache import default_cache, pack, unpack

# what the compiler is made of, which a launch from the cache must not import, and the module of
# the generated kernel's data classes, which it need not decode
COMPILER = ("tlc.codegen", "tlc.schedule", "jinja2", "tlc.generated")

CHILD = r"""
import json, sys
import tlc, tlc.runtime
from tlc.runtime import cache, launch
launch.CompiledKernel._persistent_blocks = lambda self, *kind: 132
compiled = tlc.runtime.read_program_entry(cache.unpack(open(sys.argv[1], "rb").read()))
assert compiled.binder.facts.name == "matmul" and compiled.tensor_maps and compiled.binary == b"cubin of matmul"
print(json.dumps(sorted(m for m in sys.modules if m.startswith(tuple(sys.argv[2:])))))
"""


@pytest.fixture
def gpu(h200):
    """An H200 as far as compile_program_kernel asks, and an NVRTC that returns a stand-in."""
    return h200


def test_a_cached_sm90a_gemm_launches_without_the_compiler_or_its_ir(gpu):
    mod = tlc.load("std.gemm", target="cpu")
    gemm = mod.matmul
    built = []

    def build(arch):
        built.append(arch)
        return gemm.scheduled({}, arch), gemm.generated({}, arch)

    first = tlc.runtime.compile_program_kernel(mod.sources, "matmul", {}, 0, build)
    again = tlc.runtime.compile_program_kernel(mod.sources, "matmul", {}, 0, build)
    assert built == ["sm_90a"] and again.binary == first.binary == b"cubin of matmul"
    # the IR and the generated kernel are not decoded for a launch ...
    assert not isinstance(again._kernel, tlc.ir.Kernel) and isinstance(again._generated, launch.GeneratedLaunch)
    assert again.binder.facts == LaunchFacts.of(first.kernel) and again.generated == first.generated
    assert again.kernel == first.kernel  # ... and are the same when something reads them
    entry, = default_cache().root.glob("p*.bin")
    assert unpack(entry.read_bytes()).startswith(tlc.runtime.PROGRAM_MAGIC)
    done = subprocess.run([sys.executable, "-c", CHILD, str(entry), *COMPILER], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []


@pytest.mark.parametrize("entry", [
    lambda blob: b"tlc-ir-json-1\n" + blob.partition(b"\n")[2],  # the format before: another tlc's
    lambda blob: blob.replace(b"cubin of matmul", b"cubin of matmul!"),  # the parts' sizes no longer add up ...
    lambda blob: blob[:-40],
    lambda blob: blob.replace(b'"threads"', b'"thread"'),  # ... a launch field missing
])
def test_an_entry_of_another_format_or_tampered_with_is_built_again(gpu, entry):
    mod = tlc.load("std.gemm", target="cpu")
    built = []

    def build(arch):
        built.append(arch)
        return mod.matmul.scheduled({}, arch), mod.matmul.generated({}, arch)

    tlc.runtime.compile_program_kernel(mod.sources, "matmul", {}, 0, build)
    path, = default_cache().root.glob("p*.bin")
    path.write_bytes(pack(entry(unpack(path.read_bytes()))))  # a sound checksum: only the reader can refuse it
    again = tlc.runtime.compile_program_kernel(mod.sources, "matmul", {}, 0, build)
    assert built == ["sm_90a", "sm_90a"] and again.binary == b"cubin of matmul"
    assert unpack(path.read_bytes()).startswith(tlc.runtime.PROGRAM_MAGIC)


def test_import_tlc_imports_neither_lark_nor_importlib_metadata():
    """`import tlc` brings neither Lark (imported by the first parse: a module from the
    checked-module cache is never parsed) nor importlib.metadata (the targets' entry points come
    from a memo; the full search imports it), ~30-45 and ~18 ms of a new process here; a parse
    after it works as ever."""
    code = ("import json, sys, tlc\n"
            "before = sorted(m for m in ('lark', 'importlib.metadata', 'jinja2', 'tlc.parser.lark_parser') if m in sys.modules)\n"
            "from tlc.parser import parse\n"
            "parse('def f():\\n    pass\\n')\n"
            "print(json.dumps([before, 'lark' in sys.modules]))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == [[], True]


def test_a_numpy_dtype_is_found_without_ml_dtypes():
    """A CuPy or NumPy array's dtype is found by its name: float16 no longer imports ml_dtypes
    (0.8 s of a first call with CuPy arrays on the 2-core machine); every tlc dtype comes back
    from its NumPy dtype, and another byte order or a dtype tlc has none of is None."""
    code = ("import json, sys, numpy as np\n"
            "from tlc import dtypes\n"
            "found = [str(dtypes.from_numpy(np.dtype(t))) for t in ('f2', 'f4', 'i4', '?', 'u1', '>f2', 'c8')]\n"
            "print(json.dumps([found, 'ml_dtypes' in sys.modules]))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == [["f16", "f32", "i32", "bool", "u8", "None", "None"], False]
    from tlc import dtypes
    for dt in dtypes.DTYPES.values():
        assert dtypes.from_numpy(dtypes.numpy_dtype(dt)) is dt


def test_the_device_is_asked_of_the_runtime_module_import_cupy_has_set(monkeypatch):
    """`import cupy` sets cupy.cuda.runtime (cupy_backends' module): the kernel reads the device
    and the GPU count from it, where `from cupy.cuda.runtime import ...` would import
    cupy/cuda/runtime.py, a module that star-imports it again (0.35 ms of a cached first call on
    the H200).  A CuPy without that submodule stands in: importing it would fail."""
    import types

    from tlc import kernel

    runtime = types.SimpleNamespace(getDevice=lambda: 3, getDeviceCount=lambda: 1)
    cuda = types.ModuleType("cupy.cuda")
    cuda.__path__, cuda.runtime = [], runtime
    cupy = types.ModuleType("cupy")
    cupy.__path__, cupy.cuda = [], cuda
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setitem(sys.modules, "cupy.cuda", cuda)
    monkeypatch.delitem(sys.modules, "cupy.cuda.runtime", raising=False)
    monkeypatch.setattr(kernel, "_get_device", None)
    monkeypatch.setattr(kernel, "_gpu_count", None)
    assert kernel._current_device() == 3 and kernel._single_gpu()
    assert "cupy.cuda.runtime" not in sys.modules


def test_the_fast_path_of_a_kernel_from_the_cache_decodes_neither_its_ir_nor_its_c(gpu, monkeypatch):
    """A kernel's second call makes its fast path (`fastpath.build`), which reads the parameters
    (the `LaunchFacts`') and the generated kernel's grid, C arguments and tensor maps (the
    `GeneratedLaunch`'s): decoding the IR and the generated kernel for it cost the H200 ~15 ms
    (batch q2: a cached process's second call 16.4 ms, its third 0.15)."""
    import types

    from tlc.runtime import fastpath

    mod = tlc.load("std.gemm", target="cpu")
    tlc.runtime.compile_program_kernel(mod.sources, "matmul", {}, 0, lambda arch: (
        mod.matmul.scheduled({}, arch), mod.matmul.generated({}, arch)))
    again = tlc.runtime.compile_program_kernel(mod.sources, "matmul", {}, 0, None)  # from the cache
    cupy = types.ModuleType("cupy")
    cupy.ndarray = type("ndarray", (), {"_c_contiguous": True})
    cupy.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(getDeviceCount=lambda: 1, getDevice=lambda: 0))
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    fast = fastpath.build(again, fallback=lambda args: "general path")
    assert not isinstance(again._kernel, tlc.ir.Kernel) and isinstance(again._generated, launch.GeneratedLaunch)
    assert fast({"A": 1, "B": 2, "C": 3}) == "general path"  # not arrays of either kind
