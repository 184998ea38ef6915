"""One test per fixed bug (found by the fuzz tests)."""
from tlc.driver import check_source


def codes(src):
    return [d.code for d in check_source(src, "r.tl").diagnostics]


def test_unknown_dtype_in_a_tensor_parameter_is_a_diagnostic():
    assert codes("@kernel\ndef k(y: foo[N]):\n    pass\n") == ["E021", "E029"]


def test_calling_a_function_with_an_unknown_decorator_reports_only_the_decorator():
    src = "@x\ndef g(y: f32) -> f32:\n    return y\n\ndef f(z: f32) -> f32:\n    return g(z)\n"
    assert codes(src) == ["E022"]


def test_bit_not_of_a_float_constant():
    assert codes("X = ~(2.5)\n") == ["E031"]


def test_a_module_named_rel_dot_is_not_a_relative_import():
    r = check_source("from rel_dot import x\n", "r.tl")
    assert [d.code for d in r.diagnostics] == ["E026"]
    assert r.diagnostics[0].message.startswith("cannot import 'rel_dot'")


def test_a_function_cannot_take_a_statement_name():
    r = check_source("def copy(x: f32) -> f32:\n    return x\n", "r.tl")
    assert [(d.code, d.message) for d in r.diagnostics] == [
        ("E025", "'copy' is a statement of the language; a device function cannot take its name")]


def test_a_loop_variable_does_not_outlive_its_loop():
    """Found by fuzzing the scheduler: Python lets `t` outlive `for t in ...`, the generated C
    does not, and the IR verifier caught the stale name."""
    src = ("@kernel\ndef k(A: f32[N]):\n    with grid(1, threads=32) as bx:\n        for t in range(4):\n"
           "            pass\n        x = t + 1\n")
    r = check_source(src, "r.tl")
    assert [(d.code, d.hint) for d in r.diagnostics] == [
        ("E020", "'t' is the variable of a loop above; a loop variable exists only inside its loop")]
