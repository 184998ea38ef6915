"""codegen/shared_runs.py: a parallel loop's reads of a shared buffer at its column are one vector
load a run, and a copy folded into the loop (schedule/fold_stores.py) stores each run as the loop
finishes it."""
import re

import numpy as np
import pytest

import tlc
from kit_codegen import generated_source, kernel_part
from nvcc import cubin_sass

SOURCE = """
@kernel
def k(X: f16[M, N], W: f16[N], Y: f16[M, N]):
    with grid(M, threads=128) as r:
        ws = shared(f16[1024])
        t = fragment(f32[1, 1024])
        copy(W[0], ws)
        copy(X[r, 0], t)
        for i, j in parallel(1, 1024):
            t[i, j] = t[i, j] * f32(ws[{index}])
        copy(t, Y[r, 0])
"""


def body(index: str = "j", arch: str = "sm_90a") -> str:
    return kernel_part(generated_source(SOURCE.format(index=index), arch=arch, line_directives=False).source)


def test_a_read_at_the_column_is_one_vector_a_run():
    text = body()
    run = re.search(r"half (tl_run\d+)\[tl_k_layout_0::RUN\];", text).group(1)
    assert f"tl::load_run<tl_k_layout_0::RUN>({run}, &ws[tl::smem_index<half, 1, 1024, 0, 0>(0, j)]);" in text
    assert f"(t[tl_r] * tl::cvt<float>({run}[tl_e]))" in text


def test_the_folded_copy_stores_each_run_after_it_is_computed():
    text = body()
    assert "const tl::FragmentStore<tl_k_layout_0, half> tl_store" in text
    loop = text[text.index("for (int tl_r0 = 0;"):]
    assert loop.index("tl::load_run<") < loop.index("for (int tl_e = 0;") < loop.index(".run(t, tl_r0);")
    assert "tl::copy_f2g<" not in text


def test_a_read_elsewhere_than_the_column_stays_an_element_read():
    text = body("1023 - j")
    assert "tl::load_run<" not in text
    assert "ws[tl::smem_index<half, 1, 1024, 0, 0>(0, (1023 - j))]" in text


@pytest.mark.nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_the_runs_are_16_byte_shared_loads(arch, tmp_path):
    source = generated_source(SOURCE.format(index="j"), arch=arch, line_directives=False).source
    sass, log = cubin_sass(source, arch, tmp_path)
    assert "LDS.U16" not in sass and "LDS.128" in sass
    assert "0 bytes spill stores" in log


@pytest.mark.gpu
@pytest.mark.parametrize("n", [1024, 1000, 37])
def test_it_computes_what_the_interpreter_does(n):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((5, n)).astype(np.float16)
    w = rng.standard_normal(n).astype(np.float16)
    outs = []
    for target in ("cpu", "cuda"):
        y = np.full((5, n), np.nan, np.float16)
        tlc.compile_source(SOURCE.format(index="j"), target=target).kernels["k"](x, w, y)
        outs.append(y)
    assert np.array_equal(outs[0], outs[1])
    assert np.array_equal(outs[0], (x.astype(np.float32) * w.astype(np.float32)).astype(np.float16))


SWIZZLED = """
@kernel
def k(X: f16[M, N], Y: f32[M, N]):
    with grid(cdiv(M, 64), threads=128) as bx:
        s = shared(f16[64, {cols}])
        t = fragment(f32[64, {cols}])
        copy(X[bx * 64, 0], s)
        copy(s, t)
        copy(t, Y[bx * 64, 0])
"""


@pytest.mark.parametrize("cols, runs", [(64, True), (36, True), (33, False)])  # runs of 8, 4, 1
def test_a_shared_tile_goes_into_a_fragment_a_run_at_a_time_where_its_runs_are_vectors(cols, runs):
    text = kernel_part(generated_source(SWIZZLED.format(cols=cols), arch="sm_90a", line_directives=False).source)
    call = re.search(r"tl::copy_s2f<[^>]*>", text).group(0)
    assert call.endswith(", true>") is runs
