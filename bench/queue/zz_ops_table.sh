# limit: 300
# Issue #13: the whole ops table after session 20's changes (bool words, hypot, sin/cos,
# index_select, the column tile ops' loop and blocks, rope/geglu/batch_norm; the session's own
# table before them: bench/results/ops-h200-twentieth.txt).  Last in the folder, run alone if the
# batch's time is short (236 s of wall time this session): its NVRTC compiles warm NVRTC's own
# cache, which first_call_rolled.sh must find cold.
python3 bench/ops.py --min-ms 10 --no-chart --json "$OUT/ops.json"
