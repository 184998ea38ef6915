#!/bin/bash
# limit: 30
# Helper G, session 29 (#13): should codegen/shared_runs.py's RAGGED_VECTOR_STORES be on?  In a
# kernel's general build (the one the runtime launches for ragged rows: a last size not a multiple
# of the copies' runs), a folded store of a 16- or 8-bit fragment of more than 16 registers a
# thread into a tensor of its dtype went out as nvcc's split of the union store, st.global.v2.u16
# (4-byte stores, 4 a 16-byte run); with the switch, by st.global.v4 (tl::FragmentStore's
# VECTOR_RUNS, tl::store_global_vector).  The whole-runs build (aligned rows) is the same SASS.
# CPU (nvcc 13.0, sm_90a, -Xptxas -v; scripts/options-flip shared_runs.RAGGED_VECTOR_STORES over
# std): 62 of 1019 general builds change, none spills more; std.broadcast's pow f16 96 -> 76
# registers (at BLOCKS = 8: 64 + 12 bytes spilled -> 53, none; 16 STG.E a thread -> 4 STG.E.128),
# add / sub / mul / maximum 68 -> 70, clamp and lerp f16 100 -> 108, reduce's cumsum / cumprod f16
# 96 -> 80, std.quant's dequantize_per_channel rule 74 -> 20 bytes of spills, nn's rms_norm rule
# 115 -> 122, quant's dequantize_mx 46 -> 55.
# Two processes at N = 8191 (the general build), the switch off then on (a kernel cache of its
# own: the switch is not in its key), each row's output checked against PyTorch's float64 result
# before it is timed.
# Answer: on if no row loses more than 1% and broadcast.pow (default or BLOCKS=8) or another row
# gains 2% or more; if only some rows lose, say which (a narrower rule: by registers a thread).
export PYTHONUNBUFFERED=1
ROWS="broadcast.add broadcast.clamp broadcast.pow BLOCKS=8 reduce.cumsum nn_train.log_softmax_bwd"
python3 bench/ops_variants.py --min-ms 20 --shape 16384,8191 $ROWS 2>&1
CACHE=$(mktemp -d)
TLC_CACHE_DIR=$CACHE python3 bench/ops_variants.py --min-ms 20 --shape 16384,8191 \
    --option tlc.codegen.shared_runs.RAGGED_VECTOR_STORES=1 $ROWS 2>&1
rm -rf "$CACHE"
