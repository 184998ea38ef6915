"""Split-K's fixup, the C (#18): what `ir.SplitK` (schedule/split_k.py) says a persistent
kernel's consumers do between a unit's K loop and the kernel's epilogue.

A part other than the last stores its f32 accumulator into its slot of the module's partial
tiles (each thread its registers as float4s at r * THREADS + thread: whole 16-byte stores, a
warp's 512 contiguous bytes), the consumers meet, and one thread counts the part done (a
release: tl::turn_done); it skips the epilogue.  The last part's thread 0 waits until the
count reads parts - 1 (an acquire: tl::turn_wait), the consumers meet, and each thread adds the
slots of parts 0, 1, ... in that order into its registers (loaded through L2, `ld.global.cg`:
another SM wrote them), so the sums have the same bits in every run; the count goes back to
0 for the next launch, and the epilogue runs on the sum.

The slots and counters are the module's own device memory (`__device__`, zeroed when the
module loads, each counter back at 0 after its tile's fixup): no workspace to allocate or
clear at a call.  So two launches of one split kernel must not run at the same time (two
streams); launches in one stream, a CUDA graph's included, follow each other."""
from __future__ import annotations

from ...ir.warpspec import CONSUMER_BARRIER
from ..cnames import c_name


def storage(gen) -> tuple[str, str]:
    """The C names of the module's slots and counters for `gen`'s kernel, declared in its
    preamble once: split-K's and stream-K's (one slot a block; a counter for each streamed
    tile, of at most a wave and a half)."""
    sk, name = gen.spec.split_k or gen.spec.stream_k, c_name(gen.k.name)
    slots, counts = f"tl_sk_slots_{name}", f"tl_sk_counts_{name}"
    if not getattr(gen, "_split_k_declared", False):
        gen._split_k_declared = True
        rows, cols = gen.buffers[sk.acc].shape
        ncounts = 2 * sk.slots if gen.spec.stream_k is not None else sk.slots
        gen.preamble += [
            f"// {'stream-K' if gen.spec.split_k is None else 'split-K'}'s"
            f"{' and stream-K' + chr(39) + 's' if gen.spec.split_k is not None and gen.spec.stream_k is not None else ''} "
            f"partial tiles ({sk.slots} of {rows} x {cols} f32) and each tile's count of parts done",
            f"__device__ float4 {slots}[{sk.slots * rows * cols // 4}];",
            f"__device__ int {counts}[{ncounts}];"]
    return slots, counts


def emit_stream_fixup(gen, epilogue) -> None:
    """A streamed segment's fixup (ir.StreamK, schedule/stream_k.py), then `epilogue()` (the
    kernel's, or split-K's fixup and it) where this segment runs it: a contributor stores its
    accumulator into its block's slot (each thread its registers as float4s at r * THREADS +
    thread) and counts itself on the tile's counter; a finisher waits until the count reads its
    contributors, adds their slots in block order (through L2: other SMs wrote them), sets the
    count back to 0 for the next launch and runs the epilogue."""
    sk, e, T, C = gen.spec.stream_k, gen.emit, gen.k.threads, gen.cluster
    slots, counts = storage(gen)
    rows, cols = gen.buffers[sk.acc].shape
    quads = rows * cols // 4
    # a tile's counter; in clusters of C the walk's tiles are the clusters' and each block's its own:
    # counter (unit - whole) * C + rank, its contributors' slots C blocks apart
    count = f"{counts} + (tl_tile - tl_walk.whole)" + (f" * {C} + static_cast<int>(tl_rank)" if C > 1 else "")
    e("// stream-K (schedule/stream_k.py): a segment that ends a tile it did not start stores its part; the one")
    e("// that starts it adds the others' in block order")
    e("if (tl_walk.on && tl_k0 > 0) {  // a contributor: its accumulator into its block's slot, counted")
    gen.indent += 1
    _store_slot(gen, f"{slots} + static_cast<long long>(blockIdx.x) * {quads}")
    e(f"if (threadIdx.x == 0) tl::turn_done({count});  // a release")
    gen.indent -= 1
    e("} else {")
    gen.indent += 1
    e("if (tl_walk.on && tl_k1 - tl_k0 < tl_walk.steps) {  // the finisher: its contributors' slots in block order")
    gen.indent += 1
    e("const int tl_sk_parts = tl_walk.contributors(tl_tile);")
    e(f"int* tl_sk_count = {count};")
    e("if (threadIdx.x == 0) tl::turn_wait(tl_sk_count, tl_sk_parts);  // an acquire")
    e(f"tl::bar_sync_named({CONSUMER_BARRIER}, {T});")
    _add_slots(gen, "for (int tl_s = 1; tl_s <= tl_sk_parts; ++tl_s)",
               f"{slots} + static_cast<long long>(blockIdx.x + tl_s{f' * {C}' if C > 1 else ''}) * {quads}")
    e("if (threadIdx.x == 0) *tl_sk_count = 0;  // every contributor has counted: back to 0 for the next launch")
    gen.indent -= 1
    e("}")
    epilogue()
    gen.indent -= 1
    e("}")


def _store_slot(gen, slot: str) -> None:
    """Each consumer thread's registers of the accumulator as float4s into the slot at C pointer
    `slot` (register quad r at r * THREADS + thread: a warp's 512 contiguous bytes), the
    consumers meeting after them (before the count)."""
    sk, e, T = gen.spec.split_k or gen.spec.stream_k, gen.emit, gen.k.threads
    acc, regs = c_name(sk.acc), gen.fragment(sk.acc).regs
    e(f"float4* tl_sk_mine = {slot};")
    e("#pragma unroll")
    e(f"for (int tl_r = 0; tl_r < {regs} / 4; ++tl_r)")
    e(f"  tl_sk_mine[tl_r * {T} + threadIdx.x] = make_float4({acc}[4 * tl_r], {acc}[4 * tl_r + 1], "
      f"{acc}[4 * tl_r + 2], {acc}[4 * tl_r + 3]);")
    e(f"tl::bar_sync_named({CONSUMER_BARRIER}, {T});  // every consumer's stores before the count")


def _add_slots(gen, loop: str, slot: str) -> None:
    """The slots at C pointer `slot` (of tl_s), over the C loop header `loop`, added into the
    accumulator's registers in that order, read through L2 (`ld.global.cg`: other SMs wrote them)."""
    sk, e, T = gen.spec.split_k or gen.spec.stream_k, gen.emit, gen.k.threads
    acc, regs = c_name(sk.acc), gen.fragment(sk.acc).regs
    e(f"{loop} {{")
    e(f"  const float4* tl_sk_part = {slot};")
    e("  #pragma unroll")
    e(f"  for (int tl_r = 0; tl_r < {regs} / 4; ++tl_r) {{")
    e(f"    const float4 tl_v = __ldcg(tl_sk_part + tl_r * {T} + threadIdx.x);")
    e(f"    {acc}[4 * tl_r] += tl_v.x; {acc}[4 * tl_r + 1] += tl_v.y; {acc}[4 * tl_r + 2] += tl_v.z; "
      f"{acc}[4 * tl_r + 3] += tl_v.w;")
    e("  }")
    e("}")


def emit_fixup(gen, epilogue) -> None:
    """The unit's fixup (module docstring), then `epilogue()` where this unit runs it."""
    sk, e, T = gen.spec.split_k, gen.emit, gen.k.threads
    slots, counts = storage(gen)
    rows, cols = gen.buffers[sk.acc].shape
    names = [c_name(v) for v in gen.k.block_vars]
    bx, by, part = names[0], names[1], names[2]
    quads = rows * cols // 4  # float4s a slot
    e("// split-K (schedule/split_k.py): the parts of K meet; the last adds the others' partial tiles in order")
    e("bool tl_sk_epilogue = true;")
    e(f"if ({'!tl_walk.on && ' if gen.spec.stream_k is not None else ''}tl_tiles_z > 1) {{")
    gen.indent += 1
    e(f"const int tl_sk_tile = {by} * tl_tiles_x + {bx};")
    e(f"int* tl_sk_count = {counts} + tl_sk_tile;")
    e(f"float4* tl_sk_slot = {slots} + static_cast<long long>(tl_sk_tile) * (tl_tiles_z - 1) * {quads};")
    e(f"if ({part} < tl_tiles_z - 1) {{  // a part before the last: its accumulator into its slot, counted")
    gen.indent += 1
    _store_slot(gen, f"tl_sk_slot + static_cast<long long>({part}) * {quads}")
    e("if (threadIdx.x == 0) tl::turn_done(tl_sk_count);  // a release")
    e("tl_sk_epilogue = false;")
    gen.indent -= 1
    e("} else {  // the last part: the others' slots added in their order, then the epilogue")
    gen.indent += 1
    e("if (threadIdx.x == 0) tl::turn_wait(tl_sk_count, tl_tiles_z - 1);  // an acquire")
    e(f"tl::bar_sync_named({CONSUMER_BARRIER}, {T});")
    _add_slots(gen, "for (int tl_s = 0; tl_s < tl_tiles_z - 1; ++tl_s)", f"tl_sk_slot + static_cast<long long>(tl_s) * {quads}")
    e("if (threadIdx.x == 0) *tl_sk_count = 0;  // every part has counted: back to 0 for the next launch")
    gen.indent -= 1
    e("}")
    gen.indent -= 1
    e("}")
    e("if (tl_sk_epilogue) {")
    gen.indent += 1
    epilogue()
    gen.indent -= 1
    e("}")
