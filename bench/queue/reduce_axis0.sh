# limit: 120
# Issue #13, session 20: std.reduce's column reductions (sum/mean/norm_l1/l2/inf/any/all_axis0,
# (16384, 8192) f16) ran at 0.72-0.77 of copy, 0.88-0.93x torch.  Grid: 256 blocks of 32 columns
# x 256 threads, 2 an SM (one wave on 132 SMs), 4 tiles of [128, 32] an iteration (8 LDG.128 a
# thread in flight); no split of the rows over blocks.  On the CPU (nvcc 13.0 -Xptxas -v sm_90a,
# the TL_WHOLE_RUNS build, SASS instructions on the loop's hot path, a step of 64 elements a
# thread): sum_axis0 494 (7.7 an element), 121 registers: every element masked (row < M: compare,
# select; it also kept the load's f16 -> f32 -> f16 round trip), the batch's g2f_whole 25
# instructions a tile (64-bit clamps of the tile's row origin).  "split": the column loop as two,
# the steps whose tiles lie inside the tensor unmasked, then the rest (one step) masked
# (tileops/rows.py): 349 (not timed here, to stay in the limit).  "batch": also the batch's test as each tile's rows plus one test of the
# columns, hoisted out of the loop (codegen/copies.py batch_test): 267 (4.2 an element), 117-121
# registers, no spill (norm_inf 631 -> 395, any/all 567 -> 331, norm_l2 562 -> 267).  Question:
# does the time follow the instructions?
# `bench/ops.py` over the seven rows (each output checked against float64 before it is timed,
# torch in the same run), once a mode, each in its own process and kernel cache (3 x ~20 s).
# "convert": also tl::g2f_convert of a 16-bit float into its own type as itself, not through
# float and back (templates/tl/layout.cuh): 171 (2.7 an element; norm_l1/inf 329, any/all 235).
# The modes before it run with that line of layout.cuh as it was (restored on exit).  Every mode
# has schedule/lower.py's f32(abs(x)) of f16 x as abs(f32(x)) (fabsf, no F2F to half and back an
# element: norm_l1/inf_axis0 329 -> 171 with the rest), so their "before" is not 92bc76c's: the
# brief's table (3113 and 3087 GB/s) is.
cp templates/tl/layout.cuh /tmp/layout.cuh.new
trap 'cp /tmp/layout.cuh.new templates/tl/layout.cuh' EXIT
trap 'exit 143' TERM INT  # through the EXIT trap
python3 - <<'PY'
import re
p = "templates/tl/layout.cuh"
s = open(p).read()
old = "      for (int e = 0; e < R::A::ELEMS; ++e) regs[v * R::A::ELEMS + e] = cvt<U>(u.e[e]);\n"
s, n = re.subn(r"      for \(int e = 0; e < R::A::ELEMS; \+\+e\) \{\n(        //[^\n]*\n)*"
               r"        if constexpr \(same_type<T, U>::value\)[^\n]*\n        else [^\n]*\n      \}\n", old, s)
assert n == 1, "g2f_convert's same-type line not found"
open(p, "w").write(s)
PY
for mode in before batch convert; do
  echo "== $mode"
  [ "$mode" = convert ] && cp /tmp/layout.cuh.new templates/tl/layout.cuh
  TLC_CACHE_DIR=$(mktemp -d) python3 - "$mode" <<'PY'
import runpy, sys
from tlc.codegen import copies
from tlc.schedule.tileops import rows

mode = sys.argv[1]
if mode == "before":  # tile_loop splits only where its statements built masks: hide them
    real = rows.RowKernel.mask
    def mask(self, value, fill):
        out = real(self, value, fill)
        self.masks -= 1
        return out
    rows.RowKernel.mask = mask
    # and the batch's test as at 92bc76c: each copy's runs in the tensor
    copies.batch_test = lambda parts: " && ".join(
        f"tl::g2f_whole<{lay}>({v.base}, {v.stride}, {v.rows}, {v.cols}, {v.row0}, {v.col0})" for v, lay in parts)
sys.argv = ["bench/ops.py", "--min-ms", "10", "--no-chart", "--only",
            "sum_axis0,mean_axis0,norm_l1_axis0,norm_l2_axis0,norm_inf_axis0,any_axis0,all_axis0",
            "--json", f"/tmp/reduce_axis0-{mode}.json"]  # the table goes to stdout: $OUT/reduce_axis0.txt
runpy.run_path("bench/ops.py", run_name="__main__")
PY
done
# Second question, with the change: do blocks of whole 128-byte lines help?  32 f16 columns a
# block read 64 bytes of each row (the neighbour block the other half, at another time); 64
# columns a block is 128 blocks for 8192 columns, under two an SM, so [128, 64] tiles at 512
# threads, one block an SM (128 of 132 SMs; the same 64 KB an SM in flight).  CPU: that schedule
# (rules.COL_BLOCKS_MIN 128, col_block_elems 8192) right on the interpreter.  Each checked
# against float64 (4 f16 units) before it is timed.
echo "== lines"
TLC_CACHE_DIR=$(mktemp -d) python3 - <<'PY'
import torch
import tlc
from tlc.schedule.tileops import rules
from tlc.timing import Checked, compare_checked, tolerance

M, N = 16384, 8192
g = torch.Generator(device="cuda").manual_seed(0)
x = torch.randn(M, N, device="cuda", generator=g).half()
xd = x.double()
red = tlc.load("std.reduce")
for name, ref in {"sum_axis0": xd.sum(0), "norm_inf_axis0": xd.abs().amax(0)}.items():
    contenders = {}
    launch, out = getattr(red, name).prepare(x)
    contenders["32 columns x 256 threads, 256 blocks"] = Checked(launch, ref, out=out, **tolerance("float16", ref, 4))
    rules.COL_BLOCKS_MIN = 128  # 64 columns a block: the schedule is made at prepare
    launch, out = getattr(red, name).with_rules(col_block_elems=8192).prepare(x)
    rules.COL_BLOCKS_MIN = 264
    contenders["64 columns x 512 threads, 128 blocks"] = Checked(launch, ref, out=out, **tolerance("float16", ref, 4))
    ms, verdicts = compare_checked(contenders, min_ms=10)  # the wrong ones (never timed), then the times
    print("\n".join([f"{name} {v}: {d.why}" for v, d in verdicts.items() if not d.ok] +
                    [f"{name:16s} {v:40s} {t * 1e3:8.1f} us  {M * N * 2 / t / 1e6:7.0f} GB/s read"
                     for v, t in sorted(ms.items(), key=lambda kv: kv[1])]) + "\n", flush=True)
PY
