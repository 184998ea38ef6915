# limit: 240
# Issue #15, session 19: the cold first call with the tl primitives precompiled on the warm-up
# thread (1e1a31c; CPU machine: NVRTC 514 -> 496 ms of CPU for std.gemm's matmul) and the cached
# one after 7f0c4ce / 54af741 (CPU host side 9.30 M -> 8.50 M instructions, 1.93 -> 1.53 ms).
# Session 18 on the H200: cold 1002-1457 ms (matmul), cached 3.7-5.8 ms; goals 500 ms and 2 ms.
python3 bench/overheads.py --only first --kernels matmul,rms_norm,softmax
