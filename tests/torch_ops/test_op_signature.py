"""tlc.torch's view of a kernel's tl signature (tlc/torch/signature.py), which needs no PyTorch:
the operator's schema (arguments, mutation annotations, results), the results' shapes and
dtypes from the inputs', and the exact errors of a registration that cannot work."""
from __future__ import annotations

from pathlib import Path

import pytest

import tlc
from tlc.dtypes import DTYPES
from tlc.torch import OpError, OpSignature


@pytest.fixture(scope="module")
def std():
    return {name: tlc.load(f"std.{name}", target="cpu") for name in ("nn", "nn_layers", "nn_train", "elementwise")}


def test_kernel_outputs_are_mutated_arguments_by_default(std):
    # the tensors the scheduled kernel writes, and only those, are annotated mutable
    assert OpSignature(std["nn"].rms_norm).schema() == "(Tensor x, Tensor weight, Tensor(a!) y, float eps) -> ()"
    sig = OpSignature(std["nn_train"].rms_norm_bwd)
    assert sig.schema() == "(Tensor dy, Tensor x, Tensor weight, Tensor(a!) dx, Tensor(b!) dweight, float eps) -> ()"
    assert sig.mutated == ("dx", "dweight")


def test_outputs_become_results(std):
    sig = OpSignature(std["nn_train"].rms_norm_bwd, outputs=("dx", "dweight"))
    assert sig.schema() == "(Tensor dy, Tensor x, Tensor weight, float eps) -> (Tensor, Tensor)"
    assert OpSignature(std["nn"].rms_norm, outputs="y").schema() == "(Tensor x, Tensor weight, float eps) -> Tensor"


def test_tile_op_returns_a_tensor_and_scalar_defaults_are_kept(std):
    assert OpSignature(std["elementwise"].add).schema() == "(Tensor a, Tensor b) -> Tensor"
    assert OpSignature(std["elementwise"].mul_scalar).schema() == "(Tensor a, float s) -> Tensor"
    assert OpSignature(std["nn_train"].cross_entropy, outputs=("loss", "lse")).schema() == \
        "(Tensor logits, Tensor target, int ignore_index=-100) -> (Tensor, Tensor)"


def test_kernel_with_sizes_compiled_in_is_probed_for_its_writes(std):
    # rope compiles H and D in: the scheduler is asked with a probe size for them
    assert OpSignature(std["nn_layers"].rope).mutated == ("y",)


def test_result_shapes_and_dtypes_follow_the_inputs(std):
    sig = OpSignature(std["nn_layers"].swiglu, outputs="y")  # x: T[M, 2, N] -> y: T[M, N]
    assert sig.result_specs({"x": (5, 2, 6)}, {"x": DTYPES["bf16"]}) == [((5, 6), DTYPES["bf16"])]
    sig = OpSignature(std["nn_train"].cross_entropy, outputs=("loss", "lse"))  # f32 whatever the logits
    assert sig.result_specs({"logits": (3, 10), "target": (3,)}, {"logits": DTYPES["f16"], "target": DTYPES["i64"]}) \
        == [((3,), DTYPES["f32"]), ((3,), DTYPES["f32"])]
    sig = OpSignature(std["elementwise"].add)
    assert sig.result_specs({"a": (2, 3), "b": (2, 3)}, {"a": DTYPES["f16"], "b": DTYPES["f16"]}) == \
        [((2, 3), DTYPES["f16"])]


def test_a_const_standing_as_a_dimension_is_bound_from_the_inputs():
    # W is compiled in, from the arrays (LANGUAGE.md section 1): the result has x's width, not W's default
    module = tlc.compile_source("""
@kernel
def rowcopy(x: f32[M, W], y: f32[M, W], W: const = 8):
    with grid(M, threads=32) as bx:
        t = fragment(f32[W])
        copy(x[bx, 0], t)
        copy(t, y[bx, 0])
""", target="cpu")
    sig = OpSignature(module.rowcopy, outputs="y")
    assert sig.result_specs({"x": (3, 16)}, {"x": DTYPES["f32"]}) == [((3, 16), DTYPES["f32"])]


def test_a_fixed_dtype_constant_wins(std):
    sig = OpSignature(std["elementwise"].add, constants={"T": "f32"})
    assert sig.result_specs({"a": (2, 3), "b": (2, 3)}, {"a": DTYPES["f16"], "b": DTYPES["f16"]}) == \
        [((2, 3), DTYPES["f32"])]


def test_shape_symbols_given_twice_are_listed_for_the_fake_to_check(std):
    checks = list(OpSignature(std["nn"].rms_norm, outputs="y").symbol_checks())
    assert checks == [("N", ("x", 1), [("weight", 0)])]


ASSERTING = Path(__file__).resolve().parents[1] / "typecheck" / "device_assert.tl"


def test_kernels_with_device_asserts_are_known(std):
    # their launches synchronize, which a CUDA graph cannot capture: the operator refuses there
    assert OpSignature(tlc.load(str(ASSERTING), target="cpu").scale).asserts
    assert not OpSignature(std["nn"].rms_norm).asserts


@pytest.mark.parametrize("kernel, options, message", [
    ("nn.rms_norm", {"outputs": "z"},
     "outputs: 'rms_norm' has no array parameter 'z'; its arrays are 'weight', 'x', 'y'"),
    ("nn.rms_norm", {"outputs": "x"}, "outputs: 'rms_norm' never writes 'x', so it is not an output"),
    ("nn.rms_norm", {"constants": {"BQ": 1}},
     "constants: 'rms_norm' has no constant 'BQ'; its constants are 'BLOCKS', 'BM', 'BN', 'T', 'THREADS'"),
    ("nn.rms_norm", {"constants": {"eps": 1e-6}},
     "constants: 'eps' is a scalar parameter of 'rms_norm', passed at each call, not a constant"),
    ("elementwise.add", {"outputs": ("y", "z")},
     "outputs: the tile op 'add' returns one tensor; name it with one name"),
    ("elementwise.add", {"outputs": "a"},
     "outputs: 'a' is an input of the tile op 'add'; a tile op's result gets a name of its own (default 'y')"),
    ("nn_layers.embedding_bwd", {"outputs": "dweight"},
     "the dtype of the output 'dweight' of 'embedding_bwd' is 'W', which no input binds; "
     "fix it: constants={'W': 'f32'}"),
    ("nn_layers.embedding_bwd", {"outputs": "dweight", "constants": {"W": "f32"}},
     "the output 'dweight' of 'embedding_bwd' has the dimension V, but 'V' is the size of no input; an operator "
     "allocates its outputs from its inputs' sizes: leave it out of outputs= and pass it as an argument"),
    ("nn.rms_norm", {"mutates": ("q",)}, "mutates: 'rms_norm' has no array parameter 'q'"),
])
def test_registration_errors(std, kernel, options, message):
    module, name = kernel.split(".")
    with pytest.raises(OpError) as e:
        OpSignature(getattr(std[module], name), **options)
    assert str(e.value) == message


def test_importing_tlc_torch_does_not_import_pytorch():
    # registering imports it; reading a signature (and `import tlc`) never does
    import subprocess
    import sys

    code = ("import sys, tlc, tlc.torch; from tlc.torch import OpSignature; "
            "OpSignature(tlc.load('std.nn', target='cpu').rms_norm); print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
