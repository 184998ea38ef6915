"""std.gemm's precision kernels (tf32, f8, block-scaled f8, i8): random ragged inputs, NumPy
references computed the way each kernel is specified, and the SASS of a compiled kernel.

Shared by the interpreter tests (tests/stdlib) and the GPU tests (tests/gpu)."""
import re
import sys
from pathlib import Path

import ml_dtypes
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "codegen"))  # the nvcc helpers
from nvcc import cubin_sass  # noqa: E402

E4M3, E5M2, BF16 = ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, ml_dtypes.bfloat16
PRECISION_KERNELS = ["matmul_tf32", "matmul_f8", "matmul_f8_blockscaled", "matmul_i8", "matmul_i8_scaled",
                     "matmul_f8_rowwise"]
# the decode (skinny, C.T = W @ A.T) kernel of each: the same arguments and reference
SKINNY = {"matmul_tf32": "matmul_skinny_tf32", "matmul_f8": "matmul_skinny_f8",
          "matmul_f8_blockscaled": "matmul_skinny_f8_blockscaled", "matmul_i8": "matmul_skinny_i8",
          "matmul_i8_scaled": "matmul_skinny_i8_scaled", "matmul_f8_rowwise": "matmul_skinny_f8_rowwise"}


def tf32(x):
    """f32 truncated to tf32, as the tensor cores read it (the low 13 mantissa bits dropped)."""
    return (np.ascontiguousarray(x, np.float32).view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)


def f8(rng, shape, dtype, scale=1.0):
    """Normal values / scale, rounded to an f8 format (scale keeps them in its range)."""
    return (rng.standard_normal(shape) / scale).astype(np.float32).astype(dtype)


def blockscaled_reference(A, B, SA, SB):
    """sum over K blocks kb of (A[:, kb] @ B[:, kb].T) * SA[:, kb] * SB[n // 128, kb], in f64."""
    M, K = A.shape
    N = B.shape[0]
    out = np.zeros((M, N))
    for kb in range(-(-K // 128)):
        ks = slice(kb * 128, (kb + 1) * 128)
        part = A[:, ks].astype(np.float64) @ B[:, ks].astype(np.float64).T
        out += part * SA[:, kb:kb + 1] * np.repeat(SB[:, kb], 128)[:N][None, :]
    return out


def cases(rng, M=130, N=270, K=300):
    """(kernel, args, constants, reference, tolerance) for every precision kernel; the shapes
    are ragged (no multiple of any tile) unless given.  Tolerances are relative (Frobenius):
    i8 is exact; tf32 is compared with tf32-truncated operands, f8 with the f8 values, so
    what remains is summation order and precision (Hopper's f8 tensor cores add products
    with about 14 bits inside each instruction) and the rounding of the output."""
    out = []
    A, B = rng.standard_normal((M, K)).astype(np.float32), rng.standard_normal((N, K)).astype(np.float32)
    ref = tf32(A).astype(np.float64) @ tf32(B).astype(np.float64).T
    out.append(("matmul_tf32", [A, B, np.full((M, N), np.nan, np.float32)], {}, ref, 1e-4))
    for ta, tb, tc in ((E4M3, E4M3, BF16), (E4M3, E5M2, np.float32), (E5M2, E4M3, np.float16)):
        A8, B8 = f8(rng, (M, K), ta), f8(rng, (N, K), tb)
        ref = 0.5 * 3.0 * (A8.astype(np.float64) @ B8.astype(np.float64).T)
        tol = {BF16: 1e-2, np.float16: 2e-3, np.float32: 1e-3}[tc]
        out.append(("matmul_f8", [A8, B8, np.full((M, N), np.nan, tc), 0.5, 3.0], {}, ref, tol))
    KB, NB = -(-K // 128), -(-N // 128)
    A8, B8 = f8(rng, (M, K), E4M3), f8(rng, (N, K), E4M3)
    SA = rng.uniform(0.25, 4, (M, KB)).astype(np.float32)
    SB = rng.uniform(0.25, 4, (NB, KB)).astype(np.float32)
    ref = blockscaled_reference(A8, B8, SA, SB)
    out.append(("matmul_f8_blockscaled", [A8, B8, np.full((M, N), np.nan, BF16), SA, SB], {}, ref, 1e-2))
    out.append(("matmul_f8_blockscaled", [A8, B8, np.full((M, N), np.nan, np.float32), SA, SB], {}, ref, 1e-3))
    Ai, Bi = rng.integers(-128, 128, (M, K), dtype=np.int8), rng.integers(-128, 128, (N, K), dtype=np.int8)
    ref = Ai.astype(np.int64) @ Bi.astype(np.int64).T
    out.append(("matmul_i8", [Ai, Bi, np.full((M, N), -7, np.int32)], {}, ref, 0.0))
    # W8A8 and f8 row-wise: a scale per row of A (token) and per row of B (output channel)
    # (i8: scales near 1/127, as quantize_per_token's of values near 1, keep the result in f16's range)
    sa, sb = (rng.uniform(0.5, 2, M) / 127).astype(np.float32), (rng.uniform(0.5, 2, N) / 127).astype(np.float32)
    scaled = ref * sa[:, None].astype(np.float64) * sb[None, :].astype(np.float64)
    for tc, tol in ((BF16, 1e-2), (np.float16, 2e-3)):
        out.append(("matmul_i8_scaled", [Ai, Bi, np.full((M, N), np.nan, tc), sa, sb], {}, scaled, tol))
    sa, sb = rng.uniform(0.25, 4, M).astype(np.float32), rng.uniform(0.25, 4, N).astype(np.float32)
    for ta, tb, tc in ((E4M3, E4M3, BF16), (E5M2, E4M3, np.float32)):
        A8, B8 = f8(rng, (M, K), ta), f8(rng, (N, K), tb)
        ref8 = (A8.astype(np.float64) @ B8.astype(np.float64).T) * sa[:, None] * sb[None, :]
        tol = {BF16: 1e-2, np.float32: 1e-3}[tc]
        out.append(("matmul_f8_rowwise", [A8, B8, np.full((M, N), np.nan, tc), sa, sb], {}, ref8, tol))
    return out


def check(name, out, ref, tol):
    """The output against the reference: equal for i8, else within `tol` (relative)."""
    if tol == 0.0:
        assert np.array_equal(out.astype(np.int64), ref), name
        return
    got = np.asarray(out, np.float64)
    assert np.isfinite(got).all(), f"{name}: an output was not written"
    err = float(np.linalg.norm(got - ref) / np.linalg.norm(ref))
    assert err < tol, (name, err)


def sass(source: str, arch: str, tmp_path) -> tuple[dict, str]:
    """Compile `source` to a cubin (warnings as errors); (instruction counts, ptxas log)."""
    text, log = cubin_sass(source, arch, tmp_path)
    counts: dict = {}
    for op in re.findall(r"^\s+/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Za-z0-9_.]*)", text, re.M):
        counts[op] = counts.get(op, 0) + 1
    return counts, log


def count(counts: dict, prefix: str) -> int:
    return sum(v for k, v in counts.items() if k.startswith(prefix))


def check_tensor_cores(name: str, consts: dict, arch: str, instruction: str, n: int, tmp_path):
    """std.gemm's `name` generated for `arch` and compiled: `instruction` is there, n per K step
    (a pipeline may hold the loop body more than once: peeled iterations), and no local memory.
    Dtype constants may be given by name ("f8e5m2")."""
    from tlc.codegen import generate
    from tlc.driver import check_file
    from tlc.dtypes import DTYPES
    from tlc.schedule import schedule
    from stdlib_kit import GEMM_PATH

    consts = {k: DTYPES[v] if isinstance(v, str) else v for k, v in consts.items()}
    r = check_file(GEMM_PATH)
    source = generate(schedule(r.program, name, consts, target=arch), arch, sources=r.sources).source
    counts, log = sass(source, arch, tmp_path)
    got = counts.get(instruction, 0)
    assert got and got % n == 0, {k: v for k, v in counts.items() if "MMA" in k}
    assert count(counts, "LDL") == 0 and count(counts, "STL") == 0, log
    assert "0 bytes spill stores" in log
