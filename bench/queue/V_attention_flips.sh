#!/usr/bin/env bash
# limit: 40
# Helper A, session 28 (#19): the std.attention defaults flipped from session 28's H200 answers,
# which no GPU test has run yet, and the rows that showed each win, again:
#   34defd2 config.json flash_fwd D=64 on sm_90a: BM=192 THREADS=384 BN=96 (q_A_fwd_persistent:
#           1250.5 us = 0.936x cuDNN against 1422.1, 0.823x).  GPU tests: test_flash_fwd_against_numpy
#           cases 5, 11, 12 (D=64 at the default tiles: full; causal and causal GQA, new), f16 and bf16.
#   f65140b config.json flash_bwd D=129..256 on sm_90a: BKV=64 (q_B_bwd_d256: 2.244 ms = 0.549x
#           against 2.885, 0.427x).  GPU tests: test_flash_bwd_against_numpy cases 8, 9 (D=256, new).
#           CPU: the interpreter's gradients at D=256 BKV=64 within 6.3e-4 of NumPy (tol 4e-3).
#   66f230e warpspec.DYNAMIC_TILES on (walk_dyn causal: 1022.0 us = 0.989x against 1073.6 in pairs).
#           GPU tests: test_flash_fwd_as_a_persistent_walk_against_numpy cases 1, 2 (the causal walks).
#   codegen/half_pairs.py CAST_PAIRS on (q_B_bwd_block_mask: flash_bwd D=128 6.701 -> 6.392 ms, causal
#           3.691 -> 3.593). GPU tests: tests/gpu/test_cast_pairs_gpu.py (the pairs' bits against one
#           at a time) and the flash_bwd cases above (every flash_bwd build changed, nothing else).
# Rows (every output checked first by bench/fwd_variants.py / attention_bwd.py):
#   D=64 full and causal: std (now BN=96) beside bn128 (BM=192 BN=128: 1161.3 us = 1.008x full in
#     session 28, but ptxas spills it 4 bytes full, 12 causal; causal never timed).
#   D=128 causal: std (one tile a block) beside walk (bench/A_fwd_walk.tl, now dynamic) and
#     walk_pairs (DYNAMIC_TILES off).
#   D=256 backward: std (now BKV=64) beside bkv128 (the .tl's).
#   D=128 backward (B=4 H=32 S=4096, full): std (now with CAST_PAIRS) beside nopairs.
# Answer: the tests' pass/fail line; per row "<label> <us> <x>x cuDNN".  If a test fails, revert its
# flip.  If bn128 beats std (BN=96) by >= 2% at D=64 both full and causal, make the D=64 rule BN=128
# despite its spill; if walk_pairs ties or beats walk causal, turn DYNAMIC_TILES off again; if
# nopairs ties or beats std at D=128, turn CAST_PAIRS off again.
export PYTHONUNBUFFERED=1
timeout 16 python3 -m pytest -q -x -n 0 -m gpu tests/gpu/test_attention_gpu.py tests/gpu/test_cast_pairs_gpu.py -k \
    "test_flash_fwd_against_numpy and (5- or 11- or 12-) or test_flash_bwd_against_numpy and (8- or 9-) or persistent_walk and (1] or 2]) or pairs_round" 2>&1 | tail -4
timeout 10 python3 - <<'PY' 2>&1
import sys
sys.path.insert(0, "bench")
from fwd_variants import run
bn128 = ("bn128", None, {"BM": 192, "THREADS": 384, "BN": 128})
run(("float16", 4, 32, 32, 4096, 4096, 64, False), [("std", None, {}), bn128], min_ms=25)
run(("float16", 4, 32, 32, 4096, 4096, 64, True), [("std", None, {}), bn128], min_ms=25)
run(("float16", 4, 32, 32, 4096, 4096, 128, True),
    [("std", None, {}), ("walk", "bench/A_fwd_walk.tl", {}),
     ("walk_pairs", "bench/A_fwd_walk.tl", {}, {"tlc.schedule.warpspec.DYNAMIC_TILES": False})], min_ms=25)
PY
timeout 7 python3 bench/attention_bwd.py --shape 2,16,16,2048,256 --min-ms 20 std=std:flash_bwd bkv128=std:flash_bwd:BKV=128 2>&1 | grep -v Warning
timeout 7 python3 bench/attention_bwd.py --min-ms 20 --flags nopairs=half_pairs.CAST_PAIRS=0 std=std:flash_bwd nopairs=std:flash_bwd 2>&1 | grep -v Warning
