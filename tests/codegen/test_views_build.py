"""tests/programs/views.tl (views of tensor parameters, TileLang's T.Tensor(shape, dtype, x.data),
and im2col, TileLang's T.im2col) generated for sm_80 and sm_90a and compiled by nvcc with
warnings as errors, one module each; and what the generated code does with them: a view has no
pointer of its own (its accesses index the parameter; a fragment's copy moves the parameter's
memory in the view's shape), im2col is a gather by the block's threads
whose padding reads 0."""
from __future__ import annotations

import pathlib
import re

import pytest

from nvcc import BUILD_ARCHS, compile_device
from tlc import runner

PROGRAM = pathlib.Path(__file__).resolve().parents[1] / "programs" / "views.tl"
SHAPES = ("KS=3",)  # unfold_fragment's pad (KS - 1) // 2 is a constant: KS is compiled in


@pytest.mark.nvcc
@pytest.mark.parametrize("arch", BUILD_ARCHS)
def test_every_kernel_compiles_with_werror(arch, tmp_path):
    compile_device(runner.build(str(PROGRAM), arch=arch, shapes=SHAPES)[0], arch, tmp_path)


def test_a_view_indexes_its_parameter():
    text = runner.build(str(PROGRAM), kernels=["merged_rows"], shapes=SHAPES)[0]
    code = [line for line in text[text.index("merged_rows("):].splitlines() if not line.lstrip().startswith("//")]
    body = "\n".join(code)
    assert "xf" not in body and "yf" not in body  # no pointer, no name of its own (but in the source's comments)
    assert "x[" in body  # into shared memory: element by element
    # from a fragment: the fragment's copy over y's memory in the view's shape, [B * M, N]
    assert "tl::copy_f2g<tl_merged_rows_layout_0>(y, acc, (N), ((B * M)), (N), (by * 16), (bx * 32));" in body


def test_im2col_is_a_gather_whose_padding_reads_zero():
    ir_text = runner.build(str(PROGRAM), kernels=["unfold"], shapes=SHAPES, emit="ir")[0]
    assert "for im2col_i, im2col_j in parallel(32, 16):" in ir_text
    # each coordinate computed once into a scalar (the bounds test and the address read it), by
    # unsigned division of the non-negative pixel and kernel positions
    assert re.search(r"tile\[im2col_i, im2col_j\] = where\(im2col_m >= 0 and im2col_k >= 0 and im2col_k < 9 \* C, "
                     r"img\[im2col_t_\d+, im2col_h, im2col_w, im2col_t_\d+\], 0.0:f16\)", ir_text)
    assert "let im2col_t_0: u32 = im2col_t // u32(W)" in ir_text
    # cols[n, oh, ow, kh, kw, c] through its [N * OH * OW, K * K * C] view: each view dimension
    # is split into its own group of the parameter's (i32), not merged into one i64 position,
    # each step of the split a scalar
    assert re.search(r"let view_index_\d+: u32 = view_index_\d+ // u32\(C\)\n", ir_text)
    assert re.search(r"cols\[(view_index_\d+, ){5}view_index_\d+\] = tile\[copy_0, copy_1\]", ir_text)
    assert "i64" not in ir_text
    text = runner.build(str(PROGRAM), kernels=["unfold"], shapes=SHAPES)[0]
    assert ": tl::cvt<half>(0.0f)) : tl::cvt<half>(0.0f));" in text  # outside the image, past the kernel: 0
