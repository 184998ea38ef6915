#!/usr/bin/env bash
# limit: 40
# Asks: does flash_fwd with P staged in shared memory (probs = shared(...)) give NumPy's answer
# on the H200 at 2 and 3 stages, now that warpspec waits for the deferred P @ V before the next
# iteration's copy(scores, probs) (a5e6202)?  On the CPU: the IR puts the wait on that copy
# (tests/schedule/test_warpspec_attention.py), both builds compile with nvcc for sm_90a, and
# std.attention's generated CUDA is byte-identical before and after the change (D = 64/128/256, MLA).
# Answer: "2 passed" settles it; a failure is a race the fix missed (check the wait's position).
python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/test_attention_gpu.py -k shared_memory 2>&1 | tail -5
