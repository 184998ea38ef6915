"""Barriers the scheduler inserts for copies, gemms and parallel loops on shared memory."""
from tlc import ir
from kit import GEMM, scheduled


def kinds(stmts):
    return [type(s).__name__ for s in stmts]


def test_gemm_loop_syncs_after_the_copies_and_before_the_next_iteration():
    k = scheduled(GEMM, "matmul")
    loop = next(s for s in k.body if isinstance(s, ir.For))
    assert kinds(loop.body) == ["Copy", "Copy", "Sync", "Gemm", "Sync"]


def test_parallel_reading_what_a_copy_wrote_waits():
    k = scheduled("""
@kernel
def t(X: f32[N], Y: f32[N]):
    with grid(cdiv(N, 256), threads=128) as bx:
        s = shared(f32[256])
        copy(X[bx * 256], s)
        for i in parallel(256):
            Y[bx * 256 + i] = s[255 - i]
""", "t")
    assert kinds(k.body) == ["Copy", "Sync", "Parallel"]


def test_no_sync_without_shared_memory():
    k = scheduled("""
@kernel
def t(X: f32[N], Y: f32[N]):
    with grid(cdiv(N, 256), threads=128) as bx:
        f = fragment(f32[256])
        copy(X[bx * 256], f)
        copy(f, Y[bx * 256])
""", "t")
    assert kinds(k.body) == ["Copy", "Copy"]


def test_user_sync_is_kept_and_not_doubled():
    k = scheduled("""
@kernel
def t(X: f32[N], Y: f32[N]):
    with grid(cdiv(N, 256), threads=128) as bx:
        s = shared(f32[256])
        copy(X[bx * 256], s)
        sync()
        copy(s, Y[bx * 256])
""", "t")
    assert kinds(k.body) == ["Copy", "Sync", "Copy"]


# `b` takes `a`'s bytes once `a` is dead (the plan's reuse): its copy must wait for the last
# reads of `a` (tests/gpu/test_shared_reuse_gpu.py runs it)
REUSED_BYTES = """
@kernel
def t(X: u16[M, N], Y: u8[M, N], out: f32[M, N]):
    with grid(cdiv(N, 64), cdiv(M, 8), threads=256) as (bx, by):
        a = shared(u16[8, 64])
        fa = fragment(f32[8, 64])
        b = shared(u8[8, 64])
        fb = fragment(f32[8, 64])
        copy(X[by * 8, bx * 64], a)
        copy(a, fa)
        copy(Y[by * 8, bx * 64], b)
        copy(b, fb)
        for i, j in parallel(8, 64):
            fa[i, j] = fa[i, j] + fb[i, j]
        copy(fa, out[by * 8, bx * 64])
"""


def test_a_buffer_reusing_the_bytes_of_a_dead_one_waits_for_its_last_reads():
    # fuzz diff seed 5078 on the H200: `b` takes `a`'s bytes once `a` is dead, and without a
    # barrier a fast warp's copy into `b` overwrote `a` while a slow warp still read it
    k = scheduled(REUSED_BYTES, "t")
    offsets = {b.name: b.smem_offset for b in k.buffers if b.scope == "shared"}
    assert offsets["a"] == offsets["b"]  # the reuse that needs the barrier
    # the last copy is folded into the loop (fold_stores.py)
    assert kinds(k.body) == ["Copy", "Sync", "Copy", "Sync", "Copy", "Sync", "Copy", "Parallel"]
    assert kinds(k.body[-1].stores) == ["Copy"]
