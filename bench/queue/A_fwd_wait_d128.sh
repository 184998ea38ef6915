#!/usr/bin/env bash
# limit: 25
# Helper A, session 29 (#19): the other side of A_fwd_d64_bn128.sh.  schedule/gemm_overlap.py
# DEFERRED_WAIT (off: "first_use") changes every flash_fwd build on sm_90a (options-flip: the 14
# flash_fwd, flash_fwd_varlen, flash_fwd_sparse and examples/attention.tl builds, nothing else):
# waiting for the deferred P @ V before the exponentials ("before_last_write") or before their row
# sum ("after_last_write") leaves it less softmax to run under.  Does that cost std's default
# head dim 128 (two consumer warpgroups, 128 x 128, setmaxnreg 240, where nothing spills either
# way)?  Rows (f16 B=4 H=32 S=4096 D=128, full and causal; every output checked first): std (the
# default wait), std_aw, std_bw.
# Answer: per row "<label> <us> <x>x cuDNN".  If the value A_fwd_d64_bn128.sh chose is within 1% of
# std here on both masks (or faster), the switch may be turned to it; if it loses more, it stays
# "first_use" and the D=64 tile needs the wait per kernel (a config constant the pass reads).
export PYTHONUNBUFFERED=1
timeout 22 python3 - <<'PY' 2>&1
import sys
sys.path.insert(0, "bench")
from fwd_variants import run
wait = lambda rule: {"tlc.schedule.gemm_overlap.DEFERRED_WAIT": rule}  # noqa: E731
variants = [("std", None, {}), ("std_aw", None, {}, wait("after_last_write")), ("std_bw", None, {}, wait("before_last_write"))]
run(("float16", 4, 32, 32, 4096, 4096, 128, False), variants, min_ms=20)
run(("float16", 4, 32, 32, 4096, 4096, 128, True), variants, min_ms=20)
PY
