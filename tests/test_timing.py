"""tlc.timing.compare's schedule, against a stand-in for CuPy that records what is enqueued:
before every timed run the L2 flush (a read), then the GPU spin, then the start event; the
contenders alternate, each round starting one later; each runs until it has min_ms."""
import sys
import types

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
