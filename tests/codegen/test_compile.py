"""Every example kernel, generated for sm_80 and sm_90a, compiles with nvcc with warnings as
errors and without local-memory spills for the default configuration of the GEMM."""
import re

import pytest

from tlc.dtypes import BF16
from kit_codegen import example_kernels, generated
from nvcc import BUILD_ARCHS, compile_device, compile_object

KERNELS = example_kernels()


@pytest.mark.parametrize("arch", BUILD_ARCHS)  # sm_80's gemm also builds below, by default
@pytest.mark.parametrize("example,kernel", KERNELS)
def test_example_compiles(example, kernel, arch, tmp_path):
    g = generated(example, kernel, arch)
    compile_object(g.source, arch, tmp_path)


def test_gemm_other_constants_and_bf16(tmp_path):
    g = generated("gemm", "matmul", "sm_80", {"T": BF16, "BM": 64, "BN": 64, "BK": 64, "stages": 4})
    log = compile_device(g.source, "sm_80", tmp_path)
    assert "mma.sync" in g.source or "gemm_mma_sm80" in g.source


SM80_GEMM = dict(BM=128, BN=128, BK=32, stages=4, THREADS=128)  # the best sm_80 configuration measured


@pytest.mark.parametrize("arch,consts,primitive", [("sm_80", SM80_GEMM, "tl::gemm_mma_sm80<half"),
                                                   ("sm_90a", {}, "tl::gemm_wgmma<")])
def test_gemm_uses_tensor_cores_and_does_not_spill(arch, consts, primitive, tmp_path):
    g = generated("gemm", "matmul", arch, consts)
    assert primitive in g.source and "cp_async" in g.source
    log = compile_object(g.source, arch, tmp_path)
    spills = re.findall(r"(\d+) bytes spill stores", log)
    assert spills and all(s == "0" for s in spills), log


def test_fragment_exchange_through_shared_memory_compiles(tmp_path):
    from pathlib import Path

    from tlc.codegen import generate
    from tlc.driver import check_file
    from tlc.schedule import schedule

    path = Path(__file__).resolve().parents[1] / "programs" / "transpose_fragments.tl"
    r = check_file(str(path))
    g = generate(schedule(r.program, "transpose", {}), "sm_80", sources=r.sources)
    assert "exchange b through shared memory" in g.source
    assert g.smem_bytes == 32 * 32 * 4
    compile_device(g.source, "sm_80", tmp_path)


STD_GEMM = ["matmul", "matmul_nt", "matmul_tn", "matmul_epilogue", "matmul_batched"]


@pytest.mark.parametrize("arch", BUILD_ARCHS)
def test_std_gemm_compiles(arch, tmp_path):
    from tlc import package_data

    from tlc.codegen import generate_file
    from tlc.driver import check_file
    from tlc.schedule import schedule

    r = check_file(str(package_data.stdlib().joinpath("gemm.tl")))
    kernels = [schedule(r.program, name, {}, target=arch) for name in STD_GEMM]
    source = generate_file(kernels, arch, sources=r.sources)
    if arch == "sm_90a":
        assert source.count("tl::gemm_wgmma<") == 5  # every kernel, the TN one's A M-major (wgmma's transpose bit)
    compile_object(source, arch, tmp_path)


def test_local_buffer_copies_compile(tmp_path):
    from pathlib import Path

    from tlc.codegen import generate
    from tlc.driver import check_file
    from tlc.schedule import schedule

    r = check_file(str(Path(__file__).resolve().parents[1] / "programs" / "local_tile.tl"))
    g = generate(schedule(r.program, "k", {}), "sm_80", sources=r.sources)
    assert "tl::copy_g2l<float, float, 1, 8>" in g.source and "tl::copy_l2g<float, float, 1, 8>" in g.source
    compile_device(g.source, "sm_80", tmp_path)


def test_a_file_of_several_kernels_includes_fp8_when_any_kernel_needs_it():
    # generate_file keeps the first kernel's includes: an f8 kernel after an f16 one once
    # failed to compile ("__nv_fp8_e4m3 is undefined") in `tlc build` of std.gemm
    from tlc import package_data

    from tlc.codegen import generate_file
    from tlc.driver import check_file
    from tlc.schedule import schedule

    r = check_file(str(package_data.stdlib().joinpath("gemm.tl")))
    kernels = [schedule(r.program, name, {}, target="sm_90a") for name in ("matmul", "matmul_f8")]
    text = generate_file(kernels, "sm_90a", sources=r.sources)
    assert text.index("#include <cuda_fp8.h>") < text.index("__nv_fp8_e4m3* __restrict__ A")
