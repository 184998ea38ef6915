"""The CUDA side of the Python API without a GPU: choosing the target, and `cuda_source` /
`generated` wired to the code generator (a stand-in `tlc.codegen` records what it is asked)."""
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import tlc
from runtime_kit import generated_for
from tlc import api
from tlc.diagnostics import DiagnosticError, TlcError
from tlc.runtime import compile as rc

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(rc, "cuda_unavailable_reason", lambda: "CUDA reports: no CUDA-capable device is detected")
    monkeypatch.setattr(api, "_said_cpu_fallback", False)


@pytest.fixture
def gpu(monkeypatch):
    monkeypatch.setattr(rc, "cuda_unavailable_reason", lambda: None)


def test_cuda_without_a_gpu_says_why(no_gpu):
    with pytest.raises(TlcError) as e:
        api.resolve_target("cuda")
    assert str(e.value) == ("no CUDA GPU is available (CUDA reports: no CUDA-capable device is detected); "
                            "use target='cpu'")


def test_auto_without_a_gpu_runs_on_the_interpreter_and_says_so_once(no_gpu, capsys):
    assert api.resolve_target("auto") == "cpu"
    assert api.resolve_target("auto") == "cpu"
    err = capsys.readouterr().err
    assert err == ("tlc: running kernels on the CPU reference interpreter (no CUDA GPU: CUDA reports: "
                   "no CUDA-capable device is detected)\n")


def test_auto_and_cuda_with_a_gpu(gpu, capsys):
    assert api.resolve_target("auto") == "cuda"
    assert api.resolve_target("cuda") == "cuda"
    assert api.resolve_target("cpu") == "cpu"
    assert capsys.readouterr().err == ""
    with pytest.raises(TlcError, match="^unknown target 'gpu'; choose one of auto, cpu, cuda, interp, cpp$"):
        api.resolve_target("gpu")


def test_the_reason_is_real_here():
    reason = rc.cuda_unavailable_reason()
    assert reason is None or isinstance(reason, str) and reason


def test_import_tlc_does_not_import_cupy():
    import subprocess
    code = "import sys, tlc; tlc.load; import tlc.runtime; print('cupy' in sys.modules, 'torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[2])
    assert out.stdout.strip() == "False False", out.stderr


@pytest.fixture
def fake_codegen(monkeypatch):
    """`tlc.codegen` replaced by a stand-in that returns a contract-shaped kernel."""
    calls = []

    def generate(kernel, arch="sm_80", *, line_directives=True, sources=None, source_name=None):
        calls.append((kernel.name, dict(kernel.constants), arch))
        return generated_for(kernel, source=f"// {kernel.name} for {arch} with {dict(kernel.constants)}\n",
                             arch=arch)

    module = types.ModuleType("tlc.codegen")
    module.generate = generate
    monkeypatch.setitem(sys.modules, "tlc.codegen", module)
    return calls


def test_cuda_source_needs_no_gpu(no_gpu, fake_codegen):
    mod = tlc.load(str(EXAMPLES / "vector_add.tl"), target="cpu")
    text = mod.vector_add.cuda_source(BLOCK=256)
    assert text == "// vector_add for sm_80 with {'BLOCK': 256}\n"
    assert mod.vector_add.cuda_source(arch="sm_90a") == "// vector_add for sm_90a with {'BLOCK': 1024}\n"
    mod.vector_add.cuda_source(BLOCK=256)  # generated once per constants and arch
    assert fake_codegen == [("vector_add", {"BLOCK": 256}, "sm_80"), ("vector_add", {"BLOCK": 1024}, "sm_90a")]


def test_generated_follows_the_contract(no_gpu, fake_codegen):
    mod = tlc.load(str(EXAMPLES / "vector_add.tl"), target="cpu")
    gen = mod.vector_add.generated({"BLOCK": 512}, "sm_90a")
    assert [(a.name, a.kind, a.c_type) for a in gen.args] == [
        ("x", "tensor", "float* __restrict__"), ("y", "tensor", "float* __restrict__"),
        ("out", "tensor", "float* __restrict__"), ("alpha", "scalar", "float"), ("N", "shape", "int")]
    assert gen.arch == "sm_90a"


def test_cuda_source_with_a_constant_the_kernel_lacks(no_gpu, fake_codegen):
    mod = tlc.load(str(EXAMPLES / "vector_add.tl"), target="cpu")
    with pytest.raises(DiagnosticError, match="'vector_add' has no constant or dtype parameter 'BM'"):
        mod.vector_add.cuda_source(BM=64)
    assert fake_codegen == []


def test_dtype_parameters_bind_from_any_array_kind(no_gpu):
    mod = tlc.load(str(EXAMPLES / "gemm.tl"), target="cpu")
    from runtime_kit import FakeDeviceArray

    a = FakeDeviceArray((64, 32), np.float32)
    values, constants = mod.matmul.bind((a, FakeDeviceArray((32, 16), np.float32),
                                         FakeDeviceArray((64, 16), np.float32)), {})
    assert str(constants["T"]) == "f32"
    assert values["A"] is a
