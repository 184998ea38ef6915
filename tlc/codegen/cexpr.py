"""IR expressions -> C expressions.  Dispatches on the node class and fails loudly on one it
does not know.  16- and 8-bit float arithmetic goes through float and back, element loads ask
the target (`load`), which knows where each buffer lives."""
from __future__ import annotations

from .. import ir
from ..dtypes import F32, DType, lookup
from ..ir.walk import subexprs
from .cnames import c_name, c_type, compute_type, literal
from .ranges import in_dtype_range, open_range
from .rare_runs import RARE_POWS, rare_pow_call


class CodegenError(Exception):
    """IR that this target cannot generate code for; carries a span for the diagnostic."""

    def __init__(self, message: str, span=None):
        super().__init__(message)
        self.span = span


_MATH_F32 = {"exp": "expf", "exp2": "exp2f", "fast_exp2": "tl::fast_exp2", "fast_log2": "tl::fast_log2", "fast_log1p": "tl::fast_log1p", "fast_pow": "tl::fast_pow", "fast_pow_near": "tl::fast_pow_near", "fast_pow_rare": "tl::fast_pow_rare", "fast_pow_near_rare": "tl::fast_pow_near_rare", "fast_div": "tl::fast_div", "fast_div_near": "tl::fast_div_near", "fast_sqrt": "tl::fast_sqrt", "log": "logf", "log2": "log2f", "log1p": "log1pf", "sqrt": "sqrtf", "rsqrt": "rsqrtf",
             "tanh": "tanhf", "fast_tanh": "tl::fast_tanh", "sigmoid": "tl::sigmoid", "erf": "erff", "sin": "sinf", "cos": "cosf",
             "tan": "tanf", "atan": "atanf", "fast_atan": "tl::fast_atan", "fast_tan": "tl::fast_tan", "fast_tan_near": "tl::fast_tan_near",
             "fast_sin": "tl::fast_sin", "fast_sin_near": "tl::fast_sin_near", "fast_cos": "tl::fast_cos",
             "fast_cos_near": "tl::fast_cos_near",
             "fast_erf": "tl::fast_erf", "asinh": "asinhf", "atanh": "atanhf", "fast_asinh": "tl::fast_asinh",
             "fast_asinh_near": "tl::fast_asinh_near",
             "fast_atanh": "tl::fast_atanh", "asin": "asinf", "acos": "acosf", "fast_asin": "tl::fast_asin",
             "fast_acos": "tl::fast_acos", "acosh": "acoshf", "fast_acosh": "tl::fast_acosh",
             "fast_acosh_near": "tl::fast_acosh_near", "expm1": "expm1f",
             "fast_expm1": "tl::fast_expm1",
             "abs": "fabsf", "floor": "floorf", "ceil": "ceilf", "round": "rintf", "pow": "powf", "fmod": "tl::fmod_fast",
             "atan2": "atan2f", "fast_atan2": "tl::fast_atan2", "fast_atan2_near": "tl::fast_atan2_near"}
_MATH_F64 = {"exp": "exp", "exp2": "exp2", "fast_exp2": "exp2", "fast_log2": "log2", "fast_log1p": "log1p", "fast_pow": "pow", "fast_pow_near": "pow", "fast_pow_rare": "pow", "fast_pow_near_rare": "pow", "fast_div": "tl::fast_div", "fast_div_near": "tl::fast_div", "fast_sqrt": "sqrt", "log": "log", "log2": "log2", "log1p": "log1p", "sqrt": "sqrt", "rsqrt": "rsqrt",
             "tanh": "tanh", "fast_tanh": "tanh", "sigmoid": "tl::sigmoid", "erf": "erf", "sin": "sin", "cos": "cos",
             "tan": "tan", "atan": "atan", "fast_atan": "atan", "fast_tan": "tan", "fast_tan_near": "tan", "fast_erf": "erf",
             "fast_sin": "sin", "fast_sin_near": "sin", "fast_cos": "cos", "fast_cos_near": "cos",
             "asinh": "asinh", "atanh": "atanh", "fast_asinh": "asinh", "fast_asinh_near": "asinh", "fast_atanh": "atanh",
             "asin": "asin", "acos": "acos", "fast_asin": "asin", "fast_acos": "acos", "acosh": "acosh",
             "fast_acosh": "acosh", "fast_acosh_near": "acosh", "expm1": "expm1", "fast_expm1": "expm1",
             "abs": "fabs", "floor": "floor", "ceil": "ceil", "round": "rint", "pow": "pow", "fmod": "fmod",
             "atan2": "atan2", "fast_atan2": "atan2", "fast_atan2_near": "atan2"}
# An exponential, logarithm or tanh whose result is a 16-bit float is computed in f32 by the
# hardware approximation (tl::fast_exp2: 2 instructions, not expf's ~9; tl::fast_log2: 12, not
# log2f's ~25; tl::fast_tanh: 1, not tanhf's ~20), and atan, atan2, tan, erf, asinh, atanh, sin, cos, acosh and expm1 by
# short polynomials (tl::fast_atan 12, not atanf's 18, ...): its error, below 2^-21 (exp), 2^-20
# (log), 2^-19 (sin, cos), 2^-20 (acosh), 2^-17 (atan, atan2, tan, erf, asinh, atanh, expm1) or 2^-16 (tanh) relative, vanishes in the rounding to f16
# or bf16 (half an ulp: 2^-12, 2^-9).
# f32 and f64 results keep the precise functions.
_FAST_16 = {"exp": "tl::fast_exp", "exp2": "tl::fast_exp2", "log": "tl::fast_log", "log2": "tl::fast_log2",
            "log1p": "tl::fast_log1p", "tanh": "tl::fast_tanh", "atan": "tl::fast_atan", "tan": "tl::fast_tan",
            "erf": "tl::fast_erf", "asinh": "tl::fast_asinh", "atanh": "tl::fast_atanh",
            "asin": "tl::fast_asin", "acos": "tl::fast_acos", "sin": "tl::fast_sin", "cos": "tl::fast_cos",
            "acosh": "tl::fast_acosh", "expm1": "tl::fast_expm1", "atan2": "tl::fast_atan2"}


# Integer operators whose C differs from the language's (floor division, Python remainder,
# division by zero, shift counts outside the width, powers): tl/types.cuh templates.
_INT_TEMPLATES = {"/": "truncdiv", "//": "floordiv", "%": "pymod", "<<": "shl", ">>": "shr",
                  "**": "ipow", "min": "imin", "max": "imax"}


# Integer operators whose C agrees with the language's where the operands' ranges are known:
# `//`, `/` and `%` of a non-negative value by a positive one, `>>` by a count inside the width.
# Written as C's own operators there (a division in unsigned, so that nvcc needs no sign
# fixups), nvcc sees through them: `j % 8 // 2` of a fragment's column `(lane % 4) * 2 + r % 2`
# is `lane % 4` for both registers of a pair, so their loads of one word merge (std.gemm's
# w4a16 kernel: 8 shared loads a K step where the templates left 64).
_PLAIN_WHEN_IN_RANGE = {"//": "/", "/": "/", "%": "%", ">>": ">>"}


_CHEAP_CALLS = frozenset({"abs", "floor", "ceil", "round", "bitcast", "thread_index", "grid_blocks"})


def _calls_math(e: ir.Expr) -> bool:
    """Whether `e` calls a math function of more than an instruction or two (exp, a fast form, ...)."""
    if isinstance(e, ir.Call) and e.fn not in _CHEAP_CALLS:
        return True
    return any(_calls_math(x) for x in (getattr(e, "a", None), getattr(e, "b", None), getattr(e, "x", None),
                                         getattr(e, "cond", None), *getattr(e, "args", ())) if isinstance(x, ir.Expr))


def _const_value(e: ir.Expr):
    """The value of a constant, through integer casts of it; None for anything else."""
    while isinstance(e, ir.Cast) and e.dtype.is_int:
        e = e.x
    return e.value if isinstance(e, ir.Const) else None


def _is_constant(e: ir.Expr) -> bool:
    return isinstance(e, ir.Const) or (isinstance(e, ir.Cast) and _is_constant(e.x))


def wrap_narrow(text: str, dt: DType) -> str:
    """`text`, an integer C expression of dtype `dt`, wrapped to `dt` where C computed it in
    int: C promotes 8- and 16-bit operands to int, the language computes in their dtype
    (`u8` 253 + 253 is 250), and the C type must stay `dt` for the templates' overloads."""
    return f"static_cast<{c_type(dt)}>{text}" if dt.is_int and dt.bits < 32 else text


def _exact_widened(e: ir.Expr) -> bool:
    """Whether `e` is a min, max or select of 16- or 8-bit floats: its value in a wider float is
    one of its operands' there (CExprs._in)."""
    return e.dtype.is_float and e.dtype.bits <= 16 and (
        isinstance(e, ir.Select) or (isinstance(e, ir.BinOp) and e.op in ("min", "max")))


def _float_binop(op: str, a: str, b: str, work: DType, span) -> str:
    f32 = work.name == "f32"
    if op in ("+", "-", "*", "/"):
        return f"({a} {op} {b})"
    if op in ("//", "%"):
        return f"tl::{'floordiv' if op == '//' else 'pymod'}({a}, {b})"
    if op == "**":
        return f"{'powf' if f32 else 'pow'}({a}, {b})"
    if op in ("min", "max"):
        return f"f{op}{'f' if f32 else ''}({a}, {b})"
    raise CodegenError(f"no C for the operator '{op}' on {work.name}", span)


# CUDA's bit casts between a float and the integer of its width (unsigned where there are both)
_AS_BITS = {"f32": ("__float_as_uint", "__uint_as_float", "u32"), "f64": ("__double_as_longlong", "__longlong_as_double", "i64"),
            "f16": ("__half_as_ushort", "__ushort_as_half", "u16"), "bf16": ("__bfloat16_as_ushort", "__ushort_as_bfloat16", "u16")}


def bitcast(text: str, src: DType, dst: DType) -> str:
    """`text` of dtype `src` with its bits read as `dst`, of the same width: through the float's
    own intrinsic and the integer of its width (integers convert among themselves, keeping the
    bits); an 8-bit float through its storage byte."""
    from ..dtypes import lookup

    if src == dst:
        return text
    if src.name in _AS_BITS:
        to_bits, _, bits = _AS_BITS[src.name]
        text, src = f"{to_bits}({text})", lookup(bits)
    elif src.name.startswith("f8"):
        text, src = f"static_cast<unsigned char>(({text}).__x)", lookup("u8")
    if dst.name in _AS_BITS:
        _, from_bits, bits = _AS_BITS[dst.name]
        return f"{from_bits}(static_cast<{c_type(lookup(bits))}>({text}))"
    if dst.name.startswith("f8"):
        return f"tl::fp8_from_bits<{c_type(dst)}>(static_cast<unsigned char>({text}))"
    return f"static_cast<{c_type(dst)}>({text})"


def cvt(text: str, src: DType, dst: DType) -> str:
    return text if src == dst else f"tl::cvt<{c_type(dst)}>({text})"


# f16 and bf16 operations done in their own type on the GPU (CExprs.native_16)
# (the _rn forms: a product and a sum would otherwise be contracted into one fma, rounded once)
_NATIVE_16 = {"+": "__hadd_rn", "-": "__hsub_rn", "*": "__hmul_rn"}


class CExprs:
    native_16 = True  # 16-bit float +, -, * by cuda_fp16.h / cuda_bf16.h (the cpu target's C++: False)
    rare_flag = None  # in a run's pass of rare_runs.py: its flag's C name, or "" for the selects' pass

    def expr(self, e: ir.Expr) -> str:
        method = getattr(self, "expr_" + type(e).__name__, None)
        if method is None:
            raise CodegenError(f"no C for the IR expression {type(e).__name__}", getattr(e, "span", None))
        return method(e)

    def _in(self, e: ir.Expr, dt: DType) -> str:
        """`e` as a value of dtype `dt`.  A min, max or select of 16- or 8-bit floats wanted as a
        wider float is computed in that float: its value is one of its operands', exactly, so
        rounding it to the narrow type first and widening it again (F2FP and HADD2.F32 an element
        on sm_90a; std.elementwise's convert_sat clamps an f16 x so) changes nothing."""
        if dt.is_float and dt.bits > e.dtype.bits and _exact_widened(e):
            if isinstance(e, ir.Select):
                return self._select(e, dt)
            return _float_binop(e.op, self._in(e.a, dt), self._in(e.b, dt), dt, e.span)
        return cvt(self.expr(e), e.dtype, dt)

    def expr_Const(self, e: ir.Const) -> str:
        return literal(e.value, e.dtype)

    def expr_Var(self, e: ir.Var) -> str:
        return self.var(e.name)

    def var(self, name: str) -> str:
        return c_name(name)

    def expr_Cast(self, e: ir.Cast) -> str:
        if _exact_widened(e.x):  # a narrow float converts through f32 anyway
            return cvt(self._in(e.x, F32), F32, e.dtype)
        return cvt(self.expr(e.x), e.x.dtype, e.dtype)

    def expr_Select(self, e: ir.Select) -> str:
        return self._select(e, e.dtype)

    def _select(self, e: ir.Select, dt: DType) -> str:
        """`e`, its arms as values of `dt`."""
        a, b = self._in(e.a, dt), self._in(e.b, dt)
        if (e.dtype.is_float and (_calls_math(e.a) or _calls_math(e.b))
                and not (_is_constant(e.a) or _is_constant(e.b))):
            # both arms computed, then selected: as `?:` operands NVVM made a branch an element of
            # an arm that calls a function (std.elementwise's sinh: 20.4 SASS instructions an
            # element for both arms and the branch, 12.4 on either path), which divergent
            # elements take both sides of.  A mask (one arm a constant) stays a `?:`: its
            # condition is uniform across most warps, and the select's live arm cost std.reduce's
            # lse row kernel a spilled register (ptxas, sm_90a, 3 blocks an SM)
            return f"tl::select({self.expr(e.cond)}, {a}, {b})"
        return f"({self.expr(e.cond)} ? {a} : {b})"

    def expr_UnaryOp(self, e: ir.UnaryOp) -> str:
        if e.op == "not":
            return f"(!{self.expr(e.x)})"
        work = compute_type(e.dtype)
        x = self._in(e.x, work)
        sep = " " if x.startswith(e.op) else ""  # `- -0.5f`: `--0.5f` would be a decrement
        inner = wrap_narrow(f"({e.op}{sep}{x})", e.dtype)
        return cvt(inner, work, e.dtype)

    def expr_BinOp(self, e: ir.BinOp) -> str:
        op = e.op
        operand = e.a.dtype
        if op in ir.COMPARE_OPS:
            work = compute_type(operand)
            return f"({self._in(e.a, work)} {op} {self._in(e.b, work)})"
        if op in ("and", "or"):
            return f"({self.expr(e.a)} {'&&' if op == 'and' else '||'} {self.expr(e.b)})"
        if self.native_16 and op in _NATIVE_16 and e.dtype.name in ("f16", "bf16") \
                and e.a.dtype == e.dtype and e.b.dtype == e.dtype:
            # CUDA's own half and bfloat16 operations, each rounded once to nearest even: the
            # same value as in f32 rounded once (f32's 24 bits hold twice a 16-bit float's
            # significand plus two, so rounding twice never differs), and nvcc pairs them into
            # HADD2 / HMUL2 where two registers of a fragment pair take the same operations.
            # The _rn forms, as the language rounds each operation: __hmul then __hadd would
            # be contracted into one HFMA2, rounded once (the GPU test caught it)
            return f"{_NATIVE_16[op]}({self.expr(e.a)}, {self.expr(e.b)})"
        if self.native_16 and op in ("min", "max") and e.dtype.name in ("f16", "bf16") \
                and e.a.dtype == e.dtype and e.b.dtype == e.dtype:
            # exact in their own type (__hmin / __hmax: a NaN operand gives the other, as fminf
            # and fmaxf), and nvcc pairs a fragment pair's two into HMNMX2 where through float
            # each took two widenings, an FMNMX and a share of a rounding: std.broadcast.clamp
            # of f16, 32 elements a thread, 176 -> 32 instructions for its minima and maxima
            return f"__h{op}({self.expr(e.a)}, {self.expr(e.b)})"
        work = compute_type(e.dtype)
        a, b = self._in(e.a, work), self._in(e.b, work)
        if work.is_float:
            text = _float_binop(op, a, b, work, e.span)
        elif op in _PLAIN_WHEN_IN_RANGE and self._plain_c_agrees(e):
            c_op = _PLAIN_WHEN_IN_RANGE[op]
            if op != ">>" and work.kind == "int":  # unsigned, as nvcc divides a known non-negative value
                u = c_type(lookup(f"u{work.bits}"))
                text = f"static_cast<{c_type(work)}>(static_cast<{u}>({a}) {c_op} static_cast<{u}>({b}))"
            else:
                text = wrap_narrow(f"({a} {c_op} {b})", work)
        elif op in _INT_TEMPLATES:  # T named: C would deduce int for an 8- or 16-bit operand
            if op in ("//", "%") and work.kind == "int":
                a = self._never_negative(e.a, a)
            text = f"tl::{_INT_TEMPLATES[op]}<{c_type(work)}>({a}, {b})"
        elif op in ("+", "-", "*", "&", "|", "^"):
            if op == "*" and work.name == "u16":  # promoted to int, 65535 * 65535 overflows
                a = f"static_cast<unsigned int>({a})"
            text = wrap_narrow(f"({a} {op} {b})", work)
        else:
            raise CodegenError(f"no C for the operator '{op}'", e.span)
        return cvt(text, work, e.dtype)

    def _never_negative(self, e: ir.Expr, text: str) -> str:
        """`text`, the C of the dividend `e` of a `//` or `%` that stays tl::floordiv's or
        tl::pymod's, said to nvcc to be never negative (tl::nonneg) where the open ranges prove it
        (ranges.open_range: C's int arithmetic, which does not wrap) from a scalar or a size that
        it reads: nvcc sees that block indices and loop counters are not negative, but not that
        a product of two such values is (std.gemm's matmul_w4a16_splitk: its K step
        `(bz * steps + k) * BK + j`, `steps = cdiv(cdiv(K, BK), S)`, kept every weight's
        floordiv and pymod of the group, 5152 SASS and 254 registers at BM = 8, BK = 512 against
        matmul_w4a16's 2480 and 64).  A proof that takes the arrays' sizes as not negative says
        so only to NVRTC's builds (tl::sized_nonneg), which assume them (kernel.cu.j2)."""
        hints = getattr(self, "sign_hints", None)
        if hints is None or not any(isinstance(v, ir.Var) and v.name in hints.names for v in subexprs(e)):
            return text
        env = {**hints.scalars, **self.ranges, **hints.loops}
        lo = open_range(e, env)[0]
        if lo is not None and lo >= 0:
            return f"tl::nonneg({text})"
        lo = open_range(e, {**hints.sizes, **hints.sized_scalars, **self.ranges, **hints.loops})[0]
        return f"tl::sized_nonneg({text})" if lo is not None and lo >= 0 else text

    def _plain_c_agrees(self, e: ir.BinOp) -> bool:
        """Whether C's own operator computes integer BinOp `e` (`_PLAIN_WHEN_IN_RANGE`): the
        ranges of the generator's known variables (`self.ranges`: block indices, loop
        variables, scalars) prove it, every subexpression's range inside its dtype (so that
        nothing wrapped on the way)."""
        known = getattr(self, "ranges", None)
        if not known:
            return False
        b = in_dtype_range(e.b, known)
        if b is None:
            return False
        if e.op == ">>":  # any value shifted: C's >> of a negative int is arithmetic in nvcc and g++
            return 0 <= b[0] and b[1] < e.dtype.bits
        a = in_dtype_range(e.a, known)
        return a is not None and a[0] >= 0 and b[0] > 0

    def _word_half(self, e: ir.Call) -> str | None:
        """reinterpret(u16(w), T) / reinterpret(u16(w >> 16), T) of a u32 `w`, T f16 or bf16:
        the word's low / high half through tl::u32_half_lo / _hi (templates/tl/types.cuh), which
        PTX splits with one mov.b32, so that ptxas pairs the two halves' f16 operations on the
        word itself (a shift and a conversion: SHF + PRMT a word to pack them again)."""
        x = e.args[0]
        if e.dtype.name not in ("f16", "bf16") or not isinstance(x, ir.Cast) or x.dtype.name != "u16" \
                or x.x.dtype.name != "u32":
            return None
        w, side = x.x, "lo"
        if isinstance(w, ir.BinOp) and w.op == ">>" and _const_value(w.b) == 16:
            w, side = w.a, "hi"
        return f"tl::u32_{'half' if e.dtype.name == 'f16' else 'bf16'}_{side}({self.expr(w)})"

    def expr_Call(self, e: ir.Call) -> str:
        if e.fn == "bitcast":
            half = self._word_half(e) if self.native_16 else None
            if half is not None:
                return half
            return bitcast(self.expr(e.args[0]), e.args[0].dtype, e.dtype)
        if e.fn == "thread_index":
            return "static_cast<int>(threadIdx.x)"
        if e.fn == "grid_blocks":
            return "static_cast<int>(gridDim.x)"
        work = compute_type(e.dtype)
        args = [self._in(a, work) for a in e.args]
        if self.rare_flag is not None and e.fn in RARE_POWS and work == F32:  # a run's pass (rare_runs.py)
            return cvt(rare_pow_call(e.fn, args, self.rare_flag), work, e.dtype)
        if work.is_float:
            fn = (_MATH_F32 if work.name == "f32" else _MATH_F64)[e.fn]
            if e.dtype.bits == 16 and e.fn in _FAST_16:
                fn = _FAST_16[e.fn]
            return cvt(f"{fn}({', '.join(args)})", work, e.dtype)
        if e.fn == "abs":
            return f"tl::iabs<{c_type(work)}>({args[0]})"
        if e.fn in ("floor", "ceil", "round"):
            return args[0]
        raise CodegenError(f"{e.fn}() of an integer has no C here", e.span)

    def expr_Load(self, e: ir.Load) -> str:
        return self.load(e)
