"""bench/w4a16_ring_probe.tl (#18, session 29: matmul_w4a16's TMA ring without the
dequantization) as scheduled for sm_90a, on the interpreter: a dequantizing ring of the rule's
four tiles a stage (or the weight's alone), its sums those bench/w4a16_probe.py --ring checks on the GPU
(ring_reference), at ragged N and K (the last step's boxes past K reading zeros)."""
import sys
from pathlib import Path

import numpy as np
import pytest

from tlc.driver import check_file
from tlc.interp import run_kernel
from tlc.schedule import schedule

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
from w4a16_probe import RING_PROBES, ring_reference  # noqa: E402


@pytest.mark.parametrize("N,K", [(100, 1100), (64, 512)])
@pytest.mark.parametrize("kernel,consts", [p[1:] for p in RING_PROBES], ids=[p[0] for p in RING_PROBES])
def test_the_ring_probe_sums_what_its_reference_says(N, K, kernel, consts):
    program = check_file(str(ROOT / "bench" / "w4a16_ring_probe.tl")).program
    k = schedule(program, kernel, dict(consts), target="sm_90a")
    assert "a dequantizing ring through the TMA" in " ".join(k.notes)
    rng = np.random.default_rng(N + K)
    KG = -(-K // 128)
    A = rng.standard_normal((1, K)).astype(np.float16)
    W4 = rng.integers(0, 2 ** 32, (N, 4 * -(-K // 32)), dtype=np.uint64).astype(np.uint32)
    scales = rng.random((N, KG), dtype=np.float32)
    zeros = rng.integers(0, 16, (N, KG), dtype=np.uint8)
    out = np.full(N, np.nan, np.float32)
    args = {"W4": W4, "out": out} if kernel == "ring_w4_weight" else \
        {"A": A, "W4": W4, "scales": scales, "zeros": zeros, "out": out}
    run_kernel(k, args)
    want = ring_reference(A.astype(np.float64), W4.astype(np.int64), scales.astype(np.float64), zeros, consts["BK"],
                          kernel=kernel)
    assert np.allclose(out, want, rtol=1e-5, atol=1e-2)
