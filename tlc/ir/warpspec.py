"""The tile IR of a warp-specialized kernel: what `schedule/warpspec.py` decided, recorded on
the `Kernel` (`Kernel.warp_spec`) for the code generator to render (`codegen/warpspec/`), the
interpreter to run (`interp/ring.py`) and `--emit ir` to show (`printer.py`).

One pipelined loop of the kernel's body becomes a ring of `stages` shared-memory stages: a
producer warpgroup (`producer_threads` more threads than the kernel asks for) copies each
iteration's tiles into stage `it % stages` of their buffers and completes that stage's "full"
mbarrier; the consumer warpgroups (the kernel's own threads) wait on it, run the loop's other
statements on that stage and arrive on its "empty" mbarrier, which the producer waits on before
it writes the stage again.  `it` counts iterations across the tiles of a persistent kernel.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..dtypes import DType
from .nodes import Node


@dataclass(frozen=True)
class TensorMapSpec(Node):
    """One tensor map the launch passes: a tensor parameter seen by the TMA as a row-major
    tensor of its own rank, copied in boxes of `box_rows` x `box_cols` elements (one 128-byte
    column segment of a tile; leading dimensions 1)."""

    param: str
    dtype: DType
    shape: tuple  # the parameter's dims, ints or shape symbols, outermost first
    box_rows: int
    box_cols: int
    store: bool = False  # the epilogue stores through this map (tl_tma's bit 1), else copies load (bit 0)


@dataclass(frozen=True)
class StageLoad(Node):
    """The producer's copy at `index` of the ring loop's body: a tile of `rows` x `cols` into
    stage `it % stages` of `buffer`, whose stages lie `stage_elems` elements apart, through
    tensor map `tensor_map`; `multicast`: each block of the cluster loads 1/cluster of its rows
    into every block's stage (the tile is the same for all of them)."""

    index: int
    buffer: str
    rows: int
    cols: int
    stage_elems: int
    tensor_map: int
    multicast: bool = False


@dataclass(frozen=True)
class StagedStore(Node):
    """The epilogue's `copy(acc, C[...])` at `index` of the kernel's body, made through shared
    memory: each consumer warpgroup stages its `rows` rows at byte `offset` (`nbytes` in all)
    and the TMA stores them through map `tensor_map`."""

    index: int
    tensor_map: int
    rows: int
    offset: int
    nbytes: int


@dataclass(frozen=True)
class TileOrder(Node):
    """A persistent kernel: the grid counts tiles and each block walks them, `group` rows of
    tiles at a time (so that a wave of blocks shares rows of A and columns of B in L2), in
    clusters of `cluster` blocks that take consecutive tiles."""

    group: int
    cluster: int = 1


@dataclass(frozen=True)
class WarpSpecialization(Node):
    """The roles, the ring and its barriers of a warp-specialized kernel (module docstring)."""

    loop: int  # index of the ring's pipelined loop in the kernel's body
    stages: int
    loads: tuple[StageLoad, ...]  # the producer's role: the loop body's leading copies
    consumer: tuple[int, int]  # the consumers' role: loop.body[start:stop] (the copies' syncs dropped)
    producer_threads: int
    producer_registers: int  # setmaxnreg.dec: it only computes addresses
    consumer_registers: int  # setmaxnreg.inc: the registers the producer gave away
    barriers: int  # byte offset of the full mbarriers (8 bytes per stage), the empty ones after them
    full_arrivals: int  # on a stage's full barrier when the producer copies element by element (TMA: 1)
    empty_arrivals: int  # on a stage's empty barrier: one per consumer warp (of the cluster)
    release_lag: int  # 1: a stage is released one iteration late (its wgmma stays in flight)
    tensor_maps: tuple[TensorMapSpec, ...]
    tile_order: TileOrder | None = None  # persistent, else one tile per block
    store: StagedStore | None = None

    @property
    def ring_end(self) -> int:
        """Byte offset past the ring's barriers."""
        return self.barriers + 16 * self.stages

    def stage_buffers(self) -> dict:
        """Staged buffer -> elements between its stages."""
        return {x.buffer: x.stage_elems for x in self.loads}
