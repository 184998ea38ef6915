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


GROUPS = """
@kernel
def groups(x: f32[H], heads: f32[HK], y: f32[HK * (H // HK)]):
    with grid(cdiv(H, 32), threads=32) as bx:
        for i in parallel(32):
            y[bx * 32 + i] = x[bx * 32 + i]
"""


def test_an_expression_that_divides_by_zero_is_refused_naming_the_sizes():
    """HK = 0 in HK * (H // HK) (std.attention's GQA check): the binder's text, as the
    interpreter's (tests/interp/test_interp_dims.py), not the grid's "divides by zero"."""
    kernel = tlc.compile_source(GROUPS, target="cpu", path="groups.tl").groups.scheduled({}, "sm_80")
    binder = Binder(kernel, generate(kernel, "sm_80"))
    with pytest.raises(LaunchArgumentError) as e:
        binder.bind(dict(x=np.zeros(2, np.float32), heads=np.zeros(0, np.float32), y=np.zeros(2, np.float32)), device=0)
    assert str(e.value) == ("'y' axis 0 has size 2 but the kernel expects HK * (H // HK), which divides by zero "
                            "(HK = 0 from 'heads' (axis 0), H = 2 from 'x' (axis 0))")
    binder.bind(dict(x=np.zeros(4, np.float32), heads=np.zeros(2, np.float32), y=np.zeros(4, np.float32)), device=0)
