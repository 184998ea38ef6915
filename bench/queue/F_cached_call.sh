# limit: 45
# Issue #15, session 24 round 2 (helper F): a cached first call on the H200 after this session's
# changes, as this morning's bench/queue/cached_call.sh (cached-call-h200-twentyfourth.txt:
# load + call median 3.99 ms, load 1.73, call 2.23; each step's own time: checkout_hash 0.933,
# CompiledKernel._load 0.725, loads_text 0.341, checked_cache.load 0.310, cuda_unavailable_reason
# 0.282 x3, launch 0.251, resolve_path 0.247, LaunchMemo.lookup 0.181, ...).  Changed since: the
# checkout memo (format 3: one map(os.stat) over the ~250 paths, the stamps compared as packed
# bytes; on the 2-core CPU the memo's check 0.5 -> 0.35 ms beside the stat()s' floor), the launch
# head's decode (an instance's fields by one __dict__ update: 76 -> 68 us warm), and what else
# helper F's commits before 16:35 say.  std.gemm's matmul in a new process whose tlc caches hold
# it (a checkout), the clock after `import torch, cupy, tlc` and the CUDA context; one process
# fills a fresh cache (NVRTC), 2 timed processes, 2 more with each step's own wall time
# (`--exclusive`); every process checks the product (C == 256 everywhere) after its clock, and a
# wrong one fails the run.
timeout 43 python3 bench/first_cached_host.py --gpu --runs 2 --exclusive 2>&1 | tail -48
