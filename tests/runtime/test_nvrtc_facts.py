"""NVRTC's version and archs (what a program cache key needs of it, issue #15): asked of the
library the process has loaded under the soname CuPy 14 opens, without CuPy binding NVRTC (0.47 ms
of a cached first call on the H200), and of CuPy where that library is not loaded, CuPy is
another version, or the GPU is AMD's.  A stand-in libnvrtc.so.13 (built here with the C
compiler, answering 13.7 and archs 90 and 100) and a stand-in CuPy (answering 12.9 and arch 52),
in a child process: the stand-in library must not be what the test process's NVRTC resolves to."""
import json
import shutil
import subprocess
import sys

import pytest

FAKE = r"""
int nvrtcVersion(int *major, int *minor) { *major = 13; *minor = 7; return 0; }
int nvrtcGetNumSupportedArchs(int *n) { *n = 2; return 0; }
int nvrtcGetSupportedArchs(int *archs) { archs[0] = 90; archs[1] = 100; return 0; }
"""

CHILD = r"""
import ctypes, json, sys
from types import SimpleNamespace as NS

runtime = NS(is_hip=False, _getCUDAMajorVersion=lambda: 13)
nvrtc = NS(getVersion=lambda: (12, 9), getSupportedArchs=lambda: [52])
cupy = NS(cuda=NS(runtime=runtime, nvrtc=nvrtc), __version__="14.0.0")
sys.modules.update({"cupy": cupy, "cupy.cuda": cupy.cuda, "cupy.cuda.runtime": runtime, "cupy.cuda.nvrtc": nvrtc})
from tlc.runtime import compile as rc

def facts():
    for fn in (rc._loaded_nvrtc, rc.nvrtc_version, rc.nvrtc_supported_archs):
        fn.cache_clear()
    return [list(rc.nvrtc_version()), list(rc.nvrtc_supported_archs())]

seen = {"not loaded": facts()}
ctypes.CDLL(sys.argv[1])  # loaded by its path, as PyTorch's build loads its NVRTC
seen["loaded"] = facts()
cupy.__version__ = "13.6.0"
seen["another CuPy"] = facts()
cupy.__version__, runtime.is_hip = "14.0.0", True
seen["HIP"] = facts()
runtime.is_hip, runtime._getCUDAMajorVersion = False, lambda: 12
seen["CUDA 12"] = facts()
print(json.dumps(seen))
"""


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler to build the stand-in NVRTC")
def test_nvrtc_facts_come_from_the_loaded_library_only_where_cupy_would_call_it(tmp_path):
    (tmp_path / "fake.c").write_text(FAKE)
    lib = tmp_path / "libnvrtc-stand-in.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-Wl,-soname,libnvrtc.so.13", "-o", str(lib), str(tmp_path / "fake.c")],
                   check=True, capture_output=True, timeout=120)
    done = subprocess.run([sys.executable, "-c", CHILD, str(lib)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    cupy = [[12, 9], [52]]
    assert json.loads(done.stdout) == {"not loaded": cupy, "loaded": [[13, 7], [90, 100]], "another CuPy": cupy,
                                       "HIP": cupy, "CUDA 12": cupy}
