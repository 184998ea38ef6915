"""tlc/runtime/cpp.py's compiler command: 512-bit vectors (and tl::gemm's 8-row register blocks
that go with them) only where the CPU has AVX-512; the flags are part of the cache key."""
import pytest

from tlc.runtime import cpp as runtime_cpp


def test_wide_vectors_only_on_an_avx512_cpu(monkeypatch):
    for line, wide in (("flags\t\t: fpu sse2 avx2 fma", False), ("flags\t\t: fpu avx2 avx512f avx512bw", True),
                       ("flags\t\t: fpu avx512fp16", False), ("", False)):
        monkeypatch.setattr(runtime_cpp, "cpu_flags", lambda line=line: line)
        flags = runtime_cpp.compiler_flags()
        assert flags == runtime_cpp.CXXFLAGS + (runtime_cpp.WIDE_VECTORS if wide else ()), line
    assert runtime_cpp.WIDE_VECTORS == ("-mprefer-vector-width=512", "-DTL_GEMM_ROWS=8")


@pytest.mark.skipif(runtime_cpp.compiler_unavailable_reason() is not None, reason="no C++ compiler here")
def test_the_flags_decide_the_library(monkeypatch):
    paths = []
    for line in ("flags : avx2", "flags : avx2 avx512f"):
        monkeypatch.setattr(runtime_cpp, "cpu_flags", lambda line=line: line)
        runtime_cpp.toolchain.cache_clear()
        try:
            paths.append(runtime_cpp.library_path("int x;"))
        finally:
            runtime_cpp.toolchain.cache_clear()
    assert paths[0] != paths[1]
