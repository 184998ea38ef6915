"""u32 reductions accumulate unsigned.  In an int accumulator (as every integer of 32 bits
or fewer had) values past 2^31 - 1 were negative: reduce_max of a row holding 4294967289
gave 0 on the GPU and reduce_min gave 4294967288 where the interpreter gave 0 (the
differential fuzz run on the H200, seeds 2956 and 2821)."""
import numpy as np
import pytest

from kit_codegen import generated_source
from nvcc import compile_device
from tlc import compile_source

SOURCE = """
@kernel
def k(x: u32[M, N], hi: u32[M], lo: u32[M], total: u32[M], BM: const = 4, BN: const = 64):
    with grid(cdiv(M, BM), threads=32) as bx:
        t = fragment(u32[BM, BN])
        r = fragment(u32[BM])
        copy(x[bx * BM, 0], t)
        reduce_max(t, r, dim=1)
        copy(r, hi[bx * BM])
        reduce_min(t, r, dim=1)
        copy(r, lo[bx * BM])
        reduce_sum(t, r, dim=1)
        copy(r, total[bx * BM])
"""
M, N = 6, 64  # a second, partial block of rows


def inputs():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 2**32, (M, N), dtype=np.uint64).astype(np.uint32)
    x[0, :] = 5
    x[0, 7] = 2**32 - 7  # the largest, past 2^31 - 1
    x[1, :] = 2**32 - 8  # all past 2^31 - 1; the smallest is one of them
    x[1, 3] = 2**31 + 1
    return x


def expected(x):
    return x.max(axis=1), x.min(axis=1), x.sum(axis=1, dtype=np.uint64).astype(np.uint32)


def run(mod):
    x = inputs()
    outs = [np.zeros(M, np.uint32) for _ in range(3)]
    mod.k(x, *outs)
    return [o.get() if hasattr(o, "get") else o for o in outs]


def test_the_interpreter_reduces_u32_unsigned():
    got = run(compile_source(SOURCE, target="cpu", path="u.tl"))
    for g, w in zip(got, expected(inputs())):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_u32_reductions_accumulate_unsigned_in_the_c(arch, tmp_path):
    src = generated_source(SOURCE, "k", arch).source
    assert "tl::reduce_slots<tl::Op::max" in src and "unsigned tl_part" in src
    compile_device(src, arch, tmp_path)


@pytest.mark.gpu
def test_u32_reductions_on_the_gpu():
    got = run(compile_source(SOURCE, target="cuda", path="u.tl"))
    for g, w in zip(got, expected(inputs())):
        np.testing.assert_array_equal(g, w)
