# limit: 40
# Issue #19, session 24 (helper B): the attention backward as ONE grid over key blocks
# (bench/attention_bwd_fused.tl, FlashAttention 3's formulation): dK, dV in registers, dS.T
# staged in shared memory and dQ's partial dS @ K (the compiler's new M-major A operand of wgmma,
# m64n64 a warpgroup) added with f32 atomics into a workspace that a third grid scales into dQ:
# five products a step where std's three grids take seven (2.30 ms dQ grid + 3.85 ms dK/dV grid).
# Question: does it beat the three grids, and by how much (arithmetic: at the dK/dV grid's 571
# TFLOP/s of its own flops the five products take ~4.8 ms, ~1.0x cuDNN)?  And what does
# determinism cost: DETERMINISTIC orders each query block's adds with the compiler's new
# atomic_add(..., order=(counts[b, h, qb], turn)) (one thread waits for the count by an acquire
# load, the consumers meet, add, meet, one thread counts by a release; the load and the last
# step's release made under the step's first products: codegen/turns.py), the turns chosen so that
# no block waits in lockstep (ROTATE: key block kx starts R * kx query blocks on, a Python
# simulation of all shapes in the CPU tests: each query block's turns 0..n-1, no deadlock, no
# wait).  Variants: 2 or 3 stages, rotated or not.  The script says which are bit-identical
# run to run (the DETERMINISTIC ones must be).
# CPU: the interpreter runs the sm_90a schedule (warp-specialized ring) against NumPy at
# 6 ragged shapes (GQA, causal, S != SK, deterministic): errors <= 5.4e-4 of the largest
# gradient; ptxas -v sm_90a D=128: 232-register consumers (setmaxnreg), no spills; SASS 24
# HGMMA.64x64x16 + 8 HGMMA.64x128x16 a step, 16 REDG.E.ADD.F32x2 a thread a step (the compiler now
# adds an mma fragment's register pairs with sm_90's 8-byte vector red: codegen/atomic_pairs.py).
# A hung ordered variant (bench/attention_bwd.py --probe: 5 s) ends the first run with exit 3;
# the second then times the others alone.
set -o pipefail
V=bench/attention_bwd_fused.tl:flash_bwd_fused
# the three grids of std's flash_bwd before this session, at config.json's sm_90a tiles
OLD=bench/attention_bwd_split.tl:flash_bwd:BM=128,THREADS=256,BN=128,BQ=64,KV_STAGES=3
timeout 36 python3 bench/attention_bwd.py --min-ms 100 --json "$OUT/B_bwd_fused.json" --probe fused_s2_det,fused_s3_det \
  base=$OLD fused_s2=$V:KV_STAGES=2 fused_s2_det=$V:KV_STAGES=2,DETERMINISTIC=True \
  fused_s3_det=$V:KV_STAGES=3,DETERMINISTIC=True fused_s2_norot=$V:KV_STAGES=2,ROTATE=False 2>&1 || \
  timeout 25 python3 bench/attention_bwd.py --min-ms 100 base=$OLD fused_s2=$V:KV_STAGES=2 \
    fused_s3=$V:KV_STAGES=3 fused_s2_norot=$V:KV_STAGES=2,ROTATE=False 2>&1
