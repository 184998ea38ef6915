"""TLC_DUMP=DIR and --dump DIR (issue 14): every stage of one compile written out, numbered in
stage order: the options, the typed AST, the tile IR after each scheduling pass, the .cu and
the PTX.  No GPU needed (the PTX comes from nvcc)."""
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import tlc
from tlc import cli, dump
from tlc.schedule import PASSES, observing_passes, schedule

ROOT = Path(__file__).resolve().parents[2]
GEMM = ROOT / "examples" / "gemm.tl"
VECTOR_ADD = ROOT / "examples" / "vector_add.tl"
STAGES = ["options.json", "typed-ast.txt", *(f"ir-{p}.txt" for p in PASSES)]


def names(paths) -> list[str]:
    return [p.name for p in paths]


@pytest.fixture
def no_toolchain(monkeypatch):
    """A machine with neither nvcc nor CuPy: the dump says why it has no PTX."""
    monkeypatch.setattr("tlc.runtime.compile.cuda_toolkit_nvcc", lambda: None)
    monkeypatch.setattr(dump, "_has_cupy", lambda: False)


def test_every_stage_in_order(tmp_path, no_toolchain):
    # (stages=4: a matmul that schedules once; at BM=64 its two warpgroups share the 64 rows on
    # wgmma since the column split, whose ring then tries a longer K tile: a second lowering)
    k = tlc.load(str(GEMM), target="cpu").kernels["matmul"]
    paths = dump.dump_kernel(k, {"stages": 4}, "sm_90a", tmp_path)
    want = [f"{i:02d}-{s}" for i, s in enumerate(STAGES + ["matmul.cu", "ptx-none.txt"])]
    assert names(paths) == want
    assert sorted(p.name for p in (tmp_path / "matmul.sm_90a").iterdir()) == want
    options = json.loads(paths[0].read_text())
    assert (options["file"], options["kernel"], options["arch"], options["constants"]) == \
        (str(GEMM), "matmul", "sm_90a", {"stages": 4})
    assert "-arch=sm_90a" in options["nvrtc_options"] and "-ftz=false" in options["nvcc_ptx"]
    ast = paths[1].read_text()
    assert ast.startswith("kernel matmul(A: tensor f16[M, K], B: tensor f16[K, N], C: tensor f16[M, N], ")
    assert "  const stages = 4\n" in ast
    assert "Name id='gemm' : builtin  @23:13" in ast
    lowered, last = paths[2].read_text(), paths[2 + len(PASSES) - 1].read_text()
    assert lowered.startswith("kernel matmul(") and lowered != last
    assert last == tlc.ir.print_kernel(k.scheduled({"stages": 4}, "sm_90a"))
    assert paths[-2].read_text() == k.cuda_source(arch="sm_90a", stages=4)
    assert paths[-1].read_text() == "no PTX: neither nvcc nor CuPy's NVRTC is installed\n"


def test_the_pass_hook_sees_each_pass_and_changes_nothing():
    program = tlc.load(str(VECTOR_ADD), target="cpu").program
    seen = []
    with observing_passes(lambda name, kernel: seen.append((name, kernel))):
        kernel = schedule(program, "vector_add", {})
    assert [name for name, _ in seen] == list(PASSES)
    assert seen[-1][1] == kernel == schedule(program, "vector_add", {})


def test_a_second_dump_replaces_the_first(tmp_path, no_toolchain):
    k = tlc.load(str(VECTOR_ADD), target="cpu").kernels["vector_add"]
    (tmp_path / "vector_add.sm_80").mkdir()
    (tmp_path / "vector_add.sm_80" / "99-stale.txt").write_text("from another compile")
    paths = dump.dump_kernel(k, {}, "sm_80", tmp_path)
    assert sorted((tmp_path / "vector_add.sm_80").iterdir()) == sorted(paths)


@pytest.mark.nvcc
def test_the_ptx_is_nvccs(tmp_path):
    k = tlc.load(str(VECTOR_ADD), target="cpu").kernels["vector_add"]
    ptx = dump.dump_kernel(k, {}, "sm_80", tmp_path)[-1]
    assert ptx.name == f"{len(STAGES) + 1:02d}-vector_add.ptx"
    text = ptx.read_text()
    assert ".target sm_80" in text and ".entry vector_add(" in text


def test_build_dump_option_and_env(tmp_path, no_toolchain):
    out = tmp_path / "by-option"
    r = CliRunner().invoke(cli.main, ["build", str(VECTOR_ADD), "--dump", str(out)])
    assert r.exit_code == 0, r.output
    assert names(sorted((out / "vector_add.sm_80").iterdir()))[:2] == ["00-options.json", "01-typed-ast.txt"]
    env = tmp_path / "by-env"
    r = CliRunner().invoke(cli.main, ["build", str(GEMM), "--arch", "sm_90a", "-D", "stages=2"],
                           env={"TLC_DUMP": str(env)})
    assert r.exit_code == 0, r.output
    options = json.loads((env / "matmul.sm_90a" / "00-options.json").read_text())
    assert options["constants"] == {"stages": "2"}  # as -D gave it; the scheduler parses it


def test_a_dump_folder_that_cannot_be_made_is_a_usage_error(tmp_path):
    """--dump under a file (or /dev/null): exit 2 with the folder named, where mkdir's
    NotADirectoryError was an internal error's traceback (exit 3)."""
    (tmp_path / "file").write_text("")
    r = CliRunner().invoke(cli.main, ["build", str(VECTOR_ADD), "--dump", str(tmp_path / "file")])
    assert (r.exit_code, r.stderr) == (2, f"error: cannot write the compile's stages into {tmp_path / 'file'}"
                                          "/vector_add.sm_80 (--dump, $TLC_DUMP): Not a directory\n")


def test_run_dump_on_the_interpreter(tmp_path, no_toolchain):
    r = CliRunner().invoke(cli.main, ["run", str(VECTOR_ADD), "-k", "vector_add", "--target", "interp",
                                      "--shape", "N=100", "--in", "alpha=2",
                                      "--dump", str(tmp_path)])
    assert r.exit_code == 0, r.output
    folder = tmp_path / "vector_add.sm_80"
    assert f"wrote the compile's {len(STAGES) + 2} stages to {folder}" in r.output
    assert (folder / f"{len(STAGES):02d}-vector_add.cu").exists()


def test_the_python_api_dumps_under_tlc_dump(tmp_path, monkeypatch, no_toolchain):
    monkeypatch.setenv("TLC_DUMP", str(tmp_path))
    k = tlc.load(str(VECTOR_ADD), target="cpu").kernels["vector_add"]
    source = k.cuda_source(arch="sm_80")
    assert (tmp_path / "vector_add.sm_80" / f"{len(STAGES):02d}-vector_add.cu").read_text() == source
