#!/bin/bash
# limit: 40
# Helper R, session 28 (correctness, G's open item 4): std.attention's flash_decode and
# flash_decode_paged with an empty batch (B = 0) stopped with the grid's division by zero (their
# split count NS divides by the items B * HK * ...); now a grid one of whose extents divides by
# zero while another is 0 is empty (tlc/runtime/grid.py empty_despite_division): nothing runs,
# nothing reads NS, as an empty tensor launches nothing elsewhere.  Host code only: the kernels'
# device code and SASS are unchanged.  CPU-checked: the interpreter, the cpu target, and each
# grid's CUDA binder and grid without a GPU (tests/stdlib/test_attention.py).
# Also (G's open item 3): a stepped loop whose bounds the launch knows and whose i32 counter they
# would step past i32, or by 0, is refused before the launch (tlc/runtime/loop_bounds.py); the
# GPU test refuses a step of 0 through the general and the fast path and a launcher, and runs
# range(2**31 - 10, 2**31 - 1, 3) (3 iterations, the counter ending at 2**31 - 1).
# (40 s: NVRTC of both attention kernels' two grids at D = 16, and of the loop kernel.)
# Asks: both GPU tests pass (B = 0 twice, through the general and the fast path, then B = 1).
# Answer: "passed/failed"; a failure's text goes to bench/RESULTS.md and to tlc/runtime/grid.py
# or loop_bounds.py.
python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/test_attention_gpu.py -k empty_batch 2>&1 | tail -3
python3 -m pytest -q -m gpu -p no:cacheprovider tests/runtime/test_loop_bounds.py 2>&1 | tail -3
