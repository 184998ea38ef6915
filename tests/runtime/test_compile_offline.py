"""Compiling without a GPU: nvcc to PTX and cubins (`tlc build --emit ptx|cubin`), its errors,
and the choice of architectures (which reads the GPU's capability but needs no GPU to test)."""

import pytest

from runtime_kit import AXPY_SOURCE, SCALE_BF16_SOURCE
from tlc.diagnostics import TlcError
from tlc.runtime import compile as rc
from tlc.runtime.compile import CudaCompileError, CudaUnavailable, codegen_arch, nvcc_compile, nvrtc_arch


@pytest.mark.nvcc
def test_ptx_for_sm80():
    out = nvcc_compile(AXPY_SOURCE, "sm_80", "ptx", name="axpy")
    text = out.binary.decode()
    assert ".target sm_80" in text and ".entry axpy(" in text


@pytest.mark.nvcc
def test_cubin_for_sm90a_with_the_ptxas_report():
    out = nvcc_compile(SCALE_BF16_SOURCE, "sm_90a", "cubin", name="scale_bf16", ptxas_verbose=True)
    assert out.binary[:4] == b"\x7fELF"
    assert "Compiling entry function 'scale_bf16' for 'sm_90a'" in out.log
    assert "registers" in out.log


@pytest.mark.nvcc
def test_no_flush_to_zero_in_the_ptx():
    # `-ftz=false`: f32 arithmetic keeps denormals, so no instruction carries `.ftz`
    text = nvcc_compile(AXPY_SOURCE, "sm_80", "ptx", name="axpy").binary.decode()
    assert "fma.rn.f32" in text and ".ftz" not in text


@pytest.mark.nvcc
def test_generated_code_that_does_not_compile_is_a_tlc_bug(tmp_path, monkeypatch):
    monkeypatch.setenv("TLC_CACHE_DIR", str(tmp_path))
    bad = AXPY_SOURCE.replace("alpha * x[i]", "alpha * undefined_name")
    with pytest.raises(CudaCompileError) as e:
        nvcc_compile(bad, "sm_80", "cubin", name="axpy")
    message = str(e.value)
    assert message.startswith("internal compiler error: nvcc rejected the CUDA C that tlc generated for "
                              "kernel 'axpy' (sm_80). This is a bug in tlc, not in your program;")
    kept = message.split("generated source: ")[1].split("\n")[0]
    assert f'{kept}(4): error: identifier "undefined_name" is undefined' in message
    assert kept.startswith(str(tmp_path / "failed" / "axpy-")) and kept.endswith(".cu")
    with open(kept) as f:
        assert f.read() == bad


@pytest.mark.nvcc
def test_an_architecture_nvcc_does_not_know():
    with pytest.raises(TlcError, match="does not know the architecture sm_12345"):
        nvcc_compile(AXPY_SOURCE, "sm_12345", "ptx")


def test_emit_must_be_ptx_or_cubin():
    with pytest.raises(TlcError, match="^nvcc emits ptx or cubin, not 'fatbin'$"):
        nvcc_compile(AXPY_SOURCE, "sm_80", "fatbin")


def test_missing_nvcc(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", "")
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setattr(rc, "TOOLKIT_ROOT", tmp_path)  # no cuda or cuda-X.Y there
    with pytest.raises(TlcError) as e:
        nvcc_compile(AXPY_SOURCE, "sm_80", "ptx")
    assert str(e.value).startswith("nvcc, the CUDA compiler, was not found (looked on PATH, in $CUDA_HOME/bin, "
                                   "$CUDA_PATH/bin, /usr/local/cuda/bin and /usr/local/cuda-*/bin)")
    assert "--emit cu" in str(e.value)


def test_nvcc_from_cuda_home(monkeypatch, tmp_path):
    (tmp_path / "bin").mkdir()
    fake = tmp_path / "bin" / "nvcc"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", "")
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    assert rc.find_nvcc() == str(fake)


def test_nvcc_from_the_newest_versioned_toolkit_folder(monkeypatch, tmp_path):
    """With nvcc off PATH and no $CUDA_HOME (a fresh machine's shell), the toolkit's own folder
    is found; /usr/local/cuda-12.10 is newer than /usr/local/cuda-12.9."""
    for version in ("12.9", "12.10", "11.8"):
        (tmp_path / f"cuda-{version}" / "bin").mkdir(parents=True)
        fake = tmp_path / f"cuda-{version}" / "bin" / "nvcc"
        fake.write_text("#!/bin/sh\nexit 0\n")
        fake.chmod(0o755)
    monkeypatch.setenv("PATH", "")
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setattr(rc, "TOOLKIT_ROOT", tmp_path)
    assert rc.find_nvcc() == str(tmp_path / "cuda-12.10" / "bin" / "nvcc")


@pytest.mark.parametrize("capability, arch", [((9, 0), "sm_90a"), ((8, 0), "sm_80"), ((8, 6), "sm_86"),
                                              ((8, 9), "sm_89"), ((10, 0), "sm_89"), ((12, 0), "sm_89")])
def test_codegen_arch(capability, arch):
    """The newest registered target that serves the capability (sm_90a serves 9.0 alone)."""
    assert codegen_arch(capability) == arch


def test_codegen_arch_needs_ampere():
    with pytest.raises(CudaUnavailable, match=r"compute capability 8\.0 or newer; this one is 7\.5"):
        codegen_arch((7, 5))


SUPPORTED = (75, 80, 86, 87, 89, 90, 100, 120)


@pytest.mark.parametrize("kernel_arch, capability, expected", [
    ("sm_90a", (9, 0), "sm_90a"), ("sm_80", (9, 0), "sm_90"), ("sm_80", (8, 6), "sm_86"),
    ("sm_80", (12, 0), "sm_120"), ("sm_80", (12, 1), "compute_120"),  # newer than this NVRTC: PTX
    ("sm_89", (8, 9), "sm_89"), ("sm_89", (9, 0), "sm_90"),
])
def test_nvrtc_arch(kernel_arch, capability, expected):
    assert nvrtc_arch(kernel_arch, capability, SUPPORTED) == expected


def test_hopper_code_runs_only_on_hopper():
    with pytest.raises(TlcError, match="generated for sm_90a runs only on compute capability 9.0, not 10.0"):
        nvrtc_arch("sm_90a", (10, 0), SUPPORTED)


def test_ada_code_runs_from_ada_on():
    with pytest.raises(TlcError, match="generated for sm_89 runs only on compute capability 8.9 or newer, not 8.6"):
        nvrtc_arch("sm_89", (8, 6), SUPPORTED)


def test_no_arch_this_nvrtc_knows():
    with pytest.raises(CudaUnavailable, match=r"cannot compile for compute capability 8\.9 \(it knows 80, 86\)"):
        nvrtc_arch("sm_89", (8, 9), (80, 86))


def test_nvrtc_options_keep_ieee_results():
    options = rc.nvrtc_options("sm_90a")
    assert options[:5] == ("--std=c++17", "-ftz=false", "-prec-div=true", "-prec-sqrt=true", "-arch=sm_90a")
    assert "-ftz=true" not in options and "--use_fast_math" not in options
