"""IR expressions -> C expressions.  Dispatches on the node class and fails loudly on one it
does not know.  16- and 8-bit float arithmetic goes through float and back, element loads ask
the target (`load`), which knows where each buffer lives."""
from __future__ import annotations

from .. import ir
from ..dtypes import DType
from .cnames import c_name, c_type, compute_type, literal


class CodegenError(Exception):
    """IR that this target cannot generate code for; carries a span for the diagnostic."""

    def __init__(self, message: str, span=None):
        super().__init__(message)
        self.span = span


_MATH_F32 = {"exp": "expf", "exp2": "exp2f", "fast_exp2": "tl::fast_exp2", "log": "logf", "log2": "log2f", "sqrt": "sqrtf", "rsqrt": "rsqrtf",
             "tanh": "tanhf", "fast_tanh": "tl::fast_tanh", "sigmoid": "tl::sigmoid", "erf": "erff", "sin": "sinf", "cos": "cosf",
             "abs": "fabsf", "floor": "floorf", "ceil": "ceilf", "round": "rintf", "pow": "powf"}
_MATH_F64 = {"exp": "exp", "exp2": "exp2", "fast_exp2": "exp2", "log": "log", "log2": "log2", "sqrt": "sqrt", "rsqrt": "rsqrt",
             "tanh": "tanh", "fast_tanh": "tanh", "sigmoid": "tl::sigmoid", "erf": "erf", "sin": "sin", "cos": "cos",
             "abs": "fabs", "floor": "floor", "ceil": "ceil", "round": "rint", "pow": "pow"}
# An exponential or tanh whose result is a 16-bit float is computed in f32 by the hardware
# approximation (tl::fast_exp2: 2 instructions, not expf's ~9; tl::fast_tanh: 1, not tanhf's
# ~20): its error, below 2^-21 (exp) or 2^-16 (tanh) relative, vanishes in the rounding to f16
# or bf16 (half an ulp: 2^-12, 2^-9).  f32 and f64 results keep the precise functions.
_FAST_16 = {"exp": "tl::fast_exp", "exp2": "tl::fast_exp2", "tanh": "tl::fast_tanh"}


def cvt(text: str, src: DType, dst: DType) -> str:
    return text if src == dst else f"tl::cvt<{c_type(dst)}>({text})"


class CExprs:
    def expr(self, e: ir.Expr) -> str:
        method = getattr(self, "expr_" + type(e).__name__, None)
        if method is None:
            raise CodegenError(f"no C for the IR expression {type(e).__name__}", getattr(e, "span", None))
        return method(e)

    def _in(self, e: ir.Expr, dt: DType) -> str:
        """`e` as a value of dtype `dt`."""
        return cvt(self.expr(e), e.dtype, dt)

    def expr_Const(self, e: ir.Const) -> str:
        return literal(e.value, e.dtype)

    def expr_Var(self, e: ir.Var) -> str:
        return self.var(e.name)

    def var(self, name: str) -> str:
        return c_name(name)

    def expr_Cast(self, e: ir.Cast) -> str:
        return cvt(self.expr(e.x), e.x.dtype, e.dtype)

    def expr_Select(self, e: ir.Select) -> str:
        return f"({self.expr(e.cond)} ? {self._in(e.a, e.dtype)} : {self._in(e.b, e.dtype)})"

    def expr_UnaryOp(self, e: ir.UnaryOp) -> str:
        if e.op == "not":
            return f"(!{self.expr(e.x)})"
        work = compute_type(e.dtype)
        inner = f"({e.op}{self._in(e.x, work)})"
        return cvt(inner, work, e.dtype)

    def expr_BinOp(self, e: ir.BinOp) -> str:
        op = e.op
        operand = e.a.dtype
        if op in ir.COMPARE_OPS:
            work = compute_type(operand)
            return f"({self._in(e.a, work)} {op} {self._in(e.b, work)})"
        if op in ("and", "or"):
            return f"({self.expr(e.a)} {'&&' if op == 'and' else '||'} {self.expr(e.b)})"
        work = compute_type(e.dtype)
        a, b = self._in(e.a, work), self._in(e.b, work)
        if op in ("+", "-", "*") or op in ir.BIT_OPS:
            text = f"({a} {op} {b})"
        elif op == "/":
            text = f"({a} / {b})" if work.is_float else f"tl::truncdiv({a}, {b})"
        elif op == "//":
            text = f"tl::floordiv({a}, {b})"
        elif op == "%":
            text = f"tl::pymod({a}, {b})"
        elif op == "**":
            text = f"{'powf' if work.name == 'f32' else 'pow'}({a}, {b})" if work.is_float else \
                f"static_cast<{c_type(work)}>(pow(static_cast<double>({a}), static_cast<double>({b})))"
        elif op in ("min", "max"):
            if work.is_float:
                text = f"f{op}{'f' if work.name == 'f32' else ''}({a}, {b})"
            else:
                text = f"tl::i{op}({a}, {b})"
        else:
            raise CodegenError(f"no C for the operator '{op}'", e.span)
        return cvt(text, work, e.dtype)

    def expr_Call(self, e: ir.Call) -> str:
        work = compute_type(e.dtype)
        args = [self._in(a, work) for a in e.args]
        if work.is_float:
            fn = (_MATH_F32 if work.name == "f32" else _MATH_F64)[e.fn]
            if e.dtype.bits == 16 and e.fn in _FAST_16:
                fn = _FAST_16[e.fn]
            return cvt(f"{fn}({', '.join(args)})", work, e.dtype)
        if e.fn == "abs":
            return f"({args[0]} < 0 ? -{args[0]} : {args[0]})"
        if e.fn in ("floor", "ceil", "round"):
            return args[0]
        raise CodegenError(f"{e.fn}() of an integer has no C here", e.span)

    def expr_Load(self, e: ir.Load) -> str:
        return self.load(e)
