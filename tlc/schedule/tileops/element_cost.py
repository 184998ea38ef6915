"""The instructions an element-wise kernel's math costs an element, estimated from its tile IR
after the fast forms (fast_math.py): what the long-math rule of rules.py (`Rules.ew_long_math`)
reads.

Each node of the values its `parallel` loops compute and store counts about the SASS
instructions it becomes on sm_90a (ptxas 13, read with cuobjdump): an arithmetic operation,
comparison, select or conversion one; a call its function's sequence (tl::fast_log2 12,
tl::fast_exp2 2, fast_div's div.full.f32 9, erff about 20, ...).  A name's value counts where
it is computed, once (`x = ...` is a scalar; its uses are registers), and so does a
subexpression written out more than once (an inlined device function's argument at each of its
uses: nvcc computes it once); `a * b + c` counts one (an FFMA), a float negation none (a sign
flag of the instruction that reads it).  Against the SASS of std.elementwise's f16 kernels
(sm_90a, one run a thread, the identity kernel's instructions taken off, per element): erf 17
for 14.1 (tl::fast_erf; erff's 22 for 21.8), log1p 15 for 15.2, atan 15 for 12.2 (tl::fast_atan),
tan 18 for 14.5, asinh 13 for 11.0 (tl::fast_asinh_near; asinhf's 36 for 36.4), elu 14 for 10.0
(tl::fast_expm1), gelu_bwd 24 for 18.1, hardswish_bwd 10 for 4.6 on the hot path (9.6 in all);
before the last three rules the estimate was up to twice the SASS (sinh 40 for 20.4, celu 43 for
26.9 in all).
"""
from __future__ import annotations

from ... import ir
from ...ir.walk import statements

# SASS instructions of one call, f32 (the 16-bit forms are the fast_* ones)
CALL_COST = {
    "fast_exp2": 2, "exp": 10, "exp2": 8, "fast_log2": 12, "fast_log1p": 13, "log": 25, "log2": 25,
    "log1p": 30, "fast_sqrt": 2, "sqrt": 8, "rsqrt": 2, "fast_tanh": 1, "tanh": 20, "sigmoid": 5, "erf": 20, "fast_erf": 15,
    "atan": 18, "fast_atan": 13, "tan": 23, "fast_tan": 21, "fast_tan_near": 16,
    "fast_sin": 16, "fast_sin_near": 11, "fast_cos": 18, "fast_cos_near": 13,
    "asinh": 36, "fast_asinh": 16, "fast_asinh_near": 11, "atanh": 32, "fast_atanh": 13, "asin": 22, "fast_asin": 13, "acos": 23,
    "fast_acos": 11, "acosh": 25, "fast_acosh": 14, "fast_acosh_near": 10, "expm1": 15, "fast_expm1": 9,
    "atan2": 38, "fast_atan2": 24, "fast_atan2_near": 19,
    "sin": 20, "cos": 20, "fast_pow": 33, "fast_pow_near": 29, "fast_pow_rare": 25, "fast_pow_near_rare": 21, "pow": 80, "fmod": 20, "fast_div": 9, "fast_div_near": 2, "floor": 1, "ceil": 1,
    "round": 1, "abs": 0, "bitcast": 0, "thread_index": 0,
}
# a call whose result is a 16-bit float: the hardware's forms (codegen/cexpr.py's _FAST_16)
CALL_COST_16 = {"exp": 3, "exp2": 2, "log": 13, "log2": 12, "log1p": 13, "tanh": 1, "atan": 13, "tan": 20, "erf": 15,
                "asinh": 16, "atanh": 13, "asin": 13, "acos": 11, "sin": 16, "cos": 18, "acosh": 14, "expm1": 9, "atan2": 24}
DIVISION_COST = 12  # an IEEE f32 division's check and fast path (its slow path is a call, out of line)
REMAINDER_COST = 22  # `%` of floats: tl::pymod, tl::fmod_fast and a sign fix


def element_cost(kernel: ir.Kernel) -> int:
    """Instructions an element of `kernel`'s `parallel` loops costs (the most of any loop)."""
    return max((_cost_of(s.body) for s in statements(kernel.body) if isinstance(s, ir.Parallel)), default=0)


def _cost_of(body) -> int:
    total, seen = 0, set()
    for s in statements(body):
        value = getattr(s, "value", None)
        if isinstance(s, (ir.Store, ir.LetScalar, ir.Assign)) and isinstance(value, ir.Expr):
            total += expr_cost(value, seen)
    return total


def expr_cost(e: ir.Expr, seen: set | None = None) -> int:
    """`e`'s instructions; with `seen`, the subexpressions already counted (in `seen`) count
    nothing, as nvcc computes a repeated one once: an inlined device function's argument is
    written out at every use (std.elementwise's sinh reads abs(f32(x)) eight times)."""
    if seen is not None:
        if e in seen:
            return 0
        seen.add(e)
    if isinstance(e, (ir.Load, ir.Var, ir.Const)):
        return sum(expr_cost(i, seen) for i in getattr(e, "indices", ()) if not isinstance(i, (ir.Var, ir.Const)))
    own = 1
    if isinstance(e, ir.Call):
        own = CALL_COST_16[e.fn] if e.dtype.bits == 16 and e.fn in CALL_COST_16 else CALL_COST.get(e.fn, 20)
    elif isinstance(e, ir.BinOp) and e.dtype.is_float and e.op == "/":
        own = DIVISION_COST
    elif isinstance(e, ir.BinOp) and e.dtype.is_float and e.op in ("%", "//"):
        own = REMAINDER_COST
    elif isinstance(e, ir.UnaryOp) and e.op == "-" and e.dtype.is_float:
        own = 0  # an operand's sign flag in the instruction that reads it
    elif isinstance(e, ir.BinOp) and e.dtype.is_float and e.op in ("+", "-") and \
            any(_product(p) and (seen is None or p not in seen) for p in (e.a, e.b)):
        own = 0  # a * b + c: one FFMA, counted as the product (nvcc contracts them)
    parts = [getattr(e, f, None) for f in ("a", "b", "x", "cond")] + list(getattr(e, "args", ()))
    return own + sum(expr_cost(p, seen) for p in parts if isinstance(p, ir.Expr))


def _product(e) -> bool:
    return isinstance(e, ir.BinOp) and e.op == "*" and e.dtype.is_float
