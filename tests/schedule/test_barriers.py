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
