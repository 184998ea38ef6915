#!/usr/bin/env bash
# limit: 40
# Asks (#18, helper E; session 28's run of this script died in its first command, 8192^3 with the probes:
# "CUDA error: an illegal instruction was encountered" while the contenders' outputs were checked,
# bench/results/q_E_f8bs-h200-twentyeighth.txt; its other two commands answered and config.json now takes
# BN 256 s3 for std.gemm matmul_f8_blockscaled where M is 4096-6143 and N >= 4096: 0.83-0.91x against
# 0.71-0.79x torch._scaled_mm per tensor):
# 1. (last: the limit may cut it) at 8192^3, the default build (no PREFETCH_RING_LOADS): std (default, BN 128 there) against BN 256 s3,
#    every output checked first.  BN 256 faster by > 2%: the rule's M range goes on to 8192 (with
#    PREFETCH_RING_LOADS the two tied: 0.694x vs 0.686x).
# 2. (first) which probe faults: each in a process of its own (bench/f8bs_probe.py --probes NAME, CUDA_LAUNCH_BLOCKING
#    so the error is raised at the launch that made it), 8192^3; the last line of a faulting process names
#    it.  (The CPU: each probe computes the product on the cpu target against NumPy, tests/bench/test_f8bs_probe.py.)
# Answer: rows 1's TFLOP/s and x per-tensor; then per probe its row or the error.  A probe that faults is a
# compiler bug to chase on the CPU from its name (its SASS, its ring's barriers), not a std change.
export PYTHONUNBUFFERED=1
for p in f8_128 f8_192 bs_const bs_tma bs_wide bs_pf; do
  echo "probe $p:"
  CUDA_LAUNCH_BLOCKING=1 python3 bench/f8bs_probe.py --probes $p --ms 2 --sizes 8192x8192x8192 --configs '{}' 2>&1 \
    | grep -v Warning | grep -E "^  |Error|error" | head -4
done
python3 bench/f8bs_probe.py --no-probes --ms 10 --sizes 8192x8192x8192 \
  --configs '{"std (default)": {}, "std BN=256 s3": {"BN": 256, "stages": 3}}' 2>&1 | grep -v Warning
