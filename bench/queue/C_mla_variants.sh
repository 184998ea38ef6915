#!/usr/bin/env bash
# limit: 35
# Asks (#19, MLA decode at 0.45-0.51 of the dense bf16 peak; the hand-written prototype
# bench/mla_onewg.py ran 1.05-1.09x std in session 25): do three compile-time options close it?
#   uniform: codegen/sm80.py UNIFORM_GUARDS, warpgroup 0's guards as `tl_warp < 4` (the warp index
#     broadcast from lane 0, uniform in the warp as ptxas sees it) rather than `threadIdx.x < 128`.
#     CPU (nvcc 13.0 sm_90a, cuobjdump): std's consumer loop has a BRA.DIV ahead of the row maxima's
#     shuffles and 4 WARPSYNC.ALL, ~45 LOP3/SHF of P's store addresses serial before the shuffles;
#     with uniform guards none of them and the loop interleaves as the prototype's (735 SASS a page
#     against 737; the prototype 728; 168 registers, no spills, all three).
#   unicarry: uniform + schedule/warpspec.py CARRIED_MIN_STAGES 2, P @ V in flight into the next
#     page's scores (the tensor cores run them back to back), its stage released once the scores
#     are done, one iteration later than std's (a 72 KB page then has less than a page of work to
#     arrive in). 168 registers, no spills, no DEPBAR at the loop's end.
#   early: unicarry + codegen/sm90.py EARLY_CARRIED_RELEASE: the last P @ V waited for right after
#     the scores' issue (warpgroup 0 DEPBAR.LE 2, warpgroup 1 0) and its stage released there.
# Every O and LSE checked against an f32 reference before its time counts (16 bf16 units, LSE 1e-3).
# Answer, per row: "<variant> <x>x std". Flip UNIFORM_GUARDS to True if uniform >= 1.02x std
# on both rows; take carry (CARRIED_MIN_STAGES 2: of std.attention's, std.gemm's and std.conv's
# kernels at their defaults and at 2 stages only mla_decode's ring changes) with
# EARLY_CARRIED_RELEASE if early >= 1.03x uniform on both, without it if unicarry is; otherwise
# record the numbers and leave the defaults.
export PYTHONUNBUFFERED=1
python3 bench/mla_variants.py --rows mla_b132_kv16384_sq1,mla_b64_kv4096_sq1 \
    --variants std,uniform,unicarry,early,onewg --together --min-ms 100 2>&1
