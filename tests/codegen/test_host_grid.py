"""The C launcher's grid (tlc/codegen/host_grid.py, templates/tl/host_grid.cuh): computed in
64 bits with Python's meaning, checked against the GPU's limits, and an error code where the
Python runtime raises (tlc/runtime/grid.py); host programs built by nvcc and run here, no GPU."""
import pytest

from kit_codegen import generated_source
from nvcc import compile_object, run_host
from tlc.codegen import primitives
from tlc.runtime.grid import GridError, compile_grid, launches_blocks, persistent

SUCCESS, INVALID_VALUE, INVALID_CONFIGURATION = 0, 1, 9  # cudaError_t

GRID_KERNEL = """
@kernel
def k(x: f32[N], d: i32, gy: i64, s: i32):
    with grid(cdiv(N, d), gy, 1 << s, threads=32) as (bx, by, bz):
        for i in parallel(32):
            x[bx * 32 + i] = 1.0
"""

# (N, d, gy, s): every one stops before the launch, so no GPU is needed
CASES = [
    (100, 0, 1, 0),  # divides by zero
    (100, -1, 1, 0),  # x = -100
    (2**31 - 1, 1, 2**40, 0),  # y beyond 65535, and 2**40 is not 0 in 64 bits
    (100, 32, -5, 0),
    (100, 32, 1, 16),  # z = 65536
    (100, 32, 1, -1),  # a negative shift
    (100, 32, 1, 70),  # 1 << 70 overflows 64 bits
    (0, 32, 1, 0),  # an empty tensor: nothing to launch, success
    (2**31 - 1, -2**31, 1, 0),  # (N + d - 1) // d == 0 in 64 bits: empty
    (100, 32, 2**32, 0),  # y truncated to unsigned would be 0: an empty launch that succeeds
    (100, 0, 0, 0),  # x divides by zero, y is 0: no block runs, none reads x: nothing to launch, success
    (0, 0, 1, 0),  # x divides by zero and no extent is 0
    (100, 0, 0, 70),  # x divides by zero, y is 0, z overflows: the overflow is an error
]


def python_raises(n, d, gy, s) -> bool:
    """Whether the Python runtime refuses the same launch."""
    grid = compile_grid(generated_source(GRID_KERNEL).grid, {"N": 0, "d": 1, "gy": 2, "s": 3}, kernel="k")
    try:
        launches_blocks("k", grid([n, d, gy, s]))
    except GridError:
        return True
    return False


def test_the_launcher_computes_its_grid_in_64_bits_with_checked_operations():
    source = generated_source(GRID_KERNEL).source
    launcher = source[source.index("extern \"C\" cudaError_t launch_k"):]
    # cdiv by a run-time divisor: -((-N) // d), the ceiling for either sign of d
    assert "tl_g.neg(tl_g.floordiv(tl_g.neg(static_cast<long long>(N)), static_cast<long long>(d)))" in launcher
    assert "static_cast<unsigned>(tl_extents[0])" in launcher and "static_cast<unsigned>((" not in launcher


def test_the_launcher_returns_an_error_code_where_python_raises(tmp_path):
    calls = "\n".join(f"  printf(\"%d\\n\", (int)launch_k(nullptr, {d}, {gy}LL, {s}, {n}, nullptr));"
                      for n, d, gy, s in CASES)
    main = f"#include <cstdio>\nint main() {{\n{calls}\n  return 0;\n}}\n"
    out = run_host(generated_source(GRID_KERNEL).source + main, tmp_path, "launch")
    got = [int(x) for x in out.split()]
    assert got == [INVALID_VALUE, INVALID_CONFIGURATION, INVALID_CONFIGURATION, INVALID_CONFIGURATION,
                   INVALID_CONFIGURATION, INVALID_VALUE, INVALID_VALUE, SUCCESS, SUCCESS, INVALID_CONFIGURATION,
                   SUCCESS, INVALID_VALUE, INVALID_VALUE]
    # Python's integers do not overflow: 1 << 70 is too large a grid there, a bad one here
    assert [code != SUCCESS for code in got] == [python_raises(*c) for c in CASES]


LOOP_KERNEL = """
@kernel
def k(x: f32[N], start: i32, stop: i64, step: i32):
    with grid(cdiv(N, 32), threads=32) as bx:
        for i in parallel(32):
            for j in range(start, stop, step):
                x[bx * 32 + i] = 1.0
"""

# (start, stop, step) of the loop, launched with N = 0 (an empty grid: no GPU needed)
LOOPS = [(0, 10, 3), (0, 10, 0), (0, 2**31 - 1, 2), (2**31 - 10, 2**31 - 1, 3), (5, -2**31, -2),
         (5, -2**31 + 1, -2), (0, 2**31, 4), (7, 3, 1000), (0, -2**40, -3)]


@pytest.mark.slow  # a host build of its own (~2 s of nvcc)
def test_the_launcher_checks_a_stepped_loops_counter_as_python_does(tmp_path):
    """The loop's bounds are the launch's (runtime/loop_bounds.py): the launcher refuses what
    the Python runtime's binder refuses (cudaErrorInvalidValue), before the grid."""
    from tlc.runtime.loop_bounds import counts_in_i32

    calls = "\n".join(f"  printf(\"%d\\n\", (int)launch_k(nullptr, {a}, {b}LL, {c}, 0, nullptr));" for a, b, c in LOOPS)
    main = f"#include <cstdio>\nint main() {{\n{calls}\n  return 0;\n}}\n"
    source = generated_source(LOOP_KERNEL).source
    assert source.count("tl_l.loop_counter_fits(") == 1
    got = [int(x) for x in run_host(source + main, tmp_path, "loops").split()]
    assert got == [SUCCESS if counts_in_i32(*c) else INVALID_VALUE for c in LOOPS]
    assert got.count(INVALID_VALUE) == 5


MAX, MIN = 2**63 - 1, -2**63
OPS = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
       "floordiv": lambda a, b: a // b, "mod": lambda a, b: a % b, "pow": lambda a, b: a ** b,
       "shl": lambda a, b: a << b, "shr": lambda a, b: a >> b}
VALUES = [0, 1, -1, 2, -2, 3, -7, 7, 63, 64, 2**31, -2**31, 2**62, MAX, MIN]


def python_value(op, a, b):
    """Python's result, or None where the launcher must flag the grid bad."""
    if b > 64 and (op == "pow" and abs(a) > 1 or op == "shl" and a != 0):
        return None  # not computed: it cannot fit
    try:
        v = OPS[op](a, b)
    except (ZeroDivisionError, ValueError):
        return None
    return v if isinstance(v, int) and MIN <= v <= MAX else None


def test_host_grid_arithmetic_is_pythons_or_flags_the_grid(tmp_path):
    cases = [(op, a, b) for op in OPS for a in VALUES for b in VALUES]
    lit = lambda v: "(-9223372036854775807LL - 1)" if v == MIN else f"{v}LL"  # noqa: E731
    lines = [f"  {{ tl::HostGrid g; long long v = g.{op}({lit(a)}, {lit(b)}); "
             f"printf(g.ok ? \"%lld\\n\" : \"bad\\n\", v); }}" for op, a, b in cases]
    src = ("#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n#include <cstdio>\n" + primitives() +
           "\nint main() {\n" + "\n".join(lines) + "\n  return 0;\n}\n")
    out = run_host(src, tmp_path, "arith").split()
    want = [python_value(*c) for c in cases]
    wrong = [(c, got, w) for c, got, w in zip(cases, out, want) if got != ("bad" if w is None else str(w))]
    assert not wrong, wrong[:10]


FITS = [  # (extents, the most tiles of a persistent kernel or 0, whether the GPU launches them)
    ((2**31 - 1, 65535, 65535), 0, True),
    ((2**31, 1, 1), 0, False),
    ((1, 65536, 1), 0, False),
    ((0, 70000, 1), 0, False),  # empty, yet no GPU has such a grid
    ((-1, 1, 1), 0, False),
    ((0, 1, 1), 0, True),  # empty: launches nothing, no error
    ((65535, 32768, 1), 2**31 - 1, True),  # a persistent kernel's tiles, counted in an int
    ((65536, 32768, 1), 2**31 - 1, False),
    ((2**40, 2**40, 2**40), 2**31 - 1, False),
    ((0, 1, 1), 2**31 - 1, True),
]


def python_fits(extents, tiles) -> bool:
    try:
        launches_blocks("k", persistent(extents, 132, 1, "k") if tiles else extents)
    except GridError:
        return False
    return True


def test_the_launchers_limits_are_the_python_runtimes(tmp_path):
    lines = [f"  {{ const long long e[3] = {{{', '.join(f'{x}LL' for x in e)}}}; "
             f"printf(\"%d\\n\", (int)tl::HostGrid::fits(e, most, {t}LL)); }}" for e, t, _ in FITS]
    src = ("#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n#include <cstdio>\n" + primitives() +
           "\nint main() {\n  const long long most[3] = {2147483647LL, 65535LL, 65535LL};\n" + "\n".join(lines) +
           "\n  return 0;\n}\n")
    got = [x == "1" for x in run_host(src, tmp_path, "fits").split()]
    assert got == [f for _, _, f in FITS]
    assert [python_fits(e, t) for e, t, _ in FITS] == got


FLAT = """
@tile_op
def chain(x: f16[M, N], y: f16[M, N]) -> f16[M, N]:
    return x * y + exp(x)
"""


def test_a_flat_element_count_of_64_bits_compiles(tmp_path):
    """A flattened element-wise kernel takes its count as `long long NUMEL` (a tensor can hold
    more than 2^31 elements); it and its launcher compile with warnings as errors."""
    import tlc
    from tlc.codegen import generate

    mod = tlc.compile_source(FLAT, target="cpu", path="ops.tl")
    kernel = mod.chain.program({}, "sm_80", {"M": 65536, "N": 65536}).launches[0].kernel
    source = generate(kernel, "sm_80").source
    assert "long long NUMEL, cudaStream_t stream)" in source
    compile_object(source, "sm_80", tmp_path, "flat")


def test_a_block_no_gpu_launches_is_refused_before_the_launcher():
    from tlc.codegen.cexpr import CodegenError
    from tlc.codegen.host_grid import launcher_grid

    with pytest.raises(CodegenError, match=r"^the kernel needs 1152 threads per block; the GPU allows 1 to 1024$"):
        launcher_grid((), 1152)
    assert launcher_grid((), 1024)["grid"] == ["1LL", "1LL", "1LL"]
