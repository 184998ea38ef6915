"""Which statements outside parallel loops run in every thread of the block: those that read
the thread index (`thread_index`, TileLang's get_thread_binding), directly or through scalars
computed from it, or that sit under control flow that does.  Elsewhere a store, an atomic or a
print outside a parallel loop happens once per block; these happen once per thread, as the
interpreter runs them (one lane per thread)."""
from __future__ import annotations

from .nodes import Assign, Atomic, Break, Call, Continue, For, If, LetScalar, Parallel, Print, Store, Var
from .walk import statement_exprs, statements, subexprs


def per_thread_statements(body) -> frozenset[int]:
    """The ids of the stores, atomics and prints of `body` that run once per thread."""
    if not any(isinstance(x, Call) and x.fn == "thread_index"
               for s in statements(body) for e in statement_exprs(s) for x in subexprs(e)):
        return frozenset()
    names: set[str] = set()
    out: set[int] = set()
    while True:  # scalars carried around loops: until no new name depends on the thread
        before = len(names)
        _scan(body, False, names, out)
        if len(names) == before:
            return frozenset(out)


def _reads(e, names) -> bool:
    return any(isinstance(x, Call) and x.fn == "thread_index" or isinstance(x, Var) and x.name in names
               for x in subexprs(e))


def _scan(body, control: bool, names: set, out: set) -> bool:
    """Marks `body`; returns whether a break or continue in it depends on the thread."""
    jumps = False
    for s in body:
        if isinstance(s, Parallel):
            continue
        here = control or any(_reads(e, names) for e in statement_exprs(s))
        if isinstance(s, (LetScalar, Assign)) and here:
            names.add(s.name)
        elif isinstance(s, (Store, Atomic, Print)) and here:
            out.add(id(s))
        elif isinstance(s, (Break, Continue)) and here:
            jumps = True
        elif isinstance(s, If):
            jumps |= _scan(s.then, here, names, out) | _scan(s.orelse, here, names, out)
        elif isinstance(s, For):
            # a loop that some threads leave early runs the rest of its body per thread
            if _scan(s.body, here, names, out) and not here:
                _scan(s.body, True, names, out)
    return jumps
