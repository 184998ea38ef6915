#!/bin/bash
# limit: 40
# Helper B2, session 27 (#13, no device this session): does fencing std.gemm matmul_epilogue's
# epilogue loads every 32 accumulator registers (schedule/epilogue_fences.py, EPILOGUE_FENCE; off,
# untimed) cost or gain time on the H200?  The default tile (128 x 256, 2 consumer warpgroups at
# 232 registers) spills in its epilogue: ptxas hoists every unrolled iteration's bias and C loads
# above the others, beside the 128 accumulators.  The CPU showed (nvcc 13.0, -Xptxas -v):
#   sm_90a plain 60 B -> 0, TL_TMA_FLAGS=3 96 -> 0, TL_TMA_FLAGS=3 TL_ONE_PART (the runtime's
#   build) 80 -> 0 (NVRTC 13.0 through ctypes with the runtime's options and TL_TMA_FLAGS 3,
#   TL_ONE_PART, TL_WHOLE_RUNS: 80 -> 0), bf16 too; 168 registers at launch either way; sm_80
#   424 B at 255 registers -> 0 at 248 (bf16 432 -> 0).  Without the C read or without the bias
#   no build spills.
#   SASS (cuobjdump): every STL/LDL is after the K loop (none between the HGMMAs / HMMAs), so this
#   is the epilogue's cost only: sm_90a runtime build 11 STL + 9 LDL a thread a tile (one STL
#   before the K loop, K's step count, reloaded after it), sm_80 51 + 51.  Fenced: 0 STL/LDL, LDG
#   397 -> 269 (runtime build), SASS 3,744 -> 3,960 instructions (sm_90a), 8,552 -> 6,184 (sm_80).
# The switch also fences the epilogues of matmul_f8_rowwise, matmul_i8_scaled (and their skinny
# rule3 forms) and matmul_w8a16_prefill (their scales read after the K loop: sm_90a options-flip, 11
# of 1,013 builds changed, none spilling either way); loops inside a K loop are left alone.
# Every output is checked against CuPy's f32 before it is timed (bench/epilogue_fence.py; beta 0:
# bias only, the fused linear layer's case; beta 1: C read too).
# Answer: rows "off ms, fenced ms, ratio".  Set tlc/schedule/epilogue_fences.py EPILOGUE_FENCE = 32
# if no ratio is above 1.01 (the spills go for free) and bench/gemm.py's f8_rowwise / i8 rows with
# the switch on lose nothing; else keep it 0 and record the rows.
export PYTHONUNBUFFERED=1
python3 bench/epilogue_fence.py --shapes 4096,8192 --min-ms 100 2>&1 | grep -v Warning
