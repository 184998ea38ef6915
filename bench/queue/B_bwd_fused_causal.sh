# limit: 35
# Issue #19, session 24 (helper B): B_bwd_fused.sh's one-grid backward with the causal mask
# (key block kx runs the query blocks from its diagonal on; DETERMINISTIC's turns: the last key
# block first, as they come to a query block), against std's three grids and cuDNN, each output
# checked first.  CPU: as B_bwd_fused.sh (causal shapes included).
# First, the GPU test of the compiler's new wgmma operand alone (gemm(a, b, c, trans_a=True):
# A M-major in shared memory, HGMMA .tnspA; f16 in its four accumulator arrangements, ragged M,
# N, K against NumPy; on the CPU the interpreter agrees and nvcc builds it without spills).
set -o pipefail
timeout 12 python3 -m pytest -q -x -m gpu -p no:cacheprovider tests/gpu/test_wgmma_m_major_a_gpu.py -k "not bf16" 2>&1 | tail -4
V=bench/attention_bwd_fused.tl:flash_bwd_fused
# the three grids of std's flash_bwd before this session, at config.json's sm_90a tiles
OLD=bench/attention_bwd_split.tl:flash_bwd:BM=128,THREADS=256,BN=128,BQ=64,KV_STAGES=3
timeout 22 python3 bench/attention_bwd.py --causal --min-ms 100 --json "$OUT/B_bwd_fused_causal.json" \
  --probe fused_s2_det base=$OLD fused_s2=$V:KV_STAGES=2 fused_s2_det=$V:KV_STAGES=2,DETERMINISTIC=True 2>&1
