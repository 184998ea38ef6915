"""Reductions of a tile along one dimension (reduce_sum/max/min/absmax).

A fragment source reduces in three steps: each thread combines its own registers that share
the kept index (a slot), then the lanes of a warp that share it (shuffles over the lane bits
that differ), then, when the owners span several warps or the destination is laid out
otherwise, through a scratch row in shared memory.  Which step applies is decided here by
enumerating the layout's owners, so the C only runs what the layout needs."""
from __future__ import annotations

import itertools

from .. import ir
from ..schedule.layout import Replicated
from .cexpr import CodegenError
from .cnames import c_name, c_type

_OPS = {"sum": "tl::Op::sum", "max": "tl::Op::max", "min": "tl::Op::min", "absmax": "tl::Op::absmax"}


def _acc_type(dt) -> str:
    if dt.is_float:
        return "double" if dt.name == "f64" else "float"
    if dt.bits <= 32:
        return "int"
    raise CodegenError(f"reductions of {dt} are not supported by the CUDA target yet")


def inverse(layout, shape) -> dict:
    """(thread, register) -> element index, by enumerating the layout's owners."""
    out = {}
    for idx in itertools.product(*(range(d) for d in shape)):
        out[layout.owner(idx)] = idx
    return out


def slot_plan(layout, shape, dim: int, threads: int):
    """(slots, lane_mask, cross_warp) for reducing `dim` of a fragment in `layout`, or None when
    no thread-independent grouping of registers exists (then every register goes to scratch).
    slots[r] is the slot of register r; registers of one slot hold one kept index in every thread."""
    inv = inverse(layout, shape)
    regs = 1 + max(r for _, r in inv)
    kept = {}
    for (t, r), idx in inv.items():
        kept[(t, r)] = tuple(x for d, x in enumerate(idx) if d != dim)
    slots: list[int] = []
    first: dict = {}
    for r in range(regs):
        key = kept.get((0, r))
        if key is None:
            slots.append(-1)
            continue
        slots.append(first.setdefault(key, len(first)))
    for t in range(threads):  # the grouping must be the same in every thread
        seen: dict = {}
        for r in range(regs):
            k = kept.get((t, r))
            if (k is None) != (slots[r] == -1):
                return None
            if k is None:
                continue
            if seen.setdefault(slots[r], k) != k:
                return None
        if len(set(seen.values())) != len(seen):
            return None
    owners: dict = {}
    for (t, r), k in kept.items():
        owners.setdefault(k, set()).add(t)
    mask = 0
    cross = False
    for ts in owners.values():
        t0 = min(ts)
        for t in ts:
            if t // 32 == t0 // 32:
                mask |= (t ^ t0) & 31
            else:
                cross = True
    # Lanes t and t ^ m (m in the mask's span) must hold the same kept index in each slot.
    nslots = max(slots) + 1
    for t in range(threads):
        for bit in range(5):
            if mask & (1 << bit):
                u = t ^ (1 << bit)
                for s in range(nslots):
                    rt = slots.index(s)
                    if kept.get((t, rt)) != kept.get((u, rt)):
                        return None
    # Without scratch, every owner of an index must be in one shuffle group.
    if not cross:
        for ts in owners.values():
            t0 = min(ts)
            if any((t ^ t0) & ~mask & 31 for t in ts):
                cross = True
    return slots, mask, cross


class ReduceGen:
    def stmt_Reduce(self, r: ir.Reduce) -> None:
        src, dst = self.buffers[r.src], self.buffers[r.dst]
        acc = _acc_type(src.dtype)
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
        """A scratch row after the planned shared memory, reused by every reduction."""
        size = count * (8 if acc == "double" else 4)
        self.scratch_bytes = max(self.scratch_bytes, size)
        return f"reinterpret_cast<{acc}*>(tl_smem + {self.k.smem_bytes})"

    def kept_expr(self, layout, shape, dim: int, reg: str) -> str:
        """The linear kept index of register `reg` of this thread (C)."""
        alias = self.c_layout(layout)
        if len(shape) == 1:
            return "0"
        return f"{alias}::{'row' if dim == 1 else 'col'}(threadIdx.x, {reg})"

    def reduce_fragment(self, r, src, dst, acc, op) -> None:
        if isinstance(src.layout, Replicated):
            raise CodegenError(f"reducing the replicated fragment '{r.src}' is not supported by the CUDA target yet", r.span)
        layout = src.layout
        shape = src.shape
        alias = self.c_layout(layout)
        nkept = 1 if len(shape) == 1 else shape[1 - r.dim]
        plan = slot_plan(layout, shape, r.dim, self.k.threads)
        direct = dst.scope == "fragment" and dst.layout == Replicated(layout, (r.dim,))
        name = c_name(r.src)
        if plan is None:
            # No thread-independent grouping: every register combines into scratch itself.
            red = self.scratch(nkept, acc)
            self.init_scratch(red, nkept, acc, op)
            self.emit("#pragma unroll")
            self.emit(f"for (int tl_r = 0; tl_r < {alias}::REGS; ++tl_r) if ({alias}::valid(threadIdx.x, tl_r)) "
                      f"tl::atomic_combine<{op}>(&{red}[{self.kept_expr(layout, shape, r.dim, 'tl_r')}], "
                      f"tl::prepare<{op}>(tl::cvt<{acc}>({name}[tl_r])));")
            self.emit("__syncthreads();")
            self.finish_from_scratch(r, dst, red, acc, op, nkept)
            return
        slots, mask, cross = plan
        nslots = max(slots) + 1
        table = ", ".join(str(max(s, 0)) for s in slots)
        self.emit(f"constexpr int tl_slot[{len(slots)}] = {{{table}}};")
        self.emit(f"{acc} tl_part[{nslots}];")
        self.emit("#pragma unroll")
        self.emit(f"for (int tl_s = 0; tl_s < {nslots}; ++tl_s) tl_part[tl_s] = tl::identity<{op}>({acc}());")
        self.emit("#pragma unroll")
        self.emit(f"for (int tl_r = 0; tl_r < {alias}::REGS; ++tl_r) if ({alias}::valid(threadIdx.x, tl_r)) "
                  f"tl_part[tl_slot[tl_r]] = tl::combine<{op}>(tl_part[tl_slot[tl_r]], "
                  f"tl::prepare<{op}>(tl::cvt<{acc}>({name}[tl_r])));")
        if mask:
            self.emit("#pragma unroll")
            self.emit(f"for (int tl_s = 0; tl_s < {nslots}; ++tl_s) "
                      f"tl_part[tl_s] = tl::warp_allreduce<{op}, {mask}u>(tl_part[tl_s]);")
        if direct and not cross:
            self.write_slots(r, dst, acc, op, "tl_part[tl_slot[tl_r]]", alias)
            return
        red = self.scratch(nkept, acc)
        self.init_scratch(red, nkept, acc, op)
        first_reg = [slots.index(s) for s in range(nslots)]
        self.emit(f"constexpr int tl_first[{nslots}] = {{{', '.join(map(str, first_reg))}}};")
        self.emit(f"if ((threadIdx.x & {mask}u) == 0) {{")
        self.emit("#pragma unroll")
        self.emit(f"  for (int tl_s = 0; tl_s < {nslots}; ++tl_s) tl::atomic_combine<{op}>(&{red}["
                  f"{self.kept_expr(layout, shape, r.dim, 'tl_first[tl_s]')}], tl_part[tl_s]);")
        self.emit("}")
        self.emit("__syncthreads();")
        self.finish_from_scratch(r, dst, red, acc, op, nkept)

    def init_scratch(self, red: str, n: int, acc: str, op: str) -> None:
        self.emit(f"for (int tl_i = threadIdx.x; tl_i < {n}; tl_i += {self.k.threads}) "
                  f"{red}[tl_i] = tl::identity<{op}>({acc}());")
        self.emit("__syncthreads();")

    def write_slots(self, r, dst, acc, op, value: str, alias: str) -> None:
        name = c_name(r.dst)
        t = c_type(dst.dtype)
        self.emit("#pragma unroll")
        if r.clear:
            self.emit(f"for (int tl_r = 0; tl_r < {alias}::REGS; ++tl_r) {name}[tl_r] = tl::cvt<{t}>({value});")
        else:
            self.emit(f"for (int tl_r = 0; tl_r < {alias}::REGS; ++tl_r) {name}[tl_r] = tl::cvt<{t}>("
                      f"tl::combine<{op}>(tl::cvt<{acc}>({name}[tl_r]), {value}));")

    def finish_from_scratch(self, r, dst, red: str, acc: str, op: str, nkept: int) -> None:
        """Every kept value is in `red`: give the destination its elements."""
        name = c_name(r.dst)
        t = c_type(dst.dtype)
        if dst.scope == "fragment":
            alias = self.c_layout(dst.layout)
            idx = f"{alias}::col(threadIdx.x, tl_r)"
            value = f"{red}[{idx}]"
            self.emit("#pragma unroll")
            combine = f"tl::cvt<{t}>({value})" if r.clear else \
                f"tl::cvt<{t}>(tl::combine<{op}>(tl::cvt<{acc}>({name}[tl_r]), {value}))"
            self.emit(f"for (int tl_r = 0; tl_r < {alias}::REGS; ++tl_r) if ({alias}::valid(threadIdx.x, tl_r)) "
                      f"{name}[tl_r] = {combine};")
        elif dst.scope == "shared":
            ptr = self.smem_pointer(r.dst)
            index = self.smem_index(dst, ["tl_i"]) if len(dst.shape) == 1 else None
            if index is None:
                raise CodegenError("a reduction into a shared buffer of rank > 1 is not supported by the CUDA target yet",
                                   r.span)
            value = f"{red}[tl_i]"
            combine = f"tl::cvt<{t}>({value})" if r.clear else \
                f"tl::cvt<{t}>(tl::combine<{op}>(tl::cvt<{acc}>({ptr}[{index}]), {value}))"
            self.emit(f"for (int tl_i = threadIdx.x; tl_i < {nkept}; tl_i += {self.k.threads}) {ptr}[{index}] = {combine};")
        else:
            combine = f"tl::cvt<{t}>({red}[tl_i])" if r.clear else \
                f"tl::cvt<{t}>(tl::combine<{op}>(tl::cvt<{acc}>({name}[tl_i]), {red}[tl_i]))"
            self.emit(f"for (int tl_i = 0; tl_i < {nkept}; ++tl_i) {name}[tl_i] = {combine};")
        self.emit("__syncthreads();")

    def reduce_shared(self, r, src, dst, acc, op) -> None:
        """A shared source: thread t reduces kept indices t, t + threads, ... over all of `dim`."""
        if len(src.shape) > 2:
            raise CodegenError("reductions of tiles of rank > 2 are not supported by the CUDA target yet", r.span)
        shape = (1, src.shape[0]) if len(src.shape) == 1 else src.shape
        dim = 1 if len(src.shape) == 1 else r.dim
        nkept, length = shape[1 - dim], shape[dim]
        red = self.scratch(nkept, acc)
        ptr = self.smem_pointer(r.src)
        idx = self.smem_index(src, ["tl_j"] if len(src.shape) == 1 else
                              (["tl_i", "tl_j"] if dim == 1 else ["tl_j", "tl_i"]))
        self.emit(f"for (int tl_i = threadIdx.x; tl_i < {nkept}; tl_i += {self.k.threads}) {{")
        self.emit(f"  {acc} tl_v = tl::identity<{op}>({acc}());")
        self.emit(f"  for (int tl_j = 0; tl_j < {length}; ++tl_j) "
                  f"tl_v = tl::combine<{op}>(tl_v, tl::prepare<{op}>(tl::cvt<{acc}>({ptr}[{idx}])));")
        self.emit(f"  {red}[tl_i] = tl_v;")
        self.emit("}")
        self.emit("__syncthreads();")
        self.finish_from_scratch(r, dst, red, acc, op, nkept)
