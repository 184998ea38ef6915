"""The C launcher of a kernel with a specialized shape symbol (LANGUAGE.md section 1): it takes
the symbol's size like a dynamic one's, after the kernel's own sizes, and refuses another size
than the one compiled in with cudaErrorInvalidValue; built by nvcc for both targets, the refusal
run here (no GPU: it returns before any launch)."""
import pytest

from kit_codegen import generated_source
from nvcc import BUILD_ARCHS, compile_object, run_host

SUCCESS, INVALID_VALUE = 0, 1  # cudaError_t

ROWS = """
@kernel
def k(x: f32[M, N], y: f32[M, N]):
    with grid(M, threads=64) as bx:
        row = fragment(f32[N])
        copy(x[bx, 0], row)
        for j in parallel(N):
            row[j] = row[j] * 2.0 + N
        copy(row, y[bx, 0])
"""


@pytest.mark.parametrize("arch", BUILD_ARCHS)
def test_a_specialized_kernel_compiles(arch, tmp_path):
    g = generated_source(ROWS, arch=arch, constants={"N": 96})
    assert [a.name for a in g.args] == ["x", "y", "M"]  # the kernel itself takes no N
    compile_object(g.source, arch, tmp_path)


def test_the_launcher_refuses_another_size(tmp_path):
    src = generated_source(ROWS, constants={"N": 96}).source
    assert "cudaError_t launch_k(const float* x, float* y, int M, int N, cudaStream_t stream) {" in src
    # M = 0: an empty grid, which succeeds without a GPU once the size is the compiled one
    calls = "\n".join(f'  printf("%d\\n", (int)launch_k(nullptr, nullptr, 0, {n}, nullptr));' for n in (96, 95, 0, 97))
    out = run_host(src + f"#include <cstdio>\nint main() {{\n{calls}\n  return 0;\n}}\n", tmp_path, "launch")
    assert [int(x) for x in out.split()] == [SUCCESS, INVALID_VALUE, INVALID_VALUE, INVALID_VALUE]


TWO_GRIDS = """
@kernel
def k(x: f32[N], y: f32[N], d: i32):
    with grid(cdiv(N, d), threads=32) as bx:
        for i in parallel(32):
            y[bx * 32 + i] = x[bx * 32 + i]
    with grid(cdiv(N, 32), threads=32) as bx:
        for i in parallel(32):
            y[bx * 32 + i] += 1.0
"""


def test_the_launcher_of_two_grids_stops_at_the_first_error(tmp_path):
    """d = 0: the first grid divides by zero and nothing is launched; N = 0: both grids are
    empty and the launcher succeeds (no GPU needed for either)."""
    from tlc.codegen import generate_file
    from tlc.driver import check_source
    from tlc.schedule import schedule_grids

    r = check_source(TWO_GRIDS, "t.tl")
    src = generate_file(list(schedule_grids(r.program, "k", {})), "sm_80", sources=r.sources)
    calls = "\n".join(f'  printf("%d\\n", (int)launch_k(nullptr, nullptr, {d}, {n}, nullptr));' for n, d in ((64, 0), (0, 32)))
    out = run_host(src + f"#include <cstdio>\nint main() {{\n{calls}\n  return 0;\n}}\n", tmp_path, "grids")
    assert [int(x) for x in out.split()] == [INVALID_VALUE, SUCCESS]


WORKSPACE = """
@kernel
def k(x: f32[M, N], out: f32[M], S: const = 4):
    partial = alloc_global(f32[M, S])
    with grid(S, M, threads=32) as (bx, by):
        partial[by, bx] = x[by, bx]
    with grid(M, threads=32) as bx:
        out[bx] = partial[bx, 0]
"""


def test_the_workspace_size_and_an_empty_launch(tmp_path):
    from tlc.codegen import generate_file, header
    from tlc.driver import check_source
    from tlc.schedule import schedule_grids

    r = check_source(WORKSPACE, "t.tl")
    kernels = list(schedule_grids(r.program, "k", {}))
    head = header(kernels, "sm_80", "k.cu", "t.tl")
    assert "unsigned long long k_workspace_bytes(int M, int N);" in head
    assert "cudaError_t launch_k(const float* x, float* out, int M, int N, void* workspace, cudaStream_t stream);" in head
    src = generate_file(kernels, "sm_80", sources=r.sources)
    main = ('#include <cstdio>\nint main() {\n  printf("%llu %llu\\n", k_workspace_bytes(5, 7), k_workspace_bytes(100, 1));\n'
            '  printf("%d\\n", (int)launch_k(nullptr, nullptr, 0, 7, nullptr, nullptr));\n  return 0;\n}\n')
    out = run_host(src + main, tmp_path, "workspace").split()
    assert out == ["256", "1792", str(SUCCESS)]  # 4 * 5 * 4 bytes -> 256; 4 * 100 * 4 = 1600 -> 1792


@pytest.mark.parametrize("arch", BUILD_ARCHS)
def test_a_region_over_a_specialized_symbol_compiles(arch, tmp_path):
    from pathlib import Path

    src = (Path(__file__).resolve().parents[1] / "programs" / "specialize.tl").read_text()
    g = generated_source(src, "rms_norm_regions", arch=arch, constants={"N": 96})
    assert "// Specialized for N=96" in g.source
    compile_object(g.source, arch, tmp_path)
