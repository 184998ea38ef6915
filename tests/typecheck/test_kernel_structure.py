"""Kernel structure (LANGUAGE.md section 2, issue 20 item 7): a name assigned once from
constants, at the top of a kernel or of its grid, is a constant itself (`BLOCK = BM * 2`,
`n_iters = cdiv(K, BK)` with K specialized); values may be computed before the grid (they are
computed at the top of it, and by the launch where the grid reads them); a kernel of several
grids runs them as launches in order, and alloc_global gives them a workspace in global memory.
Checker diagnostics, the interpreter against NumPy, the
IR, and builds for both targets."""
from pathlib import Path

import numpy as np
import pytest

import tlc
from tlc.diagnostics import render_all
from diagnostic_kit import rendered

DERIVED = (Path(__file__).resolve().parents[1] / "programs" / "kernel_structure.tl").read_text()


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
    without_notes = "".join(line for line in text.splitlines(keepends=True) if not line.startswith("  # note:"))
    assert "  specialized K=40\n  grid (bx) in ((M - 1) // 8 + 1) threads=128\n" in without_notes
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

    kernels = [module.scale_rows.scheduled({"K": 96}, arch), module.row_sums.scheduled({}, arch),
               *module.split_sum.scheduled_grids({}, arch), *module.split_sum_ws.scheduled_grids({}, arch),
               module.copy_by_chunks.scheduled({}, arch)]
    source = generate_file(kernels, arch, sources=module.program.sources)
    nvcc_compile(source, arch, "cubin", name="derived")


def test_a_value_from_other_symbols_before_it_does_not_stop_a_constant():
    """gqa_decode's port: `scale` reads dim, a float never needed as a constant; `valid_block_H`
    reads heads and groups and sizes a tile, so those two are specialized (dim is too, by Q_s)."""
    src = """@kernel
def k(Q: f16[B, H, D], K: f16[B, G, D], O: f16[B, H, D], block_H: const = 64):
    scale = (1.0 / D) ** 0.5 * 1.44269504
    kv_group_num = H // G
    valid_block_H = min(block_H, kv_group_num)
    with grid(B, H // valid_block_H, threads=128) as (bx, by):
        Q_s = shared(f16[valid_block_H, D])
        copy(Q[bx, by * valid_block_H:(by + 1) * valid_block_H, :], Q_s)
        for i, j in parallel(valid_block_H, D):
            Q_s[i, j] = f16(Q_s[i, j] * scale)
        copy(Q_s, O[bx, by * valid_block_H:(by + 1) * valid_block_H, :])
"""
    m = tlc.compile_source(src, target="cpu")
    assert set(m.k.fn.to_specialize) == {"H", "G", "D"}
    q = np.random.default_rng(0).standard_normal((2, 8, 16)).astype(np.float16)
    o = np.zeros_like(q)
    m.k(q, np.zeros((2, 2, 16), np.float16), o)
    np.testing.assert_allclose(o.astype(np.float32), (q.astype(np.float32) * (0.25 * 1.44269504)), rtol=2e-3)


def test_a_region_between_named_bounds(module):
    x = np.random.default_rng(4).standard_normal((3, 70)).astype(np.float32)
    y = np.zeros_like(x)
    module.copy_by_chunks(x, y)
    np.testing.assert_array_equal(x, y)
    assert "copy x[bx, start]<1, 32> -> t" in module.copy_by_chunks.ir()


def test_a_bound_assigned_twice_does_not_give_a_constant_extent():
    src = """@kernel
def k(x: f32[M, N], BN: const = 32):
    with grid(M, threads=32) as bx:
        t = shared(f32[1, BN])
        start = 0
        end = BN
        start = 1
        copy(x[bx:bx + 1, start:end], t)
"""
    assert rendered(src).startswith(
        "t.tl:8:27: error[E031]: the extent of a region must be a compile-time constant; this one is -start + 32\n")  # end is the constant BN


# ---- several grids ---------------------------------------------------------------------------

def test_two_grids_run_in_order(module):
    rng = np.random.default_rng(2)
    for m, n in ((5, 300), (3, 64), (4, 1)):
        x = rng.standard_normal((m, n)).astype(np.float32)
        s = -(-n // 64)
        partial, out = np.zeros((m, s), np.float32), np.zeros(m, np.float32)
        module.split_sum(x, partial, out)
        np.testing.assert_allclose(out, x.sum(axis=1), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(partial[:, -1], x[:, (s - 1) * 64:].sum(axis=1), rtol=1e-5, atol=1e-5)


def test_each_grid_is_a_kernel_and_one_launcher_runs_them(module):
    k = module.split_sum
    assert k.grid_count == 2 and module.scale_rows.grid_count == 1
    first, second = k.scheduled_grids({})
    assert (first.name, first.grid_of, second.name, second.grid_of) == (
        "split_sum_grid0", ("split_sum", 0, 2), "split_sum_grid1", ("split_sum", 1, 2))
    text = k.ir()
    # (each grid's "# note: blocks per SM" line, the scheduler's occupancy choice, is left out here)
    text = "".join(line for line in text.splitlines(keepends=True) if not line.startswith("  # note:"))
    assert "kernel split_sum_grid0(x: f32[M, N], partial: f32[M, S], out: f32[M]):\n  const BN=64\n" \
           "  launch 1 of 2 of split_sum\n  grid (bx, by) in ((N - 1) // 64 + 1, M) threads=64\n" in text
    assert "  launch 2 of 2 of split_sum\n  grid (bx) in (M) threads=32\n" in text
    src = k.cuda_source()
    # each pointer is const only where no grid writes it
    assert ("extern \"C\" cudaError_t launch_split_sum(const float* x, float* partial, float* out, int M, int N, "
            "int S, cudaStream_t stream) {\n  {\n    const cudaError_t tl_err = launch_split_sum_grid0(x, partial, "
            "out, M, N, S, stream);\n    if (tl_err != cudaSuccess) return tl_err;\n  }\n") in src
    assert src.count("launch_split_sum_grid1(x, partial, out, M, N, S, stream)") == 1


def test_each_grid_may_compute_its_own_constant_of_one_name():
    src = """@kernel
def k(A: f32[N], B: f32[N], BM: const = 64):
    with grid(cdiv(N, BM), threads=64) as bx:
        WIDTH = BM
        t = fragment(f32[WIDTH])
        copy(A[bx * WIDTH], t)
        copy(t, B[bx * WIDTH])
    with grid(cdiv(N, BM), threads=64) as bx:
        WIDTH = BM // 2
        t = fragment(f32[WIDTH])
        copy(B[bx * BM + WIDTH], t)
        for i in parallel(WIDTH):
            t[i] *= 2.0
        copy(t, B[bx * BM + WIDTH])
"""
    m = tlc.compile_source(src, target="cpu")
    a = np.arange(128, dtype=np.float32)
    b = np.zeros_like(a)
    m.k(a, b)
    np.testing.assert_array_equal(b, np.where(np.arange(128) % 64 >= 32, 2 * a, a))


def test_a_grid_sees_the_values_before_it_but_not_another_grids_names():
    src = """@kernel
def k(A: f32[N]):
    with grid(1, threads=32) as bx:
        t = fragment(f32[4])
    with grid(1, threads=32) as by:
        clear(t)
"""
    assert rendered(src) == ("t.tl:6:15: error[E020]: unknown name 't'\n  |\n6 |         clear(t)\n  |               ^\n"
                             "  = hint: 't' is a name of a grid above; grids share only global memory: pass it "
                             "through a tensor parameter or an alloc_global workspace")


def test_a_kernel_of_two_grids_is_not_one_kernel(module):
    from tlc.diagnostics import DiagnosticError
    from tlc.schedule import schedule

    with pytest.raises(DiagnosticError) as e:
        schedule(module.program, "split_sum", {})
    assert render_all(e.value.diagnostics, e.value.sources) == (
        "derived.tl:32:5: error[E242]: 'split_sum' has 2 grids, each its own launch, so it is scheduled into as many "
        "kernels, not one\n"
        "   |\n"
        "32 | def split_sum(x: f32[M, N], partial: f32[M, S], out: f32[M], BN: const = 64):\n"
        "   |     ^^^^^^^^^\n"
        "  = hint: schedule it with schedule_grids(), or call it from Python")


# ---- a workspace -----------------------------------------------------------------------------

def test_a_workspace_carries_partial_results_between_grids(module):
    rng = np.random.default_rng(3)
    for m, n in ((5, 1000), (3, 64), (2, 1)):
        x = rng.standard_normal((m, n)).astype(np.float32)
        out = np.zeros(m, np.float32)
        module.split_sum_ws(x, out)
        np.testing.assert_allclose(out, x.sum(axis=1), rtol=1e-5, atol=1e-4)


def test_the_workspace_is_a_parameter_of_each_grid_and_memory_of_the_caller_in_c(module):
    first, second = module.split_sum_ws.scheduled_grids({})
    assert [p.name for p in first.params] == ["x", "out", "partial"] and first.workspaces == ("partial",)
    assert "  workspace partial (global memory allocated for each call)\n" in module.split_sum_ws.ir()
    src = module.split_sum_ws.cuda_source()
    assert ("extern \"C\" unsigned long long split_sum_ws_workspace_bytes(int M, int N) {\n"
            "  return 0ull + ((4ull * static_cast<unsigned long long>(M) * 4ull + 255ull) / 256ull * 256ull);\n}") in src
    assert ("extern \"C\" cudaError_t launch_split_sum_ws(const float* x, float* out, int M, int N, void* workspace, "
            "cudaStream_t stream) {\n  unsigned char* tl_at = static_cast<unsigned char*>(workspace);\n"
            "  float* const partial = reinterpret_cast<float*>(tl_at);\n") in src
    assert "launch_split_sum_ws_grid1(x, out, partial, M, N, stream)" in src


def test_workspace_diagnostics():
    inside = """@kernel
def k(A: f32[N]):
    with grid(1, threads=32) as bx:
        w = alloc_global(f32[N])
"""
    assert rendered(inside) == (
        "t.tl:4:13: error[E243]: alloc_global(...) allocates a workspace for the whole call: write it at the top of "
        "the kernel, before the grids that use it\n"
        "  |\n"
        "4 |         w = alloc_global(f32[N])\n"
        "  |             ^^^^^^^^^^^^^^^^^^^^")
    sized_by_a_scalar = """@kernel
def k(A: f32[N], n: i32):
    w = alloc_global(f32[N, n])
    with grid(1, threads=32) as bx:
        pass
"""
    assert rendered(sized_by_a_scalar) == (
        "t.tl:3:29: error[E244]: a workspace dimension is a positive constant or a shape symbol of the tensor "
        "parameters\n"
        "  |\n"
        "3 |     w = alloc_global(f32[N, n])\n"
        "  |                             ^\n"
        "  = hint: the call sizes the workspace from its arrays and constants")


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
