"""bench/w4a16_stream_probe.tl (issue #18's streaming probe of the int4 weight) on the
interpreter: each part's byte sums of each row, read as row-major tiles and as tiles stored one
after another (the timing needs a GPU; the sums do not)."""
from pathlib import Path

import numpy as np
import pytest

import tlc

PROBE = str(Path(__file__).resolve().parents[2] / "bench" / "w4a16_stream_probe.tl")


@pytest.mark.parametrize("tiled,bn,bkw,s", [(0, 16, 16, 2), (1, 16, 16, 2), (1, 32, 8, 1)])
def test_the_probe_sums_the_bytes_of_its_tiles(tiled, bn, bkw, s):
    N, KW = 64, 64
    W = np.random.default_rng(bn + bkw).integers(0, 2 ** 32, (N, KW), dtype=np.uint64).astype(np.uint32)
    byte = (W & 255).astype(np.float64)
    steps = KW // bkw // s
    if tiled:  # tile t = bx * KW / BKW + bz * steps + k at rows t * BN of W's memory as [N * KW / BKW, BKW]
        ref = byte.reshape(N // bn, s, steps, bn, bkw).sum(axis=(2, 4)).transpose(1, 0, 2).reshape(s, N)
        W = W.reshape(N * KW // bkw, bkw)
    else:
        ref = byte.reshape(N, s, KW // s).sum(axis=2).T
    out = np.full((s, N), np.nan, np.float32)
    tlc.load(PROBE, target="cpu").stream_w4(W, out, KW=KW, TILED=tiled, BN=bn, BKW=bkw, stages=2, THREADS=32)
    assert np.array_equal(out, ref)
