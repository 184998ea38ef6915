"""Stream-K, the decision (#18): a persistent warp-specialized GEMM whose output tiles leave the
last wave of blocks part empty (T tiles on G blocks, T % G != 0) hands the tail's K steps out
evenly, so that every block runs about as many (CUTLASS's data-parallel + stream-K hybrid).

The walk, for G blocks (one an SM), T tiles of n K steps each (the kernel and
`tl::StreamWalk` in templates/tl/tma.cuh alike; `walk` below is its Python):

    R = tail(T, n, G)              # the tiles streamed: T % G, plus a wave where that is under G / 2
    D = T - R                      # tiles taken whole, D / G by each block (tiles b, b + G, ...)
    the streamed tiles' R * n steps, counted on from D * n, split into G runs: block b's
    [D * n + b * R * n // G, D * n + (b + 1) * R * n // G), each run cut at the tiles' edges
    into segments (tile, k0, k1)

A segment that is a whole tile (k0 = 0, k1 = n) runs the kernel's epilogue; one that ends a
tile's steps without starting them (k0 > 0, a contributor: the first segment of its block's
run, so each block has at most one) stores its f32 accumulator into its block's slot and
counts itself on the tile's counter (a release); the one that starts the tile (k0 = 0, k1 < n,
the finisher: the last segment of its run) waits until the count reads its contributors
(blocks b + 1 ... that tile's last block), adds their slots in that order (the same bits every
run) and runs the epilogue.  A contributor runs its segment first and a finisher its last, so
the finisher waits little; every block is resident (a persistent launch), so none can hang.

In clusters of C blocks (a multicast ring) the walk's units are the clusters and its tiles C
consecutive tiles (tl::cluster_tile's), both blocks of a cluster on the same K steps (so the
multicast operand stays shared), each its own tile's slot (its block's) and counter (the pair's
times C plus its rank), a finisher adding the same rank's block of each next cluster.

`tail` streams nothing where T <= G / 2 in a kernel split-K takes too (its domain,
schedule/split_k.py), where G divides T, where a tile's K loop is short (fewer than MIN_STEPS
steps) or a block's share of the tail under two steps, where the G blocks outnumber the slots
(one f32 tile each), where the tail has more steps than an int counts (INT_MAX), or where
streaming saves the busiest block fewer than a quarter of a tile's steps (or 2): many waves
whose last is nearly full.  The kernels it applies to are split-K's
candidates (one f32 accumulator cleared before the loop, every tile's loop as long, TMA loads),
clustered or not; the loop's steps are k0 .. k1 - 1 of the tile's, its loads' coordinates as
written (an im2col box's included).

In a kernel split-K takes too, a launch that split-K would cut into parts streams instead where
that leaves its busiest block at most 7/8 of a part's steps (`prefer`: fewer tiles than a wave,
so a part a block, against the tiles' R * n steps over the wave): the grid's z then sizes the
launch to a wave rather than counting parts (std.conv's conv2d_bwd_weight at 14 x 14 x 256,
batch 64: 36 tiles of 196 steps, 3 parts of 66 against runs of 54)."""
from __future__ import annotations

from .split_k import MIN_STEPS, WAVE, _cdiv, _i, _op

SLOTS = WAVE  # blocks a launch may have (each its f32 partial tile, the split-K slots')
# the most steps a tail may have: tl::StreamWalk counts them in an int (32 bits keep the walk's
# division off the producer's 40 registers: a 64-bit one's call spilled there)
INT_MAX = 2 ** 31 - 1
# The decision's switch, off: the H200 timed it slower (session 28,
# bench/results/q_F_stream_k-h200-twentyeighth.txt, batch 64, x cuDNN, outputs checked; bench/conv.py
# --stream-k turns it on in a process): r50_s4_1x1_2048 0.82x -> 0.65x, r50_s4_3x3_512 0.99x ->
# 0.74x, r50_s3_3x3_256 1.01x -> 0.93x; dx rows unchanged.  Its one "gain", r50_s4_1x1_2048's
# variant BM=128,BN=256,stages=3 0.62x off -> 0.88x on, is no finding: that is the row's default
# configuration (config.json's F >= 129 rule), which the same processes timed 0.82x off, 0.65x on
STREAM_K = False


# the producer's registers (setmaxnreg) in a streamed ring where that leaves the consumers theirs:
# where the host has no tensor map all its 128 threads walk the segments beside their element
# copies, which spilled at warpspec.PRODUCER_REGS (40) in std.gemm's matmul_tn (nvcc's plain build,
# ptxas -v sm_90a: 24 bytes; none at 48)
PRODUCER_REGS = 48


def registers(ws, threads: int, registers_per_sm: int) -> dict:
    """The setmaxnreg counts of streamed ring `ws` (of `threads` consumer threads) where they
    differ (`replace`'s keywords): the producer's PRODUCER_REGS where the consumers' count stays
    (one consumer warpgroup: 240 either way; two would give up 8 of their 232)."""
    from .warpspec import consumer_registers
    if ws.blocks_per_sm > 1 or ws.producer_registers >= PRODUCER_REGS:
        return {}
    if consumer_registers(threads, registers_per_sm, PRODUCER_REGS) != ws.consumer_registers:
        return {}
    return {"producer_registers": PRODUCER_REGS}


def tail(tiles: int, steps: int, blocks: int, alone: bool = False, slots: int = SLOTS) -> int:
    """The tiles streamed (module docstring): 0 for none.  `alone`: split-K does not take the
    launch (the kernel is not split-K's, or streams instead of its parts: `prefer`), so T <= G / 2
    streams too."""
    if tiles <= 0 or steps < MIN_STEPS or blocks > slots or tiles % blocks == 0 or (not alone and 2 * tiles <= blocks):
        return 0
    r = tiles % blocks
    if tiles > blocks and 2 * r < blocks:
        r += blocks
    if r * steps < 2 * blocks or r * steps > INT_MAX:
        return 0
    whole = -(-tiles // blocks) * steps  # the most steps a block runs, tiles whole
    streamed = (tiles - r) // blocks * steps + -(-r * steps // blocks)
    return r if whole - streamed >= max(2, -(-steps // 4)) else 0


def prefer(tiles: int, steps: int, parts: int, blocks: int = WAVE) -> bool:
    """Whether a launch split-K cuts into `parts` parts streams instead (module docstring):
    the rule `prefer_expr` writes in the IR."""
    if parts < 2 or tiles < 1 or tail(tiles, steps, blocks, alone=True) == 0:
        return False
    return 8 * -(-tiles * steps // blocks) <= 7 * -(-steps // parts)


def prefer_expr(tiles, steps, parts):
    """`prefer` as an i32 IR expression of the sizes, 1 or 0 (in +, -, *, //, min and max, which
    the launch's grid and the kernel compute alike), for a launch of fewer tiles than a wave
    (split-K's: parts * tiles <= WAVE), where tail(alone) is the tiles' R * n >= 2 * WAVE and the
    busiest block saving max(2, cdiv(n, 4)) steps of n, and R * n <= INT_MAX (tested by a
    division: the product would overflow the i32)."""
    def at_least(a, b):  # 1 where a >= b, else 0
        return _op("min", _i(1), _op("max", _i(0), _op("+", _op("-", a, b), _i(1))))
    work = _op("*", tiles, steps)
    run = _cdiv(work, _i(WAVE))  # the busiest block's steps, streamed
    terms = [at_least(parts, _i(2)), at_least(tiles, _i(1)), at_least(steps, _i(MIN_STEPS)),
             at_least(work, _i(2 * WAVE)), at_least(_op("//", _i(INT_MAX), _op("max", steps, _i(1))), tiles),
             at_least(_op("-", steps, run), _op("max", _i(2), _cdiv(steps, _i(4)))),
             at_least(_op("*", _i(7), _cdiv(steps, _op("max", parts, _i(1)))), _op("*", _i(8), run))]
    out = terms[0]
    for t in terms[1:]:
        out = _op("*", out, t)
    return out


def units_expr(tiles, steps, parts):
    """The split kernel's grid z: a wave's worth of units where the launch streams instead
    (prefer_expr), else split-K's parts."""
    p = prefer_expr(tiles, steps, parts)
    wave = _op("max", _i(1), _cdiv(_i(WAVE), _op("max", tiles, _i(1))))
    return _op("+", _op("*", p, wave), _op("*", _op("-", _i(1), p), parts)), p


def walk(block: int, blocks: int, tiles: int, steps: int, stream: bool = True, alone: bool = False) -> list:
    """Block `block`'s segments (tile, k0, k1) in order (module docstring); without `stream`, its
    tiles block, block + blocks, ... whole."""
    r = tail(tiles, steps, blocks, alone) if stream else 0
    d = tiles - r
    out = [(t, 0, steps) for t in range(block, d, blocks)]
    n = r * steps  # the tail's steps, counted from its first tile's
    pos, hi = block * n // blocks, (block + 1) * n // blocks
    while pos < hi:
        i = pos // steps
        end = min(hi, (i + 1) * steps)
        out.append((d + i, pos - i * steps, end - i * steps))
        pos = end
    return out


def contributors(block: int, blocks: int, tiles: int, steps: int, tile: int, alone: bool = False) -> int:
    """How many blocks after `block` (the finisher of streamed tile `tile`) run a segment of it."""
    r = tail(tiles, steps, blocks, alone)
    d, n = tiles - r, r * steps
    end = (tile - d + 1) * steps  # the tile's end, counted from the tail's first step
    return (end * blocks - 1) // n - block
