#!/usr/bin/env bash
# limit: 18
# Asks (#18): do std.gemm's block-scaled f8 kernels still compute the product on the H200 with
# BN=256's two halves (tests/gpu/test_gemm_precisions_gpu.py's other tiles run BM=128 BN=256
# stages=2, through NVRTC and on the sm_80 path; test_blockscaled_halves_staged_epilogue at 3
# and 4 stages, both halves stored by the TMA, from two buffers or one in turn, ragged tiles;
# CPU: tests/stdlib/test_gemm_precisions_cpu.py's
# cpu target at BN=256 against NumPy, and ptxas: no local memory at BN=256 on sm_90a).
# Answer: passed / failed counts; any failure blocks the BN=256 rule of E_f8bs.sh.
python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/test_gemm_precisions_gpu.py -k "blockscaled" 2>&1 | tail -15
