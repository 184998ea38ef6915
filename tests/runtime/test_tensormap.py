"""Tensor maps at launch: what is refused before the driver is asked (so such launches take
the kernel's copies without the TMA), and the cache by (pointers, sizes)."""
import numpy as np

from tlc.codegen.warpspec import TensorMapSpec
from tlc.dtypes import F16
from tlc.runtime import tensormap
from tlc.runtime.tensormap import LaunchTensorMaps, encode
from tlc.runtime.whole_runs import DEFINE as WHOLE

A = TensorMapSpec("A", F16, ("M", "K"), 128, 64)
B = TensorMapSpec("B", F16, ("K", "N"), 64, 64)
C = TensorMapSpec("C", F16, ("M", "N"), 64, 64, store=True)


def test_unaligned_rows_bases_and_empty_tensors_are_refused_without_the_driver(monkeypatch):
    def driver():
        raise AssertionError("the driver is not asked")

    monkeypatch.setattr(tensormap, "_driver_encode", driver)
    assert encode(A, 0x10000, (130, 100)) is None  # a 200-byte row pitch
    assert encode(A, 0x10008, (130, 104)) is None  # a base 8 bytes past alignment
    assert encode(A, 0x10000, (0, 104)) is None


def test_the_map_is_what_the_driver_wrote_at_a_128_byte_boundary(monkeypatch):
    """The driver writes the 128-byte CUtensorMap at an aligned address of the map's storage;
    `encode` gives those bytes as the kernel argument, with the sizes, strides and box asked."""
    import ctypes
    import struct

    asked = []

    def driver(address, dtype, rank, pointer, dims, strides, box, element_strides, *modes):
        asked.append((address % 128, rank, pointer, struct.unpack("2Q", dims), struct.unpack("1Q", strides),
                      struct.unpack("2I", box)))
        ctypes.memmove(address, bytes(range(128)), 128)
        return 0

    monkeypatch.setattr(tensormap, "_driver_encode", lambda: driver)
    found = encode(A, 0x10000, (130, 104))
    assert asked == [(0, 2, 0x10000, (104, 130), (208,), tuple(A.box()))]
    assert isinstance(found, np.void) and found.tobytes() == bytes(range(128))


def test_launch_maps_are_cached_and_all_or_nothing(monkeypatch):
    calls = []

    def fake_encode(spec, pointer, sizes):
        calls.append((spec.param, pointer, sizes))
        return None if sizes[-1] % 8 else np.void(bytes([len(calls)]) * 128)

    monkeypatch.setattr(tensormap, "encode", fake_encode)
    maps = LaunchTensorMaps((A, B))
    first = maps((4096, 8192), ((130, 104), (104, 264)))
    assert len(first) == 3 and int(first[-1]) == 1 and first[0].tobytes()[0] == 1
    assert maps((4096, 8192), ((130, 104), (104, 264))) is first and len(calls) == 2
    # one map refused: no map is used, and tl_tma is 0
    off = maps((4096, 8192), ((130, 104), (104, 270)))
    assert int(off[-1]) == 0 and all(m.tobytes() == bytes(128) for m in off[:-1])


def test_the_store_map_has_its_own_flag(monkeypatch):
    def fake_encode(spec, pointer, sizes):
        return None if sizes[-1] % 8 else np.void(bytes([ord(spec.param)]) * 128)

    monkeypatch.setattr(tensormap, "encode", fake_encode)
    maps = LaunchTensorMaps((A, B, C))
    both = maps((1, 2, 3), ((128, 64), (64, 256), (128, 256)))
    assert int(both[-1]) == 3 and [m.tobytes()[0] for m in both[:-1]] == [ord("A"), ord("B"), ord("C")]
    # C's rows unaligned (N = 260 halves is fine for B's map here only because B is K x 264):
    # the copies keep the TMA, the epilogue stores from registers
    store_off = maps((1, 2, 3), ((128, 64), (64, 264), (128, 260)))
    assert int(store_off[-1]) == 1 and store_off[2].tobytes() == bytes(128) and store_off[1].tobytes()[0] == ord("B")
    loads_off = maps((1, 2, 3), ((128, 60), (64, 256), (128, 256)))
    assert int(loads_off[-1]) == 2 and loads_off[0].tobytes() == bytes(128) and loads_off[2].tobytes()[0] == ord("C")


def test_the_build_is_for_every_map_encoded_unless_the_kernel_asserts():
    assert tensormap.built_flags((A, B), asserts=()) == 1 and tensormap.built_flags((A, B, C), asserts=()) == 3
    assert tensormap.built_flags((), asserts=()) is None and tensormap.built_flags((A, C), asserts=("site",)) is None
    assert tensormap.with_flags("int k;", 3) == "#define TL_TMA_FLAGS 3  // every tensor map encoded\nint k;"
    assert tensormap.with_flags("int k;", None) == "int k;"
    # the flags of a launch are the objects a launch compares by identity
    flags = LaunchTensorMaps((A,))
    assert flags.specs == (A,) and tensormap.tma_flags((A,), [None])[-1] is tensormap.FLAGS[0]


def test_a_launch_whose_maps_do_not_encode_compiles_and_takes_the_generic_build(h200, monkeypatch):
    """std.gemm's matmul on sm_90a: NVRTC compiles it with TL_TMA_FLAGS = 3 (the copies without
    the TMA compiled out) and TL_WHOLE_RUNS (its epilogue's runs whole: tests/runtime/
    test_whole_runs.py); a launch with other flags compiles the generic source once and
    launches that; one with them launches the first build."""
    from pathlib import Path

    from tlc.codegen import generate
    from tlc.driver import check_file
    from tlc.runtime import compile as rc, compile_kernel, launch
    from tlc.schedule import schedule

    compiled_sources = []
    monkeypatch.setattr(rc, "nvrtc_compile", lambda source, arch, name: compiled_sources.append(source)
                        or f"cubin {len(compiled_sources)}".encode())
    monkeypatch.setattr(launch.CompiledKernel, "_load", lambda self, device: ("loaded", self.binary, device))
    checked = check_file(str(Path(__file__).resolve().parents[2] / "examples" / "gemm.tl"))
    ir = schedule(checked.program, "matmul", {}, target="sm_90a")
    gen = generate(ir, "sm_90a", sources=checked.sources)
    k = compile_kernel(ir, gen)
    assert compiled_sources == [WHOLE + "#define TL_TMA_FLAGS 3  // every tensor map encoded\n" + gen.source]
    assert k.built_flags is tensormap.FLAGS[3]

    def args(flags):  # A, B, C, M, K, N, then the maps' flags
        return [np.uint64(4096)] * 3 + [np.int32(256)] * 3 + [tensormap.FLAGS[flags]]

    assert k.function_for(0, args(3)) == ("loaded", b"cubin 1", 0)
    for flags in (1, 0, 2, 1):
        assert k.function_for(0, args(flags)) == ("loaded", b"cubin 2", 0)
    assert compiled_sources[1:] == [gen.source]  # compiled once, without the define
    assert k._generic.built_flags is None

