"""A dimension expression the launch computes and passes (schedule/host_dims.py, HOST_DIMS "all"),
without a GPU: the CUDA binder puts its checked size in its argument's slot as an i32, refuses
what it refused before with the same text, and one past i32 naming it; the interpreter's binder
gives the cpu target the same value, which runs the kernel as the interpreter does."""
import numpy as np
import pytest

import tlc
from tlc.codegen import generate
from tlc.interp.args import ArgumentError, bind
from tlc.runtime import cpp as runtime_cpp
from tlc.runtime.args import Binder, LaunchArgumentError
from tlc.schedule import host_dims as hd

# each row r of y: x's row r, plus w[0]; y's second axis H * H // HK wide (K would be its own
# symbol; this one makes a size past i32 from small ones)
SOURCE = """
@kernel
def groups(x: f32[N], heads: f32[HK], all: f32[H], w: f32[H * H // HK], y: f32[N, H * H // HK]):
    with grid(cdiv(N, 32), threads=32) as bx:
        for i in parallel(32):
            if bx * 32 + i < N:
                y[bx * 32 + i, H * H // HK - 1] = x[bx * 32 + i] + w[0]
"""


def kernel(on: bool, monkeypatch, arch: str = "sm_80"):
    monkeypatch.setattr(hd, "HOST_DIMS", "all" if on else False)
    return tlc.compile_source(SOURCE, target="cpu", path="groups.tl").groups.scheduled({}, arch)


def arrays(N=40, H=4, HK=2):
    wide = H * H // HK
    return dict(x=np.arange(N, dtype=np.float32), heads=np.zeros(HK, np.float32), all=np.zeros(H, np.float32),
                w=np.full(wide, 0.5, np.float32), y=np.zeros((N, wide), np.float32))


@pytest.fixture
def binder(monkeypatch):
    k = kernel(True, monkeypatch)
    return Binder(k, generate(k, "sm_80"))


def test_the_binder_passes_the_checked_size_as_an_i32(monkeypatch):
    k = kernel(True, monkeypatch)
    g = generate(k, "sm_80")
    args = [(a.name, a.kind, a.c_type) for a in g.args]
    assert args == [("x", "tensor", "const float* __restrict__"), ("heads", "tensor", "const float* __restrict__"),
                    ("all", "tensor", "const float* __restrict__"), ("w", "tensor", "const float* __restrict__"),
                    ("y", "tensor", "float* __restrict__"), ("N", "shape", "int"), ("HK", "shape", "int"),
                    ("H", "shape", "int"), ("tl_dim0", "dim", "int")]
    bound = Binder(k, g).bind(arrays(), device=0)
    assert type(bound.args[-1]) is np.int32 and bound.args[-1] == 8


@pytest.mark.parametrize("change, message", [
    (dict(HK=0), "'w' axis 0 has size 16 but the kernel expects H * H // HK, which divides by zero "
                 "(H = 4 from 'all' (axis 0), HK = 0 from 'heads' (axis 0))"),
    (dict(w=np.zeros(7, np.float32)), "'w' axis 0 has size 7 but the kernel expects H * H // HK = 8 "
                                      "(H = 4 from 'all' (axis 0), HK = 2 from 'heads' (axis 0))"),
])
def test_what_the_binder_refused_it_refuses_with_the_same_text(binder, monkeypatch, change, message):
    args = arrays()
    if "HK" in change:
        args["heads"] = np.zeros(0, np.float32)
        args["w"] = np.zeros(16, np.float32)
    else:
        args.update(change)
    off = kernel(False, monkeypatch)
    for b in (binder, Binder(off, generate(off, "sm_80"))):
        with pytest.raises(LaunchArgumentError) as e:
            b.bind(args, device=0)
        assert str(e.value) == message
    for k in (kernel(True, monkeypatch), off):  # the interpreter's binder (the cpu target's too)
        with pytest.raises(ArgumentError) as e:
            bind(k, args)
        assert str(e.value) == message


def test_a_size_past_i32_is_refused_naming_the_dimension(binder, monkeypatch):
    """H = 46341, HK = 1: H * H = 2147488281, which the kernel's i32 would wrap (w, read only, a
    broadcast view: no memory; y has no row)."""
    wide = 46341 * 46341
    args = dict(x=np.zeros(0, np.float32), heads=np.zeros(1, np.float32), all=np.zeros(46341, np.float32),
                w=np.broadcast_to(np.zeros(1, np.float32), (wide,)), y=np.zeros((0, wide), np.float32))
    message = f"the dimension H * H // HK of 'w' is {wide}, more than an i32 holds"
    with pytest.raises(LaunchArgumentError) as e:
        binder.bind(args, device=0)
    assert str(e.value) == message
    with pytest.raises(ArgumentError) as e:
        bind(kernel(True, monkeypatch), args)
    assert str(e.value) == message


def test_the_interpreters_binder_gives_the_same_value(monkeypatch):
    bound = bind(kernel(True, monkeypatch), arrays())
    assert bound.dims == {"tl_dim0": 8} and type(bound.dims["tl_dim0"]) is np.int32
    assert bind(kernel(False, monkeypatch), arrays()).dims == {}


@pytest.mark.skipif(runtime_cpp.compiler_unavailable_reason() is not None, reason="no C++ compiler (g++ or $CXX) here")
def test_the_cpu_target_takes_it_and_agrees_with_the_interpreter(monkeypatch):
    from tlc.codegen import cpp as codegen_cpp
    from tlc.interp import run_kernel

    k = kernel(True, monkeypatch, "cpu")
    g = codegen_cpp.generate(k)
    assert [a.name for a in g.args][-1] == "tl_dim0" and "int tl_dim0" in g.source
    assert "y[(static_cast<long long>(((bx * 32) + i)) * tl_dim0 + " in g.source  # y's row read from it
    got, want = arrays(N=45), arrays(N=45)
    runtime_cpp.CppKernel(k, g).call(got)
    run_kernel(k, want)
    np.testing.assert_array_equal(got["y"], want["y"])
    assert got["y"][44, 7] == 44.5 and not got["y"][:, :7].any()


def test_the_fast_path_passes_what_the_binder_passes_and_leaves_the_rest_to_it(monkeypatch):
    """A stand-in CuPy (tests/runtime/runtime_kit.py): the fast path launches with the i32 the
    binder puts in the slot, and hands a division by zero, a size that differs and one past i32
    to the general path (here a fallback returning False), which says what is wrong."""
    from types import SimpleNamespace

    from runtime_kit import FakeCupyArray, overlap_pairs, stand_in_cupy
    from tlc.runtime import fastpath

    stand_in_cupy(monkeypatch, 1)
    k = kernel(True, monkeypatch)
    g, launches = generate(k, "sm_80"), []
    compiled = SimpleNamespace(params=k.params, launch_fields=g, overlap_pairs=overlap_pairs(k), block=(g.threads, 1, 1),
                               smem=g.smem_bytes, _functions={0: lambda *a: launches.append(a)})
    fast = fastpath.build(compiled, fallback=lambda args: False)

    def call(N=40, H=4, HK=2, wide=None):
        wide = H * H // HK if wide is None else wide
        return fast(dict(x=FakeCupyArray((N,)), heads=FakeCupyArray((HK,)), all=FakeCupyArray((H,)),
                         w=FakeCupyArray((wide,)), y=FakeCupyArray((N, wide))))

    assert call()
    [(grid, _, args, _, _)] = launches
    assert grid == (2, 1, 1) and type(args[-1]) is np.int32 and args[-1] == 8
    assert [int(a) for a in args[5:]] == [40, 2, 4, 8]  # N, HK, H, then tl_dim0
    assert not call(HK=0, wide=16) and not call(wide=7) and not call(N=0, H=46341, HK=1)
    assert len(launches) == 1


NEGATIVE = """
@kernel
def neg(heads: f32[HK], all: f32[H], w: f32[(H - 4 * HK) // HK]):
    with grid(1, threads=32) as bx:
        for i in parallel(32):
            if i < H:
                w[i] = all[i]
"""


def test_a_negative_size_is_refused_with_the_same_text_on_and_off(monkeypatch):
    """(H - 4 * HK) // HK of H = 4, HK = 2 is -2, which no array has: every binder says so, the
    same whether the launch passes it or not (the C launcher returns cudaErrorInvalidValue:
    tests/codegen/test_host_dims_launcher.py)."""
    args = dict(heads=np.zeros(2, np.float32), all=np.zeros(4, np.float32), w=np.zeros(0, np.float32))
    message = ("'w' axis 0 has size 0 but the kernel expects (H - 4 * HK) // HK = -2 "
               "(H = 4 from 'all' (axis 0), HK = 2 from 'heads' (axis 0))")
    for mode in ("all", False):
        monkeypatch.setattr(hd, "HOST_DIMS", mode)
        k = tlc.compile_source(NEGATIVE, target="cpu", path="neg.tl").neg.scheduled({}, "sm_80")
        assert bool(k.params[2].shape[0].arg) is bool(mode)
        with pytest.raises(LaunchArgumentError) as e:
            Binder(k, generate(k, "sm_80")).bind(args, device=0)
        assert str(e.value) == message
        with pytest.raises(ArgumentError) as e:
            bind(k, args)
        assert str(e.value) == message


def test_the_program_cache_keeps_the_argument(monkeypatch):
    """A launch from the cache reads `LaunchFacts` (and the IR) back through runtime/ir_codec.py:
    `DimExpr.arg` comes back, though equality does not compare it."""
    from tlc.ir.nodes import host_dims
    from tlc.runtime import ir_codec
    from tlc.runtime.args import LaunchFacts

    k = kernel(True, monkeypatch)
    for value in (k, LaunchFacts.of(k)):
        back = ir_codec.loads(ir_codec.dumps(value))
        assert [(d.text, d.arg) for d in host_dims(back.params)] == [("H * H // HK", "tl_dim0")]
