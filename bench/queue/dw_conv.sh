# limit: 90
# Issue #18, session 22 (helper 100): std.conv's depthwise_conv2d after 462be46 (BH=4 output
# rows unrolled; load_run_global's whole runs unpredicated, so nvcc hoists every tap's 16-byte
# load and merges the loads of an input row that several output rows' taps read).
# Before (bench/results/helperC-h200-eighteenth-q2.txt): dw3x3_56_256 tlc 5.6 TFLOP/s = 165 us =
# 0.29 of copy, cuDNN 10.3 = 90 us = 0.53 of copy (ratio 0.54); dw3x3_s2_112_96 ratio 0.81.
# On the CPU (nvcc 13.0, sm_90a, the TL_WHOLE_RUNS build): 44 registers and 9 LDG.128 a row
# issued 3 at a time behind a branch a kernel row (BH=2 rolled) -> BH=4: 136 registers, 18
# LDG.128 for 4 rows (3 x 6 input rows), all issued without a branch, 38 SASS instructions an
# output (budget at cuDNN's 90 us: 58); BH=2 110 regs/48 an output; BH=8 162/32; S=2 BH=4: 27
# LDG.128 (was 36).  Questions, every output checked before it is timed:
# (1) correctness on the GPU: the depthwise cases (C=256/96/8 whole runs, 20/70 ragged, P=2
#     borders, stride 2) and shared_runs' tensor-runs cases (rows -1 and M read the zero run);
# (2) the two dw rows against cuDNN, default BH=4 beside BH=2, BH=8 and 64-thread blocks
#     (BC=64: 6 blocks an SM at BH=4): which BH the default should be.
timeout 35 python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/test_conv_gpu.py -k depthwise \
  "tests/codegen/test_shared_runs.py::test_tensor_runs_compute_what_the_interpreter_does" 2>&1 | tail -3
timeout 50 python3 bench/conv.py --only dw3x3_56_256,dw3x3_s2_112_96 --min-ms 3 --variant BH=2 --variant BH=8 \
  --variant BH=4,BC=64,THREADS=64 --variant BH=8,BC=64,THREADS=64 --json "$OUT/dw_conv.json" 2>&1 | tail -12
