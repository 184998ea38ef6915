# limit: 120
# Issue #13, session 21, helper 95: std.data's layout rows, each timed in one process by
# bench/ops.py's measure (every contender's output, torch's too, checked against the float64
# reference before it is timed; 10 ms a contender).
# Session 20 (bench/results/ops-h200-twentieth.txt) and the CPU's findings (nvcc 13.0 sm_90a):
#   permute 0.75 of copy: blocks at once read 32 x rows of 128 bytes 16 KB apart.  After
#     (056cc7a): consecutive blocks take the y axis that is x's axis 2.  "before" is 2983f6c's
#     permute (its text below, from /tmp).
#   transpose 0.85, transpose_batched 0.87: each block wrote 128 bytes of each of its 64 y rows.
#     After: groups of G = 8 rows of tiles (1 KB runs of y rows); "before" is G = 1 (the old order).
#   pad 0.68: its x tile's origin 3 elements past a vector: tl::copy_g2f_shifted loaded each run's
#     2 vectors run by run (2 runs a thread at BM = 8).  "now" is after f01e88f (both runs' 4
#     LDG.128 at once; before: session 20's 0.68); variant BM = 4 (one run a thread).
#   repeat 0.57: 4 STG.128 for each LDG.128, 4 blocks of 256 an SM (64 registers): variant
#     BLOCKS = 5 (48 registers, no spill).  (The write-only ceiling, whether 256 MiB written of
#     repeat's 320 bounds it: data_moe_round2.sh.)
mkdir -p /tmp/before
cat > /tmp/before/layout_before.tl <<'TL'
@kernel
def permute(x: T[S0, S1, S2, S3], y: T[D0, D1, D2, D3], T: dtype = f32,
            P0: const = 0, P1: const = 1, P2: const = 2, P3: const = 3, BR: const = 8, BC: const = 256,
            THREADS: const = 128, BLOCKS: const = 8):
    # y = x.transpose(P0, P1, P2, P3) (NumPy's axes; y's shape is x's permuted): y[o0, o1, o2, o3]
    # is x at the index whose axis Pd is od.  Where the last axis stays (P3 = 3: (batch, seq,
    # heads, dim) -> (batch, heads, seq, dim)), a block copies a tile of BR rows along y's axis 2
    # by BC elements, which is a tile of x's rows along its axis P2 (rows apart), both ways in
    # 16-byte vectors where the rows are aligned (for a narrow last axis take a smaller BC and a
    # larger BR).  Otherwise a block writes BR rows (o0, o1, o2) by BC elements along o3, element
    # by element, each row's index arithmetic shared by its elements.  BLOCKS: the blocks an SM
    # holds (the tile path's 4-d addresses take 48 registers a thread; the compiler's estimate, 12,
    # spills 8 bytes in f16 on sm_90a, 10 spills i64).
    with grid(where(P3 == 3, D0 * D1 * cdiv(D2, BR) * cdiv(D3, BC), cdiv(D0 * D1 * D2, BR) * cdiv(D3, BC)),
              threads=THREADS, blocks_per_sm=BLOCKS) as bx:
        if P3 == 3:
            c0 = bx % cdiv(D3, BC) * BC
            s0 = bx // cdiv(D3, BC) % cdiv(D2, BR) * BR
            b1 = bx // (cdiv(D3, BC) * cdiv(D2, BR)) % D1
            b0 = bx // (cdiv(D3, BC) * cdiv(D2, BR) * D1)
            t = fragment(T[BR, BC])
            if P2 == 2:
                copy(x[where(P0 == 0, b0, b1), where(P1 == 1, b1, b0), s0:s0 + BR, c0:c0 + BC], t)
            elif P2 == 1:
                copy(x[where(P0 == 0, b0, b1), s0:s0 + BR, where(P1 == 2, b1, b0), c0:c0 + BC], t)
            else:
                copy(x[s0:s0 + BR, where(P0 == 1, b0, b1), where(P1 == 2, b1, b0), c0:c0 + BC], t)
            copy(t, y[b0, b1, s0:s0 + BR, c0:c0 + BC])
        else:
            r0 = bx // cdiv(D3, BC) * BR
            c0 = bx % cdiv(D3, BC) * BC
            for i, j in parallel(BR, BC):
                o3 = c0 + j
                o2 = (r0 + i) % D2
                o1 = (r0 + i) // D2 % D1
                o0 = (r0 + i) // (D2 * D1)
                if o0 < D0 and o3 < D3:
                    i0 = o0 if P0 == 0 else (o1 if P1 == 0 else (o2 if P2 == 0 else o3))
                    i1 = o0 if P0 == 1 else (o1 if P1 == 1 else (o2 if P2 == 1 else o3))
                    i2 = o0 if P0 == 2 else (o1 if P1 == 2 else (o2 if P2 == 2 else o3))
                    i3 = o0 if P0 == 3 else (o1 if P1 == 3 else (o2 if P2 == 3 else o3))
                    y[o0, o1, o2, o3] = x[i0, i1, i2, i3]
TL
python3 - <<'PY'
import sys
sys.path.insert(0, "bench")
from row_variants import run

before, f16 = "/tmp/before/layout_before.tl", {"T": "f16"}
run([("permute", "before", before, {}), ("permute", "after", None, {}),
     ("transpose", "before", None, {**f16, "G": 1}), ("transpose", "after", None, {}),
     ("transpose_batched", "before", None, {**f16, "G": 1}), ("transpose_batched", "after", None, {}),
     ("transpose", "G16", None, {**f16, "G": 16}),
     ("pad", "now", None, {}), ("pad", "BM4", None, {**f16, "BM": 4}),
     ("repeat", "now", None, {}), ("repeat", "BLOCKS5", None, {**f16, "BLOCKS": 5})])
PY
