# limit: 35
# Issue #13, session 24 (helper E), round 3: this session's std.reduce defaults in bench/ops.py's own
# rows ((16384, 8192) f16 against torch, every output checked first), to set beside this morning's
# table (bench/results/ops-h200-twentyfourth.txt: logsumexp_axis0 0.64 of copy, var_axis0 0.82,
# std_axis0 0.81, argmax_axis0 0.67, argmax_axis1 0.78, argmin_axis1 0.75).  Expected from round 2
# (bench/results/col_reductions- and argmax_scans-h200-twentyfourth.txt): logsumexp 0.82, var/std
# 0.90, argmax_axis0 0.78, argmax_axis1 0.83; argmin_axis1 as argmax_axis1 (its new sm_90a rule
# and the ring, not timed on its own before).
set -o pipefail
timeout 33 python3 bench/ops.py --min-ms 5 --no-chart --json "$OUT/E_verify_ops.json" \
  --only logsumexp_axis0,var_axis0,std_axis0,argmax_axis0,argmax_axis1,argmin_axis1 2>&1 \
  | tee "$OUT/E_verify_ops.txt" | tail -12
