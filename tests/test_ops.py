"""`tlc ops` (tlc/ops.py): the listing read from the std sources, NAME_bwd as the backward, and a
count of operators that exist AND have a recorded passing test, not of names."""
import json

from click.testing import CliRunner

from tlc.cli import main
from tlc.ops import all_ops, format_table, to_json

SRC = '''# a module
def helper(x: f32) -> f32:
    return x

@tile_op
def relu(x: T[M, N], T: dtype = f32) -> T[M, N]:
    # max(x, 0), exact.
    return T(max(x, 0.0))

@tile_op
def relu_bwd(dy: T[M, N],
             x: T[M, N], T: dtype = f32) -> T[M, N]:
    # dy where x > 0, else 0;
    # exact.
    return T(where(x > 0.0, dy, 0.0))

# ---- a section -------------------
# y[:] = value (a module may document an operator above it,
# as std.gemm does).
@kernel
def fill(y: f32[N], value: f32):
    with grid(cdiv(N, 128), threads=128) as bx:
        for i in parallel(128):
            y[bx * 128 + i] = value
'''


def fake_stdlib(tmp_path, tested):
    (tmp_path / "acts.tl").write_text(SRC)
    (tmp_path / "tested.json").write_text(json.dumps(tested))
    return tmp_path


def test_lists_kernels_and_tile_ops_with_signature_doc_and_backward(tmp_path):
    ops = all_ops(fake_stdlib(tmp_path, {}))
    assert [(o.module, o.name, o.kind) for o in ops] == [("std.acts", "relu", "tile_op"), ("std.acts", "relu_bwd", "tile_op"),
                                                       ("std.acts", "fill", "kernel")]
    relu, relu_bwd, fill = ops
    assert relu.signature == "relu(x: T[M, N], T: dtype = f32) -> T[M, N]"
    assert relu_bwd.signature == "relu_bwd(dy: T[M, N], x: T[M, N], T: dtype = f32) -> T[M, N]"
    assert relu.doc == "max(x, 0), exact."
    assert relu_bwd.doc == "dy where x > 0, else 0; exact."
    assert fill.doc == "y[:] = value (a module may document an operator above it, as std.gemm does)."
    assert (relu.backward, relu_bwd.backward, relu_bwd.is_backward, fill.backward) == ("relu_bwd", None, True, None)
    assert relu.dtype_params == {"T": "f32"} and fill.dtype_params == {}


def test_the_count_is_of_operators_recorded_as_passing_not_of_names(tmp_path):
    # relu passed; 'gone' is recorded but no longer in the sources; relu_bwd and fill have no record
    ops = all_ops(fake_stdlib(tmp_path, {"std.acts": {"test": "t.py", "ops": {"relu": ["f16", "f32"], "gone": ["f32"]}}}))
    assert [o.name for o in ops if o.tested] == ["relu"]
    assert ops[0].tested_dtypes == ("f16", "f32")
    text = format_table(ops)
    assert text.splitlines()[0] == "std.acts (1 of 3 tested)"
    assert text.splitlines()[-1].startswith("1 operators with a passing test (3 listed;")
    assert "untested" in text.splitlines()[2] and "untested" not in text.splitlines()[1]
    data = json.loads(to_json(ops))
    assert (data["count"], data["count_tested"]) == (3, 1)


def test_cli_lists_the_shipped_library():
    res = CliRunner().invoke(main, ["ops", "--json", "-m", "std.elementwise"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    names = {o["name"]: o for o in data["ops"]}
    assert names["silu"]["backward"] == "silu_bwd" and names["silu"]["tested"]
    assert data["count_tested"] == data["count"] >= 90
    res = CliRunner().invoke(main, ["ops", "-m", "std.nothing"])
    assert res.exit_code != 0 and "no std module std.nothing" in res.output


def test_the_reference_page_is_generated_from_the_sources():
    """docs/stdlib/elementwise.md is what scripts/stdlib-docs writes (rerun it after editing the
    .tl or tested.json); each operator has its section with its signature and comment."""
    from pathlib import Path

    from tlc.ops import load_tested, markdown, module_ops, stdlib_dir

    path = stdlib_dir() / "elementwise.tl"
    text = markdown(path, module_ops(path, load_tested()))
    page = Path(__file__).resolve().parents[1] / "docs" / "stdlib" / "elementwise.md"
    assert page.read_text() == text, "docs/stdlib/elementwise.md is stale: run scripts/stdlib-docs elementwise"
    assert "## expm1\n\n```python\n@tile_op\ndef expm1(x: T[M, N], T: dtype = f32) -> T[M, N]\n```" in text
    assert "| [`abs`](#abs) | bf16, f16, f32, i32 |  | \\|x\\|, exact (integers too). |" in text


def test_a_backward_in_another_std_module_is_named_with_its_module():
    """std.nn's softmax, rms_norm and layer_norm have their backwards in std.nn_train: tlc ops
    and the reference page name them there (NAME_bwd in the same module comes first)."""
    from tlc.ops import all_ops, markdown, module_ops, stdlib_dir

    by_name = {(o.module, o.name): o for o in all_ops()}
    assert by_name["std.nn", "softmax"].backward == "std.nn_train.softmax_bwd"
    assert by_name["std.nn", "layer_norm"].backward == "std.nn_train.layer_norm_bwd"
    assert by_name["std.elementwise", "silu"].backward == "silu_bwd"
    page = markdown(stdlib_dir() / "nn.tl", module_ops(stdlib_dir() / "nn.tl", {}))
    assert "Backward: [`std.nn_train.rms_norm_bwd`](nn_train.md#rms_norm_bwd)." in page
