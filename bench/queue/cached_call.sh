# limit: 45
# Issue #15, session 23: where a cached first call's time goes on the H200.  std.gemm's matmul in
# a new process whose tlc caches hold it (the checked module, its launch memo, the program entry),
# the clock started after `import torch, cupy, tlc` and the CUDA context, as bench/overheads.py's
# "first_cached" (5.6 ms in session 21, load 2.4 + call 3.1; goal 2).  On this repo's 2-core CPU
# machine, CuPy stood in for (`python3 bench/first_cached_host.py --runs 9 --exclusive`, a
# checkout): 1.87 ms median, of which the checkout's identity (the memo's stat() of tlc's 220
# files) 0.58, the checked entry 0.19, the launch head's decode 0.17, resolving std.gemm 0.11, the
# targets' memo 0.09, the launch memo 0.09, the texts' SHA-256 0.08; nothing else above 0.06.
# The stand-ins hide what the GPU's host adds (session 17's step timer: the driver's module load
# ~0.7 ms, NVRTC's facts ~0.3, the tensor maps ~0.2): the question is each step's own time on the
# real thing, to see what of the 3.7 ms gap is Python (the H200 host's cores) and what the driver.
# One process fills a fresh cache (NVRTC compiles), then 2 timed processes and 2 more with each
# step's own wall time (`--exclusive`), each ~4 s of `import torch, cupy`; every process checks
# the product (C == 256 everywhere) after its clock, and a wrong one fails the run.  The tree is
# a checkout, as in bench/overheads.py (an installed tlc's identity is its RECORD: ~0.5 ms less).
timeout 42 python3 bench/first_cached_host.py --gpu --runs 2 --exclusive 2>&1 | tail -48
