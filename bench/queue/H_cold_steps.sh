#!/bin/bash
# limit: 58
# Helper H, session 26 (#15, time to first result; no device this session): where the H200's
# ~1240 ms first call of std.gemm's matmul with empty tlc and NVRTC caches goes (session 25: load
# 569.5 = parse + check of std.gemm, call 671.3 of which NVRTC 544), step by step, and two changes
# the CPU could not time (bench/first_cold_steps.py: each step's own wall time, imports and the
# collector's passes as steps, every result checked against C == 256 before its time counts).
# Variants, alternating new processes, 2 each (each ~7 s: import torch + cupy ~5 s before the clock):
#   .         this tree: the checked module's store, its record and the program entry's JSON run
#             on the calling thread while another thread runs NVRTC's compile (d2c014e,
#             tlc/runtime/beside.py; the default since d2c014e).  2-core CPU, NVRTC stood in by a
#             250 ms GIL-free wait: the store (14-22 ms) and the entry's JSON (8 -> 0.45 ms) leave
#             the call's path.
#   .#inline  the same stores where they are asked for (beside.later runs the work at once: the
#             behaviour before d2c014e).
#   .#thread  tlc.runtime.WARM_UP_FINDS_ARCH = True: the warm-up thread finds the target (the
#             entry points' search of every package's metadata, 22 ms on the H200's 199 packages)
#             and NVRTC's arch itself, beside the parse.  2-core CPU (load 5 on 2 cores): the
#             main thread's CPU 254.7 -> 246.4 ms, wall not measurable.
# Answer: per variant "load + call median, load, call" and the step table (import, parse, check,
# nvrtc_compile's wait, _nvrtc_compile, store).  If .#inline is not faster than . (load + call
# medians), beside stays (else revert d2c014e); if .#thread's load is >= 15 ms below .'s and its
# call no slower, flip tlc/runtime/__init__.py WARM_UP_FINDS_ARCH to True.
export PYTHONUNBUFFERED=1
python3 bench/first_cold_steps.py --gpu --runs 2 --tree . --tree ".#inline" --tree ".#thread"
