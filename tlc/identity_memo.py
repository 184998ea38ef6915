"""A function's answers remembered by its argument's identity, for arguments that never change
(source texts, the frozen AST and IR) but are costly to hash by value or are handed out again
as the same object (parse's memo, a module's bodies walked in every round of a pass).  Each
answer is kept with its argument, so that an id is never another object's while it is
remembered; past `keep` arguments the memo starts again."""
from __future__ import annotations

import functools


def remembered_by_identity(keep: int):
    """Decorate a one-argument function with the memo above."""
    def wrap(fn):
        memo: dict[int, tuple] = {}

        @functools.wraps(fn)
        def call(arg):
            hit = memo.get(id(arg))
            if hit is not None and hit[0] is arg:
                return hit[1]
            answer = fn(arg)
            if len(memo) >= keep:
                memo.clear()
            memo[id(arg)] = (arg, answer)
            return answer
        return call
    return wrap
