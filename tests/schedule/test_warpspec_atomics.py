"""A warp-specialized ring whose consumers add into a tensor atomically (each thread its own
elements: no barrier of the whole block), as FlashAttention 3's backward adds each step's dQ
partial; an atomic into a shared buffer keeps the cp.async ring."""
import numpy as np

import tlc
from tlc.driver import check_source
from tlc.schedule import schedule_grids

SRC = """
@kernel
def partials(A: f16[M, K], B: f16[K, N], C: f32[M, N]):
    with grid(cdiv(N, 128), cdiv(M, 128), threads=256) as (bx, by):
        a_s = shared(f16[128, 64])
        b_s = shared(f16[64, 128])
        c = fragment(f32[128, 128])
        {extra}
        for k in pipelined(cdiv(K, 64), num_stages=3):
            copy(A[by * 128, k * 64], a_s)
            copy(B[k * 64, bx * 128], b_s)
            gemm(a_s, b_s, c, clear_accum=True)
            atomic_add({target}, c)
"""


def test_atomic_adds_into_a_tensor_stay_on_the_warp_specialized_ring():
    src = SRC.format(extra="", target="C[by * 128, bx * 128]")
    (k,) = schedule_grids(check_source(src, "t.tl").program, "partials", {}, target="sm_90a")
    assert k.warp_spec is not None
    rng = np.random.default_rng(0)
    a = rng.standard_normal((130, 200)).astype(np.float16)
    b = rng.standard_normal((200, 150)).astype(np.float16)
    c = np.zeros((130, 150), np.float32)
    tlc.compile_source(src, target="cpu", path="t.tl").partials(a, b, c)
    want = a.astype(np.float64) @ b.astype(np.float64)
    assert np.abs(c - want).max() < 1e-4 * np.abs(want).max()


def test_atomic_adds_into_shared_memory_keep_the_cp_async_ring():
    src = SRC.format(extra="s = shared(f32[128, 128])", target="s[0, 0]")
    (k,) = schedule_grids(check_source(src, "t.tl").program, "partials", {}, target="sm_90a")
    assert k.warp_spec is None
