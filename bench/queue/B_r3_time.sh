# limit: 45
# Issue #19, session 24 (helper B), round 3: std.gemm's matmul_tn (8192^3 f16) and std.conv's
# conv2d_bwd_weight (32 x 56 x 56 x 64, 3 x 3) now on wgmma (A M-major, 493811a), against
# cuBLAS / cuDNN in the same process, outputs checked first; then the same with the tlc before
# 493811a (bench/.old_r3, untracked: tlc, templates, stdlib of 493811a~1; its own kernel cache),
# so that the two ratios say what the change did.  CPU: both build without spills (ptxas -v).
set -o pipefail
timeout 21 python3 bench/mmajor_a_r3.py --label now 2>&1 | grep -v Warning
PYTHONPATH="$PWD/bench/.old_r3:$PYTHONPATH" TLC_CACHE_DIR=/tmp/tlc-cache-before \
  timeout 21 python3 bench/mmajor_a_r3.py --label before 2>&1 | grep -v Warning
