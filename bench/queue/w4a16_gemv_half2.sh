# limit: 40
# Issue #18, session 23 (helper): does the f16-pair gemv beat the default one at M = 1?
#   bench/w4a16_gemv_half2.tl: matmul_w4a16_gemv's layout and tiles, each weight pair one LOP3 under
#   f16's 1024 exponent (0x6400 | nibble in both halves of a word), q - (1024 + zero) and the
#   product with the activation in f16, summed in two f16 accumulators a word (4 products each),
#   then f32.  codegen/cexpr.py now reads reinterpret(u16(h >> 16), f16) as the word's high half
#   (tl::u32_half_hi), so ptxas pairs the halves' ops into HADD2 / HMUL2 without SHF + PRMT.
# On the CPU: interpreter and g++ within the w4a16 tests' tol (rel_err 4-5e-4 < 2e-3); nvcc 13.0
#   sm_90a: 128 registers, no spills; a K step's compute block 467 SASS instructions (3.65 a
#   weight) against the gemv's 522 (4.1).  If issue-bound as session 22 found, predicted
#   ~22-23 us at N = K = 8192 g128 against the gemv's 24.9 (F.linear 39.3): ~1.75x, not 3x.
# Asks (outputs checked first by bench/lowbit.py's Checked, against the f32 product of the
#   dequantized weight; F.linear always): M = 1 "w4a16 gemv" vs "w4a16 gemv half2".  M = 16 does
#   not apply (a gemv reads W once a row).
set -o pipefail
timeout 38 python3 bench/lowbit.py --w4a16 --quick --m 1 --only "w4a16 gemv,w4a16 gemv half2" \
  --json "$OUT/w4a16_gemv_half2.json" 2>&1 | tail -6
