"""The shared-memory plan: sizes with stages and padding, reuse where lifetimes allow, the limit."""
from kit import GEMM, schedule_error, scheduled

TWO_PHASES = """
@kernel
def phases(X: f32[N], Y: f32[N]):
    with grid(cdiv(N, 1024), threads=128) as bx:
        a = shared(f32[1024])
        b = shared(f32[1024])
        copy(X[bx * 1024], a)
        copy(a, Y[bx * 1024])
        copy(Y[bx * 1024], b)
        copy(b, X[bx * 1024])
"""


def buf(kernel, name):
    return kernel.buffer(name)


def test_pipelined_buffers_take_one_copy_per_stage():
    k = scheduled(GEMM, "matmul", {"BM": 64, "stages": 3})
    assert buf(k, "As").layout.stages == 3
    assert buf(k, "As").layout.bytes == 3 * 64 * 32 * 2
    assert buf(k, "Bs").layout.bytes == 3 * 32 * 128 * 2
    assert k.smem_bytes == 3 * (64 * 32 + 32 * 128) * 2


def test_buffers_alive_together_do_not_overlap():
    k = scheduled(GEMM, "matmul")
    a, b = buf(k, "As"), buf(k, "Bs")
    ra = range(a.smem_offset, a.smem_offset + a.layout.bytes)
    rb = range(b.smem_offset, b.smem_offset + b.layout.bytes)
    assert not set(ra) & set(rb)


def test_buffers_with_disjoint_lifetimes_share_bytes():
    k = scheduled(TWO_PHASES, "phases")
    assert buf(k, "a").smem_offset == buf(k, "b").smem_offset == 0
    assert k.smem_bytes == 4096


def test_gemm_operands_are_swizzled_and_other_wide_rows_padded():
    k = scheduled(GEMM, "matmul")
    assert buf(k, "Bs").layout.swizzle_bytes == 128  # 128 f16 = 256-byte rows
    assert buf(k, "As").layout.swizzle_bytes == 128  # 32 f16 = 64-byte rows: the same 128-byte pattern
    padded = scheduled("""
@kernel
def t(X: f32[N, N]):
    with grid(1, threads=128) as bx:
        s = shared(f32[32, 32])
        copy(X[0, 0], s)
        for i, j in parallel(32, 32):
            X[j, i] = s[i, j]
""", "t")
    assert buf(padded, "s").layout.pad == 4


def test_over_the_limit_names_the_buffers():
    text = schedule_error(GEMM, "matmul", {"BM": 256, "BN": 256, "BK": 64, "stages": 4}, target="sm_90a")
    assert text == (
        "s.tl:3:5: error[E070]: kernel 'matmul' needs 256 KB of shared memory, more than the 227 KB the target "
        "allows: As (4 stages x 32 KB), Bs (4 stages x 32 KB)\n"
        "  |\n"
        "3 | def matmul(A: T[M, K], B: T[K, N], C: T[M, N],\n"
        "  |     ^^^^^^\n"
        "  = hint: use smaller tiles (BM, BN, BK) or fewer pipeline stages")


def test_a_smaller_target_limit():
    text = schedule_error(GEMM, "matmul", {"stages": 6, "BK": 64}, smem_limit=163 * 1024)
    assert "needs 192 KB" in text and "more than the 163 KB the target allows" in text
