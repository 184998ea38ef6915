#!/usr/bin/env bash
# limit: 35
# Asks (#19, MLA decode at 0.45-0.51 of the dense bf16 peak; the hand-written prototype
# bench/mla_onewg.py ran 1.05-1.09x std in session 25): do two compile-time options close the gap?
#   uniform: codegen/sm80.py UNIFORM_GUARDS, warpgroup 0's guards as `tl_warp < 4` (the warp index
#     broadcast from lane 0, uniform in the warp as ptxas sees it) rather than `threadIdx.x < 128`.
#     CPU (nvcc 13.0 sm_90a, cuobjdump): std's consumer loop has a BRA.DIV ahead of the row maxima's
#     shuffles and 4 WARPSYNC.ALL, ~45 LOP3/SHF of P's store addresses serial before the shuffles;
#     with uniform guards none of them and the loop interleaves as the prototype's (735 SASS a page
#     against 737; the prototype 728; 168 registers, no spills, all three).
#   carry: schedule/warpspec.py CARRIED_MIN_STAGES 2, P @ V in flight into the next page's scores
#     (the tensor cores run them back to back), its stage released one iteration later (a 72 KB
#     page then has ~1 page of work to arrive in, not 2). 168 registers, no spills, no DEPBAR at
#     the loop's end. unicarry: both.
# Every O and LSE checked against an f32 reference before its time counts (16 bf16 units, LSE 1e-3).
# Answer, per row: "<variant> <x>x std". Flip UNIFORM_GUARDS to True if uniform >= 1.02x std on
# both rows; take carry (a rule: two stages where a third does not fit) if carry or unicarry
# >= 1.03x its counterpart on both; otherwise record and leave the defaults.
export PYTHONUNBUFFERED=1
python3 bench/mla_variants.py --rows mla_b132_kv16384_sq1,mla_b64_kv4096_sq1 \
    --variants std,carry,uniform,unicarry,onewg --together --min-ms 100 2>&1
