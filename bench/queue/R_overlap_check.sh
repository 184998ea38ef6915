#!/bin/bash
# limit: 40
# Helper R, session 28 (correctness, FINDINGS 36; its cost to #15's launch budget): a tensor the
# kernel writes that shares memory with another argument (k(x, x), overlapping views, a stride-0
# output) is now refused on every target (tlc/runtime/overlap.py); the CuPy/PyTorch fast path
# compares the pairs worked out when it is made (per tensor an end address from the sizes it
# read, per pair two integer compares) and hands an overlap to the general path, which raises.
# CPU (2 cores, load ~4, CuPy stood in, thread CPU time, min of 15 rounds of 50,000 calls, two
# runs): bench/tiny.tl's tiny (3 tensors, 2 pairs) 692 -> 756 and 680 -> 771 ns (+64, +91),
# SIX (6 tensors, 2 written, 9 pairs) 918 -> 1200 and 900 -> 1168 ns (+282, +267).
# (40 s: NVRTC of two tiny kernels and a RawKernel, ~2.5 M launches, the GPU test file.)
# Asks: (1) the GPU test passes (CuPy: the general path, the fast path and a launcher refuse
# k(x, x) with the exact text, separate arrays launch); (2) per launch on the H200, each
# variant's result checked first: with the check vs without (the fast path built with no
# pairs: the launch before this session) and tiny's overhead over a bare RawKernel.
# Answer: "test passed/failed; tiny +X ns (overhead over RawKernel Y us), six +Z ns".  If tiny's
# overhead with the check passes 1 us over RawKernel (session 25: -0.04 us), say so in
# bench/RESULTS.md and make the compares cheaper (e.g. the last accepted addresses and sizes
# kept as one tuple, compared at once) before anything else lands on the fast path.
python3 -m pytest -q -m gpu -p no:cacheprovider tests/runtime/test_overlap.py 2>&1 | tail -3
PYTHONUNBUFFERED=1 python3 bench/overlap_check.py --gpu --reps 20000 2>&1 | tail -4
