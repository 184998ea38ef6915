"""tlc.timing.compare's schedule, against a stand-in for CuPy that records what is enqueued:
before every timed run the L2 flush (a read), then the GPU spin, then the start event; the
contenders alternate, each round starting one later; each runs until it has min_ms.  And
compare_checked (every benchmark's way to time): a contender whose output does not match its
reference is reported and never timed; one that matches is."""
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from tlc import timing


class FakeCupy:
    """Records the enqueued work in `log`; a timed run of contender `name` takes `ms[name]`."""

    def __init__(self, ms: dict):
        self.ms, self.log, self.last = ms, [], None
        self.int32, self.uint64 = "int32", int
        fake = self

        class Event:
            def record(self):
                fake.log.append("record")

            def synchronize(self):
                pass

        class Device:
            id = 0

            def synchronize(self):
                pass

        runtime = types.SimpleNamespace(cudaDevAttrL2CacheSize=0, deviceGetAttribute=lambda attr, dev: 50 << 20)
        self.cuda = types.SimpleNamespace(Event=Event, Device=Device, runtime=runtime,
                                          get_elapsed_time=lambda start, end: fake.ms[fake.last])

    def ones(self, n, dtype):
        return ("buffer", n)

    def zeros(self, shape, dtype):
        return ("out",)

    def sum(self, buf, out):
        assert buf == ("buffer", (256 << 20) // 4)  # 4x the L2, at least 256 MiB, read
        self.log.append("flush")

    def RawKernel(self, source, name):
        assert "globaltimer" in source and name == "tl_spin"
        return lambda grid, block, args: self.log.append(f"spin {args[0]}")

    def contender(self, name):
        def run():
            self.last = name
            self.log.append(name)
        return run


def test_each_run_is_flushed_then_delayed_and_the_order_rotates(monkeypatch):
    cp = FakeCupy({"a": 2.0, "b": 3.0, "c": 5.0})
    monkeypatch.setitem(sys.modules, "cupy", cp)
    got = timing.compare({n: cp.contender(n) for n in "abc"}, min_ms=10.0, warmup_ms=0.0, delay_us=40.0)
    assert got == {"a": 2.0, "b": 3.0, "c": 5.0}
    timed = cp.log[cp.log.index("flush"):]  # after the warm-up and the estimates
    runs = [timed[i:i + 5] for i in range(0, len(timed), 5)]
    assert all(r[:3] == ["flush", "spin 40000", "record"] and r[4] == "record" for r in runs)
    order = [r[3] for r in runs]
    # rounds of three, the first starting at a, the next at b, then c, then a again
    assert [order[i] for i in range(0, len(order), 3)][:4] == ["a", "b", "c", "a"]
    assert all(sorted(order[i:i + 3]) == ["a", "b", "c"] for i in range(0, len(order), 3))
    # until the slowest to accumulate 10 ms (a: 2 ms a run) has: 5 rounds
    assert len(order) == 15


def test_no_spin_when_the_delay_is_zero(monkeypatch):
    cp = FakeCupy({"a": 1.0})
    monkeypatch.setitem(sys.modules, "cupy", cp)
    timing.compare({"a": cp.contender("a")}, min_ms=2.0, warmup_ms=0.0, delay_us=0)
    assert not any(x.startswith("spin") for x in cp.log) and cp.log.count("flush") == 2


# --- compare_checked: only a right result's time counts ---------------------------------------

def writes(cp, name, out, value):
    """A contender `name` of the stand-in that writes `value` into `out`."""
    run = cp.contender(name)

    def launch():
        run()
        if value is not None:
            out[...] = value
    return launch


@pytest.fixture
def ref():
    return np.linspace(-3.0, 5.0, 64)


def test_a_wrong_contender_is_never_timed_even_when_fastest(monkeypatch, ref):
    cp = FakeCupy({"right": 2.0, "wrong": 1.0, "stale": 0.5, "returned": 3.0})
    monkeypatch.setitem(sys.modules, "cupy", cp)
    tol = timing.tolerance(np.float16, ref, 4)
    off_by_one_element = ref.copy()
    off_by_one_element[17] += 0.5
    right, wrong = np.empty(64), np.empty(64)
    stale = ref.copy()  # an earlier run's right answer, which this contender never overwrites
    contenders = {
        "right": timing.Checked(writes(cp, "right", right, ref.astype(np.float16)), ref, out=right, **tol),
        "wrong": timing.Checked(writes(cp, "wrong", wrong, off_by_one_element), ref, out=wrong, **tol),
        "stale": timing.Checked(writes(cp, "stale", stale, None), ref, out=stale, **tol),
        "returned": timing.Checked(lambda: (cp.contender("returned")(), ref.astype(np.float16))[1], ref, **tol)}
    ms, verdicts = timing.compare_checked(contenders, min_ms=6.0, warmup_ms=0.0, delay_us=0)
    assert ms == {"right": 2.0, "returned": 3.0}
    assert {n: v.ok for n, v in verdicts.items()} == {"right": True, "wrong": False, "stale": False, "returned": True}
    assert verdicts["wrong"].why == ("WRONG: 1 of 64 elements outside rtol 0.00391, atol 0.00996 (0 not finite; "
                                     "largest finite |error| 0.5, relative error of the finite ones 0.0245)")
    assert verdicts["stale"].why.startswith("WRONG: 64 of 64 elements outside") and "64 not finite" in verdicts["stale"].why
    assert cp.log.count("wrong") == cp.log.count("stale") == 1  # the check's run, nothing after
    assert cp.log.count("right") > 3


def test_integers_are_poisoned_with_their_minimum_and_compared_exactly(ref):
    want = np.arange(10, dtype=np.int64) * 3
    out = np.zeros(10, np.int32)

    def most():  # leaves the last element as it found it
        out[:9] = want[:9]
    verdict = timing.verify(timing.Checked(most, want, out=out, **timing.tolerance(out.dtype, want, 4)))
    assert not verdict.ok and verdict.why.startswith("WRONG: 1 of 10 elements outside rtol 0, atol 0 ")
    assert out[9] == np.iinfo(np.int32).min
    out[9] = 27
    assert timing.verify(timing.Checked(lambda: None, want, 0.0, 0.0, out=out.copy() + 1)).ok is False


def test_a_contender_that_raises_is_an_error_not_a_time(monkeypatch, ref):
    cp = FakeCupy({"ok": 1.0})
    monkeypatch.setitem(sys.modules, "cupy", cp)

    def broken():
        raise RuntimeError("launch failed\n")
    ms, verdicts = timing.compare_checked({"ok": timing.Checked(lambda: (cp.contender("ok")(), ref)[1], ref, 0.0, 0.0),
                                           "broken": timing.Checked(broken, ref, 0.0, 0.0)},
                                          min_ms=2.0, warmup_ms=0.0, delay_us=0)
    assert ms == {"ok": 1.0}
    assert verdicts["broken"] == timing.Verdict(False, "ERROR: RuntimeError: launch failed")


def test_tolerance_is_units_of_the_dtype_with_atol_against_the_rms():
    ref = np.full(8, -2.0)
    assert timing.tolerance(np.float16, ref, 4) == {"rtol": 4 * 2.0 ** -10, "atol": 8 * 2.0 ** -10}
    assert timing.tolerance("bfloat16", ref, 1) == {"rtol": 2.0 ** -7, "atol": 2 * 2.0 ** -7}
    assert timing.tolerance("tf32", ref, 1)["rtol"] == 2.0 ** -10
    assert timing.tolerance(np.dtype(np.int32), ref, 4) == {"rtol": 0.0, "atol": 0.0}
    with pytest.raises(ValueError, match="no precision known for dtype complex64"):
        timing.tolerance(np.complex64, ref, 1)


def test_the_bench_helper_records_and_says_the_wrong_ones(monkeypatch, ref, capsys):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    import checks

    cp = FakeCupy({"good": 1.0, "bad": 0.1})
    monkeypatch.setitem(sys.modules, "cupy", cp)
    record: dict = {}
    ms = checks.timed(record, {"good": timing.Checked(lambda: (cp.contender("good")(), ref)[1], ref, 0.0, 0.0),
                               "bad": timing.Checked(lambda: (cp.contender("bad")(), -ref)[1], ref, 0.0, 0.0)},
                      min_ms=2.0, warmup_ms=0.0, delay_us=0)
    assert ms == {"good": 1.0} and list(record["wrong"]) == ["bad"] and record["rel_err"]["bad"] == 2.0
    assert "!! bad: not timed: WRONG: 64 of 64 elements" in capsys.readouterr().out
    assert checks.us(ms, "bad") == "WRONG (not timed)" and np.isnan(checks.ratio(ms, "bad", "good"))


CASTS = {"float", "half", "double", "bfloat16", "to", "contiguous", "clone", "astype"}


def test_no_timed_call_in_the_benchmarks_casts_or_copies():
    """A contender is a lambda in bench/ (a vendor call, a std kernel): a cast or copy inside it
    (fusion's eager F.linear once cast its bias on every call) is timed as the contender's own
    work.  Casts happen once, outside; the references are built outside the lambdas too.  A
    lambda whose result is `.contiguous()` of a view (x.t().contiguous(), bench/ops.py's std.data
    transpose and permute rows) times the copy as the operation itself: allowed."""
    import ast

    found = []
    root = Path(__file__).resolve().parents[1]
    for path in sorted([*(root / "bench").glob("*.py"), *(root / "tlc" / "benchmarks").glob("*.py")]):
        for fn in (n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Lambda)):
            found += [f"{path.name}:{c.lineno} .{c.func.attr}()" for c in ast.walk(fn.body)
                      if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr in CASTS
                      and not (c is fn.body and c.func.attr == "contiguous")]
    assert found == []
