"""`tlc run` (on the CPU reference interpreter) and `tlc build`: what they print, what they write,
and the exact one-line message and exit status of each mistake a user can make with them."""
from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from tlc import cli

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
GEMM = str(EXAMPLES / "gemm.tl")
VECTOR_ADD = str(EXAMPLES / "vector_add.tl")
LINEAR_GELU = str(EXAMPLES / "linear_gelu.tl")

NUMBER = r"-?(?:\d+(?:\.\d*)?|\.\d+)(?:e[-+]?\d+)?"
SUMMARY = re.compile(rf"(\w+): (\w+)\[([\d, ]*)\]  min ({NUMBER})  max ({NUMBER})  mean ({NUMBER})")


def tlc(*args):
    return CliRunner().invoke(cli.main, [str(a) for a in args])


def run_gemm(*args):
    return tlc("run", GEMM, "-k", "matmul", "--target", "interp", *args)


def assert_error(result, message: str, status: int = 1):
    """Exit status 1 (2 for a file that cannot be written), nothing on stdout, exactly `message`
    (one line) on stderr."""
    assert (result.exit_code, result.stdout, result.stderr) == (status, "", message + "\n"), result.output
    assert "\n" not in message


def assert_error_starting(result, start: str, status: int = 1):
    """Exit status 1, nothing on stdout, one line on stderr that starts with `start` (the rest
    is NumPy's own words, which change between its versions)."""
    assert (result.exit_code, result.stdout) == (status, ""), result.output
    assert result.stderr.startswith(start) and result.stderr.count("\n") == 1, result.stderr


def umask() -> int:
    old = os.umask(0)
    os.umask(old)
    return old


# --- tlc run: what it prints and writes ------------------------------------------------------

def test_run_gemm_on_the_interpreter_prints_a_summary_of_c():
    result = run_gemm("--shape", "M=300,N=200,K=100")
    assert (result.exit_code, result.stderr) == (0, ""), result.output
    first, second = result.stdout.splitlines()
    assert first == "running matmul on the CPU reference interpreter"
    m = SUMMARY.fullmatch(second)
    assert m, second
    name, dtype, shape, lo, hi, mean = m.groups()
    assert (name, dtype, shape) == ("C", "f16", "300, 200")
    assert float(lo) < float(mean) < float(hi)  # random inputs: a spread of values, not all zero


def test_run_is_reproducible_with_a_seed_and_changes_with_another():
    a, b = run_gemm("--shape", "M=30,N=20,K=10"), run_gemm("--shape", "M=30,N=20,K=10", "--seed", "0")
    c = run_gemm("--shape", "M=30,N=20,K=10", "--seed", "1")
    assert a.stdout == b.stdout
    assert a.stdout != c.stdout


def test_run_with_separate_shape_options_and_constants():
    result = run_gemm("--shape", "M=65", "--shape", "N=7", "--shape", "K=33",
                      "-D", "BM=64", "-D", "BN=64", "-D", "BK=16", "-D", "stages=2", "-D", "T=bf16")
    assert (result.exit_code, result.stderr) == (0, ""), result.output
    assert SUMMARY.fullmatch(result.stdout.splitlines()[1]).groups()[:3] == ("C", "bf16", "65, 7")


def test_run_out_writes_a_loadable_npy_and_no_temporary_files(tmp_path):
    out = tmp_path / "c.npy"
    result = run_gemm("--shape", "M=300,N=200,K=100", "--out", f"C={out}")
    assert (result.exit_code, result.stderr) == (0, ""), result.output
    assert result.stdout == f"running matmul on the CPU reference interpreter\nwrote C to {out}\n"
    c = np.load(out, allow_pickle=False)
    assert (c.shape, c.dtype) == ((300, 200), np.float16)
    assert np.isfinite(c).all() and np.any(c != 0)
    assert os.listdir(tmp_path) == ["c.npy"]


def test_run_out_matches_the_inputs_given(tmp_path):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((37, 20)).astype(np.float16)
    b = rng.standard_normal((20, 45)).astype(np.float16)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    out = tmp_path / "c.npy"
    result = run_gemm("--in", f"A={tmp_path / 'a.npy'}", "--in", f"B={tmp_path / 'b.npy'}", "--out", f"C={out}")
    assert result.exit_code == 0, result.output
    c = np.load(out).astype(np.float64)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    assert np.linalg.norm(c - ref) / np.linalg.norm(ref) < 2e-3
    assert sorted(os.listdir(tmp_path)) == ["a.npy", "b.npy", "c.npy"]


def test_run_out_replaces_an_existing_file(tmp_path):
    out = tmp_path / "c.npy"
    out.write_text("old")
    assert run_gemm("--shape", "M=3,N=4,K=5", "--out", f"C={out}").exit_code == 0
    assert np.load(out).shape == (3, 4)
    assert os.listdir(tmp_path) == ["c.npy"]


def test_run_out_file_has_the_permissions_the_umask_allows(tmp_path):
    """Like any file a command writes (np.save, cp): 0666 less the umask, not mkstemp's 0600."""
    out = tmp_path / "c.npy"
    assert run_gemm("--shape", "M=3,N=4,K=5", "--out", f"C={out}").exit_code == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~umask()


def test_run_out_into_a_missing_folder_is_an_error(tmp_path):
    folder = tmp_path / "nope"
    result = run_gemm("--shape", "M=3,N=4,K=5", "--out", f"C={folder / 'c.npy'}")
    assert_error(result, f"error: --out: cannot write into {folder}: No such file or directory", status=2)


def test_run_out_onto_a_folder_is_an_error_and_leaves_no_temporary_file(tmp_path):
    folder = tmp_path / "d"
    folder.mkdir()
    result = run_gemm("--shape", "M=3,N=4,K=5", "--out", f"C={folder}")
    assert_error(result, f"error: --out: cannot write {folder}: Is a directory", status=2)
    assert os.listdir(tmp_path) == ["d"] and os.listdir(folder) == []


def test_run_vector_add_with_a_scalar():
    result = tlc("run", VECTOR_ADD, "-k", "vector_add", "--target", "interp", "--shape", "N=3001", "--in", "alpha=2")
    assert (result.exit_code, result.stderr) == (0, ""), result.output
    first, second = result.stdout.splitlines()
    assert first == "running vector_add on the CPU reference interpreter"
    assert SUMMARY.fullmatch(second).groups()[:3] == ("out", "f32", "3001")


# --- tlc run: the user's mistakes ------------------------------------------------------------

@pytest.fixture
def npy(tmp_path):
    """npy(name, array) -> its path as a str, written into tmp_path."""
    def write(name, array):
        path = tmp_path / name
        np.save(path, array)
        return str(path)
    return write


def test_in_wrong_dtype(npy):
    """(gemm's A is T[M, K]: an f32 file binds T to f32, as in Python; vector_add's x is f32.)"""
    path = npy("x.npy", np.ones(10, np.float16))
    assert_error(tlc("run", VECTOR_ADD, "-k", "vector_add", "--target", "interp", "--in", f"x={path}", "--in", "alpha=1"),
                 f"error: --in x: {path} holds f16 values, but 'x' is f32[N]", status=2)


def test_in_wrong_dtype_for_a_dtype_given_with_d(npy):
    path = npy("a.npy", np.ones((300, 100), np.float16))
    assert_error(run_gemm("--in", f"A={path}", "--shape", "N=200,K=100", "-D", "T=bf16"),
                 f"error: --in A: {path} holds f16 values, but 'A' is bf16[M, K]", status=2)


def test_in_wrong_rank(npy):
    path = npy("a.npy", np.ones(300, np.float16))
    assert_error(run_gemm("--in", f"A={path}", "--shape", "N=200,K=100"),
                 f"error: --in A: {path} has 1 dimension, but 'A' is f16[M, K]", status=2)


def test_in_missing_file(tmp_path):
    path = tmp_path / "missing.npy"
    assert_error(run_gemm("--in", f"A={path}", "--shape", "N=200,K=100"), f"error: --in A: no such file: {path}", status=2)


def test_in_truncated_file(npy):
    path = npy("a.npy", np.ones((300, 100), np.float16))
    with open(path, "r+b") as f:
        f.truncate(1000)
    assert_error_starting(run_gemm("--in", f"A={path}", "--shape", "N=200,K=100"),
                          f"error: --in A: cannot read {path} as a .npy array (", status=2)


def test_in_empty_file(tmp_path):
    path = tmp_path / "a.npy"
    path.write_bytes(b"")
    assert_error_starting(run_gemm("--in", f"A={path}", "--shape", "N=200,K=100"),
                          f"error: --in A: {path} is not a .npy file (write one with numpy.save)", status=2)


def test_in_corrupt_file_is_an_error(tmp_path):
    path = tmp_path / "a.npy"
    path.write_bytes(b"this is not a .npy file at all")
    assert_error_starting(run_gemm("--in", f"A={path}", "--shape", "N=200,K=100"),
                          f"error: --in A: {path} is not a .npy file (write one with numpy.save)", status=2)


def test_in_corrupt_file_message_does_not_talk_about_pickles(tmp_path):
    """BUG: a file without the .npy magic makes np.load fall back to pickle, and its refusal
    ("This file contains pickled (object) data. If you trust the file you can load it unsafely
    using the `allow_pickle=` keyword argument or `pickle.load()`.") is shown to the user: it is
    wrong (the file holds no pickle) and advises unpickling an untrusted file."""
    path = tmp_path / "a.npy"
    path.write_bytes(b"this is not a .npy file at all")
    result = run_gemm("--in", f"A={path}", "--shape", "N=200,K=100")
    assert result.exit_code == 2
    assert "pickle" not in result.stderr


def test_in_object_array_is_an_error(tmp_path):
    path = tmp_path / "a.npy"
    np.save(path, np.array([1, "a"], dtype=object), allow_pickle=True)
    assert_error_starting(run_gemm("--in", f"A={path}", "--shape", "N=200,K=100"),
                          f"error: --in A: cannot read {path} as a .npy array (", status=2)


def test_in_unknown_parameter(npy):
    path = npy("z.npy", np.ones((3, 3), np.float16))
    assert_error(run_gemm("--in", f"Z={path}"), "error: 'matmul' has no array or scalar parameter Z; it takes A, B, C", status=2)


def test_in_size_disagrees_with_shape(npy):
    path = npy("a.npy", np.ones((300, 100), np.float16))
    assert_error(run_gemm("--in", f"A={path}", "--shape", "M=200,N=200"),
                 f"error: shape symbol 'M' is 200 from --shape but 300 in 'A' (axis 0, {path})", status=2)


def test_missing_shape_symbol():
    assert_error(run_gemm("--shape", "M=300,N=200"),
                 "error: 'A' is f16[M, K]: give the size of 'K' with --shape K=..., or the array with --in A=FILE.npy", status=2)


def test_unknown_shape_symbol():
    assert_error(run_gemm("--shape", "M=300,N=200,K=100,Q=3"),
                 "error: --shape Q: 'matmul' has no shape symbol 'Q'; its symbols are M, K, N", status=2)


@pytest.mark.parametrize("shape, message", [
    ("K=x", "error: --shape K=x: a size is a whole number"),
    ("K=-1", "error: --shape K=-1: a size cannot be negative"),
    ("K", "error: --shape takes NAME=VALUE, not 'K'"),
    ("=3", "error: --shape takes NAME=VALUE, not '=3'"),  # was "--shape : 'matmul' has no shape symbol ''"
])
def test_bad_shape_values(shape, message):
    assert_error(run_gemm("--shape", f"M=3,N=3,{shape}"), message, status=2)


def test_scalar_without_value():
    result = tlc("run", VECTOR_ADD, "-k", "vector_add", "--target", "interp", "--shape", "N=10")
    assert_error(result, "error: the scalar parameter 'alpha' needs a value: --in alpha=NUMBER", status=2)


def test_scalar_not_a_number():
    result = tlc("run", VECTOR_ADD, "-k", "vector_add", "--target", "interp", "--shape", "N=10", "--in", "alpha=two")
    assert_error(result, "error: --in alpha=two: 'alpha' is a scalar of type f32; give a number", status=2)


def test_unknown_kernel_for_run():
    result = tlc("run", GEMM, "-k", "nothere", "--target", "interp")
    assert_error(result, f"error: {GEMM} has no kernel 'nothere'; its kernels are: matmul")


def test_out_of_an_unknown_array():
    assert_error(run_gemm("--shape", "M=3,N=3,K=3", "--out", "Z=z.npy"),
                 "error: --out Z: 'matmul' has no array parameter 'Z'", status=2)


def test_define_unknown_constant():
    """Not one line: a diagnostic without a place in the file, and its hint."""
    result = run_gemm("--shape", "M=3,N=3,K=3", "-D", "BX=64")
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == ("error[E064]: 'matmul' has no constant or dtype parameter 'BX'\n"
                             "  = hint: its constants are: T, BM, BN, BK, stages, THREADS\n")


def declaration(file: str, text: str) -> tuple[int, str, int]:
    """(line number, line, column) of the first line of `file` that holds `text`."""
    for number, line in enumerate(Path(file).read_text().splitlines(), 1):
        if text in line:
            return number, line, line.index(text) + 1
    raise AssertionError(f"{text!r} is not in {file}")


@pytest.mark.parametrize("define, decl, what", [
    ("BM=1.5", "BM: const = 128", "the constant 'BM' takes an integer, not '1.5'"),
    ("BM=abc", "BM: const = 128", "the constant 'BM' takes an integer, not 'abc'"),
    ("T=f99", "T: dtype = f16", "the dtype parameter 'T' takes a dtype such as f16, not 'f99'"),
])
def test_define_of_the_wrong_type(define, decl, what):
    """Not one line: the diagnostic points at the parameter's declaration."""
    number, line, col = declaration(GEMM, decl)
    gutter = " " * len(str(number))
    result = run_gemm("--shape", "M=3,N=3,K=3", "-D", define)
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == (
        f"{GEMM}:{number}:{col}: error[E065]: {what}\n"
        f"{gutter} |\n"
        f"{number} | {line}\n"
        f"{gutter} | {' ' * (col - 1)}{'^' * len(decl)}\n")


def test_define_without_a_value():
    assert_error(run_gemm("--shape", "M=3,N=3,K=3", "-D", "BM"), "error: -D takes NAME=VALUE, not 'BM'", status=2)


@pytest.mark.parametrize("flag", ["--check", "--bench"])
def test_check_and_bench_need_the_gpu(flag):
    assert_error(run_gemm("--shape", "M=3,N=3,K=3", flag), f"error: {flag} needs the GPU; drop --target interp")


# --- tlc build -------------------------------------------------------------------------------

def test_build_prints_cuda_with_the_kernel_and_its_launcher():
    result = tlc("build", GEMM)
    assert (result.exit_code, result.stderr) == (0, ""), result.output
    cu = result.stdout
    assert 'extern "C" __global__' in cu
    assert re.search(r'extern "C" __global__ void __launch_bounds__\(256\) matmul\(', cu)
    assert re.search(r'extern "C" cudaError_t launch_matmul\(const half\* A, const half\* B, half\* C, '
                     r'int M, int K, int N, cudaStream_t stream\)', cu)
    assert re.match(rf"// Generated by tlc 0\.1\.0 from {re.escape(GEMM)}: kernel matmul "
                    r"\(BK=64, BM=128, BN=256, T=f16, (\w+=\w+, )*stages=3(, \w+=\w+)*\)\.\n", cu)


def test_build_with_defines():
    result = tlc("build", GEMM, "-D", "T=bf16", "-D", "BM=64")
    assert result.exit_code == 0, result.output
    assert re.search(r"kernel matmul \(BK=64, BM=64, BN=256, T=bf16, .*stages=3.*\)\.\n", result.stdout)
    assert "launch_matmul(const __nv_bfloat16* A" in result.stdout


def test_build_emit_ir():
    result = tlc("build", GEMM, "--emit", "ir", "-D", "BM=64")
    assert (result.exit_code, result.stderr) == (0, ""), result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "kernel matmul(A: f16[M, K], B: f16[K, N], C: f16[M, N]):"
    assert re.fullmatch(r"  const BK=64, BM=64, BN=256, T=f16, (\w+=\w+, )*stages=3(, \w+=\w+)*", lines[1])
    assert lines[2].startswith("  grid (bx, by) in ((N - 1) // 256 + 1, (M - 1) // 64 + 1) threads=256 smem=")
    assert "    gemm acc += As @ Bs" in lines
    assert result.stdout.endswith("\n")


def test_build_emit_ir_is_the_snapshot_of_the_scheduler_tests():
    golden = Path(__file__).resolve().parent / "schedule" / "golden" / "gemm.matmul.ir"
    result = tlc("build", GEMM, "--emit", "ir")
    assert (result.exit_code, result.stdout) == (0, golden.read_text())


@pytest.mark.nvcc
def test_build_emit_ptx_for_sm90a_runs_nvcc():
    result = tlc("build", GEMM, "--emit", "ptx", "--arch", "sm_90a")
    assert (result.exit_code, result.stderr) == (0, ""), result.output[-2000:]
    ptx = result.stdout
    assert re.search(r"^\.target sm_90a$", ptx, re.M)
    assert re.search(r"^\.visible \.entry matmul\($", ptx, re.M)


def test_build_cubin_needs_an_output_file():
    assert_error(tlc("build", GEMM, "--emit", "cubin"), "error: a cubin is binary: give -o FILE.cubin")


def test_build_cubin_without_output_writes_no_header(tmp_path):
    """BUG: the header is written before the cubin is found to have nowhere to go, so a failed
    command leaves a file behind."""
    header = tmp_path / "g.h"
    result = tlc("build", GEMM, "--emit", "cubin", "--header", header)
    assert result.exit_code == 1
    assert os.listdir(tmp_path) == []


def test_build_writes_the_cu_and_the_header(tmp_path):
    cu, h = tmp_path / "file.cu", tmp_path / "file.h"
    result = tlc("build", GEMM, "-o", cu, "--header", h)
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", f"wrote {cu}\nwrote {h}\n")
    assert sorted(os.listdir(tmp_path)) == ["file.cu", "file.h"]
    source, header = cu.read_text(), h.read_text()
    assert source == tlc("build", GEMM).stdout
    assert "#pragma once" in header
    decl = "cudaError_t launch_matmul(const half* A, const half* B, half* C, int M, int K, int N, cudaStream_t stream)"
    assert decl + ";" in header
    assert f'extern "C" {decl} {{' in source


def test_build_output_files_have_the_permissions_the_umask_allows(tmp_path):
    """BUG: the .cu and .h come out 0600 (mkstemp's mode, kept by the rename), so a build
    system or another user cannot read them; nvcc -o, cp, np.save give 0666 less the umask."""
    cu, h = tmp_path / "file.cu", tmp_path / "file.h"
    assert tlc("build", GEMM, "-o", cu, "--header", h).exit_code == 0
    want = 0o666 & ~umask()
    assert (stat.S_IMODE(cu.stat().st_mode), stat.S_IMODE(h.stat().st_mode)) == (want, want)


def test_build_unknown_kernel():
    assert_error(tlc("build", GEMM, "-k", "nothere"), f"error: {GEMM} has no kernel 'nothere'; its kernels are: matmul")


def test_build_a_file_of_tile_ops_only():
    """A tile op contributes the kernels it is scheduled into: here one, named after it."""
    result = tlc("build", LINEAR_GELU)
    assert result.exit_code == 0, result.output
    assert 'extern "C" __global__ void __launch_bounds__(' in result.stdout
    assert ") linear_gelu(const half* __restrict__ x, const half* __restrict__ w" in result.stdout


def test_build_a_tile_op_by_name_shows_its_fusion_plan():
    result = tlc("build", LINEAR_GELU, "-k", "linear_gelu", "--emit", "ir", "--arch", "sm_90a")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(
        "# tile op linear_gelu: 1 kernel\n"
        "#   linear_gelu (matmul): f16(gelu(x @ w.T + b)) -> out\n"
        "#     fused: x @ w.T\n"
        "#     tiles: BM=128 BN=256 BK=64 stages=3 threads=256 (from std.gemm matmul_nt, config.json)\n"
        "#   no intermediate goes through global memory\n"
        "kernel linear_gelu(x: f16[M, K], w: f16[N, K], b: f32[N], out: f16[M, N]):\n")


SOFTMAX_OF_PRODUCT = """
@tile_op
def scores(q: f16[M, K], k: f16[N, K]) -> f16[M, N]:
    return f16(softmax(q @ k.T, axis=1))
"""


def test_build_a_tile_op_of_two_kernels(tmp_path):
    path = tmp_path / "scores.tl"
    path.write_text(SOFTMAX_OF_PRODUCT)
    result = tlc("build", path, "--emit", "ir", "--shape", "N=8192")
    assert result.exit_code == 0, result.output
    plan = [line for line in result.stdout.splitlines() if line.startswith("#")]
    assert plan == [
        "# tile op scores: 2 kernels",
        "#   scores_0_matmul (matmul): q @ k.T -> tmp0",
        "#     fused: q @ k.T",
        "#     tiles: BM=128 BN=128 BK=32 stages=4 threads=128 (from std.gemm matmul_nt, config.json)",
        "#   scores_1_rows (rows): f16(softmax(q @ k.T, axis=1)) -> out",
        "#     fused: softmax(q @ k.T, axis=1)",
        "#     tiles: 1 rows per block, 8192 per tile, threads=256",
        "#   temporary tmp0: f32[M, N] in global memory",
        "#   boundary at 'q @ k.T' (line 4): 'softmax(q @ k.T, axis=1)' needs whole rows it reduces, and a matmul "
        "kernel holds one tile of the product"]
    cu = tlc("build", path)
    assert cu.stdout.count('extern "C" __global__') == 2


def test_build_shape_must_be_a_number(tmp_path):
    path = tmp_path / "scores.tl"
    path.write_text(SOFTMAX_OF_PRODUCT)
    assert_error(tlc("build", path, "--shape", "N=lots"), "error: --shape N=lots: a size is a whole number", status=2)


def test_run_a_tile_op_on_the_interpreter(tmp_path):
    out = tmp_path / "y.npy"
    result = tlc("run", LINEAR_GELU, "-k", "linear_gelu", "--shape", "M=70,N=50,K=40", "--target", "interp",
                 "--out", f"result={out}")
    assert result.exit_code == 0, result.output
    assert result.stdout == f"running linear_gelu on the CPU reference interpreter\nwrote result to {out}\n"
    assert np.load(out).shape == (70, 50)


SCALED_SOFTMAX = """
@tile_op
def scaled_softmax(x: f16[M, N], scale: f32) -> f16[M, N]:
    return f16(softmax(x * scale, axis=1))
"""


def test_check_a_tile_op_with_a_scalar_on_the_cpu_target(tmp_path):
    """--in scale=0.5 is a NumPy scalar, which the interpreter's run for --check takes as it is
    (it was taken for an array and ended in an internal error)."""
    path = tmp_path / "ops.tl"
    path.write_text(SCALED_SOFTMAX)
    result = tlc("run", path, "-k", "scaled_softmax", "--shape", "M=10,N=300", "--in", "scale=0.5",
                 "--target", "cpu", "--check")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[:2] == ["running scaled_softmax on the cpu target (C++ with OpenMP, g++)",
                                              "check against the interpreter: largest relative error 0 (in result)"]


def test_run_a_tile_op_names_its_output_result():
    result = tlc("run", LINEAR_GELU, "-k", "linear_gelu", "--shape", "M=7,N=5,K=4", "--target", "interp",
                 "--out", "y=y.npy")
    assert_error(result, "error: --out y: a tile op's output is called 'result' (--out result=FILE.npy)", status=2)


@pytest.mark.parametrize("file, define", [(GEMM, "XX=3"), (VECTOR_ADD, "BM=64")])
def test_build_define_of_a_constant_no_kernel_has(file, define):
    name = define.split("=")[0]
    assert_error(tlc("build", file, "-D", define), f"error: -D {name}: no kernel built from {file} has such a constant")


def test_random_inputs_of_a_negative_computed_size():
    """std.conv's conv2d of a kernel larger than the image: y's height, an expression of the
    sizes given, is below 0; the random inputs were drawn anyway and NumPy's ValueError ended
    the run in a traceback (found by scripts/fuzz --mode tuning)."""
    from tlc import package_data

    conv = package_data.stdlib().joinpath("conv.tl")
    result = tlc("run", conv, "-k", "conv2d", "--target", "interp", "--shape", "N=1,H=1,W=3,C=8,F=8,K=3")
    assert_error(result, "error: --shape: 'y' is f16[N, (H + 2 * P - D * (K - 1) - 1) // S + 1, "
                 "(W + 2 * P - D * (K - 1) - 1) // S + 1, F], whose axis 1, (H + 2 * P - D * (K - 1) - 1) // S + 1, "
                 "is -1 with H = 1, K = 3: give sizes that make it 0 or more", status=2)
