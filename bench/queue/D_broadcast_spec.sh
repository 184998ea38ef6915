# limit: 45
# Issue #13, session 24, helper D: why std.broadcast's ternary rows fall short of copy bandwidth
# (bench/results/ops-h200-twentyfourth.txt: where 0.61, clamp / lerp 0.86).
# CPU (nvcc 13.0 sm_90a, the runtime's TL_WHOLE_RUNS build, f16, ptxas -v): each kernel tests
# `X3 == 1` per operand at run time (an operand broadcast along its last dimension filled from
# one element, else its row copied), and ptxas holds the fragments live across each join: where
# 111 registers (4 blocks an SM: 16 KiB of cond in flight an SM), clamp 72, lerp 74.  With all
# three tests decided at compile time (bench/broadcast_spec.tl, S_X constants, as a build
# specialized on which last sizes are 1 would compile) where takes 64 registers, clamp 65, lerp
# 61; where with one test left to run time 64-72, two 85-92, three 109-111.  Filling the broadcast
# branch as packed 16-byte runs (a codegen trial) left where at 109: the joins, not the fill's
# form, hold the registers.  Without specializing, blocks_per_sm 8 fits clamp and lerp in 64
# registers with no spill (bench/broadcast_blocks.tl, BLOCKS); where spills 210 bytes at 8, 114
# at 6.  Since then (this tree, codegen/byte_words.py): where(c, a, b) of a bool fragment and
# 16-bit ones is computed four registers at a time as 32-bit words (tl::select_halves4: a PRMT,
# an IMAD and a LOP3 a word), no longer a register a bool and a half: where 111 -> 77 registers
# (the general build 124 -> 93); at BLOCKS 6, 65 without spills, at 8, 64 and a 24-byte spill.
# Every where contender below (now, spec, B6, B8) is built so.  The ops table's where was 0.61.
# And (codegen/cexpr.py) min / max of f16 values are __hmin / __hmax in half (exact), which nvcc
# pairs into HMNMX2: clamp's 32 elements a thread take 32 HMNMX2 where they took 64 FMNMX, 96
# HADD2.F32 and 16 F2FP (hot path 1000 -> 872 SASS instructions, 72 -> 68 registers); every clamp
# contender is built so.
# Asks: the specialized build against the kernels as they are and at BLOCKS 6 / 8.
# The CPU checked every variant on the interpreter at BN = 256 (the dry run's rows of 45 take
# the hot path there; a wrongly specialized where fails that check: 1408 of 1440 off).  Each
# contender's output is checked against the float64 reference before it is timed (bench/ops.py's
# measure, 10 ms); "now" is this tree's std.broadcast row.
timeout 44 python3 - <<'PY'
import json, os, sys
sys.path.insert(0, "bench")
from row_variants import run

S, B = "bench/broadcast_spec.tl", "bench/broadcast_blocks.tl"
f16 = {"T": "f16"}
recs = run([
    ("broadcast.where", "now", None, {}),
    ("broadcast.where", "spec", S, {**f16, "S_B": 1}),
    ("broadcast.where", "B8", B, {**f16, "BLOCKS": 8}),
    ("broadcast.where", "B6", B, {**f16, "BLOCKS": 6}),
    ("broadcast.where", "spec/B8", S, {**f16, "S_B": 1, "BLOCKS": 8}),
    ("broadcast.clamp", "now", None, {}),
    ("broadcast.clamp", "B8", B, {**f16, "BLOCKS": 8}),
    ("broadcast.clamp", "spec", S, {**f16, "S_H": 1}),
    ("broadcast.lerp", "now", None, {}),
    ("broadcast.lerp", "B8", B, {**f16, "BLOCKS": 8}),
    ("broadcast.lerp", "spec", S, {**f16, "S_W": 1}),
])
json.dump(recs, open(os.environ.get("OUT", "/tmp") + "/D_broadcast_spec.json", "w"), default=str)
PY
