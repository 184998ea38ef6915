"""C spellings: identifiers that never clash with C/CUDA keywords or the generated code's own
`tl_` names, C types of dtypes, and literals."""
from __future__ import annotations

import math

from ..dtypes import DType

# C, C++ and CUDA keywords and the names CUDA predefines in every kernel.
_RESERVED = frozenset("""
alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t char32_t class
compl concept const consteval constexpr constinit const_cast continue co_await co_return co_yield decltype
default delete do double dynamic_cast else enum explicit export extern false float for friend goto if inline
int long mutable namespace new noexcept not not_eq nullptr operator or or_eq private protected public register
reinterpret_cast requires return short signed sizeof static static_assert static_cast struct switch template
this thread_local throw true try typedef typeid typename union unsigned using virtual void volatile wchar_t
while xor xor_eq threadIdx blockIdx blockDim gridDim warpSize half half2 printf assert main dim3 uint4 uint2
int2 int4 float2 float4 tl std min max abs exp log sqrt
""".split())


def c_name(name: str) -> str:
    """A .tl identifier as a C identifier: unchanged unless it is reserved, starts with the
    generated code's prefix `tl_`, or with `__` (reserved to the implementation)."""
    if name in _RESERVED or name.startswith(("tl_", "__")) or name.startswith("_") and name[1:2].isupper():
        return f"{name}_"
    return name


_C_TYPES = {"bool": "bool", "i8": "signed char", "i16": "short", "i32": "int", "i64": "long long",
            "u8": "unsigned char", "u16": "unsigned short", "u32": "unsigned int", "u64": "unsigned long long",
            "f16": "half", "bf16": "__nv_bfloat16", "f32": "float", "f64": "double",
            "f8e4m3": "__nv_fp8_e4m3", "f8e5m2": "__nv_fp8_e5m2"}


def c_type(dt: DType) -> str:
    return _C_TYPES[dt.name]


def is_low_float(dt: DType) -> bool:
    return dt.name in ("f16", "bf16", "f8e4m3", "f8e5m2")


def compute_type(dt: DType) -> DType:
    """The dtype arithmetic of `dt` runs in: f32 for 16- and 8-bit floats, as `half` ops do."""
    from ..dtypes import F32

    return F32 if is_low_float(dt) else dt


def c_bool(flag) -> str:
    """A C bool literal (template arguments, flags)."""
    return "true" if flag else "false"


def literal(value, dt: DType) -> str:
    if dt.is_bool:
        return c_bool(value)
    if dt.is_float:
        v = float(value)
        if math.isnan(v):
            text = "__int_as_float(0x7fffffff)"
        elif math.isinf(v):
            text = ("-" if v < 0 else "") + "__int_as_float(0x7f800000)"
        elif dt.name == "f64":
            text = repr(v)
        else:
            text = repr(v) + "f" if ("." in repr(v) or "e" in repr(v)) else repr(v) + ".0f"
        if dt.name == "f64" and math.isinf(v):
            text = ("-" if v < 0 else "") + "__longlong_as_double(0x7ff0000000000000LL)"
        if is_low_float(dt):
            return f"tl::cvt<{c_type(dt)}>({text})"
        return text
    v = int(value)
    suffix = {"i64": "LL", "u32": "u", "u64": "ull"}.get(dt.name, "")
    if dt.name == "i32" and v == -2**31:
        return "(-2147483647 - 1)"
    if dt.name == "i64" and v == -2**63:
        return "(-9223372036854775807LL - 1)"
    text = f"{v}{suffix}"
    if dt.name in ("i8", "i16", "u8", "u16"):
        return f"static_cast<{c_type(dt)}>({text})"
    return text if v >= 0 else f"({text})"
