"""tests/programs/regions.tl (TileLang's regions, single indices on any dimension, rows of
buffers, stages=0) and tests/programs/dims.tl (dimensions that are expressions of shape
symbols) generated for sm_80 and sm_90a and compiled by nvcc with warnings as errors; and what
the generated code does with them: a head of a (batch, seq, heads, dim) tensor moves through
the same vectorized copy primitives as a plain tile, its rows H * D elements apart, and a
dimension K // 2 is computed from K where the code indexes the tensor."""
from __future__ import annotations

import pathlib
import re

import pytest

from nvcc import BUILD_ARCHS, compile_device
from tlc import runner

PROGRAM = pathlib.Path(__file__).resolve().parents[1] / "programs" / "regions.tl"
DIMS = PROGRAM.with_name("dims.tl")


@pytest.mark.nvcc
@pytest.mark.parametrize("arch", BUILD_ARCHS)
@pytest.mark.parametrize("program", [PROGRAM, DIMS], ids=["regions", "dims"])
def test_every_kernel_compiles_with_werror(program, arch, tmp_path):
    compile_device(runner.build(str(program), arch=arch)[0], arch, tmp_path)


def test_an_expression_dimension_is_computed_from_its_symbols():
    text = runner.build(str(DIMS), kernels=["dequant_int4"])[0]
    body = text[text.index("dequant_int4("):]
    # K // 2 of a size (never negative: codegen/ranges.py size_ranges) is C's division, unsigned
    assert "Wq[(static_cast<long long>(r) * (static_cast<int>(static_cast<unsigned int>(K) / static_cast<unsigned int>(2))) + " in body
    assert "< ((-tl::floordiv<int>((-K), 128)))" in body  # cdiv(K, 128) bounds the scales' columns
    assert "int N, int K)" in body  # the kernel takes the symbols, not the expressions


@pytest.mark.parametrize("arch", BUILD_ARCHS)
def test_a_head_is_copied_by_the_tile_primitives_with_its_row_stride(arch):
    text = runner.build(str(PROGRAM), kernels=["bshd_scale"], arch=arch)[0]
    body = text[text.index("bshd_scale("):]
    stride = "(static_cast<long long>(H) * static_cast<long long>(64))"
    load = re.search(r"tl::copy_g2s<half, 64, 64, 128, \d+, \d+, false>\(Qs, \(Q \+ (.*?)\);", body)
    assert load and stride in load.group(1) and "by < H" in load.group(1)
    # O's copy is folded into the loop that computes it (schedule/fold_stores.py): the same view
    out = r"(tl::copy_f2g<tl_bshd_scale_layout_\d+>\(|tl::FragmentStore<tl_bshd_scale_layout_\d+, \w+> tl_store\d+\()"
    assert re.search(out + r"\(O \+ .*" + re.escape(stride), body)
    # R[rows, b, h, :]: the rows are the leading dimension, B * H * D apart
    wide = "(static_cast<long long>(B) * static_cast<long long>(H) * static_cast<long long>(64))"
    assert re.search(out + r"\(R \+ \(static_cast<long long>\(bz\) \* H \+ by\) .*" + re.escape(wide), body)


def test_stages_0_is_a_loop_without_prefetch():
    plain = runner.build(str(PROGRAM), kernels=["matmul"])[0]
    staged = runner.build(str(PROGRAM), kernels=["matmul"], defines=["S=2"])[0]
    assert "cp_async" not in plain[plain.index("matmul("):] and "pipelined over 2 stages" in staged


def test_a_row_of_a_fragment_is_a_parallel_loop():
    ir = runner.build(str(PROGRAM), kernels=["rows"], emit="ir")[0]
    assert "for copy_0 in parallel(64):\n      if k >= 0 and k < 16:\n        lse[k, copy_0] = X[bx * 16 + k, copy_0]" in ir
