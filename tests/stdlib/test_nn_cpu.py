"""std.nn on the interpreter against NumPy: every kernel, one-tile and several-tile rows,
ragged shapes, f16 and bf16 (and f32)."""
import numpy as np
import pytest

import tlc
from tlc.dtypes import BF16, F16, F32
from nn_kit import KERNELS, NN_PATH, SHAPES, elementwise_case, rel_err, rowwise_cases

TOL = {F16: 2e-3, BF16: 1.5e-2, F32: 1e-5}


def test_std_nn_checks_clean_and_has_its_kernels():
    assert sorted(tlc.load(NN_PATH, target="cpu").kernels) == sorted(KERNELS)


@pytest.mark.parametrize("dtype", [F16, BF16, F32])
@pytest.mark.parametrize("M,N,consts", SHAPES)
def test_rowwise_kernels_against_numpy(dtype, M, N, consts):
    mod = tlc.load(NN_PATH, target="cpu")
    for name, args, c, out, ref in rowwise_cases(np.random.default_rng(M * N), dtype.numpy(), M, N, consts):
        getattr(mod, name)(*args, **c)
        assert rel_err(args[out].astype(np.float32), ref) < TOL[dtype], (name, c)


@pytest.mark.parametrize("dtype", [F16, BF16])
@pytest.mark.parametrize("n,consts", [(1000, dict(BLOCK=256, THREADS=32)), (4096, {}), (77, dict(BLOCK=64, THREADS=32))])
def test_elementwise_against_numpy(dtype, n, consts):
    mod = tlc.load(NN_PATH, target="cpu")
    name, args, c, out, ref = elementwise_case(np.random.default_rng(n), dtype.numpy(), n, consts)
    getattr(mod, name)(*args, **c)
    assert rel_err(args[out].astype(np.float32), ref) < TOL[dtype]


def test_import_from_another_file(tmp_path):
    p = tmp_path / "use.tl"
    p.write_text("from std.nn import softmax, rms_norm\n")
    mod = tlc.load(str(p), target="cpu")
    assert mod.program.function("rms_norm").kind == "kernel"
