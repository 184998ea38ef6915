#!/bin/bash
# limit: 12
# Helper G, session 26 (#13): what bounds moe_permute (0.63 of copy) and expert_histogram (0.76)
# on the H200?  bench/moe_probe.py's hand-written CUDA at bench/ops.py's sizes beside the std
# kernels and PyTorch, one process, every output checked first (rows exactly against torch's
# gather, counts against torch.bincount).  moe_permute: plain 16-byte copies, y stored with
# st.global.cs (evict-first), x loaded with an L2 evict_last policy (what
# l2_policy.KEEP_GATHERED_ROWS generates), both.  expert_histogram: the loads alone (the
# ceiling), shared atomics (std's), atomics grouped by __match_any_sync (what
# atomic_groups.GROUP_ATOMICS generates).
# Answer: if "probe last" is near "probe both" and well above "probe plain", evict_last alone
# is the fix (G_ops_weak_rows.sh's switch); if only "both" gains, y's stores need evict-first
# too (a store side for l2_policy.py).  If "probe match" is near "probe loads only", the
# grouped atomics are the fix; if "probe atomics" already is, the histogram is load-bound.
PYTHONUNBUFFERED=1 python3 bench/moe_probe.py --min-ms 10 2>&1
