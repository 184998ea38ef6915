#!/usr/bin/env bash
# limit: 40
# Helper A, session 29 (#19): does flash_fwd at head dim 64 gain from 128 keys a step (FlashAttention
# 3's 192 x 128 tile) now that it builds without spills?  Session 28's H200 timed BM=192 BN=128
# 1161.3 us = 1.008x cuDNN against the rule's BN=96 1250.5 = 0.936x (f16 full,
# bench/results/q_A_fwd_persistent-h200-twentyeighth.txt), but ptxas spilled it (4 bytes full, 12
# causal) and causal was never timed.  CPU (ptxas -v sm_90a, nvcc 13.0): the spill is P @ V's wait:
# deferred under the softmax, it is waited for before P's copy, so a thread's 64 f32 exponentials
# live beside P's 32 registers and O's 32, which the tensor cores hold, within setmaxnreg's 160.
# schedule/gemm_overlap.py DEFERRED_WAIT (off: "first_use") waits earlier: "after_last_write"
# (before the row sum of the exponentials): 0 spills full f16/bf16, 12 bytes causal;
# "before_last_write" (before the exponentials; the product then runs under the mask and the row
# max only): 0 spills f16/bf16 full and causal, no C75xx.  BN=96 (the rule) builds are unchanged.
# Rows (B=4 H=32 S=4096 D=64; every output checked first by bench/fwd_variants.py):
#   std (the rule, BN=96), bn128 (today's wait, spilling), bn128_aw, bn128_bw (the two waits).
# Answer: per row "<label> <us> <x>x cuDNN".  If bn128_bw (or bn128_aw on full, where it does not
# spill) beats std by >= 2% on f16 full and causal and bf16 does not lose, make the D=64 rule BN=128
# and turn DEFERRED_WAIT to that value, provided A_fwd_wait_d128.sh shows it does not lose at
# D=128 (the switch changes every flash_fwd build); else record and leave both.
export PYTHONUNBUFFERED=1
timeout 22 python3 - <<'PY' 2>&1
import sys
sys.path.insert(0, "bench")
from fwd_variants import run
tile = {"BM": 192, "THREADS": 384, "BN": 128}
wait = lambda rule: {"tlc.schedule.gemm_overlap.DEFERRED_WAIT": rule}  # noqa: E731
aw, bw = ("bn128_aw", None, tile, wait("after_last_write")), ("bn128_bw", None, tile, wait("before_last_write"))
run(("float16", 4, 32, 32, 4096, 4096, 64, False), [("std", None, {}), ("bn128", None, tile), aw, bw], min_ms=20)
run(("float16", 4, 32, 32, 4096, 4096, 64, True), [("std", None, {}), ("bn128", None, tile), bw], min_ms=20)
PY
timeout 16 python3 - <<'PY' 2>&1
import sys
sys.path.insert(0, "bench")
from fwd_variants import run
tile = {"BM": 192, "THREADS": 384, "BN": 128}
wait = lambda rule: {"tlc.schedule.gemm_overlap.DEFERRED_WAIT": rule}  # noqa: E731
aw, bw = ("bn128_aw", None, tile, wait("after_last_write")), ("bn128_bw", None, tile, wait("before_last_write"))
run(("bfloat16", 4, 32, 32, 4096, 4096, 64, False), [("std", None, {}), aw, bw], min_ms=20)
run(("bfloat16", 4, 32, 32, 4096, 4096, 64, True), [("std", None, {}), bw], min_ms=20)
PY
