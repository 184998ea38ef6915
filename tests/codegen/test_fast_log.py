"""Where generated code uses tl::fast_log2 / tl::fast_log / tl::fast_log1p (tl/types.cuh: the
hardware's lg2.approx away from 1, a polynomial of x - 1 near it) instead of logf, log2f and
log1pf: logarithms whose results are 16-bit floats; f32 results keep the precise functions.
The polynomial is checked here in f32 arithmetic with FMAs (no GPU: it is what can go wrong
near 1, where the hardware's absolute error would be a large relative one); the f16 tolerance
tests of std.elementwise on the GPU hold the whole function to NumPy."""
import re
import shutil
import subprocess

import numpy as np
import pytest

import tlc
from tlc.codegen import generate_file
from tlc.package_data import templates
from nvcc import cubin_sass

SRC = """
@kernel
def ew(x: f16[N], y: f16[N], z: f32[N], w: f32[N]):
    with grid(cdiv(N, 256), threads=128) as bx:
        for i in parallel(256):
            y[bx * 256 + i] = log(x[bx * 256 + i]) + log2(y[bx * 256 + i]) + log1p(x[bx * 256 + i])
            w[bx * 256 + i] = log(z[bx * 256 + i]) + log2(z[bx * 256 + i]) + log1p(z[bx * 256 + i])
"""


def cuda() -> str:
    from tlc.schedule import schedule
    mod = tlc.compile_source(SRC, target="cpu", path="ops.tl")
    src = generate_file([schedule(mod.program, "ew", {}, target="sm_90a")], "sm_90a", sources=mod.program.sources,
                        source_name="ops.tl")
    return src


def near1() -> tuple[list[float], float]:
    """fast_log2_near1's coefficients (the constant term last, as Horner's rule takes them) and
    the distance from 1 within which the polynomial is used."""
    text = (templates() / "tl" / "types.cuh").read_text()
    body = text[text.index("float fast_log2_near1("):]
    body = body[:body.index("\n}\n")]
    first = re.search(r"fmaf\(f, (-?[0-9.e-]+)f, (-?[0-9.e-]+)f\)", body)
    rest = re.findall(r"fmaf\(p, f, (-?[0-9.e-]+)f\)", body)
    bound = re.search(r"fabsf\(f\) < ([0-9.]+)f \? f \* p : y", body)
    assert first and rest and bound, body
    return [float(first[1]), float(first[2])] + [float(c) for c in rest], float(bound[1])


def horner_f32(coeffs: list[float], f: np.ndarray) -> np.ndarray:
    """f * p(f) in f32 with FMAs: each step's product and sum exact, then rounded once."""
    f64 = f.astype(np.float32).astype(np.float64)
    p = np.full_like(f64, np.float32(coeffs[0]))
    for c in coeffs[1:]:
        p = (p * f64 + np.float64(np.float32(c))).astype(np.float32).astype(np.float64)
    return (f64 * p).astype(np.float32).astype(np.float64)


def test_sixteen_bit_logarithms_use_the_fast_forms():
    text = cuda()
    text = text[text.index("__global__"):]
    assert "tl::fast_log(" in text and "tl::fast_log2(" in text and "tl::fast_log1p(" in text
    assert text.count("logf(") == 1 and text.count("log2f(") == 1 and text.count("log1pf(") == 1  # f32: precise


def test_the_polynomial_near_1_keeps_f32_relative_precision():
    """Within the bound of 0, log2(1 + f) to 2^-22 relative (the hardware's 2^-22 absolute
    error would be 2^-12 relative at f = 2^-11, a whole f16 step); at the bound the hardware's
    relative error is below 2^-20, so the bound must not shrink below 1/4."""
    coeffs, bound = near1()
    assert bound >= 0.25
    f = np.concatenate([np.linspace(-bound, bound, 400001, dtype=np.float32),
                        np.arange(0.75, 1.25, 2.0 ** -10, dtype=np.float16).astype(np.float32) - 1,  # f16 x near 1
                        np.arange(-0.25, 0.25, 2.0 ** -14, dtype=np.float16).astype(np.float32),  # log1p's x
                        np.float32(2.0) ** -np.arange(1, 126, dtype=np.float32)])  # down to f32's smallest normal
    f = f[(f != 0) & (np.abs(f) < bound)]
    got = horner_f32(coeffs, f)
    want = np.log1p(f.astype(np.float64)) / np.log(2)
    rel = np.abs(got - want) / np.abs(want)
    assert rel.max() < 2.0 ** -22, f"worst at f = {f[np.argmax(rel)]!r}: 2^{np.log2(rel.max()):.2f}"


@pytest.mark.nvcc
def test_sixteen_bit_logarithms_are_the_hardware_ones(tmp_path):
    """Each 16-bit logarithm is one MUFU.LG2 (logf, log2f and log1pf take none)."""
    sass, _ = cubin_sass(cuda(), "sm_90a", tmp_path)
    assert sass.count("MUFU.LG2") == 3 * 2  # 256 elements at 128 threads: two a thread


@pytest.mark.nvcc
def test_pows_special_cases_on_a_rare_branch_leave_the_common_path_shorter(monkeypatch, tmp_path):
    """fast_math.RARE_POW_SPECIALS: std.elementwise's pow of f16 (16 elements a thread, sm_90a)
    with each element's special cases behind a branch of its own, their selects off the common
    path: the SASS outside the branches' bodies holds at most 3 FSETP an element (the
    polynomial's bound, the sign and the NaN product) and no FSEL, where the selects' form holds
    10 and 4."""
    import tlc.schedule.fast_math as fm
    from tlc.package_data import stdlib
    from tlc.runner import build

    def common_path(rare: bool) -> list[str]:
        monkeypatch.setattr(fm, "RARE_POW_SPECIALS", rare)
        src, _ = build(str(stdlib() / "elementwise.tl"), kernels=("pow",), defines=("T=f16",), arch="sm_90a")
        assert ("tl::fast_pow_near_rare(" in src) == rare
        sass, _ = cubin_sass(src, "sm_90a", tmp_path, name=f"pw{int(rare)}")
        lines = [ln for ln in sass.splitlines() if re.match(r"\s+/\*[0-9a-f]{4}\*/", ln)]
        at = [int(re.match(r"\s+/\*([0-9a-f]{4})\*/", ln).group(1), 16) for ln in lines]
        skipped = set()  # the bodies a predicated forward branch jumps over
        for k, ln in enumerate(lines):
            m = re.search(r"@!?P\d .*BRA (?:!?P\d, )?0x([0-9a-f]+)", ln)
            if m and int(m.group(1), 16) > at[k]:
                skipped.update(j for j in range(k + 1, len(lines)) if at[j] < int(m.group(1), 16))
        lo = next(k for k, ln in enumerate(lines) if "MUFU.LG2" in ln)  # the math, past the loads
        hi = max(k for k, ln in enumerate(lines) if "MUFU.EX2" in ln)
        return [ln for k, ln in enumerate(lines) if lo <= k <= hi and k not in skipped]

    rare, selects = common_path(True), common_path(False)
    count = lambda path, op: sum(f" {op}" in ln for ln in path)  # noqa: E731
    assert count(rare, "FSEL") == 0 and count(selects, "FSEL") >= 3 * 16
    assert count(rare, "FSETP") <= 3 * 16 < 8 * 16 <= count(selects, "FSETP")
    assert count(rare, "MUFU.EX2") == count(selects, "MUFU.EX2") == 16


POW_HARNESS = r"""
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
using std::signbit;
static float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }
FUNCTIONS
int main() {
  const float v[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1.0f, -1.0f, 2.0f, -2.0f, 0.5f, -0.5f, 3.0f, -3.0f,
                     2.5f, -2.5f, 1e-3f, 7.0f, -7.0f, 65504.0f, 16777216.0f, -16777216.0f, 33554432.0f, 1e-30f, 0.9f};
  long bad = 0;
  for (float a : v)
    for (float b : v) {
      for (int form = 0; form < 6; ++form) {  // fast_pow_near (1, 3, 5): every a here is 0 or a normal f32
      const bool near = form % 2, rare = form >= 2 && form < 4, flagged = form >= 4;  // rare: behind a branch
      bool taken = false;  // flagged: the common path, the selects where it says so (codegen/rare_runs.py)
      float got = flagged ? (near ? fast_pow_near_flagged(a, b, taken) : fast_pow_flagged(a, b, taken)) : 0.0f;
      if (!flagged || taken) got = rare ? (near ? fast_pow_near_rare(a, b) : fast_pow_rare(a, b)) : near ? fast_pow_near(a, b) : fast_pow(a, b);
      const float want = powf(a, b);
      const bool same = (std::isnan(want) && std::isnan(got)) ||
                        (want == got && signbit(want) == signbit(got)) ||
                        (std::isfinite(want) && want != 0.0f && std::isfinite(got) && signbit(want) == signbit(got) &&
                         // within f16's range 2^-16 relative (|b log2 a| <= 25); beyond it only finite
                         (std::fabs(want) < 5.9604645e-8f || std::fabs(want) > 65504.0f ||
                          std::fabs(got - want) <= std::fabs(want) * 1.52587890625e-5f));
      if (!same && bad++ < 8)
        printf("pow%s%s(%g, %g): %g, powf %g\n", near ? "_near" : "", rare ? "_rare" : flagged ? "_flagged" : "", a, b, got, want);
      }
    }
  printf("%ld differ\n", bad);
  return 0;
}
"""


@pytest.mark.skipif(shutil.which("g++") is None, reason="no C++ compiler")
def test_fast_pow_keeps_powfs_special_values(tmp_path):
    """tl::fast_pow and fast_pow_near on the host (and their _rare forms, the special cases behind a
    branch, and their _flagged ones, the selects' forms taken where the flag is set), the
    hardware's log2 and 2^x replaced by log2f and exp2f: powf's value at every pair
    of special arguments (zeros of both signs, infinities, NaN,
    +-1, negative bases with odd, even and fractional powers, powers of 2^24 and beyond), its sign
    included."""
    text = (templates() / "tl" / "types.cuh").read_text()
    parts = []
    for name in ("fast_exp2", "fast_log2_near1", "fast_log2", "pow_of", "fast_pow_near", "fast_pow", "fast_pow_near_rare",
                 "fast_pow_rare", "pow_flagged", "fast_pow_near_flagged", "fast_pow_flagged"):
        start = text.index(f"__device__ __forceinline__ float {name}(")
        line_end = text.index("\n", start)
        end = line_end + 1 if text[line_end - 1] == "}" else text.index("\n}\n", start) + 3
        before = text.rindex("\n", 0, start - 1) + 1  # a template's line above it
        parts.append(text[before if text.startswith("template", before) else start:end])
    body = "\n".join(parts).replace("__device__ __forceinline__", "static inline")
    body = body.replace('asm("lg2.approx.f32 %0, %1;" : "=f"(y) : "f"(u));', "y = log2f(u);")
    body = body.replace('asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(u));', "y = log2f(u);")
    body = body.replace('asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));', "y = exp2f(x);")
    assert "asm(" not in body, body
    src = tmp_path / "pow.cpp"
    src.write_text(POW_HARNESS.replace("FUNCTIONS", body))
    exe = tmp_path / "pow"
    subprocess.run(["g++", "-O2", "-ffp-contract=off", "-o", str(exe), str(src)], check=True)
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    assert out.strip().endswith("0 differ"), out
