"""A tile's atomic add made by the TMA's bulk reduction (ir.BulkReduce), as the CUDA generator
writes it inside a warp-specialized consumer loop.

`schedule/warpspec.py` decides which adds go so (`WarpSpecialization.reduces`); this module only
renders them.  Where the launch encoded the map (`tl_tma`'s bit 1, the stores'): the thread that
issued the last add waits until that add has read the staging buffer and the consumers meet (at
the last barrier the consumers keep before the add in each iteration, where there is one: that
thread waits right before it; else a barrier of their own), write the accumulator into the
buffer (the 128-byte swizzled layout of a TMA store's, tl/tma_store.cuh copy_f2s_staged), fence
it for the async proxy and meet again; then that one thread adds the buffer into the tensor
(`tma_store_tile<..., ADD>`: cp.reduce.async.bulk.tensor .add, one box per 128-byte column
segment, one bulk group), rows outside the tensor left out by the TMA.  An ordered add's turn
(`order=`) is waited for by that thread before the meeting that ends the staging, and counted
by it once its bulk group is complete: the block's two meetings around the reds' turn are left
out (the spin and the add in one block of thread 0 spilled 56-80 bytes of the consumers'
registers, ptxas sm_90a, D=128).  Without the map, the loop's per-thread reds (atomic_pairs.py)
and the block's meetings around the turn as before.  Where the schedule gave the add two
buffers (`BulkReduce.buffers`), step `tl_it` stages into buffer `tl_it & 1` and its wait lets
the last step's add still read the other (`bulk_wait_read<1>`: one bulk group a step).

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
        if x.buffers == 2:
            e(f"float* tl_stage_r = reinterpret_cast<float*>(tl_smem + {x.offset} + (tl_it & 1) * {x.nbytes // 2});"
              "  // this step's of two buffers")
        else:
            e(f"float* tl_stage_r = reinterpret_cast<float*>(tl_smem + {x.offset});")
        if self.read_sync(x) is None:
            e(f"if (threadIdx.x == 0) {self._wait_read(x)}  // the last add of this buffer has read it")
            e(self.block_barrier())
        e(f"tl::copy_f2s_staged<{self.fragment(frag.name).c_layout}, float, float, {rows}, {cols}>(tl_stage_r, "
          f"{c_name(frag.name)});")
        e("tl::fence_proxy_async();  // written by plain stores, read next by the TMA")
        turn, self.bulk_turn_wait = getattr(self, "bulk_turn_wait", None), None
        if turn is not None:
            e(f"if (threadIdx.x == 0) {turn}  // the turn, before the meeting that ends the staging")
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

    def read_sync(self, x: BulkReduce) -> int | None:
        """The last sync the consumers keep before add `x` in each iteration (an index of the
        loop's body), right before which the issuing thread waits for the last add to have read
        the buffer; None: the add meets at a barrier of its own for it."""
        spec = self.spec
        if not spec.consumer_barrier:
            return None
        return max((i for i in spec.kept_syncs if spec.consumer[0] <= i < x.index), default=None)

    def before_kept_sync(self, s) -> None:
        """Before kept sync `s` of the consumers' loop: where it is an add's `read_sync`, the
        issuing thread's wait for the last add to have read the staging buffer."""
        body = self.k.body[self.spec.loop].body
        for x in self.spec.reduces:
            if self.read_sync(x) is not None and body[self.read_sync(x)] is s:
                self.emit(f"if (threadIdx.x == 0) {self._wait_read(x)}  // the last bulk add of this step's buffer has read it")

    @staticmethod
    def _wait_read(x: BulkReduce) -> str:
        """The issuing thread's wait until the buffer this step stages into is read: every add
        of one buffer, all but the last step's of two (one bulk group a step)."""
        return "tl::bulk_wait_read<1>();" if x.buffers == 2 else "tl::tma_store_wait_read();"

    def bulk_of_turn(self, s) -> BulkReduce | None:
        """The bulk add that turn statement `s` (a turn_wait right before it, a turn_done right
        after it, in the consumers' loop) waits around, or None."""
        spec = getattr(self, "spec", None)
        if spec is None or not spec.reduces or not getattr(self, "in_consumer_loop", False):
            return None
        body = self.k.body[spec.loop].body
        i = next((j for j, t in enumerate(body) if t is s), None)
        if i is None:
            return None
        j = i + 1 if s.kind == "turn_wait" else i - 1
        return next((x for x in spec.reduces if x.index == j), None)

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
