# limit: 45
# Issue #15, session 24 round 2 (helper F): a cached first call on the H200 after this session's
# changes, as this morning's bench/queue/cached_call.sh (cached-call-h200-twentyfourth.txt:
# load + call median 3.99 ms, load 1.73, call 2.23; each step's own time: checkout_hash 0.933,
# CompiledKernel._load 0.725, loads_text 0.341, checked_cache.load 0.310, cuda_unavailable_reason
# 0.282 x3, launch 0.251, resolve_path 0.247, LaunchMemo.lookup 0.181, ...).  Changed since
# (helper F): the checkout's identity keyed by the digest its memo claims and its ~250 stat()s
# made on a thread beside cuModuleLoadData (CuPy loads without the GIL), the launch waiting for
# them (`vouched` in the table: what is left of them after the load; `_memo_claim` the memo's
# read); the memo's format 3 (one map(os.stat), stamps compared as bytes); fewer system calls
# (one read a file, no file objects; 342 -> ~315 in the stood-in call); config.json vouched for by
# its stamp (7 files opened, not 8); the cache folder's Path and the data folders made once; the
# launch head's decode by __dict__ updates.  On the loaded 2-core CPU the thread can wait for a
# core (median wall 10 ms, CPU 2.1): whether it pays on the H200's 16 idle cores is the question.
# std.gemm's matmul in a new process whose tlc caches hold it (a checkout), the clock after
# `import torch, cupy, tlc` and the CUDA context; one process fills a fresh cache (NVRTC), 2 timed processes, 2 more with each step's own wall time
# (`--exclusive`); every process checks the product (C == 256 everywhere) after its clock, and a
# wrong one fails the run.
timeout 43 python3 bench/first_cached_host.py --gpu --runs 2 --exclusive 2>&1 | tail -48
