"""Which gemms the tensor cores take: operand and accumulator dtypes, the gemm's precision
mode, and what follows for the instruction (its PTX type names, K per instruction, whether
the operands must be K-major).  Read by the scheduler (layouts), and by both code generators.

Facts from the PTX ISA (mma.sync, wgmma.mma_async): every instruction reads 32 bytes of K
per row, so K per instruction is 16 for f16/bf16, 32 for f8 and 8-bit integers, 8 for tf32;
f8 and 8-bit integers may mix their two formats; only 16-bit operands may be stored MN-major
(wgmma's transpose bits, ldmatrix's .trans).  tf32 reads f32 operands and ignores the low 13
bits of the mantissa.
"""
from __future__ import annotations

from ..dtypes import DType
from ..frozen import frozen

_PTX = {"f16": "f16", "bf16": "bf16", "f8e4m3": "e4m3", "f8e5m2": "e5m2", "i8": "s8", "u8": "u8", "f32": "tf32"}
K_BYTES = 32  # of K per instruction, whatever the operand type


@frozen
class TensorCoreOp:
    a_ptx: str    # PTX operand types: f16 bf16 e4m3 e5m2 s8 u8 tf32
    b_ptx: str
    acc_ptx: str  # f32 | s32
    k: int        # K per instruction
    itemsize: int

    @property
    def k_major_only(self) -> bool:
        return self.itemsize != 2

    @property
    def is_f8(self) -> bool:
        return self.a_ptx in ("e4m3", "e5m2")


def tensor_core_op(a: DType, b: DType, c: DType, precision: str = "ieee") -> TensorCoreOp | None:
    """The tensor-core operation for `c += a @ b`, or None when there is none (f32 operands in
    "ieee" precision, f64, 16-bit integers, an accumulator of another type)."""
    names = (a.name, b.name)
    if names in (("f16", "f16"), ("bf16", "bf16")) or all(x in ("f8e4m3", "f8e5m2") for x in names):
        acc = "f32"
    elif all(x in ("i8", "u8") for x in names):
        acc = "s32"
    elif names == ("f32", "f32") and precision == "tf32":
        acc = "f32"
    else:
        return None
    if c.name != {"f32": "f32", "s32": "i32"}[acc]:
        return None
    return TensorCoreOp(_PTX[a.name], _PTX[b.name], acc, K_BYTES // a.itemsize, a.itemsize)
