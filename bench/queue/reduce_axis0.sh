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
# (tileops/rows.py): 349.  "after": also the batch's test as each tile's rows plus one test of the
# columns, hoisted out of the loop (codegen/copies.py batch_test): 267 (4.2 an element), 117-121
# registers, no spill (norm_inf 631 -> 395, any/all 567 -> 331, norm_l2 562 -> 267).  Question:
# does the time follow the instructions?
# `bench/ops.py` over the seven rows (each output checked against float64 before it is timed,
# torch in the same run), once a mode, each in its own process and kernel cache.
for mode in before split after; do
  echo "== $mode"
  TLC_CACHE_DIR=$(mktemp -d) python3 - "$mode" <<'PY'
import os, runpy, sys
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
if mode in ("before", "split"):  # the batch's test as at 92bc76c: each copy's runs in the tensor
    copies.batch_test = lambda parts: " && ".join(
        f"tl::g2f_whole<{lay}>({v.base}, {v.stride}, {v.rows}, {v.cols}, {v.row0}, {v.col0})" for v, lay in parts)
out = os.environ.get("OUT", "/tmp")
sys.argv = ["bench/ops.py", "--min-ms", "10", "--no-chart", "--only",
            "sum_axis0,mean_axis0,norm_l1_axis0,norm_l2_axis0,norm_inf_axis0,any_axis0,all_axis0",
            "--json", f"{out}/reduce_axis0-{mode}.json"]
runpy.run_path("bench/ops.py", run_name="__main__")
PY
done
