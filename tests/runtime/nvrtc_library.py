"""A real NVRTC for tests on machines without a GPU: CuPy's bindings where CuPy imports, else the
library of the nvidia-cuda-nvrtc wheel (nvidia/cu*/lib/libnvrtc.so.*, NVRTC needs no GPU)
behind a stand-in for `cupy.cuda.nvrtc` with the calls runtime/compile.py makes.  `find()`
returns (module, None) or (None, why not); `stand_in` makes a module (that or a fake) the one
tlc's runtime imports as `cupy.cuda.nvrtc`, with no warm-up or PCH of this process yet."""
from __future__ import annotations

import ctypes
import glob
import os
import sys
import types


def stand_in(monkeypatch, nvrtc) -> None:
    from tlc.runtime import compile as rc, pch

    cuda = types.ModuleType("cupy.cuda")
    cuda.nvrtc = nvrtc
    cupy = types.ModuleType("cupy")
    cupy.cuda = cuda
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setitem(sys.modules, "cupy.cuda", cuda)
    monkeypatch.setattr(rc, "_warm_up", None)
    monkeypatch.setattr(pch, "made", None)


def find():
    try:
        from cupy.cuda import nvrtc

        nvrtc.getVersion()
        return nvrtc, None
    except Exception:  # noqa: BLE001 - no CuPy or no CUDA: the wheel's library, if installed
        pass
    try:
        import nvidia
    except ImportError:
        return None, "no NVRTC: neither CuPy nor the nvidia-cuda-nvrtc wheel is installed"
    found = sorted(path for folder in nvidia.__path__ for path in glob.glob(os.path.join(folder, "cu*", "lib", "libnvrtc.so.*"))
                   if ".alt." not in path)
    if not found:
        return None, "no NVRTC: neither CuPy nor the nvidia-cuda-nvrtc wheel is installed"
    return _CtypesNVRTC(found[-1]), None


class NVRTCError(RuntimeError):
    pass


class _CtypesNVRTC:
    """`cupy.cuda.nvrtc`'s calls that tlc makes, over the library's C API."""
    NVRTCError = NVRTCError

    def __init__(self, path: str):
        for builtins in sorted(glob.glob(os.path.join(os.path.dirname(path), "libnvrtc-builtins.so*"))):
            if ".alt." not in builtins:  # NVRTC opens it by name: found loaded, not searched
                ctypes.CDLL(builtins, mode=ctypes.RTLD_GLOBAL)
        self.lib = ctypes.CDLL(path)

    def _check(self, status: int) -> None:
        if status != 0:
            raise NVRTCError(f"NVRTC status {status}")

    def getVersion(self):
        major, minor = ctypes.c_int(), ctypes.c_int()
        self._check(self.lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)))
        return major.value, minor.value

    def createProgram(self, src, name, headers, include_names):
        prog = ctypes.c_void_p()
        texts = (ctypes.c_char_p * max(len(headers), 1))(*headers)
        names = (ctypes.c_char_p * max(len(include_names), 1))(*include_names)
        self._check(self.lib.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), name.encode(), len(headers),
                                                texts, names))
        return prog

    def compileProgram(self, prog, options):
        array = (ctypes.c_char_p * len(options))(*[o.encode() for o in options])
        self._check(self.lib.nvrtcCompileProgram(prog, len(options), array))

    def _bytes(self, prog, size_fn, get_fn) -> bytes:
        size = ctypes.c_size_t()
        self._check(getattr(self.lib, size_fn)(prog, ctypes.byref(size)))
        out = ctypes.create_string_buffer(size.value)
        self._check(getattr(self.lib, get_fn)(prog, out))
        return out.raw

    def getProgramLog(self, prog) -> str:
        return self._bytes(prog, "nvrtcGetProgramLogSize", "nvrtcGetProgramLog").rstrip(b"\0").decode(errors="replace")

    def getCUBIN(self, prog) -> bytes:
        return self._bytes(prog, "nvrtcGetCUBINSize", "nvrtcGetCUBIN")

    def getPTX(self, prog) -> bytes:
        return self._bytes(prog, "nvrtcGetPTXSize", "nvrtcGetPTX")

    def destroyProgram(self, prog) -> None:
        self.lib.nvrtcDestroyProgram(ctypes.byref(prog))
