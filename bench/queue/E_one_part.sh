#!/bin/bash
# limit: 40
# Helper E, session 27 (#15, time to first result; no device this session): is the one-part build
# of a split-K GEMM (tlc/runtime/one_part.py, TL_ONE_PART: tl_tiles_z the constant 1, so that NVRTC
# compiles split-K's fixup out; the switch ONE_PART_BUILD off, untimed) as fast as today's build at
# the launches it would serve, and how much NVRTC time does it save on the H200?
# The CPU showed (std.gemm's matmul as the runtime builds it, TL_TMA_FLAGS 3 + TL_WHOLE_RUNS, sm_90a):
# NVRTC 13.0 through ctypes, the compile's CPU through the warm-up's precompiled primitives, 5 new
# processes each (load ~11 on 2 cores): median 476 -> 366 ms (min 453 -> 363); nvcc 13.0: 1,504 ->
# 1,320 SASS instructions, 168 registers both, no spills.  With the switch off every build's SASS is
# HEAD's (cuobjdump -sass, all 48 changed generations of std and the examples, sm_90a; sm_80 unchanged).
# Every output is checked against CuPy's matmul before it is timed (bench/one_part.py); a launch in
# parts of K (256 x 256 x 16384) through the one-part kernel is checked too.
# Answer: per row "general ms, one-part ms, ratio" and the NVRTC medians.  Flip
# tlc/runtime/one_part.py ONE_PART_BUILD to True if no ratio is above 1.01 (and the NVRTC line shows
# the saving); else keep it off and record the rows.
export PYTHONUNBUFFERED=1
python3 bench/one_part.py --shapes 4096,8192 --min-ms 100
