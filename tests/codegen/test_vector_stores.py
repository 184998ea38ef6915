"""A fragment copied to global memory in a 4- or 8-byte dtype (f32, i32, f64) is stored as 16-byte
vectors: as written before, nvcc split the union store of a run into scalar stores (48
st.global.f32 and no vector store for an [8, 256] f32 tile), now written as st.global.v4.b32
(tl::store_global_vector).  So is a 16-bit fragment of at most 16 registers a thread that holds
the stored dtype (its plain store became st.global.v2.u16: std.data's tril and permute)."""
import re

import pytest

from tlc.api import compile_source
from nvcc import ARCH_FLAGS, nvcc

SOURCE = """\
@kernel
def scale(X: T[M, N], Y: T[M, N], T: dtype = f32):
    with grid(cdiv(N, 256), cdiv(M, 8), threads=128) as (bx, by):
        t = fragment(T[8, 256])
        copy(X[by * 8, bx * 256], t)
        for i, j in parallel(8, 256):
            t[i, j] = t[i, j] * T(2.0)
        copy(t, Y[by * 8, bx * 256])
"""


@pytest.mark.nvcc
# f32 by default; f64 (two elements a vector) and i32 in the slow run
@pytest.mark.parametrize("dtype", ["f32", "f16", pytest.param("f64", marks=pytest.mark.slow),
                                   pytest.param("i32", marks=pytest.mark.slow)])
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_whole_runs_are_stored_as_16_byte_vectors(dtype, arch, tmp_path):
    mod = compile_source(SOURCE, target="cpu", path="scale.tl")
    (tmp_path / "k.cu").write_text(mod.scale.cuda_source(arch, T=dtype))
    res = nvcc([*ARCH_FLAGS[arch], "-ptx", "k.cu", "-o", "k.ptx"], tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    ptx = (tmp_path / "k.ptx").read_text()
    assert re.search(r"st\.global\.v4\.(b32|u32)", ptx), "whole runs are not stored as 16-byte vectors"
    assert not re.search(r"st\.global\.v2\.u16", ptx), "a 16-bit run split into 4-byte stores"
