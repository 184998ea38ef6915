"""The TMA producer's copy coordinates without integer divisions in its K loop.

An implicit GEMM's K step `k` stands for a kernel position and a block of channels, so its
copies' coordinates divide the step: `k % CB * BK`, `k // CB % K`, `k // (K * CB)` (std.conv's
conv2d), and its im2col box's corner divides the tile's first pixel by the output's width and
height.  A division by a size known only at run time is ~25 dependent instructions (I2F, MUFU.RCP,
F2I, the correction steps), and the producer thread issued its copies after eight of them a step
(conv2d's sm_90a producer: ~380 SASS instructions a step, where std.gemm's has ~40), a chain the
tensor cores waited for.  Here, for the copies of one producer loop:

- a pure subexpression that divides and reads neither the loop's variable nor a scalar the loop
  sets is computed once a tile, before the loop (nvcc left the corner's three divisions in it);
- `v // d` and `v % d`, `v` the loop's variable (0, 1, 2, ... in each tile) or such a quotient
  and `d` a divisor the loop does not change, are a quotient and a remainder counted along: the
  remainder steps by 1 and wraps at `d`, carrying into the quotient, whose own quotients and
  remainders step with it (mixed-radix counters, as CUTLASS's conv iterators step (r, s, c)).

The counters equal the divisions only for divisors above 0: the loop issues the copies from them
where every divisor is (tested once a tile), and from the divisions otherwise.
"""
from __future__ import annotations

from dataclasses import field, replace

from ... import ir
from ...frozen import record
from ...ir.walk import subexprs

_PURE = (ir.Var, ir.Const, ir.BinOp, ir.UnaryOp, ir.Cast)
_DIVIDES = ("//", "%")


@record
class Counter:
    """`source // divisor` and `source % divisor` counted along: `source` is None for the loop's
    variable, else the Counter whose quotient this one divides."""

    source: "Counter | None"
    divisor: ir.Expr  # a Var naming the divisor, computed before the loop
    quotient: str
    remainder: str
    dtype: object
    nested: list = field(default_factory=list)  # the counters dividing this one's quotient


class Stepping:
    """The rewritten copies of one producer loop and what its C needs around them: `hoisted`
    (name, Expr) to compute once a tile in this order, `counters` (the roots: they step each
    iteration), `divisors` their divisors' names (each must be above 0)."""

    def __init__(self, var: str, variant: set):
        self.var = var
        self.variant = set(variant) | {var}
        self.hoisted: list = []
        self.counters: list = []
        self.divisors: list = []
        self._names: dict = {}  # a hoisted expression's C-independent key -> its Var
        self._pairs: dict = {}  # (source key, divisor key) -> Counter

    def _name(self, kind: str) -> str:
        # a '.' is never in a .tl name: c_name spells these apart from every user name
        return f"{self.var}.{kind}{len(self.hoisted) + sum(1 for _ in self._all())}"

    def _all(self):
        stack = list(self.counters)
        while stack:
            c = stack.pop()
            yield c
            stack.extend(c.nested)

    def invariant(self, e) -> bool:
        return all(not isinstance(x, ir.Var) or x.name not in self.variant for x in subexprs(e))

    def _hoist(self, e) -> ir.Var:
        key = repr(_key(e))
        v = self._names.get(key)
        if v is None:
            v = ir.Var(self._name("h"), e.dtype)
            self.hoisted.append((v.name, e))
            self._names[key] = v
        return v

    def _counter(self, source, divisor) -> Counter:
        key = (id(source), repr(_key(divisor)))
        c = self._pairs.get(key)
        if c is None:
            d = self._hoist(divisor)
            n = sum(1 for _ in self._all())
            c = Counter(source, d, f"{self.var}.q{n}", f"{self.var}.r{n}", divisor.dtype)
            (self.counters if source is None else source.nested).append(c)
            if d not in self.divisors:
                self.divisors.append(d)
            self._pairs[key] = c
        return c

    def _source(self, e):
        """The counter `e` counts (None for the loop's variable), or False where it is neither
        the loop's variable nor a counted quotient."""
        if isinstance(e, ir.Var) and e.name == self.var:
            return None
        if isinstance(e, ir.BinOp) and e.op == "//" and self._divisor(e.b):
            src = self._source(e.a)
            if src is not False:
                return self._counter(src, e.b)
        return False

    def _divisor(self, e) -> bool:
        """Whether `e` may divide a counted value: pure, unchanged by the loop and not a constant
        (nvcc divides by a constant in a multiply and a shift)."""
        return not isinstance(e, ir.Const) and _pure(e) and self.invariant(e)

    def rewrite(self, e):
        """`e` with its divisions counted or hoisted."""
        if not isinstance(e, _PURE):
            return e
        if self.invariant(e):
            if _pure(e) and any(isinstance(x, ir.BinOp) and x.op in _DIVIDES and not isinstance(x.b, ir.Const)
                                for x in subexprs(e)):
                return self._hoist(e)
            return e
        if isinstance(e, ir.BinOp) and e.op in _DIVIDES and self._divisor(e.b):
            src = self._source(e.a)
            if src is not False:
                c = self._counter(src, e.b)
                return ir.Var(c.quotient if e.op == "//" else c.remainder, e.dtype)
        if isinstance(e, ir.BinOp):
            return replace(e, a=self.rewrite(e.a), b=self.rewrite(e.b))
        if isinstance(e, (ir.UnaryOp, ir.Cast)):
            return replace(e, x=self.rewrite(e.x))
        return e

    @property
    def changed(self) -> bool:
        return bool(self.hoisted or self.counters)


def plan(loads, var: str, variant: set) -> tuple | None:
    """(Stepping, the loads with their coordinates rewritten) for a TMA producer's loads
    (codegen/warpspec/plan.TmaLoad) in a loop over `var` that sets the scalars `variant`, or
    None where no coordinate divides."""
    s = Stepping(var, variant)
    out = []
    for load in loads:
        if load.gather:
            out.append(load)
        elif load.im2col:
            t = load.im2col
            out.append(replace(load, im2col=replace(t, coords=tuple(s.rewrite(e) for e in t.coords),
                                                    offsets=tuple(s.rewrite(e) for e in t.offsets))))
        else:
            src = load.copy.src
            out.append(replace(load, copy=replace(load.copy, src=replace(
                src, offsets=tuple(s.rewrite(e) for e in src.offsets)))))
    return (s, out) if s.changed else None


def setup_lines(s: Stepping, expr, name, ctype, start: str | None = None) -> list:
    """The C before the loop (once a tile): the hoisted values, the counters at 0 and the test
    that they may be used.  `expr` renders an Expr, `name` a scalar's name, `ctype` a dtype.
    With `start` (C: the loop variable's first value, never negative, where a streamed segment
    starts inside its tile) each counter starts at its divisions of it instead (0 where its
    divisor is not above 0: the divisions are used then)."""
    lines = [f"const {ctype(e.dtype)} {name(n)} = {expr(e)};" for n, e in s.hoisted]
    for c in s._all():  # (a counter before those that divide its quotient)
        if start is None:
            lines.append(f"{ctype(c.dtype)} {name(c.quotient)} = 0, {name(c.remainder)} = 0;")
            continue
        src, d = (start if c.source is None else name(c.source.quotient)), expr(c.divisor)
        lines.append(f"{ctype(c.dtype)} {name(c.quotient)} = {d} > 0 ? {src} / {d} : 0, "
                     f"{name(c.remainder)} = {d} > 0 ? {src} % {d} : 0;")
    return lines


def guard(s: Stepping, expr) -> str:
    """The C test that every divisor is above 0 (the counters are the divisions), or "true"."""
    return " && ".join(f"{expr(d)} > 0" for d in s.divisors) or "true"


def step_lines(s: Stepping, expr, name) -> list:
    """The C at the end of an iteration: each root counter steps, carrying into its nested ones."""
    lines: list = []

    def step(c: Counter, indent: str) -> None:
        lines.append(f"{indent}if (++{name(c.remainder)} == {expr(c.divisor)}) {{")
        lines.append(f"{indent}  {name(c.remainder)} = 0;")
        lines.append(f"{indent}  ++{name(c.quotient)};")
        for n in c.nested:
            step(n, indent + "  ")
        lines.append(f"{indent}}}")

    for c in s.counters:
        step(c, "")
    return lines


def _pure(e) -> bool:
    return all(isinstance(x, _PURE) for x in subexprs(e))


def _key(e):
    """`e` without its source positions: equal expressions, equal keys."""
    if isinstance(e, ir.Var):
        return ("v", e.name)
    if isinstance(e, ir.Const):
        return ("c", e.value, str(e.dtype))
    if isinstance(e, ir.BinOp):
        return ("b", e.op, _key(e.a), _key(e.b), str(e.dtype))
    if isinstance(e, ir.UnaryOp):
        return ("u", e.op, _key(e.x), str(e.dtype))
    if isinstance(e, ir.Cast):
        return ("t", _key(e.x), str(e.dtype))
    return ("?", id(e))
