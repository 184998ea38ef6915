#!/usr/bin/env bash
# limit: 40
# Helper S, session 29 (#19, #13): schedule/host_dims.py's HOST_DIMS "warp_specialized" (off by
# default): in a warp-specialized kernel the launch computes a dimension expression that divides by
# a run-time size (std.attention's LSE axis HK * (H // HK), flash_bwd's dQ heads) and passes it as
# an i32 argument, so the kernel neither divides for it nor keeps H // HK live across the
# consumers' setmaxnreg.  CPU evidence (nvcc 13.0 -cubin sm_90a -Xptxas -v, cuobjdump -sass, every
# std build scripts/options-flip makes; main loop = the smallest backward-branch span holding HGMMA):
#   - FlashAttention 3's 192 x 192 tile with P in shared memory (an off switch): 12 bytes spilled
#     (3 STL, 2 LDL) -> 0, registers 128 -> 128 (tests/codegen/test_deferred_gemm.py).
#   - the 21 std builds it changes: registers the same in every one, no spill added; main loops
#     the same or shorter at std's sm_90a choices (flash_fwd D=64 rule 472 -> 472, D=128 636 -> 636,
#     D=256 rule 592 -> 592; flash_bwd, varlen, sparse the same), but one IMAD.MOV.U32 more in the
#     main loop at two tiles config.json does not pick on sm_90a (D=64 at BM=128 BN=128: 588 -> 589;
#     D=128 at BN=80 STAGES=2: 482 -> 483): not clearly no worse, so untimed it stays off.
#   - with "all" (every kernel) sm_80's flash_fwd D=128 went 246 -> 255 registers and 48 bytes
#     spilled: the rule takes warp-specialized kernels only.
# First the GPU tests with the switch on (O and LSE against NumPy, GQA cases: flash_fwd default
# tiles D=128 causal HK=2 and HK=1, the D=64 rule causal HK=2; flash_bwd D=128 HK=2; varlen),
# each kernel compiled afresh (its own TLC_CACHE_DIR: the program cache does not key the
# switch), then flash_fwd off beside on (bench/fwd_variants.py: every O checked first, both from
# renamed copies compiled with the switch set), B=4 H=32 HK=8 S=SK=4096 full, at D=64 std's rule
# and the .tl's tiles (the +1 MOV), and D=128.
# Answer: the tests' pass/fail line; per row "<label> <us> <x>x cuDNN".  If the tests pass and "on"
# is no slower than "off" by more than 1% in any row, set HOST_DIMS = "warp_specialized" in
# tlc/schedule/host_dims.py (and make tests/codegen/test_deferred_gemm.py's p_in_shared test strict
# at the default); if a test fails, the launch passes a wrong dimension: fix before anything else.
export PYTHONUNBUFFERED=1
TLC_CACHE_DIR=$(mktemp -d) timeout 15 python3 scripts/options-flip --pytest host_dims.HOST_DIMS -- -q -x -n 0 -m gpu \
    tests/gpu/test_attention_gpu.py -k "test_flash_fwd_against_numpy and (7-f16 or 10-f16 or 12-f16) or \
test_flash_bwd_against_numpy and 4-f16 or test_flash_fwd_varlen_against_numpy and 2-f16" 2>&1 | tail -4
TLC_CACHE_DIR=$(mktemp -d) timeout 24 python3 - <<'PY' 2>&1
import sys
sys.path.insert(0, "bench")
from fwd_variants import run
SWITCH = "tlc.schedule.host_dims.HOST_DIMS"
for D, tiles in ((64, {"BM": 192, "THREADS": 384, "BN": 96}), (64, {}), (128, {})):
    run(("float16", 4, 32, 8, 4096, 4096, D, False),
        [("off", None, tiles, {SWITCH: False}), ("on", None, tiles, {SWITCH: "warp_specialized"})], min_ms=15)
PY
