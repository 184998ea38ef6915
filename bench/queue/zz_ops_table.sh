# limit: 300
# Issue #13: the whole ops table with session 23's defaults (quant rules, repeat after the loop-stop
# and unswitching fixes, the topk/expert_histogram tiles, log_softmax/batch_norm/argmax/cummax
# rules).  Session 23's table before them: bench/results/ops-h200-twentythird.txt (155 of 188
# large rows >= 0.9 of copy; 176 s of wall time).  Last in the folder, run alone if the batch's
# time is short: its NVRTC compiles warm NVRTC's own cache, which a first-call script must find cold.
python3 bench/ops.py --min-ms 10 --no-chart --json "$OUT/ops.json"
