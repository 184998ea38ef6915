"""std.gemm's weight-only kernels: int4 (repack_int4, matmul_w4a16, its split-K,
matmul_w4a16_prefill, matmul_w4a16_gemv): the plain layout of a quantized weight as std.quant.quantize_uint4 writes
it, its repacked layout, the dequantized weight and the cases of the tests, in NumPy; int8 and
f8 with per-channel scales (matmul_w8a16, matmul_w8a16_prefill): w8_case.  Shared by the interpreter tests
(tests/stdlib), the GPU tests (tests/gpu) and scripts/run-all-kernels."""
import ml_dtypes
import numpy as np

W4A16_KERNELS = ["repack_int4", "matmul_w4a16", "matmul_w4a16_prefill", "matmul_w4a16_splitk", "dequantize_w4a16",
                 "matmul_w4a16_gemv"]
W8A16_KERNELS = ["matmul_w8a16", "matmul_w8a16_prefill"]
BF16 = ml_dtypes.bfloat16
TOL = {np.dtype(np.float16): 2e-3, np.dtype(BF16): 1.5e-2}


def plain_int4(rng, N, K, G, ts=np.float32):
    """(q u8[N, cdiv(K, 2)], scales ts[N, cdiv(K, G)], zeros u8[N, cdiv(K, G)], the nibbles
    u8[N, K]): random unsigned nibbles packed two a byte (element 2k low, 2k + 1 high; an odd
    K's last high nibble 0), scales in [0.01, 0.1], zero points in [0, 15]."""
    nib = rng.integers(0, 16, (N, K)).astype(np.uint8)
    q = np.zeros((N, -(-K // 2)), np.uint8)
    q[:] = nib[:, 0::2]
    q[:, :K // 2] |= nib[:, 1::2] << 4
    KG = -(-K // G)
    scales = rng.uniform(0.01, 0.1, (N, KG)).astype(np.float32).astype(ts)
    zeros = rng.integers(0, 16, (N, KG)).astype(np.uint8)
    return q, scales, zeros, nib


def repack(q, K):
    """repack_int4's layout in NumPy: u32[N, 4 * cdiv(K, 32)], word t of each 16-byte block
    holding the nibbles of its bytes t + 4p (p = 0 .. 3): the low one (element 2t + 8p) at bit
    4p, the high one (element 2t + 8p + 1) at bit 16 + 4p."""
    N = q.shape[0]
    blocks = -(-K // 32)
    padded = np.zeros((N, blocks * 16), np.uint32)
    padded[:, :q.shape[1]] = q
    b = padded.reshape(N, blocks, 4, 4)  # [n, block, p, t]: byte 4p + t
    words = np.zeros((N, blocks, 4), np.uint32)
    for p in range(4):
        words |= (b[:, :, p] & 15) << (4 * p) | (b[:, :, p] >> 4) << (16 + 4 * p)
    return words.reshape(N, blocks * 4).astype(np.uint32)


def dequantized(nib, scales, zeros, G, dtype):
    """W[n, k] = (nib - zeros[n, k // G]) * scales[n, k // G] as the kernels hold it: the scale
    rounded to the activations' dtype, the product in f32 rounded to it once (f32 where dtype is
    None: the weight std.quant's dequantization defines)."""
    K = nib.shape[1]
    s = scales if dtype is None else scales.astype(dtype)
    s = np.repeat(s.astype(np.float32), G, 1)[:, :K]
    z = np.repeat(zeros.astype(np.float32), G, 1)[:, :K]
    w = (nib.astype(np.float32) - z) * s
    return w if dtype is None else w.astype(dtype)


def case(rng, M, N, K, G=128, dtype=np.float16, ts=np.float32):
    """(A, W4, scales, zeros, C filled with NaN, the f64 reference, tolerance, the plain q)."""
    q, scales, zeros, nib = plain_int4(rng, N, K, G, ts)
    A = rng.standard_normal((M, K)).astype(np.float32).astype(dtype)
    ref = A.astype(np.float64) @ dequantized(nib, scales, zeros, G, dtype).astype(np.float64).T
    C = np.full((M, N), np.nan, dtype)
    return A, repack(q, K), scales, zeros, C, ref, TOL[np.dtype(dtype)], q


# (M, N, K, G, constants of the decode kernel, of the prefill kernel): M = 1, 17 and a whole
# tile; N a multiple of no tile; K odd (a last half byte), K // G odd, the last group short, the
# last K step partial; groups of 32 and 64 (BK = G); a prefill K step of 64 in groups of 128
# and 256 (two and four steps a group: the groups straddle the tile edges); decode K steps of
# 2 and 4 groups.
SHAPES = [
    (1, 70, 384, 128, {}, {}),
    (17, 100, 300, 128, {}, {}),
    (16, 64, 129, 32, {"BK": 32}, {"BK": 32}),
    (5, 130, 520, 64, {"BK": 64}, {}),
    (64, 96, 1024, 256, {"BM": 64}, {"BM": 64, "BN": 64, "THREADS": 128}),
    (37, 45, 70, 128, {"BN": 128, "THREADS": 256}, {}),
    (3, 100, 256, 128, {"BN": 32, "THREADS": 64}, {}),  # mma.sync on sm_90a too (W's 32 rows)
    # a decode K step of several groups: 4 of 32 (K ragged: the last step's groups partly past
    # K), 2 of 128 (a step of 256)
    (9, 70, 300, 32, {"BK": 128}, {"BK": 32}),
    (16, 64, 640, 128, {"BK": 256}, {}),
]


def check_shape(mod, M, N, K, G, decode, prefill):
    """matmul_w4a16 and matmul_w4a16_prefill at one of SHAPES against NumPy."""
    rng = np.random.default_rng(M * N + K)
    for name, consts in (("matmul_w4a16", decode), ("matmul_w4a16_prefill", prefill)):
        A, W4, scales, zeros, C, ref, tol, _ = case(rng, M, N, K, G)
        getattr(mod, name)(A, W4, scales, zeros, C, G=G, **consts)
        check(name, C, ref, tol)


# matmul_w4a16_gemv's (M, N, K, G, constants): M = 1 and rows of A each their own blocks; N a
# multiple of no BN; K odd (a last half byte), the last K step partial, a K step of several
# groups (16 at BKW = 64, G = 32), a group of several K steps (G = 256, BKW = 16); at the
# defaults, smaller blocks (all threads busy: BN * BKW >= 16 * THREADS) and one thread's 4 sums
# a run alone (BN * BKW < 16 * THREADS: threads without work)
GEMV_SHAPES = [
    (1, 70, 1000, 128, {}),
    (2, 45, 1000, 128, {"BN": 8, "BKW": 64, "THREADS": 32}),
    (1, 33, 129, 32, {"BN": 8, "BKW": 64, "THREADS": 32}),
    (3, 20, 300, 64, {"BN": 4, "BKW": 16, "THREADS": 32}),
    (1, 17, 600, 256, {"BN": 8, "BKW": 16, "THREADS": 32}),
    (1, 40, 2100, 128, {"BKW": 256, "THREADS": 256, "stages": 2, "BLOCKS": 4}),  # bench/lowbit.py's variant
]


def check(name, C, ref, tol):
    got = np.asarray(C, np.float64)
    assert np.isfinite(got).all(), f"{name}: an output was not written"
    err = float(np.linalg.norm(got - ref) / np.linalg.norm(ref))
    assert err < tol, (name, err)


def scheduled(name, consts, arch="sm_90a"):
    """std.gemm's kernel `name` at `consts`, scheduled for `arch`: the tile IR the schedule
    options' tests read, print, run on the interpreter and generate from."""
    from tlc import package_data
    from tlc.driver import check_file
    from tlc.schedule import schedule

    return schedule(check_file(str(package_data.stdlib().joinpath("gemm.tl"))).program, name, consts, target=arch)


def loaded_copy(folder):
    """std.gemm loaded for the GPU from a copy of its text in `folder`: a module whose kernels'
    cache entries are its own, since the program cache's keys do not hold the schedule and
    codegen options a test turns on."""
    import pathlib

    import tlc
    from tlc import package_data

    path = pathlib.Path(folder) / "gemm.tl"
    path.write_text(package_data.stdlib().joinpath("gemm.tl").read_text())
    return tlc.load(str(path), target="cuda")


def splitk(mod, A, W4, scales, zeros, S, **consts):
    """matmul_w4a16_splitk into an f32 workspace of S parts, then splitk_reduce: C (A's dtype)."""
    M, N = A.shape[0], W4.shape[0]
    P = np.full((S, M, N), np.nan, np.float32)
    mod.matmul_w4a16_splitk(A, W4, scales, zeros, P, **consts)
    C = np.full((M, N), np.nan, A.dtype)
    mod.splitk_reduce(P, C)
    return C


W8_TYPES = {"i8": np.int8, "f8e4m3": ml_dtypes.float8_e4m3fn, "f8e5m2": ml_dtypes.float8_e5m2}


def w8_case(rng, M, N, K, q="i8", dtype=np.float16):
    """(A, W, scales, C filled with NaN, the f64 reference, tolerance) of matmul_w8a16: W of
    dtype `q` (i8: all of [-128, 127]; f8: normal values rounded), scales in [0.001, 0.01]."""
    if q == "i8":
        W = rng.integers(-128, 128, (N, K)).astype(np.int8)
    else:
        W = rng.standard_normal((N, K)).astype(np.float32).astype(W8_TYPES[q])
    scales = rng.uniform(0.001, 0.01, N).astype(np.float32)
    A = rng.standard_normal((M, K)).astype(np.float32).astype(dtype)
    ref = (A.astype(np.float64) @ W.astype(np.float64).T) * scales.astype(np.float64)
    return A, W, scales, np.full((M, N), np.nan, dtype), ref, TOL[np.dtype(dtype)]
