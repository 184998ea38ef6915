"""`tlc run`'s options checked against the kernel's parameters (issue #16): a scalar that its
dtype cannot hold, a bool given 2, a number for an array, a --shape or --seed out of range, a
dtype parameter bound from an --in file, --check without a GPU.  Each is exit status 2 (1 for
the missing GPU) with one line naming the parameter, never NumPy's OverflowError or MemoryError."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from tlc import cli, inputs
from tlc.runtime import compile as runtime_compile

SCALARS = """
@kernel
def k(x: f32[N], out: f32[N], n: i32, u: u8, flag: bool, s: f32, BLOCK: const = 128):
    with grid(cdiv(N, BLOCK), threads=128) as bx:
        xs = fragment(f32[BLOCK])
        copy(x[bx * BLOCK], xs)
        for i in parallel(BLOCK):
            if flag:
                xs[i] = xs[i] * s + f32(n) + f32(u)
        copy(xs, out[bx * BLOCK])
"""

GENERIC = """
@kernel
def copy_of(x: T[N], out: T[N], T: dtype = f32, BLOCK: const = 128):
    with grid(cdiv(N, BLOCK), threads=128) as bx:
        xs = fragment(T[BLOCK])
        copy(x[bx * BLOCK], xs)
        copy(xs, out[bx * BLOCK])
"""

VECTOR_ADD = str(Path(__file__).resolve().parents[1] / "examples" / "vector_add.tl")
GOOD = {"n": "1", "u": "1", "flag": "1", "s": "1"}


@pytest.fixture
def run_k(tmp_path):
    """run_k(NAME=VALUE..., args...): `tlc run` of SCALARS' k on the interpreter with N=4 and
    good scalars, each overridden by the keyword of its name."""
    path = tmp_path / "k.tl"
    path.write_text(SCALARS)

    def run(*args, **scalars):
        ins = [a for name, v in {**GOOD, **scalars}.items() for a in ("--in", f"{name}={v}")]
        return CliRunner().invoke(cli.main, ["run", str(path), "-k", "k", "--target", "interp", "--shape", "N=4",
                                             *ins, *map(str, args)])
    return run


def assert_usage_error(result, message: str):
    assert (result.exit_code, result.stdout, result.stderr) == (2, "", message + "\n"), result.output


@pytest.mark.parametrize("name, value, message", [
    ("n", "1099511627776", "scalar 'n' (i32) cannot hold 1099511627776"),
    ("u", "-1", "scalar 'u' (u8) cannot hold -1"),
    ("u", "256", "scalar 'u' (u8) cannot hold 256"),
    ("n", "2.5", "scalar 'n' (i32) cannot hold 2.5"),
    ("flag", "2", "scalar 'flag' (bool) cannot hold 2"),
    ("flag", "0.5", "scalar 'flag' (bool) cannot hold 0.5"),
    ("s", "1e39", "scalar 's' (f32) cannot hold 1e+39"),
    ("s", "1e400", "scalar 's' (f32) cannot hold 1e400"),
])
def test_a_scalar_its_dtype_cannot_hold(run_k, name, value, message):
    """Was NumPy's OverflowError (a traceback) for n and u, and accepted for flag and s."""
    assert_usage_error(run_k(**{name: value}), f"error: --in {name}={value}: {message}")


@pytest.mark.parametrize("scalars", [dict(flag="true"), dict(flag="False"), dict(flag="0"), dict(n="0x10"),
                                     dict(n="2.0"), dict(s="inf"), dict(s="nan"), dict(s="-3e38")])
def test_scalars_in_range_run(run_k, scalars):
    result = run_k(**scalars)
    assert (result.exit_code, result.stderr) == (0, ""), result.output


def test_a_number_for_an_array(run_k):
    assert_usage_error(run_k("--in", "x=3"), "error: --in x=3: 'x' is an array (f32[N]); give a .npy file: --in x=FILE.npy")


def test_a_seed_numpy_does_not_take(run_k):
    """Was an internal error (NumPy's ValueError: expected non-negative integer)."""
    assert_usage_error(run_k("--seed", "-1"), "error: --seed -1: a seed is a whole number from 0 up")


def test_a_shape_beyond_what_a_shape_symbol_holds(run_k):
    """Was MemoryError, or minutes of allocating."""
    assert_usage_error(run_k("--shape", "N=2147483648"),
                       "error: --shape N=2147483648: a size is at most 2147483647 (shape symbols are i32)")


def test_random_inputs_larger_than_memory_are_refused_before_allocating(run_k, monkeypatch):
    monkeypatch.setattr(inputs, "available_memory", lambda: 2**30)
    assert_usage_error(run_k("--shape", "N=200000000"),
                       "error: --shape: the random inputs x (f32[200000000]), out (f32[200000000]) take 2.2 GiB "
                       "but 1.0 GiB of memory is available; give smaller sizes")
    result = run_k("--shape", "N=1000000")  # 12 MB
    assert (result.exit_code, result.stderr) == (0, ""), result.output


def test_a_dtype_parameter_is_bound_from_an_input_file(tmp_path):
    """As `copy_of(x, out)` binds T from x in Python; was "x.npy holds f16 values, but 'x' is f32[N]"."""
    (tmp_path / "g.tl").write_text(GENERIC)
    np.save(tmp_path / "x.npy", np.arange(5, dtype=np.float16))
    np.save(tmp_path / "o.npy", np.zeros(5, np.float32))
    base = ["run", str(tmp_path / "g.tl"), "-k", "copy_of", "--target", "interp", "--in", f"x={tmp_path / 'x.npy'}"]
    result = CliRunner().invoke(cli.main, base)
    assert (result.exit_code, result.stderr) == (0, ""), result.output
    assert result.stdout.splitlines()[1] == "out: f16[5]  min 0  max 4  mean 2"
    result = CliRunner().invoke(cli.main, base + ["--in", f"out={tmp_path / 'o.npy'}"])
    assert (result.exit_code, result.stdout, result.stderr) == (
        1, "", "error: the dtype parameter 'T' is f16 from 'x' but f32 from 'out'\n")
    result = CliRunner().invoke(cli.main, base + ["-D", "T=f32"])  # -D wins, and the file must match it
    assert (result.exit_code, result.stdout, result.stderr) == (
        2, "", f"error: --in x: {tmp_path / 'x.npy'} holds f16 values, but 'x' is f32[N]\n")


@pytest.mark.parametrize("flags, instead", [
    (["--check"], "without --check, tlc run"), (["--bench"], "without --bench, tlc run"),
    (["--target", "cuda"], "--target interp")])
def test_check_and_bench_say_they_need_a_gpu(monkeypatch, flags, instead):
    """Was "no CUDA GPU is available (...); use target='cpu'", and --target interp is refused with --check."""
    monkeypatch.setattr(runtime_compile, "cuda_unavailable_reason", lambda: "no GPU here")
    result = CliRunner().invoke(cli.main, ["run", VECTOR_ADD, "-k", "vector_add", "--shape", "N=4",
                                           "--in", "alpha=1", *flags])
    assert (result.exit_code, result.stdout, result.stderr) == (
        1, "", f"error: {' '.join(flags)} needs a CUDA GPU and there is none (no GPU here); {instead} runs "
               f"the kernel on the CPU reference interpreter\n")
