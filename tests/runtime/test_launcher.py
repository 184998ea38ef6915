"""`Kernel.launcher(...)`: a launch with fixed arguments, checked once.  What is refused before
any GPU is needed, with the exact messages (the GPU's own checks of the arrays are the
general path's, tests/gpu/test_launch_paths_gpu.py)."""
import numpy as np
import pytest

import tlc
from tlc.kernel import CallError

SOURCE = """
@kernel
def axpy(x: f32[N], y: f32[N], a: f32):
    with grid(cdiv(N, 128), threads=128) as bx:
        for i in parallel(128):
            if bx * 128 + i < N:
                y[bx * 128 + i] = x[bx * 128 + i] * a + y[bx * 128 + i]

@kernel
def twice(x: f32[N]):
    with grid(1, threads=32) as bx:
        for i in parallel(32):
            x[i] = x[i] * 2.0
    with grid(1, threads=32) as bx:
        for i in parallel(32):
            x[i] = x[i] + 1.0

@tile_op
def neg(x: T[M], T: dtype = f32) -> T[M]:
    return -x
"""


@pytest.fixture(scope="module")
def mod():
    return tlc.compile_source(SOURCE, target="cpu")


def message(fn):
    with pytest.raises(CallError) as e:
        fn()
    return str(e.value)


def test_the_refusals_name_the_kernel_and_the_fix(mod):
    x = np.zeros(8, np.float32)
    assert message(lambda: mod.axpy.launcher(x, x, 1.0)) == (
        "axpy.launcher() launches on the GPU, but this module runs on the cpu target; load it with target='cuda'")
    assert message(lambda: mod.twice.launcher(x)) == (
        "twice() launches 2 grids; launcher() holds one launch of one grid: call the kernel instead")
    assert message(lambda: mod.neg.launcher(x)) == (
        "neg() is a tile op, which returns a new array at each call; launcher() takes a @kernel, whose outputs "
        "are among its arguments")


def test_arguments_are_bound_as_a_call_binds_them(mod):
    x = np.zeros(8, np.float32)
    assert message(lambda: mod.axpy.launcher(x, x, 1.0, 2.0)) == (
        "axpy() takes 3 arrays and scalars (x, y, a), 4 given")
    assert message(lambda: mod.axpy.launcher(x, x)) == "axpy() is missing 'a'"
    assert message(lambda: mod.neg(x, x)) == "neg() takes 1 array or scalar (x), 2 given"  # was "1 arrays and scalars"
    assert message(lambda: mod.axpy.launcher(x, x, b=1.0)) == (
        "axpy() has no parameter 'b'; its parameters are x, y, a")


def test_a_numpy_array_is_refused_with_the_fix():
    from types import SimpleNamespace

    from runtime_kit import axpy
    from tlc.runtime.args import Binder, LaunchArgumentError
    from tlc.runtime.bound import BoundLaunch

    ir, gen = axpy()
    binder = Binder(ir, gen)
    args = {"x": np.ones(4, np.float32), "y": np.ones(4, np.float32), "alpha": 1.0}
    with pytest.raises(LaunchArgumentError) as e:
        BoundLaunch(SimpleNamespace(binder=binder, name="axpy"), binder.bind(args, device=0), 0, args)
    assert str(e.value) == ("'x' is a NumPy array, which a launch copies to the GPU each time; a launcher launches "
                            "GPU arrays only: pass cupy.asarray(x) or torch.from_numpy(x).cuda()")


def test_a_fast_path_is_made_at_its_first_use_and_then_reached_directly(mod):
    made, calls = [], []

    class Compiled:  # what Kernel reads of a runtime.CompiledKernel here
        @property
        def call_positional(self):
            made.append(1)
            return calls.append

    k = mod.axpy
    k._fast = first = k._deferred(Compiled())
    sig = ("signature",)
    k._by_signature[sig] = by_sig = k._deferred(Compiled(), sig)
    assert made == []
    first((1,))
    by_sig((2,))
    assert made == [1, 1] and calls == [(1,), (2,)]
    assert k._fast is not first and k._by_signature[sig] is not by_sig  # no wrapper left on the way
    k._fast((3,))
    assert made == [1, 1] and calls[-1] == (3,)
    k._fast, k._by_signature = None, {}


def test_a_bound_launch_reads_only_the_current_stream(monkeypatch):
    from types import SimpleNamespace

    from tlc.runtime import launch as launch_mod
    from tlc.runtime.args import Bound
    from tlc.runtime.bound import BoundLaunch

    launches, made = [], []
    monkeypatch.setattr(launch_mod, "_raw_stream", lambda device: current[0])
    current = [1000]
    streams = {1000: "stream 1000"}

    def torch_stream(device):
        made.append(current[0])
        return streams.setdefault(current[0], f"stream {current[0]}")
    compiled = SimpleNamespace(name="k", grid=lambda values: (values[3] // 2, 1, 1), block=(64, 1, 1), smem=0,
                               function_for=lambda device, args: lambda *a: launches.append(a), assert_sites=(),
                               kernel_args=lambda bound: bound.args, _streams=streams, torch_stream=torch_stream)
    args = [np.uint64(0x7f00), np.uint64(0x7f80), np.float32(2.0), np.int32(8)]
    run = BoundLaunch(compiled, Bound(args, [None, None, 2.0, 8], [], 0), 0, {"x": "held", "y": "held"})
    run()
    current[0] = 1001  # another stream is current now: the next launch goes there
    run()
    assert [a[0] for a in launches] == [(4, 1, 1)] * 2 and [a[4] for a in launches] == ["stream 1000", "stream 1001"]
    assert made == [1000, 1001]  # made at the launcher's making and for the new stream, never again
    run()
    assert made == [1000, 1001] and launches[0][2] is launches[2][2]  # the same argument list each time


def test_a_gpu_call_checks_first_then_takes_the_fast_path(mod, monkeypatch):
    import tlc.kernel as kernel_mod

    log = []

    class Compiled:  # a runtime.CompiledKernel's launch paths, recording which one a call took
        def launch(self, values):
            log.append(("general", tuple(values)))

        def call(self, values):
            log.append(("dict", tuple(values)))

        @property
        def call_positional(self):
            log.append(("made",))
            return lambda args: log.append(("fast", len(args))) or True

    compiled = Compiled()
    k = tlc.compile_source(SOURCE, target="cpu").axpy
    k.module.target = "cuda"
    monkeypatch.setattr(kernel_mod, "_current_device", lambda: 0)
    monkeypatch.setattr(kernel_mod, "_single_gpu", lambda: True)
    monkeypatch.setattr(k, "compiled", lambda constants, device=None: compiled)
    x = np.zeros(8, np.float32)
    for _ in range(3):
        k(x, x, 2.0)
    k(x, y=x, a=2.0)  # keywords: the launcher kept for these constants
    assert log == [("general", ("x", "y", "a")), ("made",), ("fast", 3), ("fast", 3), ("dict", ("x", "y", "a"))]


def test_a_gpu_call_whose_constants_follow_its_arrays_takes_the_signature_path(monkeypatch):
    import tlc.kernel as kernel_mod

    log = []

    class Compiled:
        def launch(self, values):
            log.append("general")

        @property
        def call_positional(self):
            log.append("made")
            return lambda args: log.append("fast") or True

    k = tlc.compile_source("""
@kernel
def scale(x: T[N], y: T[N], a: f32, T: dtype = f32):
    with grid(1, threads=32) as bx:
        for i in parallel(32):
            if i < N:
                y[i] = x[i] * a
""", target="cpu").scale
    k.module.target = "cuda"
    monkeypatch.setattr(kernel_mod, "_current_device", lambda: 0)
    monkeypatch.setattr(kernel_mod, "_single_gpu", lambda: True)
    monkeypatch.setattr(k, "compiled", lambda constants, device=None: Compiled())
    x16, x32 = np.zeros(8, np.float16), np.zeros(8, np.float32)
    for x in (x16, x16, x16, x32):
        k(x, x, 2.0)
    assert log == ["general", "made", "fast", "fast", "general"] and len(k._by_signature) == 2
