"""Fast exponentials and divisions for values that end at 16-bit precision (a pass after layout
inference, shown in the tile IR as `fast_exp2` calls and `rcp` scalars, with a note).

docs/LANGUAGE.md: `exp` of an f32 value is the precise one, and `/` the IEEE division, since
an f32 result may be kept.  A softmax written plainly (`row[0, j] = exp(row[0, j] -
row_max[0])`, then `row[0, j] / row_sum[0]`, `row` an f32 fragment copied into an f16 tensor)
keeps none: every value it computes ends rounded to f16, whose half ulp (2^-12) is far above
what the fast forms lose.  There the precise forms cost the kernel its speed: expf is ~9
instructions, and an IEEE division a branch and a slow path per element (FCHK, CALL), which
ptxas cannot interleave (bench/plain's softmax: 0.69 of copy bandwidth, the tile op with these
forms 0.92).  So the pass
- finds the buffers and scalars whose values reach only 16-bit floats (`precise_names` is the
  rest: what flows into a wider tensor or buffer, an index, a condition, a comparison, a
  rounding to an integer, an atomic or a print);
- in a `parallel` loop storing into one of them, computes `exp(x)` as `fast_exp2(x * log2(e))`
  and `exp2(x)` as `fast_exp2(x)` (the hardware's ex2.approx: relative error below 2^-21,
  results below 2^-126 flushed to 0), in f32;
- and there `log(x)` as `fast_log2(x) * ln(2)`, `log2(x)` as `fast_log2(x)` and `log1p(x)` as
  `fast_log1p(x)` (the hardware's lg2.approx, 2^-22 absolute, where x is farther than 1/4 from 1
  (x from 0 for log1p); a degree-7 polynomial of x - 1 (of x) within: relative error below 2^-20,
  12 instructions where logf takes about 25);
- and there `atan`, `tan`, `erf`, `asinh`, `atanh`, `asin` and `acos` as `fast_atan`, `fast_tan`
  (`fast_tan_near` of an f16 argument: no check for tanf's range), `fast_erf`, `fast_asinh`,
  `fast_atanh`, `fast_asin` and `fast_acos`: polynomials of the least degree that keeps the
  relative error below 2^-17 (tl/types.cuh says how each reduces its argument), with the
  hardware's reciprocal, 2^x, log2 and square root: 12, 14.5, 14, 15.5 (11 of an f16 argument,
  `fast_asinh_near`: no check for a^2's overflow), 12, 13 and 10 SASS
  instructions where atanf, tanf, erff, asinhf, atanhf, asinf and acosf take 18, 23, 22, 36,
  32, 22 and 23 (std.elementwise's f16 operators were issue-bound at their .tl forms: atan 0.64
  of copy, tan 0.62, erf 0.75, asinh 0.60, atanh 0.64, asin 0.73, acos 0.71 on the H200);
- and there `sin` and `cos` as `fast_sin` and `fast_cos` (`fast_sin_near`, `fast_cos_near` of an
  f16 argument): a reduction by pi and one odd polynomial of degree 7, relative error below
  2^-19, no branch: 11.1 and 13.2 SASS instructions where sinf and cosf take 24.6 and 25.6 and
  branch around a Payne-Hanek reduction that no f16 argument needs (sin and cos of f16 were
  issue-bound at 0.78 and 0.76 of copy on the H200, PyTorch's at 0.82 and 0.79);
- and there `acosh` and `expm1` as `fast_acosh` (`fast_acosh_near` of an f16 argument) and
  `fast_expm1`: sqrt(t (x + 1)) R(t) near 1 and ln(x + sqrt(t (x + 1))) by the hardware's log2
  and root beyond (relative error below 2^-20); a polynomial below |x| = 1/8 and the hardware's
  e^x minus 1 beyond (2^-17.5): 10 and 8 SASS instructions an element where the .tl forms took
  23 (log1p of t + sqrt(t (x + 1))) and 13 (expf minus 1 beside a degree-7 polynomial);
- and there `atan2(y, x)` as `fast_atan2` (`fast_atan2_near` of two f16 arguments): atan's
  polynomial of min / max of |x|, |y| (the quotient by fast_div, or of f16 arguments by the
  hardware's reciprocal), the quadrant by selects, relative error below 2^-17;
- and there `pow(a, b)` as `fast_pow(a, b)` (`fast_pow_near` of an f16 base, whose logarithm
  needs no scaling of subnormals): 2^(b log2 |a|) by those two, powf's special values by
  selects, no branch (relative error below 2^-16 for a result in f16's range; 29 SASS
  instructions an element, powf 64); with RARE_POW_SPECIALS, as `fast_pow_rare` /
  `fast_pow_near_rare`: the same values, the special cases behind one branch an element that
  only a negative base or a NaN product takes (std.elementwise's pow of f16 on sm_90a: 21 SASS
  instructions an element on the common path against 34; std.broadcast's pow 68 -> 96
  registers, no spills; the default since the H200 timed both faster, session 28);
- and, in a loop that runs its body more than once a thread, a division by a value the loop
  does not vary (`row_sum[0]`, a scalar) as a product with its reciprocal, computed once
  before the loop by an IEEE division (1.5 ulp of f32 at most); and so a division by a row
  vector's element at the loop's row (`acc[i, j] / row_sum[i]`, the fragment unchanged in the
  loop and laid out as the loop's rows, read without an exchange): a fragment of the
  reciprocals in that layout, one loop over the rows before (flash attention's epilogue: 64
  divisions a thread, each div.full.f32's 13 instructions around a branch, took 5% of
  flash_fwd's time on the H200 (Nsight Compute's samples, D=128); two reciprocals now);
- and, in such a loop, any other f32 division as `fast_div(a, b)`, the hardware's full-range
  approximate division (div.full.f32: 2 ulp, MUFU.RCP and a few multiplications, no branch;
  `fast_div_near` of an f16 divisor: a times its reciprocal by MUFU.RCP, no range scaling),
  where the IEEE division is a check, a branch and a slow-path call per element, and `sqrt(x)`
  as `fast_sqrt(x)` (sqrt.approx.f32, MUFU.SQRT: a few ulp, no branch; sqrtf's correctly
  rounded one has a slow path per element too);
- (the two division forms only where the quotient reaches no 8-bit float: see fast())
- and an f32 `tanh` whose value is the stored one itself, rounded to a 16-bit float right
  away, as `fast_tanh` (tanh.approx.f32, one MUFU instruction where tanhf takes about twenty:
  relative error below 2^-16, under an f16's half ulp, 2^-11).  Only there: 1 - t^2 of a
  tanh_bwd would turn its error into a relative error of up to a few percent.
The tile ops' kernels take the pass too (tileops/program.py): an element-wise operator of f16
or bf16 computes its math in f32 and rounds once, so its divisions and exponentials are these
(std.elementwise's sinh, log1p, atan, hypot, addcdiv; with an f32 result the precise forms).
Values that reach an f32 output keep the precise forms (std.nn's softmax called with f32).
On the H200 (bench/plain.py, (16384, 8192) f16, GPU queue batch 1): the plain softmax 133 us =
0.94 of copy bandwidth (182 us = 0.69 before), std.nn's 141 us (its exp2 now fast_exp2; 148
before), torch.softmax 500 us.
"""
from __future__ import annotations

from dataclasses import replace

from .. import ir
from ..dtypes import F16, F32, I32
from ..ir.walk import statements, written_names
from .layout import uniform_register

LOG2E = 1.4426950408889634
LN2 = 0.6931471805599453
# pow's special cases behind a rarely taken branch (tl::pow_of's RARE) instead of selects on
# every element.  On since session 28 (H200, f16, bench/results/q_G_ops_weak_rows-h200-
# twentyeighth.txt): std.elementwise's pow 216.4 -> 182.7 us (0.87 -> 1.03 of copy),
# std.broadcast's 224.9 -> 213.4 us (0.56 -> 0.59), outputs checked first.  False: the selects
RARE_POW_SPECIALS = True
_CONTROL = ""  # the flow graph's node for indices, conditions and other uses that need every bit
_ARITH = frozenset({"+", "-", "*", "/", "min", "max"})
_DISCRETE_CALLS = frozenset({"floor", "ceil", "round", "bitcast", "thread_index"})
# functions with a short form for 16-bit results (tl::fast_atan, fast_tan, fast_erf, fast_asinh, ...)
_SHORT = frozenset({"atan", "tan", "erf", "asinh", "atanh", "asin", "acos", "sin", "cos", "acosh", "expm1", "atan2"})
# with a form for f16 arguments: fast_NAME_near, no range check
_NEAR = frozenset({"tan", "sin", "cos", "acosh", "asinh", "atan2"})


def use_fast_math(kernel: ir.Kernel) -> ir.Kernel:
    """`kernel` with the fast forms where the values stored end at 16-bit precision."""
    rewriter = _Rewriter(kernel, precise_names(kernel), precise_names(kernel, min_bits=16))
    body = rewriter.body(kernel.body)
    if not any(rewriter.counts()):
        return kernel
    kernel = replace(kernel, buffers=kernel.buffers + tuple(rewriter.row_buffers))
    done = []
    if rewriter.exps:
        done.append(f"{rewriter.exps} exp as fast_exp2")
    if rewriter.logs:
        done.append(f"{rewriter.logs} log as fast_log2")
    if rewriter.log1ps:
        done.append(f"{rewriter.log1ps} log1p as fast_log1p")
    if rewriter.pows:
        done.append(f"{rewriter.pows} pow as fast_pow" + (" (its special cases on a rare branch)" if RARE_POW_SPECIALS else ""))
    for fn, n in sorted(rewriter.shorts.items()):
        done.append(f"{n} {fn} as fast_{fn}")
    if rewriter.reciprocals:
        done.append(f"{rewriter.reciprocals} division{'s' if rewriter.reciprocals > 1 else ''} by a loop-invariant "
                    "as a product with its reciprocal")
    if rewriter.divisions:
        done.append(f"{rewriter.divisions} division{'s' if rewriter.divisions > 1 else ''} as fast_div")
    if rewriter.roots:
        done.append(f"{rewriter.roots} sqrt as fast_sqrt")
    if rewriter.tanhs:
        done.append(f"{rewriter.tanhs} tanh as fast_tanh")
    note = (f"fast math: {' and '.join(done)}, where the values stored ({', '.join(sorted(rewriter.targets))}) "
            "end at 16-bit precision")
    return replace(kernel, body=body, notes=kernel.notes + (note,))


def narrow(dtype, min_bits: int = 0) -> bool:
    """Whether values held in `dtype` keep at most 16 bits of a float's precision (and, with
    `min_bits`, at least that many bits of storage)."""
    return dtype.is_float and min_bits <= dtype.bits <= 16


# ---- where values flow ---------------------------------------------------------------------

def precise_names(kernel: ir.Kernel, min_bits: int = 0) -> set[str]:
    """The buffers, scalars and tensors whose values may reach something that keeps more than a
    16-bit float's precision: a tensor or buffer of a wider type, or a use that needs every bit
    (an index, a condition, a comparison, a rounding to an integer, an atomic, a print).  A
    16-bit float buffer or tensor cuts the flow: what is stored there is rounded to 16 bits.
    With min_bits=16, an 8-bit float tensor or buffer needs every bit too (the divisions'
    set: _Rewriter.fast says why)."""
    edges: dict[str, set[str]] = {}
    cut = {p.name for p in kernel.params if p.kind == "tensor" and narrow(p.dtype, min_bits)}
    cut |= {b.name for b in kernel.buffers if narrow(b.dtype, min_bits)}

    def flow(e: ir.Expr | None, dst: str, arith: bool = True) -> None:
        if e is None:
            return
        if isinstance(e, (ir.Load, ir.Var)):
            edges.setdefault(e.name, set()).add(dst if arith else _CONTROL)
            for i in getattr(e, "indices", ()):
                flow(i, dst, False)
            return
        keep = arith and e.dtype.is_float
        if isinstance(e, ir.BinOp):
            keep = keep and e.op in _ARITH
        elif isinstance(e, ir.Call):
            keep = keep and e.fn not in _DISCRETE_CALLS
        elif isinstance(e, ir.Select):
            flow(e.cond, dst, False)
        for f in ("a", "b", "x"):
            flow(getattr(e, f, None), dst, keep)
        for a in getattr(e, "args", ()):
            flow(a, dst, keep)

    for s in statements(kernel.body):
        if isinstance(s, (ir.Store, ir.Atomic)):
            flow(s.value, s.name if isinstance(s, ir.Store) else _CONTROL)
            for i in s.indices:
                flow(i, _CONTROL, False)
        elif isinstance(s, (ir.LetScalar, ir.Assign)):
            flow(s.value, s.name)
        elif isinstance(s, ir.Fill):
            flow(s.value, s.buffer)
        elif isinstance(s, ir.Copy):
            edges.setdefault(s.src.name, set()).add(s.dst.name)
            for side in (s.src, s.dst):
                for o in getattr(side, "offsets", ()):
                    flow(o, _CONTROL, False)
        elif isinstance(s, (ir.Reduce, ir.Scan)):
            edges.setdefault(s.src, set()).add(s.dst)
        elif isinstance(s, ir.Gemm):
            for operand in (s.a, s.b):
                edges.setdefault(operand, set()).add(s.c)
        elif isinstance(s, ir.Print):
            for a in s.args + ((s.cond,) if getattr(s, "cond", None) is not None else ()):
                flow(a, _CONTROL, False)
        elif isinstance(s, ir.If):
            flow(s.cond, _CONTROL, False)
        elif isinstance(s, ir.For):
            for e in (s.start, s.stop, s.step):
                flow(e, _CONTROL, False)
    seeds = {_CONTROL} | {p.name for p in kernel.params if p.kind == "tensor" and not narrow(p.dtype, min_bits)}
    seeds |= {b.name for b in kernel.buffers if not b.dtype.is_float or b.dtype.bits < min_bits}
    reaches: dict[str, set[str]] = {}
    for src, dsts in edges.items():
        if src in cut:
            continue  # rounded to 16 bits where it is held: what it feeds does not see this pass
        for d in dsts:
            reaches.setdefault(d, set()).add(src)
    precise, todo = set(), list(seeds)
    while todo:
        name = todo.pop()
        if name in precise:
            continue
        precise.add(name)
        todo.extend(reaches.get(name, ()))
    return precise - {_CONTROL}


# ---- the rewrite ---------------------------------------------------------------------------

class _Rewriter:
    def __init__(self, kernel: ir.Kernel, precise: set[str], exact_quotients: set[str]):
        self.kernel, self.precise, self.exact_quotients = kernel, precise, exact_quotients
        self.exact_division = False  # whether the statement being rewritten keeps its divisions
        self.frags = {b.name: b for b in kernel.buffers if b.scope == "fragment"}
        self.taken = {p.name for p in kernel.params} | {b.name for b in kernel.buffers} | set(kernel.block_vars)
        self.taken |= {name for name, _ in kernel.constants}
        self.taken |= {s.name for s in statements(kernel.body) if isinstance(s, ir.LetScalar)}
        self.exps = self.logs = self.log1ps = self.pows = self.reciprocals = self.divisions = self.roots = self.tanhs = 0
        self.shorts: dict[str, int] = {}  # atan, tan, erf as their fast_ forms
        self.narrow_stores = {p.name for p in kernel.params if p.kind == "tensor" and narrow(p.dtype)} | \
            {b.name for b in kernel.buffers if narrow(b.dtype)}
        self.many = False  # whether the parallel loop being rewritten runs its body more than once a thread
        self.row_buffers: list[ir.Buffer] = []  # the rows' reciprocals (row_reciprocal)
        self.targets: set[str] = set()

    def body(self, stmts) -> tuple:
        out = []
        for s in stmts:
            if isinstance(s, ir.Parallel):
                hoisted: list[ir.LetScalar] = []
                s = replace(s, body=self.parallel_body(s, s.body, hoisted))
                out.extend(hoisted)
            else:
                for f in ("body", "then", "orelse"):
                    if isinstance(getattr(s, f, None), tuple):
                        s = replace(s, **{f: self.body(getattr(s, f))})
            out.append(s)
        return tuple(out)

    def parallel_body(self, loop: ir.Parallel, stmts, hoisted: list) -> tuple:
        self.many = getattr(loop.layout, "registers", 1) >= 2
        if not self.many:
            # each thread runs the body once: a reciprocal or a fast division would save little
            return self.rewrite_body(loop, stmts, lambda b: None)
        varying = {v for v, n in zip(loop.vars, loop.extents) if n > 1}
        varying |= {s.name for s in statements(loop.body) if isinstance(s, (ir.LetScalar, ir.Assign))}
        written = written_names(loop.body)
        unit = {v: ir.Const(0, I32) for v, n in zip(loop.vars, loop.extents) if n == 1}
        rows: dict = {}  # a divisor's name -> its reciprocals' fragment, once a loop
        return self.rewrite_body(loop, stmts, lambda b: self.invariant(b, varying, written, unit, hoisted)
                                 or self.row_reciprocal(loop, b, written, hoisted, rows))

    def rewrite_body(self, loop: ir.Parallel, stmts, reciprocal) -> tuple:
        out = []
        for s in stmts:
            if isinstance(s, (ir.Store, ir.LetScalar, ir.Assign)) and s.name not in self.precise \
                    and s.value.dtype.is_float:
                before = self.counts()
                self.exact_division = s.name in self.exact_quotients
                s = replace(s, value=self.fast(s.value, reciprocal))
                if isinstance(s, ir.Store) and s.name in self.narrow_stores:
                    s = replace(s, value=self.stored_tanh(s.value))
                if self.counts() != before:
                    self.targets.add(s.name)
            elif isinstance(s, ir.If):
                s = replace(s, then=self.rewrite_body(loop, s.then, reciprocal),
                            orelse=self.rewrite_body(loop, s.orelse, reciprocal))
            out.append(s)
        return tuple(out)

    def counts(self) -> tuple:
        return (self.exps, self.logs, self.log1ps, self.pows, self.reciprocals, self.divisions, self.roots, self.tanhs,
                sum(self.shorts.values()))

    def fast(self, e: ir.Expr, reciprocal) -> ir.Expr:
        """`e` with its exponentials and divisions in the fast forms, where its value
        flows arithmetically into the stored one (not inside indices or conditions)."""
        if not e.dtype.is_float or isinstance(e, (ir.Load, ir.Var, ir.Const)):
            return e
        if isinstance(e, ir.BinOp) and e.op not in _ARITH:
            return e
        if isinstance(e, ir.Call) and e.fn in _DISCRETE_CALLS:
            return e
        if isinstance(e, ir.Select):
            e = replace(e, a=self.fast(e.a, reciprocal), b=self.fast(e.b, reciprocal))
        elif isinstance(e, ir.BinOp):
            e = replace(e, a=self.fast(e.a, reciprocal), b=self.fast(e.b, reciprocal))
        elif isinstance(e, (ir.UnaryOp, ir.Cast)):
            e = replace(e, x=self.fast(e.x, reciprocal))
        elif isinstance(e, ir.Call):
            e = replace(e, args=tuple(self.fast(a, reciprocal) for a in e.args))
        if isinstance(e, ir.Call) and e.fn == "sqrt" and e.dtype == F32 and self.many:
            self.roots += 1
            return ir.Call("fast_sqrt", e.args, F32, span=e.span)
        if isinstance(e, ir.Call) and e.fn in ("exp", "exp2") and e.dtype == F32:
            self.exps += 1
            x = e.args[0]
            if e.fn == "exp":
                x = ir.BinOp("*", x, ir.Const(LOG2E, F32), F32)
            return ir.Call("fast_exp2", (x,), F32, span=e.span)
        if isinstance(e, ir.Call) and e.fn == "pow" and e.dtype == F32:
            self.pows += 1
            near = isinstance(e.args[0], ir.Cast) and e.args[0].x.dtype == F16  # no subnormal base
            name = ("fast_pow_near" if near else "fast_pow") + ("_rare" if RARE_POW_SPECIALS else "")
            return ir.Call(name, e.args, F32, span=e.span)
        if isinstance(e, ir.Call) and e.fn in _SHORT and e.dtype == F32:
            self.shorts[e.fn] = self.shorts.get(e.fn, 0) + 1
            near = e.fn in _NEAR and all(isinstance(x, ir.Cast) and x.x.dtype == F16 for x in e.args)  # |x| <= 65504
            return ir.Call(f"fast_{e.fn}_near" if near else f"fast_{e.fn}", e.args, F32, span=e.span)
        if isinstance(e, ir.Call) and e.fn in ("log", "log2", "log1p") and e.dtype == F32:
            if e.fn == "log1p":
                self.log1ps += 1
                return ir.Call("fast_log1p", e.args, F32, span=e.span)
            self.logs += 1
            y = ir.Call("fast_log2", e.args, F32, span=e.span)
            return y if e.fn == "log2" else ir.BinOp("*", y, ir.Const(LN2, F32), F32, span=e.span)
        if isinstance(e, ir.BinOp) and e.op == "/" and e.dtype == F32 and not self.exact_division:
            # not where the quotient reaches an 8-bit float: a quotient of low-precision values
            # often lies exactly halfway between two of its values (bf16 x over a scale
            # amax / 448, an f8 cast's), which the IEEE division rounds to even and a division
            # within an ulp or two of it rounds either way (a whole f8 step, 1/8 of the value;
            # the port group_per_split_token_cast_to_fp8, exact against NumPy, failed on the
            # H200 once its division became fast_div)
            inv = reciprocal(e.b)
            if inv is not None:
                self.reciprocals += 1
                return ir.BinOp("*", e.a, inv, F32, span=e.span)
            if self.many:
                self.divisions += 1
                near = isinstance(e.b, ir.Cast) and e.b.x.dtype == F16  # |b| in [2^-24, 65504] or 0, inf, NaN
                return ir.Call("fast_div_near" if near else "fast_div", (e.a, e.b), F32, span=e.span)
        return e

    def stored_tanh(self, e: ir.Expr) -> ir.Expr:
        """`e`, the value a 16-bit store rounds, with an f32 tanh that is that value (under
        casts) as fast_tanh."""
        if isinstance(e, ir.Cast):
            return replace(e, x=self.stored_tanh(e.x))
        if isinstance(e, ir.Call) and e.fn == "tanh" and e.dtype == F32:
            self.tanhs += 1
            return ir.Call("fast_tanh", e.args, F32, span=e.span)
        return e

    def invariant(self, b: ir.Expr, varying: set, written: set, unit: dict, hoisted: list):
        """A scalar holding 1 / `b`, declared before the loop (in `hoisted`), when `b` is the
        same for every iteration and every thread holds it; else None."""
        def hoistable(e) -> ir.Expr | None:
            if isinstance(e, ir.Const):
                return e
            if isinstance(e, ir.Var):
                return None if e.name in varying else unit.get(e.name, e)
            if isinstance(e, ir.Load):
                idx = [hoistable(i) for i in e.indices]
                b = self.frags.get(e.name)
                if b is None or e.name in written or any(i is None or not isinstance(i, ir.Const) for i in idx) \
                        or uniform_register(b.layout, tuple(i.value for i in idx), self.kernel.threads) is None:
                    return None
                return replace(e, indices=tuple(idx))
            parts = {}
            for f in ("a", "b", "x", "cond"):
                v = getattr(e, f, None)
                if isinstance(v, ir.Expr):
                    parts[f] = hoistable(v)
                    if parts[f] is None:
                        return None
            if isinstance(getattr(e, "args", None), tuple):
                args = tuple(hoistable(a) for a in e.args)
                if any(a is None for a in args):
                    return None
                parts["args"] = args
            return replace(e, **parts)

        value = hoistable(b)
        if value is None or value.dtype != F32:
            return None
        name = self.fresh("rcp")
        hoisted.append(ir.LetScalar(name, F32, ir.BinOp("/", ir.Const(1.0, F32), value, F32), span=b.span))
        return ir.Var(name, F32, span=b.span)

    def row_reciprocal(self, loop: ir.Parallel, b: ir.Expr, written: set, hoisted: list, rows: dict):
        """An element of a fragment holding 1 / `b`, where `b` reads a row vector at one of the
        loop's variables (`row_sum[i]` in a loop over (i, j)): a fragment of `b`'s shape and
        layout filled by a loop over its rows before this one (in `hoisted`), which the loop
        reads as it read `b` (its layout keeps the thread that holds each row).  None where `b`
        is another expression, the fragment is written in the loop or comes through an exchange."""
        if not (isinstance(b, ir.Load) and b.dtype == F32 and len(b.indices) == 1 and isinstance(b.indices[0], ir.Var)):
            return None
        frag, v = self.frags.get(b.name), b.indices[0].name
        if frag is None or b.name in written or len(frag.shape) != 1 or frag.layout is None or v not in loop.vars \
                or loop.extents[loop.vars.index(v)] != frag.shape[0] or b.name in {n for n, _ in loop.exchange}:
            return None
        if b.name not in rows:
            name = self.fresh(f"rcp_{b.name}")
            i = ir.Var(v, I32, span=b.span)
            one = ir.BinOp("/", ir.Const(1.0, F32), ir.Load(b.name, (i,), F32, span=b.span), F32, span=b.span)
            hoisted.append(ir.Parallel((v,), (frag.shape[0],), (ir.Store(name, (i,), one, span=b.span),),
                                       span=b.span, layout=frag.layout))
            self.row_buffers.append(ir.Buffer(name, "fragment", F32, frag.shape, layout=frag.layout, span=frag.span))
            rows[b.name] = name
        return ir.Load(rows[b.name], b.indices, F32, span=b.span)

    def fresh(self, base: str) -> str:
        k = 0
        while f"{base}{k}" in self.taken:
            k += 1
        self.taken.add(f"{base}{k}")
        return f"{base}{k}"
