#!/bin/bash
# limit: 40
# Helper D, session 28 (#18): config.json's sm_90a rules for std.gemm's matmul_w4a16 at M <= 16 take
# the TMA ring (its TMA constant: grid(dequant_ring=TMA), schedule/dequant_ring.py), flipped on
# bench/results/q_D2_w4a16_tma_ring-h200-twentyeighth.txt (N = K = 8192 g128, one process, outputs
# checked first): M = 1..8 BM=8, K steps of 256 on 6 stages (24.2 us = 1.65x F.linear, against 36.4 on
# the cp.async rule's 3 stages; the GEMV 24.9, split-K 4 26.1), M = 9..16 BM=16, 512 on 4 stages (25.1 us
# = 1.43x, against 30.6 on the cp.async rule's 2 stages; split-K 2 27.0).  CPU: only those two rules'
# generated CUDA changed among std.gemm's kernels at their defaults and rules (sm_90a, sm_80); ptxas -v
# sm_90a (nvcc 13.0) 56 -> 55 registers (M = 1), 224 -> 240 (M = 16, setmaxnreg), 0 spills.  Never run
# on a GPU: the ring's GPU tests (tests/gpu/test_gemm_w4a16_tma_ring_gpu.py, under the switch) nor
# matmul_w4a16's at the rules.
# First the GPU tests of matmul_w4a16 at the rules (std.quant's weight at M = 1 and 16, N = K = 8192;
# the kit's ragged shapes, a caller's constants completing the rule's) and through the ring at its own
# tiles, then the row that showed the win beside the cp.async ring at the replaced rules, the GEMV and
# the split-K kernels, every output checked first.
# Answer (ANSWER:): the pytest exit status (a failure: take TMA out of the two rules); per M the rule's
# time against the cp.async ring's and std's other kernels'.  At M = 1 the GEMV stays std's
# recommendation unless matmul_w4a16 is faster again by more than 2% (session 28: 2.8%, one run).
set -u
export PYTHONUNBUFFERED=1
timeout 22 python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/test_gemm_w4a16_gpu.py \
  tests/gpu/test_gemm_w4a16_tma_ring_gpu.py \
  -k "quantized_by_std_quant and (1-8192-8192 or 16-8192-8192) or test_ragged_shapes or matmul_w4a16_through_the_tma_ring" \
  2>&1 | tail -4
echo "ANSWER: matmul_w4a16 GPU tests at the TMA rules: pytest exit ${PIPESTATUS[0]}"
timeout 16 python3 bench/lowbit.py --w4a16 --quick --m 1,16 \
  --only "w4a16,w4a16 cp.async BK=256 stages=3,w4a16 cp.async BK=512 stages=2,w4a16 gemv,w4a16 split-K 4,w4a16 split-K 2" \
  | tee /tmp/V_D.txt
python3 - <<'PY'
import sys
sys.path.insert(0, "bench")
from lowbit import printed_w4a16_rows
rows = {}
for (row, v), (t, x) in printed_w4a16_rows("/tmp/V_D.txt").items():
    rows.setdefault(row, {})[v] = (t, x)
for row, r in sorted(rows.items()):
    if "w4a16" not in r:
        print(f"ANSWER: {row}: the TMA rule's row did not print (failed its check or timed out)")
        continue
    t, x = r["w4a16"]
    others = ", ".join(f"{v} {u:.1f}" for v, (u, _) in sorted(r.items()) if v not in ("w4a16", "F.linear f16"))
    print(f"ANSWER: {row}: matmul_w4a16 at the TMA rule {t:.1f} us = {x or 0:.2f}x F.linear; {others}")
PY
