# limit: 30
# Issue #18, session 24 (helper G): the GPU tests of what helper G touched: std.conv's conv2d
# (tests/gpu/test_conv_gpu.py: every forward conv2d case in f16 and bf16 at the default tiles,
# now 8929c87's 256 x 64 on 4 stages for F <= 64, and the small ones, the flattened stem form, an
# unaligned image, groups, the im2col-mode sources) through the counted TMA producer (1d154ea),
# and std.attention's backward against NumPy (its dK/dV producer's it // nq and it % nq are
# counted too since 1d154ea; the GQA cases step the quotient).  Round 2 ran 13 of the conv cases
# before its 15 s ran out, all passed.
set -o pipefail
timeout 28 python3 -m pytest -q -n 12 -m gpu -p no:cacheprovider tests/gpu/test_conv_gpu.py \
  tests/gpu/test_attention_gpu.py -k "conv2d or flash_bwd_against_numpy" 2>&1 | tee "$OUT/G_conv_gpu.txt" | tail -4
