"""Scalar dtypes of the language and their promotion rules (LANGUAGE.md section 1).

Owns: the table of dtypes (name, kind, width, NumPy dtype, C type) and `promote`.  A leaf
module: the type checker, scheduler, interpreter and code generator all read it.
"""
from __future__ import annotations

import numpy as np

from .frozen import frozen


@frozen
class DType:
    name: str
    kind: str  # "bool" | "int" | "uint" | "float"
    bits: int
    c_type: str

    def __str__(self) -> str:
        return self.name

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_int(self) -> bool:
        return self.kind in ("int", "uint")

    @property
    def is_bool(self) -> bool:
        return self.kind == "bool"

    @property
    def itemsize(self) -> int:
        return max(1, self.bits // 8)

    @property
    def packed(self) -> bool:
        """Whether values of this dtype are stored several to a byte (i4, u4: two), in global
        and shared memory; in registers each is a value of its own."""
        return self.bits < 8

    def wrap(self, value: int) -> int:
        """An integer as this integer dtype holds it: reduced modulo 2^bits into its range, as a
        C conversion does (a literal `255` meeting an i8 is -1 on both targets)."""
        value &= (1 << self.bits) - 1
        return value - (1 << self.bits) if self.kind == "int" and value >> (self.bits - 1) else value

    def numpy(self) -> np.dtype:
        """The NumPy dtype holding values of this dtype exactly (ml_dtypes for bf16 and f8)."""
        return numpy_dtype(self)

    def largest_finite(self) -> float:
        """The largest finite value of this float dtype.  ml_dtypes' own finfo for bf16 and f8:
        NumPy's finfo knows them only where ml_dtypes registered them with it (the H200's
        versions did not: 'dtype(bfloat16) not compatible with finfo')."""
        if self.name in ("bf16", "f8e4m3", "f8e5m2", "e8m0"):
            import ml_dtypes

            return float(ml_dtypes.finfo(self.numpy()).max)
        return float(np.finfo(self.numpy()).max)


_TABLE = [
    DType("bool", "bool", 8, "bool"),
    DType("i4", "int", 4, "int8_t"),  # packed two a byte in memory; an 8-bit value in registers
    DType("u4", "uint", 4, "uint8_t"),
    DType("i8", "int", 8, "int8_t"),
    DType("i16", "int", 16, "int16_t"),
    DType("i32", "int", 32, "int32_t"),
    DType("i64", "int", 64, "int64_t"),
    DType("u8", "uint", 8, "uint8_t"),
    DType("u16", "uint", 16, "uint16_t"),
    DType("u32", "uint", 32, "uint32_t"),
    DType("u64", "uint", 64, "uint64_t"),
    DType("f8e4m3", "float", 8, "__nv_fp8_e4m3"),
    DType("f8e5m2", "float", 8, "__nv_fp8_e5m2"),
    # the microscaling formats' scale: 2^(e - 127) for a byte e of 0 to 254, 255 NaN; no zero,
    # no sign (OCP MX spec, CUDA's __nv_fp8_e8m0)
    DType("e8m0", "float", 8, "__nv_fp8_e8m0"),
    DType("f16", "float", 16, "half"),
    DType("bf16", "float", 16, "__nv_bfloat16"),
    DType("f32", "float", 32, "float"),
    DType("f64", "float", 64, "double"),
]

DTYPES: dict[str, DType] = {d.name: d for d in _TABLE}
ALIASES = {"int": "i32", "float": "f32"}

BOOL, I32, I64, F16, BF16, F32, F64 = (DTYPES[n] for n in ("bool", "i32", "i64", "f16", "bf16", "f32", "f64"))


def lookup(name: str) -> DType | None:
    """The dtype a name denotes (`f16`, `int`), or None."""
    return DTYPES.get(ALIASES.get(name, name))


def numpy_dtype(dt: DType) -> np.dtype:
    """NumPy's dtype of the values (ml_dtypes' for bf16, f8, e8m0 and the 4-bit integers, whose
    arrays hold one value a byte: a host array of i4 is not packed)."""
    if dt.name in _ML_DTYPES:
        import ml_dtypes

        return np.dtype(getattr(ml_dtypes, _ML_DTYPES[dt.name]))
    return np.dtype({"bool": np.bool_, "f16": np.float16, "f32": np.float32, "f64": np.float64,
                     "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
                     "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64}[dt.name])


_ML_DTYPES = {"bf16": "bfloat16", "f8e4m3": "float8_e4m3fn", "f8e5m2": "float8_e5m2", "e8m0": "float8_e8m0fnu",
              "i4": "int4", "u4": "uint4"}


# tlc's dtype by the name of the NumPy dtype holding its values (`numpy_dtype`)
_BY_NUMPY_NAME = {**{v: k for k, v in _ML_DTYPES.items()},
                  "bool": "bool", "float16": "f16", "float32": "f32", "float64": "f64", "int8": "i8", "int16": "i16",
                  "int32": "i32", "int64": "i64", "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64"}


def from_numpy(dtype) -> DType | None:
    """The tlc dtype of a NumPy (or ml_dtypes) dtype, or None if tlc has none.  Found by the
    dtype's name, then compared in full (byte order): a CuPy or NumPy array's call no longer
    compares its dtype with every tlc dtype's, which imported ml_dtypes (its extension took
    0.8 s of a first call with CuPy arrays on the 2-core machine) for float16 as for bfloat16."""
    dtype = np.dtype(dtype)
    dt = DTYPES.get(_BY_NUMPY_NAME.get(dtype.name, ""))
    return dt if dt is not None and numpy_dtype(dt) == dtype else None


def _float_rank(dt: DType) -> int:
    return {"f8e4m3": 0, "f8e5m2": 0, "f16": 1, "bf16": 1, "f32": 2, "f64": 3}[dt.name]


def _with_e8m0(a: DType, b: DType) -> DType:
    """Rule P6: e8m0 (f32's range, one bit of precision) meeting another float: the float that
    holds both, f32 (f64 with f64), as nothing narrower holds e8m0's range nor it their values."""
    return F64 if F64 in (a, b) else F32


def promote(a: DType, b: DType) -> DType:
    """The dtype of `a OP b` for two non-literal operands (NumPy's rules, kept symmetric).

    Rule P1: equal dtypes stay.  P2: bool meets anything -> the other.  P3: an integer meets a
    float -> the float.  P4: two floats -> the wider; f16 with bf16 and two different f8 kinds
    meet at the next wider float that holds both (f32, f16).  P5: two integers of one
    signedness -> the wider; signed with unsigned -> a signed type wide enough for both
    (capped at i64; i4 with u4 -> i8).  P6: e8m0 with another float -> f32 (f64 with f64).
    """
    if a is b or a == b:
        return a
    if a.is_bool:
        return b
    if b.is_bool:
        return a
    if a.is_float and not b.is_float:
        return a
    if b.is_float and not a.is_float:
        return b
    if a.is_float:
        if "e8m0" in (a.name, b.name):
            return _with_e8m0(a, b)
        ra, rb = _float_rank(a), _float_rank(b)
        if ra != rb:
            return a if ra > rb else b
        return {0: F16, 1: F32}[ra]
    if a.kind == b.kind:
        return a if a.bits >= b.bits else b
    signed, unsigned = (a, b) if a.kind == "int" else (b, a)
    if signed.bits > unsigned.bits:
        return signed
    return DTYPES[f"i{min(64, unsigned.bits * 2)}"]


def can_widen(src: DType, dst: DType) -> bool:
    """Whether `src` converts to `dst` implicitly: never narrower, never float into integer."""
    if src == dst or src.is_bool:
        return True
    if dst.is_bool:
        return False
    if src.is_float:
        return dst.is_float and promote(src, dst) == dst and (src.bits < dst.bits or src == dst)
    if dst.is_float:
        return True
    return promote(src, dst) == dst


def gemm_operands_agree(a: DType, b: DType) -> bool:
    """Whether a gemm takes operands of dtypes `a` and `b`: one dtype, or the two f8 formats,
    or i8 with u8 (the mixes the tensor cores take)."""
    if a == b:
        return True
    f8 = ("f8e4m3", "f8e5m2")
    return (a.name in f8 and b.name in f8) or (a.name in ("i8", "u8") and b.name in ("i8", "u8"))


def power_or_shift_fits(a, b, op: str, bits: int) -> bool:
    """Whether the integer `a ** b` or `a << b` (`op`) stays within `bits` bits, judged from the
    operands' sizes alone, before it is computed (Python's exact `9 ** 9 ** 9` takes hours):
    the constant evaluator and the host's grid arithmetic refuse what does not."""
    if not (isinstance(a, int) and isinstance(b, int)):
        return True
    if op == "<<":
        return a == 0 or b < 0 or a.bit_length() + b <= bits
    # `**`: |a| >= 2 gives at least (bits of |a| - 1) * b bits
    return abs(a) <= 1 or b < 0 or (a.bit_length() - 1) * b <= bits
