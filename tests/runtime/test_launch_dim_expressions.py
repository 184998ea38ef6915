"""The CUDA launcher's check of a tensor dimension that is an expression of shape symbols
(`K // 2`, `cdiv(K, 128)`, tests/programs/dims.tl), without a GPU: the binder computes the
expression once every symbol is bound and refuses an array whose size differs, with the
interpreter's message; the sizes of the expressions are where the tensor maps read them."""
import pathlib

import numpy as np
import pytest

import tlc
from tlc.codegen import generate
from tlc.ir.nodes import DimExpr
from tlc.runtime.args import Binder, LaunchArgumentError

SOURCE = (pathlib.Path(__file__).resolve().parents[1] / "programs" / "dims.tl").read_text()


@pytest.fixture(scope="module")
def binder():
    kernel = tlc.compile_source(SOURCE, target="cpu", path="dims.tl").dequant_int4.scheduled({}, "sm_80")
    return Binder(kernel, generate(kernel, "sm_80"))


def arrays(N=20, K=300):
    return dict(Wq=np.zeros((N, K // 2), np.int8), Sc=np.zeros((N, 3), np.float32), W=np.zeros((N, K), np.float32))


def test_sizes_that_match_their_expressions_bind(binder):
    bound = binder.bind(arrays(), device=0)
    k_half = next(d for d in binder.facts.params[0].shape if isinstance(d, DimExpr))
    assert bound.values[binder.slots["K"]] == 300 and bound.values[binder.slots[k_half]] == 150


@pytest.mark.parametrize("name, shape, message", [
    ("Wq", (20, 149), "'Wq' axis 1 has size 149 but the kernel expects K // 2 = 150 (K = 300 from 'W' (axis 1))"),
    ("Sc", (20, 2), "'Sc' axis 1 has size 2 but the kernel expects cdiv(K, 128) = 3 (K = 300 from 'W' (axis 1))"),
])
def test_a_size_that_differs_is_refused_naming_the_expression(binder, name, shape, message):
    args = arrays()
    args[name] = np.zeros(shape, args[name].dtype)
    with pytest.raises(LaunchArgumentError) as e:
        binder.bind(args, device=0)
    assert str(e.value) == message
