#!/bin/bash
# limit: 30
# Helper R, session 28 (correctness, G's open item 4): std.attention's flash_decode and
# flash_decode_paged with an empty batch (B = 0) stopped with the grid's division by zero (their
# split count NS divides by the items B * HK * ...); now a grid one of whose extents divides by
# zero while another is 0 is empty (tlc/runtime/grid.py empty_despite_division): nothing runs,
# nothing reads NS, as an empty tensor launches nothing elsewhere.  Host code only: the kernels'
# device code and SASS are unchanged.  CPU-checked: the interpreter, the cpu target, and each
# grid's CUDA binder and grid without a GPU (tests/stdlib/test_attention.py).
# (30 s: NVRTC of both kernels' two grids at D = 16.)
# Asks: the GPU test passes (B = 0 twice, through the general and the fast path, then B = 1).
# Answer: "passed/failed"; a failure's text goes to bench/RESULTS.md and to tlc/runtime/grid.py.
python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/test_attention_gpu.py -k empty_batch 2>&1 | tail -3
