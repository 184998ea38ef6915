#!/bin/bash
# limit: 10
# Helper D, session 26 (#18; prepared on the CPU, no device that session).  Asks: are std.gemm's
# w4a16 kernels right with tl::copy_g2s's untimed issue forms on (codegen/copies.py ROUND_STEPS
# and CLIP_ROWS_MAX = 8, which bench/queue/D_w4a16_copies.sh times)?  Three GPU tests of
# tests/gpu/test_gemm_w4a16_gpu.py (the bench's shapes against F.linear, the kit's ragged shapes
# against NumPy: M = 1 takes the clipped path for its 8-row activation tile) in a process with
# both on and caches of its own.  tests/codegen/test_copies_rounds.py builds every kind of tile
# with them on (nvcc, sm_80 and sm_90a, no spills); nothing ran them on a GPU yet.
# Answer (ANSWER:): the pytest summary line; a failure keeps the forms off.
set -u
mkdir -p /tmp/tlc-cache-D-forms-tests
TLC_CACHE_DIR=/tmp/tlc-cache-D-forms-tests timeout 9 python3 - <<'PY'
import sys
import pytest
from tlc.codegen import copies
copies.ROUND_STEPS, copies.CLIP_ROWS_MAX = True, 8
# cases whose tiles take the forms' paths (M = 1, 5: matmul_w4a16's 8-row activation tiles
# clipped; the weight tiles' rounds) and the gemv's (its rounds); the bench shapes' outputs are
# checked by D_w4a16_copies.sh's rows
first = ["test_ragged_shapes_against_numpy[1-70-384-128-decode0-prefill0]",
         "test_ragged_shapes_against_numpy[5-130-520-64-decode3-prefill3]",
         "test_gemv_ragged_shapes_against_numpy[1-70-1000-128-consts0]"]
rc = pytest.main(["-q", "-m", "gpu", "-p", "no:cacheprovider"] + [f"tests/gpu/test_gemm_w4a16_gpu.py::{t}" for t in first])
print(f"ANSWER: w4a16 GPU tests with the copy forms on: pytest exit {int(rc)}")
sys.exit(int(rc))
PY
