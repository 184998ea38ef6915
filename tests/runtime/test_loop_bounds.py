"""A stepped loop whose bounds the launch knows and whose i32 counter they would step past i32
(or by 0) is refused before anything runs (runtime/loop_bounds.py), in E157's words, by the
interpreter's and the cpu target's binder, the GPU's general path (launchers, relaunches) and
its fast path (which hands it to the general path); bounds just inside run."""
from types import SimpleNamespace

import numpy as np
import pytest

import tlc
from runtime_kit import FakeCupyArray, FakeDeviceArray, overlap_pairs, stand_in_cupy
from tlc.codegen import generate
from tlc.interp import ArgumentError
from tlc.runtime import fastpath, ir_codec, loop_bounds
from tlc.runtime.args import Binder, LaunchArgumentError, LaunchFacts

STEP = 2**20
SOURCE = f"""
@kernel
def by_size(x: f32[N], out: f32[1]):
    with grid(1, threads=32) as bx:
        acc = fragment(f32[1])
        clear(acc)
        for k in range(0, N, {STEP}):
            acc[0] += 1.0
        copy(acc, out[0])


@kernel
def by_scalars(out: f32[1], start: i32, stop: i64, step: i32):
    with grid(1, threads=32) as bx:
        acc = fragment(f32[1])
        clear(acc)
        for k in range(start, stop, step):
            acc[0] += 1.0
        copy(acc, out[0])


@kernel
def by_down(out: f32[1], stop: i32):
    with grid(1, threads=32) as bx:
        for k in range(1, stop, -4):
            out[0] = 1.0


@kernel
def by_pairs(x: f32[N], out: f32[1]):
    with grid(1, threads=32) as bx:
        for t in range(0, (N // 512) * 2, 2):
            out[0] = 1.0


@kernel
def by_block(x: f32[N], out: f32[1]):
    with grid(4, threads=32) as bx:
        acc = fragment(f32[1])
        clear(acc)
        for k in range(bx, N, {STEP}):
            acc[0] += 1.0
        for j in range(0, N):
            acc[0] += 1.0
        copy(acc, out[0])
"""
LAST = 2**31 - STEP  # the largest N whose counter ends within i32: 2047 iterations
PAST_N = ("kernel 'by_size' (loops.tl:7): range(0, N, 1048576) with N = 2146435073 steps the loop variable 'k' "
          "to 2147483648 after its last iteration, which does not fit i32: the loop would not end")


def many(n: int) -> np.ndarray:
    """A read-only f32[n] of one element repeated: a size without the memory."""
    return np.lib.stride_tricks.as_strided(np.ones(1, np.float32), shape=(n,), strides=(0,), writeable=False)


def module(target: str):
    return tlc.compile_source(SOURCE, target=target, path="loops.tl")


@pytest.mark.parametrize("target", ["interp", "cpp"])
def test_a_size_that_would_step_the_counter_past_i32_is_refused(target):
    mod, out = module(target), np.zeros(1, np.float32)
    if target == "interp":  # the cpu target would pass x dense: 8 GB
        mod.by_size(many(LAST), out)
        assert out[0] == 2047
    with pytest.raises(ArgumentError) as e:
        mod.by_size(many(LAST + 1), out)
    assert str(e.value) == PAST_N


@pytest.mark.parametrize("target", ["interp", "cpp"])
@pytest.mark.parametrize("start, stop, step, message", [
    (0, 10, 0, None),  # the interpreter's words when the loop runs
    # the i64 stop is converted to the counter's i32 (the GPU would wrap it to -2**31 and run nothing)
    (0, 2**31, 4, "range(start, i32(stop), step) with start = 0, stop = 2147483648, step = 4 has the bound "
                  "2147483648, which does not fit i32, the type of the loop variable 'k'"),
    (5, -2**31, -2, "range(start, i32(stop), step) with start = 5, stop = -2147483648, step = -2 steps the loop "
                    "variable 'k' to -2147483649 after its last iteration, which does not fit i32: the loop would "
                    "not end"),
])
def test_scalar_bounds(target, start, stop, step, message):
    mod, out = module(target), np.zeros(1, np.float32)
    with pytest.raises(ArgumentError) as e:
        mod.by_scalars(out, start, stop, step)
    assert str(e.value) == ("kernel 'by_scalars': loop 'k' has step 0" if message is None else
                            "kernel 'by_scalars' (loops.tl:17): " + message)
    mod.by_scalars(out, 2**31 - 10, 2**31 - 1, 3)  # 2**31 - 1 after its last iteration: fits
    assert out[0] == 3
    mod.by_scalars(out, 7, 2**31 - 1, -1)  # no iteration: the counter stays at 7
    assert out[0] == 0


def test_which_loops_are_checked():
    mod = module("interp")
    kernels = {name: getattr(mod, name).scheduled({}, "sm_80") for name in ("by_size", "by_scalars", "by_block")}
    assert [loop.var for loop in LaunchFacts.of(kernels["by_size"]).loops] == ["k"]
    [loop] = LaunchFacts.of(kernels["by_scalars"]).loops
    assert (loop.var, loop.where) == ("k", "loops.tl:17")
    # a start read from the block index is each block's own; a step of 1 cannot pass a bound in i32
    assert LaunchFacts.of(kernels["by_block"]).loops == ()
    # the sizes prove (N // 512) * 2 at most 2**31 - 2: as std.reduce's axis-0 rows, unchecked
    assert LaunchFacts.of(module("interp").by_pairs.scheduled({}, "sm_80")).loops == ()
    reduce = tlc.load("std.reduce", target="cpu")
    assert all(LaunchFacts.of(g).loops == () for name in ("sum_axis0", "max_axis0", "var_axis0")
               for g in getattr(reduce, name).scheduled_grids({}, "sm_90a"))
    facts = LaunchFacts.of(kernels["by_scalars"])
    assert ir_codec.loads_text(ir_codec.dumps_text(facts)) == facts  # the program cache keeps them


def test_past_and_counts_in_i32():
    assert loop_bounds.past(0, 10, 3) == 12 and loop_bounds.past(10, 0, -3) == -2 and loop_bounds.past(5, 5, 2) == 5
    assert loop_bounds.past(7, 3, 1) == 7  # no iteration
    assert loop_bounds.counts_in_i32(0, 2**31 - 1, 1) and not loop_bounds.counts_in_i32(0, 2**31 - 1, 2)
    assert not loop_bounds.counts_in_i32(0, 5, 0) and not loop_bounds.counts_in_i32(0, 5, 2**31)


def test_the_gpu_binder_refuses_with_the_same_text():
    ir = module("interp").by_size.scheduled({}, "sm_80")
    binder = Binder(ir, generate(ir, "sm_80"))
    binder.bind({"x": FakeDeviceArray((LAST,), np.float32), "out": FakeDeviceArray((1,), np.float32)}, device=0)
    with pytest.raises(LaunchArgumentError) as e:
        binder.bind({"x": FakeDeviceArray((LAST + 1,), np.float32), "out": FakeDeviceArray((1,), np.float32)}, device=0)
    assert str(e.value) == PAST_N


def test_the_fast_path_hands_such_a_launch_to_the_general_path(monkeypatch):
    stand_in_cupy(monkeypatch)
    for name in ("by_size", "by_scalars", "by_down"):
        ir = getattr(module("interp"), name).scheduled({}, "sm_80")
        gen = generate(ir, "sm_80")
        launches = []
        compiled = SimpleNamespace(params=ir.params, launch_fields=gen, overlap_pairs=overlap_pairs(ir),
                                   counted_loops=LaunchFacts.of(ir).loops, block=(gen.threads, 1, 1),
                                   smem=gen.smem_bytes, _functions={0: lambda *a: launches.append(a)})
        fast = fastpath.build(compiled, fallback=lambda args: "general path")
        out = FakeCupyArray((1,))
        if name == "by_size":
            assert fast({"x": FakeCupyArray((LAST,)), "out": out}) is True
            assert fast({"x": FakeCupyArray((LAST + 1,)), "out": out}) == "general path"
        elif name == "by_down":
            assert fast({"out": out, "stop": -2**31 + 3}) is True
            assert fast({"out": out, "stop": -2**31 + 2}) == "general path"
        else:
            assert fast({"out": out, "start": 0, "stop": 10, "step": 3}) is True
            for start, stop, step in ((0, 10, 0), (0, 2**31, 4), (5, -2**31, -2)):
                assert fast({"out": out, "start": start, "stop": stop, "step": step}) == "general path"
        assert len(launches) == 1


def test_a_constant_step_down():
    """range(1, stop, -4): the counter ends at 1 - 4 * ceil((1 - stop) / 4), below i32 for stop =
    -2**31; the fast path's test takes stops from -2**31 + 3 up (a lower one goes to the general
    path, which decides exactly and launches -2**31 + 1)."""
    ir = module("interp").by_down.scheduled({}, "sm_80")
    binder = Binder(ir, generate(ir, "sm_80"))
    binder.bind({"out": FakeDeviceArray((1,), np.float32), "stop": -2**31 + 1}, device=0)
    with pytest.raises(LaunchArgumentError) as e:
        binder.bind({"out": FakeDeviceArray((1,), np.float32), "stop": -2**31}, device=0)
    assert str(e.value) == ("kernel 'by_down' (loops.tl:25): range(1, stop, -4) with stop = -2147483648 steps the "
                            "loop variable 'k' to -2147483651 after its last iteration, which does not fit i32: the "
                            "loop would not end")


@pytest.mark.gpu
def test_each_gpu_path_refuses_and_runs_inside():
    import cupy

    mod = module("cuda")
    out = cupy.zeros(1, cupy.float32)
    for _ in range(3):  # the general path, then the fast path
        with pytest.raises(LaunchArgumentError) as e:
            mod.by_scalars(out, 0, 10, 0)
        assert str(e.value) == "kernel 'by_scalars': loop 'k' has step 0"
    mod.by_scalars(out, 2**31 - 10, 2**31 - 1, 3)
    assert float(out.get()[0]) == 3
    with pytest.raises(LaunchArgumentError):
        mod.by_scalars.launcher(out, 0, 2**31 - 1, 2)
