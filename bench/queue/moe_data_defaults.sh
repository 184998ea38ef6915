# limit: 45
# Issue #13, session 23, helper: std.moe's and std.data's changed defaults and kernels, after
# the H200's answers to data_moe_round2.sh, moe_topk_rows.sh and data_layout_rows.sh (raw:
# bench/results/*-h200-twentythird.txt; copy 4290 GB/s).  Every timed output is checked first
# (bench/ops.py's measure against PyTorch's float64 reference; 10 ms a contender).
#   f9ebe4b: topk_softmax / topk_sigmoid take BE = 64, BM = 32 from stdlib/config.json for
#     E <= 64 on sm_90a (the rows no longer pin BM = 8, BE = E): expect ~921 us (was 2122) and
#     ~438 us (was 452).  topk_grouped 64 threads, 8 blocks an SM (expect ~3375 us, was 4381).
#     expert_histogram BLOCK 32768 at 512 threads (expect ~158 us = 0.79, was 186.3 = 0.67).
#   c21aee6: permute / transposes back to the plain block order (as fast: 0.96 / 0.87 / 0.82).
#   7d4a76c: the CUDA range loop's stop evaluated once (its GPU test below).
#   ae8d399: repeat's whole-tile test outside its copies' loops, 16 elements a thread (128
#     threads, 4 blocks an SM).  On the CPU (nvcc 13.0 sm_90a f16): ~115 SASS instructions a
#     16-byte store before (an integer division for the inner loop's bound among them), ~28 now
#     (2 STG.128 in ~60, no division in the loop); 70 registers, no spills (i64 86).  Was 0.53
#     of copy (148.4 us); the write-only ceiling (torch zero_ of its 256 MiB: 81.5 us) puts it
#     near 0.78.  Variants: "before" = the repeat of c21aee6 (its text below; built by this
#     tree's code generator, so with the loop bounds held: the .tl's own share), T256 = the new
#     kernel at 8 elements a thread (256 threads), B5 = 5 blocks an SM (sm_90a: no spills).
# Asks: (1) the GPU tests of the changed kernels (ragged shapes, the table's E <= 64 tile via
# the routing test's 64 experts); (2) the changed rows; (3) repeat before / now / T256 / B5.
mkdir -p /tmp/before
cat > /tmp/before/repeat_before.tl <<'TL'
@kernel
def repeat(x: T[M, N], y: T[P, Q], T: dtype = f32, BM: const = 8, BN: const = 256, THREADS: const = 256,
           BLOCKS: const = 4):
    # y[r, c] = x[r % M, c % N]: x tiled over y (torch's x.repeat(P // M, Q // N), np.tile).  Each
    # block reads one tile of x once and writes it to every copy of x in y: a tile inside x as a
    # tile (16-byte vectors where the rows are aligned; writes past y are dropped), x's last
    # tiles element by element, so that none writes past its copy of x.  BLOCKS: the blocks an
    # SM holds (64 registers a thread; the compiler's estimate, 6, spills the tile's indices).
    # 8 elements a thread: at 16 (128 threads), i64's element-by-element edge spilled at any
    # register cap from 64 to 128 (sm_90a, ptxas 13.0).
    with grid(cdiv(M, BM) * cdiv(N, BN), threads=THREADS, blocks_per_sm=BLOCKS) as bx:
        r0 = bx // cdiv(N, BN) * BM
        c0 = bx % cdiv(N, BN) * BN
        t = fragment(T[BM, BN])
        copy(x[r0, c0], t)
        for p in range(cdiv(P, M)):
            for q in range(cdiv(Q, N)):
                if r0 + BM <= M and c0 + BN <= N:
                    copy(t, y[p * M + r0, q * N + c0])
                else:
                    for i, j in parallel(BM, BN):
                        r = r0 + i
                        c = c0 + j
                        if r < M and c < N and p * M + r < P and q * N + c < Q:
                            y[p * M + r, q * N + c] = t[i, j]
TL
timeout 13 python3 -m pytest -q -x -n 8 -p no:cacheprovider tests/gpu/test_moe_gpu.py tests/gpu/test_data_gpu.py \
  tests/codegen/test_loop_stop.py -k "topk or expert_histogram or repeat or routing or stop_s_iterations" 2>&1 | tail -4
timeout 17 python3 bench/ops.py --min-ms 10 --no-chart --only topk_softmax,topk_sigmoid,topk_grouped,expert_histogram,repeat \
  --json $OUT/moe_data_defaults.json 2>&1 | tail -9
timeout 13 python3 - <<'PY'
import sys
sys.path.insert(0, "bench")
from row_variants import run

f16 = {"T": "f16"}
run([("repeat", "before", "/tmp/before/repeat_before.tl", {}), ("repeat", "now", None, {}),
     ("repeat", "T256", None, {**f16, "THREADS": 256}), ("repeat", "B5", None, {**f16, "BLOCKS": 5})])
PY
