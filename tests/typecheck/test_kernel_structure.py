"""Kernel structure (LANGUAGE.md section 2, issue 20 item 7): a name assigned once from
constants, at the top of a kernel or of its grid, is a constant itself (`BLOCK = BM * 2`,
`n_iters = cdiv(K, BK)` with K specialized); values may be computed before the grid (they are
computed at the top of it, and by the launch where the grid reads them).  Checker diagnostics,
the interpreter against NumPy, the IR, and builds for both targets."""
from pathlib import Path

import numpy as np
import pytest

import tlc
from tlc.driver import check_source
from tlc.diagnostics import render_all

DERIVED = (Path(__file__).resolve().parents[1] / "programs" / "kernel_structure.tl").read_text()


def rendered(src: str) -> str:
    r = check_source(src, "t.tl")
    return render_all(r.diagnostics, r.sources)


@pytest.fixture
def module():
    return tlc.compile_source(DERIVED, target="cpu", path="derived.tl")


def test_a_value_computed_from_constants_sizes_buffers_and_loops(module):
    rng = np.random.default_rng(0)
    for m, k in ((9, 40), (3, 64)):  # K specialized through n_iters; M stays dynamic
        x = rng.standard_normal((m, k)).astype(np.float32)
        y = np.zeros_like(x)
        module.scale_rows(x, y)
        np.testing.assert_array_equal(y, 2 * x)
    assert set(module.scale_rows.fn.to_specialize) == {"K"}
    assert len(module.scale_rows._scheduled) == 2


def test_the_constants_are_folded_into_the_ir(module):
    text = module.scale_rows.ir(K=40)
    assert "  specialized K=40\n  grid (bx) in ((M - 1) // 8 + 1) threads=128\n" in text
    assert "fragment tile: f32[8, 64]" in text and "for i, j in parallel(8, 64):" in text
    assert "BLOCK" not in text and "n_iters" not in text and "WIDTH" not in text


def test_values_before_the_grid_stay_dynamic_when_no_constant_needs_them(module):
    assert module.row_sums.fn.from_arrays == {}
    rng = np.random.default_rng(1)
    for m, k in ((7, 70), (2, 5)):
        x = rng.standard_normal((m, k)).astype(np.float32)
        y = np.zeros(m, np.float32)
        module.row_sums(x, y)
        np.testing.assert_allclose(y, x.sum(axis=1), rtol=1e-5, atol=1e-5)
    assert len(module.row_sums._scheduled) == 1
    text = module.row_sums.ir()
    assert "grid (bx) in ((M - 1) // 4 + 1) threads=32\n" in text  # the launch computes n_blocks itself
    assert "  n_iters = (K - 1) // 32 + 1\n" in text and "n_blocks" not in text  # read by the grid only


@pytest.mark.nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_both_kernels_build(module, arch, tmp_path):
    from tlc.codegen import generate_file
    from tlc.runtime import nvcc_compile

    kernels = [module.scale_rows.scheduled({"K": 96}, arch), module.row_sums.scheduled({}, arch)]
    source = generate_file(kernels, arch, sources=module.program.sources)
    nvcc_compile(source, arch, "cubin", name="derived")


# ---- what stays an error ----------------------------------------------------------------------

def test_a_name_assigned_twice_is_not_a_constant():
    src = """@kernel
def k(A: f32[N], BM: const = 64):
    with grid(1, threads=32) as bx:
        width = BM
        width = BM * 2
        t = fragment(f32[width])
"""
    assert rendered(src) == (
        "t.tl:6:26: error[E031]: a buffer dimension must be a compile-time constant; 'width' is not a constant\n"
        "  |\n"
        "6 |         t = fragment(f32[width])\n"
        "  |                          ^^^^^\n"
        "  = hint: a name assigned once from constants, at the top of the kernel or of its grid, is a constant; "
        "'width' is assigned elsewhere, more than once, or from a run-time value")


def test_a_name_assigned_inside_a_loop_is_not_a_constant():
    src = """@kernel
def k(A: f32[N], BM: const = 64):
    with grid(1, threads=32) as bx:
        for r in range(2):
            width = BM
        t = fragment(f32[width])
"""
    assert "error[E031]: a buffer dimension must be a compile-time constant; 'width' is not a constant" in rendered(src)


def test_a_value_from_a_scalar_parameter_is_not_a_constant():
    src = """@kernel
def k(A: f32[N], n: i32):
    width = n * 2
    with grid(1, threads=32) as bx:
        t = fragment(f32[width])
"""
    assert rendered(src).startswith(
        "t.tl:5:26: error[E031]: a buffer dimension must be a compile-time constant; 'width' is not a constant\n")


def test_other_statements_before_the_grid_stay_errors():
    src = """@kernel
def k(A: f32[N]):
    x = 1
    x += 1
    with grid(1, threads=32) as bx:
        pass
"""
    assert rendered(src) == ("t.tl:4:5: error[E029]: statements of a kernel go inside its 'with grid(...)' block\n"
                             "  |\n"
                             "4 |     x += 1\n"
                             "  |     ^^^^^^")
