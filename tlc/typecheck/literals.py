"""T11: an integer literal that takes a typed operand's integer dtype (T1) must fit that dtype
(E157).  Wrapping it (`x < 200` of an i8 x comparing with -56, `t & 255` being `t & -1`) would
be silently wrong; NumPy 2 raises for such a Python int as well (NEP 50).  A literal is also a
constant expression of literals (`-128`, `2**7`); module constants and `const` parameters are
typed (i32 or i64) and promote instead, so they never meet this rule."""
from __future__ import annotations

from ..dtypes import DTYPES, DType, promote
from ..parser import nodes as n
from . import consteval
from .types import ScalarType, TensorType, format_dim

BIT_OPS = ("&", "|", "^")
_WIDER = [DTYPES[name] for name in ("i16", "i32", "i64", "u16", "u32", "u64")]


def int_range(dt: DType) -> tuple[int, int]:
    if dt.kind == "int":
        return -2**(dt.bits - 1), 2**(dt.bits - 1) - 1
    return 0, 2**dt.bits - 1


def typed_int(t) -> DType | None:
    """The integer dtype that a literal meeting `t` takes (T1), or None."""
    if isinstance(t, TensorType) or (isinstance(t, ScalarType) and not t.weak):
        return t.dtype if t.dtype.is_int else None
    return None


def literal_value(checker, e) -> int | None:
    """The value of `e` when it is a weak integer literal (or constant expression of them)."""
    if not (isinstance(e.ty, ScalarType) and e.ty.weak and e.ty.dtype.is_int):
        return None
    try:
        v = consteval.evaluate(e, checker.consts)
    except consteval.NotConstant:
        return None
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def check_operands(checker, op: str, left, right) -> None:
    """`left op right` (binary, comparison): a literal on either side fits the other's dtype;
    a shift's count is a count, not a value of the dtype."""
    for lit, other, lit_left in ((left, right, True), (right, left, False)):
        if op in ("<<", ">>") and not lit_left:
            continue
        dt = typed_int(other.ty)
        if dt is not None:
            _check(checker, lit, dt, f"the other operand of '{op}'",
                   lambda v, lit=lit, other=other, lit_left=lit_left, dt=dt: _op_hint(op, lit, other, lit_left, dt, v))


def check_augmented(checker, op: str, target, value) -> None:
    """`target op= value`: the literal takes the target's dtype (a shift's count is a count)."""
    dt = typed_int(target.ty)
    if dt is not None and op not in ("<<", ">>"):
        _check(checker, value, dt, f"the target of '{op}='")


def check_arguments(checker, what: str, operands) -> None:
    """where/min/max/cdiv, a conditional expression: literal operands take the dtype the typed
    ones unify to (`what` names those)."""
    typed = [typed_int(o.ty) for o in operands if typed_int(o.ty) is not None]
    if not typed or any(o.ty.dtype.is_float for o in operands):
        return
    dt = typed[0]
    for t in typed[1:]:
        dt = promote(dt, t)  # T2
    for o in operands:
        _check(checker, o, dt, what)


def check_store(checker, value, dt: DType, what: str) -> None:
    """A literal stored, assigned or passed into `what`, of integer dtype `dt`."""
    if dt.is_int:
        _check(checker, value, dt, what, None)


def _check(checker, lit, dt: DType, what: str, hint_for=None) -> None:
    v = literal_value(checker, lit)
    if v is None:
        return
    lo, hi = int_range(dt)
    if lo <= v <= hi:
        return
    text = format_dim(lit)
    name = f"the literal {v}" if text in (str(v), "?") else f"the literal {text} = {v}"
    if hint_for is not None and not (dt.kind == "uint" and v == -1):
        hint = hint_for(v)
    else:
        hint = f"write ~{dt}(0) or {hi} for all bits set" if dt.kind == "uint" and v == -1 \
            else f"write a literal within {lo}..{hi}, or convert explicitly"
    checker.error("E157", f"{name} does not fit {dt}, the type of {what}", lit.span, hint)


def _op_hint(op: str, lit, other, lit_left: bool, dt: DType, v: int) -> str:
    lo, hi = int_range(dt)
    text, other_text = format_dim(lit), _operand_text(other)
    within = f"a literal within {lo}..{hi}"
    wider = next((w for w in _WIDER if w.bits > dt.bits and (w.kind == "int" or dt.kind == "uint")
                  and int_range(w)[0] <= v <= int_range(w)[1]), None)
    widened = "" if wider is None else \
        f"{text} {op} {wider}({other_text})" if lit_left else f"{wider}({other_text}) {op} {text}"
    if op in BIT_OPS and dt.kind == "int" and 0 <= v < 2**dt.bits:
        # a mask such as `x & 0xFF` of an i8 x: say what the bits are as the dtype
        same = f"{dt.wrap(v)} {op} {other_text}" if lit_left else f"{other_text} {op} {dt.wrap(v)}"
        return (f"{text} is {dt.wrap(v)} as an {dt}: write {same} for the same bits"
                + (f", or {widened} to compute in {wider}" if wider else ""))
    return f"write {widened}, or {within}" if wider else f"write {within}"


def _operand_text(e) -> str:
    text = format_dim(e)
    if isinstance(e, n.Subscript):
        text = f"{format_dim(e.value)}[{', '.join(format_dim(i) for i in e.indices)}]"
    return text if "?" not in text else "..."
