"""Constants that fit (schedule/fit.py): a kernel whose default tiles need more shared memory
than the target has for a call's dtypes is scheduled with smaller defaults, stages first, then
the largest tile dimension, and `--emit ir` says so; a constant the caller gives is never
changed, and one that does not fit stays E070."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import tlc
from tlc import cli
from tlc.diagnostics import DiagnosticError
from tlc.schedule import schedule
from tlc.schedule.fit import schedule_fitting

from kit import GEMM, program

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "codegen"))
from nvcc import compile_device  # noqa: E402

EXAMPLE = str(Path(__file__).resolve().parents[2] / "examples" / "gemm.tl")


def fitted(src: str, constants: dict, target: str = "sm_80"):
    return schedule_fitting(program(src), "matmul", constants, target=target, schedule=schedule)


def constants(kernel) -> dict:
    return {k: v for k, v in kernel.constants if k in ("BM", "BN", "BK", "stages")}


def build(*args):
    return CliRunner().invoke(cli.main, ["build", EXAMPLE, *args])


NOTE_SM80 = ("  # note: fitted to the 163 KB of shared memory sm_80 allows, which the defaults overran (288 KB): "
             "stages=2 (default 3), BN=128 (default 256) need 128 KB; give constants to choose others")
NOTE_SM90 = ("  # note: fitted to the 227 KB of shared memory sm_90a allows, which the defaults overran (288 KB): "
             "stages=2 (default 3) need 192 KB; give constants to choose others")


@pytest.mark.parametrize("arch, note, head", [
    ("sm_80", NOTE_SM80, "const BK=64, BM=128, BN=128, T=f32, THREADS=256, stages=2"),
    ("sm_90a", NOTE_SM90, "const BK=64, BM=128, BN=256, T=f32, THREADS=256, stages=2")])
def test_the_example_gemm_with_f32_fits_and_says_so(arch, note, head):
    """Stages first, down to the @autotune list's least (2), then the largest tile (BN)."""
    r = build("-D", "T=f32", "--arch", arch, "--emit", "ir")
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert lines[1:3] == ["  " + head, note]


def test_defaults_that_fit_are_kept_without_a_note():
    r = build("--emit", "ir")
    assert r.exit_code == 0 and "# note:" not in r.stdout
    assert "const BK=64, BM=128, BN=256, T=f16, THREADS=256, stages=3" in r.stdout


def test_a_given_constant_is_kept_and_the_others_shrink():
    r = build("-D", "T=f32", "-D", "stages=3", "--emit", "ir")
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines()[1] == "  const BK=64, BM=64, BN=128, T=f32, THREADS=256, stages=3"


def test_given_constants_that_do_not_fit_stay_an_error():
    r = build("-D", "T=f32", "-D", "stages=4", "-D", "BM=128", "-D", "BN=256", "-D", "BK=64")
    assert r.exit_code == 1
    assert r.stderr.splitlines()[0] == (
        f"{EXAMPLE}:12:5: error[E070]: kernel 'matmul' needs 384 KB of shared memory, more than the 163 KB the "
        "target allows: Bs (4 stages x 64 KB), As (4 stages x 32 KB)")


def test_given_constants_that_leave_no_room_are_named_in_the_hint():
    r = build("-D", "T=f32", "-D", "stages=4", "-D", "BN=1024")
    assert r.exit_code == 1
    assert r.stderr == (
        f"{EXAMPLE}:12:5: error[E070]: kernel 'matmul' needs 1152 KB of shared memory, more than the 163 KB the "
        "target allows: Bs (4 stages x 256 KB), As (4 stages x 32 KB)\n"
        "   |\n"
        "12 | def matmul(A: T[M, K], B: T[K, N], C: T[M, N],\n"
        "   |     ^^^^^^\n"
        "  = hint: with the defaults shrunk to BK=32, BM=64 it still needs 544 KB; give smaller values than "
        "stages=4, BN=1024\n")


def test_without_autotune_stages_go_down_to_one_then_the_largest_tile_halves():
    src = GEMM.replace("stages: const = 3", "stages: const = 4").replace("BK: const = 32", "BK: const = 64")
    k = fitted(src, {"T": "f64", "BM": 256, "BN": 256})
    assert constants(k) == {"BM": 256, "BN": 256, "BK": 32, "stages": 1}
    assert k.smem_bytes <= 163 * 1024


def test_the_largest_tile_shrinks_first_and_never_below_16():
    k = fitted(GEMM, {"T": "f64", "stages": 2, "BN": 256})
    assert constants(k) == {"BM": 64, "BN": 256, "BK": 32, "stages": 2}
    src = GEMM.replace("BM: const = 128", "BM: const = 32").replace("BK: const = 32", "BK: const = 16")
    with pytest.raises(DiagnosticError) as e:
        fitted(src, {"T": "f64", "stages": 1, "BN": 2048})
    assert [d.code for d in e.value.diagnostics] == ["E070"]


def test_a_default_that_is_not_a_power_of_two_is_left_alone():
    """1536 halved would fit; the kernel's own arithmetic may need the 3 in 3 x 512."""
    with pytest.raises(DiagnosticError) as e:
        fitted(GEMM.replace("BN: const = 128", "BN: const = 1536"), {"T": "f64", "stages": 2, "BM": 16, "BK": 16})
    assert [d.code for d in e.value.diagnostics] == ["E070"]
    k = fitted(GEMM.replace("BN: const = 128", "BN: const = 1024"), {"T": "f64", "stages": 2, "BM": 16, "BK": 16})
    assert constants(k) == {"BM": 16, "BN": 512, "BK": 16, "stages": 2}


def test_the_interpreter_runs_the_f32_example():
    mod = tlc.load(EXAMPLE, target="cpu")
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((130, 70), np.float32), rng.standard_normal((70, 300), np.float32)
    c = np.zeros((130, 300), np.float32)
    mod.matmul(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
    assert NOTE_SM80.strip() in mod.matmul.ir(T=tlc.dtypes.F32)


def test_check_accepts_what_fits():
    r = CliRunner().invoke(cli.main, ["check", EXAMPLE, "-D", "T=f32"])
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_the_fitted_example_compiles(arch, tmp_path):
    r = build("-D", "T=f32", "--arch", arch)
    assert r.exit_code == 0, r.output
    compile_device(r.stdout, arch, tmp_path)


@pytest.mark.gpu
def test_the_f32_example_on_the_gpu():
    import cupy as cp

    mod = tlc.load(EXAMPLE, target="cuda")
    a, b = cp.random.standard_normal((300, 200), cp.float32), cp.random.standard_normal((200, 500), cp.float32)
    c = cp.zeros((300, 500), cp.float32)
    mod.matmul(a, b, c)
    cp.testing.assert_allclose(c, a @ b, rtol=2e-3, atol=2e-3)


def test_stages_given_as_tilelang_num_stages_shrink_too():
    """`pipelined(n, num_stages=S)` (TileLang's spelling, std.attention's) names its stages as
    `stages=S` does: the defaults' 3 stages drop to 2 on sm_80 rather than failing with E070."""
    src = GEMM.replace("stages=stages", "num_stages=stages").replace("stages: const = 3", "stages: const = 4")
    assert "num_stages=stages" in src
    k = fitted(src.replace("BK: const = 32", "BK: const = 64"), {"T": "f64", "BM": 256, "BN": 256})
    assert constants(k) == {"BM": 256, "BN": 256, "BK": 32, "stages": 1}  # as with stages=
