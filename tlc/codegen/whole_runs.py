"""Whole runs (#15, time to first result): the facts under which a kernel's copies between
fragments and tensors never take their element-by-element paths, so that the runtime can build
it with `TL_WHOLE_RUNS` (templates/tl/layout.cuh) for the launches that satisfy them and compile
the general build only for a launch that does not (runtime/whole_runs.py).

tl::copy_g2f, g2f_whole, tl::FragmentStore and tl::copy_f2g move each run of a fragment's
registers (RUN consecutive columns) as vectors where the run lies inside the tensor and the
tensor's base, row pitch and the tile's column origin are aligned; any other run element by
element, in code unrolled for every run of every copy: about half of std.nn's rms_norm's and
softmax's SASS and NVRTC time (bench/nvrtc_time.py).  A run (its first column a multiple of RUN
in every layout) is whole or wholly outside its tensor, and aligned, when:
  - the tile's column origin is a multiple of RUN, known here from the IR (`static_factor`:
    `t * BN` is a multiple of BN whatever t is);
  - the tensor's last size (its row pitch, which a lead dimension's offset multiplies too) is a
    multiple of RUN, and its base is 16-byte aligned: what the launch checks.
A kernel qualifies when every such copy's origin does; its facts are, per tensor, the run its
last size must divide (`WholeRuns.facts`).  Copies with a shifted origin (tl::copy_g2f's
SHIFTED, a run-time offset) keep their paths in either build and ask nothing.

A copy that runs only where its tensor's last size is not 1 (in the `else` of `if S == 1`, or
the body of `if S != 1`) moves nothing where S is 1: std.broadcast reads an operand broadcast
along its last dimension as one element and copies its row otherwise.  Where every copy of a
tensor is so, its fact says so by a negative run (S a multiple of the run, or 1), so that the
ternary rows, whose value per position has S = 1, launch the whole-runs build too (where, clamp
and lerp at the ops rows' shapes: 124 -> 111, 80 -> 76 and 80 -> 72 registers, 16.7 -> 14.2,
27.4 -> 23.5 and 25.4 -> 21.4 SASS instructions an element of f16, sm_90a)."""
from __future__ import annotations

from math import gcd

from .. import ir
from ..ir.walk import statements
from ..schedule.layout import Blocked, MmaAccumulator, Replicated

_ANY = 0  # the factor of 0: a multiple of everything


def layout_run(layout) -> int:
    """RUN of the C layout of `layout` (layout.cuh): a blocked layout's vector, the mma
    accumulator's pairs, a replica's kept columns its base's run (a kept row is runs of 1)."""
    if isinstance(layout, Replicated):
        return layout_run(layout.base) if layout.keep == 1 else 1
    if isinstance(layout, Blocked):
        return layout.vec
    if isinstance(layout, MmaAccumulator):
        return 2
    return 1


class _Factors:
    """The largest number every value of an integer expression of kernel `k` is known to be a
    multiple of (0: the expression is 0), from its constants: a product multiplies its factors,
    a sum or difference takes their gcd, a variable the gcd over every value it is given (a
    loop's: its start and step).  A variable met again inside its own definitions (`c = c + BN`)
    counts as 0 there: by induction over the assignments, every value is a multiple of the gcd
    of its first value and of what each assignment adds.  Parameters, sizes and block indices
    can be anything."""

    def __init__(self, k: ir.Kernel):
        self.free = {p.name for p in k.params} | set(k.shape_symbols()) | set(k.block_vars)
        self.defs: dict[str, list] = {}
        for s in statements(k.body):
            if isinstance(s, (ir.Assign, ir.LetScalar)):
                self.defs.setdefault(s.name, []).append(s.value)
            elif isinstance(s, ir.For):
                self.defs.setdefault(s.var, []).extend([s.start, s.step])
        self.memo: dict[str, int] = {}

    def of(self, e: ir.Expr, seen: frozenset = frozenset()) -> int:
        if isinstance(e, ir.Const):
            return abs(e.value) if isinstance(e.value, int) and not isinstance(e.value, bool) else 1
        if isinstance(e, ir.Cast):
            return self.of(e.x, seen) if e.dtype.is_int and e.x.dtype.is_int else 1
        if isinstance(e, ir.UnaryOp) and e.op == "-":
            return self.of(e.x, seen)
        if isinstance(e, ir.BinOp) and e.op == "*":
            return self.of(e.a, seen) * self.of(e.b, seen)
        if isinstance(e, ir.BinOp) and e.op in ("+", "-"):
            return gcd(self.of(e.a, seen), self.of(e.b, seen))
        if isinstance(e, ir.Var):
            return self.var(e.name, seen)
        return 1

    def var(self, name: str, seen: frozenset) -> int:
        if name in self.memo:
            return self.memo[name]
        values = self.defs.get(name)
        if not values or name in self.free:  # a block index, a parameter, a size, or unknown
            return 1
        if name in seen:  # within its own definitions
            return _ANY
        found = _ANY
        for v in values:
            found = gcd(found, self.of(v, seen | {name}))
            if found == 1:
                break
        if not seen:
            self.memo[name] = found
        return found


def _symbol_part(last) -> tuple:
    """(S, k) for a tensor's last size S (k = 1), cdiv(S, k) or S // k (a constant k >= 2): a
    multiple of a run wherever S is a multiple of k times it; ("", 0) for any other size."""
    if isinstance(last, str):
        return last, 1
    e = getattr(last, "expr", None)
    if isinstance(e, ir.UnaryOp) and e.op == "-" and isinstance(e.x, ir.BinOp) and e.x.op == "//" and \
            isinstance(e.x.a, ir.UnaryOp) and e.x.a.op == "-":
        e = ir.BinOp("//", e.x.a.x, e.x.b, e.dtype)  # cdiv(S, k) = -(-S // k): as S // k where k divides S
    if isinstance(e, ir.BinOp) and e.op == "//" and isinstance(e.a, ir.Var) and isinstance(e.b, ir.Const) and \
            type(e.b.value) is int and e.b.value >= 2:
        return e.a.name, e.b.value
    return "", 0


def static_factor(e: ir.Expr, k: ir.Kernel) -> int:
    """What every value of `e` in kernel `k` is a multiple of (0 when it is always 0)."""
    return _Factors(k).of(e)


def _not_one(stmts, known: frozenset = frozenset(), out: dict | None = None) -> dict:
    """{id of a copy's region: the size symbols that are not 1 wherever that copy runs}: the
    `else` of `if S == 1` and the body of `if S != 1` (S a size symbol)."""
    out = {} if out is None else out
    for s in stmts:
        if isinstance(s, ir.Copy):
            out[id(s.src)] = out[id(s.dst)] = known
        elif isinstance(s, ir.If):
            c = s.cond
            sym = c.a.name if isinstance(c, ir.BinOp) and c.op in ("==", "!=") and isinstance(c.a, ir.Var) and \
                isinstance(c.b, ir.Const) and c.b.value == 1 else None
            _not_one(s.then, known | {sym} if sym and c.op == "!=" else known, out)
            _not_one(s.orelse, known | {sym} if sym and c.op == "==" else known, out)
        elif isinstance(s, (ir.For, ir.Parallel)):
            for c in getattr(s, "stores", ()):  # a parallel loop's folded copies (fold_stores.py)
                out[id(c.src)] = out[id(c.dst)] = known
            _not_one(s.body, known, out)
    return out


class WholeRuns:
    """The copies of one kernel between fragments and tensors, noted as the code generator
    emits them (`note`), and what they ask of a launch (`facts`)."""

    def __init__(self, k: ir.Kernel):
        self.k = k
        self.factors = _Factors(k)
        self.runs: dict[str, int] = {}  # tensor -> the run its last size must be a multiple of
        self.anywhere: set[str] = set()  # tensors with a copy that may run where their last size is 1
        self.symbols: dict[str, str] = {}  # tensor -> the size symbol its last size is, or is cdiv of
        self.not_one = _not_one(k.body)
        self.qualifies = True
        self.noted = False  # a copy of runs noted at all (`facts`: none, the build asks nothing)

    def note(self, region: ir.Region, layout) -> None:
        """A copy of `region` of a tensor to or from a fragment in `layout` (not a shifted one)."""
        self.noted = True
        if region.dims is not None:  # a view's rows: their length is no size of the tensor's
            self.qualifies = False
            return
        p = self.k.param(region.name)
        last = p.shape[-1] if p is not None and p.shape else None
        self.note_origin(region.name, region.offsets[-1], layout, last in self.not_one.get(id(region), ()))

    def note_origin(self, name: str, origin: ir.Expr, layout, not_one: bool = False) -> None:
        """Runs of `layout` over tensor `name` from column `origin` on (a copy's column offset,
        or a parallel loop's read at its column plus `origin`: tl::load_run_global); `not_one`:
        they move only where the tensor's last size is not 1."""
        self.noted = True
        run = layout_run(layout)
        if run == 1:
            return  # one element a run: whole or outside, and aligned, always
        factor = self.factors.of(origin)
        p = self.k.param(name)
        last = p.shape[-1] if p is not None and p.shape else None
        symbol, per = _symbol_part(last)
        if factor % run or not (symbol or (isinstance(last, int) and last % run == 0)):
            self.qualifies = False  # an origin or a size (an expression, a constant) that may leave a partial run
            return
        if symbol:
            run *= per  # cdiv(S, 2) is a multiple of the run where S is one of twice it
            if self.symbols.setdefault(name, symbol) != symbol:
                self.qualifies = False
                return
            self.runs[name] = run * self.runs.get(name, run) // gcd(run, self.runs.get(name, run))
            if not not_one or per != 1:
                self.anywhere.add(name)
        else:
            self.runs.setdefault(name, 1)  # a constant size: only the base's alignment is left

    def facts(self) -> tuple | None:
        """((tensor, its last size's symbol or "" for a constant, the run it must divide), ...)
        in parameter order, or None when the kernel does not qualify or copies only runs of one
        element; () when it has no such copy at all: no primitive that reads the build's switch
        (RunsBuild::RAGGED_RUNS, tl/layout.cuh) is instantiated, so that the build is the same
        code, asks nothing of a launch, and its source starts as the warm-up's precompiled
        primitives do (runtime/pch.py: NVRTC goes through them).  A negative run: the size is a
        multiple of its magnitude or 1 (every copy of the tensor runs only where it is not 1)."""
        if not self.qualifies:
            return None
        if not self.noted:
            return ()
        if not self.runs:
            return None
        out = []
        for p in self.k.params:
            if p.name in self.runs:
                symbol = self.symbols.get(p.name, "")
                run = self.runs[p.name]
                if symbol and p.name not in self.anywhere:
                    run = -run
                out.append((p.name, symbol, run))
        return tuple(out)



def note(gen, region: ir.Region, layout, shifted: bool = False) -> None:
    """Note a fragment copy of `region` for code generator `gen` (its `whole_runs`); a shifted
    one (a batch's: g2f_whole's alignment test is the build's) disqualifies the kernel."""
    runs = getattr(gen, "whole_runs", None)
    if runs is None:
        runs = gen.whole_runs = WholeRuns(gen.k)
    if shifted:
        runs.qualifies = False
    else:
        runs.note(region, layout)


def note_origin(gen, name: str, origin: ir.Expr, layout) -> None:
    """Note a parallel loop's runs over tensor `name` from column `origin` on, read a run at a
    time (tl::load_run_global, codegen/shared_runs.py), for code generator `gen`."""
    runs = getattr(gen, "whole_runs", None)
    if runs is None:
        runs = gen.whole_runs = WholeRuns(gen.k)
    runs.note_origin(name, origin, layout)


def kernel_facts(gen) -> tuple | None:
    """`WholeRuns.facts` of the kernel code generator `gen` emitted: the copies it noted, and
    every parallel loop's folded stores (tl::FragmentStore, codegen/shared_runs.py)."""
    runs = getattr(gen, "whole_runs", None) or WholeRuns(gen.k)
    for s in statements(gen.k.body):
        if isinstance(s, ir.Parallel):
            for c in s.stores:
                b = gen.k.buffer(c.src.name)
                if b is None or b.layout is None:
                    return None
                runs.note(c.dst, b.layout)
    return runs.facts()
