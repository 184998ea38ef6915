"""Split-K of a cp.async ring, the C (#18): what `Kernel.split_k` (schedule/ring_split_k.py, an
option off by default) asks of a kernel's top-level statements.  The statements up to the K loop
as always, then every part meets the tile's others (`tl::split_k_meet`, templates/tl/reduce.cuh:
its registers into its slot, counted arrived; the last to arrive adds the slots in part order),
and the statements after the loop, the epilogue, run in the part that arrives last alone.  A
launch of one part (gridDim.z = 1) skips the meeting.  The slots and counts are the module's own
device memory (`__device__`, zeroed when the module loads, each count back at 0 after its tile's
meeting), as split-K's of a warp-specialized ring (codegen/warpspec/split_k.py)."""
from __future__ import annotations

from .. import ir
from .cnames import c_name


def emit(gen, stmts) -> None:
    """The kernel's top-level statements `stmts` with the parts' meeting after the K loop."""
    sk, name, threads = gen.k.split_k, c_name(gen.k.name), gen.k.threads
    i = next(j for j, s in enumerate(stmts) if isinstance(s, ir.For) and s.kind == "pipelined")
    rows, cols = gen.buffers[sk.acc].shape
    quads = rows * cols // 4  # a slot's float4s
    slots, counts = f"tl_rsk_slots_{name}", f"tl_rsk_counts_{name}"
    gen.preamble += [f"// split-K's partial tiles ({sk.slots} of {rows} x {cols} f32, a tile's parts side by side) "
                     f"and each tile's count of parts arrived (codegen/ring_split_k.py)",
                     f"__device__ float4 {slots}[{sk.slots * quads}];",
                     f"__device__ int {counts}[{sk.slots}];"]
    gen.block(stmts[:i + 1])
    gen.emit("// split-K (schedule/ring_split_k.py): the parts of K meet; the last to arrive adds them in part "
             "order and runs the epilogue")
    gen.emit("const int tl_sk_tile = blockIdx.y * gridDim.x + blockIdx.x;")
    gen.emit(f"if (gridDim.z == 1 || tl::split_k_meet<{gen.fragment(sk.acc).regs}, {threads}>({c_name(sk.acc)}, "
             f"{slots} + static_cast<long long>(tl_sk_tile) * gridDim.z * {quads}, {counts} + tl_sk_tile, "
             f"blockIdx.z, gridDim.z)) {{")
    gen.indent += 1
    gen.block(stmts[i + 1:])
    gen.indent -= 1
    gen.emit("}")
