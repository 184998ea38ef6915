"""Tensor maps at launch: what is refused before the driver is asked (so such launches take
the kernel's copies without the TMA), and the cache by (pointers, sizes)."""
import numpy as np

from tlc.codegen.warpspec import TensorMapSpec
from tlc.dtypes import F16
from tlc.runtime import tensormap
from tlc.runtime.tensormap import LaunchTensorMaps, encode

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
