"""Where a buffer may be allocated, and what a second allocation of a name means.

TileLang allocates anywhere in a kernel's body (`T.alloc_fragment` inside an `if`, a loop) and
hoists every allocation to the top of the kernel, where the shared-memory plan sees them all.
tlc does the same: `shared`, `fragment` and `local` are allowed anywhere in the grid block but
inside a `parallel` loop, and each becomes one buffer of the block (the lowering registers it
wherever it meets it; the shared-memory plan gives it the lifetime of its uses, so bytes are
still reused).  A name stays visible after the `if` or loop that allocates it, as a Python
name does.  Allocating a name again with the same type is the same buffer (its old contents are
as undefined as a fresh buffer's); with another type it would need two buffers of one name
(E291)."""
from __future__ import annotations

from ..frozen import frozen
from ..parser import nodes as n
from .env import BUFFER
from .types import TensorType, describe


@frozen
class Allocation:
    type: TensorType
    span: object
    grid: object  # the grid block's scope: names of different grids are different kernels' buffers


class PlacementChecker:
    def allocation_placed(self, call: n.Call, kind: str) -> bool:
        """Whether an allocation may stand here; reports E030 (outside the grid block) or E290
        (inside a parallel loop) otherwise."""
        if not self.in_grid:
            if self.kind == "kernel":
                self.error("E030", "buffers are allocated inside a kernel's grid block", call.span,
                           "move the allocation under 'with grid(...)'")
            else:
                self.error("E030", "buffers are allocated inside a kernel's grid block, not in a "
                           f"{'tile op' if self.kind == 'tile_op' else 'device function'}", call.span)
            return False
        if self.in_parallel:
            self.error("E290", f"{kind}(...) cannot be inside a 'parallel' loop: its iterations run at once on "
                       "different threads, and a buffer belongs to the whole block", call.span,
                       "allocate it before the loop (TileLang hoists every allocation to the top of the kernel)")
            return False
        return True

    def reallocation(self, name: str, ty: TensorType, span) -> bool:
        """Whether `name = kind(...)` of type `ty` may bind the name again: the same buffer when
        it was allocated before in this grid with the same type; E025 for a name of another kind,
        E291 for a buffer of another type."""
        existing = self.scope.lookup(name)
        if existing is None or (existing.kind == BUFFER and existing.type is None):  # (None: reported already)
            return True
        allocated = getattr(self, "allocations", {}).get(name)
        if existing.kind != BUFFER or allocated is None or allocated.grid is not self.scope:
            self.error("E025", f"'{name}' is already defined as a {existing.kind}", span)
            return False
        if self._signature(allocated.type) != self._signature(ty):
            self._other_type(name, ty, allocated, span)
            return False
        return True

    def record_allocation(self, name: str, ty: TensorType, span) -> None:
        if not hasattr(self, "allocations"):
            self.allocations = {}
        self.allocations.setdefault(name, Allocation(ty, span, self.scope))

    def _signature(self, ty: TensorType) -> tuple:
        """A buffer type by value (its dimensions are expressions with places in the source)."""
        return ty.scope, ty.dtype, tuple(self.dim_value(d) for d in ty.shape)

    def _other_type(self, name: str, ty: TensorType, first: Allocation, span) -> None:
        line = f" at line {first.span.line}" if getattr(first.span, "line", None) else ""
        self.error("E291", f"'{name}' is allocated here as a {describe(ty)}, but{line} as a {describe(first.type)}; "
                   "every allocation is one buffer of the block, so a name holds one type", span,
                   "give this buffer a name of its own")
