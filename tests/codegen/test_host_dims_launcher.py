"""The C of a dimension expression the launch computes (schedule/host_dims.py, HOST_DIMS "all"): the
kernel takes it as `int tl_dim0` and indexes with it; the C launcher takes the sizes it took
before (its header unchanged) and computes it with the grid's checked host arithmetic, returning
cudaErrorInvalidValue where it divides by zero or is no i32 size, before any launch (built by
nvcc and run here: no GPU)."""
import pytest

from kit_codegen import generated_source
from nvcc import run_host
from tlc.schedule import host_dims as hd

SUCCESS, INVALID_VALUE = 0, 1  # cudaError_t

GROUPS = """
@kernel
def groups(x: f32[N], heads: f32[HK], all: f32[H], y: f32[N, H * H // HK]):
    with grid(cdiv(N, 32), threads=32) as bx:
        for i in parallel(32):
            y[bx * 32 + i, 0] = x[bx * 32 + i]
"""
LAUNCHER = "cudaError_t launch_groups(const float* x, const float* heads, const float* all_, float* y, int N, int HK, int H, cudaStream_t stream) {"


@pytest.fixture
def on(monkeypatch):
    monkeypatch.setattr(hd, "HOST_DIMS", "all")


def test_the_kernel_takes_it_and_the_launcher_computes_it(on):
    src = generated_source(GROUPS, "groups").source
    assert "float* __restrict__ y, int N, int HK, int H, int tl_dim0) {" in src
    assert "y[(static_cast<long long>(((bx * 32) + i)) * tl_dim0 + 0)]" in src
    assert "tl::floordiv" not in src[src.index("float* __restrict__ y, int N"):src.index("#ifndef __CUDACC_RTC__", src.index("float* __restrict__ y, int N"))]
    assert LAUNCHER in src
    assert ("const long long tl_dims[1] = {tl_d.floordiv(tl_d.mul(static_cast<long long>(H), static_cast<long long>(H)), "
            "static_cast<long long>(HK))};") in src
    assert "::groups<<<tl_grid, 32, 0, stream>>>(x, heads, all_, y, N, HK, H, static_cast<int>(tl_dims[0]));" in src


def test_off_the_kernel_computes_it(monkeypatch):
    monkeypatch.setattr(hd, "HOST_DIMS", False)
    src = generated_source(GROUPS, "groups").source
    assert "tl_dim" not in src and LAUNCHER in src


def test_the_header_is_the_same_either_way(monkeypatch, tmp_path):
    from tlc.codegen import header
    from tlc.driver import check_source
    from tlc.schedule import schedule

    texts = []
    for flag in (False, True):
        monkeypatch.setattr(hd, "HOST_DIMS", flag)
        r = check_source(GROUPS, "g.tl")
        texts.append(header([schedule(r.program, "groups", {})], "sm_80", "g.cu", "g.tl"))
    assert texts[0] == texts[1] and "tl_dim" not in texts[1]


@pytest.mark.slow  # an nvcc build (~7 s) of an off-by-default switch: CI's slow run
def test_the_launcher_refuses_a_dimension_that_divides_by_zero_or_is_no_i32_size(on, tmp_path):
    """N = 0: an empty grid, which succeeds without a GPU once the dimension is an i32 size
    (H = 4, HK = 2: 8); HK = 0 divides by zero; H = 65536, HK = 1 gives 2**32; HK = -1 a
    negative size (a C caller's sizes are ints)."""
    src = generated_source(GROUPS, "groups").source
    calls = "\n".join(f'  printf("%d\\n", (int)launch_groups(nullptr, nullptr, nullptr, nullptr, 0, {hk}, {h}, nullptr));'
                      for h, hk in ((4, 2), (4, 0), (65536, 1), (2, -1)))
    out = run_host(src + f"#include <cstdio>\nint main() {{\n{calls}\n  return 0;\n}}\n", tmp_path, "launch")
    assert [int(x) for x in out.split()] == [SUCCESS, INVALID_VALUE, INVALID_VALUE, INVALID_VALUE]
