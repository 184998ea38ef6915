"""Kernels and tile ops may take any name a Python function may, the language's statements,
builtins and dtypes included (code cannot call a kernel, so the name keeps its language meaning
inside code); a device function still cannot take a statement's name.  The C names stay
distinct (tlc/codegen/cnames.py) and the Python API and `tlc build -k` find each kernel."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import tlc
from tlc import cli
from tlc.codegen import generate_file
from tlc.driver import check_source

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "codegen"))
from nvcc import BUILD_ARCHS, compile_object  # noqa: E402

NAMES = Path(__file__).resolve().parent / "names" / "names.tl"
KERNELS = ["gemm", "copy", "exp", "main", "printf", "f16", "sum"]


def diagnostics(src: str):
    return [(d.code, d.message, d.hint) for d in check_source(src, "n.tl").diagnostics]


def test_kernels_and_tile_ops_take_language_names():
    assert check_source(NAMES.read_text(), str(NAMES)).ok
    assert list(tlc.load(str(NAMES), target="cpu").kernels) == KERNELS


@pytest.mark.parametrize("name", ["copy", "gemm", "range", "grid", "print"])
def test_a_device_function_cannot_take_a_statement_name(name):
    assert diagnostics(f"def {name}(x: f32) -> f32:\n    return x\n") == [
        ("E025", f"'{name}' is a statement of the language; a device function cannot take its name",
         f"call it, e.g., '{name}_tiles'")]


EVERY_NAME = """\
@kernel
def {kernel}(x: f32[N], y: f32[N]):
    with grid(cdiv(N, 128), threads=128) as bx:
        s = shared(f32[128])
        t = fragment(f32[128])
        copy(x[bx * 128], t)
        for k in range(1):
            for i in parallel(128):
                t[i] = max(t[i], where(t[i] > 0.0, 1.0, 0.0)) + float(int(1)) + exp(0.0)
        for k in pipelined(2, stages=2):
            copy(x[bx * 128], s)
        for k in unroll(2):
            sync()
        copy(t, y[bx * 128])

@tile_op
def {op}(x: f32[M, N]) -> f32[M, N]:
    return softmax(x, axis=1) + mean(x, axis=1, keepdims=True)
"""


@pytest.mark.parametrize("name", ["grid", "range", "parallel", "pipelined", "unroll", "shared", "fragment",
                                  "local", "sync", "print", "where", "max", "cdiv", "float", "int", "softmax",
                                  "mean"])
def test_every_construct_keeps_its_meaning_beside_a_kernel_of_its_name(name, tmp_path):
    kernel, op = (f"{name}_k", name) if name in ("softmax", "mean") else (name, f"{name}_op")
    path = tmp_path / "k.tl"
    path.write_text(EVERY_NAME.format(kernel=kernel, op=op))
    m = tlc.load(str(path), target="cpu")
    rng = np.random.default_rng(1)
    x = rng.standard_normal(200).astype(np.float32)
    y = np.zeros_like(x)
    m.kernels[kernel](x, y)
    np.testing.assert_allclose(y, np.maximum(x, x > 0) + 2.0, rtol=1e-6)
    X = rng.standard_normal((3, 5)).astype(np.float32)
    e = np.exp(X - X.max(axis=1, keepdims=True))
    np.testing.assert_allclose(m.kernels[op](X), e / e.sum(axis=1, keepdims=True) + X.mean(axis=1, keepdims=True),
                               rtol=1e-5, atol=1e-6)


def test_a_kernel_called_like_a_builtin_is_not_what_code_calls():
    """`exp(...)` in code is the builtin and `copy(...)` the statement even beside kernels of
    those names; a kernel of another name is still not callable (E055)."""
    src = NAMES.read_text() + (
        "\n@kernel\ndef caller(x: f32[N], y: f32[N]):\n    with grid(1, threads=32) as bx:\n"
        "        main(x, y)\n")
    assert diagnostics(src) == [("E055", "a kernel cannot be called from .tl code",
                                 "kernels and tile ops are launched from Python or the CLI; share code "
                                 "through device functions")]


def run_each_kernel(m, xp):
    """Call every kernel of names.tl through the API with arrays of `xp` (NumPy or CuPy) and
    compare with the same computation in `xp`."""
    x = xp.random.rand(1000).astype(xp.float32)
    y = xp.zeros_like(x)
    m.copy(x, y)
    xp.testing.assert_allclose(y, xp.exp(x) + 1, rtol=1e-5)
    m.exp(x, y)
    xp.testing.assert_allclose(y, xp.exp(x), rtol=1e-5)
    m.main(x, y)
    xp.testing.assert_array_equal(y, x)
    m.printf(x, y)
    xp.testing.assert_array_equal(y, 2 * x)
    X = xp.random.rand(40, 70).astype(xp.float32)
    xp.testing.assert_allclose(m.f16(X), xp.exp(X) + 1, rtol=1e-5)
    xp.testing.assert_allclose(m.sum(X), X.sum(axis=1), rtol=1e-5)
    A, B = xp.random.rand(128, 64).astype(xp.float16), xp.random.rand(64, 96).astype(xp.float16)
    C = xp.zeros((128, 96), xp.float32)
    m.gemm(A, B, C)
    xp.testing.assert_allclose(C, A.astype(xp.float32) @ B.astype(xp.float32), rtol=2e-2)


def test_the_api_runs_each_kernel_on_the_interpreter():
    np.random.seed(0)
    run_each_kernel(tlc.load(str(NAMES), target="cpu"), np)


@pytest.mark.parametrize("name", KERNELS)
def test_build_finds_each_kernel_by_name(name):
    r = CliRunner().invoke(cli.main, ["build", str(NAMES), "-k", name, "--emit", "ir"])
    assert r.exit_code == 0, r.output
    first = f"# tile op {name}: 1 kernel" if name in ("f16", "sum") else f"kernel {name}("
    assert r.stdout.startswith(first)


@pytest.mark.parametrize("arch", BUILD_ARCHS)
def test_every_kernel_in_one_file_compiles(arch, tmp_path):
    """One .cu holding kernels called gemm, copy, exp, main, printf (a C library function and
    the program's entry point), f16 and sum: their C names must not clash with each other or
    with CUDA's."""
    m = tlc.load(str(NAMES), target="cpu")
    kernels = []
    for name in KERNELS:
        k = m.kernels[name]
        kernels.extend(k.program({}, arch, {}).kernels if k.fn.kind == "tile_op" else [k.scheduled({}, arch)])
    compile_object(generate_file(kernels, arch, sources=m.program.sources), arch, tmp_path)


@pytest.mark.gpu
def test_kernels_with_language_names_run_on_the_gpu():
    import cupy as cp

    run_each_kernel(tlc.load(str(NAMES), target="cuda"), cp)
