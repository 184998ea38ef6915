"""sm80.WIDE_STEPPED_COUNTER (off): a range() loop whose step is not a constant 1 or -1 and whose
stop the sizes do not prove keeps an i32 counter in range (a grid-stride loop: its start reads a
block index, so no launch check sees it, runtime/loop_bounds.py) counts in 64 bits on the GPU, as
the cpu target's does (codegen/cpp/emit.py): the last step of an i32 counter near 2**31 is
undefined.  Off, every kernel's CUDA is as before; on, a loop the sizes prove is unchanged (in
std all but conv2d's persistent tile loop at its rules).  Its H200 question:
bench/queue/R_wide_counter.sh."""
import pytest

from fuzz.oracles import nvcc_werror
from tlc import runner
from tlc.codegen import sm80

GRID_STRIDE = """
@kernel
def grid_stride(x: f32[N], y: f32[N], M: i32, BLOCKS: const = 264):
    with grid(BLOCKS, threads=256) as bx:
        for i in parallel(256):
            for k in range(bx * 256 + i, N, BLOCKS * 256):
                y[k] = 2.0 * x[k]
        for r in range(0, (N // 512) * 2, 2):
            y[0] = f32(r)
        for j in range(N - 1, -1, -1):
            y[0] = x[j]
"""
WIDE = ("    for (long long tl_k_k = ((bx * 256) + i); tl_k_k < N; tl_k_k += 67584) {\n"
        "      const int k = static_cast<int>(tl_k_k);\n")


def generated(tmp_path, arch: str, wide: bool, monkeypatch) -> str:
    monkeypatch.setattr(sm80, "WIDE_STEPPED_COUNTER", wide)
    path = tmp_path / "gs.tl"
    path.write_text(GRID_STRIDE)
    return runner.build(str(path), arch=arch)[0]


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_only_the_unproven_stepped_loop_counts_in_64_bits(tmp_path, monkeypatch, arch):
    off, on = (generated(tmp_path, arch, wide, monkeypatch) for wide in (False, True))
    assert "    for (int k = ((bx * 256) + i); k < N; k += 67584) {\n" in off and "tl_k_" not in off
    assert WIDE in on
    # the rest is the same text: the proven stepped loop (std.reduce's axis-0 rows) and the
    # loop of step -1 keep their i32 counters
    assert on.replace(WIDE, "    for (int k = ((bx * 256) + i); k < N; k += 67584) {\n") == off
    assert "\n  for (int r = 0; r < tl_stop_r; r += 2) {\n" in on
    assert "\n  for (int j = (N - 1); j > (-1); j += (-1)) {\n" in on


@pytest.mark.slow  # two nvcc builds
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_the_wide_counter_compiles_without_warnings(tmp_path, monkeypatch, arch):
    failed = nvcc_werror(generated(tmp_path, arch, True, monkeypatch), arch, str(tmp_path))
    assert failed is None, failed.detail
