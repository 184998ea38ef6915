# limit: 120
# Issue #13, session 20: std.elementwise's bool logical ops ran at 0.80-0.90x torch (logical_and
# 0.88 of copy, logical_or and logical_xor 0.80; ops table this session) because nvcc held every
# byte in a register of its own: a loaded word split into bytes, each bool tested and set to 0/1,
# the results packed again.  a178eb5 computes them four registers at a time as 32-bit words
# (codegen/byte_words.py) and moves 1-byte fragments' bytes as they are in every copy path
# (layout.cuh).  CPU (nvcc 13.0 and NVRTC 13.0, sm_90a, TL_WHOLE_RUNS build at (16384, 8192)):
# logical_and's whole-tile path 383 -> 89 SASS instructions for 32 elements (11.97 -> 2.78 an
# element; or 13.66, xor 13.78 -> 2.78; a bool copy 2.34), kernel 640 -> 133, registers 67 -> 28.
# Questions: (1) are the values right on the GPU (tests/gpu's elementwise rows for the logical
# ops and where, at a ragged shape and a large ragged one with a partial last block: every word
# path, whole and partial), and (2) the rows' speed now (bench/ops.py checks each contender's
# output, torch's too, before timing it).
python3 -m pytest -q -p no:cacheprovider tests/gpu/test_elementwise_gpu.py -k "logical or where" 2>&1 | tail -5
python3 bench/ops.py --min-ms 10 --only logical_and,logical_or,logical_xor,logical_not --no-chart \
  --json /tmp/ops-bool-words.json 2>&1 | tail -12
