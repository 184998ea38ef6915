"""The sm_89 target (Ada): sm_80's code, with std.gemm's f8 kernels on the f8 mma.sync
(QMMA in the SASS) instead of converting to f16, and Ada's limits (99 KB of shared memory a
block, 1536 threads an SM).  Every example and the f8 gemms compile for sm_89 with warnings
as errors."""
import re
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tlc.cli import main

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "codegen"))  # the nvcc helpers
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "stdlib"))   # the gemm SASS checks
from kit_codegen import example_kernels, generated  # noqa: E402
from nvcc import compile_device  # noqa: E402
from precision_kit import check_tensor_cores, count, sass  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
# constants that fit Ada's 99 KB where a kernel's defaults (tuned on Hopper) need more
FITS = {("gemm", "matmul"): {"stages": 2}}


@pytest.mark.nvcc
# sm_86 is sm_80's code under smaller limits: its builds are in the slow run
@pytest.mark.parametrize("arch", ["sm_89", pytest.param("sm_86", marks=pytest.mark.slow)])
@pytest.mark.parametrize("example,kernel", example_kernels())
def test_examples_compile(example, kernel, arch, tmp_path):
    """For sm_89, and for sm_86 (sm_80's code under the same 99 KB and 1536 threads an SM)."""
    g = generated(example, kernel, arch, FITS.get((example, kernel)))
    assert g.arch == arch and f"// Target {arch};" in g.source
    compile_device(g.source, arch, tmp_path)


# (kernel, constants, the f8 mma instruction, how many a k-tile takes: 128 x 256 over 2 x 4
# warps, K 128 a tile: 4 x 8 pieces of 16 x 8 per 32 of K, half sm_80's f16 count)
F8_CASES = [
    ("matmul_f8", {"stages": 2}, "QMMA.16832.F32.E4M3.E4M3", 128),
    ("matmul_f8", {"stages": 2, "TA": "f8e5m2", "TB": "f8e4m3"}, "QMMA.16832.F32.E5M2.E4M3", 128),
    ("matmul_f8", {"stages": 2, "TB": "f8e5m2"}, "QMMA.16832.F32.E4M3.E5M2", 128),
    ("matmul_f8_blockscaled", {}, "QMMA.16832.F32.E4M3.E4M3", 64),
]


@pytest.mark.nvcc
@pytest.mark.parametrize("name,consts,instruction,n",  # the first in the default run, all under -m slow
                         [pytest.param(*c, marks=() if i == 0 else pytest.mark.slow) for i, c in enumerate(F8_CASES)])
def test_f8_gemm_takes_the_f8_mma(name, consts, instruction, n, tmp_path):
    check_tensor_cores(name, consts, "sm_89", instruction, n, tmp_path)


@pytest.mark.nvcc
@pytest.mark.parametrize("arch, f8_mma", [pytest.param("sm_80", 0, marks=pytest.mark.slow), ("sm_89", 128)])
def test_only_sm89_has_the_f8_mma(arch, f8_mma, tmp_path):
    """The same kernel for sm_80 converts its f8 operands to f16: HMMA, no QMMA."""
    from tlc.codegen import generate
    from tlc.driver import check_file
    from tlc.schedule import schedule
    from stdlib_kit import GEMM_PATH

    r = check_file(GEMM_PATH)
    source = generate(schedule(r.program, "matmul_f8", {"stages": 2}, target=arch), arch, sources=r.sources).source
    counts, _ = sass(source, arch, tmp_path)
    assert count(counts, "QMMA") == f8_mma and (count(counts, "HMMA") > 0) == (not f8_mma), counts


@pytest.mark.nvcc
@pytest.mark.slow  # about 16 s of nvcc; the f8 mma tests above build sm_89's own path by default
def test_every_std_gemm_kernel_compiles_for_sm89(tmp_path):
    """Each @kernel of std.gemm as a call schedules it for sm_89 (defaults tuned on Hopper
    fitted to 99 KB), in one file, compiled with warnings as errors."""
    import tlc
    from tlc.codegen import generate_file
    from stdlib_kit import GEMM_PATH

    mod = tlc.load(GEMM_PATH, target="cpu")
    kernels = [k.scheduled({}, "sm_89") for k in mod.kernels.values() if k.fn.kind == "kernel"]
    assert len(kernels) >= 17 and all(k.smem_bytes <= 99 * 1024 for k in kernels)
    source = generate_file(kernels, "sm_89", sources=mod.program.sources)
    # the f8 kernels' gemms (B's type, tf32 off, the f8 mma on)
    assert len(re.findall(r"tl::gemm_mma_sm80<__nv_fp8_\w+, .*, __nv_fp8_\w+, false, true>\(", source)) >= 4
    compile_device(source, "sm_89", tmp_path)


@pytest.mark.parametrize("arch, f8_mma", [("sm_80", False), ("sm_89", True), ("sm_90a", False)])
def test_which_targets_take_the_f8_mma(arch, f8_mma):
    """An f8 gemm wgmma cannot take (64 threads: no warpgroup) is mma.sync's on every target:
    on f8 operands where the target says so, through f16 on sm_90a (tlc/targets/sm90a.py)."""
    from tlc.codegen import generate
    from tlc.driver import check_file
    from tlc.schedule import schedule
    from stdlib_kit import GEMM_PATH

    r = check_file(GEMM_PATH)
    consts = dict(BM=64, BN=64, BK=64, stages=2, THREADS=64)
    source = generate(schedule(r.program, "matmul_f8", consts, target=arch), arch, sources=r.sources).source
    assert "tl::gemm_mma_sm80<__nv_fp8_e4m3" in source and "tl::gemm_wgmma<" not in source
    assert ("__nv_fp8_e4m3, false, true>(" in source) == f8_mma


def test_shared_memory_limit_is_adas(tmp_path, monkeypatch):
    """Every constant given: 3 stages of 48 KB fit an A100 and a Hopper, not Ada's 99 KB."""
    monkeypatch.chdir(EXAMPLES.parent)
    given = [x for c in ("BM=128", "BN=256", "BK=64", "stages=3") for x in ("-D", c)]
    r = CliRunner().invoke(main, ["build", "examples/gemm.tl", "--arch", "sm_89", *given, "-o", str(tmp_path / "gemm.cu")])
    assert r.exit_code == 1
    assert r.stderr == (
        "examples/gemm.tl:12:5: error[E070]: kernel 'matmul' needs 144 KB of shared memory, more than the 99 KB the "
        "target allows: Bs (3 stages x 32 KB), As (3 stages x 16 KB)\n"
        "   |\n"
        "12 | def matmul(A: T[M, K], B: T[K, N], C: T[M, N],\n"
        "   |     ^^^^^^\n"
        "  = hint: use smaller tiles (BM, BN, BK) or fewer pipeline stages\n")
    for arch in ("sm_80", "sm_90a"):
        r = CliRunner().invoke(main, ["build", "examples/gemm.tl", "--arch", arch, *given, "-o", str(tmp_path / "g.cu")])
        assert r.exit_code == 0, r.output


def test_launch_bounds_within_adas_threads():
    """A row kernel asking for 8 blocks of 256 threads an SM asks Ada for the 6 it holds."""
    from dataclasses import replace

    from tlc.codegen.occupancy import min_blocks
    from tlc.targets.sm80 import SM80
    from tlc.targets.sm89 import SM89
    from kit_codegen import scheduled_source

    k, _ = scheduled_source("@kernel\ndef k(x: f32[N]):\n    with grid(1, threads=256) as bx:\n        pass\n")
    k = replace(k, min_blocks=8)
    assert min_blocks(k, 256, SM89) == 6 and min_blocks(k, 256, SM80) == 8
