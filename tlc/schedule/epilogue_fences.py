"""fence_epilogue_loads: a parallel loop over an mma accumulator that reads global memory (a GEMM's
fused epilogue: bias[j], C[i, j]) keeps its loads to chunks of EPILOGUE_FENCE registers.

The code generators unroll such a loop over the thread's accumulator registers (128 of them at
std.gemm matmul_epilogue's 128 x 256 tile), and ptxas hoists every iteration's loads to the top
to overlap them: with bias and C both read that is 64 bias values, C's elements and their
addresses live beside the 128 accumulators, and it spills.  nvcc 13.0, -Xptxas -v, the default
tile: sm_90a 60 B (plain), 80 B (TL_TMA_FLAGS=3 TL_ONE_PART, the runtime's build), 96 B
(TL_TMA_FLAGS=3); sm_80 424 B at 255 registers.  No STL/LDL is inside the K loop (SASS).
Without the C read, or without the bias, none spills.  A compiler fence every 32 registers
(`asm volatile("" ::: "memory")`, no instruction: the loads after it are not moved above it)
leaves no spill in any of those builds (sm_80: 248 registers).

The pass marks such loops outside pipelined loops (`Parallel.load_fence`, shown by the IR
printer); the register loop's renderer puts the fence between chunks.  EPILOGUE_FENCE is 0
(off): the loads' overlap is what the fence takes away, and the H200 timed that dearer than the
spills (EPILOGUE_FENCE's comment)."""
from __future__ import annotations

from dataclasses import replace

from .. import ir
from ..ir.walk import statement_exprs, statements, subexprs
from .layout import MmaAccumulator

# registers a chunk; 0: no fence.  Kept 0: the H200 timed the fence (session 28,
# bench/results/q_B2_epilogue_spills-h200-twentyeighth.txt, std.gemm matmul_epilogue f16, outputs
# checked): 4096^3 beta 0 0.1933 -> 0.2224 ms (1.15x slower), beta 1 0.2142 -> 0.2851 (1.33x),
# 8192^3 beta 0 1.6096 -> 1.7485 (1.09x), beta 1 1.7446 -> 2.0011 (1.15x): the spills it removes
# (11 STL + 9 LDL a thread a tile) cost less than the loads it serializes.
EPILOGUE_FENCE = 0


def fence_epilogue_loads(kernel: ir.Kernel) -> ir.Kernel:
    if not EPILOGUE_FENCE:
        return kernel
    tensors = {p.name for p in kernel.params if p.kind == "tensor"}
    body = _marked(tuple(kernel.body), tensors)
    return kernel if body is None else replace(kernel, body=body)


def _marked(stmts: tuple, tensors: set) -> tuple | None:
    """`stmts` with their epilogue loops marked, None where none is.  Not inside a pipelined loop:
    a loop there (std.gemm's block scales a K step) runs under the gemms, and its loads' overlap
    is the K loop's time; the epilogue's come once a tile."""
    out, changed = [], False
    for s in stmts:
        new = None
        if isinstance(s, ir.Parallel):
            if isinstance(s.layout, MmaAccumulator) and s.layout.registers > EPILOGUE_FENCE \
                    and _reads(s.body, tensors):
                new = replace(s, load_fence=EPILOGUE_FENCE)
        elif not (isinstance(s, ir.For) and s.kind == "pipelined"):
            parts = {f: _marked(getattr(s, f), tensors) for f in ("body", "then", "orelse") if hasattr(s, f)}
            parts = {f: v for f, v in parts.items() if v is not None}
            new = replace(s, **parts) if parts else None
        out.append(s if new is None else new)
        changed |= new is not None
    return tuple(out) if changed else None


def _reads(body, tensors: set) -> bool:
    """Whether `body` loads an element of one of `tensors` (global memory)."""
    return any(isinstance(e, ir.Load) and e.name in tensors
               for s in statements(body) for x in statement_exprs(s) for e in subexprs(x))
