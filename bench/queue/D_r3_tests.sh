# limit: 30
# Issue #13, session 24, helper D, round 3: the GPU tests of what this session's commits changed.
# 863e836: where(c, a, b) of a bool fragment over 16-bit ones as 32-bit words (tl::select_halves4)
#   - std.elementwise.where and std.broadcast.where of f16 / bf16;
# 454a4cf: fast_div_near (a times MUFU.RCP's reciprocal for an f16 divisor) - std.elementwise's div,
#   div_row / div_col, addcdiv and reciprocal (every f16 value's reciprocal: test_fast_math16_gpu),
#   std.broadcast.div;
# 31c7510: f16 / bf16 min and max as __hmin / __hmax - std.elementwise's maximum / minimum (and
#   _row / _col), clamp_tensor, std.broadcast's clamp / maximum / minimum, std.reduce's cummax /
#   cummin (and _axis0);
# 5cb9328 + the sm_90a lerp f16 rule (BLOCKS 8): std.broadcast.lerp.
# The CPU ran the README suite (4720 passed; the one failure, test_reduce's argmin_axis1 table
# test, is another helper's uncommitted rule) and nvcc's no-spill builds of std.broadcast and
# std.elementwise.
timeout 29 python3 -m pytest -q -n 8 -p no:cacheprovider -m gpu tests/gpu/test_broadcast_gpu.py \
  tests/gpu/test_elementwise_gpu.py tests/gpu/test_fast_math16_gpu.py tests/gpu/test_reduce_gpu.py \
  -k "cummax or cummin or where or div or addcdiv or reciprocal or clamp or maximum or minimum or lerp or test_against_numpy and broadcast" \
  2>&1 | tail -15
