"""Checking `for bx, by in persistent(domain, wave_size, index, group_size=8)`, TileLang's
`T.Persistent`: a serial loop in which each block of a grid of `wave_size` blocks walks the
tiles of `domain` (one tile count per index), `wave_size` tiles apart, starting at its
`index` (schedule/persistent.py lowers it; docs/LANGUAGE.md says what it does)."""
from __future__ import annotations

from ..parser import nodes as n
from ..parser.nodes import replace
from ..dtypes import I32
from .types import LoopRange, ScalarType

# TileLang's default: tiles are walked in groups of 8 along the last dimension (L2 reuse)
GROUP_SIZE = 8
_USAGE = "persistent([ceildiv(M, BM), ceildiv(N, BN)], sm_num, block_id)"


class PersistentChecker:
    def persistent_loop(self, s: n.For):
        it = s.iter
        if not self.in_grid:
            self.error("E273", "persistent(...) walks tiles with the blocks of a grid and belongs inside a kernel's "
                       "grid block", it.span, "write 'with grid(sm_num) as block_id:' around it")
            return s
        if self.in_parallel:
            self.error("E273", "a persistent loop cannot be inside a parallel loop", it.span)
            return s
        if not self._arity(it, "persistent", 3, 4, ("group_size",)):
            return s
        domain = it.args[0]
        if not isinstance(domain, n.ListExpr) or not domain.elts:
            self.error("E270", "the first argument of persistent(...) is the list of tile counts, one per index",
                       domain.span, f"write {_USAGE}, as TileLang's T.Persistent")
            return s
        names = [t.id for t in s.targets]
        if len(names) != len(domain.elts):
            count = len(domain.elts)
            self.error("E271", f"persistent(...) over {count} tile count{'s' * (count != 1)} gives {count} "
                       f"ind{'ices' if count != 1 else 'ex'}; found {len(names)} name{'s' * (len(names) != 1)}",
                       s.span)
            return s
        twice = next((t for i, t in enumerate(s.targets) if t.id in names[:i]), None)
        if twice is not None:
            self.error("E271", f"persistent(...) names the index '{twice.id}' twice", twice.span)
            return s
        extents = tuple(self._persistent_count(e, "a tile count of persistent(...)", 0) for e in domain.elts)
        wave = self._persistent_count(it.args[1], "the wave size of persistent(...)", 1)
        index = self._persistent_count(it.args[2], "the index of persistent(...)", 0)
        group = it.args[3] if len(it.args) == 4 else next((k.value for k in it.keywords if k.name == "group_size"), None)
        if len(it.args) == 4 and it.keywords:
            self.error("E034", "persistent() is given group_size twice", it.keywords[0].span)
            return s
        if group is not None:
            group = self._persistent_count(group, "the group size of persistent(...)", 1,
                                           "TileLang clamps it to 1; write group_size=1 to walk the tiles in order")
        args = (replace(domain, elts=extents), wave, index) + ((group,) if len(it.args) == 4 else ())
        keywords = tuple(replace(k, value=group) for k in it.keywords)
        per_thread = self.thread_branch(replace(it, args=args, keywords=keywords))
        saved = {v: self.scope.symbols.get(v) for v in names}
        for v in s.targets:
            self._define_loop_var(v)
        self.loops.append("persistent")
        body = self.block(s.body)
        self.loops.pop()
        self.thread_control -= per_thread
        for v, previous in saved.items():  # the indices live only inside the loop, as range's
            if previous is None:
                self.scope.symbols.pop(v, None)
                self.ended_loops.add(v)
            else:
                self.scope.symbols[v] = previous
        it = replace(self.statement_call(replace(it, args=args, keywords=keywords)), ty=LoopRange("persistent"))
        return replace(s, iter=it, targets=tuple(replace(t, ty=ScalarType(I32)) for t in s.targets), body=body)

    def _persistent_count(self, e, what: str, least: int, hint: str | None = None):
        """An integer argument; when it is a constant, at least `least`."""
        e = self.integer(e, what)
        if not (isinstance(e.ty, ScalarType) and e.ty.dtype.is_int):
            return e  # reported (E032, E035), or a bool
        value = self.const_value(e, what, required=False)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < least):
            kind = "a positive" if least else "a non-negative"
            self.error("E272", f"{what} must be {kind} integer, found {value!r}", e.span, hint)
        return e
