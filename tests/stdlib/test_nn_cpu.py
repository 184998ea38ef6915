"""std.nn on the interpreter against NumPy: every kernel, one-tile and several-tile rows,
ragged shapes, f16 and bf16 (and f32); the registry of tested operators (stdlib/tested.json,
tests/stdlib/op_registry.py) and the reference page docs/stdlib/nn.md."""
from pathlib import Path

import numpy as np
import pytest

import tlc
from tlc.dtypes import BF16, F16, F32
from nn_kit import KERNELS, NN_PATH, SHAPES, elementwise_case, rel_err, rowwise_cases
from op_registry import check_or_record

TOL = {F16: 2e-3, BF16: 1.5e-2, F32: 1e-5}
ELEMENTWISE = [(1000, dict(BLOCK=256, THREADS=32)), (4096, {}), (77, dict(BLOCK=64, THREADS=32))]
PASSED: dict = {}  # (kernel, dtype) -> shapes passed in this run


def test_std_nn_checks_clean_and_has_its_kernels():
    assert sorted(tlc.load(NN_PATH, target="cpu").kernels) == sorted(KERNELS)


@pytest.mark.parametrize("dtype", [F16, BF16, F32])
@pytest.mark.parametrize("M,N,consts", SHAPES)
def test_rowwise_kernels_against_numpy(dtype, M, N, consts):
    mod = tlc.load(NN_PATH, target="cpu")
    for name, args, c, out, ref in rowwise_cases(np.random.default_rng(M * N), dtype.numpy(), M, N, consts):
        getattr(mod, name)(*args, **c)
        assert rel_err(args[out].astype(np.float32), ref) < TOL[dtype], (name, c)
        PASSED[name, dtype.name] = PASSED.get((name, dtype.name), 0) + 1


@pytest.mark.parametrize("dtype", [F16, BF16])
@pytest.mark.parametrize("n,consts", ELEMENTWISE)
def test_elementwise_against_numpy(dtype, n, consts):
    mod = tlc.load(NN_PATH, target="cpu")
    name, args, c, out, ref = elementwise_case(np.random.default_rng(n), dtype.numpy(), n, consts)
    getattr(mod, name)(*args, **c)
    assert rel_err(args[out].astype(np.float32), ref) < TOL[dtype]
    PASSED[name, dtype.name] = PASSED.get((name, dtype.name), 0) + 1


def test_registry():
    """stdlib/tested.json lists std.nn's kernels with the dtypes whose every shape passed in this
    run (TLC_RECORD_TESTED=1 rewrites it; tests/stdlib/op_registry.py)."""
    rowwise = {"softmax", "rms_norm", "layer_norm"}
    table = {k: ({"f16", "bf16", "f32"} if k in rowwise else {"f16", "bf16"}) for k in KERNELS}
    shapes = {k: len(SHAPES) if k in rowwise else len(ELEMENTWISE) for k in KERNELS}
    passed = {k: {d for d in table[k] if PASSED.get((k, d)) == shapes[k]} for k in KERNELS}
    check_or_record("std.nn", table, {k: v for k, v in passed.items() if v == table[k]}, __file__)


def test_the_reference_page_is_generated_from_the_sources():
    """docs/stdlib/nn.md is what scripts/stdlib-docs writes (rerun it after editing the .tl)."""
    from tlc.ops import load_tested, markdown, module_ops

    text = markdown(Path(NN_PATH), module_ops(Path(NN_PATH), load_tested()))
    page = Path(__file__).resolve().parents[2] / "docs" / "stdlib" / "nn.md"
    assert page.read_text() == text, "docs/stdlib/nn.md is stale: run scripts/stdlib-docs nn"


def test_import_from_another_file(tmp_path):
    p = tmp_path / "use.tl"
    p.write_text("from std.nn import softmax, rms_norm\n")
    mod = tlc.load(str(p), target="cpu")
    assert mod.program.function("rms_norm").kind == "kernel"
