# limit: 180
# Issue #19, session 19: std.attention's flash_decode now says blocks_per_sm=3 (6c61c49): ptxas,
# left to its own budget once the split's keys became a launch value (8662eca), built the split
# grid at 72 registers with a 4-byte spill; told, 96 and none.  Shared memory held the kernel to
# three blocks an SM either way, so the time should not move: session 18 measured decode 0.93x
# and GQA 0.91x cuDNN.  bench/attention.py checks every contender's output before timing it.
python3 bench/attention.py --only decode_f16,decode_f16_gqa,decode_f16_paged,decode_f16_gqa_paged
