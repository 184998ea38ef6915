"""C names of .tl names (tlc/codegen/cnames.py): injective, never reserved, never the generator's
own, and the reserved set complete (keywords, CUDA's types and built-ins, the headers' macros,
the C library, the math functions the generator calls, the names the generated file defines)."""
from __future__ import annotations

import functools
import re
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nvcc import NVCC
from tlc.codegen import cexpr, generate
from tlc.codegen.cnames import c_name, reserved
from tlc.driver import check_file
from tlc.ir import print_kernel
from tlc.schedule import schedule_grids

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = ROOT / "templates"
C_IDENT = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
OWNED = re.compile(r"(tl_|TL_|launch_)[A-Za-z]")  # the generator's own: tl_r, TL_PRIMITIVES, launch_<kernel>


def decode(c: str) -> str:
    """The inverse of c_name, as its docstring argues it exists."""
    if not c.endswith("_"):
        return c
    text = c[:-1].removeprefix("x_0")
    out, i = [], 0
    while i < len(text):
        if text[i] == "_":
            assert text[i + 1] in "12", c
            out.append("_" if text[i + 1] == "1" else chr(int(text[i + 2:i + 8], 16)))
            i += 2 if text[i + 1] == "1" else 8
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def test_examples_of_the_scheme():
    assert {n: c_name(n) for n in ["x", "my_var", "half", "half_", "int", "int_", "INFINITY", "stream", "launch_K",
                                   "expf", "tl_r", "_k", "a__b", "cudaFoo", "é"]} == {
        "x": "x", "my_var": "my_var", "half": "half_", "half_": "half_1_", "int": "int_", "int_": "int_1_",
        "INFINITY": "INFINITY_", "stream": "stream_", "launch_K": "launch_1K_", "expf": "expf_", "tl_r": "tl_1r_",
        "_k": "x_0_1k_", "a__b": "a_1_1b_", "cudaFoo": "cudaFoo_", "é": "x_0_20000e9_"}


RESERVED = sorted(reserved())
TWINS = st.sampled_from(RESERVED).flatmap(lambda n: st.sampled_from([n, n + "_", n + "__", "_" + n, c_name(n)]))
ANY = st.from_regex(r"[^\W\d]\w{0,12}", fullmatch=True)  # what the grammar's NAME takes, Unicode included
NAMES = st.one_of(TWINS, ANY)


@settings(derandomize=True, max_examples=400, deadline=None)
@given(NAMES)
def test_c_names_are_inverted_and_never_reserved_or_owned(name):
    c = c_name(name)
    assert decode(c) == name  # so no two names share a C name
    assert C_IDENT.fullmatch(c) and "__" not in c, c
    assert c not in reserved() and not OWNED.match(c), c


@settings(derandomize=True, max_examples=150, deadline=None)
@given(NAMES, NAMES)
def test_two_names_two_c_names(a, b):
    assert (c_name(a) == c_name(b)) == (a == b)


def test_no_reserved_name_looks_escaped():
    """Escaped names end in `_`; a listed name that did might be one of them."""
    assert [n for n in RESERVED if n.endswith("_")] == []


NEEDED = """alignas and bool char8_t co_await concept consteval constinit export int long requires template
this_is_not_reserved_but_the_next_are half __nv_bfloat16 __half dim3 int4 float2 uint3 char1 uchar4 short2
ushort3 long4 ulong1 longlong2 ulonglong4 double3 float4 nv_bfloat162 half2 NULL NAN INFINITY EOF HUGE_VAL
FLT_MAX INT_MAX SIZE_MAX M_PI stdin stdout assert offsetof cudaStream_t cudaError_t cudaSuccess
CUtensorMap CUDA_VERSION DBL_EPSILON malloc free memcpy size_t ptrdiff_t int32_t uint64_t printf expf powf exp2f __expf
rsqrtf fmaxf fminf floorf atomicAdd __syncthreads threadIdx blockIdx blockDim gridDim warpSize stream dims
strides box tl std TL_PRIMITIVES TL_HAS_FP8 tl_grid launch_k main""".split()


@pytest.mark.parametrize("name", [n for n in NEEDED if n != "this_is_not_reserved_but_the_next_are"])
def test_reserved_names_are_renamed(name):
    assert c_name(name) != name


def test_math_functions_the_generator_calls_are_renamed():
    called = {f for table in (cexpr._MATH_F32, cexpr._MATH_F64) for f in table.values() if "::" not in f}
    assert called and [f for f in sorted(called) if c_name(f) == f] == []


def test_template_macros_are_renamed():
    defined = set()
    for path in list(TEMPLATES.glob("*.j2")) + list((TEMPLATES / "tl").glob("*.cuh")):
        defined |= set(re.findall(r"#define\s+(\w+)", path.read_text()))
    assert defined and [m for m in sorted(defined) if c_name(m) == m] == []


def _identifiers(c: str) -> set[str]:
    c = re.sub(r"//[^\n]*|^\s*#[^\n]*|\"(?:\\.|[^\"\\])*\"", " ", c, flags=re.M)
    return set(re.findall(r"(?<![\w.:])[A-Za-z_]\w*\b(?!\s*::)", c))


@functools.lru_cache(maxsize=None)
def _checked(path: Path):
    """check_file of `path`, once a process: the test below takes each module once per kernel
    (std.gemm's 31), and checking the module again was ~0.05 s each, 12 of the file's 20 s.
    Scheduling and generating do not change the checked program."""
    return check_file(str(path))


def _kernels() -> list:
    """(file, kernel) of every example, std module and test program."""
    files = sorted((ROOT / "examples").glob("*.tl")) + sorted((ROOT / "stdlib").glob("*.tl")) + \
        sorted((ROOT / "tests" / "programs").glob("*.tl"))
    out = []
    for path in files:
        r = _checked(path)
        assert r.ok, path
        out.extend((path, k.name) for k in r.program.kernels() if k.module_path == r.program.path)
    return out


# kernels whose compiled-in sizes must differ (std.attention's mla_decode: a rotary part, DK - DV, of 64;
# std.conv's depthwise_conv2d stages its K * K taps' weights in shared memory: 64 x 64 taps do not fit)
SIZES = {"mla_decode": {"DK": 128}, "depthwise_conv2d": {"K": 3}}


@pytest.mark.parametrize("path,kernel", _kernels(), ids=lambda x: getattr(x, "name", x))
# sm_90a's generator writes sm_80's names and its own (wgmma, TMA); sm_80 alone in the slow run
@pytest.mark.parametrize("arch", [pytest.param("sm_80", marks=pytest.mark.slow), "sm_90a"])
def test_every_name_the_generator_writes_is_reserved(path, kernel, arch):
    """In the kernel and its launcher, every identifier that is not a user's C name (a name of
    the .tl file or of its scheduled IR, inlined functions' scalars included, spelled by c_name)
    is reserved or the generator's own: so no user name can be spelled as one of them.  (The
    preamble's structs, before the kernel, hold no user names: only their own members.)"""
    r = _checked(path)
    # a shape symbol compiled in (a buffer sized by it) needs a size; every grid is a kernel
    sizes = {name: 64 for name in r.program.function(kernel).to_specialize} | SIZES.get(kernel, {})
    for k in schedule_grids(r.program, kernel, sizes, target=arch):
        g = generate(k, arch, sources=r.sources)
        text = g.source[g.source.index('extern "C" __global__'):]
        users = {c_name(n) for n in re.findall(r"[^\W\d]\w*", path.read_text() + print_kernel(k))}
        foreign = {n for n in _identifiers(text) - users if not OWNED.match(n) and not n.startswith("__")}
        assert foreign and [n for n in sorted(foreign) if c_name(n) == n] == []


@pytest.mark.nvcc  # conftest.py skips it, saying why, where no CUDA toolkit exists
def test_every_macro_of_the_included_headers_is_reserved(tmp_path):
    """A macro silently rewrites the name it matches, so none may be a safe name: every macro the
    headers of a generated file define (nvcc -dM, device side) is renamed."""
    includes = ["cuda_fp16.h", "cuda_bf16.h", "cuda_fp8.h", "cuda_runtime.h", "cstdio", "cuda.h", "cudaTypedefs.h",
                "cstring"]
    (tmp_path / "inc.cu").write_text("".join(f"#include <{h}>\n" for h in includes))
    out = subprocess.run([NVCC, "-std=c++17", "-arch=sm_90a", "-E", "-Xcompiler", "-dM", "inc.cu"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    macros = set(re.findall(r"^#define (\w+)", out.stdout, re.M))
    assert len(macros) > 500 and [m for m in sorted(macros) if c_name(m) == m] == []
