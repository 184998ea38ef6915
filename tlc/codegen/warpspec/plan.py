"""Warp-specialized pipelines, read from the IR: the objects the emission walks, built from the
kernel's `ir.WarpSpecialization` (decided by `schedule/warpspec.py`; codegen decides nothing
here), the block size and the tensor maps the launch is asked for."""

from __future__ import annotations

from ... import ir
from ...frozen import record
from ...ir.warpspec import TensorMapSpec, tma_dtype
from ...schedule.warpspec import consumer_registers
from ..copies import PipelinePlan

__all__ = ["TensorMapSpec", "WarpSpecPlanning", "consumer_registers", "tma_dtype"]


@record
class TmaLoad:
    copy: ir.Copy
    map_index: int
    rows: int
    cols: int
    multicast: bool = False  # the same tile for every block of the cluster: each loads a part for all
    gather: bool = False  # `copy` is a row gather (a parallel loop) the producer's threads make by cp.async
    row_axis: int | None = None  # the tensor's dimension the tile's rows run along (None: the one before the last)
    flat: bool = False  # a 1-D buffer of `cols` elements: one unswizzled box along the last dimension
    im2col: bool = False  # `copy` is an im2col loop (ir.Im2colTile) the TMA loads in its im2col mode
    tiled: bool = False  # ... or, its window the identity, in tiled boxes of the image as [N * H * W, C]


@record
class StagedStore:
    """The epilogue's `copy(acc, C[...])` with where its staging buffer lies (ir.StagedStore)."""

    copy: ir.Copy
    map_index: int
    rows: int  # rows of the tile per consumer warpgroup (one TMA box high)
    offset: int  # byte offset of the staging buffer (1024-aligned), after the ring's barriers
    nbytes: int
    in_stage: int | None = None  # in load in_stage's buffer, at its last iteration's stage (ir.StagedStore)
    more: tuple = ()  # further copies staged alike, each nbytes after the one before (ir.StagedStore.more)
    reuse: bool = False  # or all in one buffer, each after the store before has read it (ir.StagedStore.reuse)


@record
class WarpSpecPlan:
    pipeline: PipelinePlan
    loads: list  # TmaLoad per producer copy
    overlap: bool  # the loop computes one wgmma gemm, kept in flight across iterations


class WarpSpecPlanning:
    """The kernel's warp specialization as the emission walks it (mixed into `Sm90` through
    `WarpSpecialized`)."""

    ws: WarpSpecPlan | None = None  # the specialized loop's plan, None when the kernel has none
    staged_epilogue: StagedStore | None = None  # the epilogue's store through shared memory and the TMA

    @property
    def ws_loop(self) -> ir.For | None:
        return self.ws.pipeline.loop if self.ws is not None else None

    def find_warp_specialized_loop(self) -> None:
        """The statements the kernel's `warp_spec` names, found in its body."""
        spec: ir.WarpSpecialization | None = self.k.warp_spec
        self.spec = spec
        self.ws, self.persistent, self.cluster, self.staged_epilogue = None, False, 1, None
        self.tensor_maps = list(spec.tensor_maps) if spec is not None else []
        if spec is None:
            return
        loop = self.k.body[spec.loop]
        start, stop = spec.consumer
        pipeline = PipelinePlan(loop, spec.stages, [loop.body[x.index] for x in spec.loads],
                                list(loop.body[start:stop]), spec.stage_buffers())
        loads = [TmaLoad(loop.body[x.index], x.tensor_map, x.rows, x.cols, x.multicast, x.gather, x.row_axis, x.flat,
                         x.im2col, x.tiled)
                 for x in spec.loads]
        # overlap: the body is one wgmma gemm, kept in flight (a stage released late with more
        # statements and no deferred gemm carries the body's last gemms: codegen/sm90.py)
        self.ws = WarpSpecPlan(pipeline, loads, spec.release_lag == 1 and spec.deferred is None and stop - start == 1)
        self.persistent = spec.tile_order is not None
        self.cluster = spec.tile_order.cluster if self.persistent else 1
        st = spec.store
        if st is not None:
            self.staged_epilogue = StagedStore(self.k.body[st.index], st.tensor_map, st.rows, st.offset, st.nbytes,
                                               st.in_stage, tuple(self.k.body[i] for i in st.more), st.reuse)

    @property
    def ring_barriers(self) -> int:
        return self.spec.barriers

    @property
    def ring_end(self) -> int:
        return self.spec.ring_end

    @property
    def launch_threads(self) -> int:
        return self.k.threads + (self.spec.producer_threads if self.ws_loop is not None else 0)
