"""The tile walk of a persistent warp-specialized kernel, the C: the loop over this block's tiles
that each role runs around its part of the ring (`over_tiles`), in the order the schedule chose
(`ir.TileOrder`, schedule/warpspec.py; `ir.StreamK`, schedule/stream_k.py):

- grouped (`tl::persistent_tile`): tile blockIdx.x, then every gridDim.x-th, numbered so that a
  wave of blocks shares rows of A and columns of B in L2;
- in pairs (TileOrder.pairs, `tl::paired_tile`): tiles 2u and 2u + 1, x from both ends, where the
  tiles' loop lengths grow with x (a causal attention's);
- dynamic (TileOrder.dynamic, `tl::heavy_tile`): each next tile a count of a counter in device
  memory, longest first, the producer's take handed to the consumers through a two-slot ring;
- in clusters (`tl::cluster_tile`): a cluster's blocks on consecutive tiles, sharing a multicast
  operand;
- stream-K (`tl::StreamWalk`): whole tiles, then the tail's K steps in even segments.

Each role (emit.py sets `tile_role`: "producers", the producer warpgroup's threads; "one", its TMA
thread alone; "consumers") walks the same tiles; the primitives are `tl/tma.cuh`'s."""
from __future__ import annotations

from ... import ir
from ...ir.warpspec import PRODUCER_BARRIER
from ..cnames import c_name


class TileWalk:
    """The tile loop of a persistent kernel (mixed into `WarpSpecEmission`)."""

    def over_tiles(self, before, body) -> None:
        """`body` once per tile of this block: in a persistent kernel inside the tile loop, after
        the block's indices and the statements before the pipelined loop; otherwise once."""
        if not self.persistent:
            body()
            return
        e = self.emit
        names = [c_name(self.k.block_vars[i]) if i < len(self.k.block_vars) else f"tl_b{'xyz'[i]}" for i in range(3)]
        if self.spec.stream_k is not None:  # whole tiles, then the tail's K steps in even runs (stream_k.py)
            self.stream_walk(names)
        elif self.cluster > 1:
            # the clusters walk groups of consecutive tiles; a block past the last tile still
            # copies its part for its peers and stores nothing
            C = self.cluster
            e("const int tl_tiles = tl_tiles_x * tl_tiles_y * tl_tiles_z;")
            e(f"for (int tl_pair = blockIdx.x / {C}; tl_pair < (tl_tiles + {C - 1}) / {C}; tl_pair += gridDim.x / {C}) {{")
            self.indent += 1
            self.cluster_tile(names, "tl_pair")
        elif self.dynamic_tiles:  # the next count from the counter, longest first
            self.dynamic_tile(names)
        elif self.spec.tile_order.pairs:  # tiles 2u and 2u + 1, u = blockIdx.x + k * gridDim.x
            e("for (int tl_tile = 2 * blockIdx.x; tl_tile < tl_tiles_x * tl_tiles_y * tl_tiles_z; "
              "tl_tile += (tl_tile & 1) ? 2 * gridDim.x - 1 : 1) {")
            self.indent += 1
            e(f"int {', '.join(names)};  // this block's tile: in a persistent kernel the grid counts tiles")
            e(f"tl::paired_tile(tl_tile, tl_tiles_x, tl_tiles_y, {', '.join(names)});  // x from both ends: work in pairs")
        else:
            e("for (int tl_tile = blockIdx.x; tl_tile < tl_tiles_x * tl_tiles_y * tl_tiles_z; tl_tile += gridDim.x) {")
            self.indent += 1
            e(f"int {', '.join(names)};  // this block's tile: in a persistent kernel the grid counts tiles")
            e(f"tl::persistent_tile<{self.spec.tile_order.group}>(tl_tile, tl_tiles_x, tl_tiles_y, {', '.join(names)});")
        for n in names:
            e(f"(void){n};")
        self.block(before)
        scalars = [c_name(x.name) for x in before if isinstance(x, ir.LetScalar)]
        if scalars:  # each role reads only some of them (a cast to void does not count for nvcc)
            e(f"tl::unused({', '.join(scalars)});")
        if self.spec.stream_k is not None:  # a streamed segment's steps
            e(f"const int tl_n = tl_walk.on ? tl_k1 - tl_k0 : {self.expr(self.ws_loop.stop)};")
        else:
            e(f"const int tl_n = {self.expr(self.ws_loop.stop)};")
        body()
        self.indent -= 1
        e("}")

    @property
    def dynamic_tiles(self) -> bool:
        return self.persistent and self.spec.tile_order.dynamic

    def dynamic_tile(self, names) -> None:
        """The head of a dynamic tile order's loop (TileOrder.dynamic) in this role
        (self.tile_role): the producer takes the next count from the module's counter and puts
        it in the ring's slot tl_q % 2 (its one TMA thread, or thread 0 of its warpgroup for all
        of it, which meet at a named barrier to read it), the consumers read it there; a count
        past the tiles ends the loop, the producer's taker counting its block done and the last
        block setting the counters back to 0 for the next launch."""
        e = self.emit
        counter = self.dynamic_counter()
        e("for (int tl_q = 0;; ++tl_q) {  // this block's tiles, each the next count of the counter")
        self.indent += 1
        take = ["tl::mbar_wait(tl_sched_bar + 2 + tl_q % 2, ((tl_q / 2) & 1) ^ 1);  // the consumers read the slot",
                f"tl_tile = atomicAdd({counter}, 1);",
                "tl_sched[tl_q % 2] = tl_tile;",
                "tl::mbar_arrive(tl_sched_bar + tl_q % 2);  // (a release: the count is in the slot)",
                f"if (tl_tile >= tl_tiles_x * tl_tiles_y * tl_tiles_z && atomicAdd({counter} + 1, 1) == gridDim.x - 1) {{",
                f"  {counter}[0] = 0;  // every block has taken its last count: the next launch starts at 0",
                f"  {counter}[1] = 0;",
                "}"]
        if self.tile_role == "one":
            e("int tl_tile;")
            for line in take:
                e(line)
        elif self.tile_role == "producers":
            e("int tl_tile;")
            e("if (tl_worker == 0) {")
            for line in take:
                e("  " + line)
            e("}")
            e(f"tl::bar_sync_named({PRODUCER_BARRIER}, {self.spec.producer_threads});  // the producer's threads read the count")
            e("tl_tile = tl_sched[tl_q % 2];")
        else:
            e("tl::mbar_wait(tl_sched_bar + tl_q % 2, (tl_q / 2) & 1);  // the producer's count is in the slot")
            e("const int tl_tile = tl_sched[tl_q % 2];")
            e("__syncwarp();")
            e("if (threadIdx.x % 32 == 0) tl::mbar_arrive(tl_sched_bar + 2 + tl_q % 2);")
        e("if (tl_tile >= tl_tiles_x * tl_tiles_y * tl_tiles_z) break;")
        e(f"int {', '.join(names)};  // this block's tile: in a persistent kernel the grid counts tiles")
        e(f"tl::heavy_tile(tl_tile, tl_tiles_x, tl_tiles_y, {', '.join(names)});  // x from its end down: the longest first")

    def dynamic_counter(self) -> str:
        """The C name of the module's tile counter (and its count of blocks done) for this kernel,
        declared in its preamble once (zeroed when the module loads; back at 0 after a launch)."""
        name = f"tl_dyn_{c_name(self.k.name)}"
        if not getattr(self, "_dynamic_declared", False):
            self._dynamic_declared = True
            self.preamble += ["// the dynamic tile order's counter and its count of blocks done (TileOrder.dynamic)",
                              f"__device__ int {name}[2];"]
        return name

    def k_step(self) -> str:
        """The loop variable's value at the ring's iteration tl_k of this tile (its segment's
        first step on, under stream-K)."""
        return "tl_k0 + tl_k" if self.spec.stream_k is not None else "tl_k"

    def cluster_tile(self, names, unit: str) -> None:
        """This block's tile of the cluster's `unit` (tl::cluster_tile: the cluster's tiles are
        consecutive; `tl_share` where they share a multicast operand, `tl_valid` where this
        block's is a tile, not past the last)."""
        C, e = self.cluster, self.emit
        e(f"int {', '.join(names)};  // this block's tile: in a persistent kernel the grid counts tiles")
        e(f"const bool tl_share = tl::cluster_tile<{self.spec.tile_order.group}, {C}>({unit}, tl_tiles_x, tl_tiles_y, "
          f"tl_tiles, tl_rank, {', '.join(names)});")
        e(f"const bool tl_valid = {unit} * {C} + static_cast<int>(tl_rank) < tl_tiles;")
        e("tl::unused(tl_share, tl_valid);")

    def stream_walk(self, names) -> None:
        """The loop over this block's stream-K segments (tl::StreamWalk, schedule/stream_k.py):
        tile tl_tile's K steps tl_k0 .. tl_k1 - 1; in clusters of C the walk's units are the
        clusters and its tiles C consecutive tiles, each block taking its own (cluster_tile) with
        its peers' K steps, so that a multicast operand stays shared."""
        sk, e, C = self.spec.stream_k, self.emit, self.cluster
        from ...schedule.split_k import MIN_STEPS
        if sk.sized:  # the grid's z sizes the launch
            tiles, on, alone = "tl_tiles_x * tl_tiles_y", "true", "true"
        elif sk.prefer is not None:  # split-K's z: its parts, or a wave's worth where streamed instead
            e(f"const bool tl_sk_prefer = ({self.expr(sk.prefer)}) != 0;  // streamed rather than split (stream_k.prefer)")
            tiles, on, alone = "tl_tiles_x * tl_tiles_y * (tl_sk_prefer ? 1 : tl_tiles_z)", \
                "tl_sk_prefer || tl_tiles_z == 1", "tl_sk_prefer"
        else:
            tiles, on, alone = "tl_tiles_x * tl_tiles_y * tl_tiles_z", "tl_tiles_z == 1", "false"
        if C > 1:
            e(f"const int tl_tiles = {tiles};")
            e(f"tl::StreamWalk tl_walk((tl_tiles + {C - 1}) / {C}, {self.expr(sk.steps)}, gridDim.x / {C}, blockIdx.x / {C}, "
              f"{on}, {alone}, {sk.slots}, {MIN_STEPS});")
        else:
            e(f"tl::StreamWalk tl_walk({tiles}, {self.expr(sk.steps)}, gridDim.x, blockIdx.x, {on}, {alone}, "
              f"{sk.slots}, {MIN_STEPS});")
        e("int tl_tile = 0, tl_k0 = 0, tl_k1 = 0;  // this block's segment: tile tl_tile's K steps tl_k0 .. tl_k1 - 1"
          + (f" (in clusters: the cluster's {C} tiles)" if C > 1 else ""))
        e("while (tl_walk.next(tl_tile, tl_k0, tl_k1)) {")
        self.indent += 1
        if C > 1:
            self.cluster_tile(names, "tl_tile")
        else:
            e(f"int {', '.join(names)};  // the segment's tile: in a persistent kernel the grid counts tiles")
            e(f"tl::persistent_tile<{self.spec.tile_order.group}>(tl_tile, tl_tiles_x, tl_tiles_y, {', '.join(names)});")
