"""The interpreter of a warp-specialized kernel (`Kernel.warp_spec`, tlc/ir/warpspec.py): runs
what the schedule recorded, so that a wrong decision of `schedule/warpspec.py` shows on the
CPU as a difference from NumPy.

Each block's two roles keep their own scalars and registers.  The ring's staged buffers are
one array each of the stages the shared-memory plan gave them, a stage `stage_elems` elements
after the last; the producer copies iteration `it`'s tiles into stage `it % stages` and the
consumers read that stage.  The producer runs as far ahead as the empty barriers let it (up
to `stages` iterations not yet released, a stage released `release_lag` iterations late), so
a stage that two iterations in flight share is overwritten before it is read, as on the GPU.  (A
ring whose late loads have barriers of their own, `late_loads`, frees its other loads' stage an
iteration earlier on the GPU; the consumers run the deferred gemm in place here, so holding the
whole stage until the late release reads the same tiles.)

A persistent kernel runs `PERSISTENT_BLOCKS` blocks per cluster rank, each walking the tiles
in the recorded order (`persistent_tile`/`cluster_tile`, the Python of tl/tma.cuh's), the
producer running ahead into the next tile's stages; a multicast copy puts into each stage the
rows that each block of the cluster loads for all of them, from that block's own tile.  A
streamed launch (ir.StreamK) walks schedule/stream_k.py's segments on its blocks, the loop's
steps k0 .. k1 - 1 of each; the finishers add their contributors' slots once every block has run.
"""
from __future__ import annotations

import numpy as np

from ..ir.nodes import Fill
from ..ir.warpspec import WarpSpecialization
from . import numerics as nx
from .args import InterpError

PERSISTENT_BLOCKS = 3  # blocks (per rank of a cluster) of a persistent launch on the CPU


def persistent_tile(t: int, group: int, tiles_x: int, tiles_y: int) -> tuple[int, int, int]:
    """Tile `t` of a persistent walk: (x, y, z), `group` rows of tiles at a time."""
    per_z = tiles_x * tiles_y
    z, r = divmod(t, per_z)
    in_group = group * tiles_x
    first_y = r // in_group * group
    rows = min(tiles_y - first_y, group)
    i = r % in_group
    return i // rows, first_y + i % rows, z


def paired_tile(t: int, tiles_x: int, tiles_y: int) -> tuple[int, int, int]:
    """Tile `t` of a walk in pairs (TileOrder.pairs): x from both ends of its row, then y, z."""
    q, i = divmod(t, tiles_x)
    return (i // 2 if i % 2 else tiles_x - 1 - i // 2), q % tiles_y, q // tiles_y


def cluster_tiles(pair: int, group: int, cluster: int, extents) -> tuple[list, bool]:
    """The tiles of the cluster's blocks (rank order; past the last tile y = tiles_y) and
    whether they all have the same x and z (the cluster then multicasts)."""
    tx, ty, tz = extents
    tiles = tx * ty * tz
    out = [persistent_tile(pair * cluster, group, tx, ty)]
    for r in range(1, cluster):
        t = pair * cluster + r
        out.append(persistent_tile(t, group, tx, ty) if t < tiles else (out[0][0], ty, out[0][2]))
    share = all(x == out[0][0] and z == out[0][2] for x, _, z in out)
    return out, share


def heavy_tile(t: int, tiles_x: int, tiles_y: int) -> tuple[int, int, int]:
    """Count `t` of a dynamic tile order (TileOrder.dynamic): x from its end down, then y, z."""
    q, i = divmod(t, tiles_x)
    return tiles_x - 1 - i, q % tiles_y, q // tiles_y


def block_walk(block: int, blocks: int, ws: WarpSpecialization, extents) -> list:
    """(tile, valid, the cluster's tiles, share) for each tile a persistent kernel's block
    `block` of `blocks` takes, in order.  A dynamic order's counts go to the blocks as on a GPU
    whose blocks finish their tiles in turn: block b takes counts b, b + blocks, ..."""
    tx, ty, tz = extents
    tiles = tx * ty * tz
    order = ws.tile_order
    if order.dynamic:
        return [(tile, True, [tile], False) for t in range(block, tiles, blocks) for tile in [heavy_tile(t, tx, ty)]]
    if order.pairs:  # tiles 2u and 2u + 1 together, u = block + k * blocks
        return [(tile, True, [tile], False) for u in range(block, -(-tiles // 2), blocks)
                for t in (2 * u, 2 * u + 1) if t < tiles for tile in [paired_tile(t, tx, ty)]]
    if order.cluster == 1:
        walk = []
        for t in range(block, tiles, blocks):
            tile = persistent_tile(t, order.group, tx, ty)
            walk.append((tile, True, [tile], False))
        return walk
    C, rank = order.cluster, block % order.cluster
    walk = []
    for pair in range(block // C, -(-tiles // C), blocks // C):
        peers, share = cluster_tiles(pair, order.group, C, extents)
        walk.append((peers[rank], pair * C + rank < tiles, peers, share))
    return walk


def stream_walk(m, block: int, blocks: int, ws: WarpSpecialization, extents) -> list | None:
    """Block `block`'s walk of a streamed launch (ir.StreamK, schedule/stream_k.py): (tile,
    True, [tile], False, (k0, k1)) for each segment, or None where the launch does not stream
    (a split-K launch of more than one part)."""
    from ..schedule import stream_k
    sk = ws.stream_k
    tx, ty, tz = extents
    if sk is None:
        return None
    m.env = dict(m.base_env)
    prefer = sk.prefer is not None and int(m.eval(sk.prefer)) != 0  # streamed rather than split
    if not (sk.sized or prefer or tz == 1):
        return None
    steps = int(m.eval(sk.steps))
    C, tiles = ws.tile_order.cluster, tx * ty * (1 if sk.sized or prefer else tz)
    walk = []
    for t, k0, k1 in stream_k.walk(block // C, blocks // C, -(-tiles // C), steps, alone=sk.sized or prefer):
        if C == 1:
            x, y, z = persistent_tile(t, ws.tile_order.group, tx, ty)
            walk.append(((x, y, z), True, [(x, y, z)], False, (t, k0, k1, steps)))
            continue
        # the cluster's tiles t * C .. (tl::cluster_tile), this block's its own, the cluster's K steps
        peers, share = cluster_tiles(t, ws.tile_order.group, C, (tx, ty, tiles // (tx * ty)))
        walk.append((peers[block % C], t * C + block % C < tiles, peers, share, (t, k0, k1, steps)))
    return walk


def run_warp_specialized(m, extents) -> None:
    """The machine `m`'s kernel over its grid (`extents`, x first) as its warp spec says."""
    ws = m.k.warp_spec
    m.split_k = m.stream_k = None
    if ws.tile_order is None:
        for bz in range(extents[2]):
            for by in range(extents[1]):
                for bx in range(extents[0]):
                    _Block(m, ws, [((bx, by, bz), True, [(bx, by, bz)], False)]).run()
        return
    blocks = PERSISTENT_BLOCKS * ws.tile_order.cluster
    if ws.stream_k is not None and stream_walk(m, 0, blocks, ws, extents) is not None:
        m.env = dict(m.base_env)
        alone = ws.stream_k.sized or (ws.stream_k.prefer is not None and int(m.eval(ws.stream_k.prefer)) != 0)
        C = ws.tile_order.cluster
        tiles = extents[0] * extents[1] * (1 if alone else extents[2])
        m.stream_k = _StreamK(blocks, -(-tiles // C), alone)
        for b in range(blocks):
            _Block(m, ws, stream_walk(m, b, blocks, ws, extents), block=b).run()
        from ..schedule import stream_k
        for env, regs, b, t in m.stream_k.finishers:  # each once every block has run: its contributors' slots
            m.env, m.buffers = env, regs
            acc = regs[ws.stream_k.acc]
            steps = int(m.eval(ws.stream_k.steps))
            n = stream_k.contributors(b // C, blocks // C, m.stream_k.tiles, steps, t, m.stream_k.alone)
            for j in range(1, n + 1):  # in clusters, the same rank's block of each next cluster
                acc[...] = acc + m.stream_k.slots.pop(b + j * C)
            m.block(m.k.body[ws.loop + 1:], True)
        return
    m.split_k = _SplitK(extents[2]) if ws.split_k is not None else None
    for b in range(blocks):
        _Block(m, ws, block_walk(b, blocks, ws, extents)).run()
    if m.split_k is not None:  # the last parts' fixups, once every part has stored its slot
        for env, regs in m.split_k.last:
            m.env, m.buffers = env, regs
            acc = regs[ws.split_k.acc]
            x, y = (int(env[v]) for v in m.k.block_vars[:2])
            for s in range(m.split_k.parts - 1):
                acc[...] = acc + m.split_k.slots.pop((x, y, s))
            m.block(m.k.body[ws.loop + 1:], True)


class _SplitK:
    """Split-K on the CPU (ir.SplitK): the blocks run one after another, so the parts before
    the last store their slots as they come and each tile's last part waits here, its state
    kept, until every block has run; then its fixup adds the slots in the parts' order."""

    def __init__(self, parts: int):
        self.parts = parts
        self.slots: dict = {}  # (x, y, part) -> that part's accumulator
        self.last: list = []  # (env, registers) of each tile's last part


class _StreamK:
    """Stream-K on the CPU (ir.StreamK): the blocks run one after another, so a contributor
    stores its block's slot as it comes and each finisher waits here, its state kept, until
    every block has run; then it adds its contributors' slots in block order."""

    def __init__(self, blocks: int, tiles: int, alone: bool):
        self.blocks, self.tiles, self.alone = blocks, tiles, alone
        self.slots: dict = {}  # block -> its contributor segment's accumulator
        self.finishers: list = []  # (env, registers, block, tile) of each finisher


class _Block:
    def __init__(self, m, ws: WarpSpecialization, walk, block: int = 0):
        self.m, self.ws, self.walk, self.block_index = m, ws, walk, block
        k = m.k
        self.loop, self.before, self.after = k.body[ws.loop], k.body[:ws.loop], k.body[ws.loop + 1:]
        self.shapes = {b.name: b for b in k.buffers}
        # a staged buffer: the bytes the shared-memory plan gave it, as elements
        staged = [self.shapes[x.buffer] for x in ws.loads]
        self.ring = {b.name: m.alloc(b.dtype, (b.layout.bytes // b.dtype.itemsize,)) for b in staged}
        self.produced = self.released = 0

    def stage(self, name: str, it: int, elems: int) -> np.ndarray:
        """Stage `it % stages` of the staged buffer `name`, as its tile (a view)."""
        b, flat = self.shapes[name], self.ring[name]
        s = it % self.ws.stages
        size = int(np.prod(b.shape))
        if s * elems + size > flat.size:
            raise InterpError(f"kernel '{self.m.k.name}': stage {s} of '{name}' starts {s * elems} elements in, "
                              f"past the {b.layout.stages} stages of {flat.size} elements the shared memory "
                              "plan gave it (the warp specialization's ring does not fit its buffers)")
        return flat[s * elems:s * elems + size].reshape(b.shape)

    def enter(self, tile, buffers) -> dict:
        """The role's state at a tile: the block indices bound, its registers `buffers`."""
        m = self.m
        m.env = dict(m.base_env)
        for name, v in zip(m.k.block_vars, tile):
            m.env[name] = np.int32(v)
        m.buffers = buffers
        return m.env

    def run(self) -> None:
        m, ws, loop = self.m, self.ws, self.loop
        consumer_regs = {b.name: m.alloc(b.dtype, b.shape) for b in m.k.buffers}
        producer = self.producer()
        start, stop = ws.consumer
        it = 0
        for tile, valid, _, _, *seg in self.walk:
            env = self.enter(tile, consumer_regs)
            m.block(self.before, True)
            k0, k1 = (seg[0][1], seg[0][2]) if seg else (0, int(m.eval(loop.stop)))
            n = k1 - k0
            for kk in range(k0, k1):
                self.run_producer(producer)
                if self.produced <= it:
                    raise InterpError(f"kernel '{m.k.name}': the consumers wait on iteration {it} of the ring, "
                                      f"which its producer never fills")
                m.env, m.buffers = env, consumer_regs
                for x in ws.loads:
                    consumer_regs[x.buffer] = self.stage(x.buffer, it, x.stage_elems)
                env[loop.var] = np.int32(kk)
                m.block(loop.body[start:stop], True)
                if kk - k0 >= ws.release_lag:
                    self.released = it + 1 - ws.release_lag
                it += 1
            # the last stages, once the tile's work is done; where the epilogue stages its output
            # in the last one (StagedStore.in_stage), that one once the store has read it
            in_stage = ws.store is not None and ws.store.in_stage is not None and n > 0
            self.released = it - 1 if in_stage else it
            # the producer may run into the next tile's stages while the consumers finish this
            # one; after the loop a staged buffer's name is its first stage again, as in the C
            self.run_producer(producer)
            m.env, m.buffers = env, consumer_regs
            for x in ws.loads:
                consumer_regs[x.buffer] = self.stage(x.buffer, 0, x.stage_elems)
            if seg and not (k0 == 0 and k1 == seg[0][3]):  # a streamed segment of part of a tile
                if valid:  # (a block past the last tile stores nothing)
                    self.stream_part(env, consumer_regs, seg[0])
            elif valid and getattr(m, "split_k", None) is not None and m.split_k.parts > 1:
                self.split_part(env, consumer_regs)
            elif valid and in_stage:
                store = ws.store.index - ws.loop - 1  # its position after the loop
                m.block(self.after[:store], True)
                self.store_in_stage(producer, env, consumer_regs, it - 1)
                m.block(self.after[store + 1:], True)
            elif valid:
                m.block(self.after, True)
            self.released = it
            self.run_producer(producer)

    def store_in_stage(self, producer, env, regs, last: int) -> None:
        """The epilogue's staged store (StagedStore.in_stage): the accumulator rounded into the
        ring buffer's stage of iteration `last`, the producer let run as far as its barriers
        allow (that stage still held), then the tensor's tile stored from the stage."""
        m, st = self.m, self.ws.store
        c = m.k.body[st.index]
        x = self.ws.loads[st.in_stage]
        acc = regs[c.src.name]
        rows, cols = acc.shape
        s = last % self.ws.stages
        staged = self.ring[x.buffer][s * x.stage_elems:s * x.stage_elems + rows * cols].reshape(rows, cols)
        staged[...] = nx.cast(acc, m.dtypes[x.buffer])  # rounded as a copy into the buffer rounds
        self.run_producer(producer)
        m.env, m.buffers = env, regs
        saved, regs[c.src.name] = acc, staged.astype(acc.dtype)
        m.s_copy(c, True)
        regs[c.src.name] = saved

    def split_part(self, env, regs) -> None:
        """A split-K unit after its loop (_SplitK): a part before the last stores its slot; the
        last keeps its state for the fixup after every block."""
        sk, state = self.ws.split_k, self.m.split_k
        part = int(env[sk.var])
        if part < state.parts - 1:
            x, y = (int(env[v]) for v in self.m.k.block_vars[:2])
            state.slots[(x, y, part)] = regs[sk.acc].copy()
        else:
            state.last.append((dict(env), {k: v.copy() for k, v in regs.items()}))

    def stream_part(self, env, regs, seg) -> None:
        """A streamed segment after its loop (_StreamK): a contributor (k0 > 0) stores its block's
        slot; a finisher keeps its state for the fixup after every block."""
        t, k0, _, _ = seg
        state = self.m.stream_k
        if k0 > 0:
            state.slots[self.block_index] = regs[self.ws.stream_k.acc].copy()
        else:
            state.finishers.append((dict(env), {k: v.copy() for k, v in regs.items()}, self.block_index, t))

    def run_producer(self, producer) -> None:
        """As far as the empty barriers let it: `stages` iterations past the last released."""
        while self.produced < self.released + self.ws.stages and next(producer, None) is not None:
            pass

    def producer(self):
        """The producer's role, a generator: each step fills one iteration's stage."""
        m, ws, loop = self.m, self.ws, self.loop
        regs = {b.name: m.alloc(b.dtype, b.shape) for b in m.k.buffers}
        # the consumers clear their own registers and make the copies before the loop
        scalars = [s for i, s in enumerate(self.before) if not isinstance(s, Fill) and i not in ws.consumer_only]
        it = 0
        for tile, _, peers, share, *seg in self.walk:
            envs = []
            for peer in peers:  # each block of the cluster's scalars at its own tile (a multicast's parts)
                envs.append(self.enter(peer, regs))
                m.block(scalars, True)
            env = envs[peers.index(tile)] if tile in peers else self.enter(tile, regs)
            m.env = env
            k0, k1 = (seg[0][1], seg[0][2]) if seg else (0, int(m.eval(loop.stop)))
            for kk in range(k0, k1):
                for x in ws.loads:
                    stage = self.stage(x.buffer, it, x.stage_elems)
                    if not (x.multicast and share):
                        self.copy(env, regs, x, kk, stage)
                        continue
                    part = x.rows // len(peers)
                    for r, peer_env in enumerate(envs):  # block r loads rows [r * part, (r + 1) * part)
                        tile_of_r = np.empty_like(stage)
                        self.copy(peer_env, regs, x, kk, tile_of_r)
                        stage[r * part:(r + 1) * part] = tile_of_r[r * part:(r + 1) * part]
                it += 1
                self.produced = it
                yield it

    def copy(self, env, regs, x, kk, into) -> None:
        m = self.m
        env[self.loop.var] = np.int32(kk)
        m.env, m.buffers = env, regs
        regs[x.buffer] = into
        if x.gather or x.im2col:  # a row gather, an im2col loop: the parallel loop as written
            m.block([self.loop.body[x.index]], True)
        else:
            m.s_copy(self.loop.body[x.index], True)
