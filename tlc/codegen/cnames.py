"""C spellings: identifiers that never clash with each other, with C/C++/CUDA names or with the
generated code's own, C types of dtypes, literals, and .tl text inside comments and strings."""
from __future__ import annotations

import functools
import math
import os
import re
import unicodedata

from ..dtypes import DType

# C++20 keywords and alternative tokens (contextual ones too: free to use, cheap to avoid).
_KEYWORDS = """
alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t char32_t class
compl concept const consteval constexpr constinit const_cast continue co_await co_return co_yield decltype
default delete do double dynamic_cast else enum explicit export extern false float for friend goto if inline
int long mutable namespace new noexcept not not_eq nullptr operator or or_eq private protected public register
reinterpret_cast requires return short signed sizeof static static_assert static_cast struct switch template
this thread_local throw true try typedef typeid typename union unsigned using virtual void volatile wchar_t
while xor xor_eq final override import module restrict
"""
# Names the generated file itself defines or uses unprefixed: the `tl` namespace, its macros, the
# launcher's `stream` parameter and the locals of its tensor-map blocks (kernel.cu.j2), and what a
# GNU dialect predefines.  Everything else it defines is `tl_...`, `TL_...` or `launch_<kernel>`.
_GENERATOR = """
tl std main stream dims strides box TL_PRIMITIVES TL_HAS_FP8 linux unix i386
"""
# Prefixes of generator-owned names, and of the CUDA headers' families (a later toolkit adds
# members that `c_reserved.txt` cannot list yet).
_OWNED_PREFIXES = ("tl_", "TL_", "launch_")
_FAMILY = re.compile(r"cuda|CUDA|CU_|cu[A-Z]|NV_|nv_|PFN_|make_|FLT_|DBL_|LDBL_")
_PLAIN = re.compile(r"[A-Za-z][A-Za-z0-9_]*")


@functools.lru_cache(maxsize=1)
def reserved() -> frozenset:
    """Every name a user name must not become: keywords, the generator's own, and the names
    that the headers a generated file includes declare or define at global scope (macros,
    functions, types, enumerators, CUDA's built-in variables), listed by
    `scripts/c-reserved-names` in `c_reserved.txt`."""
    # beside this module (importlib.resources would import zipfile for it: ~2.5 ms of a first call, #15)
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "c_reserved.txt"), encoding="utf-8") as f:
        listed = f.read().split()
    return frozenset(_KEYWORDS.split()) | frozenset(_GENERATOR.split()) | frozenset(listed)


def _unsafe(name: str) -> bool:
    return (name in reserved() or not _PLAIN.fullmatch(name) or name.startswith(_OWNED_PREFIXES)
            or name.endswith("_") or "__" in name or _FAMILY.match(name) is not None)


def _escape(name: str) -> str:
    """Every `_` as `_1`, every character but an ASCII letter or digit (a non-ASCII letter) as `_2`
    and six hex digits: afterwards every `_` is followed by a digit."""
    return "".join("_1" if ch == "_" else ch if ch.isascii() and ch.isalnum() else f"_2{ord(ch):06x}" for ch in name)


@functools.lru_cache(maxsize=None)
def c_name(name: str) -> str:
    """A .tl identifier as a C identifier, injectively.

    A *safe* name (ASCII letters, digits and `_`, a letter first, not reserved, not of a
    reserved family, no trailing `_`, no `__`, not `tl_`/`TL_`/`launch_`...) stays as it is.
    Any other name `n` becomes `P + _escape(n) + "_"`, where `P` is `x_0` when `_escape(n)`
    starts with `_` (a leading `_` or non-ASCII character) and empty otherwise: `half` -> `half_`, `half_` -> `half_1_`,
    `tl_x` -> `tl_1x_`, `_k` -> `x_0_1k_`, `é` -> `x_0_20000e9_`.

    Injective: a safe name's C name does not end in `_` and an escaped one does, so the two kinds
    never meet; between escaped names, drop the final `_`, then a leading `x_0` (`_escape` never
    writes `_0`, so it is the marker), then read `_1` as `_` and `_2hhhhhh` as that code point:
    the result is `n` again, so `n` is a function of its C name.

    Never reserved and never the generator's: an escaped name holds no `__`, does not start with
    `_` (every `_` of `_escape(n)` is followed by a digit, the last character is the one `_`
    added), and has a digit after each inner `_`, while the generator's own names are `tl_`,
    `TL_` or `launch_` and a letter, and no listed C name has that shape
    (tests/codegen/test_cnames.py checks the list).
    """
    if not _unsafe(name):
        return name
    text = _escape(name)
    return ("x_0" if text.startswith("_") else "") + text + "_"


def arg_c_name(arg) -> str:
    """A kernel argument's C name: a dimension the launch computes (`KernelArg.kind` "dim",
    schedule/host_dims.py) is the generator's own `tl_dim<i>`; any other is its .tl name's."""
    return arg.name if arg.kind == "dim" else c_name(arg.name)


def _code(ch: str) -> str:
    return f"\\x{{{ord(ch):x}}}"


def comment_text(text: str) -> str:
    """`text` (a .tl line, a file name) as the body of a `//` comment that it cannot end, continue
    or turn into code: a backslash, a control, format or line-separator character (CR, form
    feed, vertical tab, NEL, U+2028, bidi controls), the second `?` of `??` (a trigraph) and the
    `/` of `*/` are written `\\x{hex}`; every backslash left then starts such an escape, so none
    ends the line.  Other characters, non-ASCII letters included, stay as they are."""
    out = []
    for i, ch in enumerate(text):
        invisible = ch not in " \t" and unicodedata.category(ch)[0] in "CZ"
        ends = ch == "\\" or (ch == "?" and text[i - 1:i] == "?") or (ch == "/" and text[i - 1:i] == "*")
        out.append(_code(ch) if invisible or ends else ch)
    return "".join(out)


_STRING_ESCAPES = {"\\": "\\\\", '"': '\\"', "?": "\\?", "\n": "\\n", "\t": "\\t"}


def c_string(text: str) -> str:
    """`text` as a C string literal, quotes included: printable ASCII as it is, `\\`, `"`, `?`
    (trigraphs), newline and tab escaped, every other byte of its UTF-8 as a three-digit octal
    escape (which, unlike `\\x`, cannot run into the next character)."""
    out = []
    for ch in text:
        if ch in _STRING_ESCAPES:
            out.append(_STRING_ESCAPES[ch])
        elif " " <= ch <= "~":
            out.append(ch)
        else:
            out.extend(f"\\{b:03o}" for b in ch.encode("utf-8", "surrogatepass"))
    return '"' + "".join(out) + '"'


_C_TYPES = {"bool": "bool", "i8": "signed char", "i16": "short", "i32": "int", "i64": "long long",
            "u8": "unsigned char", "u16": "unsigned short", "u32": "unsigned int", "u64": "unsigned long long",
            "f16": "half", "bf16": "__nv_bfloat16", "f32": "float", "f64": "double",
            "f8e4m3": "__nv_fp8_e4m3", "f8e5m2": "__nv_fp8_e5m2",
            # a value in registers; no generator emits these yet (codegen.INTERPRETER_ONLY, E420)
            "i4": "signed char", "u4": "unsigned char", "e8m0": "__nv_fp8_e8m0"}


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
    v = dt.wrap(int(value))  # as the interpreter's: `b < 3000000000` of an i32 b compared in 64 bits
    suffix = {"i64": "LL", "u32": "u", "u64": "ull"}.get(dt.name, "")
    if dt.name == "i32" and v == -2**31:
        return "(-2147483647 - 1)"
    if dt.name == "i64" and v == -2**63:
        return "(-9223372036854775807LL - 1)"
    text = f"{v}{suffix}"
    if dt.name in ("i8", "i16", "u8", "u16"):
        return f"static_cast<{c_type(dt)}>({text})"
    return text if v >= 0 else f"({text})"
