# limit: 30
# Issue #13, session 24 (helper H), round 3: std.elementwise's f16 rows that this morning's table had
# under 1.0x torch (bench/results/ops-h200-twentyfourth.txt: 41 rows at 0.97-1.00x), with this
# session's two changes: copies of a flat tile test each run's first column in one 64-bit compare
# (e03d36f, tl::copy_g2f_flat) and one 16-byte run a thread (62db304, ew_runs 1: 8 f16 elements, as
# torch's vectorized kernel).  Round 2 (bench/results/ew_raw-h200-twentyfourth.txt, one process):
# abs 125.5 us with both against 126.6 before, torch 125.9.  Each row exactly as bench/ops.py
# measures it (tlc.benchmarks.ops.measure: both contenders checked against the float64 reference
# first, then timed alternately, L2 flushed), without the ceilings' cuBLAS run and std.broadcast's
# rows of the same names; the unary half here, the binary half (H_NAMES, H_PART) by H_r3_ew_b.sh.
# Each row printed as it ends.
set -o pipefail
export H_PART="${H_PART:-a}" H_NAMES="${H_NAMES:-abs,reciprocal,threshold,atan,hardsigmoid,sign,rsqrt,hardshrink,leaky_relu,square,hardswish,exp,exp2,ceil,floor,round,trunc,sqrt,cosh,eq,lt,le,gt}"
timeout 29 python3 - <<'PY' 2>&1 | tee "$OUT/H_r3_ew_$H_PART.txt" | tail -40
import json, os, sys
os.environ.setdefault("TLC_OPS_TABLES", os.path.join(os.getcwd(), "tests", "stdlib"))
import torch, tlc
from tlc.benchmarks.ops import measure, table
from tlc.benchmarks.ops_rows import all_rows
from tlc.timing import compare
NAMES = os.environ["H_NAMES"].split(",")
src = torch.empty(1 << 27, dtype=torch.float16, device="cuda").normal_()
dst = torch.empty_like(src)
copy = 2 * src.numel() * 2 / compare({"copy": lambda: dst.copy_(src)}, min_ms=10)["copy"] / 1e6
print(f"copy {copy:.0f} GB/s", flush=True)
del src, dst
mod = tlc.load("std.elementwise", target="cuda")
rows = sorted((r for r in all_rows() if r.module == "std.elementwise" and r.op in NAMES), key=lambda r: NAMES.index(r.op))
records = []
for row in rows:
    try:
        rec = measure(row, mod, copy, 10.0)
    except Exception as e:  # a row that cannot run is said, the rest go on (as bench/ops.py)
        print(f"!! {row.name}: {type(e).__name__}: {str(e)[:300]}", flush=True)
        continue
    records.append(rec)
    print(table([rec]).splitlines()[1], flush=True)
json.dump(records, open(os.path.join(os.environ["OUT"], f"H_r3_ew_{os.environ['H_PART']}.json"), "w"), indent=1, default=str)
print(sum(r.get("vs_torch", 0) >= 1.0 for r in records), "of", len(records), "rows >= 1.0x torch")
PY
