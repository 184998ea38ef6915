#!/bin/bash
# limit: 10
# Helper G, session 26 (#13): does std.data's transpose reach 0.9 of copy at larger tiles?  The
# ops table's row ((16384, 8192) f16, 0.87-0.89 of copy at B = 64 on 256 threads, 16 elements a
# thread) is issue-heavy: sm_90a, nvcc 13.0, whole-runs build, the kernel is 320 SASS for a
# thread's 16 elements (20 an element, LEA / IMAD of the shared tile's padded index most of it)
# where B = 128 on 256 threads takes 1000 for 64 (15.6 an element; 80 registers, 33 KB of shared
# tile, 3 blocks an SM; B = 64 on 128 threads, 528 for 32, 16.5, waits its turn).  Each variant
# is the row as bench/ops.py measures it (output checked against PyTorch first; x.t().contiguous()
# timed in the same process).
# Answer: the two lines' "of copy" and tlc us.  If a variant beats the default by 2% or more, make
# it transpose's sm_90a rule in stdlib/config.json (B, THREADS) with this run's numbers in its note.
PYTHONUNBUFFERED=1 python3 bench/ops_variants.py --min-ms 20 transpose B=128 2>&1
