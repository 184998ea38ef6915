# limit: 45
# Issue #13, session 23, helper: std.moe's and std.data's changed defaults and kernels, after
# the H200's answers to data_moe_round2.sh, moe_topk_rows.sh and data_layout_rows.sh (raw:
# bench/results/*-h200-twentythird.txt; copy 4290 GB/s).  Every timed output is checked first
# (bench/ops.py's measure against PyTorch's float64 reference; 10 ms a contender).
#   f9ebe4b: topk_softmax / topk_sigmoid take BE = 64, BM = 32 from stdlib/config.json for
#     E <= 64 on sm_90a (the rows no longer pin BM = 8, BE = E): expect ~921 us (was 2122) and
#     ~438 us (was 452).  topk_grouped 64 threads, 8 blocks an SM (expect ~3375 us, was 4381).
#     expert_histogram BLOCK 32768 at 512 threads (expect ~158 us = 0.79, was 186.3 = 0.67).
#   c21aee6: permute / transposes back to the plain block order (as fast: 0.96 / 0.87 / 0.82).
#   std.data.repeat (was 148.4 us = 0.53 of copy in this session's table and in
#     data_layout_rows; the write-only ceiling, torch's zero_ of its 256 MiB in 81.5 us, puts
#     it near 0.78): the code generator computes a range's stop once (7d4a76c) and unswitches a
#     loop whose body is one test it cannot change (repeat's whole-tile test at each copy), and
#     repeat takes 16 elements a thread (128 threads, 4 blocks an SM).  On the CPU (nvcc 13.0
#     sm_90a f16): ~115 SASS instructions a 16-byte store before, an integer division for the
#     inner loop's bound among them; ~28 now (2 STG.128 in ~60, no division in the loop); 70
#     registers, no spills (i64 88; at 16 a thread i64 spilled 48 bytes before).  Variants:
#     T256 = the same code at 8 elements a thread (256 threads: the compiler's share alone),
#     B5 = 5 blocks an SM (sm_90a: no spills; sm_80's 1- and 8-byte types spill there).
# Asks: (1) the GPU tests of the changed kernels and code generation (ragged shapes; the table's
# E <= 64 tile through the routing test's 64 experts; a raised loop stop; unswitched loops);
# (2) the changed rows; (3) repeat now / T256 / B5 in one process.
timeout 13 python3 -m pytest -q -x -n 8 -p no:cacheprovider tests/gpu/test_moe_gpu.py tests/gpu/test_data_gpu.py \
  tests/codegen/test_loop_stop.py tests/codegen/test_unswitch.py \
  -k "topk_softmax-f16 or topk_sigmoid-f32 or topk_grouped-f32 or expert_histogram or routing or repeat-f16 or repeat-i64 or f16-repeat or gpu_a_body or (as_written and cuda)" 2>&1 | tail -4
timeout 17 python3 bench/ops.py --min-ms 10 --no-chart --only topk_softmax,topk_sigmoid,topk_grouped,expert_histogram,repeat \
  --json $OUT/moe_data_defaults.json 2>&1 | tail -9
timeout 12 python3 - <<'PY'
import sys
sys.path.insert(0, "bench")
from row_variants import run

f16 = {"T": "f16"}
run([("repeat", "now", None, {}), ("repeat", "T256", None, {**f16, "THREADS": 256}),
     ("repeat", "B5", None, {**f16, "BLOCKS": 5})])
PY
