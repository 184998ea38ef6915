"""Split-K of a cp.async ring, the decision (#18), behind an option off by default (RING_SPLIT:
the H200 timed it slower than std.gemm's split-K kernel and reduce, below).

split_k.py splits a warp-specialized persistent ring.  A kernel that warp specialization leaves
alone (its pipelined loop a cp.async ring: std.gemm's w4a16 decode kernels, whose weight tile is
dequantized in registers; every kernel on sm_80) with few output tiles and a long K loop is
rewritten the same way (split_k.rewrite: the grid's z counts the parts, each part's loop walks its
chunk of K steps, the last part's steps past K reading zeros), and its parts meet after the loop
(`ir.SplitK` on the Kernel; the code generator's `tl::split_k_meet`, the interpreter's
Machine.run_split): every part stores its f32 accumulator into its slot of the tile and counts
itself arrived; the part that arrives last sets the count back to 0, adds the tile's slots in the
order of the parts (its own slot too, read back: the sum's bits do not depend on which part
arrives last, and no second copy of its registers is live) and runs the epilogue; the others skip it.  No part waits for another,
so no order of the blocks' launch can hang; two launches of one split kernel must not overlap
(the slots and counts are the module's own device memory, as split_k.py's).

What it replaces: std.gemm's matmul_w4a16_splitk writes its parts to a workspace that a second
launch, splitk_reduce, adds (3.0 us of the ~24 at M = 1 on the H200, session 25's Nsight Compute
run); matmul_w4a16 split so needs neither.

The rule is split_k.parts_expr's with the wave counted in blocks, not SMs: WAVE SMs times the
blocks an SM holds by shared memory and threads (`blocks_per_sm`; registers are ptxas's, unknown
here), so that every part of every tile is resident at once: parts = min(max_parts, WAVE * B //
tiles, steps // MIN_STEPS), chunks as even as split_k's.  std.gemm's matmul_w4a16 at M = 1 (BM =
8, K steps of 256 on 3 stages, 46 KB: 4 blocks an SM), N = K = 8192: 128 tiles, 32 steps, 4 parts.

Applies to a kernel with a grid of two dimensions, no warp specialization and no persistent walk,
one top-level pipelined loop whose length every tile shares (sizes and scalars set from them),
one f32 fragment that the loop's gemms alone accumulate into (cleared once before it, its
registers whole float4s a thread), and no write of a tensor before the epilogue (each part runs
the statements before it) -- and only to the kernels it was meant for, whose loop dequantizes
packed weights in registers (`dequantized_operand`: a gemm operand held in a fragment that the
loop computes from a tile of packed words, packed_tiles.py: matmul_w4a16's Wd from Wq).  Without that test every cp.async GEMM on sm_80 was
a candidate, and the meeting's registers spilled on sm_80 kernels already at 222-255 registers
(scripts/options-flip: matmul 288 bytes, matmul_epilogue 432, matmul_f8_rowwise 592); w8a16's
tile (a weight a byte), the prefill's dequantization into shared memory and every plain GEMM
keep their one launch.

A pass of its own (`split_ring`, after `specialize_warps`, which leaves these kernels alone): its
decision is the kernel's `split_k` and a note in `--emit ir`."""
from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

from .. import ir
from ..ir.walk import loads, statement_exprs, statements, variables, written_names
from . import split_k as sk
from .packed_tiles import packed_tiles

# Off: the H200 timed it slower than the split-K kernel plus splitk_reduce (session 28,
# bench/results/q_D2_w4a16_tma_ring-h200-twentyeighth.txt, "w4a16 ring split", output checked
# first): N = K = 8192 g128, M = 1 32.8 us against split-K 4's 26.1 (1.26x), M = 16 30.3 against
# split-K 2's 27.0 (1.12x); it does beat the unsplit matmul_w4a16 (36.4, 30.6).
RING_SPLIT = False


def blocks_per_sm(kernel: ir.Kernel, target) -> int:
    """The blocks of `kernel` an SM of `target` holds by its shared memory (1 KB more a block, as
    the GPU reserves) and threads; at least 1."""
    from .blocks_per_sm import resident_blocks
    return resident_blocks(kernel.smem_bytes, kernel.threads, target)


def candidate(kernel: ir.Kernel) -> tuple[int, str] | None:
    """(the index of the pipelined loop in the body, its accumulator) of a kernel the split takes
    (module docstring), or None."""
    if kernel.warp_spec is not None or kernel.persistent_walk or kernel.split_k is not None or len(kernel.grid) != 2:
        return None
    loops = [i for i, s in enumerate(kernel.body) if isinstance(s, ir.For) and s.kind == "pipelined"]
    if len(loops) != 1:
        return None
    i = loops[0]
    loop = kernel.body[i]
    fixed, _ = sk.fixed_names(kernel, i)
    if not all(v.name in fixed for v in variables(loop.stop)):
        return None
    inner = list(statements(loop.body))
    gemms = [s for s in inner if isinstance(s, ir.Gemm)]
    if not gemms or len({g.c for g in gemms}) != 1:
        return None
    acc = gemms[0].c
    if not sk.cleared_accumulator(kernel, acc, i):
        return None
    if any(_writes(s, acc) for s in inner if not isinstance(s, ir.Gemm)):
        return None  # only the gemms accumulate
    if any(_writes(s, acc) for s in statements(kernel.body[:i]) if not isinstance(s, ir.Fill)):
        return None  # (a gemm, a reduction before the loop)
    tensors = {p.name for p in kernel.params if p.kind != "scalar"}
    if any(written_names([s]) & tensors for s in kernel.body[:i + 1]):
        return None  # a tensor written before the epilogue: each part would write it
    if dequantized_operand(kernel, loop) is None:
        return None  # not a weight-only low-bit GEMM (module docstring)
    return i, acc


def dequantized_operand(kernel: ir.Kernel, loop: ir.For) -> str | None:
    """The gemm operand that `loop` dequantizes in registers from packed weights, or None: a
    fragment of floats that a statement of the loop computes from a tile of packed words
    (packed_tiles.py: matmul_w4a16's Wd from Wq, u32 words of eight int4 weights)."""
    buffers = {b.name: b for b in kernel.buffers}
    packed = packed_tiles(kernel, loop)
    for g in (s for s in statements(loop.body) if isinstance(s, ir.Gemm)):
        for name in (g.a, g.b):
            if buffers[name].scope != "fragment" or buffers[name].dtype.kind != "float":
                continue
            if any(name in written_names([s]) and _reads(s, packed) for s in loop.body):
                return name
    return None


def _reads(s, names: set) -> bool:
    """Whether statement `s` (nested ones included) loads an element of one of `names`."""
    return any(x.name in names for t in statements([s]) for e in statement_exprs(t) for x in loads(e))


def _writes(s, name: str) -> bool:
    """Whether statement `s` itself (not a nested one) writes buffer `name`."""
    if isinstance(s, (ir.Store, ir.Atomic)):
        return s.name == name
    if isinstance(s, ir.Copy):
        return s.dst.name == name
    if isinstance(s, ir.Fill):
        return s.buffer == name
    if isinstance(s, (ir.Reduce, ir.Scan)):
        return s.dst == name
    return isinstance(s, ir.Gemm) and s.c == name


def split_ring(kernel: ir.Kernel, target) -> ir.Kernel:
    """`kernel` split along K where RING_SPLIT is on, `target` a GPU's and the kernel a candidate
    (module docstring); else `kernel`."""
    if not RING_SPLIT or target is None or target.host:
        return kernel
    found = candidate(kernel)
    if found is None:
        return kernel
    i, acc = found
    wave = sk.WAVE * blocks_per_sm(kernel, target)
    loop = kernel.body[i]
    # split_k.rewrite reads a ring's loop, its consumers' statements and its loads (none gathered)
    ring = SimpleNamespace(loop=i, consumer=(0, len(loop.body)), loads=())
    split, part, parts = sk.rewrite(kernel, ring)
    # its parts are a wave of WAVE blocks'; here WAVE x blocks an SM
    _, defs = sk.fixed_names(kernel, i)
    b = kernel.buffer(acc)
    from .im2col_tma import _subst
    wider = sk.parts_expr(sk._op("*", kernel.grid[0], kernel.grid[1]), _subst(loop.stop, defs), sk.max_parts(*b.shape),
                          wave)
    split = replace(split, grid=split.grid[:2] + (wider,),
                    body=tuple(replace(s, value=wider) if isinstance(s, ir.LetScalar) and s.value == parts else s
                               for s in split.body))
    parts = wider
    from ..ir.warpspec import SplitK
    return replace(split, split_k=SplitK(part, parts, acc, wave),
                   notes=split.notes + (f"split-K of the cp.async ring (ring_split_k.py): the grid's z counts the parts "
                                        f"of K ({part}), at most {wave} blocks' worth of tiles and parts (WAVE x "
                                        f"{wave // sk.WAVE} blocks an SM); the last part to arrive adds {acc}'s "
                                        f"slots in part order and runs the epilogue",))
