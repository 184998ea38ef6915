"""Reductions of a tile along one dimension (reduce_sum/max/min/absmax): which steps of
templates/tl/reduce.cuh run, decided by enumerating the layouts.

A fragment source reduces into the slots of its replicated layout (`tl::Kept`, the layout a
reduction's destination takes): each thread combines its registers per slot, then the lanes
that hold the same kept index (shuffles over the lane bits found here).  When every holder of
an index is in one such group and the destination is that replicated layout, that is all;
otherwise the partials meet in a scratch array in shared memory: one row per warp when whole
warps share the indices, one row per block of warps when the threads split into equal blocks
that each hold every index once (the warpgroups of a column-split wgmma accumulator), else one
row combined by atomics.  Two scratch arrays alternate, so a
reduction into registers costs one `__syncthreads` (see `scratch`).  A shared source reduces straight
into the scratch row.  The C of every step is in reduce.cuh; this file only chooses.
"""
from __future__ import annotations

from .. import ir
from ..schedule.layout import Replicated
from ..schedule.reduce_slots import slot_plan
from .cexpr import CodegenError
from .cnames import c_bool, c_name, c_type

_OPS = {"sum": "tl::Op::sum", "max": "tl::Op::max", "min": "tl::Op::min", "absmax": "tl::Op::absmax"}


def _acc_type(dt, span) -> str:
    if dt.is_float:
        return "double" if dt.name == "f64" else "float"
    if dt.name == "u32":  # max and min of values past 2^31 - 1: an int saw them negative
        return "unsigned"
    if dt.bits <= 32:
        return "int"
    raise CodegenError(f"reductions of {dt} are not supported by the CUDA target yet", span)


class ReduceGen:
    def stmt_Reduce(self, r: ir.Reduce) -> None:
        src, dst = self.buffers[r.src], self.buffers[r.dst]
        acc = _acc_type(src.dtype, r.span)
        op = _OPS[r.kind]
        self.emit(f"{{  // reduce_{r.kind}({r.src} -> {r.dst}, dim={r.dim})")
        self.indent += 1
        if src.scope == "fragment":
            self.reduce_fragment(r, src, dst, acc, op)
        else:
            self.reduce_shared(r, src, dst, acc, op)
        self.indent -= 1
        self.emit("}")

    def scratch(self, count: int, acc: str) -> str:
        """A scratch array after the planned shared memory.  There are two, used in turn (the
        kernel's `tl_red_phase` flips at each reduction through scratch), so a reduction needs
        one barrier, between its partials' writes and their reads: the next reduction writes the
        other array, and the one after that passes a barrier of the one between, which every
        thread reaches only after its reads.  (An exchange of fragments through shared memory
        reuses the space and begins with a barrier: `exchange_in`.)"""
        size = -(-count * (8 if acc == "double" else 4) // 16) * 16
        self.red_stride = max(self.red_stride, size)
        self.emit("tl_red_phase ^= 1;")
        return f"reinterpret_cast<{acc}*>(tl_smem + {self.red_base()} + tl_red_phase * TL_RED_STRIDE)"

    def red_base(self) -> int:
        """Where the two scratch arrays start: after the kernel's buffers, and in a warp-specialized
        kernel whose consumers reduce through them, after its ring's barriers, 16-aligned."""
        spec = getattr(self, "spec", None)
        if spec is not None and spec.consumer_barrier:
            return -(-spec.ring_end // 16) * 16
        return self.k.smem_bytes

    def red_barrier(self) -> str:
        """The template argument that names the barrier a reduction's partials meet at: the
        consumers' own inside a warp-specialized loop whose consumers meet (else the block's)."""
        spec = getattr(self, "spec", None)
        if getattr(self, "in_consumer_loop", False) and spec is not None and spec.consumer_barrier:
            return f", {spec.consumer_barrier}"
        return ""

    def reduce_fragment(self, r, src, dst, acc, op) -> None:
        if isinstance(src.layout, Replicated):
            raise CodegenError(f"reducing the replicated fragment '{r.src}' is not supported by the CUDA target yet", r.span)
        if len(src.shape) > 2:
            raise CodegenError("reductions of tiles of rank > 2 are not supported by the CUDA target yet", r.span)
        kept = Replicated(src.layout, (r.dim,))
        src_alias, kept_alias = self.c_layout(src.layout), self.c_layout(kept)
        nkept = 1 if len(src.shape) == 1 else src.shape[1 - r.dim]
        plan = slot_plan(kept, self.k.threads)
        self.emit(f"{acc} tl_part[{kept_alias}::REGS];")
        self.emit(f"tl::reduce_slots<{op}, {src_alias}, {kept_alias}, {plan.mask}u>(tl_part, {c_name(r.src)});")
        if plan.complete and dst.scope == "fragment" and dst.layout == kept:
            self.emit(f"tl::reduce_assign<{op}, {c_bool(r.clear)}, {kept_alias}>({c_name(r.dst)}, tl_part);")
            return
        if plan.warp_rows:
            parts = self.k.threads // 32
            red = self.scratch(parts * nkept, acc)
            self.emit(f"tl::reduce_warps_to_scratch<{op}, {kept_alias}, {self.k.threads}, {nkept}, "
                      f"{c_bool(not plan.every_warp)}{self.red_barrier()}>({red}, tl_part);")
        elif plan.parts:
            parts = plan.parts
            red = self.scratch(parts * nkept, acc)
            self.emit(f"tl::reduce_parts_to_scratch<{kept_alias}, {self.k.threads}, {nkept}, {parts}, {plan.mask}u"
                      f"{self.red_barrier()}>({red}, tl_part);")
        else:
            parts = 1
            red = self.scratch(nkept, acc)
            self.emit(f"tl::reduce_atomic_to_scratch<{op}, {kept_alias}, {self.k.threads}, {nkept}, {plan.mask}u"
                      f"{self.red_barrier()}>({red}, tl_part);")
        self.finish_from_scratch(r, dst, red, op, parts, nkept)

    def finish_from_scratch(self, r, dst, red: str, op: str, parts: int, nkept: int) -> None:
        """Every kept value is in `red` (`parts` rows of partials): give the destination its elements."""
        if dst.scope == "fragment":
            alias = self.c_layout(dst.layout)
            self.emit(f"tl::reduce_finish_fragment<{op}, {c_bool(r.clear)}, {alias}, {parts}, {nkept}>({c_name(r.dst)}, {red});")
        elif dst.scope == "shared":
            if len(dst.shape) != 1:
                raise CodegenError("a reduction into a shared buffer of rank > 1 is not supported by the CUDA target yet",
                                   r.span)
            lay = dst.layout
            self.emit(f"tl::reduce_finish_shared<{op}, {c_bool(r.clear)}, {parts}, {nkept}, {self.k.threads}, {lay.pad}, "
                      f"{lay.swizzle_bytes}>({self.smem_pointer(r.dst)}, {red});")
        else:
            self.emit(f"tl::reduce_finish_local<{op}, {c_bool(r.clear)}, {parts}, {nkept}>({c_name(r.dst)}, {red});")

    def reduce_shared(self, r, src, dst, acc, op) -> None:
        """A shared source: thread t reduces kept indices t, t + threads, ... over all of `dim`."""
        if len(src.shape) > 2:
            raise CodegenError("reductions of tiles of rank > 2 are not supported by the CUDA target yet", r.span)
        rows, cols = (1, src.shape[0]) if len(src.shape) == 1 else src.shape
        dim = 1 if len(src.shape) == 1 else r.dim
        nkept = rows if dim == 1 else cols
        red = self.scratch(nkept, acc)
        lay = src.layout
        self.emit(f"tl::reduce_shared_to_scratch<{op}, {c_type(src.dtype)}, {rows}, {cols}, {lay.pad}, "
                  f"{lay.swizzle_bytes}, {dim}, {self.k.threads}>({red}, {self.smem_pointer(r.src)});")
        self.finish_from_scratch(r, dst, red, op, 1, nkept)
