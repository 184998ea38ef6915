"""Packed low-bit weight tiles (schedule/packed_tiles.py, #18): a pipelined loop's copies of words
whose bit fields the loop unpacks are marked `packed` in the tile IR, std.gemm's w4a16 weight
tiles and nothing else; codegen/copies.py's ROUND_STEPS (off until the GPU times it) steps the
rounds of those copies alone, so that turning it on leaves every other kernel's CUDA as it is (on
every tile it added spills: sm_80 matmul_epilogue, sm_90a cummax_axis0)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from tlc import package_data
from tlc.codegen import copies
from tlc.interp import run_kernel
from tlc.ir.printer import print_kernel
from tlc.schedule import PASSES, schedule

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "stdlib"))
from w4a16_kit import case, check, scheduled  # noqa: E402


def _marked(text: str) -> list:
    return [line.strip() for line in text.splitlines() if "(packed words)" in line]


@pytest.mark.parametrize("name,copy", [
    ("matmul_w4a16", "copy W4[bx * 64, k * 16]<64, 16> -> Wq"),
    ("matmul_w4a16_gemv", "copy W4[bx * 16, k * 128]<16, 128> -> Wq"),
    ("matmul_w4a16_splitk", "copy W4[bx * 64, (bz * steps + k) * 16]<64, 16> -> Wq"),
    ("matmul_w4a16_prefill", "copy W4[bx * 128, k * 8]<128, 8> -> Wq")])
def test_the_w4a16_weight_tile_is_marked_and_nothing_else(name, copy):
    # (the scales' and zero points' tiles are read whole: T(Zs[i, g]), no packed words)
    assert _marked(print_kernel(scheduled(name, {}, "sm_80"))) == [copy + " (packed words)"]


@pytest.mark.parametrize("name,arch", [("matmul_w8a16", "sm_80"), ("matmul_i8", "sm_80"), ("matmul_skinny_i8", "sm_80"),
                                       ("matmul", "sm_80")])
def test_integer_tiles_read_whole_are_not_packed(name, arch):
    assert _marked(print_kernel(scheduled(name, {}, arch))) == []


TILES = """\
@kernel
def unpack(W: u32[N, 32], O: f32[N, 8]):
    with grid(cdiv(N, 64), threads=64) as (bx,):
        w = shared(u32[64, 32])
        acc = fragment(f32[64, 8])
        clear(acc)
        for k in pipelined(4, stages=2):
            copy(W[bx * 64, 0], w)
            for i, j in parallel(64, 8):
                word = w[i, j]
                acc[i, j] += f32(SHIFT)
        copy(acc, O[bx * 64, 0])
"""


@pytest.mark.parametrize("shift,packed", [("(word >> u32(4 * (j % 8))) & u32(15)", True),
                                          ("(w[i, j + 8] >> u32(28))", True),
                                          ("word & u32(15)", False), ("(word << u32(4)) & u32(255)", False),
                                          ("u32(j) >> u32(1)", False)])
def test_a_tile_is_packed_where_the_loop_shifts_its_words_right(shift, packed):
    from tlc.api import compile_source

    k = compile_source(TILES.replace("SHIFT", shift)).unpack.scheduled({}, "sm_80")
    assert _marked(print_kernel(k)) == (["copy W[bx * 64, 0]<64, 32> -> w (packed words)"] if packed else [])


def test_the_pass_runs_after_the_copy_annotations_before_the_launch_bounds():
    at = PASSES.index("mark_packed_copies")
    assert PASSES[at - 1:at + 2] == ("group_atomics", "mark_packed_copies", "choose_blocks_per_sm")


def test_the_marked_gemv_on_the_interpreter_matches_numpy():
    k = scheduled("matmul_w4a16_gemv", {}, "sm_80")
    assert _marked(print_kernel(k))
    A, W4, scales, zeros, C, ref, tol, _ = case(np.random.default_rng(27), 1, 40, 1100)
    run_kernel(k, {"A": A, "W4": W4, "scales": scales, "zeros": zeros, "C": C})
    check("matmul_w4a16_gemv 1x40x1100", C, ref, tol)


def _std_source(module: str, name: str, arch: str, consts: dict | None = None) -> str:
    from tlc.codegen import generate
    from tlc.driver import check_file

    r = check_file(str(package_data.stdlib().joinpath(module)))
    return generate(schedule(r.program, name, consts or {}, target=arch), arch, sources=r.sources).source


@pytest.mark.parametrize("module,name,arch", [("gemm.tl", "matmul_epilogue", "sm_80"),
                                              ("reduce.tl", "cummax_axis0", "sm_90a")])
def test_round_steps_leaves_kernels_without_packed_weights_as_they_are(module, name, arch, monkeypatch):
    # the kernels where ROUND_STEPS on every tile added spills (scripts/options-flip, nvcc 13.0:
    # sm_80 matmul_epilogue 424 -> 432 bytes, sm_90a cummax_axis0 0 -> 16)
    off = _std_source(module, name, arch)
    monkeypatch.setattr(copies, "ROUND_STEPS", True)
    assert _std_source(module, name, arch) == off


def test_round_steps_steps_the_weight_copies_alone(monkeypatch):
    off = _std_source("gemm.tl", "matmul_w4a16", "sm_80")
    monkeypatch.setattr(copies, "ROUND_STEPS", True)
    on = _std_source("gemm.tl", "matmul_w4a16", "sm_80")
    changed = [(a, b) for a, b in zip(off.splitlines(), on.splitlines()) if a != b]
    assert len(off.splitlines()) == len(on.splitlines()) and len(changed) == 2  # the prologue's and the loop's
    assert all("tl::copy_g2s<unsigned int, 64, 16, 128, 0, 0, true>((Wq + " in a and
               "tl::copy_g2s<unsigned int, 64, 16, 128, 0, 0, true, true>((Wq + " in b for a, b in changed)


@pytest.mark.slow
@pytest.mark.nvcc
@pytest.mark.parametrize("rule", [{"BM": 8, "BK": 256, "stages": 3}, {"BM": 32, "BK": 256, "stages": 3}])
def test_the_w4a16_kernel_builds_without_spills_with_round_steps_on_sm_80(rule, monkeypatch, tmp_path):
    """config.json's rules 0 and 2: with every tile of the kernel stepped, ptxas (nvcc 13.0) took
    96 registers and 40 bytes of spills at rule 2 (8 at rule 0); the weights alone, 105 and none."""
    sys.path.insert(0, str(ROOT / "tests" / "codegen"))
    from nvcc import cubin_sass

    monkeypatch.setattr(copies, "ROUND_STEPS", True)
    src = _std_source("gemm.tl", "matmul_w4a16", "sm_80", rule)
    assert "true, true>((Wq + " in src
    _, log = cubin_sass(src, "sm_80", tmp_path)
    assert "0 bytes spill stores" in log
