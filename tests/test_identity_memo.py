"""tlc.identity_memo: an answer per argument object, not per equal value; the memo starts again
past `keep` arguments."""
from __future__ import annotations

from tlc.identity_memo import remembered_by_identity


def test_answers_are_remembered_per_object_and_forgotten_past_keep():
    calls = []

    @remembered_by_identity(keep=2)
    def measure(x):
        calls.append(x)
        return len(x)

    a, b, c = (1, 2), (3, 4, 5), (6,)
    assert (measure(a), measure(a), measure(b)) == (2, 2, 3)
    assert calls == [a, b]
    equal = tuple([1, 2])  # equal to a, another object: computed again
    assert equal is not a and measure(equal) == 2 and calls == [a, b, equal]
    measure(c)  # the memo held two, started again at `equal`: a is no longer remembered
    measure(a)
    assert calls == [a, b, equal, c, a]
