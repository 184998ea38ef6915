#!/usr/bin/env bash
# limit: 30
# Helper A, session 29 (#19): where does flash_fwd's persistent grid pay?  Session 28's H200 timed
# it (then the global switch warpspec.GRID_TILE_LOADS, std's grid walked by one block an SM, each
# tile's Q loaded by the producer) at 0.668x cuDNN against one tile a block's 0.523x at SK = 256
# (a block's fixed cost: 223.9 against 286.0 us), but slower at SK = 4096 (0.860x against 0.924x)
# (bench/results/q_A_fwd_persistent-h200-twentyeighth.txt).  Now flash_fwd's PERSISTENT constant
# (grid(persistent_tiles=...), off by default) asks for it per call, so a config.json rule on SK
# can take it.  CPU: the same warp specialization as the switch's (tests/schedule/
# test_warpspec_attention.py), the interpreter against NumPy (tests/stdlib/test_attention.py);
# the default builds are unchanged.
# Rows (f16 B=4 H=32 S=4096 D=128, full; SK = 256, 512, 1024, 2048; every output checked first by
# bench/fwd_variants.py): std (one tile a block) and persist (PERSISTENT=True), beside cuDNN.
# Answer: per row "<label> <us> <x>x cuDNN".  Let X be the largest SK timed at which persist beats
# std by >= 2% there and at every smaller SK: add the config.json flash_fwd rule {"arch": "sm_90a",
# "when": {"D": [65, 128], "SK": [1, X]}, "constants": {"PERSISTENT": true}} (after the others); no
# such SK: record, no rule.
export PYTHONUNBUFFERED=1
timeout 28 python3 - <<'PY' 2>&1
import sys
sys.path.insert(0, "bench")
from fwd_variants import run
for sk in (256, 512, 1024, 2048):
    run(("float16", 4, 32, 32, 4096, sk, 128, False), [("std", None, {}), ("persist", None, {"PERSISTENT": True})],
        min_ms=20)
PY
