"""What a TileLang port brings, generated for sm_80 and sm_90a (tests/programs/porting_builtins.tl):
every kernel compiles with nvcc, warnings as errors; bit casts use CUDA's intrinsics; a store
that reads the thread index runs in every thread, one that does not once per block; a while
loop tests its condition first in each iteration; --emit ir notes the hints it honours or
ignores."""
from pathlib import Path

import pytest

from tlc.codegen import generate, generate_file
from tlc.driver import check_file, check_source
from tlc.ir import print_kernel
from tlc.schedule import schedule
from nvcc import BUILD_ARCHS, compile_device

PROGRAM = Path(__file__).resolve().parents[1] / "programs" / "porting_builtins.tl"
KERNELS = ["bits", "f8_inside", "unpack", "clamps", "device_while", "collatz", "endless", "per_thread", "splitk", "splitk_shared", "bshd_accumulate", "row_extremes", "gemm_keywords", "swizzled_wide_gemm", "k_range_gemm", "reused_index", "swizzled_gemm", "column_order"]


def checked():
    r = check_file(str(PROGRAM))
    assert r.ok, r.diagnostics
    return r


def body(name: str, arch: str = "sm_80") -> str:
    r = checked()
    source = generate(schedule(r.program, name, {}, target=arch), arch, sources=r.sources).source
    return source[source.index("__global__"):]


@pytest.mark.nvcc
@pytest.mark.parametrize("arch", BUILD_ARCHS)
def test_every_kernel_compiles(arch, tmp_path):
    r = checked()
    kernels = [schedule(r.program, name, {}, target=arch) for name in KERNELS]
    compile_device(generate_file(kernels, arch, sources=r.sources), arch, tmp_path)


@pytest.mark.nvcc
@pytest.mark.parametrize("arch", BUILD_ARCHS)
def test_f8_inside_expressions_alone_compiles(arch, tmp_path):
    """Regression: the fp8 header was included only for f8 tensors and buffers, so f32(f8e5m2(x))
    or reinterpret(q, f8e4m3) in a kernel without one failed in nvcc ('__nv_fp8_e4m3' undefined)."""
    r = checked()
    compile_device(generate(schedule(r.program, "f8_inside", {}, target=arch), arch, sources=r.sources).source,
                   arch, tmp_path)


def test_bit_casts_use_cudas_intrinsics():
    text = body("bits")
    for call in ("__float_as_uint(", "__half_as_ushort(", "__bfloat16_as_ushort(", "__double_as_longlong(",
                 "tl::fp8_from_bits<__nv_fp8_e4m3>(", "__ushort_as_bfloat16(", "__uint_as_float("):
        assert call in text, call


def test_the_thread_index_reaches_stores_and_atomics_in_every_thread():
    text = body("per_thread")
    assert "static_cast<int>(threadIdx.x)" in text
    assert "threadIdx.x == 0" not in text  # both the store and the atomic run per thread
    text = body("collatz")
    assert "if (threadIdx.x == 0) if (" in text or "if (threadIdx.x == 0) total[" in text  # once per block


def test_a_while_loop_tests_first_and_continue_tests_again():
    ir_text = print_kernel(schedule(checked().program, "collatz", {}))
    assert "  for while_" in ir_text and "in while(0, 2147483647, 1):\n" in ir_text
    assert "      if not v > 1:\n        break\n" in ir_text


SWIZZLE_OFF = """
@kernel
def k(hits: i32[GY, GX], P: const = 4):
    with grid(GX, GY, threads=32) as (bx, by):
        use_swizzle(P)
        atomic_add(hits[by, bx], 1)
"""


def test_emit_ir_notes_the_hints():
    r = checked()
    text = print_kernel(schedule(r.program, "swizzled_gemm", {}))
    assert "# note: use_swizzle(3, order=\"row\"): block indices (bx, by) remapped in panels" in text
    assert "# note: annotate_layout accepted and ignored: the scheduler chooses every layout" in text
    text = print_kernel(schedule(r.program, "splitk", {}))
    assert ("# note: gemm policy=FullRow accepted and ignored: the scheduler lays out the accumulator's warps, "
            "in the warp tiles closest to square (schedule/layout.py)") in text
    assert "atomic_add C[" in text
    text = print_kernel(schedule(r.program, "gemm_keywords", {}))
    assert "# note: gemm k_pack=1 accepted and ignored" in text and "# note: gemm wg_wait=0 accepted and ignored" in text
    assert "  fill acc = 0.0\n  sync\n  gemm acc += As @ Bs.T\n" in text
    disabled = SWIZZLE_OFF.replace("use_swizzle(P)", "use_swizzle(P, enable=False)")
    r = check_source(disabled, "t.tl")
    text = print_kernel(schedule(r.program, "k", {}))
    assert "# note: use_swizzle(enable=False): the blocks keep the launch's order" in text
    assert "grid (bx, by) in" in text and "swizzle_" not in text


def test_the_swizzle_composes_with_the_persistent_walk_on_sm90a():
    text = print_kernel(schedule(checked().program, "swizzled_wide_gemm", {}, target="sm_90a"))
    assert "persistent: the grid counts tiles" in text
    assert "grid (bx_launched_" in text and "let bx: i32 = " in text


def test_pipelined_from_start_counts_from_zero():
    """The pipeliner prefetches copies as functions of its index from 0; start is read once."""
    text = print_kernel(schedule(checked().program, "k_range_gemm", {}))
    assert "  let k_start_" in text and "in pipelined(0, k1 - k_start_" in text and ", stages=3):" in text
