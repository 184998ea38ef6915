"""Integer ranges of index expressions, so that bounds checks are emitted only where the
shapes do not prove them unnecessary."""
from __future__ import annotations

from dataclasses import field

from .. import ir
from ..frozen import record
from ..ir.ranges import in_dtype_range, value_range  # noqa: F401 (the IR's own: here and in the code generator)


def open_range(e: ir.Expr, known: dict) -> tuple[int | None, int | None]:
    """[lo, hi] of an integer expression as C's int arithmetic computes it where nothing wraps
    (signed overflow is undefined in C: nvcc assumes it never happens), None an unbounded end,
    given ranges of some variables (which may be open too).  For facts nvcc is told rather than
    for the generator's own choices, which value_range's bounded ranges make."""
    none = (None, None)
    if isinstance(e, ir.Const) and e.dtype.is_int:
        return int(e.value), int(e.value)
    if not e.dtype.is_int:
        return none
    if isinstance(e, ir.Var):
        return known.get(e.name, none)
    if isinstance(e, ir.Cast) and e.x.dtype.is_int and (
            (e.dtype.kind == e.x.dtype.kind and e.dtype.bits >= e.x.dtype.bits) or
            (e.dtype.kind == "int" and e.x.dtype.kind == "uint" and e.dtype.bits > e.x.dtype.bits)):
        return open_range(e.x, known)  # widened: the same value
    if (isinstance(e, ir.UnaryOp) and e.op == "-") or (isinstance(e, ir.BinOp) and e.op in ("+", "-", "*")):
        # unsigned arithmetic wraps (defined in C), and so do 8- and 16-bit integers (the
        # generator wraps them to their width): only int and long long never do
        if e.dtype.kind == "uint":
            return 0, None
        if e.dtype.bits < 32:
            return none
    if isinstance(e, ir.UnaryOp) and e.op == "-":
        lo, hi = open_range(e.x, known)
        return None if hi is None else -hi, None if lo is None else -lo
    if isinstance(e, ir.Select):
        (alo, ahi), (blo, bhi) = open_range(e.a, known), open_range(e.b, known)
        return None if alo is None or blo is None else min(alo, blo), None if ahi is None or bhi is None else max(ahi, bhi)
    if not isinstance(e, ir.BinOp):
        return none
    (alo, ahi), (blo, bhi) = open_range(e.a, known), open_range(e.b, known)

    def add(x, y):
        return None if x is None or y is None else x + y
    if e.op == "+":
        return add(alo, blo), add(ahi, bhi)
    if e.op == "-":
        return add(alo, None if bhi is None else -bhi), add(ahi, None if blo is None else -blo)
    if e.op == "*" and alo is not None and blo is not None and alo >= 0 and blo >= 0:
        return alo * blo, None if ahi is None or bhi is None else ahi * bhi
    if e.op == "*" and None not in (alo, ahi, blo, bhi):
        products = [x * y for x in (alo, ahi) for y in (blo, bhi)]
        return min(products), max(products)
    if e.op == "//" and blo is not None and blo > 0:  # floor division by a positive divisor: monotone in a
        lo = None if alo is None else (alo // bhi if bhi is not None else 0) if alo >= 0 else alo // blo
        hi = None if ahi is None else ahi // blo if ahi >= 0 else (ahi // bhi if bhi is not None else -1)
        return lo, hi
    if e.op == "%" and blo is not None and blo > 0:  # Python's remainder: in [0, b - 1] for any a
        return 0, None if bhi is None else bhi - 1
    if e.op in ("min", "max"):
        pick = min if e.op == "min" else max
        lo = pick(alo, blo) if alo is not None and blo is not None else \
            (None if e.op == "min" else alo if blo is None else blo)
        hi = pick(ahi, bhi) if ahi is not None and bhi is not None else \
            (None if e.op == "max" else ahi if bhi is None else bhi)
        return lo, hi
    if e.op == "&" and ((alo is not None and alo >= 0) or (blo is not None and blo >= 0)):
        highs = [h for lo, h in ((alo, ahi), (blo, bhi)) if lo is not None and lo >= 0]
        return 0, None if None in highs else min(highs)
    return none


def stepped_loop_ranges(kernel: ir.Kernel) -> dict:
    """The ranges a stepped loop's counter is proven to stay in i32 with (ir/stepped_loops.py
    stays_in_i32, beside the enclosing loops' variables'): every size's, as the launch checks
    them, and the scalars' computed from them.  The cpu target's counter and sm80's
    WIDE_STEPPED_COUNTER are decided on the same ranges."""
    from ..ir.stepped_loops import size_ranges as launch_size_ranges

    sizes = launch_size_ranges(kernel)
    return {**sizes, **scalar_ranges(kernel.body, sizes)}


def scalar_ranges(body, known: dict, of=None) -> dict:
    """[lo, hi] of each scalar variable every value assigned to which has a range, to a fixed
    point: a LetScalar's and each Assign's value, given `known` (the block indices), the other
    scalars' ranges and the variables of the loops around that assignment (a loop's variable is
    that loop's alone: it hides any scalar of its name inside it).  A scalar with one value of no
    range has none.  `of=open_range`: the open ranges instead (a loop from a constant start
    upwards bounds its variable below; a scalar of no range at all has none)."""
    opened = of is not None
    of = of or value_range
    writes: list = []  # (name, value, the loops' variables around it)

    def walk(stmts, loops):
        for s in stmts:
            if isinstance(s, ir.Parallel):
                walk(s.body, {**loops, **{v: (0, n - 1) for v, n in zip(s.vars, s.extents)}})
            elif isinstance(s, ir.For):
                constant = isinstance(s.start, ir.Const) and isinstance(s.stop, ir.Const) and \
                    isinstance(s.step, ir.Const) and s.step.value > 0 and s.start.value < s.stop.value
                upward = opened and isinstance(s.start, ir.Const) and isinstance(s.step, ir.Const) and s.step.value > 0
                walk(s.body, {**loops, s.var: (int(s.start.value), int(s.stop.value) - 1) if constant else
                              (int(s.start.value), None) if upward else None})
            elif isinstance(s, ir.If):
                walk(s.then, loops)
                walk(s.orelse, loops)
            elif isinstance(s, (ir.LetScalar, ir.Assign)):
                writes.append((s.name, s.value, loops))

    walk(body, {})
    names = {name for name, _, _ in writes} - set(known)
    found: dict = {}
    for _ in range(len(names) + 1):  # each round finds at least one more, or is the last
        new: dict = {}
        unknown = set()
        for name, value, loops in writes:
            if name not in names or name in unknown:
                continue
            env = {**known, **found}
            for v, r in loops.items():  # a loop's variable hides the scalar of its name
                if r is None:
                    env.pop(v, None)
                else:
                    env[v] = r
            r = of(value, env)
            if r is None or r == (None, None):
                unknown.add(name)
                new.pop(name, None)
            else:
                lo, hi = new.get(name, r)
                new[name] = (None if lo is None or r[0] is None else min(lo, r[0]),
                             None if hi is None or r[1] is None else max(hi, r[1]))
        if opened:  # the generator declares each scalar 0 before its first value
            new = {n: (None if lo is None else min(lo, 0), None if hi is None else max(hi, 0)) for n, (lo, hi) in new.items()}
        if new == found:
            break
        found = new
    return found


I32_MAX = 2 ** 31 - 1


def _cdiv_of(e: ir.Expr) -> ir.Expr | None:
    """P where `e` is cdiv(P, c) as the IR spells it, (P - 1) // c + 1, c > 0; `e` itself where it
    is a size symbol or a product (P: its factors are the candidates); else None."""
    if isinstance(e, ir.Var) or (isinstance(e, ir.BinOp) and e.op == "*"):
        return e
    if isinstance(e, ir.BinOp) and e.op == "+" and isinstance(e.b, ir.Const) and e.b.value == 1 and \
            isinstance(e.a, ir.BinOp) and e.a.op == "//" and isinstance(e.a.b, ir.Const) and e.a.b.value > 0:
        d = e.a.a
        if isinstance(d, ir.BinOp) and d.op == "-" and isinstance(d.b, ir.Const) and d.b.value == 1:
            return d.a
    return None


def grid_sizes(kernel: ir.Kernel) -> list[str]:
    """The sizes (symbols of the tensors' shapes) that are a factor of a grid extent, a product of
    sizes and of cdiv(P, c) of such products, or of both arms of a `where` that picks the extent.
    With real arrays (sizes never negative) a block runs only where each of them is at least 1: one
    of them 0 makes its extent 0 (cdiv(0, c) is 0).  The kernel returns at once where one is below
    1 (sm80.py; never taken there, a negative size from a C launcher's caller does nothing), so that
    the generator knows each from 1 (`size_ranges`) in every build, nvcc's of the .cu too.
    std.broadcast's grid(where(D3 * 8 >= BN, D0 * D1 * D2 * cdiv(D3, BN), cdiv(D0 * D1 * D2, BM) *
    cdiv(D3, BN // 8))): D0 to D3, in both arms."""
    sizes = {d for p in kernel.params if p.kind == "tensor" for d in p.shape if isinstance(d, str)}

    def factors(e):
        return factors(e.a) + factors(e.b) if isinstance(e, ir.BinOp) and e.op == "*" else [e]

    def of(extent) -> list[str]:
        if isinstance(extent, ir.Select):
            other = set(of(extent.b))
            return [s for s in of(extent.a) if s in other]
        found = []
        for f in factors(extent):
            p = _cdiv_of(f)
            found += [] if p is None else [v.name for v in factors(p) if isinstance(v, ir.Var) and v.name in sizes]
        return found

    found = [s for extent in kernel.grid for s in of(extent)]
    return sorted(set(found), key=found.index)


def size_ranges(kernel: ir.Kernel) -> dict:
    """[1, 2^31 - 1] for each of `grid_sizes`, i32 scalars, past the kernel's return where one is
    below 1.  std.data's index_select, grid(A * K * cdiv(C, BC)): its block's `bx // cdiv(C, BC)`,
    `row % K` and `row // K` divide as C does, unsigned (cexpr.py _PLAIN_WHEN_IN_RANGE), not by
    tl::floordiv's and tl::pymod's checks of a zero or negative divisor."""
    return {s: (1, I32_MAX) for s in grid_sizes(kernel)}


def provably_within(indices, dims, known: dict) -> bool:
    """Whether every index lies in [0, dim) for integer dims (a symbolic dim proves nothing)."""
    for i, d in zip(indices, dims):
        if not isinstance(d, int):
            return False
        r = value_range(i, known)
        if r is None or r[0] < 0 or r[1] >= d:
            return False
    return True


@record
class SignHints:
    """What the CUDA generator tells nvcc of the signs of `//` and `%` dividends (cexpr.py's
    _never_negative): the open ranges (open_range) of the kernel's scalars, with the arrays'
    sizes unknown and with each from 0 (as NVRTC's builds assume them), and of the loops'
    variables while their bodies are written."""
    names: frozenset                # scalars and sizes: the values whose signs nvcc does not see
    scalars: dict                   # scalar -> open range, the sizes unknown
    sizes: dict                     # size -> (0, None)
    sized_scalars: dict             # scalar -> open range, the sizes from 0
    loops: dict = field(default_factory=dict)  # loop variable -> open range, while emitted

    @classmethod
    def of(cls, kernel: ir.Kernel, known: dict) -> SignHints:
        """`known`: the generator's bounded ranges (block indices, the grid's sizes, scalars)."""
        from ..ir.walk import statements

        sizes = {s: (0, None) for s in kernel.shape_symbols() if s not in known}
        scalars = {s.name for s in statements(kernel.body) if isinstance(s, (ir.LetScalar, ir.Assign))}
        return cls(frozenset(sizes) | frozenset(scalars), scalar_ranges(kernel.body, known, of=open_range), sizes,
                   scalar_ranges(kernel.body, {**sizes, **known}, of=open_range))
