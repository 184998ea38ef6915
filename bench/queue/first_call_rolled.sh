# limit: 120
# Issue #15, session 20: the cold first call of std.gemm's matmul was 1034 ms on the H200 this
# session (load 362, call 672 of which NVRTC 610: bench/results/first_call_pch-h200-twentieth.txt),
# measured before 92bc76c kept the warp-specialized K loops rolled (NVRTC 498 -> 297 ms at 8192^3
# in gemm_rolled_k-h200-twentieth.txt).  Question: the first call now, and the cached one
# (4.5 ms this session; goal 0.5 s and 2 ms).  bench/overheads.py checks the result against
# PyTorch before it reports a time.
python3 bench/overheads.py --only first --kernels matmul,rms_norm,softmax
