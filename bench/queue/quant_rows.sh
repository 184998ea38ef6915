# limit: 90
# Issue #18, session 22 (helper 98): std.quant's slow rows against the copy bandwidth (f16
# [16384, 8192]; goal 0.9).  Last H200 numbers, of copy: quantize_int4 0.49, dequantize_int4
# 0.61, quantize_mx 0.52, dequantize_mx 0.61, dequantize_per_channel 0.67-0.69,
# quantize_per_token 0.67 (i8) / 0.62 (f8).  Measured on the CPU (nvcc 13.0 -arch=sm_90a, the
# runtime's build, SASS instructions for a thread's 32 elements; at 0.9 of copy and ~1045 G
# warp-instructions/s the budget is ~26 an element moving 3 bytes, ~21.6 moving 2.5):
#   quantize_int4   1360 -> 1104: 87524fa (x pairs as LDS.128), 9ab5776 (whole-runs build),
#                   c10d923 (|x| folded into FMNMX), 285dd50 (each row's two divisions by one
#                   thread, the scale section run by 1 warp of 8): ~25 -> ~16.7 an element
#                   counting warp-instructions of the hot path a block
#   dequantize_int4  928 -> 600 (29 -> 18.8): 87524fa (y pairs as STS.128), 9ab5776
#   quantize_mx     1096 -> 784 (34 -> 24.5), 60 -> 40 registers (3 blocks of 512 an SM, not
#                   2): 87524fa (blocks of 32 as LDS.128 / STS.64, not LDS.U16 / STS.U8 an
#                   element), c10d923
#   dequantize_mx    720 -> 488 (22.5 -> 15.3): 87524fa (the e8m0 scale read once a run)
#   dequantize_per_channel: scales in registers, no barrier a block (9e037d1): 328 for 16 -> 176
#   dequantize_per_group (0.75-0.84): scales read in the loop, no exchange through shared
#                   memory and its 2 barriers a block (634522a): i8 272 -> 184, f8 296 -> 208
#   quantize_per_token i8 864 -> 800 (c10d923); not issue-bound (hot path ~20 an element): three
#                   serial round trips a block (tile 1, tile 0, tile 0 again); candidate: one
#                   tile of 8192 on 256 threads at 4 blocks an SM (50 registers, no spill in
#                   this build, no cp.async ring: 64 KB of rows in flight an SM, as softmax)
# Asks: (1) every changed row now, each output checked against PyTorch first (bench/lowbit.py);
# (2) the tiles and the previous per-channel form, each output equal to the default's byte for
# byte first (bench/quant_tiles.py: quantize_per_token BN=8192 at 256 / 512 threads, BLOCKS=4;
# dequantize_per_channel BM=32 and 'shared_scales' = before 9e037d1; dequantize_per_group
# BM=32 and 'fragment_scales' = before 634522a; dequantize_per_token (0.85-0.89: 32 KB of q in
# flight an SM) at 256 threads or 2 rows a block (48 KB); int4 and mx tiles);
# (3) the GPU tests of the kernels changed (ragged shapes, NaN, -0.0; 15 s at most).
timeout 40 python3 bench/lowbit.py --quick --only quantize_per_token,dequantize_per_channel,dequantize_per_group,quantize_int4,dequantize_int4,quantize_mx,dequantize_mx \
  --json $OUT/quant_rows.json 2>&1 | tail -14
timeout 32 python3 bench/quant_tiles.py --min-ms 10 --variants bench/quant_variants.tl \
  --only quantize_per_token,dequantize_per_token,dequantize_per_channel,dequantize_per_group,quantize_int4,dequantize_int4,quantize_mx,dequantize_mx 2>&1 | tail -24
timeout 15 python3 -m pytest -q -x -n 8 -p no:cacheprovider tests/gpu/test_quant_gpu.py tests/codegen/test_absmax_reduction.py \
  -k "int4 or mx or per_channel or per_token or dequantize_per_group or negative_zero" 2>&1 | tail -4
