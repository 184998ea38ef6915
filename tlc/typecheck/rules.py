"""The typing rules, numbered, one function each (LANGUAGE.md sections 1, 3 and 5).

T1  A literal is weak: an int literal is i32 (i64 if it does not fit), a float literal f32;
    a weak operand takes the dtype of the other operand, except that a float literal meeting
    an integer gives f32.
T2  Two typed operands promote by `tlc.dtypes.promote`.
T3  `/` on integers is true division and gives f32; `//` and `%` keep the operands' type.
T4  Bit operations (`& | ^ ~ << >>`) need integers or bools.
T5  Comparisons, `and`, `or`, `not` give bool.
T6  A value is stored or assigned only into a dtype at least as wide (`tlc.dtypes.can_widen`);
    a weak literal fits any numeric dtype of its kind, an int literal fits a float too.
T7  Math functions on integers compute in f32.
T8  Broadcasting (tile ops): shapes align on the right; two dimensions agree when they are
    equal, or when one is the literal 1.
T9  `@` needs the inner dimensions to agree; f16, bf16, f8 and f32 operands give f32, integer
    operands give i32.
T10 gemm operands have one dtype, except that the two f8 formats mix, and i8 with u8 (what
    the tensor cores take); `precision="tf32"` applies to f32 operands only.
T11 An integer literal (or constant expression of literals) taking an integer dtype by T1 or T6
    must lie within it (E157; `literals.py`): `x < 200` of an i8 x is not `x < -56`.
"""
from __future__ import annotations

from ..dtypes import DTYPES, F32, I32, DType, can_widen, promote
from ..dtypes import gemm_operands_agree  # noqa: F401 - T10, one definition for the IR verifier too
from ..parser import nodes as n
from .types import ScalarType

I64 = DTYPES["i64"]


def literal_type(value) -> ScalarType:
    """T1."""
    if isinstance(value, bool):
        return ScalarType(DTYPES["bool"], weak=True, const=True)
    if isinstance(value, int):
        return ScalarType(I32 if -2**31 <= value < 2**31 else I64, weak=True, const=True)
    return ScalarType(F32, weak=True, const=True)


def combine(a: ScalarType, b: ScalarType) -> DType:
    """T1 and T2: the dtype of `a OP b` for arithmetic."""
    if a.weak and not b.weak:
        a, b = b, a
    if b.weak and not a.weak:
        if b.dtype.is_float and not a.dtype.is_float:
            return F32
        return a.dtype if not a.dtype.is_bool else b.dtype
    return promote(a.dtype, b.dtype)


def arithmetic(op: str, a: ScalarType, b: ScalarType) -> DType | None:
    """The dtype of `a op b`, or None when the operation is not defined (T3, T4)."""
    if op in ("&", "|", "^", "<<", ">>"):
        if a.dtype.is_float or b.dtype.is_float:
            return None
        return combine(a, b)
    dt = combine(a, b)
    if dt.is_bool:
        dt = I32
    if op == "/" and not dt.is_float:
        return F32
    return dt


def assignable(src: ScalarType, dst: DType) -> bool:
    """T6."""
    if src.weak:
        if src.dtype.is_bool:
            return True
        if src.dtype.is_float:
            return dst.is_float
        return not dst.is_bool
    return can_widen(src.dtype, dst)


def math_result(a: ScalarType) -> DType:
    """T7."""
    return a.dtype if a.dtype.is_float else F32


def broadcast(a: tuple, b: tuple) -> tuple | None:
    """T8: the broadcast shape of two shapes of dimension expressions, or None."""
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        da = a[-i] if i <= len(a) else None
        db = b[-i] if i <= len(b) else None
        if da is None or _is_one(da):
            out.append(db if db is not None else da)
        elif db is None or _is_one(db) or da == db:
            out.append(da)
        else:
            return None
    return tuple(reversed(out))


def _is_one(d) -> bool:
    return isinstance(d, n.Constant) and d.value == 1


def matmul_dtype(a: DType, b: DType) -> DType:
    """T9."""
    if a.is_float or b.is_float:
        return F32
    return I32


GEMM_PRECISIONS = ("ieee", "tf32")  # T10; which operand dtypes agree is `dtypes.gemm_operands_agree`
