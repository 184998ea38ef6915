"""config.json (tlc/config_table.py): its format and errors, choosing a rule, and the API
completing a call's constants from it (explicit constants win)."""
import json

import numpy as np
import pytest

import tlc
from tlc.config_table import ConfigError, choose, parse

KERNEL = """@kernel
def scale(x: T[N], y: T[N], T: dtype = f32, BLOCK: const = 64, UNROLL: const = 1):
    with grid(cdiv(N, BLOCK), threads=BLOCK) as bx:
        for i in parallel(BLOCK):
            y[bx * BLOCK + i] = x[bx * BLOCK + i] * 2.0
"""

RULES = [{"arch": "sm_90a", "when": {"N": [1, 100], "T": "f16"}, "constants": {"BLOCK": 32}},
         {"arch": ["sm_90a", "sm_80"], "when": {"N": [101, None]}, "constants": {"BLOCK": 256, "UNROLL": 2}},
         {"arch": "sm_80", "constants": {"BLOCK": 128}}]


def table(rules=RULES, module="k.tl", kernel="scale"):
    return {"format": 1, "kernels": {module: {kernel: rules}}}


@pytest.fixture
def loaded(tmp_path):
    def make(data=None):
        (tmp_path / "k.tl").write_text(KERNEL)
        if data is not None:
            (tmp_path / "config.json").write_text(data if isinstance(data, str) else json.dumps(data))
        return tlc.load(str(tmp_path / "k.tl"), target="cpu").scale

    return make


def test_the_first_matching_rule_wins():
    rules = parse(table(), "config.json")["k.tl"]["scale"]
    assert choose(rules, "sm_90a", {"N": 100}, {"T": "f16"}) == {"BLOCK": 32}
    assert choose(rules, "sm_90a", {"N": 100}, {"T": "f32"}) == {}
    assert choose(rules, "sm_90a", {"N": 10 ** 9}, {"T": "f32"}) == {"BLOCK": 256, "UNROLL": 2}
    assert choose(rules, "sm_80", {"N": 5}, {}) == {"BLOCK": 128}
    assert choose(rules, "sm_100", {"N": 5}, {}) == {}


def test_a_call_takes_the_recorded_constants_and_explicit_ones_win(loaded):
    k = loaded(table())
    x = np.zeros(500, np.float32)
    values = {"x": x, "y": x}
    assert k.with_recorded(values, {}, "sm_90a") == {"BLOCK": 256, "UNROLL": 2}
    assert k.with_recorded(values, {"BLOCK": 64}, "sm_90a") == {"BLOCK": 64, "UNROLL": 2}
    assert k.with_recorded({"x": x[:50], "y": x[:50]}, {}, "sm_90a") == {}


def test_no_file_means_the_kernels_own_defaults(loaded):
    k = loaded()
    assert k.recorded_rules() == ()
    assert k.with_recorded({"x": np.zeros(5)}, {}, "sm_90a") == {}


def test_the_recorded_constants_run(loaded):
    k = loaded(table())
    x = np.arange(300, dtype=np.float32)
    y = np.zeros_like(x)
    k(x, y, **k.with_recorded({"x": x, "y": y}, {}, "sm_90a"))
    np.testing.assert_array_equal(y, 2 * x)


@pytest.mark.parametrize("data,message", [
    ("{", "not readable as JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"),
    ({"kernels": {}}, 'expected an object with "format": 1'),
    ({"format": 1, "kernels": []}, '"kernels" must map module file names to kernels'),
    ({"format": 1, "kernels": {"k.tl": []}}, '"k.tl" must map kernel names to lists of rules'),
    (table(rules={}), "the rules of 'scale' must be a list"),
    (table(rules=[{"arch": "sm_80"}]), "rule 1 of 'scale': expected an object with \"constants\""),
    (table(rules=[{"arch": "sm_80", "constants": {}, "size": 3}]), "rule 1 of 'scale': unknown field(s) size"),
    (table(rules=[{"constants": {}}]),
     "rule 1 of 'scale': \"arch\" must name one or more architectures (e.g. \"sm_90a\")"),
    (table(rules=[{"arch": "sm_80", "when": {"N": [1]}, "constants": {}}]),
     "rule 1 of 'scale': \"when\" of 'N' must be [low, high] (integers or null) or a dtype name"),
    (table(rules=[{"arch": "sm_80", "constants": {"BLOCK": "big"}}]),
     "rule 1 of 'scale': the constant 'BLOCK' must be a number or a boolean, not 'big'"),
])
def test_a_broken_file_is_an_error_naming_the_place(loaded, data, message):
    with pytest.raises(ConfigError) as e:
        loaded(data).recorded_rules()
    assert str(e.value).endswith("config.json: " + message), str(e.value)


@pytest.mark.parametrize("rule,message", [
    ({"arch": "sm_80", "constants": {"BM": 3}}, "rule 1 of 'scale' sets 'BM', which is not a constant of scale"),
    ({"arch": "sm_80", "constants": {"T": 3}}, "rule 1 of 'scale' sets 'T', which is not a constant of scale"),
    ({"arch": "sm_80", "when": {"M": [1, 2]}, "constants": {}},
     "rule 1 of 'scale' has a range for 'M', which is not a shape symbol of scale"),
    ({"arch": "sm_80", "when": {"N": "f16"}, "constants": {}},
     "rule 1 of 'scale' asks for the dtype of 'N', which is not a dtype parameter of scale"),
])
def test_a_rule_must_fit_its_kernel(loaded, rule, message):
    with pytest.raises(ConfigError) as e:
        loaded(table(rules=[rule])).recorded_rules()
    assert str(e.value).endswith("k.tl: " + message), str(e.value)


def test_rules_of_other_modules_and_kernels_do_not_apply(loaded):
    assert loaded(table(module="other.tl")).recorded_rules() == ()
    assert loaded(table(kernel="other")).recorded_rules() == ()
