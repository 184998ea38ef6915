# limit: 45
# Issue #13, session 24, helper D, round 3: the rows this session's defaults changed, each output
# checked against the float64 reference before it is timed (bench/ops.py's measure, 10 ms).
# Round 2 (bench/results/D_broadcast_spec-h200-twentyfourth.txt, D_data_rows-...): broadcast.where
# 0.74 of copy (0.61 in this morning's table), clamp 0.88 (0.86), lerp 0.85 at BLOCKS 0 and 0.90 at
# 8 (now the sm_90a f16 rule), div 0.96 (0.88); elementwise where 1.05, div 1.03.  Since round 2:
# min / max of f16 as __hmin / __hmax (31c7510: clamp's hot path 1000 -> 872 SASS instructions,
# 72 -> 68 registers; maximum / minimum / clamp_tensor too) - whether round 2's clamp had it is
# not known, so clamp is timed again; lerp at BLOCKS 0 beside the rule's 8; broadcast.add as the
# control (0.96 this morning).
timeout 44 python3 - <<'PY'
import json, os, sys
sys.path.insert(0, "bench")
from row_variants import run

f16 = {"T": "f16"}
recs = run([
    ("broadcast.where", "now", None, {}),
    ("broadcast.clamp", "now", None, {}),
    ("broadcast.lerp", "now", None, {}),
    ("broadcast.lerp", "B0", None, {**f16, "BLOCKS": 0}),
    ("broadcast.div", "now", None, {}),
    ("broadcast.maximum", "now", None, {}),
    ("broadcast.add", "now", None, {}),
    ("clamp_tensor", "now", None, {}),
    ("maximum", "now", None, {}),
    ("where", "now", None, {}),
    ("div", "now", None, {}),
])
json.dump(recs, open(os.environ.get("OUT", "/tmp") + "/D_r3_rows.json", "w"), default=str)
PY
