"""The TL_ONE_PART build of a split-K kernel (#15, time to first result; runtime/one_part.py):
which kernels have it, its text, the builds the runtime compiles with the switch off (as before)
and on, which one a launch takes (general path, fast path) without a GPU, and the program
cache's record of it, and nvcc building both builds."""
import re
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import tlc
from runtime_kit import FakeCupyArray, overlap_pairs, stand_in_cupy
from tlc.runtime import one_part, pch
from tlc.runtime.grid import compile_grid
from tlc.runtime.tensormap import FLAGS
from tlc.runtime.whole_runs import DEFINE as WHOLE_RUNS

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "codegen"))


@pytest.fixture(scope="module")
def gemm():
    return tlc.load("std.gemm", target="cpu")


def test_a_split_k_kernel_has_the_build_and_others_do_not(gemm):
    """std.gemm's matmul on sm_90a splits K (its grid's z the parts); on sm_80, and a kernel that
    does not split, have no such build and no `tl_one_part` in their text."""
    gen = gemm.matmul.generated({}, "sm_90a")
    assert gen.one_part is True
    assert "#ifdef TL_ONE_PART\n  constexpr bool tl_one_part = true;" in gen.source
    assert "tl_tiles_z = tl_one_part ? 1 : " in gen.source
    for other in (gemm.matmul.generated({}, "sm_80"), tlc.load("std.nn", target="cpu").rms_norm.generated({}, "sm_90a")):
        assert other.one_part is False and "tl_one_part" not in other.source


def test_the_launch_computes_the_parts_as_the_grid_does(gemm):
    """parts_of reads a launch's C arguments (A, B, C, M, K, N, the maps, the flags) and gives the
    tile grid's z, as the grid's own function of the sizes: 1 for a large output or a short K,
    more for few tiles and a long K."""
    gen = gemm.matmul.generated({}, "sm_90a")
    slots = {a.name: i for i, a in enumerate(gen.args)}
    parts = one_part.parts_of(gen.grid[2], slots)
    tiles = compile_grid(gen.grid, slots)
    for m, n, k in ((4096, 4096, 4096), (256, 256, 16384), (128, 256, 1024), (256, 256, 128), (1, 1, 1)):
        args = [np.uint64(0x7000), np.uint64(0x8000), np.uint64(0x9000), np.int32(m), np.int32(k), np.int32(n)]
        assert parts(args + ["maps", FLAGS[3]]) == tiles(args)[2]
    big = [0, 0, 0, np.int32(4096), np.int32(4096), np.int32(4096)]
    few = [0, 0, 0, np.int32(256), np.int32(16384), np.int32(256)]
    assert parts(big) == 1 and parts(few) > 1


def matmul_args(m, k, n, flags=3, c=0x9000):
    return [np.uint64(0x7000), np.uint64(0x8000), np.uint64(c), np.int32(m), np.int32(k), np.int32(n),
            "map0", "map1", "map2", FLAGS[flags]]


def stand_in(monkeypatch):
    from tlc.runtime import compile as rc, launch

    sources = []
    monkeypatch.setattr(rc, "nvrtc_compile", lambda source, arch, name: sources.append(source)
                        or f"cubin {len(sources)}".encode())
    monkeypatch.setattr(launch.CompiledKernel, "_load", lambda self, device: ("loaded", self.binary, device))
    return sources


def test_off_the_runtime_builds_as_before(h200, monkeypatch, gemm):
    """The switch off (the default): the source with the TMA flags and whole runs alone, and every
    launch, in parts or not, takes that build."""
    from tlc.runtime import compile_kernel

    assert one_part.ONE_PART_BUILD is False
    sources = stand_in(monkeypatch)
    gen = gemm.matmul.generated({}, "sm_90a")
    compiled = compile_kernel(gemm.matmul.scheduled({}, "sm_90a"), gen)
    assert sources == [WHOLE_RUNS + "#define TL_TMA_FLAGS 3  // every tensor map encoded\n" + gen.source]
    assert compiled.one_part is False
    for launch in (matmul_args(4096, 4096, 4096), matmul_args(256, 16384, 256)):
        assert compiled.function_for(0, launch) == ("loaded", b"cubin 1", 0)
    assert len(sources) == 1


def test_on_a_launch_in_parts_takes_the_build_without_it(h200, monkeypatch, gemm):
    """The switch on: NVRTC compiles the TL_ONE_PART source first (the precompiled primitives
    still serve it); a launch in parts of K compiles the source without TL_ONE_PART once (the
    same TMA flags and whole runs) and launches it; one whose maps or runs do not fit launches
    the generic build, in parts or not."""
    from tlc.runtime import compile_kernel

    monkeypatch.setattr(one_part, "ONE_PART_BUILD", True)
    sources = stand_in(monkeypatch)
    gen = gemm.matmul.generated({}, "sm_90a")
    compiled = compile_kernel(gemm.matmul.scheduled({}, "sm_90a"), gen)
    split = WHOLE_RUNS + "#define TL_TMA_FLAGS 3  // every tensor map encoded\n" + gen.source
    assert sources == [WHOLE_RUNS + "#define TL_TMA_FLAGS 3  // every tensor map encoded\n" + one_part.DEFINE + gen.source]
    assert compiled.one_part is True and pch.split(sources[0]) == pch.split(split) is not None
    assert compiled.function_for(0, matmul_args(4096, 4096, 4096)) == ("loaded", b"cubin 1", 0)
    assert compiled.function_for(0, matmul_args(256, 16384, 256)) == ("loaded", b"cubin 2", 0)
    assert compiled.function_for(0, matmul_args(128, 8192, 256)) == ("loaded", b"cubin 2", 0)
    assert sources[1:] == [split] and compiled._split._functions is compiled._split_functions
    assert compiled.function_for(0, matmul_args(256, 16384, 256, flags=0)) == ("loaded", b"cubin 3", 0)
    assert compiled.function_for(0, matmul_args(4096, 4096, 4095)) == ("loaded", b"cubin 3", 0)  # N odd: ragged
    assert sources[2:] == [gen.source] and compiled.launched_generic
    assert compiled.function_for(0, matmul_args(2048, 4096, 2048)) == ("loaded", b"cubin 1", 0)


def test_the_program_entry_records_which_build_its_binary_is(h200, monkeypatch, gemm):
    """A cached launch must know whether its binary is the one-part build (else a launch in parts
    would run a kernel that takes one)."""
    from tlc.runtime import program_entry, read_program_entry

    kernel, gen = gemm.matmul.scheduled({}, "sm_90a"), gemm.matmul.generated({}, "sm_90a")
    for built in (True, False):
        compiled = read_program_entry(program_entry(kernel, gen, b"cubin", "sm_90a", one_part=built))
        assert compiled.one_part is built and compiled.launch_fields.one_part is True


def test_the_fast_path_launches_the_split_build_for_a_launch_in_parts(monkeypatch, gemm):
    """The fast path computes the parts itself: one part launches the first build; in parts the
    split build where it is loaded, else the general path (which compiles and loads it); a
    ragged C the generic build."""
    from tlc.runtime import fastpath

    stand_in_cupy(monkeypatch)
    gen = gemm.matmul.generated({}, "sm_90a")
    launches, split, generic = [], {}, {0: lambda *a: launches.append("generic")}
    ir = gemm.matmul.scheduled({}, "sm_90a")
    compiled = SimpleNamespace(params=ir.params, launch_fields=gen, overlap_pairs=overlap_pairs(ir),
                               block=(gen.threads, 1, 1), smem=gen.smem_bytes, whole_runs=gen.whole_runs,
                               _generic_functions=generic, _functions={0: lambda *a: launches.append("one part")},
                               built_flags=FLAGS[3], tensor_maps=lambda pointers, sizes: ["m", "m", "m", FLAGS[3]],
                               one_part=True, _split_functions=split, persistent_blocks=132, cluster=1)
    fast = fastpath.build(compiled, fallback=lambda args: "general path")

    def call(m, k, n):
        return fast({"A": FakeCupyArray((m, k), np.float16, ptr=0x7000_0000_0000),
                     "B": FakeCupyArray((k, n), np.float16, ptr=0x8000_0000_0000),
                     "C": FakeCupyArray((m, n), np.float16, ptr=0x9000_0000_0000)})

    assert call(4096, 4096, 4096) is True and launches == ["one part"]
    assert call(256, 16384, 256) == "general path"
    split[0] = lambda *a: launches.append("split")
    assert call(256, 16384, 256) is True and call(4096, 4096, 4095) is True and call(2048, 4096, 2048) is True
    assert launches[1:] == ["split", "generic", "one part"]


@pytest.mark.nvcc
@pytest.mark.slow
def test_nvcc_builds_both_and_the_one_part_build_is_smaller(gemm, tmp_path):
    """std.gemm's matmul as the runtime builds it (TL_TMA_FLAGS 3, TL_WHOLE_RUNS) with and without
    TL_ONE_PART: both without spills, the same registers, the fixup's code gone from the one-part
    build (nvcc 13.0: 1,504 -> 1,320 SASS instructions, 168 registers)."""
    from nvcc import cubin_sass

    from tlc.runtime import built_source
    from tlc.runtime.args import LaunchFacts

    gen = gemm.matmul.generated({}, "sm_90a")
    asserts = LaunchFacts.of(gemm.matmul.scheduled({}, "sm_90a")).asserts
    counts, registers = {}, {}
    for form in (False, True):
        (tmp_path / str(form)).mkdir()  # one folder a build: nvcc's cache keys the folder's files
        sass, log = cubin_sass(built_source(gen, asserts, one_part=form), "sm_90a", tmp_path / str(form))
        assert "spill stores" not in log or "0 bytes spill stores" in log, log
        counts[form] = len(re.findall(r"^\s+/\*[0-9a-f]{4}\*/", sass, re.M))
        registers[form] = re.findall(r"Used (\d+) registers", log)
    assert registers[True] == registers[False] and counts[True] < 0.93 * counts[False], (counts, registers)
