"""`tlc check` schedules every kernel and tile op for the target (`--arch`, sm_80 by default)
with its default or `-D` constants and reports what `tlc build` would: each program below is
one of the tests' examples of E069 (what the target cannot generate), E070 (shared memory over
the limit), E072 (a `@fuse` that cannot fuse) and E073 (a tile op the scheduler does not take),
reported by `check` in exactly the text `build` reports."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from tlc import cli

sys.path.insert(0, str(Path(__file__).resolve().parent / "codegen"))
from nvcc import compile_object  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

# tests/test_fuzz_regressions.py: CUDA has no atomicAdd of 8- or 16-bit integers
ATOMIC = """\
@kernel
def k(acc: i8[1], BLOCK: const = 64):
    with grid(1, threads=64) as bx:
        for i in parallel(BLOCK):
            atomic_add(acc[0], i8(1))
"""

# (id, source or example file, options, the first line of the diagnostic after "FILE:")
CASES = [
    ("E069_atomic_i8", ATOMIC, (),
     "5:13: error[E069]: the sm_80 target: atomic_add on i8 is not supported by the CUDA target"),
    # tests/schedule/test_smem.py: the example's tiles made larger by hand
    ("E070_gemm_tiles", "gemm.tl", ("--arch", "sm_90a", "-D", "BM=256", "-D", "BN=256", "-D", "BK=64",
                                    "-D", "stages=4"),
     "12:5: error[E070]: kernel 'matmul' needs 256 KB of shared memory, more than the 227 KB the target "
     "allows: As (4 stages x 32 KB), Bs (4 stages x 32 KB)"),
    # tests/schedule/tileops/test_tile_op_fusion.py
    ("E072_split", "@fuse\n@tile_op\ndef scores(q: f16[M, K], k: f16[N, K]) -> f16[M, N]:\n"
     "    s = q @ k.T\n    return f16(softmax(s, axis=1))\n", (),
     "4:9: error[E072]: @fuse: 'q @ k.T' cannot be fused: 'softmax(s, axis=1)' needs whole rows it reduces, "
     "and a matmul kernel holds one tile of the product"),
    ("E072_operand_reads_a_reduction",
     "@fuse\n@tile_op\ndef t(x: f16[M, K], w: f16[N, K]) -> f32[M, N]:\n    return softmax(x, axis=1) @ w.T\n", (),
     "4:12: error[E072]: @fuse: 'softmax(x, axis=1)' cannot be fused: the left operand of "
     "'softmax(x, axis=1) @ w.T' reads 'softmax(x, axis=1)', which needs more than the operand's tile; an "
     "operand is loaded from a tensor or computed element-wise from parameters"),
    ("E072_second_product", "@fuse\n@tile_op\ndef t(x: f16[M, K], a: f16[K, N], b: f16[K, N]) -> f32[M, N]:\n"
     "    return x @ a + x @ b\n", (),
     "4:20: error[E072]: @fuse: 'x @ b' cannot be fused: it is a second matrix product next to 'x @ a'; "
     "one kernel computes one '@'"),
    ("E072_two_axes", "@fuse\n@tile_op\ndef t(x: f32[M, N]) -> f32[M, N]:\n"
     "    return x - mean(x, axis=1, keepdims=True) - mean(x, axis=0, keepdims=True)\n", (),
     "4:49: error[E072]: @fuse: 'mean(x, axis=0, keepdims=True)' cannot be fused: it reduces another "
     "shape or axis than 'mean(x, axis=1, keepdims=True)', and a row kernel reduces one"),
    ("E072_every_axis", "@fuse\n@tile_op\ndef t(x: f32[M, N]) -> f32[1, 1]:\n    return sum(x, keepdims=True)\n", (),
     "4:12: error[E072]: @fuse: 'sum(x, keepdims=True)' cannot be fused: a reduction over every axis of "
     "a matrix takes two kernels: the rows, then their results"),
    ("E073_three_dims", "@tile_op\ndef t(x: f32[B, M, N]) -> f32[B, M, N]:\n    return x * 2.0\n", (),
     "2:7: error[E073]: tile op tensors have one or two dimensions; 'x' has 3"),
    ("E073_mixed_dtypes", "@tile_op\ndef t(x: f16[M, K], w: f32[K, N]) -> f32[M, N]:\n    return x @ w\n", (),
     "3:12: error[E073]: 'x @ w' multiplies f16 by f32; the operands of '@' need one dtype"),
    ("E073_rows", "@tile_op\ndef t(x: f32[N, N]) -> f32[N, N]:\n    return x - sum(x, axis=1)\n", (),
     "3:16: error[E073]: 'sum(x, axis=1)' is read at other rows than the ones it reduces"),
]


def tlc(*args):
    return CliRunner().invoke(cli.main, [str(a) for a in args])


def program_file(source: str, tmp_path) -> str:
    if source.endswith(".tl") and "\n" not in source:
        return str(EXAMPLES / source)
    path = tmp_path / "p.tl"
    path.write_text(source)
    return str(path)


@pytest.mark.parametrize("case, source, options, first", CASES, ids=[c[0] for c in CASES])
def test_check_reports_what_build_reports(case, source, options, first, tmp_path):
    path = program_file(source, tmp_path)
    built = tlc("build", path, *options)
    checked = tlc("check", path, *options)
    assert built.exit_code == checked.exit_code == 1, (built.output, checked.output)
    assert built.stderr.startswith(f"{path}:{first}\n"), built.stderr
    assert checked.stderr == built.stderr.rstrip("\n") + f"\n\nerror: 1 error in {path}\n"


def test_check_json_has_the_scheduler_s_diagnostics(tmp_path):
    path = program_file(CASES[0][1], tmp_path)
    r = tlc("check", path, "--json")
    assert r.exit_code == 1
    assert r.stdout.startswith('{"severity": "error", "code": "E069", "message": "the sm_80 target: atomic_add on i8')


def test_check_collects_every_kernel_s_errors(tmp_path):
    """Unlike build, which stops at the first kernel that fails, check goes on to the next."""
    source = (CASES[-1][1] + "\n" + CASES[-2][1].replace("def t(", "def u(") + "\n"
              + ATOMIC.replace("def k(", "def fine(").replace("i8", "i32"))
    path = program_file(source, tmp_path)
    r = tlc("check", path)
    assert r.exit_code == 1
    assert [line.split("error[")[1][:4] for line in r.stderr.splitlines() if "error[E" in line] == ["E073", "E073"]
    assert r.stderr.endswith(f"error: 2 errors in {path}\n")


def test_d_and_arch_decide_what_is_scheduled():
    gemm = str(EXAMPLES / "gemm.tl")
    assert tlc("check", gemm, "-D", "BM=256", "-D", "BN=256", "-D", "BK=64", "-D", "stages=4").exit_code == 1
    assert tlc("check", gemm, "-D", "BM=64").exit_code == 0
    r = tlc("check", gemm, "-D", "BQ=64")
    assert (r.exit_code, r.stderr) == (1, f"error: -D BQ: no kernel of {gemm} has such a constant\n")
    r = tlc("check", gemm, "-D", "stages=x")
    assert r.exit_code == 1 and "error[E065]: the constant 'stages' takes an integer, not 'x'" in r.stderr
    for path in (gemm, str(EXAMPLES.parent / "stdlib" / "math.tl")):  # with kernels, and without
        r = tlc("check", path, "--arch", "sm_1")
        lines = r.stderr.splitlines()
        assert (r.exit_code, lines[0], lines[-1]) == (1, "error[E071]: unknown target architecture 'sm_1'",
                                                      f"error: 1 error in {path}")
        assert lines[1].startswith("  = hint: tlc generates code for cpu, sm_80, ")


def test_a_kernel_that_needs_a_call_s_dtype_is_scheduled_only_with_d(tmp_path):
    """A dtype parameter without a default is known only from a call's arrays: check cannot
    schedule the kernel without -D (nor can build), and says nothing about it."""
    path = program_file("@kernel\ndef k(X: T[N], T: dtype):\n    with grid(1, threads=64) as bx:\n"
                        "        for i in parallel(64):\n            atomic_add(X[0], T(1))\n", tmp_path)
    assert tlc("check", path).exit_code == 0
    assert tlc("check", path, "-D", "T=i32").exit_code == 0
    r = tlc("check", path, "-D", "T=i8")
    assert r.exit_code == 1 and "error[E069]: the sm_80 target: atomic_add on i8" in r.stderr


def test_a_kernel_that_needs_a_call_s_sizes_is_scheduled_only_with_d(tmp_path):
    """A shape symbol used as a size is compiled in, and known only from a call's arrays (E240
    at build without -D): check cannot schedule the kernel without -D, and says nothing."""
    path = program_file("@kernel\ndef k(X: f32[N]):\n    with grid(1, threads=32) as bx:\n"
                        "        t = shared(f32[N])\n        copy(X[0], t)\n        copy(t, X[0])\n", tmp_path)
    assert tlc("check", path).exit_code == 0
    assert tlc("build", path).stderr.startswith(f"{path}:4:24: error[E240]: ")
    assert tlc("check", path, "-D", "N=64").exit_code == 0
    for size in (["-D", "N=65536"], ["--shape", "N=65536"]):
        r = tlc("check", path, *size)
        assert r.exit_code == 1 and "error[E070]: kernel 'k' needs 256 KB of shared memory" in r.stderr
        assert r.stderr == tlc("build", path, *size).stderr.rstrip("\n") + f"\n\nerror: 1 error in {path}\n"


REDUCE_SHARED = """\
@kernel
def rowsum(X: f32[M, N], Y: f32[M]):
    with grid(cdiv(M, 64), threads=128) as bx:
        xs = shared(f32[64, 64])
        s = fragment(f32[64])
        copy(X[bx * 64, 0], xs)
        reduce_sum(xs, s, dim=1)
        copy(s, Y[bx * 64])
"""


def test_reduce_sum_of_a_shared_tile_into_a_fragment_checks_and_runs(tmp_path):
    """It passed check and then ended in a KeyError in schedule/layout.py (issue 17)."""
    import tlc as api

    path = program_file(REDUCE_SHARED, tmp_path)
    assert tlc("check", path).exit_code == 0
    for arch in ("sm_80", "sm_90a"):
        assert tlc("check", path, "--arch", arch).exit_code == 0
    x = np.random.default_rng(0).standard_normal((100, 64)).astype(np.float32)
    y = np.zeros(100, np.float32)
    api.load(path, target="cpu").rowsum(x, y)
    np.testing.assert_allclose(y, x.sum(axis=1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_reduce_sum_of_a_shared_tile_compiles(arch, tmp_path):
    r = tlc("build", program_file(REDUCE_SHARED, tmp_path), "--arch", arch)
    assert r.exit_code == 0, r.output
    compile_object(r.stdout, arch, tmp_path)


@pytest.mark.gpu
def test_reduce_sum_of_a_shared_tile_on_the_gpu(tmp_path):
    import cupy as cp
    import tlc as api

    x = cp.random.standard_normal((100, 64), cp.float32)
    y = cp.zeros(100, cp.float32)
    api.load(program_file(REDUCE_SHARED, tmp_path), target="cuda").rowsum(x, y)
    cp.testing.assert_allclose(y, x.sum(axis=1), rtol=1e-5, atol=1e-5)
