"""The 512^3 f16 GEMM of LANGUAGE.md section 2 on the interpreter: correct, and its time printed
(`pytest -s` shows it; no timed assertion, machines differ)."""
import time

import numpy as np

from tlc.ir import samples
from tlc.interp import run_kernel


def test_gemm_512_cubed_f16():
    rng = np.random.default_rng(0)
    A = rng.uniform(-1, 1, (512, 512)).astype(np.float16)
    B = rng.uniform(-1, 1, (512, 512)).astype(np.float16)
    C = np.zeros((512, 512), np.float16)
    k = samples.matmul()  # BM=BN=128, BK=32: a 4x4 grid, 16 pipelined iterations per block
    start = time.perf_counter()
    run_kernel(k, dict(A=A, B=B, C=C))
    elapsed = time.perf_counter() - start
    print(f"\ninterpreter: 512^3 f16 gemm (grid 4x4, 16 k-steps) in {elapsed:.3f} s")
    ref = A.astype(np.float32) @ B.astype(np.float32)
    np.testing.assert_allclose(C.astype(np.float32), ref, rtol=2.0**-10, atol=2.0**-8)
