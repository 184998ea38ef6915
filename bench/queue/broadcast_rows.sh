# limit: 120
# Issue #13, helper 93 (session 21): the broadcast rows and the broadcasting tile ops, after
# 3e674ed (std.broadcast) and ddc4984 (the tile ops' b once per run or row a thread: add_row
# 239 -> 131 SASS instructions a thread of 16 elements, add_col 234 -> 143, div_row 385 -> 303,
# div_col 395 -> 215, maximum_col 268 -> 173; flat add 108).  Session 20's H200 table (bench/results/ops-h200-twentieth.txt, of copy): std.broadcast
# add 0.87, sub/mul 0.86, div 0.69, maximum/minimum 0.79, pow 0.36, where 0.46, clamp 0.65,
# lerp 0.67; std.elementwise add_row 0.94, sub_col 0.89, div_row 0.79, div_col 0.83,
# maximum_col/minimum_col 0.87 (flat add 1.02).  Measured on the CPU (sm_90a, the source as the
# runtime builds it, cuobjdump): no broadcast kernel qualified for TL_WHOLE_RUNS (BN // 8 was not
# folded) and each block did five signed Python divisions before its first load; now the whole-runs
# build and three unsigned divisions, add's kernel 9311 -> 6036 SASS instructions, where's
# 11082 -> 7507.  Question 1: the rows now (the elementwise rows of the same names come along as
# the flat references).  Question 2: std.broadcast's tiles against the default (BN = 4096, 128
# threads), with its divisions now cheap: BN 2048, 4096 at 256 threads, 8192 at 256 (ptxas, tile
# path: add 36/36/55 registers, where 56/56/110, lerp 48/48/72; default 55, 110, 72), each
# output checked first.  Question 3: memcheck clean on the row-tile path (D3 >= 512) at ragged
# shapes, both builds (D3 = 4100: the general one; 8200: whole runs, a partial last tile), every
# output checked against NumPy (tests/stdlib/broadcast_kit.check); and ddc4984's tile ops (b read
# once per run or row slot) at ragged shapes against NumPy, under the same memcheck.
set -e
python3 bench/ops.py --only add,sub,mul,div,maximum,minimum,pow,where,clamp,lerp,add_row,add_col,sub_col,mul_col,div_row,div_col,maximum_row,maximum_col,minimum_col --min-ms 10 --no-chart --json "$OUT/broadcast_rows.json"
python3 bench/config_sweep.py --only add,where,lerp --min-ms 10
cat > "$OUT/check_tiles.py" <<'PY'
import sys
import numpy as np
sys.path.insert(0, "tests/stdlib")
import tlc
import broadcast_kit as kit

mod = tlc.load("std.broadcast")
SETS = {2: [((2, 3, 5, 4100), (1, 3, 1, 4100)), ((2, 1, 3, 8200), (2, 1, 3, 1))],
        3: [((2, 3, 5, 8200), (1, 3, 1, 8200), (2, 1, 5, 1)), ((1, 2, 3, 4100), (1, 2, 1, 1), (1, 1, 3, 4100))]}
for op in kit.OPS:
    if op.name in ("add", "div", "pow", "where", "clamp", "lerp"):
        for s in SETS[len(op.domains)]:
            kit.check(mod, op, "f16", np.random.default_rng(0), s, {})
            print("ok", op.name, s, flush=True)
ew = tlc.load("std.elementwise")
rng = np.random.default_rng(0)
for (m, n) in ((37, 45), (9, 300), (16, 8200), (5, 4100)):
    a = rng.standard_normal((m, n)).astype(np.float16)
    for name, b, ref in (("add_row", rng.standard_normal(n).astype(np.float16), lambda a, b: a + b),
                         ("add_col", rng.standard_normal((m, 1)).astype(np.float16), lambda a, b: a + b),
                         ("div_row", (rng.random(n) + 0.5).astype(np.float16), lambda a, b: a / b),
                         ("div_col", (rng.random((m, 1)) + 0.5).astype(np.float16), lambda a, b: a / b),
                         ("maximum_col", rng.standard_normal((m, 1)).astype(np.float16), np.maximum)):
        y = getattr(ew, name)(a, b)
        y = y.get() if hasattr(y, "get") else y.cpu().numpy() if hasattr(y, "cpu") else np.asarray(y)
        want = ref(a.astype(np.float32), b.astype(np.float32)).astype(np.float16)
        assert np.allclose(y.astype(np.float32), want.astype(np.float32), rtol=1e-3, atol=1e-3), (name, m, n)
        print("ok", name, (m, n), flush=True)
PY
compute-sanitizer --tool memcheck --error-exitcode 9 python3 "$OUT/check_tiles.py" 2>&1 | grep -E "^ok|ERROR SUMMARY|Error|error" | tail -45
