"""The cpu target (C++ with OpenMP, tlc/codegen/cpp, tlc/runtime/cpp.py): every example and std
kernel of scripts/run-all-kernels through it against NumPy (the whole table under -m slow, four
representative rows by default: each row compiles a kernel, about a second on two cores), its
registration, the on-disk cache, and the warnings of what it falls back from (E345-E347)."""
from __future__ import annotations

import runpy
import types
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import tlc
from tlc import api, cpu_executor, targets
from tlc.cli import main
from tlc.codegen import cpp as codegen_cpp
from tlc.runtime import cpp as runtime_cpp

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "run-all-kernels"

pytestmark = pytest.mark.skipif(runtime_cpp.compiler_unavailable_reason() is not None,
                                reason="no C++ compiler (g++ or $CXX) here")


@pytest.fixture(scope="module")
def rak():
    return types.SimpleNamespace(**runpy.run_path(str(SCRIPT), run_name="run_all_kernels"))


def cases(rak, group: str) -> list:
    return [c._replace(label=f"{c.module}: {c.label}") for c in rak.CASES[group](np.random.default_rng(0), False)]


# the script's tables, a test each under -m slow (building them all takes seconds: not at collection)
GROUPS = ("examples", "std.gemm", "std.nn", "std.math", "std.elementwise", "std.reduce", "std.data", "std.nn_train",
          "std.moe", "std.broadcast", "std.attention", "std.quant", "std.conv")
# one of each kind of statement the target generates: element-wise with bounds, gemm and
# copies (f16, ragged), row reductions and their loops, a tile op of two kernels
DEFAULT = ("examples/vector_add.tl: vector_add n=3001", "examples/gemm.tl: matmul 130x150x70 float16",
           "examples/softmax.tl: softmax 9x700", "examples/linear_gelu.tl: linear_gelu 33x50x40")
_modules: dict = {}


def run_case(rak, case, capsys) -> str | None:
    """Why the case's result is wrong on the cpu target, or None; what it wrote on stderr is read."""
    mod = _modules.get(case.module) or _modules.setdefault(case.module, rak.load(case.module, "cpp"))
    assert mod.target == "cpp"
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in case.args]
    got = case.call(mod, *args)
    return None if case.ref is None else rak.mismatch(got if case.out is None else args[case.out], case.ref, case.tol)


@pytest.mark.parametrize("label", DEFAULT)
def test_representative_kernels_match_numpy_in_cpp(rak, label, capsys):
    case = next(c for c in cases(rak, "examples") if c.label == label)
    assert run_case(rak, case, capsys) is None
    assert "warning[" not in capsys.readouterr().err  # generated and compiled, not the interpreter's


@pytest.mark.slow
def test_the_table_groups_are_the_scripts(rak):
    assert GROUPS == tuple(rak.CASES) and set(PARTS) <= set(GROUPS)


# the groups of hundreds of rows (each row a g++ build, ~0.5 s) in contiguous parts, a test each,
# so that xdist spreads them over its workers: whole, std.elementwise alone was a 300 s test
PARTS = {"std.elementwise": 4, "std.reduce": 4, "std.quant": 2, "std.nn_train": 2, "std.broadcast": 2}
SLICES = [(group, part) for group in GROUPS for part in range(PARTS.get(group, 1))]


def part_of(rows: list, part: int, parts: int) -> list:
    """The `part`-th of `parts` contiguous slices of `rows` (together: every row once, in order)."""
    return rows[part * len(rows) // parts:(part + 1) * len(rows) // parts]


@pytest.mark.slow
@pytest.mark.parametrize("group, part", SLICES, ids=[f"{g}-{p}" if g in PARTS else g for g, p in SLICES])
def test_every_kernel_matches_numpy_on_the_cpu_target(rak, group, part, capsys):
    """Every row of the group (of its part); where a kernel falls back to the interpreter (E345,
    said on stderr), the result is the interpreter's: right either way."""
    wrong = []
    for case in part_of(cases(rak, group), part, PARTS.get(group, 1)):
        try:
            why = run_case(rak, case, capsys)
        except Exception as e:  # noqa: BLE001 - a row that cannot run is wrong, and the others still run
            why = f"{type(e).__name__}: {(str(e).strip().splitlines() or [''])[0][:300]}"
        if why is not None:
            wrong.append(f"{case.label}: {why}")
    assert wrong == []


def test_the_parts_of_a_group_are_its_rows_once_each():
    rows = list(range(433))
    assert [r for part in range(4) for r in part_of(rows, part, 4)] == rows
    assert [len(part_of(rows, part, 4)) for part in range(4)] == [108, 108, 108, 109]


def test_cpu_is_a_registered_target_that_serves_no_gpu():
    import tomllib

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["tlc.targets"]
    assert declared["cpu"] == "tlc.targets.cpu:CPU"  # (installed metadata may predate it: _own() knows it too)
    cpu = targets.get("cpu")
    assert cpu.name == "cpu" and cpu.code_generator() is tlc.codegen.cpp.generate
    assert "cpu" in targets.names()
    assert cpu.host and not any(cpu.serves(cc) for cc in [(0, 0), (8, 0), (9, 0), (12, 0)])
    assert targets.for_capability((0, 0)) is None


VECTOR_ADD = str(ROOT / "examples" / "vector_add.tl")


def test_the_library_is_compiled_once_and_cached_by_source(tmp_path, monkeypatch):
    monkeypatch.setenv("TLC_CACHE_DIR", str(tmp_path))
    mod = tlc.load(VECTOR_ADD, target="cpp")
    kernel = mod.vector_add.scheduled({}, "cpu")
    source = tlc.codegen.cpp.generate(kernel).source
    assert "#pragma omp for collapse(3)" in source and "#pragma omp simd" in source
    path = runtime_cpp.library_path(source)
    assert path.parent == tmp_path / "cpp" and not path.exists()
    runtime_cpp.build(source, "vector_add")
    assert path.exists()
    calls = []
    monkeypatch.setattr(runtime_cpp.subprocess, "run", lambda *a, **k: calls.append(a))
    assert runtime_cpp.build(source, "vector_add") == path and calls == []


def test_a_cache_that_cannot_be_written_only_warns(tmp_path, monkeypatch):
    """TLC_CACHE_DIR a file (or read-only, or full): the library is loaded from a temporary copy
    after one warning, where writing it into the cache raised NotADirectoryError out of the call."""
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("TLC_CACHE_DIR", str(tmp_path / "file"))
    monkeypatch.setattr(runtime_cpp, "_warned_uncached", False)
    mod = tlc.compile_source("@kernel\ndef twice(x: f32[N], y: f32[N]):\n    with grid(cdiv(N, 32), threads=32) as b:\n"
                             "        for i in parallel(32):\n            y[b * 32 + i] = x[b * 32 + i] * 2.0\n",
                             target="cpp", path="twice.tl")
    x, y = np.arange(40, dtype=np.float32), np.zeros(40, np.float32)
    with pytest.warns(tlc.runtime.CacheWarning) as caught:
        mod.twice(x, y)
    assert [str(w.message) for w in caught] == [
        f"tlc: cannot write the cpu target's cache in {tmp_path / 'file' / 'cpp'} (Not a directory); kernels will be "
        "compiled again in every process. Set TLC_CACHE_DIR to a writable directory to cache them."]
    assert (y == 2 * x).all()


def test_cli_runs_on_the_cpu_target_and_checks_it_against_the_interpreter():
    r = CliRunner().invoke(main, ["run", VECTOR_ADD, "-k", "vector_add", "--target", "cpu", "--shape", "N=3001",
                                  "--in", "alpha=2", "--check"])
    assert (r.exit_code, r.stderr) == (0, ""), r.output
    lines = r.stdout.splitlines()
    assert lines[:2] == ["running vector_add on the cpu target (C++ with OpenMP, g++)",
                         "check against the interpreter: largest relative error 0 (in out)"]
    r = CliRunner().invoke(main, ["run", VECTOR_ADD, "-k", "vector_add", "--target", "interp", "--shape", "N=30",
                                  "--in", "alpha=2"])
    assert r.stdout.splitlines()[0] == "running vector_add on the CPU reference interpreter"
    r = CliRunner().invoke(main, ["run", VECTOR_ADD, "-k", "vector_add", "--target", "interp", "--shape", "N=30",
                                  "--in", "alpha=2", "--check"])
    assert (r.exit_code, r.stdout, r.stderr) == (1, "", "error: --check needs the GPU; drop --target interp\n")


PRINTS = """\
@kernel
def shout(x: f32[N], y: f32[N]):
    with grid(1, threads=32) as b:
        print("hello %d\\n", N)
        for i in parallel(32):
            y[i] = x[i]
"""


def test_a_construct_it_does_not_generate_falls_back_to_the_interpreter_with_e345(capsys):
    mod = tlc.compile_source(PRINTS, target="cpp", path="prints.tl")
    x, y = np.arange(40, dtype=np.float32), np.zeros(40, np.float32)
    mod.shout(x, y)
    out = capsys.readouterr()
    assert out.out == "hello 40\n" and np.array_equal(y[:32], x[:32])
    assert out.err == ("prints.tl:4:9: warning[E345]: the cpu target does not generate print (its lines would come "
                       "in another order than on the GPU) yet\n"
                       "  |\n"
                       '4 |         print("hello %d\\n", N)\n'
                       "  |         ^^^^^^^^^^^^^^^^^^^^^^\n"
                       "  = hint: 'shout' runs on the CPU reference interpreter instead\n")


def test_no_compiler_falls_back_to_the_interpreter_with_e346(monkeypatch, capsys):
    monkeypatch.setenv("CXX", "no-such-cxx")
    monkeypatch.setattr(api, "_said_no_compiler", False)
    runtime_cpp.find_compiler.cache_clear()
    try:
        assert tlc.load(VECTOR_ADD, target="cpp").target == "cpu"
    finally:
        runtime_cpp.find_compiler.cache_clear()
    assert capsys.readouterr().err == ("warning[E346]: the cpu target cannot compile here: no C++ compiler: "
                                       "'no-such-cxx' is not on the PATH (set CXX to one with OpenMP)\n"
                                       "  = hint: kernels run on the CPU reference interpreter instead\n")


def test_code_the_compiler_rejects_falls_back_to_the_interpreter_with_e347(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TLC_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(runtime_cpp, "CXXFLAGS", runtime_cpp.CXXFLAGS + ("-DTL_BROKEN=(",))
    runtime_cpp.toolchain.cache_clear()
    try:
        mod = tlc.load(VECTOR_ADD, target="cpp")
        x, y, out = np.ones(5, np.float32), np.ones(5, np.float32), np.zeros(5, np.float32)
        src = "#define TL_X\nint main() { return TL_BROKEN; }\n"
        monkeypatch.setattr(codegen_cpp, "generate", lambda k: codegen_cpp.CppKernel("vector_add", "f", src, ()))
        mod.vector_add(x, y, out, 2.0)
    finally:
        runtime_cpp.toolchain.cache_clear()
    assert np.array_equal(out, np.full(5, 3.0, np.float32))  # the interpreter's
    err = capsys.readouterr().err
    kept = tmp_path / "cpp" / "failed" / "vector_add.cpp"
    assert err.startswith(f"warning[E347]: the C++ compiler rejected the code generated for 'vector_add' (a tlc "
                          f"bug; the source is kept at {kept}):\n")
    assert err.endswith("  = hint: 'vector_add' runs on the CPU reference interpreter instead\n")
    assert kept.read_text() == src


ENDLESS = """\
@kernel
def spin(x: f32[N]):
    with grid(1, threads=32) as b:
        n = 1
        while n > 0:
            n = n + 0 * N
"""


def test_an_endless_while_loop_stops_with_the_interpreters_error(capsys):
    mod = tlc.compile_source(ENDLESS, target="cpp", path="spin.tl")
    with pytest.raises(tlc.interp.InterpError) as e:
        mod.spin(np.zeros(4, np.float32))
    assert str(e.value) == ("kernel 'spin': a while loop at spin.tl:5 ran 1048576 times without ending; the cpu "
                            "target stops it there, as the interpreter does (an endless loop?)")
    assert "warning[" not in capsys.readouterr().err


CONVERT_F8 = """\
@kernel
def to_f8(x: f32[N], a: f8e4m3[N], b: f8e5m2[N], y: f32[N], z: f32[N]):
    with grid(cdiv(N, 256), threads=128) as bx:
        for i in parallel(256):
            a[bx * 256 + i] = f8e4m3(x[bx * 256 + i])
            b[bx * 256 + i] = f8e5m2(x[bx * 256 + i])
            y[bx * 256 + i] = f32(a[bx * 256 + i])
            z[bx * 256 + i] = f32(b[bx * 256 + i])
"""


def test_8_bit_floats_convert_bit_for_bit_as_the_interpreter():
    """Round to nearest even, saturation to the largest finite value (inf too), subnormals, NaN."""
    import ml_dtypes

    rng = np.random.default_rng(0)
    x = np.concatenate([rng.standard_normal(500).astype(np.float32) * s for s in (1e-4, 0.01, 1, 30, 1000, 1e5)]
                       + [np.array([np.nan, np.inf, -np.inf, 0, -0.0, 448, 464, 57344, 61440, 2**-9, 2**-10,
                                    3 * 2**-11, 2**-17, 3 * 2**-17], np.float32)])
    got = {}
    for target in ("cpp", "interp"):
        out = [np.zeros(x.size, ml_dtypes.float8_e4m3fn), np.zeros(x.size, ml_dtypes.float8_e5m2),
               np.zeros(x.size, np.float32), np.zeros(x.size, np.float32)]
        tlc.compile_source(CONVERT_F8, target=target).to_f8(x, *out)
        got[target] = [a.view(np.uint8) for a in out[:2]] + out[2:]
    for mine, reference in zip(got["cpp"], got["interp"]):
        assert np.array_equal(mine, reference, equal_nan=mine.dtype.kind == "f")


HISTOGRAM = """\
@kernel
def hist(idx: i32[N], v: T[N], total: T[B], top: T[B], T: dtype = f32):
    with grid(cdiv(N, 128), threads=128) as bx:
        for i in parallel(128):
            if bx * 128 + i < N:
                atomic_add(total[idx[bx * 128 + i]], v[bx * 128 + i])
                atomic_max(top[idx[bx * 128 + i]], v[bx * 128 + i])
"""


@pytest.mark.parametrize("dtype, stuck", [("int8", 300 - 256), ("bfloat16", 256)])
def test_atomics_across_the_blocks_threads_as_the_interpreter(dtype, stuck):
    """Blocks on two threads hit the same elements, in an order the threads choose; the data make
    every order give one answer. Bins 0-5 take small integers whose partial sums stay exact in
    bfloat16 whatever the order (int8 wraps the same in any order); bin 6 takes 300 ones, which
    wrap in int8 (300 - 256) and stop at 256 in bfloat16 (256 + 1 rounds back to 256 at each
    addition: an f32 accumulator would say 300). Maxima are exact."""
    import ml_dtypes

    dt = np.dtype(getattr(ml_dtypes, dtype, None) or dtype)
    rng = np.random.default_rng(1)
    idx = np.concatenate([rng.integers(0, 6, 360), np.full(300, 6)]).astype(np.int32)
    ints = np.concatenate([rng.integers(-3, 4, 360), np.ones(300, np.int64)])
    order = rng.permutation(idx.size)
    idx, ints = idx[order], ints[order]
    reach = np.zeros(7, np.int64)
    np.add.at(reach, idx, np.abs(ints))
    assert reach[:6].max() <= 256  # no partial sum of bins 0-5 leaves bfloat16's exact integers
    want = np.zeros(7, np.int64)
    np.add.at(want, idx, ints)
    want = want.astype(dt).astype(np.int64)
    want[6] = stuck
    want_top = np.full(7, -100, np.int64)
    np.maximum.at(want_top, idx, ints)
    for target in ("cpp", "interp"):
        total, top = np.zeros(7, dt), np.full(7, -100, dt)
        tlc.compile_source(HISTOGRAM, target=target).hist(idx, ints.astype(dt), total, top)
        assert total.astype(np.int64).tolist() == want.tolist(), target
        assert top.astype(np.int64).tolist() == want_top.tolist(), target


def test_dump_of_a_cpu_target_run_ends_with_its_cpp(tmp_path):
    r = CliRunner().invoke(main, ["run", VECTOR_ADD, "-k", "vector_add", "--target", "cpu", "--shape", "N=10",
                                  "--in", "alpha=2", "--dump", str(tmp_path)])
    assert r.exit_code == 0, r.output
    stages = sorted(p.name for p in (tmp_path / "vector_add.cpu").iterdir())
    from tlc.schedule import PASSES  # options, the typed AST, the IR after each pass, then the C++

    assert stages[-1] == f"{len(PASSES) + 2:02d}-vector_add.cpp" and not any("ptx" in s for s in stages)
    assert "extern \"C\" int tl_run_vector_add(" in (tmp_path / "vector_add.cpu" / stages[-1]).read_text()


CHECKED = """\
@kernel
def check(x: f32[N], y: f32[N]):
    with grid(cdiv(N, 64), threads=64) as b:
        for i, j in parallel(8, 8):
            device_assert(x[b * 64 + i * 8 + j] < 100.0, "x = %f at %d", x[b * 64 + i * 8 + j], b * 64 + i * 8 + j)
            y[b * 64 + i * 8 + j] = x[b * 64 + i * 8 + j]
"""


def test_a_failing_device_assert_raises_with_the_gpus_record(capsys):
    """The site, the values, the block and the parallel index in C order as the thread, as the GPU
    runtime reports them (the interpreter names the index: index (2, 6))."""
    x = np.zeros(300, np.float32)
    x[150] = 500
    mod = tlc.compile_source(CHECKED, target="cpp", path="check.tl")
    mod.check(np.zeros(300, np.float32), np.zeros(300, np.float32))  # passes
    with pytest.raises(tlc.device_assert.DeviceAssertError) as e:
        mod.check(x, np.zeros(300, np.float32))
    assert str(e.value) == "check.tl:5:13: device_assert failed: x = 500.000000 at 150 (block (2, 0, 0), thread 22)"
    assert "warning[" not in capsys.readouterr().err


def test_a_grid_that_divides_by_zero_is_the_interpreters_error():
    """The cpu target computes the grid as the interpreter does (runtime/grid.grid_extents): the
    same error naming the dimension, its expression and the sizes it read."""
    mod = tlc.compile_source("@kernel\ndef k(x: f32[N], g: i32):\n    with grid(4 // g, threads=32) as b:\n"
                             "        x[b] = 1.0\n", target="cpp", path="zero.tl")
    with pytest.raises(tlc.TlcError) as e:
        mod.k(np.zeros(4, np.float32), 0)
    assert str(e.value) == "kernel 'k' (zero.tl:2): grid dimension x, 4 // g with g = 0, divides by zero"
