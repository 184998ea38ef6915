# limit: 30
# Issue #13, session 24, helper D: std.broadcast's div (0.88 of copy) and pow (0.53) specialized
# on which last sizes are 1 (bench/broadcast_spec.tl: S_X constants; ptxas -v sm_90a f16 in the
# TL_WHOLE_RUNS build: div 56 -> 64 registers, pow 63 -> 80, both still 8 / 6 blocks an SM.  div
# in this tree divides by an f16 divisor as a times MUFU.RCP's reciprocal (fast_div_near, where
# div.full.f32 took two FSETPs and four more FMULs an element: its hot path 760 -> 560 SASS
# instructions for 32 elements, 60 -> 56 registers); std.elementwise's div row checks it too; pow
# is issue-bound: tl::fast_pow_near is 29 SASS instructions an element, elementwise.pow 0.87 of
# copy at 768 MiB takes 217 us where broadcast.pow at 512 MiB takes 235), and std.data's scatter
# (0.76) and pad (0.87) at other tiles (bench/results/ops-h200-twentyfourth.txt).
# scatter owns a row a block (256 threads): each step copies BLOCK = 2048 i64 indices (16 KiB) and
# sources into registers and writes them into the shared row, one step's loads in flight a block
# at a time; BLOCK 4096 at 512 threads keeps twice the bytes in flight a block.  pad (8 x 256
# tiles, 128 threads, 16 elements a thread) at 256 threads (8 a thread, twice the blocks).
# The CPU checked every variant on the interpreter (bench/row_variants.py's check; the broadcast
# ones at BN = 256, where rows of 45 take the hot path).  Each contender's output is checked
# against the float64 reference before it is timed (bench/ops.py's measure, 10 ms); "now" is
# this tree's row.  First std.elementwise's where row (f16), whose select is now computed as
# 32-bit words (codegen/byte_words.py, tl::select_halves4): its output checked, its time against
# 1.03 of copy.  In order of interest: what the time limit cuts is the last.
timeout 29 python3 - <<'PY'
import json, os, sys
sys.path.insert(0, "bench")
from row_variants import run

S = "bench/broadcast_spec.tl"
f16 = {"T": "f16"}
recs = run([
    ("where", "now", None, {}),  # std.elementwise.where f16: its where now as words (tl::select_halves4)
    ("div", "now", None, {}),  # std.elementwise.div f16: fast_div_near
    ("broadcast.pow", "now", None, {}),
    ("broadcast.pow", "spec", S, f16),
    ("broadcast.div", "now", None, {}),
    ("broadcast.div", "spec", S, f16),
    ("scatter", "now", None, {}),
    ("scatter", "4096/512", None, {**f16, "BLOCK": 4096, "THREADS": 512}),
    ("pad", "now", None, {}),
    ("pad", "T256", None, {**f16, "THREADS": 256}),
])
json.dump(recs, open(os.environ.get("OUT", "/tmp") + "/D_data_rows.json", "w"), default=str)
PY
