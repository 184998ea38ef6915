"""The TL_WHOLE_RUNS build (#15, time to first result): which kernels qualify and what they ask of
a launch (codegen/whole_runs.py), the two builds the runtime compiles and which one a launch
takes (general path, launcher, fast path) without a GPU, nvcc building both forms, and the
layouts' runs starting at multiples of RUN (what the build's claim rests on).  The results of
both builds on the GPU: tests/gpu/test_whole_runs_gpu.py."""
import re
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import tlc
from tlc import ir
from tlc.codegen.whole_runs import static_factor
from tlc.dtypes import I32
from tlc.runtime import whole_runs

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "codegen"))
from runtime_kit import FakeCupyArray, overlap_pairs, stand_in_cupy  # noqa: E402

RUNS_TL = """
@kernel
def scale_rows(x: f16[M, N], y: f16[M, N], BN: const = 256):
    with grid(M, threads=32) as bx:
        xt = fragment(f16[1, BN])
        for t in range(cdiv(N, BN)):
            copy(x[bx, t * BN], xt)
            for i, j in parallel(1, BN):
                xt[i, j] = xt[i, j] * 2.0
            copy(xt, y[bx, t * BN])


@kernel
def shifted(x: f16[M, N], y: f16[M, N], off: i32, BN: const = 256):
    with grid(M, threads=32) as bx:
        xt = fragment(f16[1, BN])
        for t in range(cdiv(N, BN)):
            copy(x[bx, off + t * BN], xt)
            copy(xt, y[bx, t * BN])


@kernel
def odd_origin(x: f16[M, N], y: f16[M, N], BN: const = 256):
    with grid(M, threads=32) as bx:
        xt = fragment(f16[1, BN])
        for t in range(cdiv(N, BN)):
            copy(x[bx, t * BN + 4], xt)
            copy(xt, y[bx, t * BN])


@kernel
def fixed_rows(x: f16[M, 96], y: f16[M, 96]):
    with grid(M, threads=32) as bx:
        xt = fragment(f16[1, 96])
        copy(x[bx, 0], xt)
        copy(xt, y[bx, 0])


@kernel
def asserting(x: f16[M, N], y: f16[M, N], BN: const = 256):
    with grid(M, threads=32) as bx:
        device_assert(N > 0, "rows are not empty")
        xt = fragment(f16[1, BN])
        for t in range(cdiv(N, BN)):
            copy(x[bx, t * BN], xt)
            copy(xt, y[bx, t * BN])


@kernel
def bias_or_scalar(x: f16[M, N], b: f16[B], y: f16[M, N], BN: const = 256):
    with grid(M, threads=32) as bx:
        xt = fragment(f16[BN])
        bt = fragment(f16[BN])
        for t in range(cdiv(N, BN)):
            copy(x[bx, t * BN], xt)
            if B == 1:
                for j in parallel(BN):
                    bt[j] = b[0]
            else:
                copy(b[t * BN], bt)
            for j in parallel(BN):
                xt[j] = xt[j] + bt[j]
            copy(xt, y[bx, t * BN])
"""


@pytest.fixture(scope="module")
def runs_module(tmp_path_factory):
    path = tmp_path_factory.mktemp("runs") / "runs.tl"
    path.write_text(RUNS_TL)
    return tlc.load(str(path), target="cpu")


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_the_row_wise_std_kernels_qualify(arch):
    """Each tensor's last size must be a multiple of its copies' runs (8 halves: 16 bytes) and
    its base 16-byte aligned; std.gemm's matmul asks it of C (its epilogue's pairs)."""
    nn = tlc.load("std.nn", target="cpu")
    assert nn.rms_norm.generated({}, arch).whole_runs == (("x", "N", 8), ("weight", "N", 8), ("y", "N", 8))
    assert nn.softmax.generated({}, arch).whole_runs == (("x", "N", 8), ("y", "N", 8))
    assert nn.layer_norm.generated({}, arch).whole_runs == (("x", "N", 8), ("weight", "N", 8), ("bias", "N", 8),
                                                            ("y", "N", 8))
    assert tlc.load("std.gemm", target="cpu").matmul.generated({}, arch).whole_runs == (("C", "N", 2),)


def test_what_a_kernel_asks_from_its_copies_origins_and_sizes(runs_module):
    facts = {name: getattr(runs_module, name).generated({}, "sm_90a").whole_runs
             for name in ("scale_rows", "shifted", "odd_origin", "fixed_rows")}
    assert facts == {
        "scale_rows": (("x", "N", 8), ("y", "N", 8)),
        "shifted": (("y", "N", 8),),  # x's copy is shifted (a run-time offset): its paths stay in both builds
        "odd_origin": None,  # t * BN + 4 may start a run 4 halves into a vector: no such build
        "fixed_rows": (("x", "", 1), ("y", "", 1)),  # 96 columns, a multiple of 8: the bases' alignment alone
    }


def test_a_tensor_copied_only_where_its_size_is_not_1_asks_a_multiple_or_1(runs_module):
    """std.broadcast's operands: one broadcast along its last dimension (size 1) is read as one
    element, the row copied otherwise (`if B == 1: ... else: copy(...)`), so a size of 1 moves no
    run and keeps the whole-runs build: the fact's run is negative (B a multiple of 8, or 1).  The
    ternary rows of the ops table (a value per position, size 1) took the general build."""
    from tlc.runtime.whole_runs import size_keeps_runs_whole

    assert runs_module.bias_or_scalar.generated({}, "sm_90a").whole_runs == (("x", "N", 8), ("b", "B", -8),
                                                                           ("y", "N", 8))
    assert [size_keeps_runs_whole(n, -8) for n in (1, 8, 1024, 4, 1020)] == [True, True, True, False, False]
    assert [size_keeps_runs_whole(n, 8) for n in (1, 8, 1020)] == [False, True, False]
    bc = tlc.load("std.broadcast", target="cpu").where.generated({"T": "f16"}, "sm_90a")
    assert bc.whole_runs == (("cond", "C3", -16), ("a", "A3", -16), ("b", "B3", -16), ("y", "D3", 16))


PACKED_TL = """
@kernel
def pack(x: u8[M, N], q: u8[M, {last}], BN: const = 256):
    with grid(M, threads=16) as bx:
        t = fragment(u8[1, BN])
        for c in range(cdiv({last}, BN)):
            copy(x[bx, c * BN], t)
            copy(t, q[bx, c * BN])
"""


@pytest.mark.parametrize("last, fact", [("cdiv(N, 2)", ("q", "N", 32)), ("N // 4", ("q", "N", 64)),
                                        ("N + 2", None), ("cdiv(N, 2) + 1", None)])
def test_a_size_that_is_a_symbols_quotient_asks_the_symbol_a_multiple_of_the_run_times_the_divisor(last, fact, tmp_path):
    """std.quant's int4 kernels: q: u8[M, cdiv(N, 2)], copied in runs of 16 bytes, whose runs are
    whole where N is a multiple of 32 (cdiv(N, 2) is then N / 2, a multiple of 16); they took the
    general build, each run's vector store behind a test of its alignment and 16 byte stores
    beside it (quantize_int4 f16 sm_90a: 1248 -> 1160 SASS instructions, dequantize_int4's
    16-byte load of q likewise).  Any other expression still disqualifies the kernel."""
    path = tmp_path / "pack.tl"
    path.write_text(PACKED_TL.format(last=last))
    got = tlc.load(str(path), target="cpu").pack.generated({}, "sm_90a").whole_runs
    assert got == (None if fact is None else (("x", "N", 16), fact))
    quant = tlc.load("std.quant", target="cpu")
    assert quant.quantize_int4.generated({"T": "f16"}, "sm_90a").whole_runs == (("q", "N", 32),)
    assert quant.dequantize_int4.generated({"T": "f16"}, "sm_90a").whole_runs == (("q", "N", 32),)


def test_static_factors():
    t, n, k = ir.Var("t", I32), ir.Var("N", I32), ir.Var("k", I32)

    def c(v):
        return ir.Const(v, I32)

    def op(o, a, b):
        return ir.BinOp(o, a, b, I32)

    body = (ir.Assign("k", op("*", t, c(48))), ir.Assign("k", op("+", k, c(96))))
    kernel = ir.Kernel(name="f", params=(), grid=(c(1),), block_vars=("bx",), threads=32, buffers=(),
                       body=(ir.For("t", c(0), c(10), c(1), "serial", 0, body),))
    assert static_factor(op("*", t, c(256)), kernel) == 256
    assert static_factor(op("+", op("*", t, c(256)), c(4)), kernel) == 4
    assert static_factor(op("-", op("*", c(64), t), op("*", c(48), t)), kernel) == 16
    assert static_factor(op("*", n, c(8)), kernel) == 8  # a size times 8: a multiple of 8 whatever N is
    assert static_factor(op("+", n, c(8)), kernel) == 1
    assert static_factor(k, kernel) == 48  # t * 48, then k + 96: every value a multiple of 48
    assert static_factor(c(0), kernel) == 0 and static_factor(ir.Var("bx", I32), kernel) == 1


def test_the_build_and_the_launches_that_take_it(h200, monkeypatch, runs_module):
    """NVRTC compiles the TL_WHOLE_RUNS source first; a launch with a ragged row (N not a
    multiple of 8) or a base off 16 bytes compiles the general source once and launches it;
    launches that keep the runs whole take the first build."""
    from tlc.runtime import compile as rc, compile_kernel, launch

    sources = []
    monkeypatch.setattr(rc, "nvrtc_compile", lambda source, arch, name: sources.append(source)
                        or f"cubin {len(sources)}".encode())
    monkeypatch.setattr(launch.CompiledKernel, "_load", lambda self, device: ("loaded", self.binary, device))
    k = runs_module.scale_rows
    gen = k.generated({}, "sm_90a")
    compiled = compile_kernel(k.scheduled({}, "sm_90a"), gen)
    assert sources == [whole_runs.DEFINE + gen.source] and compiled.whole_runs == gen.whole_runs

    def args(x, y, n):  # x, y, M, N as a launch's C arguments
        return [np.uint64(x), np.uint64(y), np.int32(7), np.int32(n)]

    assert compiled.function_for(0, args(0x7000, 0x8000, 1024)) == ("loaded", b"cubin 1", 0)
    for ragged in (args(0x7000, 0x8000, 1020), args(0x7002, 0x8000, 1024), args(0x7000, 0x8008, 1024)):
        assert compiled.function_for(0, ragged) == ("loaded", b"cubin 2", 0)
    assert compiled.function_for(0, args(0x7000, 0x8000, 8)) == ("loaded", b"cubin 1", 0)
    assert sources[1:] == [gen.source]  # the general build, compiled once
    assert compiled._generic.whole_runs is None and compiled._generic._functions is compiled._generic_functions
    # a CuPy array's address is its data pointer
    array = SimpleNamespace(data=SimpleNamespace(ptr=0x7004))
    assert not compiled.keeps_runs_whole([array, np.uint64(0x8000), np.int32(7), np.int32(1024)])


NO_COPIES_TL = """
@kernel
def scale(x: f16[N], y: f16[N]):
    with grid(cdiv(N, 128), threads=128) as bx:
        for i in parallel(128):
            if bx * 128 + i < N:
                y[bx * 128 + i] = x[bx * 128 + i] * 2.0
"""


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_a_kernel_without_such_copies_asks_nothing_and_takes_the_build(arch, tmp_path):
    """No copy between a fragment and a tensor: no primitive that reads the build's switch is
    instantiated, so the TL_WHOLE_RUNS build is the same code (NVRTC's PTX of std's 241 such
    sources the same both ways, session 27); it asks nothing of a launch (its facts ()), and its
    source starts as the warm-up's precompiled primitives do, so that NVRTC goes through them
    (runtime/pch.py): std.gemm's matmul_skinny, std.reduce's cummax_axis0."""
    from tlc import primitives
    from tlc.runtime import built_source, pch

    path = tmp_path / "scale.tl"
    path.write_text(NO_COPIES_TL)
    assert tlc.load(str(path), target="cpu").scale.generated({}, arch).whole_runs == ()
    for module, name in (("std.gemm", "matmul_skinny"), ("std.reduce", "cummax_axis0")):
        gen = getattr(tlc.load(module, target="cpu"), name).generated({}, arch)
        assert gen.whole_runs == ()
        source = built_source(gen, None)
        assert source.startswith(whole_runs.DEFINE)
        files = primitives.SM90 if arch == "sm_90a" else primitives.SM80
        assert pch.split(source) == pch.guess(files)


def test_a_kernel_that_asserts_has_one_build(h200, monkeypatch, runs_module):
    """Its failure record belongs to one module, which every launch must use."""
    from tlc.runtime import compile as rc, compile_kernel

    sources = []
    monkeypatch.setattr(rc, "nvrtc_compile", lambda source, arch, name: sources.append(source) or b"cubin")
    k = runs_module.asserting
    gen = k.generated({}, "sm_90a")
    assert gen.whole_runs == (("x", "N", 8), ("y", "N", 8))
    compiled = compile_kernel(k.scheduled({}, "sm_90a"), gen)
    assert sources == [gen.source] and compiled.whole_runs is None


def FakeArray(shape, ptr):
    return FakeCupyArray(shape, np.float16, ptr=ptr)


def fast_path(monkeypatch, k, generic: dict, whole):
    """fastpath.build's launcher of kernel `k` (a fake CuPy), the whole-runs build launching
    `whole`, the general one `generic`'s functions; the general path answers "general path"."""
    from tlc.runtime import fastpath

    stand_in_cupy(monkeypatch)
    gen = k.generated({}, "sm_90a")
    scheduled = k.scheduled({}, "sm_90a")
    compiled = SimpleNamespace(params=scheduled.params, launch_fields=gen, overlap_pairs=overlap_pairs(scheduled),
                               block=(gen.threads, 1, 1),
                               smem=gen.smem_bytes, whole_runs=gen.whole_runs, _generic_functions=generic,
                               _functions={0: whole})
    return fastpath.build(compiled, fallback=lambda args: "general path")


def test_the_fast_path_launches_the_general_build_for_ragged_rows(monkeypatch, runs_module):
    """The fast path tests the addresses and sizes itself: a launch that keeps the runs whole
    launches the first build, one that may not the general build where it is loaded, else it
    hands the call to the general path (which compiles and loads it)."""
    launches, generic = [], {}
    fast = fast_path(monkeypatch, runs_module.scale_rows, generic, lambda *a: launches.append(("whole", a[2][3])))

    def call(n, x=0x7000_0000_0000):
        return fast({"x": FakeArray((4, n), x), "y": FakeArray((4, n), 0x9000_0000_0000)})

    assert call(1024) is True and launches == [("whole", 1024)]
    assert call(1020) == "general path" and call(1024, x=0x7000_0000_0008) == "general path"
    generic[0] = lambda *a: launches.append(("general", a[2][3]))
    assert call(1020) is True and call(1024, x=0x7000_0000_0008) is True and call(64) is True
    assert launches[1:] == [("general", 1020), ("general", 1024), ("whole", 64)]


def test_the_fast_path_takes_a_size_of_1_as_whole_where_the_copies_skip_it(monkeypatch, runs_module):
    """bias_or_scalar's b: a size that is a multiple of 8, or 1, launches the whole-runs build;
    another the general one (as launch.py's keeps_runs_whole)."""
    launches = []
    fast = fast_path(monkeypatch, runs_module.bias_or_scalar, {0: lambda *a: launches.append("general")},
                     lambda *a: launches.append("whole"))
    for nb in (1, 1024, 12):
        assert fast({"x": FakeArray((4, 1024), 0x7000_0000_0000), "b": FakeArray((nb,), 0x8000_0000_0000),
                     "y": FakeArray((4, 1024), 0x9000_0000_0000)}) is True
    assert launches == ["whole", "whole", "general"]


def sass_count(sass: str) -> int:
    return len(re.findall(r"^\s+/\*[0-9a-f]{4}\*/", sass, re.M))


@pytest.mark.nvcc
@pytest.mark.parametrize("arch", ["sm_90a", pytest.param("sm_80", marks=pytest.mark.slow)])
def test_nvcc_builds_both_forms_and_the_whole_one_is_smaller(arch, tmp_path):
    """std.nn's rms_norm as the runtime compiles it, with and without TL_WHOLE_RUNS: both
    build without warnings or spills; the whole-runs build has no element-by-element path
    (NVRTC 13.0, sm_90a: 3,632 -> 1,696 SASS instructions)."""
    from nvcc import cubin_sass

    gen = tlc.load("std.nn", target="cpu").rms_norm.generated({}, arch)
    counts = {}
    for form, source in (("general", gen.source), ("whole", whole_runs.with_whole_runs(gen.source, gen.whole_runs))):
        (tmp_path / form).mkdir()  # one folder a build: nvcc's cache keys the folder's files
        sass, log = cubin_sass(source, arch, tmp_path / form)
        assert "spill stores" not in log or "0 bytes spill stores" in log, log
        counts[form] = sass_count(sass)
    assert counts["whole"] < 0.6 * counts["general"], counts


def test_every_layouts_runs_start_at_multiples_of_its_run():
    """The build's claim: a tile whose column origin and width are multiples of RUN has each
    run wholly inside or outside it only if every run's first column is a multiple of RUN, in
    every layout: blocked, the mma accumulator's (wgmma's bands and columns too), a replica's
    kept columns.  Here on the Python layouts, which tests/codegen/test_layout_c.py checks the
    C ones against element for element."""
    import itertools

    from tlc.codegen.whole_runs import layout_run
    from tlc.dtypes import F16, F32
    from tlc.schedule.layout import MmaAccumulator, Replicated, blocked, mma_accumulator

    def columns(lay):  # (thread, register) -> column
        return {lay.owner(idx): idx[-1] for idx in itertools.product(*(range(d) for d in lay.shape))}

    bases = [blocked((1, 8192), F16, 256), blocked((4, 256), F16, 128), blocked((3, 40), F32, 64),
             blocked((2, 24), F16, 32), mma_accumulator((64, 128), 128), MmaAccumulator((128, 128), 2, 2),
             MmaAccumulator((128, 128), 4, 1, True), MmaAccumulator((64, 512), 4, 2, False, True)]
    for lay in bases:
        run = layout_run(lay)
        assert run == getattr(lay, "vec", 2) and run > 1
        bad = [(t, r, c) for (t, r), c in columns(lay).items() if r % run == 0 and c % run]
        assert not bad, (lay, bad[:4])
        kept = Replicated(lay, (0,))  # the columns, as a row's weights
        assert layout_run(kept) == run and layout_run(Replicated(lay, (1,))) == 1
        cols = columns(lay)
        for s in range(0, kept.registers, run):
            assert kept.rep(s) % run == 0 and all(cols.get((t, kept.rep(s)), 0) % run == 0 for t in range(lay.threads))


@pytest.mark.nvcc
@pytest.mark.parametrize("dtype", ["f16", "f32"])
def test_a_tile_narrower_than_a_vector_builds_in_both_forms(dtype, tmp_path):
    """std.nn_layers' rope at D = 6 (its shared tile's rows 12 or 24 bytes: no 16-byte vector of
    f16 fits one, VPR = 0 in tl::copy_g2s): the whole-runs build, which the runtime compiles
    first, failed to compile ("expression must have a constant value": THREADS % VPR in an
    `if constexpr`), so every f16 rope call raised on the H200 (batch q4 of session 17).  The
    interleaved rope: the half-split one loads its pairs into registers, with no tile of x in
    shared memory."""
    from nvcc import cubin_sass

    gen = tlc.load("std.nn_layers", target="cpu").rope.generated({"T": dtype, "H": 2, "D": 6, "THREADS": 64,
                                                                  "INTERLEAVED": True},
                                                                 "sm_90a")
    assert gen.whole_runs
    for form, source in (("general", gen.source), ("whole", whole_runs.with_whole_runs(gen.source, gen.whole_runs))):
        (tmp_path / form).mkdir()
        sass, log = cubin_sass(source, "sm_90a", tmp_path / form)
        assert sass_count(sass) > 0, log
