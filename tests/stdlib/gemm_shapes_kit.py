"""Cases for std.gemm's shape kernels (skinny, split-K, grouped) with their NumPy references:
ragged shapes, splits that do not divide K, empty groups.  Shared by the CPU and GPU tests."""
import numpy as np

SHAPE_KERNELS = ["matmul_skinny", "matmul_skinny_splitk", "matmul_splitk", "splitk_reduce", "matmul_grouped",
                 "matmul_grouped_f8_blockscaled"]


def rand(rng, dtype, *shape):
    return rng.standard_normal(shape).astype(np.float32).astype(dtype)


def f32(x):
    return np.asarray(x, np.float32)


def skinny_cases(rng, dtype):
    """(M, N, K, constants) and arrays for matmul_skinny: M below, at and above BM."""
    out = []
    for M, N, K, consts in [(1, 200, 300, {}), (13, 150, 257, {"BK": 64}), (16, 64, 128, {}),
                            (40, 130, 96, {"BM": 32, "BK": 32, "stages": 3}),
                            (100, 70, 200, {"BM": 128, "BK": 64})]:
        out.append((rand(rng, dtype, M, K), rand(rng, dtype, N, K), consts))
    return out


def grouped_case(rng, dtype, sizes, N=200, K=96):
    """A, W, offsets, the reference: groups of `sizes` rows (zeros allowed) sorted by expert."""
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int32)
    A = rand(rng, dtype, int(offsets[-1]), K)
    W = rand(rng, dtype, len(sizes), N, K)
    ref = np.zeros((int(offsets[-1]), N), np.float32)
    for e in range(len(sizes)):
        ref[offsets[e]:offsets[e + 1]] = f32(A[offsets[e]:offsets[e + 1]]) @ f32(W[e]).T
    return A, W, offsets, ref


def grouped_f8_case(rng, sizes, N=200, K=300):
    """A, W (e4m3), offsets, SA, SB, the reference of matmul_grouped_f8_blockscaled: groups of
    `sizes` rows sorted by expert; each 128-wide K block's product in f64, times its scales."""
    import ml_dtypes

    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int32)
    E, M, KB, NB = len(sizes), int(offsets[-1]), -(-K // 128), -(-N // 128)
    A = rng.standard_normal((M, K)).astype(np.float32).astype(ml_dtypes.float8_e4m3fn)
    W = rng.standard_normal((E, N, K)).astype(np.float32).astype(ml_dtypes.float8_e4m3fn)
    SA = rng.uniform(0.25, 4, (M, KB)).astype(np.float32)
    SB = rng.uniform(0.25, 4, (E, NB, KB)).astype(np.float32)
    ref = np.zeros((M, N))
    for e in range(E):
        rows = slice(offsets[e], offsets[e + 1])
        for kb in range(KB):
            ks = slice(kb * 128, (kb + 1) * 128)
            part = A[rows, ks].astype(np.float64) @ W[e, :, ks].astype(np.float64).T
            ref[rows] += part * SA[rows, kb:kb + 1] * np.repeat(SB[e, :, kb], 128)[:N][None, :]
    return A, W, offsets, SA, SB, ref


# empty groups first, in the middle and last; a group of one row; groups across tile edges
GROUP_SIZES = [[0, 70, 130, 0, 5, 256, 0], [1], [64, 64], [0, 0, 3]]


def splitk(mod, split_kernel, A, B, S, out_dtype, **consts):
    """The two launches of a split-K: the parts into a workspace of S parts, then their sum."""
    M = A.shape[0]
    N = B.shape[0] if split_kernel == "matmul_skinny_splitk" else B.shape[1]
    P = np.full((S, M, N), np.nan, np.float32)
    getattr(mod, split_kernel)(A, B, P, **consts)
    C = np.full((M, N), np.nan, out_dtype)
    mod.splitk_reduce(P, C)
    return C
