"""A tile's atomic add made by the TMA's bulk reduction (ir.BulkReduce), as the CUDA generator
writes it inside a warp-specialized consumer loop.

`schedule/warpspec.py` decides which adds go so (`WarpSpecialization.reduces`); this module only
renders them.  Where the launch encoded the map (`tl_tma`'s bit 1, the stores'): the thread that
issued the last add waits until that add has read the staging buffer, the consumers meet, write
the accumulator into the buffer (the 128-byte swizzled layout of a TMA store's, tl/tma_store.cuh
copy_f2s_staged), fence it for the async proxy and meet again; then that one thread adds the
buffer into the tensor (`tma_store_tile<..., ADD>`: cp.reduce.async.bulk.tensor .add, one box
per 128-byte column segment, one bulk group), rows outside the tensor left out by the TMA.
Without the map, the loop's per-thread reds (atomic_pairs.py) as before.

FlashAttention 3's dQ: a step's 64 x 128 f32 partial from shared memory by a few instructions of
one thread, where the reds took one 8-byte red a thread a register pair (8.6 GB of red traffic a
call at B=4 H=32 S=4096 D=128).  A turn (`order=`, turns.py) is counted only after the thread's
bulk group is complete (`bulk_turn_done_if`, or a wait before `turn_done`), so the next block's
add starts after this one's has landed.
"""
from __future__ import annotations

from .. import ir
from ..ir.warpspec import BulkReduce
from .cnames import c_name


class BulkReduceGen:
    def bulk_reduce_of(self, p) -> BulkReduce | None:
        """The recorded bulk reduction that statement `p` of the consumers' loop is, or None."""
        spec = getattr(self, "spec", None)
        if spec is None or not spec.reduces or not getattr(self, "in_consumer_loop", False):
            return None
        body = self.k.body[spec.loop].body
        return next((x for x in spec.reduces if body[x.index] is p), None)

    def bulk_reduce(self, x: BulkReduce, p: ir.Parallel, fallback) -> None:
        """Parallel loop `p`, the add `x` records (the module's docstring); `fallback()` emits
        the loop as before, for a launch without the map."""
        a: ir.Atomic = p.body[0]
        frag = self.buffers[a.value.name]
        rows, cols = frag.shape
        row_var, col_var = p.vars
        *lead, r, c = a.indices
        offs = [self.expr(e) for e in lead] + [self._offset(r, row_var), self._offset(c, col_var)]
        e = self.emit
        e("if (tl_tma & 2) {  // the tile's add through shared memory: the TMA's bulk reduction (codegen/bulk_reduce.py)")
        self.indent += 1
        e(f"float* tl_stage_r = reinterpret_cast<float*>(tl_smem + {x.offset});")
        e("if (threadIdx.x == 0) tl::tma_store_wait_read();  // the last add has read the buffer")
        e(self.block_barrier())
        e(f"tl::copy_f2s_staged<{self.fragment(frag.name).c_layout}, float, float, {rows}, {cols}>(tl_stage_r, "
          f"{c_name(frag.name)});")
        e("tl::fence_proxy_async();  // written by plain stores, read next by the TMA")
        e(self.block_barrier())
        lead_c = ", ".join(offs[:-2]) or "0"
        e(f"if (threadIdx.x == 0) tl::tma_store_tile<float, {rows}, {cols}, {rows}, {len(offs)}, true>(&tl_map{x.tensor_map}, "
          f"tl_stage_r, 0, {offs[-1]}, {offs[-2]}, {{{lead_c}}});")
        self.indent -= 1
        e("} else {")
        self.indent += 1
        fallback()
        self.indent -= 1
        e("}")

    def _offset(self, e, var: str) -> str:
        """The C of index `e` less the loop variable `var` it adds (the planner's `_offset_of`)."""
        if isinstance(e, ir.Var) and e.name == var:
            return "0"
        return self.expr(e.a)

    def bulk_reduces_end(self) -> None:
        """After the consumers' loop: the issuing thread's last adds have completed (the block's
        shared memory stays until they have read it; a turn's wait already did)."""
        spec = getattr(self, "spec", None)
        if spec is not None and spec.reduces:
            self.emit("if (threadIdx.x == 0) tl::tma_store_wait();  // the last bulk adds are done")
