#!/usr/bin/env bash
# limit: 16
# Asks (#19): are bench/B_bwd_block_mask.tl's gradients right on the H200 where its block mask
# matters, built as B_bwd_block_mask.sh builds it (CAST_PAIRS, RING_SCALE_D_CLEARS "all"): S and
# SK ragged at both ends, S > SK causal (rows that see no key), GQA, 48 queries a dK/dV step in
# 2 stages (f16: the file's bf16 half left for time), against the f64 gradients (test_attention.py's
# BWD_TOL); and do the paired casts (f16) give the same bits as one at a time (ties, overflow, NaN).
# The interpreter agrees on the CPU (tests/bench/test_bwd_block_mask.py).
# Answer: passed / failed per test; a failure keeps the variant out of std.
export PYTHONUNBUFFERED=1
python3 -m pytest -q -m gpu -p no:cacheprovider -n 6 tests/gpu/test_bwd_block_mask_gpu.py -k "not bf16" \
    tests/gpu/test_cast_pairs_gpu.py 2>&1 | tail -15
