# limit: 120
# Issue #13, session 21, helper 95 (std.data, std.moe): the rows this session changed, each
# timed before and after in one process (bench/ops.py's measure: every contender's output, torch's
# too, checked against the float64 reference before it is timed; 10 ms a contender).  "before" is
# the kernel as of 2983f6c (its .tl text below, loaded from /tmp); "after" the tree's.
# Session 20's table (bench/results/ops-h200-twentieth.txt), and what was found on the CPU (nvcc
# 13.0, sm_90a, ptxas -v, cuobjdump -sass):
#   moe_align_block_size 0.84x torch: one block walked 2^17 ids, 128 chunks of ~4 us one after
#     another.  After (06a5552): two grids of 128 blocks, a slice each (~5 us expected + launches).
#   expert_histogram 0.49 of copy: one LDG in flight a thread (load, ATOMS.POPC.INC, next load).
#     After: 2048 ids a step copied into registers, 4 LDG.128 a thread in flight.
#   moe_permute 0.39: one LDG.128 a thread behind its row index's load.  After: BD 4096 (4 a
#     thread), BLOCKS 8; also BD 2048 at the estimate's blocks, to pick the default.
#   gather 0.78: a warp's 32 loads at 32 lines of the row, the L1's line a cycle (~0.51 ms
#     predicted, 0.48 measured).  After: x's row through shared memory, LDS at the index.
#   scatter 0.21 (1.00x torch): 32 scattered 2-byte writes a warp.  After: y's row owned by a
#     block in shared memory, written back whole (at most 0.86 of copy: y read once more).
# Question: the after rows against the goals (>= 1.0x torch, >= 0.9 of copy where memory-bound).
mkdir -p /tmp/before
cat > /tmp/before/moe_before.tl <<'TL'
@kernel
def expert_histogram(ids: I[N], counts: i32[E], I: dtype = i32, BE: const = 256, BLOCK: const = 4096,
                     THREADS: const = 256):
    # counts[e] += the number of entries of ids equal to e (torch.bincount(ids, minlength=E), the
    # tokens each expert receives; zero counts first); an id outside [0, E) is not counted.  Each
    # block counts BLOCK ids into a histogram of BE (>= E, a power of two) bins in shared memory,
    # then adds its nonzero bins to counts by atomics: exact, in any order.
    with grid(cdiv(N, BLOCK), threads=THREADS) as bx:
        device_assert(E <= BE, "expert_histogram: E = %d experts (BE = %d)", E, BE)
        hist = shared(i32[BE])
        fill(hist, 0)
        for q in parallel(BLOCK):
            f = bx * BLOCK + q
            if f < N:
                e = ids[f]
                if e >= 0 and e < E:
                    atomic_add(hist[e], 1)
        for e in parallel(BE):
            if e < E and hist[e] != 0:
                atomic_add(counts[e], hist[e])


@kernel
def moe_align_block_size(ids: I[N], sorted_ids: i32[P], block_expert: i32[NB], positions: i32[N], offsets: i32[E1],
                         I: dtype = i32, BLOCK: const = 64, BE: const = 256, CHUNK: const = 1024,
                         GROUP: const = 32, THREADS: const = 1024):
    # The N = M * K (token, expert) pairs of ids (topk_softmax's, flattened) sorted by expert,
    # each expert's run padded to a multiple of BLOCK rows (vLLM's moe_align_block_size, but
    # stable), for E = E1 - 1 experts: sorted_ids[p] is the pair at row p
    # (np.argsort(ids, kind="stable") run by run), N on a padding row and on the rows past the
    # total; block_expert[b] the expert of rows b * BLOCK.. (-1 past the total); positions[f] the
    # row of pair f (-1 for an id outside [0, E)); offsets[e] the first row of expert e's run and
    # offsets[E] the padded total, at most N + E * (BLOCK - 1) (P at least that, NB at least
    # P / BLOCK): std.gemm's matmul_grouped takes offsets as they are.  One block: a histogram of
    # the ids in shared memory and the runs' starts by a scan; then CHUNK ids at a time, each id
    # counts the equal ids before it in its group of GROUP, each expert adds up its counts over
    # the groups in order (a scan of CHUNK / GROUP steps), and each id goes to its run's next
    # rows: about GROUP + CHUNK / GROUP steps a chunk, placed without atomics.  Exact.
    with grid(1, threads=THREADS) as bx:
        device_assert(E1 - 1 <= BE and CHUNK % GROUP == 0,
                      "moe_align_block_size: E = %d experts (BE = %d), CHUNK = %d ids in groups of %d",
                      E1 - 1, BE, CHUNK, GROUP)
        hist = shared(i32[BE])
        padded = shared(i32[BE])
        ends = shared(i32[BE])
        cursor = shared(i32[BE])
        chunk = shared(I[CHUNK])
        rank = shared(i32[CHUNK])
        runs = shared(i32[CHUNK // GROUP, BE])
        fill(hist, 0)
        for c in range(cdiv(N, CHUNK)):
            for q in parallel(CHUNK):
                f = c * CHUNK + q
                if f < N:
                    e = ids[f]
                    if e >= 0 and e < E1 - 1:
                        atomic_add(hist[e], 1)
        for e in parallel(BE):
            padded[e] = cdiv(hist[e], BLOCK) * BLOCK
        cumsum(padded, ends)
        for e in parallel(BE):
            cursor[e] = ends[e] - padded[e]
        device_assert(ends[BE - 1] <= P and ends[BE - 1] <= NB * BLOCK,
                      "moe_align_block_size: %d padded rows, sorted_ids holds %d, block_expert %d blocks",
                      ends[BE - 1], P, NB)
        for c in range(cdiv(N, CHUNK)):
            for q in parallel(CHUNK):
                f = c * CHUNK + q
                chunk[q] = ids[f] if f < N else -1
                if f < N and (chunk[q] < 0 or chunk[q] >= E1 - 1):
                    positions[f] = -1
            fill(runs, 0)
            for q in parallel(CHUNK):
                e = chunk[q]
                before = 0
                after = 0
                for lane in range(GROUP):
                    other = chunk[q // GROUP * GROUP + lane]
                    before = before + where(lane < q % GROUP and other == e, 1, 0)
                    after = after + where(lane > q % GROUP and other == e, 1, 0)
                rank[q] = before
                if e >= 0 and e < E1 - 1 and after == 0:
                    runs[q // GROUP, e] = before + 1
            for e in parallel(BE):
                if e < E1 - 1:
                    row = cursor[e]
                    for g in range(CHUNK // GROUP):
                        count = runs[g, e]
                        runs[g, e] = row
                        row = row + count
                    cursor[e] = row
            for q in parallel(CHUNK):
                e = chunk[q]
                if e >= 0 and e < E1 - 1:
                    sorted_ids[runs[q // GROUP, e] + rank[q]] = c * CHUNK + q
                    positions[c * CHUNK + q] = runs[q // GROUP, e] + rank[q]
        for e in parallel(BE):
            if e < E1 - 1:
                offsets[e] = ends[e] - padded[e]
                for r in range(cursor[e], ends[e]):
                    sorted_ids[r] = N
                for b in range((ends[e] - padded[e]) // BLOCK, ends[e] // BLOCK):
                    block_expert[b] = e
        for q in parallel(CHUNK):
            if q == 0:
                offsets[E1 - 1] = ends[BE - 1]
            for r in range(cdiv(P, CHUNK)):
                if r * CHUNK + q >= ends[BE - 1] and r * CHUNK + q < P:
                    sorted_ids[r * CHUNK + q] = N
                if r * CHUNK + q >= ends[BE - 1] // BLOCK and r * CHUNK + q < NB:
                    block_expert[r * CHUNK + q] = -1
TL
cat > /tmp/before/data_before.tl <<'TL'
@kernel
def gather(x: T[A, N, C], idx: I[A, K, C], y: T[A, K, C], T: dtype = f32, I: dtype = i64,
           BLOCK: const = 2048, THREADS: const = 256):
    # y[a, k, c] = x[a, idx[a, k, c], c] (torch.gather along axis 1); an index outside [0, N) gives 0.
    # A block takes BLOCK elements of one a: idx and y are rows of K * C elements (views), so the
    # indices are copied in and the results out as any row tile is, in 16-byte vectors (past the
    # row's end nothing is written; the index read there as 0 reads x's row a at 0); x is read
    # element by element at the indices.
    idx_rows = view(idx, I[A, K * C])
    y_rows = view(y, T[A, K * C])
    with grid(A * cdiv(K * C, BLOCK), threads=THREADS) as bx:
        a = bx // cdiv(K * C, BLOCK)
        g0 = bx % cdiv(K * C, BLOCK) * BLOCK
        n = fragment(I[BLOCK])
        v = fragment(T[BLOCK])
        copy(idx_rows[a, g0], n)
        for e in parallel(BLOCK):
            v[e] = x[a, n[e], (g0 + e) % C]
        copy(v, y_rows[a, g0])


@kernel
def scatter(src: T[A, K, C], idx: I[A, K, C], y: T[A, N, C], T: dtype = f32, I: dtype = i64,
            BLOCK: const = 1024, THREADS: const = 256):
    # y[a, idx[a, k, c], c] = src[a, k, c] (torch.scatter_ along axis 1, into y as given); where
    # two k name one element, one of them lands; an index outside [0, N) is skipped.
    with grid(cdiv(A * K * C, BLOCK), threads=THREADS) as bx:
        for e in parallel(BLOCK):
            f = bx * BLOCK + e
            if f < A * K * C:
                c = f % C
                k = f // C % K
                a = f // C // K
                n = idx[a, k, c]
                if n >= 0 and n < N:
                    y[a, n, c] = src[a, k, c]
TL
python3 - <<'PY'
import dataclasses
import torch
import tlc
from tlc.benchmarks import ceilings, ops
from tlc.benchmarks.ops_rows import all_rows

MIN_MS = 10.0
rows = {r.op: r for r in all_rows() if r.module in ("std.data", "std.moe")}
before = {"std.moe": tlc.load("/tmp/before/moe_before.tl", target="cuda"),
          "std.data": tlc.load("/tmp/before/data_before.tl", target="cuda")}
after = {m: tlc.load(m, target="cuda") for m in before}
copy_gbs = ceilings.copy_bandwidth(torch, MIN_MS)
print(f"copy {copy_gbs:.0f} GB/s")
runs = [("moe_align_block_size", "before", before, {}), ("moe_align_block_size", "after", after, {}),
        ("expert_histogram", "before", before, {}), ("expert_histogram", "after", after, {}),
        ("moe_permute", "before", after, {"T": "f16", "BD": 1024, "BLOCKS": 0}),
        ("moe_permute", "after", after, {}),
        ("moe_permute", "BD2048", after, {"T": "f16", "BD": 2048, "BLOCKS": 0}),
        ("gather", "before", before, {}), ("gather", "after", after, {}),
        ("scatter", "before", before, {}), ("scatter", "after", after, {})]
for op, label, mods, consts in runs:
    row = rows[op]
    if consts:
        row = dataclasses.replace(row, constants=consts)
    try:
        rec = ops.measure(row, mods[row.module], copy_gbs, MIN_MS)
    except Exception as e:  # noqa: BLE001 - the rest still run
        print(f"!! {op} {label}: {type(e).__name__}: {str(e)[:300]}", flush=True)
        continue
    line = ops.table([rec]).splitlines()[1]
    print(f"{label:<7} {line}  tlc {rec.get('tlc', {}).get('ms', float('nan')) * 1e3:.1f} us", flush=True)
PY
