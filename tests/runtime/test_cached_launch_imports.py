"""A launch from the program cache in a new process imports no code generator and no scheduling
pass, and decodes no IR (issue #15, time to first result): the entry holds the kernel's
`LaunchFacts` and `GeneratedKernel` as data and its IR as JSON text, decoded when something
reads `CompiledKernel.kernel`.  On the H200 the imports were 230 of the 274 ms of a cached first
call.  The GPU is stood in for (NVRTC, the device's facts); nothing here launches."""
import json
import subprocess
import sys

import pytest

import tlc
import tlc.runtime
from tlc.runtime import compile as rc, ir_codec, launch
from tlc.runtime.args import LaunchFacts
from tlc.runtime.cache import default_cache, unpack

# what the compiler is made of, which a launch from the cache must not import
COMPILER = ("tlc.codegen", "tlc.schedule", "jinja2")

CHILD = r"""
import json, sys
import tlc
from tlc.runtime import cache, ir_codec, launch, tensormap
facts, ir_text, generated, binary, arch = ir_codec.loads(cache.unpack(open(sys.argv[1], "rb").read()))
assert type(facts).__name__ == "LaunchFacts" and generated.tensor_maps and isinstance(ir_text, str)
print(json.dumps(sorted(m for m in sys.modules if m.startswith(tuple(sys.argv[2:])))))
"""


@pytest.fixture
def gpu(monkeypatch, tmp_path):
    """An H200 as far as compile_program_kernel asks, and an NVRTC that returns a stand-in."""
    monkeypatch.setenv("TLC_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(tlc.runtime, "require_cuda", lambda: None)
    monkeypatch.setattr(tlc.runtime, "target_arch", lambda device=None: "sm_90a")
    monkeypatch.setattr(rc, "device_capability", lambda device: (9, 0))
    monkeypatch.setattr(rc, "current_device", lambda: 0)
    monkeypatch.setattr(rc, "nvrtc_supported_archs", lambda: (80, 90))
    monkeypatch.setattr(rc, "nvrtc_version", lambda: (13, 0))
    monkeypatch.setattr(rc, "nvrtc_compile", lambda source, arch, name: b"cubin of " + name.encode())
    monkeypatch.setattr(launch.CompiledKernel, "_persistent_blocks", lambda self: 132)
    return tmp_path


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
    assert not isinstance(again._kernel, tlc.ir.Kernel)  # the IR is not decoded for a launch ...
    assert again.binder.facts == LaunchFacts.of(first.kernel) and again.generated == first.generated
    assert again.kernel == first.kernel  # ... and is the same when something reads it
    entry, = default_cache().root.glob("p*.bin")
    assert unpack(entry.read_bytes()).startswith(ir_codec.MAGIC)
    done = subprocess.run([sys.executable, "-c", CHILD, str(entry), *COMPILER], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []
