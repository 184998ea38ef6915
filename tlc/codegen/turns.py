"""The turns of `atomic_add(..., order=)` (ir.Atomic "turn_wait" / "turn_done", once per block
around a tile's adds), as the CUDA generator writes them.

Plainly: one thread spins on an acquire load of the count until it reads the turn, the block
meets, the block adds, meets again, and one thread counts by a release (a fence of the GPU and
an add).  Both the load and the fence take a trip to L2 (~0.5 us) in the thread that makes them,
and its warp's warpgroup waits for it at the next wgmma.  In a warp-specialized loop whose first
statement of the kind is a wgmma issued every iteration ahead of the wait (attention's backward:
the scores, then the dQ partial's turn at the step's end), the generator hides both under the
tensor cores' work: the count is loaded right after that first issue (`tl_turn_seen`) and
spun on only if it is short; and the release of iteration t is made in iteration t + 1, right
after its first issue (`tl_turn_at`, then after the loop for the last), the block's meeting
after its adds staying in place.  A block's count then comes up to one step later, before its
own next wait: every block still reaches it without waiting for anyone, so no wait can hang.
"""
from __future__ import annotations

from .. import ir
from ..frozen import record
from ..ir.walk import assigned_scalars, statements, variables


@record
class TurnPlan:
    wait: ir.Atomic      # the loop's turn_wait
    done: ir.Atomic      # and its turn_done
    first: ir.Gemm       # the last of the wgmmas issued first each iteration, after which the turn's work goes
    prefetch: bool       # the count loaded after `first` (its indices are set by then)


def plan_turns(body: list, lazy) -> TurnPlan | None:
    """The plan for a warp-specialized loop's consumer `body`, where it holds one turn: its first
    top-level gemm is a wgmma (`lazy(gemm)`: issued without waiting) before the top-level
    statement holding the wait; the turn's work goes after the last of the gemms issued with it
    (clears and scalars between them), under both; else None (the turns stay as written)."""
    turns = [s for s in statements(body) if isinstance(s, ir.Atomic) and s.kind.startswith("turn_")]
    if [s.kind for s in turns] != ["turn_wait", "turn_done"]:
        return None
    wait, done = turns
    top = next((i for i, s in enumerate(body) if any(x is wait for x in statements([s]))), None)
    first = next((i for i, s in enumerate(body) if isinstance(s, ir.Gemm)), None)
    if top is None or first is None or first >= top or not lazy(body[first]):
        return None
    last = first
    for i in range(first + 1, top):
        if isinstance(body[i], ir.Gemm) and lazy(body[i]):
            last = i
        elif not isinstance(body[i], (ir.Fill, ir.Sync, ir.LetScalar, ir.Assign)):
            break
    first = last
    later = assigned_scalars(body[first:])
    used = {v.name for e in wait.indices for v in variables(e)}
    return TurnPlan(wait, done, body[first], prefetch=not (used & later))


class TurnGen:
    turns: TurnPlan | None = None

    def bulk_of_turn(self, s) -> None:
        """No bulk adds on a target without the TMA (sm_80): sm_90a's BulkReduceGen, earlier in
        its method order, answers for the turns it issues."""
        return None

    def turn_stmt(self, s: ir.Atomic) -> None:
        """`s`, a turn_wait or turn_done (stmt_Atomic's), as the module's docstring says."""
        target = f"&{self.element(s.name, s.indices, s.span)}"
        check = self.bounds(s.name, s.indices)
        cond = f"if ({check}) " if check else ""
        t = self.turns if self.turns is not None and s in (self.turns.wait, self.turns.done) else None
        # around a bulk add (bulk_reduce.py) its issuing thread alone waits, the block meets only
        # where the launch has no map for it (the per-thread reds)
        bulk = self.bulk_of_turn(s) is not None
        if bulk:
            self.emit("if (!(tl_tma & 2)) {  // (else the bulk add's thread waits for the turn: bulk_reduce.py)")
            self.indent += 1
        if s.kind == "turn_wait":
            if t is not None and t.prefetch:
                wait = f"{cond}tl::turn_wait_from({target}, {self.expr(s.value)}, tl_turn_seen);"
            else:
                wait = f"{cond}tl::turn_wait({target}, {self.expr(s.value)});"
            self.emit(f"{self.once_per_block()}{wait}")
            self.emit(f"{self.block_barrier()}  // the block's updates after its turn came")
            if bulk:
                self.bulk_turn_wait = wait
        else:
            self.emit(f"{self.block_barrier()}  // the block's updates before its turn is counted")
        if bulk:
            self.indent -= 1
            self.emit("}")
        if s.kind == "turn_wait":
            return
        if t is not None:
            self.emit(f"if (threadIdx.x == 0) tl_turn_at = {f'({check}) ? {target} : nullptr' if check else target};"
                      "  // counted after the next iteration's first product issues")
        elif self.bulk_adds():
            self.emit(f"{self.once_per_block()}{cond}{{ tl::tma_store_wait(); tl::turn_done({target}); }}"
                      "  // once its bulk adds are done (bulk_reduce.py)")
        else:
            self.emit(f"{self.once_per_block()}{cond}tl::turn_done({target});")

    def bulk_adds(self) -> bool:
        """Whether the loop's tile adds are bulk reductions (ir.BulkReduce): a turn then waits for
        them to complete before it is counted."""
        spec = getattr(self, "spec", None)
        return spec is not None and bool(spec.reduces)

    def turns_begin(self, body: list) -> None:
        """Before a warp-specialized consumer loop: its turn plan, and the release it carries."""
        self.turns = plan_turns(body, lambda g: self.uses_wgmma(g) or self.uses_wgmma_rs(g)) \
            if self.spec is not None and self.spec.deferred is None else None
        if self.turns is not None:
            self.emit("int* tl_turn_at = nullptr;  // the count the last iteration's turn releases (codegen/turns.py)")

    def turns_after_issue(self, g: ir.Gemm) -> None:
        """After wgmma `g` issues: where it is the plan's first, the last iteration's release and
        this one's load of the count."""
        t = self.turns
        if t is None or g is not t.first:
            return
        # (predicated, not branched: a branch under the wgmmas makes ptxas wait for them, C7517)
        done = "bulk_turn_done_if" if self.bulk_adds() else "turn_done_if"  # after its bulk adds (bulk_reduce.py)
        self.emit(f"tl::{done}(tl_turn_at, threadIdx.x == 0 && tl_turn_at != nullptr);  // the last iteration's turn")
        self.emit("tl_turn_at = nullptr;")
        if t.prefetch:
            check = self.bounds(t.wait.name, t.wait.indices)
            target = f"&{self.element(t.wait.name, t.wait.indices, t.wait.span)}"
            self.emit(f"const int tl_turn_seen = tl::turn_load({target}, threadIdx.x == 0{f' && {check}' if check else ''});"
                      "  // this iteration's count, loaded under the products")

    def turns_end(self) -> None:
        """After the consumer loop: the last iteration's release."""
        if self.turns is not None:
            wait = "tl::tma_store_wait(); " if self.bulk_adds() else ""
            self.emit(f"if (threadIdx.x == 0 && tl_turn_at != nullptr) {{ {wait}tl::turn_done(tl_turn_at); }}  // the last turn")
        self.turns = None
